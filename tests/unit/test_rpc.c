/* test_rpc.c - the transport end to end over loopback TCP: handshake with the cluster key,
 * pipelined calls with bulk both ways, replies straight into caller buffers, refusals
 * (wrong key, wrong fsname), a raw-socket peer sending garbage, reconnection after the
 * server restarts, many threads sharing one connection (the reader role passing between
 * them), and the wire flavours: sealed calls, a server minimum that raises or refuses. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/key.h"
#include "common/keytab.h"
#include "common/net.h"
#include "nacre/nacre_errno.h"
#include "proto/rpc.h"
#include "common/util.h"
#include "unit.h"

#define OP_ECHO 200 /* test-only opcode: reply body = request body, bulk = request bulk */
#define OP_SLOW 202 /* test-only: 50 ms in the handler, counting handlers running at once */

static int slow_now, slow_max; /* atomic */

static int echo_handler(void *arg, const struct rpc_request *req, struct rpc_reply *rep)
{
	(void)arg;
	if (req->hdr->opcode == OP_SLOW) {
		int n = __atomic_add_fetch(&slow_now, 1, __ATOMIC_SEQ_CST);
		int m = __atomic_load_n(&slow_max, __ATOMIC_SEQ_CST);
		while (n > m && !__atomic_compare_exchange_n(&slow_max, &m, n, 0, __ATOMIC_SEQ_CST,
							     __ATOMIC_SEQ_CST))
			;
		usleep(50000);
		__atomic_sub_fetch(&slow_now, 1, __ATOMIC_SEQ_CST);
		return 0;
	}
	if (req->hdr->opcode != OP_ECHO)
		return -EOPNOTSUPP;
	wire_put_bytes(&rep->body, req->body, req->body_len);
	if (req->bulk_len) {
		rep->bulk = rpc_reply_bulk_alloc(rep, req->bulk_len);
		if (!rep->bulk)
			return -ENOMEM;
		memcpy(rep->bulk, req->bulk, req->bulk_len);
		rep->bulk_len = req->bulk_len;
	}
	return 0;
}

struct srv {
	struct rpc_server *s;
	pthread_t tid;
	char addr[64];
};

static void *srv_main(void *arg)
{
	rpc_server_run(((struct srv *)arg)->s);
	return NULL;
}

/* Limits for the next srv_start (0 = the defaults). */
static struct rpc_server_conf next_limits;
static int g_sec_min; /* the next server's --sec-min */
static int (*g_sec_min_for)(void *, const char *, const char *, const char **);
static int g_sec, g_sec_exact; /* what the next clients ask for */

static int srv_start(struct srv *sv, const char *listen, const struct nacre_key *key)
{
	struct rpc_server_conf conf = {
		.sec_min = g_sec_min,
		.sec_min_for = g_sec_min_for,
		.listen_addr = listen,
		.fsname = "testfs",
		.server_name = "test-server",
		.key = key,
		.nworkers = next_limits.nworkers ? next_limits.nworkers : 4,
		.handler = echo_handler,
		.handshake_ms = next_limits.handshake_ms,
		.max_inflight = next_limits.max_inflight,
		.tx_stall_ms = next_limits.tx_stall_ms,
	};
	char err[256];
	int rc = rpc_server_create(&conf, &sv->s, err, sizeof(err));

	if (rc < 0) {
		fprintf(stderr, "%s\n", err);
		return rc;
	}
	snprintf(sv->addr, sizeof(sv->addr), "127.0.0.1:%u", rpc_server_port(sv->s));
	pthread_create(&sv->tid, NULL, srv_main, sv);
	return 0;
}

static void srv_stop(struct srv *sv)
{
	rpc_server_stop(sv->s);
	pthread_join(sv->tid, NULL);
	rpc_server_destroy(sv->s);
}

static struct nacre_key make_key(uint8_t fill)
{
	struct nacre_key k = { .present = 1, .len = 32 };
	memset(k.bytes, fill, k.len);
	return k;
}

static struct rpc_conn *client(const char *addr, const char *fsname, const struct nacre_key *k,
			       int timeout_ms)
{
	struct rpc_conn_conf cc = {
		.addr = addr, .fsname = fsname, .name = "unit", .key = k, .timeout_ms = timeout_ms,
		.sec = g_sec, .sec_exact = g_sec_exact,
	};
	struct rpc_conn *c = NULL;
	rpc_conn_create(&cc, &c);
	return c;
}

