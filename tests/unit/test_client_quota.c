/* test_client_quota.c - libnacre's quota codec (client/quota.h): the typed request encodes to
 * the wire's quota_req bytes, the reply decodes with its drift or target list, and the
 * public calls refuse bad arguments. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "client/quota.h"
#include "nacre/nacre.h"
#include "proto/cursor.h"
#include "proto/wire.h"
#include "unit.h"

static void test_req_bytes(void)
{
	struct nacre_quota_req req = {NACRE_QUOTA_SET, NACRE_QUOTA_GRP, 1000,
				      NACRE_QUOTA_V_BSOFT | NACRE_QUOTA_V_IHARD, 1, 2, 3, 4, 5, 6};
	struct wire_quota_req w = {.op = WIRE_QUOTA_SET, .type = 1, .id = 1000,
				   .valid = WIRE_QUOTA_V_BSOFT | WIRE_QUOTA_V_IHARD, .bsoft = 1,
				   .bhard = 2, .isoft = 3, .ihard = 4, .bgrace = 5, .igrace = 6};
	struct nacre_cred cr;
	unsigned char a[512], b[512];
	struct wire_cursor ca, cb;

	/* without a cred: zero credentials, for the mount to fill */
	wire_cursor_init_write(&ca, a, sizeof(a));
	wire_cursor_init_write(&cb, b, sizeof(b));
	CHECK_EQ(cl_quota_req_encode(&ca, NULL, &req), 0);
	wire_quota_req_encode(&cb, &w);
	CHECK(wire_cursor_ok(&ca) && wire_cursor_ok(&cb));
	CHECK_EQ(wire_cursor_pos(&ca), wire_cursor_pos(&cb));
	CHECK_MEM(a, b, wire_cursor_pos(&cb));

	/* with one: the wire's cred */
	memset(&cr, 0, sizeof(cr));
	cr.uid = 1000;
	cr.gid = 100;
	w.cred = cr;
	wire_cursor_init_write(&ca, a, sizeof(a));
	wire_cursor_init_write(&cb, b, sizeof(b));
	CHECK_EQ(cl_quota_req_encode(&ca, &cr, &req), 0);
	wire_quota_req_encode(&cb, &w);
	CHECK_EQ(wire_cursor_pos(&ca), wire_cursor_pos(&cb));
	CHECK_MEM(a, b, wire_cursor_pos(&cb));

	/* what the MDS would refuse is refused before anything is written */
	struct nacre_quota_req bad[3] = {req, req, req};
	bad[0].op = 7;
	bad[1].type = 3;
	bad[2].valid = 0x80;
	for (int i = 0; i < 3; i++) {
		wire_cursor_init_write(&ca, a, sizeof(a));
		CHECK_EQ(cl_quota_req_encode(&ca, NULL, &bad[i]), -EINVAL);
		CHECK_EQ(wire_cursor_pos(&ca), 0);
	}
}

/* A reply of count items: drift entries (of type drift_type) or targets. */
static size_t make_rep(unsigned char *buf, size_t len, uint32_t count, int drift,
		       uint32_t drift_type)
{
	struct wire_quota_rep h = {4096, 5, 1024, 2048, 3, 4, 16, -1, 604800, 2, 1, count};
	struct wire_cursor c;

	wire_cursor_init_write(&c, buf, len);
	wire_quota_rep_encode(&c, &h);
	for (uint32_t i = 0; i < count; i++) {
		if (drift) {
			struct wire_quota_drift d = {drift_type, 1000 + i, 8, 2, 4, 1};
			wire_quota_drift_put(&c, &d);
		} else {
			struct wire_quota_target t = {i, 100 + i};
			wire_quota_target_put(&c, &t);
		}
	}
	return wire_cursor_ok(&c) ? wire_cursor_pos(&c) : 0;
}

