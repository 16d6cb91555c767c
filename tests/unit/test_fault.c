/* test_fault.c - fault points: modes, opcode filters, spec parsing, describe. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"
#include "common/log.h"
#include "unit.h"

static int resolve(const char *name)
{
	return strcmp(name, "MDS_CREATE") == 0 ? 20 : -1;
}

static int fires(enum fault_point p, uint16_t op)
{
	return NACRE_FAULT_OP(p, op, NULL);
}

static void test_disarmed(void)
{
	CHECK_EQ(fault_any_armed, 0);
	CHECK_EQ(fires(FAULT_RPC_DROP_REPLY, 20), 0);
}

static void test_once_and_every(void)
{
	char err[256];
	int n = 0;

	CHECK_EQ(fault_set("rpc.drop_reply=once", resolve, err, sizeof(err)), 0);
	CHECK(fault_any_armed);
	CHECK_EQ(fires(FAULT_RPC_DROP_REPLY, 1), 1);
	CHECK_EQ(fires(FAULT_RPC_DROP_REPLY, 1), 0); /* once disarms itself */
	CHECK_EQ(fault_any_armed, 0);

	CHECK_EQ(fault_set("oss.write_before=every:3", resolve, err, sizeof(err)), 0);
	for (int i = 0; i < 9; i++)
		n += fires(FAULT_OSS_WRITE_BEFORE, 0);
	CHECK_EQ(n, 3);
	CHECK_EQ(fault_set("all=off", resolve, err, sizeof(err)), 0);
	CHECK_EQ(fault_any_armed, 0);
}

static void test_skip_prob_filter(void)
{
	char err[256];
	struct fault_hit hit;
	int n = 0;

	CHECK_EQ(fault_set("rpc.delay_reply=skip:2,op=MDS_CREATE,ms=250", resolve, err,
			   sizeof(err)),
		 0);
	CHECK_EQ(fires(FAULT_RPC_DELAY_REPLY, 21), 0); /* another opcode: not counted */
	CHECK_EQ(fires(FAULT_RPC_DELAY_REPLY, 20), 0);
	CHECK_EQ(fires(FAULT_RPC_DELAY_REPLY, 20), 0);
	memset(&hit, 0, sizeof(hit));
	CHECK_EQ(NACRE_FAULT_OP(FAULT_RPC_DELAY_REPLY, 20, &hit), 1);
	CHECK_EQ(hit.ms, 250);

	CHECK_EQ(fault_set("mds.commit_after=prob:50,action=crash;rpc.delay_reply=off", resolve,
			   err, sizeof(err)),
		 0);
	for (int i = 0; i < 1000; i++)
		n += fires(FAULT_MDS_COMMIT_AFTER, 0);
	CHECK(n > 350 && n < 650);
	char desc[256];
	fault_describe(desc, sizeof(desc));
	CHECK_STR(desc, "mds.commit_after=prob:50,action=crash");

	CHECK_EQ(fault_set("oss.write_after=once,err=28", resolve, err, sizeof(err)), 0);
	memset(&hit, 0, sizeof(hit));
	CHECK_EQ(NACRE_FAULT(FAULT_OSS_WRITE_AFTER, &hit), 1);
	CHECK_EQ(hit.action, FAULT_ACT_ERROR);
	CHECK_EQ(hit.err, -ENOSPC);
	CHECK_EQ(fault_set("all=off", NULL, NULL, 0), 0);
	CHECK_EQ(fault_set("oss.write_before=every:2,err=5;rpc.delay_reply=once,op=20,ms=30",
			   resolve, err, sizeof(err)),
		 0);
	fault_describe(desc, sizeof(desc));
	CHECK_STR(desc, "oss.write_before=every:2,err=5;rpc.delay_reply=once,op=20,ms=30");
	fault_describe(desc, 40); /* the second point does not fit: left out whole */
	CHECK_STR(desc, "oss.write_before=every:2,err=5");
	CHECK_EQ(fault_set("all=off", NULL, NULL, 0), 0);
}

static void test_bad_specs_change_nothing(void)
{
	char err[256];

	CHECK_EQ(fault_set("rpc.drop_reply=once;nosuch.point=once", resolve, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "nosuch.point") != NULL);
	CHECK_EQ(fault_any_armed, 0); /* the valid first half was not applied */
	CHECK_EQ(fault_set("rpc.drop_reply=sometimes", resolve, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "rpc.drop_reply") && strstr(err, "sometimes"));
	CHECK_EQ(fault_set("rpc.drop_reply=every:0", resolve, err, sizeof(err)), -EINVAL);
	CHECK_EQ(fault_set("rpc.drop_reply=prob:101", resolve, err, sizeof(err)), -EINVAL);
	CHECK_EQ(fault_set("rpc.drop_reply=once,op=NOPE", resolve, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "NOPE") != NULL);
	CHECK_EQ(fault_set("rpc.drop_reply", resolve, err, sizeof(err)), -EINVAL);
	CHECK_EQ(fault_set("rpc.drop_reply=once,ms", resolve, err, sizeof(err)), -EINVAL);
	CHECK_EQ(fault_any_armed, 0);
	CHECK_EQ(fault_set("", resolve, err, sizeof(err)), 0);
}

static void test_env(void)
{
	char err[256];

	setenv("NACRE_FAULT", "rpc.close_conn=once,op=20", 1);
	CHECK_EQ(fault_init_env(NULL, err, sizeof(err)), 0);
	CHECK_EQ(fires(FAULT_RPC_CLOSE_CONN, 19), 0);
	CHECK_EQ(fires(FAULT_RPC_CLOSE_CONN, 20), 1);
	unsetenv("NACRE_FAULT");
	CHECK_STR(fault_point_name(FAULT_MDS_COMMIT_BEFORE), "mds.commit_before");
	CHECK_STR(fault_point_name(FAULT_POINT_COUNT_), "?");
}

int main(void)
{
	log_init("test", LOG_LVL_ERR);
	test_disarmed();
	test_once_and_every();
	test_skip_prob_filter();
	test_bad_specs_change_nothing();
	test_env();
	return unit_done();
}