static void test_pipelined(void)
{
	struct nacre_key k = make_key(7);
	struct srv sv;
	struct rpc_conn *c;
	enum { N = 48, BULK = 300000 };
	struct rpc_pending *p[N];
	uint8_t *out[N], *in[N];
	struct iovec iov[N][2];
	char err[256];
	int i, ok = 1;

	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	c = client(sv.addr, "testfs", &k, 5000);
	CHECK(rpc_conn_connect(c, 2000, err, sizeof(err)) == 0);
	CHECK(strcmp(rpc_conn_server_name(c), "test-server") == 0);
	for (i = 0; i < N; i++) {
		struct rpc_call_args a = { .opcode = OP_ECHO, .flags = RPC_IDEMPOTENT };
		out[i] = malloc(BULK);
		in[i] = calloc(1, BULK);
		for (int b = 0; b < BULK; b++)
			out[i][b] = (uint8_t)(b * 31 + i);
		/* two iovecs, to exercise gathering */
		iov[i][0].iov_base = out[i];
		iov[i][0].iov_len = 1000;
		iov[i][1].iov_base = out[i] + 1000;
		iov[i][1].iov_len = BULK - 1000;
		a.body = &i;
		a.body_len = sizeof(i);
		a.bulk = iov[i];
		a.bulk_iovcnt = 2;
		a.reply_bulk = in[i];
		a.reply_bulk_cap = BULK;
		CHECK(rpc_start(c, &a, &p[i]) == 0);
	}
	for (i = 0; i < N; i++) {
		struct rpc_msg *m = NULL;
		int rc = rpc_wait(p[i], &m);
		int got = -1;
		if (rc != 0 || !m || m->body_len != sizeof(int))
			ok = 0;
		else
			memcpy(&got, m->body, sizeof(got));
		if (got != i || !m || m->bulk != in[i] || m->bulk_len != BULK ||
		    memcmp(in[i], out[i], BULK) != 0)
			ok = 0;
		rpc_msg_free(m);
		free(in[i]);
		free(out[i]);
	}
	CHECK(ok);

	/* unknown opcode: a status, not a broken connection */
	{
		struct rpc_call_args a = { .opcode = 201 };
		struct rpc_msg *m = NULL;
		CHECK(rpc_call(c, &a, &m) == -EOPNOTSUPP);
		rpc_msg_free(m);
	}
	rpc_conn_destroy(c);
	srv_stop(&sv);
}

static void test_refusals(void)
{
	struct nacre_key k = make_key(7), wrong = make_key(8), none = { 0 };
	struct srv sv;
	struct rpc_conn *c;
	char err[256];

	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	c = client(sv.addr, "testfs", &wrong, 2000);
	CHECK(rpc_conn_connect(c, 2000, err, sizeof(err)) == -NACRE_EAUTH);
	CHECK(strstr(err, "key") != NULL && strstr(err, sv.addr) != NULL);
	rpc_conn_destroy(c);

	c = client(sv.addr, "testfs", &none, 2000);
	CHECK(rpc_conn_connect(c, 2000, err, sizeof(err)) == -NACRE_EAUTH);
	rpc_conn_destroy(c);

	c = client(sv.addr, "otherfs", &k, 2000);
	CHECK(rpc_conn_connect(c, 2000, err, sizeof(err)) == -NACRE_EFSNAME);
	CHECK(strstr(err, "otherfs") != NULL);
	rpc_conn_destroy(c);

	/* a raw peer that skips the handshake or sends garbage is cut off; the server lives */
	{
		int fd = net_connect(sv.addr, 1000);
		uint8_t junk[64];
		struct iovec v = { junk, sizeof(junk) };
		memset(junk, 0x41, sizeof(junk));
		CHECK(fd >= 0);
		net_writev_full(fd, &v, 1);
		CHECK(net_read_full(fd, junk, 1) < 0); /* closed without a reply */
		close(fd);
	}
	{
		struct wire_hdr h = { .magic = WIRE_MAGIC, .version = WIRE_VERSION,
				      .opcode = OP_ECHO, .xid = 99 };
		uint8_t hb[WIRE_HDR_LEN];
		int fd = net_connect(sv.addr, 1000);
		struct iovec v = { hb, sizeof(hb) };
		wire_hdr_encode(&h, hb);
		net_writev_full(fd, &v, 1);
		CHECK(net_read_full(fd, hb, sizeof(hb)) == 0);
		CHECK(wire_hdr_decode(hb, &h) == 0 && h.status == -NACRE_EAUTH);
		close(fd);
	}
	c = client(sv.addr, "testfs", &k, 2000);
	CHECK(rpc_conn_connect(c, 2000, err, sizeof(err)) == 0);
	rpc_conn_destroy(c);
	srv_stop(&sv);
}

