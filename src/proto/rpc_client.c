/* rpc_client.c - the client side of the transport: one connection to one server, shared by
 * many threads, requests pipelined and replies matched by xid (see rpc.h).
 *
 * Locking: c->lock protects the connection state (fd, gen, connecting, reader_busy), the
 * pending table, the waiter list and every pending's state. c->send_lock serializes writes to
 * the socket so frames do not interleave; it is taken before c->lock is released-and-retaken,
 * never while waiting. Lock order: send_lock, then lock.
 *
 * Replies are read by the callers themselves (leader/follower): of the threads waiting in
 * rpc_wait, one at a time is the reader. It reads every reply that arrives, hands each to its
 * waiter, and gives the role to the next waiter once its own reply is in. A reply thus wakes
 * only the thread that waits for it, instead of a receiver thread and then the caller: on a
 * machine where a task switch is expensive that is most of the cost of a small call. With
 * nobody waiting nobody reads, so before sending on an idle socket the sender checks that the
 * server has not hung up (a restarted server) and drains what is left on it first.
 *
 * When the socket fails, the reader marks every request sent on it: idempotent ones go back to
 * UNSENT (their waiter resends after a reconnect), the others fail with -ECONNRESET because
 * the server may have executed them.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "proto/rpc.h"

#define SUBSYS "rpc"
#define PENDING_BUCKETS 256
#define RECONNECT_PAUSE_MS 200

enum pend_state { P_UNSENT, P_SENT, P_DONE };

struct rpc_pending {
	struct rpc_pending *hnext; /* hash chain, protected by c->lock */
	struct rpc_conn *conn;
	uint64_t xid;
	enum pend_state state; /* protected by c->lock */
	uint64_t sent_gen;     /* connection generation it was sent on */
	int status;            /* result when DONE */
	struct rpc_msg *reply; /* when DONE and status came from a reply */
	pthread_cond_t cond;
	int64_t deadline_ms;
	struct rpc_call_args args;
	uint8_t *body_copy;  /* the request body, kept for resends */
	int in_table;
	int receiving; /* the reader is reading bulk into args.reply_bulk; protected by lock */
	struct rpc_pending *wnext, *wprev; /* c->waiters, while waiting as a follower */
	int64_t start_us; /* rpc_start time, for the client latency histogram */
};

/* The reader's side of a socket: small replies come through buf, several per read();
 * what does not fit is read straight into place. */
struct rx_reader {
	int fd;
	size_t off, len; /* buffered bytes: buf[off, len) */
	uint8_t buf[16384];
};

struct rpc_conn {
	char addr[NACRE_ADDR_MAX + 1];
	char fsname[NACRE_FSNAME_MAX + 1];
	char name[NACRE_NAME_MAX + 1];
	struct nacre_key key;
	int timeout_ms;

	pthread_mutex_t lock;
	pthread_mutex_t send_lock;
	pthread_cond_t state_cond; /* connection state changes */
	int fd;                    /* -1 when disconnected; protected by lock */
	uint64_t gen;              /* bumped per established socket; protected by lock */
	int connecting;            /* a thread is connecting; protected by lock */
	int reader_busy;           /* a waiter is reading replies; protected by lock */
	struct rpc_pending *waiters; /* followers; one becomes the next reader */
	struct rx_reader rx;       /* used by the reader only; reset per socket */
	int shutting_down;         /* protected by lock */
	uint64_t next_xid;         /* protected by lock */
	char server_name[NACRE_NAME_MAX + 1]; /* protected by lock */
	int last_err;              /* last connect error, for messages; protected by lock */
	struct rpc_pending *table[PENDING_BUCKETS];
};

void rpc_msg_free(struct rpc_msg *m)
{
	if (!m)
		return;
	free(m->body);
	if (m->bulk_owned)
		free(m->bulk);
	free(m);
}

static void table_add(struct rpc_conn *c, struct rpc_pending *p)
{
	struct rpc_pending **b = &c->table[p->xid % PENDING_BUCKETS];

	p->hnext = *b;
	*b = p;
	p->in_table = 1;
}

