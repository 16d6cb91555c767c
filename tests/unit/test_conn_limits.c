/* test_conn_limits.c - what an un-authenticated peer may send, the caps per address and in
 * total (which follow the descriptor limit), the handshake deadline. */
#include <stdlib.h>
#include <sys/resource.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "proto/conn_limits.h"
#include "unit.h"

static struct wire_hdr hdr(uint16_t op, uint32_t body, uint32_t bulk)
{
	struct wire_hdr h = { .magic = WIRE_MAGIC, .version = WIRE_VERSION, .opcode = op,
			      .body_len = body, .bulk_len = bulk };
	return h;
}

static void test_check_hdr(void)
{
	struct wire_hdr h;

	h = hdr(WIRE_OP_CONNECT, 300, 0);
	CHECK_EQ(conn_limits_check_hdr(&h, 0, 0), CL_OK);
	CHECK_EQ(conn_limits_check_hdr(&h, 1, 0), CL_HANDSHAKE_ORDER); /* second CONNECT */
	CHECK_EQ(conn_limits_check_hdr(&h, 1, 1), CL_HANDSHAKE_ORDER);
	h = hdr(WIRE_OP_AUTH, 32, 0);
	CHECK_EQ(conn_limits_check_hdr(&h, 0, 0), CL_HANDSHAKE_ORDER); /* AUTH first */
	CHECK_EQ(conn_limits_check_hdr(&h, 1, 0), CL_OK);
	CHECK_EQ(conn_limits_check_hdr(&h, 1, 1), CL_HANDSHAKE_ORDER); /* second AUTH */
	h = hdr(WIRE_OP_CONNECT, WIRE_HANDSHAKE_BODY_MAX, 0);
	CHECK_EQ(conn_limits_check_hdr(&h, 0, 0), CL_OK);
	h = hdr(WIRE_OP_CONNECT, WIRE_HANDSHAKE_BODY_MAX + 1, 0);
	CHECK_EQ(conn_limits_check_hdr(&h, 0, 0), CL_PREAUTH_SIZE);
	h = hdr(WIRE_OP_CONNECT, 100, 1);
	CHECK_EQ(conn_limits_check_hdr(&h, 0, 0), CL_PREAUTH_SIZE); /* no bulk */
	h = hdr(WIRE_OP_OST_WRITE, 64, 16u << 20);
	CHECK_EQ(conn_limits_check_hdr(&h, 1, 0), CL_PREAUTH_OPCODE);
	CHECK_EQ(conn_limits_check_hdr(&h, 1, 1), CL_OK);
	h = hdr(WIRE_OP_PING, 0, 0);
	CHECK_EQ(conn_limits_check_hdr(&h, 1, 0), CL_PREAUTH_OPCODE);
	h = hdr(WIRE_OP_CONNECT, 10, 0);
	h.flags = WIRE_FLAG_REPLY;
	CHECK_EQ(conn_limits_check_hdr(&h, 0, 0), CL_PREAUTH_OPCODE);
	CHECK_STR(cl_reason_name(CL_PEER_CAP), "peer_cap");
}

static struct sockaddr_storage v4(const char *ip)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;

	a->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &a->sin_addr);
	return ss;
}

static void test_caps_and_deadline(void)
{
	struct conn_limits l;
	struct cl_entry e[12];
	struct sockaddr_storage a = v4("10.0.0.1"), b = v4("10.0.0.2");

	memset(e, 0, sizeof(e));
	CHECK_EQ(conn_limits_init(&l, 1000, 3, 5), 0);
	CHECK(conn_limits_oldest(&l) == NULL);
	CHECK_EQ(conn_limits_next_ms(&l, 0), -1);
	/* per address: the fourth from a is refused, b still comes in */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(conn_limits_admit(&l, &e[i], &a, 100 + i), CL_OK);
	CHECK_EQ(conn_limits_admit(&l, &e[3], &a, 110), CL_PEER_CAP);
	CHECK(!e[3].listed);
	CHECK_EQ(conn_limits_admit(&l, &e[4], &b, 120), CL_OK);
	CHECK(conn_limits_excess(&l) == NULL);
	/* one leaves: a gets one back */
	conn_limits_leave(&l, &e[1]);
	conn_limits_leave(&l, &e[1]); /* twice is fine */
	CHECK_EQ(conn_limits_admit(&l, &e[5], &a, 130), CL_OK);
	/* in total: 5; the sixth makes the oldest (e[0]) excess */
	CHECK_EQ(conn_limits_admit(&l, &e[6], &b, 140), CL_OK);
	CHECK(conn_limits_excess(&l) == NULL);
	CHECK_EQ(conn_limits_admit(&l, &e[7], &b, 150), CL_OK);
	CHECK(conn_limits_excess(&l) == &e[0]);
	conn_limits_leave(&l, &e[0]);
	CHECK(conn_limits_excess(&l) == NULL);
	/* the deadline, oldest first: e[2] at 1102 */
	CHECK(conn_limits_oldest(&l) == &e[2]);
	CHECK_EQ(conn_limits_next_ms(&l, 1000), 102);
	CHECK(conn_limits_expired(&l, 1101) == NULL);
	CHECK(conn_limits_expired(&l, 1102) == &e[2]);
	conn_limits_leave(&l, &e[2]);
	CHECK(conn_limits_expired(&l, 1102) == NULL);
	CHECK_EQ(conn_limits_next_ms(&l, 1102), 18);
	CHECK_EQ(l.count, 4);
	conn_limits_fini(&l);
}

/* A lowered descriptor limit lowers the total cap at once: a quarter of it. */
static void test_follows_rlimit(void)
{
	struct conn_limits l;
	struct cl_entry e[20];
	struct rlimit old, low;
	int excess = 0;

	memset(e, 0, sizeof(e));
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
	CHECK_EQ(conn_limits_init(&l, 0, 100, 100), 0);
	for (int i = 0; i < 20; i++) {
		struct sockaddr_storage a = v4("10.0.0.3");
		CHECK_EQ(conn_limits_admit(&l, &e[i], &a, 0), CL_OK);
	}
	CHECK(conn_limits_excess(&l) == NULL);
	low = old;
	low.rlim_cur = 64; /* cap 16 */
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (struct cl_entry *x; (x = conn_limits_excess(&l)) != NULL; excess++)
		conn_limits_leave(&l, x);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
	CHECK_EQ(excess, 4);
	CHECK(conn_limits_oldest(&l) == &e[4]);
	conn_limits_fini(&l);
}

int main(void)
{
	test_check_hdr();
	test_caps_and_deadline();
	test_follows_rlimit();
	return unit_done();
}