static void test_unreachable_and_restart(void)
{
	struct nacre_key k = make_key(3);
	struct srv sv;
	struct rpc_conn *c;
	char err[256], addr[64];
	int64_t t0;
	int rc, x = 5;
	struct rpc_call_args a = { .opcode = OP_ECHO, .flags = RPC_IDEMPOTENT, .body = &x,
				   .body_len = sizeof(x), .timeout_ms = 800 };
	struct rpc_msg *m = NULL;

	/* find a free port, then stop listening on it */
	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	str_copy(addr, sv.addr, sizeof(addr));
	srv_stop(&sv);

	c = client(addr, "testfs", &k, 800);
	t0 = net_now_ms();
	rc = rpc_conn_connect(c, 500, err, sizeof(err));
	CHECK(rc == -ECONNREFUSED);
	CHECK(strstr(err, addr) != NULL);
	rc = rpc_call(c, &a, &m);
	CHECK(rc == -ECONNREFUSED || rc == -ETIMEDOUT);
	CHECK(net_now_ms() - t0 < 3000);

	/* the server comes back on the same address: the next call goes through */
	CHECK(srv_start(&sv, addr, &k) == 0);
	a.timeout_ms = 3000;
	CHECK(rpc_call(c, &a, &m) == 0);
	rpc_msg_free(m);
	srv_stop(&sv);
	/* and again after a restart, with the old socket dead */
	CHECK(srv_start(&sv, addr, &k) == 0);
	CHECK(rpc_call(c, &a, &m) == 0);
	rpc_msg_free(m);
	rpc_conn_destroy(c);
	srv_stop(&sv);
}

/* Many threads calling at once on one connection: the reader role passes from caller to
 * caller, and every reply reaches its own caller. */
struct caller {
	struct rpc_conn *c;
	int id, ok;
};

static void *caller_main(void *arg)
{
	struct caller *cl = arg;

	cl->ok = 1;
	for (int i = 0; i < 300; i++) {
		int x = cl->id * 1000 + i, got = -1;
		uint8_t out[3000], in[3000];
		struct iovec iov = {out, (size_t)(i % 7) * 400};
		struct rpc_call_args a = {.opcode = OP_ECHO, .body = &x, .body_len = sizeof(x),
					  .bulk = &iov, .bulk_iovcnt = 1, .reply_bulk = in,
					  .reply_bulk_cap = sizeof(in)};
		struct rpc_msg *m = NULL;

		memset(out, x & 0xff, sizeof(out));
		if (rpc_call(cl->c, &a, &m) != 0 || !m || m->body_len != sizeof(x))
			cl->ok = 0;
		else
			memcpy(&got, m->body, sizeof(got));
		if (got != x || (m && (m->bulk_len != iov.iov_len ||
				       memcmp(m->bulk ? m->bulk : in, out, iov.iov_len) != 0)))
			cl->ok = 0;
		rpc_msg_free(m);
	}
	return NULL;
}

static void test_concurrent_callers(void)
{
	struct nacre_key k = make_key(5);
	struct srv sv;
	enum { T = 8 };
	struct caller cl[T];
	pthread_t tid[T];
	int ok = 1;

	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	struct rpc_conn *c = client(sv.addr, "testfs", &k, 5000);
	for (int t = 0; t < T; t++) {
		cl[t] = (struct caller){.c = c, .id = t};
		pthread_create(&tid[t], NULL, caller_main, &cl[t]);
	}
	for (int t = 0; t < T; t++) {
		pthread_join(tid[t], NULL);
		ok &= cl[t].ok;
	}
	CHECK(ok);
	rpc_conn_destroy(c);
	srv_stop(&sv);
}

/* An idle connection whose server restarted: a call that must not be resent (not
 * idempotent) still goes through, because the client sees the hang-up before sending and
 * reconnects instead of writing into the dead socket. */
static void test_idle_restart_not_idempotent(void)
{
	struct nacre_key k = make_key(9);
	struct srv sv;
	char addr[64];
	int x = 11;
	struct rpc_call_args a = {.opcode = OP_ECHO, .body = &x, .body_len = sizeof(x)};
	struct rpc_msg *m = NULL;

	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	str_copy(addr, sv.addr, sizeof(addr));
	struct rpc_conn *c = client(addr, "testfs", &k, 3000);
	CHECK(rpc_call(c, &a, &m) == 0);
	rpc_msg_free(m);
	srv_stop(&sv);
	CHECK(srv_start(&sv, addr, &k) == 0);
	usleep(50000); /* the old socket's FIN has arrived */
	CHECK(rpc_call(c, &a, &m) == 0);
	rpc_msg_free(m);
	rpc_conn_destroy(c);
	srv_stop(&sv);
}

/* Writes one frame (header, body, bulk) in two parts: all but the last tail bytes, a pause
 * long enough for the server to read them, then the tail. */