static void table_del(struct rpc_conn *c, struct rpc_pending *p)
{
	struct rpc_pending **b = &c->table[p->xid % PENDING_BUCKETS];

	if (!p->in_table)
		return;
	for (; *b; b = &(*b)->hnext) {
		if (*b == p) {
			*b = p->hnext;
			break;
		}
	}
	p->in_table = 0;
}

static struct rpc_pending *table_find(struct rpc_conn *c, uint64_t xid)
{
	struct rpc_pending *p = c->table[xid % PENDING_BUCKETS];

	while (p && p->xid != xid)
		p = p->hnext;
	return p;
}

static void pending_finish(struct rpc_pending *p, int status, struct rpc_msg *reply)
{
	p->state = P_DONE;
	p->status = status;
	p->reply = reply;
	pthread_cond_signal(&p->cond);
}

static int send_frame(int fd, uint16_t opcode, uint64_t xid, const void *body, uint32_t body_len,
		      const struct iovec *bulk, int bulk_iovcnt)
{
	struct iovec iov[2 + 64];
	uint8_t hdr_buf[WIRE_HDR_LEN];
	struct wire_hdr h = {
		.magic = WIRE_MAGIC,
		.version = WIRE_VERSION,
		.opcode = opcode,
		.body_len = body_len,
		.xid = xid,
	};
	int i, n = 0;
	uint32_t crc = 0;
	size_t bulk_len = 0;

	if (bulk_iovcnt > 64)
		return -EINVAL;
	for (i = 0; i < bulk_iovcnt; i++) {
		crc = crc32c(crc, bulk[i].iov_base, bulk[i].iov_len);
		bulk_len += bulk[i].iov_len;
	}
	if (bulk_len > WIRE_BULK_MAX || body_len > WIRE_BODY_MAX)
		return -E2BIG;
	h.bulk_len = (uint32_t)bulk_len;
	h.bulk_crc = bulk_len ? crc : 0;
	wire_hdr_encode(&h, hdr_buf);
	iov[n].iov_base = hdr_buf;
	iov[n++].iov_len = WIRE_HDR_LEN;
	if (body_len) {
		iov[n].iov_base = (void *)body;
		iov[n++].iov_len = body_len;
	}
	for (i = 0; i < bulk_iovcnt; i++)
		if (bulk[i].iov_len)
			iov[n++] = bulk[i];
	metrics_add(metrics_net_sent(), WIRE_HDR_LEN + body_len + bulk_len);
	return net_writev_full(fd, iov, n);
}

/* Reads one reply frame of the handshake (before the socket is shared). */
static int handshake_reply(int fd, uint64_t xid, int64_t deadline, uint8_t *body, size_t cap,
			   uint32_t *body_len)
{
	uint8_t hb[WIRE_HDR_LEN];
	struct wire_hdr h;
	int rc;

	rc = net_read_full_deadline(fd, hb, sizeof(hb), deadline);
	if (rc < 0)
		return rc;
	rc = wire_hdr_decode(hb, &h);
	if (rc < 0)
		return rc;
	if (h.xid != xid || !(h.flags & WIRE_FLAG_REPLY) || h.body_len > cap || h.bulk_len)
		return -EPROTO;
	rc = net_read_full_deadline(fd, body, h.body_len, deadline);
	if (rc < 0)
		return rc;
	*body_len = h.body_len;
	return h.status;
}

static void describe(char *err, size_t err_len, const struct rpc_conn *c, int rc)
{
	const char *hint = "";

	if (!err || !err_len)
		return;
	switch (rc) {
	case -ECONNREFUSED:
		hint = " (is the server running and listening there?)";
		break;
	case -ETIMEDOUT:
		hint = " (no answer: check the address and the network)";
		break;
	case -NACRE_EAUTH:
		hint = ": check that both sides use the same --key-file";
		break;
	case -NACRE_EFSNAME:
		hint = ": check the fsname in the mount string or --fsname";
		break;
	default:
		break;
	}
	if (rc == -NACRE_EAUTH)
		snprintf(err, err_len, "cluster key rejected by %s%s", c->addr, hint);
	else if (rc == -NACRE_EFSNAME)
		snprintf(err, err_len, "%s does not serve file system '%s'%s", c->addr, c->fsname,
			 hint);
	else
		snprintf(err, err_len, "cannot reach %s: %s%s", c->addr, nacre_strerror(rc), hint);
}

