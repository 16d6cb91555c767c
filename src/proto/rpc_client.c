/* rpc_client.c - the client side of the transport: one connection to one server, shared by
 * many threads, requests pipelined and replies matched by xid (see rpc.h).
 *
 * Locking: c->lock protects the connection state (fd, gen, connecting, reader_busy), the
 * pending table, the waiter list, the open-xid list, the retained list and every pending's
 * state. c->send_lock serializes writes to the socket so frames do not interleave; it is
 * taken before c->lock is released-and-retaken, never while waiting. Lock order: send_lock,
 * then lock.
 *
 * Replies are read by the callers themselves (leader/follower): of the threads waiting in
 * rpc_wait, one at a time is the reader. It reads every reply that arrives, hands each to its
 * waiter, and gives the role to the next waiter once its own reply is in. A reply thus wakes
 * only the thread that waits for it, instead of a receiver thread and then the caller: on a
 * machine where a task switch is expensive that is most of the cost of a small call. With
 * nobody waiting nobody reads, so before sending on an idle socket the sender checks that the
 * server has not hung up (a restarted server) and drains what is left on it first. While
 * calls wait and the server is silent, the reader pings it, so a hung server is noticed
 * (and logged) within UNRESPONSIVE_MS.
 *
 * When the socket fails, the reader marks every request sent on it: on a session
 * (client_id set) every request goes back to UNSENT, to be resent after a reconnect with
 * WIRE_ENV_RESEND (the server's reply cache makes that safe); without a session only
 * idempotent ones do, the others fail with -ECONNRESET because the server may have executed
 * them. A session also keeps each answered request whose change the server has not yet put
 * on disk (reply transno above last_committed) in c->retained, and replays them if the
 * server restarts, before any other request may use the new socket: rpc_recovery.c.
 * Frames go out and whole replies come in through rpc_client_frame.c; struct rpc_conn is in
 * rpc_client_int.h.
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
#include "proto/rpc_client_int.h"

#define SUBSYS "rpc"
#define PING_AFTER_MS 1000       /* silence while calls wait before the reader pings */
#define UNRESPONSIVE_MS 5000     /* silence after which the server is reported as hung */
#define BACKOFF_MIN_MS 100       /* pause between connection attempts, doubling... */
#define BACKOFF_MAX_MS 2000      /* ...up to this */
#define CONNECT_TIMEOUT_MAX_MS 10000
#define LAST_TRY_MS 1000         /* the connection attempt of a call past its deadline */

static struct metric *resends_metric(void)
{
	static struct metric *m;

	return metrics_counter_once(&m, "nacre_rpc_client_resends_total",
				    "Requests sent again after a lost connection or reply");
}

/* ---- pending table ---- */

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

/* Whether p may go out again after its socket broke. */
static int resendable(const struct rpc_conn *c, const struct rpc_pending *p)
{
	return c->client_id != 0 || (p->args.flags & RPC_IDEMPOTENT);
}

/* The time at which p gives up. A session call without a limit of its own waits for a
 * server that does not answer for recovery_ms, counted from the later of its start and the
 * last time the server was heard from. Once a call has waited that long and failed, the
 * server counts as gone: the next calls fail after one connection attempt (so a system call
 * that makes several calls in a row fails after one recovery timeout, not several), until
 * it is heard from again. Called with c->lock held. */
static int64_t call_deadline(const struct rpc_conn *c, const struct rpc_pending *p)
{
	int64_t from = p->start_ms;

	if (p->args.timeout_ms > 0)
		return p->start_ms + p->args.timeout_ms;
	if (!c->client_id)
		return p->start_ms + c->timeout_ms;
	if (c->gave_up)
		return p->start_ms;
	if (c->heard_ms > from)
		from = c->heard_ms;
	return from + c->recovery_ms;
}

/* A session request that has waited timeout_ms for its reply while the server answered
 * others is lost on this socket (a server bug or a fault point): it is worth a new socket
 * and a resend. Called with c->lock held. */
static int reply_overdue(const struct rpc_conn *c, const struct rpc_pending *p, int64_t now)
{
	return c->client_id && p->state == P_SENT && p->sent_gen == c->gen &&
	       !(p->args.flags & RPC_NO_TIMEOUT) && !p->args.timeout_ms &&
	       now - p->sent_ms >= c->timeout_ms && c->heard_ms > p->sent_ms;
}

/* A session call without a limit of its own failed because the server stayed away for its
 * whole recovery time: the next ones should not wait again (see call_deadline). Called with
 * c->lock held. */
static void note_given_up(struct rpc_conn *c, const struct rpc_pending *p)
{
	if (c->client_id && !p->args.timeout_ms && c->fd < 0 && !c->shutting_down)
		c->gave_up = 1;
}

/* ---- the handshake ---- */