static int send_split(int fd, uint16_t op, uint64_t xid, const void *body, uint32_t body_len,
		      const uint8_t *bulk, uint32_t bulk_len, uint32_t tail)
{
	struct wire_hdr h = {.magic = WIRE_MAGIC, .version = WIRE_VERSION, .opcode = op,
			     .body_len = body_len, .xid = xid, .bulk_len = bulk_len,
			     .bulk_crc = bulk_len ? crc32c(0, bulk, bulk_len) : 0};
	uint8_t hb[WIRE_HDR_LEN];
	struct iovec v[3] = {{hb, sizeof(hb)}, {(void *)body, body_len},
			     {(void *)bulk, bulk_len - tail}};
	struct iovec t = {(void *)(bulk + bulk_len - tail), tail};

	wire_hdr_encode(&h, hb);
	if (net_writev_full(fd, v, 3) < 0)
		return -1;
	usleep(100000);
	return tail ? net_writev_full(fd, &t, 1) : 0;
}

/* Reads one reply frame (header and body, no bulk expected). Returns its status. */
static int read_reply(int fd, uint8_t *body, size_t cap, uint32_t *body_len)
{
	uint8_t hb[WIRE_HDR_LEN];
	struct wire_hdr h;

	if (net_read_full(fd, hb, sizeof(hb)) < 0 || wire_hdr_decode(hb, &h) < 0 ||
	    h.body_len > cap || net_read_full(fd, body, h.body_len) < 0)
		return -EPROTO;
	*body_len = h.body_len;
	if (h.bulk_len) {
		uint8_t *skip = malloc(h.bulk_len);
		int rc = skip ? net_read_full(fd, skip, h.bulk_len) : -ENOMEM;
		free(skip);
		if (rc < 0)
			return rc;
	}
	return h.status;
}

/* CONNECT and AUTH on a raw socket, as rpc_client does. */
static int raw_handshake(int fd, const struct nacre_key *k)
{
	struct wire_connect_req req = {.version_min = 1, .version_max = WIRE_VERSION};
	struct wire_connect_rep rep;
	struct wire_auth_req auth;
	struct wire_cursor cur;
	uint8_t buf[1024];
	uint32_t len;

	memset(req.nonce, 0x5a, sizeof(req.nonce));
	str_copy(req.fsname, "testfs", sizeof(req.fsname));
	str_copy(req.name, "raw", sizeof(req.name));
	wire_cursor_init_write(&cur, buf, sizeof(buf));
	wire_connect_req_encode(&cur, &req);
	if (send_split(fd, WIRE_OP_CONNECT, 1, buf, (uint32_t)cur.pos, NULL, 0, 0) < 0 ||
	    read_reply(fd, buf, sizeof(buf), &len) != 0)
		return -1;
	wire_cursor_init_read(&cur, buf, len);
	wire_connect_rep_decode(&cur, &rep);
	key_proof(k, "nacre-client", rep.nonce, req.nonce, WIRE_NONCE_LEN, auth.proof);
	wire_cursor_init_write(&cur, buf, sizeof(buf));
	wire_auth_req_encode(&cur, &auth);
	if (send_split(fd, WIRE_OP_AUTH, 2, buf, (uint32_t)cur.pos, NULL, 0, 0) < 0)
		return -1;
	return read_reply(fd, buf, sizeof(buf), &len);
}

/* The server reads a large payload straight into its buffer and small pieces through its
 * 16 KiB read buffer; the last read of a payload may ask for exactly 16 KiB. Such frames
 * once failed their bulk checksum (the read was taken for a buffered one). Tails around
 * that size, each after a pause so that the server's read sees exactly the tail. */
static void test_payload_read_boundaries(void)
{
	struct nacre_key k = make_key(4);
	struct srv sv;
	enum { BULK = 300000 };
	uint8_t *bulk = malloc(BULK), body[256];
	uint32_t tails[] = {16383, 16384, 16385, 1, 0};
	int ok = 1;

	for (int i = 0; i < BULK; i++)
		bulk[i] = (uint8_t)(i * 7 + 3);
	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	int fd = net_connect(sv.addr, 2000);
	CHECK(fd >= 0 && raw_handshake(fd, &k) == 0);
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		uint32_t len = 0;
		int x = (int)i;
		if (send_split(fd, OP_ECHO, 100 + i, &x, sizeof(x), bulk, BULK, tails[i]) < 0 ||
		    read_reply(fd, body, sizeof(body), &len) != 0 || len != sizeof(x) ||
		    memcmp(body, &x, sizeof(x)) != 0) {
			fprintf(stderr, "echo with a %u-byte tail failed\n", tails[i]);
			ok = 0;
			break;
		}
	}
	CHECK(ok);
	close(fd);
	free(bulk);
	srv_stop(&sv);
}

/* The server takes the bulk's CRC piece by piece as it reads (at most 256 KiB per read):
 * a byte changed anywhere, first or last of a piece, fails the frame; intact frames of
 * several pieces pass, one after another on one connection (their buffers are reused). */