/* Opens a socket and runs CONNECT + AUTH. Returns the fd or a negative error. */
static int dial(struct rpc_conn *c, int64_t deadline, char *server_name, size_t sn_len)
{
	struct wire_connect_req req = { .version_min = 1, .version_max = WIRE_VERSION };
	struct wire_connect_rep rep;
	struct wire_auth_req auth;
	struct wire_cursor cur;
	uint8_t buf[1024], expect[WIRE_PROOF_LEN];
	uint32_t len = 0;
	int64_t left = deadline - net_now_ms();
	int fd, rc;

	if (left <= 0)
		return -ETIMEDOUT;
	fd = net_connect(c->addr, (int)left);
	if (fd < 0)
		return fd;
	req.features = WIRE_FEATURES_SUPPORTED;
	rc = key_random(req.nonce, sizeof(req.nonce));
	if (rc < 0)
		goto out_close;
	str_copy(req.fsname, c->fsname, sizeof(req.fsname));
	str_copy(req.name, c->name, sizeof(req.name));
	wire_cursor_init_write(&cur, buf, sizeof(buf));
	wire_connect_req_encode(&cur, &req);
	rc = send_frame(fd, WIRE_OP_CONNECT, 1, buf, (uint32_t)cur.pos, NULL, 0);
	if (rc < 0)
		goto out_close;
	rc = handshake_reply(fd, 1, deadline, buf, sizeof(buf), &len);
	if (rc < 0)
		goto out_close;
	wire_cursor_init_read(&cur, buf, len);
	wire_connect_rep_decode(&cur, &rep);
	if (!wire_cursor_ok(&cur) || rep.version < 1 || rep.version > WIRE_VERSION) {
		rc = -EPROTO;
		goto out_close;
	}
	key_proof(&c->key, "nacre-server", req.nonce, rep.nonce, WIRE_NONCE_LEN, expect);
	if (!key_proof_eq(expect, rep.proof, WIRE_PROOF_LEN)) {
		rc = -NACRE_EAUTH; /* the server does not hold our key */
		goto out_close;
	}
	key_proof(&c->key, "nacre-client", rep.nonce, req.nonce, WIRE_NONCE_LEN, auth.proof);
	wire_cursor_init_write(&cur, buf, sizeof(buf));
	wire_auth_req_encode(&cur, &auth);
	rc = send_frame(fd, WIRE_OP_AUTH, 2, buf, (uint32_t)cur.pos, NULL, 0);
	if (rc < 0)
		goto out_close;
	rc = handshake_reply(fd, 2, deadline, buf, sizeof(buf), &len);
	if (rc < 0)
		goto out_close;
	str_copy(server_name, rep.server_name, sn_len);
	/* A server that stops halfway through a frame for a whole call timeout is broken: the
	 * reader's blocking reads then fail instead of holding every caller. */
	struct timeval stall = {.tv_sec = c->timeout_ms / 1000,
				.tv_usec = (c->timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &stall, sizeof(stall));
	return fd;

out_close:
	close(fd);
	return rc;
}

/* Called by the reader when its socket died: requeue or fail what was sent on it. */
static void socket_failed(struct rpc_conn *c, int fd, uint64_t gen)
{
	int i;

	pthread_mutex_lock(&c->lock);
	if (c->gen == gen && c->fd == fd) {
		c->fd = -1;
		LOG_DEBUG(SUBSYS, "connection to %s lost", c->addr);
	}
	for (i = 0; i < PENDING_BUCKETS; i++) {
		struct rpc_pending *p;
		for (p = c->table[i]; p; p = p->hnext) {
			if (p->state != P_SENT || p->sent_gen != gen)
				continue;
			if (p->args.flags & RPC_IDEMPOTENT) {
				p->state = P_UNSENT;
				pthread_cond_signal(&p->cond);
			} else {
				pending_finish(p, -ECONNRESET, NULL);
			}
		}
	}
	pthread_cond_broadcast(&c->state_cond);
	pthread_mutex_unlock(&c->lock);
	/* No writer can be using fd: they check c->fd under send_lock before writing. */
	pthread_mutex_lock(&c->send_lock);
	close(fd);
	pthread_mutex_unlock(&c->send_lock);
}

static void receive_done(struct rpc_conn *c, uint64_t xid)
{
	struct rpc_pending *p;

	pthread_mutex_lock(&c->lock);
	p = table_find(c, xid);
	if (p) {
		p->receiving = 0;
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Reads exactly n bytes. 0, or a negative errno (-ECONNRESET at end of stream; -EAGAIN when
 * the server stalls mid-frame longer than the socket's receive timeout). */
static int rx_read(struct rx_reader *r, void *dst, size_t n)
{
	uint8_t *p = dst;
	size_t take = r->len - r->off;

	if (take > n)
		take = n;
	memcpy(p, r->buf + r->off, take);
	r->off += take;
	p += take;
	n -= take;
	if (n == 0)
		return 0;
	if (n >= sizeof(r->buf))
		return net_read_full(r->fd, p, n);
	r->off = r->len = 0;
	while (r->len < n) {
		ssize_t k = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -ECONNRESET;
		r->len += (size_t)k;
	}
	memcpy(p, r->buf, n);
	r->off = n;
	return 0;
}

/* Waits until a frame can be read (bytes buffered or the socket readable): 1, 0 when the
 * deadline passed first, or a negative errno. */
static int rx_wait(struct rx_reader *r, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
		int64_t left = deadline - net_now_ms();
		int k;

		if (r->off < r->len)
			return 1;
		if (left <= 0)
			return 0;
		k = poll(&pfd, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (k > 0)
			return 1;
		if (k < 0 && errno != EINTR)
			return -errno;
	}
}

/* Reads one reply and hands it to its pending. 0, or a negative errno when the socket is
 * unusable (closed, stalled, or sending garbage). */
static int read_one_reply(struct rpc_conn *c)
{
	struct rx_reader *rx = &c->rx;
	uint8_t hb[WIRE_HDR_LEN];
	struct wire_hdr h;
	struct rpc_pending *p;
	struct rpc_msg *m;
	uint8_t *bulk_dst = NULL;
	int rc;

	rc = rx_read(rx, hb, sizeof(hb));
	if (rc < 0)
		return rc;
	rc = wire_hdr_decode(hb, &h);
	if (rc < 0 || !(h.flags & WIRE_FLAG_REPLY)) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "bad frame from %s; reconnecting", c->addr);
		return -EPROTO;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->hdr = h;
	m->body_len = h.body_len;
	m->body = malloc(h.body_len + 1);
	rc = m->body ? rx_read(rx, m->body, h.body_len) : -ENOMEM;
	if (rc < 0) {
		rpc_msg_free(m);
		return rc;
	}
	/* Where to put the bulk: straight into the caller's buffer if it fits. */
	pthread_mutex_lock(&c->lock);
	p = table_find(c, h.xid);
	if (p && p->state == P_SENT && p->args.reply_bulk && h.bulk_len <= p->args.reply_bulk_cap) {
		bulk_dst = p->args.reply_bulk;
		p->receiving = 1; /* holds the waiter (and its buffer) until we are done */
	}
	pthread_mutex_unlock(&c->lock);
	m->bulk_len = h.bulk_len;
	if (h.bulk_len) {
		if (bulk_dst) {
			m->bulk = bulk_dst;
		} else {
			m->bulk = malloc(h.bulk_len);
			m->bulk_owned = 1;
		}
		rc = m->bulk ? rx_read(rx, m->bulk, h.bulk_len) : -ENOMEM;
		if (rc == 0 && crc32c(0, m->bulk, h.bulk_len) != h.bulk_crc) {
			LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
					"bulk checksum mismatch from %s; reconnecting", c->addr);
			rc = -EPROTO;
		}
	}
	if (bulk_dst)
		receive_done(c, h.xid);
	if (rc < 0) {
		rpc_msg_free(m);
		return rc;
	}
	metrics_add(metrics_net_recv(), WIRE_HDR_LEN + (uint64_t)h.body_len + h.bulk_len);
	pthread_mutex_lock(&c->lock);
	p = table_find(c, h.xid);
	if (p && p->state == P_SENT) {
		table_del(c, p);
		pending_finish(p, h.status, m);
		m = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	rpc_msg_free(m); /* a reply nobody waits for any more */
	return 0;
}

static void waiter_add(struct rpc_conn *c, struct rpc_pending *p)
{
	p->wprev = NULL;
	p->wnext = c->waiters;
	if (c->waiters)
		c->waiters->wprev = p;
	c->waiters = p;
}

static void waiter_del(struct rpc_conn *c, struct rpc_pending *p)
{
	if (p->wprev)
		p->wprev->wnext = p->wnext;
	else
		c->waiters = p->wnext;
	if (p->wnext)
		p->wnext->wprev = p->wprev;
	p->wnext = p->wprev = NULL;
}

/* Gives the reader role to a follower whose call is still open. Called with c->lock held. */
static void wake_next_reader(struct rpc_conn *c)
{
	for (struct rpc_pending *w = c->waiters; w; w = w->wnext) {
		if (w->state != P_DONE) {
			pthread_cond_signal(&w->cond);
			return;
		}
	}
}

/* The reader role. Called with c->lock held and c->reader_busy just set by the caller;
 * returns with the lock held and the role given up. Reads replies, anyone's, until me is no
 * longer SENT (me NULL: until the socket ends), the deadline passes, or the socket fails. */
static void lead(struct rpc_conn *c, struct rpc_pending *me, int64_t deadline)
{
	int fd = c->fd;
	uint64_t gen = c->gen;
	int rc = 0;

	while (!me || (me->state == P_SENT && me->sent_gen == gen)) {
		pthread_mutex_unlock(&c->lock);
		rc = rx_wait(&c->rx, deadline);
		if (rc > 0)
			rc = read_one_reply(c);
		else if (rc == 0 && !me)
			rc = -ETIMEDOUT; /* a hung-up socket that did not end: give it up */
		pthread_mutex_lock(&c->lock);
		if (rc != 0 || net_now_ms() >= deadline)
			break;
	}
	if (rc < 0) {
		pthread_mutex_unlock(&c->lock);
		socket_failed(c, fd, gen);
		pthread_mutex_lock(&c->lock);
	}
	c->reader_busy = 0;
	wake_next_reader(c);
	pthread_cond_broadcast(&c->state_cond); /* rpc_conn_destroy may wait for us */
}

/* Whether the idle socket's server has closed it (restarted, or dropped us). Called with
 * c->lock held, c->fd valid and no reader. */
static int peer_hung_up(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLRDHUP};

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Makes sure a socket is up. Called with c->lock held; may drop and retake it.
 * Returns 0 when c->fd is valid, or a negative error. */
static int ensure_connected(struct rpc_conn *c, int64_t deadline, int retry)
{
	while (c->fd < 0) {
		char sname[NACRE_NAME_MAX + 1] = "";
		int fd;

		if (c->shutting_down)
			return -ESHUTDOWN;
		if (net_now_ms() >= deadline)
			return c->last_err ? c->last_err : -ETIMEDOUT;
		if (c->connecting) {
			struct timespec ts;
			int64_t until = deadline;
			clock_gettime(CLOCK_REALTIME, &ts);
			until -= net_now_ms();
			ts.tv_sec += until / 1000;
			ts.tv_nsec += (until % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&c->state_cond, &c->lock, &ts);
			continue;
		}
		c->connecting = 1;
		pthread_mutex_unlock(&c->lock);
		fd = dial(c, deadline, sname, sizeof(sname));
		pthread_mutex_lock(&c->lock);
		c->connecting = 0;
		pthread_cond_broadcast(&c->state_cond);
		if (fd < 0) {
			if (c->last_err != fd)
				LOG_DEBUG(SUBSYS, "cannot connect to %s: %s", c->addr,
					 nacre_strerror(fd));
			c->last_err = fd;
			/* Authentication and fsname errors will not heal by waiting. */
			if (!retry || fd == -NACRE_EAUTH || fd == -NACRE_EFSNAME ||
			    fd == -NACRE_EPROTO_VERSION)
				return fd;
			pthread_mutex_unlock(&c->lock);
			int64_t left = deadline - net_now_ms();
			usleep((useconds_t)(left < RECONNECT_PAUSE_MS ? (left > 0 ? left : 0)
								      : RECONNECT_PAUSE_MS) *
			       1000);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		c->gen++;
		c->rx.fd = fd;
		c->rx.off = c->rx.len = 0;
		c->fd = fd;
		c->last_err = 0;
		str_copy(c->server_name, sname, sizeof(c->server_name));
		LOG_DEBUG(SUBSYS, "connected to %s (%s)", c->addr, sname);
	}
	return 0;
}

/* Sends p on the current socket. Called with c->lock held (dropped while writing). */
static int send_pending(struct rpc_conn *c, struct rpc_pending *p)
{
	int fd, rc;
	uint64_t gen;

	if (c->fd >= 0 && !c->reader_busy && peer_hung_up(c->fd)) {
		/* take what the server sent before it went, then let the socket fail */
		c->reader_busy = 1;
		lead(c, NULL, net_now_ms() + c->timeout_ms);
	}
	rc = ensure_connected(c, p->deadline_ms, 1);
	if (rc < 0)
		return rc;
	fd = c->fd;
	gen = c->gen;
	p->state = P_SENT;
	p->sent_gen = gen;
	pthread_mutex_unlock(&c->lock);

	pthread_mutex_lock(&c->send_lock);
	pthread_mutex_lock(&c->lock);
	/* The socket may have died while we waited for send_lock. */
	if (c->fd != fd || c->gen != gen) {
		if (p->state == P_SENT && p->sent_gen == gen)
			p->state = P_UNSENT;
		pthread_mutex_unlock(&c->send_lock);
		return 0; /* the waiter resends */
	}
	pthread_mutex_unlock(&c->lock);
	rc = send_frame(fd, p->args.opcode, p->xid, p->body_copy, p->args.body_len,
			p->args.bulk, p->args.bulk_iovcnt);
	if (rc < 0)
		shutdown(fd, SHUT_RDWR); /* the reader notices and requeues */
	pthread_mutex_unlock(&c->send_lock);
	pthread_mutex_lock(&c->lock);
	return rc == -E2BIG || rc == -EINVAL ? rc : 0;
}

int rpc_conn_create(const struct rpc_conn_conf *conf, struct rpc_conn **out)
{
	struct rpc_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	if (str_copy(c->addr, conf->addr, sizeof(c->addr)) >= sizeof(c->addr)) {
		free(c);
		return -EINVAL;
	}
	str_copy(c->fsname, conf->fsname ? conf->fsname : "", sizeof(c->fsname));
	str_copy(c->name, conf->name ? conf->name : "client", sizeof(c->name));
	if (conf->key)
		c->key = *conf->key;
	c->timeout_ms = conf->timeout_ms > 0 ? conf->timeout_ms : 30000;
	c->fd = -1;
	c->next_xid = 16; /* 1 and 2 are the handshake's */
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_cond_init(&c->state_cond, NULL);
	*out = c;
	return 0;
}

int rpc_conn_connect(struct rpc_conn *c, int timeout_ms, char *err, size_t err_len)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	c->last_err = 0;
	/* An explicit connect reports the first failure at once (a mount should not hang on a
	 * refused connection); calls keep retrying until their deadline. */
	rc = ensure_connected(c, net_now_ms() + (timeout_ms > 0 ? timeout_ms : c->timeout_ms), 0);
	pthread_mutex_unlock(&c->lock);
	if (rc < 0)
		describe(err, err_len, c, rc);
	return rc;
}

void rpc_conn_destroy(struct rpc_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->shutting_down = 1;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	while (c->reader_busy || c->connecting)
		pthread_cond_wait(&c->state_cond, &c->lock);
	if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->send_lock);
	pthread_cond_destroy(&c->state_cond);
	free(c);
}

const char *rpc_conn_addr(const struct rpc_conn *c)
{
	return c->addr;
}

const char *rpc_conn_server_name(const struct rpc_conn *c)
{
	return c->server_name;
}

int rpc_start(struct rpc_conn *c, const struct rpc_call_args *a, struct rpc_pending **out)
{
	struct rpc_pending *p;
	int rc;

	if (a->body_len > WIRE_BODY_MAX || a->bulk_iovcnt > 64)
		return -E2BIG;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->conn = c;
	p->args = *a;
	p->body_copy = malloc(a->body_len + 1);
	if (!p->body_copy) {
		free(p);
		return -ENOMEM;
	}
	if (a->body_len)
		memcpy(p->body_copy, a->body, a->body_len);
	pthread_cond_init(&p->cond, NULL);
	p->deadline_ms = net_now_ms() + (a->timeout_ms > 0 ? a->timeout_ms : c->timeout_ms);
	p->start_us = net_now_us();

	pthread_mutex_lock(&c->lock);
	p->xid = c->next_xid++;
	p->state = P_UNSENT;
	table_add(c, p);
	rc = send_pending(c, p);
	if (rc < 0 && p->state != P_DONE)
		pending_finish(p, rc, NULL);
	if (p->state == P_DONE)
		table_del(c, p);
	pthread_mutex_unlock(&c->lock);
	*out = p;
	return 0;
}

/* Per-opcode client latency histograms, created on first use; pointers published
 * atomically (metrics are shared by name, so a lost race only frees nothing). */
static struct metric *client_latency(uint16_t opcode)
{
	static struct metric *table[WIRE_OP_MAX_];
	struct metric *m;
	char labels[64];

	if (opcode >= WIRE_OP_MAX_)
		return NULL;
	m = __atomic_load_n(&table[opcode], __ATOMIC_ACQUIRE);
	if (m)
		return m;
	snprintf(labels, sizeof(labels), "op=\"%s\"", wire_opcode_name(opcode));
	m = metrics_histogram("nacre_rpc_client_latency_seconds", labels,
			      "Time from sending a request to its reply (or failure), by operation");
	__atomic_store_n(&table[opcode], m, __ATOMIC_RELEASE);
	return m;
}

int rpc_wait(struct rpc_pending *p, struct rpc_msg **reply)
{
	struct rpc_conn *c = p->conn;
	int status;

	*reply = NULL;
	pthread_mutex_lock(&c->lock);
	while (p->state != P_DONE) {
		struct timespec ts;
		int64_t left = p->deadline_ms - net_now_ms();

		if (left <= 0 && p->receiving) {
			/* bulk is landing in the caller's buffer: wait for the reader */
			pthread_cond_wait(&p->cond, &c->lock);
			continue;
		}
		if (left <= 0) {
			pending_finish(p, c->last_err && c->fd < 0 ? c->last_err : -ETIMEDOUT,
				       NULL);
			table_del(c, p);
			break;
		}
		if (p->state == P_UNSENT) {
			int rc = send_pending(c, p);
			if (rc < 0 && p->state != P_DONE) {
				pending_finish(p, rc, NULL);
				table_del(c, p);
			}
			continue;
		}
		if (!c->reader_busy && c->fd >= 0 && p->sent_gen == c->gen) {
			c->reader_busy = 1;
			lead(c, p, p->deadline_ms);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (left % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		waiter_add(c, p);
		pthread_cond_timedwait(&p->cond, &c->lock, &ts);
		waiter_del(c, p);
	}
	table_del(c, p);
	pthread_mutex_unlock(&c->lock);
	status = p->status;
	metrics_observe(client_latency(p->args.opcode), (double)(net_now_us() - p->start_us) / 1e6);
	if (status == -ETIMEDOUT)
		LOG_DEBUG(SUBSYS, "%s to %s timed out", wire_opcode_name(p->args.opcode), c->addr);
	*reply = p->reply;
	pthread_cond_destroy(&p->cond);
	free(p->body_copy);
	free(p);
	return status;
}

int rpc_call(struct rpc_conn *c, const struct rpc_call_args *a, struct rpc_msg **reply)
{
	struct rpc_pending *p;
	int rc = rpc_start(c, a, &p);

	if (rc < 0) {
		*reply = NULL;
		return rc;
	}
	return rpc_wait(p, reply);
}
