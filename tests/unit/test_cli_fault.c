/* test_cli_fault.c - the words of `nacre fault` (src/cli/fault_args.c): the server, and the
 * fault spec they make. */
#include <errno.h>

#include "cli/fault_args.h"
#include "unit.h"

static int parse(const char *verb, int n, char *const *w, struct cli_fault_args *a,
		 char *err, size_t err_len)
{
	err[0] = '\0';
	return cli_fault_args_parse(verb, n, w, a, err, err_len);
}

static void test_set_words(void)
{
	struct cli_fault_args a;
	char err[256];
	char *two[] = {"mds.commit_after", "once"};
	char *item[] = {"oss.write_before=every:3,err=5"};
	char *server[] = {"127.0.0.1:9411", "oss.write_before", "once,err=5"};
	char *spec_server[] = {"10.0.0.5:9410:/fs", "rpc.delay_reply=once,ms=200"};
	char *mixed[] = {"rpc.drop_reply=once", "mds.commit_after", "every:2", "all", "off"};

	CHECK_EQ(parse("set", 2, two, &a, err, sizeof(err)), 0);
	CHECK_STR(a.spec, "mds.commit_after=once");
	CHECK_STR(a.addr, "");
	CHECK_EQ(parse("set", 1, item, &a, err, sizeof(err)), 0);
	CHECK_STR(a.spec, "oss.write_before=every:3,err=5");
	CHECK_EQ(parse("set", 3, server, &a, err, sizeof(err)), 0);
	CHECK_STR(a.addr, "127.0.0.1:9411");
	CHECK_STR(a.fsname, "");
	CHECK_STR(a.spec, "oss.write_before=once,err=5");
	CHECK_EQ(parse("set", 2, spec_server, &a, err, sizeof(err)), 0);
	CHECK_STR(a.addr, "10.0.0.5:9410");
	CHECK_STR(a.fsname, "fs");
	CHECK_STR(a.spec, "rpc.delay_reply=once,ms=200");
	CHECK_EQ(parse("set", 5, mixed, &a, err, sizeof(err)), 0);
	CHECK_STR(a.spec, "rpc.drop_reply=once;mds.commit_after=every:2;all=off");
}

static void test_bad_words(void)
{
	struct cli_fault_args a;
	char err[256];
	char *lone[] = {"mds.commit_after"};
	char *lone_then_item[] = {"mds.commit_after", "rpc.drop_reply=once"};
	char *only_server[] = {"127.0.0.1:9400"};
	char *bad_server[] = {"127.0.0.1:9400:/fs/sub", "mds.commit_after", "once"};
	char *list_extra[] = {"127.0.0.1:9400", "mds.commit_after"};
	char *empty[] = {""};

	CHECK_EQ(parse("set", 1, lone, &a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "'mds.commit_after' needs a MODE") != NULL);
	CHECK_EQ(parse("set", 2, lone_then_item, &a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "mds.commit_after") != NULL);
	CHECK_EQ(parse("set", 1, only_server, &a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "no fault spec") != NULL);
	CHECK_EQ(parse("set", 0, NULL, &a, err, sizeof(err)), -EINVAL);
	CHECK_EQ(parse("set", 3, bad_server, &a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "127.0.0.1:9400:/fs/sub") != NULL);
	CHECK_EQ(parse("set", 1, empty, &a, err, sizeof(err)), -EINVAL);
	CHECK_EQ(parse("list", 2, list_extra, &a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "'mds.commit_after'") != NULL);
	CHECK_EQ(parse("arm", 0, NULL, &a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "'arm'") != NULL);
}

static void test_list_clear(void)
{
	struct cli_fault_args a;
	char err[256];
	char *server[] = {"127.0.0.1:9400,127.0.0.1:9401"};

	CHECK_EQ(parse("list", 0, NULL, &a, err, sizeof(err)), 0);
	CHECK_STR(a.spec, "");
	CHECK_STR(a.addr, "");
	CHECK_EQ(parse("list", 1, server, &a, err, sizeof(err)), 0);
	CHECK_STR(a.addr, "127.0.0.1:9400,127.0.0.1:9401");
	CHECK_EQ(parse("clear", 1, server, &a, err, sizeof(err)), 0);
	CHECK_STR(a.spec, "all=off");
}

static void test_too_long(void)
{
	static char big[CLI_FAULT_SPEC_MAX];
	struct cli_fault_args a;
	char err[256];
	char *w[] = {big, "once"};

	memset(big, 'x', sizeof(big) - 1);
	CHECK_EQ(parse("set", 2, w, &a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "longer than") != NULL);
}

int main(void)
{
	test_set_words();
	test_bad_words();
	test_list_clear();
	test_too_long();
	return unit_done();
}