static void test_bulk_checksum_pieces(void)
{
	struct nacre_key k = make_key(5);
	struct srv sv;
	enum { BULK = 1024 * 1024 + 7 };
	uint8_t *bulk = malloc(BULK), body[256];
	uint32_t flips[] = {0, 262143, 262144, 524288 + 100, BULK - 1};
	uint32_t len;
	int x = 42, fd;

	for (int i = 0; i < BULK; i++)
		bulk[i] = (uint8_t)(i * 13 + 1);
	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
		struct wire_hdr h = {.magic = WIRE_MAGIC, .version = WIRE_VERSION,
				     .opcode = OP_ECHO, .body_len = sizeof(x), .xid = 7,
				     .bulk_len = BULK, .bulk_crc = crc32c(0, bulk, BULK)};
		uint8_t hb[WIRE_HDR_LEN];
		struct iovec v[3] = {{hb, sizeof(hb)}, {&x, sizeof(x)}, {bulk, BULK}};

		fd = net_connect(sv.addr, 2000);
		CHECK(fd >= 0 && raw_handshake(fd, &k) == 0);
		wire_hdr_encode(&h, hb);
		bulk[flips[i]] ^= 0x10; /* after the CRC was taken */
		CHECK(net_writev_full(fd, v, 3) == 0);
		bulk[flips[i]] ^= 0x10;
		CHECK_EQ(read_reply(fd, body, sizeof(body), &len), -EPROTO);
		close(fd);
	}
	fd = net_connect(sv.addr, 2000);
	CHECK(fd >= 0 && raw_handshake(fd, &k) == 0);
	for (int i = 0; i < 3; i++) {
		CHECK(send_split(fd, OP_ECHO, 20 + i, &x, sizeof(x), bulk, BULK, 0) == 0);
		CHECK_EQ(read_reply(fd, body, sizeof(body), &len), 0);
		CHECK(len == sizeof(x) && memcmp(body, &x, sizeof(x)) == 0);
	}
	close(fd);
	free(bulk);
	srv_stop(&sv);
}

/* Milliseconds until the server closes fd (reads and drops what it sends), or -1 after
 * limit_ms. */
static int64_t ms_until_closed(int fd, int limit_ms)
{
	int64_t t0 = net_now_ms();
	uint8_t buf[4096];

	while (net_now_ms() - t0 < limit_ms) {
		struct timeval tv = {0, 100000};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return net_now_ms() - t0;
	}
	return -1;
}

/* The handshake deadline, handshake order, a peer that never reads its replies (server
 * stops reading it, then closes it), and the global bound on requests at workers. */
