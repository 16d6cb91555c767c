/* test_lprocfs.c - the lines of Lustre's *.stats parameters (common/lprocfs.h), byte for
 * byte as lprocfs_stats_seq_show prints them. */
#include <stdlib.h>
#include <string.h>

#include "common/lprocfs.h"
#include "common/strbuf.h"
#include "unit.h"

static void test_counter_lines(void)
{
	struct strbuf b = STRBUF_INIT;
	const uint64_t mms[3] = {4096, 1048576, 5242880};

	lprocfs_counter_line(&b, "read_bytes", 12, "bytes", mms);
	CHECK_STR(strbuf_cstr(&b), "read_bytes                12 samples [bytes] 4096 1048576 5242880\n");
	strbuf_reset(&b);
	lprocfs_counter_line(&b, "open", 3, "reqs", NULL);
	CHECK_STR(strbuf_cstr(&b), "open                      3 samples [reqs]\n");
	strbuf_reset(&b);
	/* no samples: no line at all */
	lprocfs_counter_line(&b, "punch", 0, "reqs", NULL);
	CHECK_STR(strbuf_cstr(&b), "");
	/* a name of 25 characters or more is not cut, one space follows it */
	lprocfs_counter_line(&b, "a_counter_name_of_28_chars", 1, "reqs", NULL);
	CHECK_STR(strbuf_cstr(&b), "a_counter_name_of_28_chars 1 samples [reqs]\n");
	strbuf_fini(&b);
}

static void test_snapshot_line(void)
{
	struct strbuf b = STRBUF_INIT;
	const char *s;
	char *end;

	lprocfs_snapshot_line(&b);
	s = strbuf_cstr(&b);
	CHECK(strncmp(s, "snapshot_time             ", 26) == 0);
	long long sec = strtoll(s + 26, &end, 10);

	CHECK(sec > 1600000000);
	CHECK(*end == '.');
	CHECK(strspn(end + 1, "0123456789") == 9);
	CHECK_STR(end + 10, " secs.nsecs\n");
	strbuf_fini(&b);
}

int main(void)
{
	test_counter_lines();
	test_snapshot_line();
	return unit_done();
}