static void test_rep(void)
{
	static unsigned char buf[65536];
	struct nacre_quota_rep q;
	size_t n;

	n = make_rep(buf, sizeof(buf), 2, 1, 1);
	CHECK_EQ(cl_quota_rep_decode(buf, n, NACRE_QUOTA_CHECK, &q), 0);
	CHECK(q.kbytes == 4096 && q.inodes == 5 && q.bsoft == 1024 && q.bhard == 2048);
	CHECK(q.isoft == 3 && q.ihard == 4 && q.btime == 16 && q.itime == -1);
	CHECK(q.bgrace == 604800 && q.igrace == 2 && q.flags == NACRE_QUOTA_F_DEFAULT);
	CHECK_EQ(q.count, 2);
	CHECK(q.drift && !q.targets);
	if (q.drift) {
		CHECK(q.drift[1].type == 1 && q.drift[1].id == 1001 && q.drift[1].kbytes == 8);
		CHECK(q.drift[1].inodes == 2 && q.drift[1].count_kbytes == 4 &&
		      q.drift[1].count_inodes == 1);
	}
	nacre_quota_rep_fini(&q);
	CHECK(!q.drift && q.count == 0);
	nacre_quota_rep_fini(&q); /* twice is fine */
	nacre_quota_rep_fini(NULL);

	n = make_rep(buf, sizeof(buf), 3, 0, 0);
	CHECK_EQ(cl_quota_rep_decode(buf, n, NACRE_QUOTA_TARGETS, &q), 0);
	CHECK(q.targets && !q.drift && q.count == 3);
	if (q.targets)
		CHECK(q.targets[2].ost_idx == 2 && q.targets[2].kbytes == 102);
	nacre_quota_rep_fini(&q);

	/* other ops carry no list: items (and trailing bytes) are left alone, as before */
	n = make_rep(buf, sizeof(buf), 3, 0, 0);
	CHECK_EQ(cl_quota_rep_decode(buf, n + 1, NACRE_QUOTA_GET, &q), 0);
	CHECK(!q.targets && !q.drift && q.kbytes == 4096);
	nacre_quota_rep_fini(&q);

	/* malformed: short header, short list, a bad drift type, more drift than allowed */
	n = make_rep(buf, sizeof(buf), 2, 1, 1);
	CHECK_EQ(cl_quota_rep_decode(buf, 20, NACRE_QUOTA_GET, &q), -EPROTO);
	CHECK_EQ(cl_quota_rep_decode(buf, n - 1, NACRE_QUOTA_CHECK, &q), -EPROTO);
	CHECK(!q.drift && !q.targets);
	n = make_rep(buf, sizeof(buf), 2, 1, 3);
	CHECK_EQ(cl_quota_rep_decode(buf, n, NACRE_QUOTA_CHECK, &q), -EPROTO);
	CHECK(!q.drift);
	n = make_rep(buf, sizeof(buf), WIRE_QUOTA_DRIFT_MAX + 1, 1, 0);
	CHECK(n > 0);
	CHECK_EQ(cl_quota_rep_decode(buf, n, NACRE_QUOTA_CHECK, &q), -EPROTO);
	n = make_rep(buf, sizeof(buf), WIRE_QUOTA_DRIFT_MAX, 1, 0);
	CHECK_EQ(cl_quota_rep_decode(buf, n, NACRE_QUOTA_CHECK, &q), 0);
	CHECK_EQ(q.count, WIRE_QUOTA_DRIFT_MAX);
	nacre_quota_rep_fini(&q);
}

static void test_public_calls(void)
{
	struct nacre_quota_req req = {.op = NACRE_QUOTA_GET, .type = NACRE_QUOTA_USR};
	struct nacre_quota_rep q;
	char in[8] = {0}, out[64];
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK_EQ(nacre_quota_ioctl(fd, &req, &q), -ENOTTY); /* not a nacre mount */
	CHECK(!q.drift && !q.targets);
	req.op = 9;
	CHECK_EQ(nacre_quota_ioctl(fd, &req, &q), -EINVAL);
	CHECK_EQ(nacre_quota_ioctl(fd, NULL, &q), -EINVAL);
	close(fd);
	CHECK_EQ(nacre_quota_call(NULL, NULL, &req, &q), -EINVAL);
	CHECK_EQ(nacre_quota_ioctl_serve(NULL, NULL, in, sizeof(in), out, sizeof(out)), -EINVAL);
}

int main(void)
{
	test_req_bytes();
	test_rep();
	test_public_calls();
	return unit_done();
}