static void test_limits(void)
{
	struct nacre_key k = make_key(6);
	struct srv sv;
	char err[256];
	int fd;

	next_limits = (struct rpc_server_conf){ .handshake_ms = 300, .tx_stall_ms = 1000,
						.max_inflight = 2, .nworkers = 8 };
	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	next_limits = (struct rpc_server_conf){ 0 };

	/* silent: closed at the deadline */
	fd = net_connect(sv.addr, 1000);
	int64_t t = ms_until_closed(fd, 5000);
	CHECK(t >= 250 && t < 3000); /* 300 ms, and room for a loaded machine */
	close(fd);

	/* a second CONNECT is refused */
	{
		struct wire_connect_req req = {.version_min = 1, .version_max = WIRE_VERSION};
		struct wire_cursor cur;
		uint8_t buf[1024];
		uint32_t len;
		str_copy(req.fsname, "testfs", sizeof(req.fsname));
		str_copy(req.name, "raw", sizeof(req.name));
		wire_cursor_init_write(&cur, buf, sizeof(buf));
		wire_connect_req_encode(&cur, &req);
		fd = net_connect(sv.addr, 1000);
		CHECK(send_split(fd, WIRE_OP_CONNECT, 1, buf, (uint32_t)cur.pos, NULL, 0, 0) == 0);
		CHECK(read_reply(fd, buf, sizeof(buf), &len) == 0);
		CHECK(send_split(fd, WIRE_OP_CONNECT, 2, buf, (uint32_t)cur.pos, NULL, 0, 0) == 0);
		t = ms_until_closed(fd, 3000);
		CHECK(t >= 0 && t < 1000); /* at once */
		close(fd);
	}

	/* an authenticated peer that never reads: the server stops reading it, and closes it
	 * once it has taken nothing for tx_stall_ms */
	fd = net_connect(sv.addr, 1000);
	CHECK(raw_handshake(fd, &k) == 0);
	{
		enum { BODY = 4096 };
		uint8_t frame[WIRE_HDR_LEN + BODY];
		struct wire_hdr h = {.magic = WIRE_MAGIC, .version = WIRE_VERSION,
				     .opcode = OP_ECHO, .body_len = BODY, .xid = 10};
		size_t sent = 0, off = 0;
		int64_t t0 = net_now_ms(), blocked_at = -1;
		memset(frame, 0x33, sizeof(frame));
		wire_hdr_encode(&h, frame);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		/* until the socket stays full for 300 ms: the server no longer reads */
		while (net_now_ms() - t0 < 10000) {
			ssize_t n = send(fd, frame + off, sizeof(frame) - off, MSG_NOSIGNAL);
			if (n > 0) {
				sent += (size_t)n;
				off = (off + (size_t)n) % sizeof(frame);
				blocked_at = -1;
				continue;
			}
			if (blocked_at < 0)
				blocked_at = net_now_ms();
			if (net_now_ms() - blocked_at > 300)
				break;
			usleep(10000);
		}
		/* 16 MiB of replies queued, plus what the sockets hold */
		CHECK(blocked_at >= 0 && sent < (64u << 20));
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		/* closed: the reads see EOF or a reset within the stall time and a sweep */
		t = -1;
		for (int64_t t1 = net_now_ms(); net_now_ms() - t1 < 8000;) {
			struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
			if (poll(&pf, 1, 50) > 0 &&
			    (pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
				t = net_now_ms() - t1;
				break;
			}
		}
		/* tx_stall_ms 1000 from when its socket filled, swept once a second */
		CHECK(t >= 0 && t < 6000);
	}
	close(fd);

	/* the global bound: 3 connections x 6 slow requests, at most 2 at the workers */
	{
		struct rpc_conn *cs[3];
		struct rpc_pending *ps[18];
		struct rpc_call_args a = {.opcode = OP_SLOW};
		int ok = 1;
		for (int i = 0; i < 3; i++) {
			cs[i] = client(sv.addr, "testfs", &k, 5000);
			CHECK(rpc_conn_connect(cs[i], 2000, err, sizeof(err)) == 0);
		}
		for (int i = 0; i < 18; i++)
			ok &= rpc_start(cs[i % 3], &a, &ps[i]) == 0;
		for (int i = 0; i < 18; i++) {
			struct rpc_msg *m = NULL;
			ok &= rpc_wait(ps[i], &m) == 0;
			rpc_msg_free(m);
		}
		CHECK(ok);
		CHECK(slow_max >= 1 && slow_max <= 2);
		for (int i = 0; i < 3; i++)
			rpc_conn_destroy(cs[i]);
	}
	srv_stop(&sv);
}

/* Echo calls of several bulk sizes (one beyond the client's sealing buffer) on a connection
 * of flavour sec; then a server with minimum sec refusing a client that asks exactly less,
 * and raising one that lets it. */
static void test_flavour(int sec)
{
	static const uint32_t sizes[] = {0, 1, 300000, 2600000};
	struct nacre_key k = make_key(9);
	struct srv sv;
	struct rpc_conn *c;
	char err[256];

	g_sec_min = WIRE_SEC_NULL;
	g_sec = sec;
	g_sec_exact = 1;
	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	c = client(sv.addr, "testfs", &k, 5000);
	CHECK_EQ(rpc_conn_connect(c, 2000, err, sizeof(err)), 0);
	CHECK_EQ(rpc_conn_sec(c), sec);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *out = malloc(sizes[i] + 1), *in = calloc(1, sizes[i] + 1);
		struct iovec iov = {out, sizes[i]};
		struct rpc_call_args a = {.opcode = OP_ECHO, .body = "body!", .body_len = 5,
					  .bulk = &iov, .bulk_iovcnt = sizes[i] ? 1 : 0,
					  .reply_bulk = in, .reply_bulk_cap = sizes[i]};
		struct rpc_msg *m = NULL;

		for (uint32_t b = 0; b < sizes[i]; b++)
			out[b] = (uint8_t)(b * 7 + i);
		CHECK_EQ(rpc_call(c, &a, &m), 0);
		CHECK(m && m->body_len == 5 && memcmp(m->body, "body!", 5) == 0);
		CHECK(m && m->bulk_len == sizes[i] && memcmp(in, out, sizes[i]) == 0);
		rpc_msg_free(m);
		free(out);
		free(in);
	}
	rpc_conn_destroy(c);
	srv_stop(&sv);

	/* a server whose minimum is sec: less, asked exactly, is refused with the rule */
	g_sec_min = sec;
	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	g_sec = sec - 1;
	c = client(sv.addr, "testfs", &k, 5000);
	CHECK_EQ(rpc_conn_connect(c, 2000, err, sizeof(err)), -NACRE_ESEC);
	CHECK(strstr(err, sec == WIRE_SEC_PRIVACY
			       ? "server requires sec=privacy or better for this client (--sec-min)"
			       : "server requires sec=integrity or better for this client "
				 "(--sec-min)") != NULL);
	rpc_conn_destroy(c);
	/* ...and the same client letting the server choose gets the minimum */
	g_sec_exact = 0;
	c = client(sv.addr, "testfs", &k, 5000);
	CHECK_EQ(rpc_conn_connect(c, 2000, err, sizeof(err)), 0);
	CHECK_EQ(rpc_conn_sec(c), sec);
	{
		struct rpc_call_args a = {.opcode = OP_ECHO, .body = "x", .body_len = 1};
		struct rpc_msg *m = NULL;
		CHECK_EQ(rpc_call(c, &a, &m), 0);
		rpc_msg_free(m);
	}
	rpc_conn_destroy(c);
	srv_stop(&sv);
	g_sec_min = g_sec = g_sec_exact = 0;
}