/* Reads one reply frame of the handshake (before the socket is shared). */
static int handshake_reply(int fd, uint64_t xid, int64_t deadline, uint8_t *body, size_t cap,
			   uint32_t *body_len)
{
	struct wire_hdr h;
	uint8_t *b;
	int rc = rpc_read_frame_sync(fd, NULL, deadline, &h, &b);

	if (rc < 0)
		return rc;
	if (h.xid != xid || h.body_len > cap || h.bulk_len) {
		free(b);
		return -EPROTO;
	}
	memcpy(body, b, h.body_len);
	free(b);
	*body_len = h.body_len;
	return h.status;
}

static void describe(char *err, size_t err_len, const char *addr, const struct rpc_conn *c,
		     int rc)
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
	if (rc == -NACRE_ESEC && c->refusal[0])
		snprintf(err, err_len, "%s: %s", addr, c->refusal);
	else if (rc == -NACRE_EAUTH && c->key.role != KEY_ROLE_SERVER)
		snprintf(err, err_len, "%s key %s (generation %llu) rejected by %s: check that "
			 "it was issued for this file system (nacre key issue)",
			 key_role_name(c->key.role), c->key.name, (unsigned long long)c->key.gen,
			 addr);
	else if (rc == -NACRE_EAUTH)
		snprintf(err, err_len, "cluster key rejected by %s%s", addr, hint);
	else if (rc == -EKEYREVOKED)
		snprintf(err, err_len, "%s refused key %s: key %s was revoked (nacre key revoke); "
			 "ask for a new one (nacre key issue)", addr, c->key.name, c->key.name);
	else if (rc == -EKEYEXPIRED)
		snprintf(err, err_len, "%s refused key %s: generation %llu was replaced by a newer "
			 "one (nacre key issue); use the new key file", addr, c->key.name,
			 (unsigned long long)c->key.gen);
	else if (rc == -EKEYREJECTED)
		snprintf(err, err_len, "%s refused key %s: it does not know that key (not issued "
			 "by its MDS, or of another role)", addr, c->key.name);
	else if (rc == -NACRE_EFSNAME)
		snprintf(err, err_len, "%s does not serve file system '%s'%s", addr, c->fsname,
			 hint);
	else
		snprintf(err, err_len, "cannot reach %s: %s%s", addr, nacre_strerror(rc), hint);
}

/* The refusal in a CONNECT reply's body, as a sentence in c->refusal. */
static void note_refusal(struct rpc_conn *c, const uint8_t *body, uint32_t len)
{
	struct wire_sec_refusal r;
	struct wire_cursor cur;

	wire_cursor_init_read(&cur, body, len);
	wire_sec_refusal_decode(&cur, &r);
	if (!wire_cursor_ok(&cur))
		snprintf(c->refusal, sizeof(c->refusal),
			 "server refused sec=%s for this client", sec_flavour_name(c->sec));
	else
		snprintf(c->refusal, sizeof(c->refusal),
			 "server requires sec=%s or better for this client (%s)",
			 sec_flavour_name(r.min), r.rule[0] ? r.rule : "its rule");
}

/* The flavour the server chose in rep, checked against what we asked for. Returns it, or
 * -NACRE_ESEC with c->refusal set. */
static int chosen_sec(struct rpc_conn *c, const struct wire_connect_rep *rep)
{
	if (!(rep->features & WIRE_FEAT_SEC)) {
		if (c->sec == WIRE_SEC_NULL)
			return WIRE_SEC_NULL;
		snprintf(c->refusal, sizeof(c->refusal),
			 "server has no wire security (an older version) and cannot give "
			 "sec=%s: upgrade it, or mount with sec=null",
			 sec_flavour_name(c->sec));
		return -NACRE_ESEC;
	}
	if (rep->sec < c->sec || (rep->sec > c->sec && c->sec_exact)) {
		/* not what we asked for: a relay changed the request, or a broken server */
		snprintf(c->refusal, sizeof(c->refusal),
			 "server answered sec=%s to a request for sec=%s: the handshake was "
			 "altered on the way, or the server is broken",
			 sec_flavour_name(rep->sec), sec_flavour_name(c->sec));
		return -NACRE_ESEC;
	}
	return rep->sec;
}

/* Opens a socket to addr and runs CONNECT + AUTH by deadline. Returns the fd (and the
 * server's answer in *rep, the session that seals the socket's frames in *sess, NULL for
 * the null flavour) or a negative error. */
static int dial(struct rpc_conn *c, const char *addr, uint64_t instance, int64_t deadline,
		struct wire_connect_rep *rep, struct sec_session **sess)
{
	struct wire_connect_req req = {.version_min = 1, .version_max = WIRE_VERSION};
	struct wire_auth_req auth;
	struct wire_cursor cur;
	uint8_t buf[1024], expect[WIRE_PROOF_LEN];
	char label[96];
	uint32_t len = 0;
	int64_t left = deadline - net_now_ms();
	int fd, rc, sec, asked;