/* A rule that tightens between CONNECT and AUTH (as one for a proven client key would): the
 * minimum is checked again at AUTH. */
static int hook_calls;
static int tightening_rule(void *arg, const char *peer, const char *name, const char **rule)
{
	(void)arg;
	(void)peer;
	*rule = strcmp(name, "unit") == 0 ? "nodemap rule 'lab'" : "?";
	return hook_calls++ == 0 ? WIRE_SEC_NULL : WIRE_SEC_PRIVACY;
}

static void test_sec_hook_at_auth(void)
{
	struct nacre_key k = make_key(5);
	struct srv sv;
	struct rpc_conn *c;
	char err[256];

	g_sec_min_for = tightening_rule;
	CHECK(srv_start(&sv, "127.0.0.1:0", &k) == 0);
	c = client(sv.addr, "testfs", &k, 5000);
	CHECK_EQ(rpc_conn_connect(c, 2000, err, sizeof(err)), -NACRE_ESEC);
	CHECK_EQ(hook_calls, 2);
	CHECK(strstr(err, "requires sec=privacy or better for this client (nodemap rule 'lab')"));
	rpc_conn_destroy(c);
	srv_stop(&sv);
	g_sec_min_for = NULL;
}

/* ---- client keys and roles ---- */

static struct keytab *g_tab; /* the server's key table in test_key_roles */

static int tab_check(void *arg, int role, const char *name, uint64_t gen)
{
	(void)arg;
	return keytab_check(g_tab, role, name, gen);
}

/* Answers with the proven role (u32) and key name of the caller. */
static int whoami_handler(void *arg, const struct rpc_request *req, struct rpc_reply *rep)
{
	(void)arg;
	wire_put_u32(&rep->body, (uint32_t)req->peer_role);
	wire_put_bytes(&rep->body, req->key_name, strlen(req->key_name) + 1);
	return 0;
}

/* whoami on c: the role, or a negative error; name gets the key name. */
static int whoami(struct rpc_conn *c, char *name, size_t len)
{
	struct rpc_call_args a = {.opcode = OP_ECHO, .flags = RPC_IDEMPOTENT};
	struct rpc_msg *m = NULL;
	int rc = rpc_call(c, &a, &m);

	if (rc == 0 && m && m->body_len >= 5) {
		rc = (int)(m->body[0] | m->body[1] << 8);
		str_copy(name, (const char *)m->body + 4, len);
	} else if (rc == 0) {
		rc = -EPROTO;
	}
	rpc_msg_free(m);
	return rc;
}

static void test_key_roles(void)
{
	struct nacre_key cluster = make_key(9), other = make_key(10), k1, k1_old, k_bad, adm;
	struct keytab_entry e = {.name = "node1", .role = KEY_ROLE_CLIENT, .gen = 2};
	struct keytab_entry a = {.name = "ops", .role = KEY_ROLE_ADMIN, .gen = 1};
	struct rpc_server_conf conf = {
		.listen_addr = "127.0.0.1:0", .fsname = "testfs", .server_name = "test-server",
		.key = &cluster, .nworkers = 2, .handler = whoami_handler, .key_check = tab_check,
	};
	struct srv sv;
	char err[512], name[80];

	g_tab = keytab_create();
	CHECK(g_tab != NULL);
	keytab_update(g_tab, &e);
	keytab_update(g_tab, &a);
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_CLIENT, "node1", 2, &k1), 0);
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_CLIENT, "node1", 1, &k1_old), 0);
	CHECK_EQ(key_derive(&other, KEY_ROLE_CLIENT, "node1", 2, &k_bad), 0);
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_ADMIN, "ops", 1, &adm), 0);
	CHECK(rpc_server_create(&conf, &sv.s, err, sizeof(err)) == 0);
	snprintf(sv.addr, sizeof(sv.addr), "127.0.0.1:%u", rpc_server_port(sv.s));
	pthread_create(&sv.tid, NULL, srv_main, &sv);

	/* each key proves its own role and name */
	struct rpc_conn *cs = client(sv.addr, "testfs", &cluster, 2000);
	struct rpc_conn *cc = client(sv.addr, "testfs", &k1, 2000);
	struct rpc_conn *ca = client(sv.addr, "testfs", &adm, 2000);
	CHECK_EQ(whoami(cs, name, sizeof(name)), KEY_ROLE_SERVER);
	CHECK_STR(name, "");
	CHECK_EQ(whoami(cc, name, sizeof(name)), KEY_ROLE_CLIENT);
	CHECK_STR(name, "node1");
	CHECK_EQ(whoami(ca, name, sizeof(name)), KEY_ROLE_ADMIN);
	CHECK_STR(name, "ops");

	/* refused: an old generation, a key of another cluster, a name not in the table */
	struct rpc_conn *c2 = client(sv.addr, "testfs", &k1_old, 2000);
	CHECK_EQ(rpc_conn_connect(c2, 2000, err, sizeof(err)), -EKEYEXPIRED);
	CHECK(strstr(err, "replaced by a newer") != NULL);
	rpc_conn_destroy(c2);
	c2 = client(sv.addr, "testfs", &k_bad, 2000);
	CHECK_EQ(rpc_conn_connect(c2, 2000, err, sizeof(err)), -NACRE_EAUTH);
	rpc_conn_destroy(c2);
	struct nacre_key k_unknown;
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_CLIENT, "stranger", 1, &k_unknown), 0);
	c2 = client(sv.addr, "testfs", &k_unknown, 2000);
	CHECK_EQ(rpc_conn_connect(c2, 2000, err, sizeof(err)), -EKEYREJECTED);
	rpc_conn_destroy(c2);
	/* a client key claiming another role fails the proof */
	struct nacre_key liar = k1;
	liar.role = KEY_ROLE_ADMIN;
	c2 = client(sv.addr, "testfs", &liar, 2000);
	CHECK_EQ(rpc_conn_connect(c2, 2000, err, sizeof(err)), -NACRE_EAUTH);
	rpc_conn_destroy(c2);

	/* revoked: the connection is closed at once, the next call fails, and for good */
	e.revoked = 1;
	keytab_update(g_tab, &e);
	rpc_server_recheck_keys(sv.s);
	usleep(100000);
	CHECK_EQ(whoami(cc, name, sizeof(name)), -EKEYREVOKED);
	CHECK_EQ(whoami(cc, name, sizeof(name)), -EKEYREVOKED);
	CHECK_EQ(whoami(ca, name, sizeof(name)), KEY_ROLE_ADMIN); /* the others go on */
	CHECK_EQ(whoami(cs, name, sizeof(name)), KEY_ROLE_SERVER);

	/* the proven key is the connection's for good: a second CONNECT is refused */
	int fd = net_connect(sv.addr, 2000);
	uint8_t buf[512];
	uint32_t len;
	CHECK(fd >= 0 && raw_handshake(fd, &cluster) == 0);
	struct wire_connect_req req = {.version_min = 1, .version_max = WIRE_VERSION};
	struct wire_cursor cur;
	str_copy(req.fsname, "testfs", sizeof(req.fsname));
	str_copy(req.name, "raw", sizeof(req.name));
	req.features = WIRE_FEAT_KEY_ID;
	req.key.role = KEY_ROLE_CLIENT;
	str_copy(req.key.name, "node1", sizeof(req.key.name));
	req.key.gen = 2;
	wire_cursor_init_write(&cur, buf, sizeof(buf));
	wire_connect_req_encode(&cur, &req);
	CHECK(send_split(fd, WIRE_OP_CONNECT, 3, buf, (uint32_t)cur.pos, NULL, 0, 0) == 0);
	CHECK_EQ(read_reply(fd, buf, sizeof(buf), &len), -EPROTO);
	CHECK_EQ(read(fd, buf, 1), 0); /* closed */
	close(fd);

	rpc_conn_destroy(cs);
	rpc_conn_destroy(cc);
	rpc_conn_destroy(ca);
	srv_stop(&sv);
	keytab_destroy(g_tab);
}

int main(void)
{
	test_sec_hook_at_auth();
	test_flavour(WIRE_SEC_INTEGRITY);
	test_flavour(WIRE_SEC_PRIVACY);
	/* the whole transport again, sealed */
	g_sec = WIRE_SEC_PRIVACY;
	test_pipelined();
	test_concurrent_callers();
	g_sec = 0;
	test_key_roles();
	test_payload_read_boundaries();
	test_bulk_checksum_pieces();
	test_pipelined();
	test_concurrent_callers();
	test_idle_restart_not_idempotent();
	test_refusals();
	test_limits();
	test_unreachable_and_restart();
	return unit_done();
}