	if (left <= 0)
		return -ETIMEDOUT;
	fd = net_connect(addr, (int)left);
	if (fd < 0)
		return fd;
	*sess = NULL;
	req.features = WIRE_FEATURES_SUPPORTED & ~WIRE_FEAT_KEY_ID;
	if (c->key.present && c->key.role != KEY_ROLE_SERVER) {
		/* which key we prove: the server derives it from the cluster key */
		req.features |= WIRE_FEAT_KEY_ID;
		req.key.role = (uint8_t)c->key.role;
		str_copy(req.key.name, c->key.name, sizeof(req.key.name));
		req.key.gen = c->key.gen;
	}
	req.client_id = c->client_id;
	req.instance = instance;
	req.sec = (uint8_t)c->sec;
	req.sec_flags = c->sec_exact ? 0 : WIRE_SEC_RAISE;
	asked = req.sec + 16 * req.sec_flags;
	rc = key_random(req.nonce, sizeof(req.nonce));
	if (rc < 0)
		goto out_close;
	str_copy(req.fsname, c->fsname, sizeof(req.fsname));
	str_copy(req.name, c->name, sizeof(req.name));
	wire_cursor_init_write(&cur, buf, sizeof(buf));
	wire_connect_req_encode(&cur, &req);
	rc = rpc_send_frame(fd, NULL, WIRE_OP_CONNECT, 1, NULL, buf, (uint32_t)cur.pos, NULL, 0);
	if (rc < 0)
		goto out_close;
	rc = handshake_reply(fd, 1, deadline, buf, sizeof(buf), &len);
	if (rc == -NACRE_ESEC)
		note_refusal(c, buf, len);
	if (rc < 0)
		goto out_close;
	wire_cursor_init_read(&cur, buf, len);
	wire_connect_rep_decode(&cur, rep);
	if (!wire_cursor_ok(&cur) || rep->version < 1 || rep->version > WIRE_VERSION) {
		rc = -EPROTO;
		goto out_close;
	}
	sec = chosen_sec(c, rep);
	if (sec < 0) {
		rc = sec;
		goto out_close;
	}
	/* With WIRE_FEAT_SEC both proofs bind the features and flavours as each side saw
	 * them: a relay that changed any of them fails here or at AUTH. */
	if (rep->features & WIRE_FEAT_SEC)
		sec_proof_label(label, sizeof(label), "nacre-server", req.features, rep->features,
				asked, sec);
	key_proof(&c->key, rep->features & WIRE_FEAT_SEC ? label : "nacre-server", req.nonce,
		  rep->nonce, WIRE_NONCE_LEN, expect);
	if (!key_proof_eq(expect, rep->proof, WIRE_PROOF_LEN)) {
		rc = -NACRE_EAUTH; /* the server does not hold our key */
		goto out_close;
	}
	if (rep->features & WIRE_FEAT_SEC)
		sec_proof_label(label, sizeof(label), "nacre-client", req.features, rep->features,
				asked, sec);
	key_proof(&c->key, rep->features & WIRE_FEAT_SEC ? label : "nacre-client", rep->nonce,
		  req.nonce, WIRE_NONCE_LEN, auth.proof);
	wire_cursor_init_write(&cur, buf, sizeof(buf));
	wire_auth_req_encode(&cur, &auth);
	rc = rpc_send_frame(fd, NULL, WIRE_OP_AUTH, 2, NULL, buf, (uint32_t)cur.pos, NULL, 0);
	if (rc < 0)
		goto out_close;
	rc = handshake_reply(fd, 2, deadline, buf, sizeof(buf), &len);
	if (rc == -NACRE_ESEC)
		note_refusal(c, buf, len);
	if (rc < 0)
		goto out_close;
	rep->sec = (uint8_t)sec;
	if (sec > WIRE_SEC_NULL) {
		rc = sec_session_open(&c->key, req.nonce, rep->nonce, sec, 0, sess);
		if (rc < 0)
			goto out_close;
	}
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
static void socket_failed(struct rpc_conn *c, int fd, uint64_t gen, struct sec_session *sess)
{
	int i;

	pthread_mutex_lock(&c->lock);
	if (c->sess == sess)
		c->sess = NULL; /* freed below, with the socket */
	if (c->gen == gen && c->fd == fd) {
		c->fd = -1;
		c->lost_ms = net_now_ms();
		LOG_DEBUG(SUBSYS, "connection to %s lost", c->addrs[c->cur_addr]);
	}
	for (i = 0; i < PENDING_BUCKETS; i++) {
		struct rpc_pending *p;
		for (p = c->table[i]; p; p = p->hnext) {
			if (p->state != P_SENT || p->sent_gen != gen)
				continue;
			if (resendable(c, p)) {
				p->state = P_UNSENT;
				p->resend = 1;
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
	sec_session_destroy(sess);
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

/* Reads n bulk bytes of a sealed frame into dst, opening them a piece at a time while they
 * are in the CPU cache. */
#define RX_OPEN_CHUNK (256u * 1024u)
static int rx_read_open(struct rx_reader *rx, struct sec_session *sess, uint8_t *dst, size_t n)
{
	while (n > 0) {
		size_t take = n < RX_OPEN_CHUNK ? n : RX_OPEN_CHUNK;
		int rc = rx_read(rx, dst, take);

		if (rc < 0)
			return rc;
		if (sec_open_update(sess, dst, take) < 0)
			return -EIO;
		dst += take;
		n -= take;
	}
	return 0;
}

/* Reads one reply and hands it to its pending; sess (NULL: null flavour) opens sealed
 * frames. 0, or a negative errno when the socket is unusable (closed, stalled, sending
 * garbage, or a frame that fails its tag). */
static int read_one_reply(struct rpc_conn *c, int env, struct sec_session *sess)
{
	struct rx_reader *rx = &c->rx;
	uint8_t hb[WIRE_HDR_LEN], tag[WIRE_TAG_LEN];
	struct wire_hdr h;
	struct rpc_pending *p;
	struct rpc_msg *m;
	uint8_t *bulk_dst = NULL;
	int wanted, rc;

	rc = rx_read(rx, hb, sizeof(hb));
	if (rc < 0)
		return rc;
	rc = wire_hdr_decode(hb, &h);
	if (rc < 0 || !(h.flags & WIRE_FLAG_REPLY)) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "bad frame from %s; reconnecting",
				c->addrs[c->cur_addr]);
		return -EPROTO;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->hdr = h;
	m->body_len = h.body_len;
	m->body = malloc(h.body_len + 1);
	rc = m->body ? rx_read(rx, m->body, h.body_len) : -ENOMEM;
	if (rc == 0 && sess) {
		/* under privacy the body is plaintext after this, trusted only after the tag */
		if (sec_open_begin(sess, hb) < 0 || sec_open_update(sess, m->body, h.body_len) < 0)
			rc = -EIO;
	}
	if (rc == 0 && env)
		rc = rpc_strip_rep_env(m);
	if (rc < 0) {
		rpc_msg_free(m);
		return rc;
	}
	/* Where to put the bulk: straight into the caller's buffer if it fits. */
	pthread_mutex_lock(&c->lock);
	rpc_heard(c);
	p = table_find(c, h.xid);
	wanted = p && p->state == P_SENT;
	if (wanted && p->args.reply_bulk && h.bulk_len <= p->args.reply_bulk_cap) {
		bulk_dst = p->args.reply_bulk;
		p->receiving = 1; /* holds the waiter (and its buffer) until we are done */
	}
	pthread_mutex_unlock(&c->lock);
	m->bulk_len = h.bulk_len;
	if (h.bulk_len && !wanted) {
		/* A reply nobody waits for (late, or a hostile server's) is not worth a
		 * buffer of its bulk's size: read through a small one and drop. */
		uint8_t skip[4096];
		for (uint32_t left = h.bulk_len; rc == 0 && left > 0;) {
			uint32_t n = left < sizeof(skip) ? left : (uint32_t)sizeof(skip);
			rc = rx_read(rx, skip, n);
			left -= n;
		}
		m->bulk_len = 0;
	} else if (h.bulk_len) {
		if (bulk_dst) {
			m->bulk = bulk_dst;
		} else {
			m->bulk = malloc(h.bulk_len);
			m->bulk_owned = 1;
		}
		if (!m->bulk)
			rc = -ENOMEM;
		else if (sess)
			rc = rx_read_open(rx, sess, m->bulk, h.bulk_len);
		else
			rc = rx_read(rx, m->bulk, h.bulk_len);
		if (rc == 0 && !sess && crc32c(0, m->bulk, h.bulk_len) != h.bulk_crc) {
			LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
					"bulk checksum mismatch from %s; reconnecting",
					c->addrs[c->cur_addr]);
			rc = -EPROTO;
		}
	}
	if (rc == 0 && sess) {
		rc = rx_read(rx, tag, sizeof(tag));
		if (rc == 0 && sec_open_final(sess, tag) < 0) {
			LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
					"reply %s (xid %llu) from %s failed sec=%s verification "
					"(altered, injected, replayed or reordered); reconnecting",
					wire_opcode_name(h.opcode), (unsigned long long)h.xid,
					c->addrs[c->cur_addr],
					sec_flavour_name(sec_session_flavour(sess)));
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
	uint64_t lc = m->env.last_committed;
	pthread_mutex_lock(&c->lock);
	p = table_find(c, h.xid);
	if (p && p->state == P_SENT && (wanted || !h.bulk_len)) {
		table_del(c, p);
		if (c->client_id && h.status >= 0 && m->env.transno > c->last_committed &&
		    m->env.transno > lc && !p->args.bulk_iovcnt)
			rpc_retain(c, p, m);
		pending_finish(p, h.status, m);
		m = NULL;
	}
	if (env)
		rpc_committed_upto(c, lc);
	pthread_mutex_unlock(&c->lock);
	rpc_msg_free(m); /* a reply nobody waits for any more (or a ping's) */
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

/* Pings a silent server while calls wait for it, and reports one that stays silent. Called
 * by the reader with c->lock held; may drop and retake it. */
static void check_silence(struct rpc_conn *c, int fd, uint64_t gen, int env)
{
	int64_t now = net_now_ms();

	if (now - c->heard_ms >= UNRESPONSIVE_MS && !c->unresponsive) {
		c->unresponsive = 1;
		LOG_WARN(SUBSYS, "%s (%s) has not answered for %d s; calls wait for it (up to "
				 "%d s)",
			 c->addrs[c->cur_addr], c->server_name, UNRESPONSIVE_MS / 1000,
			 c->recovery_ms / 1000);
	}
	if (now - c->heard_ms < PING_AFTER_MS || now - c->ping_ms < PING_AFTER_MS)
		return;
	c->ping_ms = now;
	struct wire_req_env e = {.ack_xid = rpc_ack_xid(c)};
	pthread_mutex_unlock(&c->lock);
	/* A sender holding send_lock is talking to the server anyway. */
	if (pthread_mutex_trylock(&c->send_lock) == 0) {
		pthread_mutex_lock(&c->lock);
		int same = c->fd == fd && c->gen == gen;
		struct sec_session *sess = c->sess;
		pthread_mutex_unlock(&c->lock);
		if (same)
			rpc_send_frame(fd, sess, WIRE_OP_PING, PING_XID, env ? &e : NULL, NULL, 0,
				       NULL, 0);
		pthread_mutex_unlock(&c->send_lock);
	}
	pthread_mutex_lock(&c->lock);
}

/* The reader role. Called with c->lock held and c->reader_busy just set by the caller;
 * returns with the lock held and the role given up. Reads replies, anyone's, until me is no
 * longer SENT (me NULL: until the socket ends), me's deadline passes or its reply is
 * overdue, or the socket fails. */
static void lead(struct rpc_conn *c, struct rpc_pending *me)
{
	int fd = c->fd, env = c->env;
	struct sec_session *sess = c->sess;
	uint64_t gen = c->gen;
	int rc = 0;

	while (!me || (me->state == P_SENT && me->sent_gen == gen)) {
		int64_t now = net_now_ms();
		int64_t until = me ? call_deadline(c, me) : now + c->timeout_ms;

		if (me && (now >= until || reply_overdue(c, me, now)))
			break;
		if (until > now + PING_AFTER_MS)
			until = now + PING_AFTER_MS;
		pthread_mutex_unlock(&c->lock);
		rc = rx_wait(&c->rx, until);
		if (rc > 0)
			rc = read_one_reply(c, env, sess);
		else if (rc == 0 && !me)
			rc = -ETIMEDOUT; /* a hung-up socket that did not end: give it up */
		pthread_mutex_lock(&c->lock);
		if (rc != 0)
			break;
		if (me && me->state == P_SENT)
			check_silence(c, fd, gen, env);
	}
	if (rc < 0) {
		pthread_mutex_unlock(&c->lock);
		socket_failed(c, fd, gen, sess);
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

/* Makes sure a socket is up. Called with c->lock held; may drop and retake it. Tries the
 * failover addresses in turn, pausing (backoff) between rounds, until deadline.
 * Returns 0 when c->fd is valid, or a negative error. */
static int ensure_connected(struct rpc_conn *c, int64_t deadline, int retry)
{
	int tried = 0, last_try = 0;

	while (c->fd < 0) {
		struct wire_connect_rep rep;
		if (c->key_dead)
			return c->key_dead;
		char addr[NACRE_ADDR_MAX + 1];
		int64_t now = net_now_ms(), attempt;
		uint64_t instance = c->instance;
		struct sec_session *sess = NULL;
		int fd, env = 0;

		if (c->shutting_down)
			return -ESHUTDOWN;
		if (now >= deadline && (tried || last_try))
			return c->last_err ? c->last_err : -ETIMEDOUT;
		if (now >= deadline) {
			deadline = now + LAST_TRY_MS; /* one quick try: the server may be back */
			last_try = 1;
		}
		if (c->connecting) {
			struct timespec ts;
			int64_t until = deadline - now;
			time_after_ms(&ts, CLOCK_REALTIME, until);
			pthread_cond_timedwait(&c->state_cond, &c->lock, &ts);
			continue;
		}
		c->connecting = 1;
		str_copy(addr, c->addrs[c->cur_addr], sizeof(addr));
		pthread_mutex_unlock(&c->lock);
		attempt = now + c->connect_ms < deadline ? now + c->connect_ms : deadline;
		memset(&rep, 0, sizeof(rep));
		fd = dial(c, addr, instance, attempt, &rep, &sess);
		if (fd >= 0) {
			env = (rep.features & WIRE_FEAT_RECOVERY) != 0;
			if (c->client_id && env && instance && rep.instance != instance &&
			    rpc_run_recovery(c, addr, fd, sess, env, &rep) < 0) {
				close(fd);
				sec_session_destroy(sess);
				sess = NULL;
				fd = -ECONNRESET;
			}
		}
		pthread_mutex_lock(&c->lock);
		c->connecting = 0;
		tried++;
		pthread_cond_broadcast(&c->state_cond);
		if (fd < 0) {
			if (c->last_err != fd)
				LOG_DEBUG(SUBSYS, "cannot connect to %s: %s", addr,
					  nacre_strerror(fd));
			c->last_err = fd;
			if (fd == -NACRE_ESEC)
				LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "%s: %s", addr, c->refusal);
			/* Authentication and fsname errors will not heal by waiting. */
			if (fd == -EKEYREVOKED || fd == -EKEYEXPIRED) {
				LOG_WARN(SUBSYS, "%s refused %s key %s: %s; every call to it fails "
					 "from now on", addr, key_role_name(c->key.role), c->key.name,
					 nacre_strerror(fd));
				c->key_dead = fd;
				return fd;
			}
			/* A key the server does not know (yet: an OSS that has not heard from
			 * the MDS) may heal for calls; a connect reports it at once. */
			if (fd == -NACRE_EAUTH || fd == -NACRE_EFSNAME ||
			    fd == -NACRE_EPROTO_VERSION || fd == -NACRE_ESEC ||
			    (fd == -EKEYREJECTED && !retry))
				return fd;
			c->cur_addr = (c->cur_addr + 1) % c->naddrs;
			if ((!retry || last_try) && tried >= c->naddrs)
				return fd;
			if (c->cur_addr != 0 && tried < c->naddrs)
				continue; /* the next failover address at once */
			int pause = c->backoff_ms;
			c->backoff_ms = pause * 2 < BACKOFF_MAX_MS ? pause * 2 : BACKOFF_MAX_MS;
			pthread_mutex_unlock(&c->lock);
			if (c->still_here && !c->still_here(c->still_here_arg)) {
				LOG_INFO(SUBSYS, "%s: the server is no longer at this address; "
					 "calls go where it went", addr);
				pthread_mutex_lock(&c->lock);
				return -EHOSTUNREACH;
			}
			int64_t left = deadline - net_now_ms();
			if (left > pause)
				left = pause;
			if (left > 0)
				usleep((useconds_t)left * 1000);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		if (c->instance && rep.instance != c->instance)
			LOG_INFO(SUBSYS, "connected to %s (%s), a new instance of the server", addr,
				 rep.server_name);
		c->gen++;
		c->rx.fd = fd;
		c->rx.off = c->rx.len = 0;
		c->fd = fd;
		c->sess = sess;
		c->cur_sec = rep.sec;
		__atomic_store_n(&c->cur_features, rep.features, __ATOMIC_RELEASE);
		c->env = env;
		if (env)
			c->instance = rep.instance;
		c->last_err = 0;
		c->backoff_ms = BACKOFF_MIN_MS;
		rpc_heard(c);
		if (env)
			rpc_committed_upto(c, rep.last_committed);
		str_copy(c->server_name, rep.server_name, sizeof(c->server_name));
		LOG_DEBUG(SUBSYS, "connected to %s (%s), sec=%s", addr, rep.server_name,
			  sec_flavour_name(rep.sec));
	}
	return 0;
}

/* Sends p on the current socket. Called with c->lock held (dropped while writing). */
static int send_pending(struct rpc_conn *c, struct rpc_pending *p)
{
	struct wire_req_env e = {0};
	struct sec_session *sess;
	int fd, rc, env;
	uint64_t gen;

	if (c->fd >= 0 && !c->reader_busy && peer_hung_up(c->fd)) {
		/* take what the server sent before it went, then let the socket fail */
		c->reader_busy = 1;
		lead(c, NULL);
	}
	rc = ensure_connected(c, call_deadline(c, p), 1);
	if (rc < 0)
		return rc;
	fd = c->fd;
	sess = c->sess;
	gen = c->gen;
	env = c->env;
	p->state = P_SENT;
	p->sent_gen = gen;
	p->sent_ms = net_now_ms();
	e.ack_xid = rpc_ack_xid(c);
	if (p->resend) {
		e.flags = WIRE_ENV_RESEND;
		metrics_add(resends_metric(), 1);
	}
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
	rc = rpc_send_frame(fd, sess, p->args.opcode, p->xid, env ? &e : NULL, p->body_copy,
			    p->args.body_len, p->args.bulk, p->args.bulk_iovcnt);
	if (rc < 0)
		shutdown(fd, SHUT_RDWR); /* the reader notices and requeues */
	pthread_mutex_unlock(&c->send_lock);
	pthread_mutex_lock(&c->lock);
	return rc == -E2BIG || rc == -EINVAL ? rc : 0;
}

/* Splits "a:1,b:2" into c->addrs. Returns 0 or -EINVAL. */
static int parse_addrs(struct rpc_conn *c, const char *list)
{
	const char *p = list;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 0 || n > NACRE_ADDR_MAX || c->naddrs == RPC_ADDRS_MAX)
			return -EINVAL;
		memcpy(c->addrs[c->naddrs], p, n);
		c->addrs[c->naddrs++][n] = '\0';
		p += n + (end ? 1 : 0);
		if (end && !*p)
			return -EINVAL;
	}
	return c->naddrs ? 0 : -EINVAL;
}

int rpc_conn_create(const struct rpc_conn_conf *conf, struct rpc_conn **out)
{
	struct rpc_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	if (!conf->addr || parse_addrs(c, conf->addr) < 0) {
		free(c);
		return -EINVAL;
	}
	str_copy(c->addr_list, conf->addr, sizeof(c->addr_list));
	str_copy(c->fsname, conf->fsname ? conf->fsname : "", sizeof(c->fsname));
	str_copy(c->name, conf->name ? conf->name : "client", sizeof(c->name));
	if (conf->key)
		c->key = *conf->key;
	c->timeout_ms = conf->timeout_ms > 0 ? conf->timeout_ms : 30000;
	c->recovery_ms = conf->recovery_timeout_ms > 0 ? conf->recovery_timeout_ms : c->timeout_ms;
	c->connect_ms = conf->connect_timeout_ms > 0 ? conf->connect_timeout_ms
		      : c->timeout_ms < CONNECT_TIMEOUT_MAX_MS ? c->timeout_ms
							      : CONNECT_TIMEOUT_MAX_MS;
	c->client_id = conf->client_id;
	c->sec = conf->sec >= WIRE_SEC_NULL && conf->sec <= WIRE_SEC_MAX_ ? conf->sec
									: WIRE_SEC_PRIVACY;
	c->sec_exact = conf->sec_exact;
	c->recover = conf->recover;
	c->recover_arg = conf->recover_arg;
	c->still_here = conf->still_here;
	c->still_here_arg = conf->still_here_arg;
	c->fd = -1;
	c->next_xid = conf->first_xid > 16 ? conf->first_xid
					   : 16; /* 1 and 2 are the handshake's, 3 the ping's */
	c->backoff_ms = BACKOFF_MIN_MS;
	c->open.next = c->open.prev = &c->open;
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
	/* An explicit connect reports the failure at once, after one try of each address (a
	 * mount should not hang on a refused connection); calls keep retrying. */
	rc = ensure_connected(c, net_now_ms() + (timeout_ms > 0 ? timeout_ms : c->timeout_ms), 0);
	pthread_mutex_unlock(&c->lock);
	if (rc < 0)
		describe(err, err_len, c->addr_list, c, rc);
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
	sec_session_destroy(c->sess);
	while (c->retained)
		rpc_retained_pop(c);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->send_lock);
	pthread_cond_destroy(&c->state_cond);
	free(c);
}

const char *rpc_conn_addr(const struct rpc_conn *c)
{
	/* cur_addr changes only between connection attempts: any value names this server */
	return c->addrs[c->cur_addr];
}

uint64_t rpc_conn_gen(struct rpc_conn *c)
{
	uint64_t gen;

	pthread_mutex_lock(&c->lock);
	gen = c->gen;
	pthread_mutex_unlock(&c->lock);
	return gen;
}

int64_t rpc_conn_lost_before_recovery(struct rpc_conn *c)
{
	int64_t ms;

	pthread_mutex_lock(&c->lock);
	ms = rpc_conn_recovering(c) ? c->lost_ms : 0;
	pthread_mutex_unlock(&c->lock);
	return ms;
}

const char *rpc_conn_server_name(const struct rpc_conn *c)
{
	return c->server_name;
}

int rpc_conn_recovering(struct rpc_conn *c)
{
	return __atomic_load_n(&c->recovering, __ATOMIC_ACQUIRE);
}

void rpc_conn_info(struct rpc_conn *c, struct rpc_conn_info *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->lock);
	out->state = c->key_dead		? RPC_STATE_CLOSED
		     : rpc_conn_recovering(c) ? RPC_STATE_REPLAY
		     : c->fd >= 0		? RPC_STATE_FULL
		     : c->connecting		? RPC_STATE_CONNECTING
		     : c->gen == 0		? RPC_STATE_NEW
						: RPC_STATE_DISCONN;
	str_copy(out->current, c->addrs[c->cur_addr < c->naddrs ? c->cur_addr : 0],
		 sizeof(out->current));
	str_copy(out->addrs, c->addr_list, sizeof(out->addrs));
	str_copy(out->server, c->server_name, sizeof(out->server));
	out->features = c->cur_features;
	out->gen = c->gen;
	out->last_committed = c->last_committed;
	out->sec = c->cur_sec;
	out->heard_ms = c->heard_ms;
	pthread_mutex_unlock(&c->lock);
}

uint64_t rpc_conn_features(struct rpc_conn *c)
{
	return __atomic_load_n(&c->cur_features, __ATOMIC_ACQUIRE);
}

int rpc_conn_sec(struct rpc_conn *c)
{
	int sec;

	pthread_mutex_lock(&c->lock);
	sec = c->cur_sec;
	pthread_mutex_unlock(&c->lock);
	return sec;
}

int rpc_conn_retained(struct rpc_conn *c)
{
	int n;

	pthread_mutex_lock(&c->lock);
	n = c->nretained;
	pthread_mutex_unlock(&c->lock);
	return n;
}

int rpc_start(struct rpc_conn *c, const struct rpc_call_args *a, struct rpc_pending **out)
{
	struct rpc_pending *p;
	int rc;

	if (a->body_len > wire_op_body_max(a->opcode) || a->bulk_iovcnt > 64)
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
	p->start_ms = net_now_ms();
	p->start_us = net_now_us();

	pthread_mutex_lock(&c->lock);
	p->xid = c->next_xid++;
	p->state = P_UNSENT;
	table_add(c, p);
	rpc_open_link_tail(c, &p->open, p->xid);
	rc = send_pending(c, p);
	if (rc < 0 && p->state != P_DONE) {
		pending_finish(p, rc, NULL);
		note_given_up(c, p);
	}
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

/* The reply of p is overdue on a live server: drop the socket, so that p and everything
 * else sent on it go out again on a new one. Called with c->lock held. */
static void abandon_socket(struct rpc_conn *c, struct rpc_pending *p)
{
	LOG_WARN(SUBSYS, "no reply to %s (xid %llu) from %s in %d s although it answers; "
			 "resending on a new connection",
		 wire_opcode_name(p->args.opcode), (unsigned long long)p->xid,
		 c->addrs[c->cur_addr], c->timeout_ms / 1000);
	p->sent_ms = net_now_ms(); /* once per timeout */
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR); /* the reader's next read fails: socket_failed */
}

int rpc_wait(struct rpc_pending *p, struct rpc_msg **reply)
{
	struct rpc_conn *c = p->conn;
	int status;

	*reply = NULL;
	pthread_mutex_lock(&c->lock);
	while (p->state != P_DONE) {
		struct timespec ts;
		int64_t now = net_now_ms();
		int64_t left = call_deadline(c, p) - now;

		if (left <= 0 && p->receiving) {
			/* bulk is landing in the caller's buffer: wait for the reader */
			pthread_cond_wait(&p->cond, &c->lock);
			continue;
		}
		if (left <= 0) {
			pending_finish(p, c->last_err && c->fd < 0 ? c->last_err : -ETIMEDOUT,
				       NULL);
			table_del(c, p);
			note_given_up(c, p);
			break;
		}
		if (p->state == P_UNSENT) {
			int rc = send_pending(c, p);
			if (rc < 0 && p->state != P_DONE) {
				pending_finish(p, rc, NULL);
				table_del(c, p);
				note_given_up(c, p);
			}
			continue;
		}
		if (reply_overdue(c, p, now)) {
			abandon_socket(c, p);
			continue;
		}
		if (!c->reader_busy && c->fd >= 0 && p->sent_gen == c->gen) {
			c->reader_busy = 1;
			lead(c, p);
			continue;
		}
		if (left > PING_AFTER_MS)
			left = PING_AFTER_MS; /* look at the overdue check now and then */
		time_after_ms(&ts, CLOCK_REALTIME, left);
		waiter_add(c, p);
		pthread_cond_timedwait(&p->cond, &c->lock, &ts);
		waiter_del(c, p);
	}
	table_del(c, p);
	rpc_open_unlink(&p->open);
	pthread_mutex_unlock(&c->lock);
	status = p->status;
	metrics_observe(client_latency(p->args.opcode), (double)(net_now_us() - p->start_us) / 1e6);
	if (status == -ETIMEDOUT)
		LOG_DEBUG(SUBSYS, "%s to %s timed out", wire_opcode_name(p->args.opcode),
			  rpc_conn_addr(c));
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
