/* rpc_server_loop.c - the server's event thread: one epoll loop for all sockets
 * (rpc_server_run). It accepts connections within the limits of conn_limits.h, reads frames
 * (header, then body and bulk into a payload buffer), answers CONNECT and AUTH itself,
 * hands requests to the workers (or runs the cheap ones inline), pauses reading under
 * backpressure, and writes the replies the workers send back through the eventfd without
 * blocking. Everything here runs on the event thread; the threading rules are in
 * rpc_server.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "common/crc32c.h"
#include "common/fault.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "proto/rpc_server_int.h"

#define SUBSYS "rpc"
#define CONN_MAX_INFLIGHT 32 /* per connection; reading pauses beyond it (backpressure) */
#define EPOLL_BATCH 64
/* The memory of a queued reply besides its bytes (struct, allocator), counted against the
 * connection's tx bound: a million unread 36-byte replies are more than 36 MB. */
#define TX_FRAME_COST (sizeof(struct tx_frame) + 32)
#define ACCEPT_BATCH 256 /* accepts per wakeup, so a connect flood cannot starve the rest */
/* Largest read() straight into a payload: its CRC is taken right after, while the bytes are
 * still in the CPU cache (a whole 4 MiB bulk is not). */
#define RX_DIRECT_MAX (256u * 1024u)

static void conn_update_events(struct rpc_server *s, struct sconn *c)
{
	struct epoll_event ev = { .data.ptr = c };

	if (c->closing)
		return;
	/* paused: not even EPOLLRDHUP, which level-triggered epoll would report on every
	 * wait while the peer's half-close sits unread */
	ev.events = (c->paused ? 0 : EPOLLIN | EPOLLRDHUP) | (c->want_out ? EPOLLOUT : 0);
	epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Stops reading c for reason bit (PAUSE_*). */
static void conn_pause(struct rpc_server *s, struct sconn *c, int bit)
{
	int was = c->paused;

	c->paused |= bit;
	if (!was)
		conn_update_events(s, c);
}

/* Lifts reason bit; when none is left, c is read again at the end of the event batch
 * (bytes may wait in its rx buffer, which epoll does not report), never from inside a
 * read or flush of c. */
static void conn_unpause(struct rpc_server *s, struct sconn *c, int bit)
{
	if (!(c->paused & bit))
		return;
	c->paused &= ~bit;
	if (c->paused || c->closing)
		return;
	conn_update_events(s, c);
	if (!c->kicked) {
		c->kicked = 1;
		c->kick_next = s->kick;
		s->kick = c;
	}
}

/* The socket is full with replies waiting: c joins the blocked list the stall sweep
 * walks (only connections that wait, never all of them). */
static void blocked_add(struct rpc_server *s, struct sconn *c, int64_t now_ms)
{
	if (c->blocked)
		return;
	c->blocked = 1;
	c->tx_progress_ms = now_ms;
	c->blk_prev = NULL;
	c->blk_next = s->blocked;
	if (s->blocked)
		s->blocked->blk_prev = c;
	s->blocked = c;
}

static void blocked_del(struct rpc_server *s, struct sconn *c)
{
	if (!c->blocked)
		return;
	if (c->blk_prev)
		c->blk_prev->blk_next = c->blk_next;
	else
		s->blocked = c->blk_next;
	if (c->blk_next)
		c->blk_next->blk_prev = c->blk_prev;
	c->blocked = 0;
}

/* Whether the requests at workers are over the global bound. */
static int over_global(const struct rpc_server *s, int frac_num, int frac_den)
{
	int active = s->inflight - __atomic_load_n(&s->deferred, __ATOMIC_RELAXED);

	return (int64_t)active * frac_den >= (int64_t)s->inflight_max * frac_num ||
	       s->inflight_bytes * (uint64_t)frac_den >=
		       s->inflight_bytes_max * (uint64_t)frac_num;
}

/* Lifts the global pause once the workers are down to three quarters of the bound. */
static void global_check(struct rpc_server *s)
{
	struct sconn *c, *next;

	if (!s->throttled || over_global(s, 3, 4))
		return;
	__atomic_store_n(&s->throttled, 0, __ATOMIC_RELAXED);
	for (c = s->throttled_conns, s->throttled_conns = NULL; c; c = next) {
		next = c->thr_next;
		c->thr_next = c->thr_prev = NULL;
		conn_unpause(s, c, PAUSE_GLOBAL);
	}
}

/* Takes a closing c off the lists that outlive its socket. */
static void conn_unlist(struct rpc_server *s, struct sconn *c)
{
	blocked_del(s, c);
	if (c->paused & PAUSE_GLOBAL) {
		if (c->thr_prev)
			c->thr_prev->thr_next = c->thr_next;
		else
			s->throttled_conns = c->thr_next;
		if (c->thr_next)
			c->thr_next->thr_prev = c->thr_prev;
		c->thr_next = c->thr_prev = NULL;
		c->paused &= ~PAUSE_GLOBAL;
	}
	if (c->ue.listed) {
		conn_limits_leave(&s->lim, &c->ue);
		__atomic_fetch_sub(&rpc_server_unauth, 1, __ATOMIC_RELAXED);
	}
}

/* With the global bound reached, an authenticated connection about to read is paused
 * until global_check lifts it. Returns 1 when c was paused. */
static int global_pause(struct rpc_server *s, struct sconn *c)
{
	if (!s->throttled || !c->authed)
		return 0;
	if (!(c->paused & PAUSE_GLOBAL)) {
		conn_pause(s, c, PAUSE_GLOBAL);
		c->thr_prev = NULL;
		c->thr_next = s->throttled_conns;
		if (s->throttled_conns)
			s->throttled_conns->thr_prev = c;
		s->throttled_conns = c;
	}
	return 1;
}

static void conn_free(struct rpc_server *s, struct sconn *c)
{
	struct tx_frame *f, *nf;
	struct job *j;

	for (f = c->tx_head; f; f = nf) {
		nf = f->next;
		rpc_frame_free(f);
	}
	bufcache_put(&s->payloads, c->payload, c->payload_cap);
	sec_session_destroy(c->sess);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	key_wipe(&c->key);
	if (c->authed && s->conf.on_disconnect) {
		j = calloc(1, sizeof(*j));
		if (j) {
			j->kind = JOB_DISCONNECT;
			j->conn_id = c->id;
			rpc_queue_push(&s->work_q, j);
		}
	}
	free(c);
}

/* Queues a closed connection with no jobs left for freeing at the end of the event batch,
 * so no caller up the stack holds a dangling pointer. */
static void conn_maybe_reap(struct rpc_server *s, struct sconn *c)
{
	if (!c->closing || c->inflight > 0 || c->reaped)
		return;
	c->reaped = 1;
	c->dead_next = s->dead;
	s->dead = c;
}

static void reap_dead(struct rpc_server *s)
{
	while (s->dead) {
		struct sconn *c = s->dead;
		s->dead = c->dead_next;
		conn_free(s, c);
	}
}

/* Closes the socket now; the struct goes when no job for it is left at the workers. */
static void conn_close(struct rpc_server *s, struct sconn *c)
{
	if (c->closing)
		return;
	LOG_DEBUG(SUBSYS, "connection %llu from %s (%s) closed", (unsigned long long)c->id,
		  c->peer, c->peer_name);
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->closing = 1;
	conn_unlist(s, c);
	__atomic_fetch_sub(&rpc_server_connections, 1, __ATOMIC_RELAXED);
	if (c->authed && s->conf.on_close)
		s->conf.on_close(s->conf.arg, c->id); /* may answer requests it parked */
	conn_maybe_reap(s, c);
}

static void conn_flush(struct rpc_server *s, struct sconn *c)
{
	while (c->tx_head && !c->closing) {
		struct tx_frame *f = c->tx_head;
		ssize_t n;
		int close_after;

		n = writev(c->fd, f->iov + f->iov_idx, f->iovcnt - f->iov_idx);
		if (n > 0) {
			metrics_add(metrics_net_sent(), (uint64_t)n);
			c->tx_bytes -= (size_t)n;
			f->bytes -= (size_t)n;
			if (c->blocked)
				c->tx_progress_ms = net_now_ms();
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!c->want_out) {
					c->want_out = 1;
					conn_update_events(s, c);
				}
				blocked_add(s, c, net_now_ms());
				goto out_unpause;
			}
			conn_close(s, c);
			return;
		}
		while (n > 0 && f->iov_idx < f->iovcnt) {
			struct iovec *v = &f->iov[f->iov_idx];
			if ((size_t)n >= v->iov_len) {
				n -= (ssize_t)v->iov_len;
				v->iov_len = 0;
				f->iov_idx++;
			} else {
				v->iov_base = (uint8_t *)v->iov_base + n;
				v->iov_len -= (size_t)n;
				n = 0;
			}
		}
		if (f->iov_idx < f->iovcnt)
			continue;
		c->tx_head = f->next;
		if (!c->tx_head)
			c->tx_tail = NULL;
		close_after = f->close_after;
		c->tx_bytes -= TX_FRAME_COST;
		rpc_frame_free(f);
		if (close_after) {
			conn_close(s, c);
			return;
		}
	}
	if (c->want_out && !c->closing) {
		c->want_out = 0;
		conn_update_events(s, c);
	}
	blocked_del(s, c);
out_unpause:
	if (!c->closing && c->tx_bytes <= CL_TX_HIGH / 2)
		conn_unpause(s, c, PAUSE_TX);
}

/* Seals f, the next frame out on c (proto/sec.h): in place under privacy, the tag as the
 * last iov. Returns 0 or -EIO. */
static int frame_seal(struct sconn *c, struct tx_frame *f)
{
	uint8_t *head = f->head;
	size_t head_len = f->iov[0].iov_len;
	int rc = sec_seal_begin(c->sess, head);

	if (rc == 0)
		rc = sec_seal_update(c->sess, head + WIRE_HDR_LEN, head + WIRE_HDR_LEN,
				     head_len - WIRE_HDR_LEN);
	if (rc == 0 && f->iovcnt > 1)
		rc = sec_seal_update(c->sess, f->iov[1].iov_base, f->iov[1].iov_base,
				     f->iov[1].iov_len);
	if (rc == 0)
		rc = sec_seal_final(c->sess, f->tag);
	if (rc < 0)
		return rc;
	f->iov[f->iovcnt].iov_base = f->tag;
	f->iov[f->iovcnt].iov_len = WIRE_TAG_LEN;
	f->iovcnt++;
	f->bytes += WIRE_TAG_LEN; /* counted in tx_bytes like the rest of the frame */
	return 0;
}

static void conn_send(struct rpc_server *s, struct sconn *c, struct tx_frame *f)
{
	if (!f) {
		conn_close(s, c); /* out of memory for a reply: the peer times out and retries */
		return;
	}
	if (c->closing) {
		rpc_frame_free(f);
		return;
	}
	/* Frames are numbered in the order they go out: sealed here, on the event thread. */
	if (c->sealed && frame_seal(c, f) < 0) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "cannot seal a reply to %s (%s); closing",
				c->peer, c->peer_name);
		rpc_frame_free(f);
		conn_close(s, c);
		return;
	}
	f->next = NULL;
	if (c->tx_tail)
		c->tx_tail->next = f;
	else
		c->tx_head = f;
	c->tx_tail = f;
	c->tx_bytes += f->bytes + TX_FRAME_COST;
	if (!c->authed && c->tx_bytes > CL_TX_UNAUTH_MAX) {
		conn_limits_refused(CL_TX_OVERFLOW, c->peer, "before authentication");
		conn_close(s, c);
		return;
	}
	conn_flush(s, c);
	/* The queue is bounded by the high mark plus the replies of requests in flight:
	 * above it no further request is read. */
	if (!c->closing && c->tx_bytes > CL_TX_HIGH)
		conn_pause(s, c, PAUSE_TX);
}

/* An empty reply to c's current frame, with an envelope once the handshake is done. */
static void send_status(struct rpc_server *s, struct sconn *c, int status, int close_after)
{
	struct wire_rep_env e = {0};
	int env = c->authed && c->env;
	struct tx_frame *f;

	if (env && s->conf.last_committed)
		e.last_committed = s->conf.last_committed(s->conf.arg);
	f = rpc_frame_build(&c->hdr, status, NULL, 0, NULL, env ? &e : NULL, c->sealed);
	if (f)
		f->close_after = close_after;
	conn_send(s, c, f);
}

/* FAULT_SET: arms fault points in this process (tests only: the server must allow it). */
static void handle_fault_set(struct rpc_server *s, struct sconn *c, const uint8_t *body)
{
	struct wire_fault_set_req *req = malloc(sizeof(*req));
	struct wire_fault_set_rep *rep = malloc(sizeof(*rep));
	struct wire_rep_env e = {0};
	struct wire_cursor cur;
	uint8_t *buf = malloc(WIRE_FAULT_SPEC_MAX + 8);
	int rc = -ENOMEM;

	if (!req || !rep || !buf)
		goto out;
	rc = -EPERM;
	if (!s->conf.allow_fault_set) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
				"%s (%s) tried to set fault points; this server does not allow it",
				c->peer, c->peer_name);
		goto out;
	}
	rc = -EACCES;
	if (c->key.role == KEY_ROLE_CLIENT) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
				"refused FAULT_SET from %s (%s, client key %s): a client key "
				"cannot run admin requests", c->peer, c->peer_name, c->key.name);
		goto out;
	}
	wire_cursor_init_read(&cur, body, c->hdr.body_len);
	if (c->env)
		wire_get_view(&cur, WIRE_REQ_ENV_LEN);
	wire_fault_set_req_decode(&cur, req);
	rc = wire_cursor_ok(&cur) && wire_cursor_left(&cur) == 0 ? 0 : -EPROTO;
	memset(rep, 0, sizeof(*rep));
	if (rc == 0 && req->spec[0])
		rc = fault_set(req->spec, wire_opcode_by_name, rep->armed, sizeof(rep->armed));
	if (rc == 0) {
		fault_describe(rep->armed, sizeof(rep->armed));
		LOG_INFO(SUBSYS, "%s (%s) set fault points: %s", c->peer, c->peer_name,
			 rep->armed[0] ? rep->armed : "none armed");
	}
	/* on -EINVAL, rep->armed holds fault_set's sentence */
	wire_cursor_init_write(&cur, buf, WIRE_FAULT_SPEC_MAX + 8);
	wire_fault_set_rep_encode(&cur, rep);
	if (c->env && s->conf.last_committed)
		e.last_committed = s->conf.last_committed(s->conf.arg);
	conn_send(s, c, rpc_frame_build(&c->hdr, rc, buf, (uint32_t)cur.pos, NULL,
					c->env ? &e : NULL, c->sealed));
	free(req);
	free(rep);
	free(buf);
	return;
out:
	free(req);
	free(rep);
	free(buf);
	send_status(s, c, rc, 0);
}

/* The key this peer proved (or will prove in AUTH): the cluster key today; per-client keys
 * pick the peer's own here. */
static const struct nacre_key *peer_key(struct rpc_server *s, const struct sconn *c)
{
	(void)s;
	return &c->key; /* set at CONNECT from what the peer claims (rpc_peer_key) */
}

/* The least flavour c's peer gets, and what set it (for messages). */
static int peer_sec_min(struct rpc_server *s, const struct sconn *c, const char **rule)
{
	int min;

	*rule = "--sec-min";
	if (s->conf.sec_min_for) {
		/* the name a client or admin key proved, once it did (at AUTH) */
		const char *who = c->key.role != KEY_ROLE_SERVER && c->key.name[0] ?
					  c->key.name : c->peer_name;
		min = s->conf.sec_min_for(s->conf.arg, c->peer, who, rule);
		if (!*rule)
			*rule = "a server rule";
	} else {
		min = s->conf.sec_min;
	}
	return min < WIRE_SEC_NULL ? WIRE_SEC_NULL : min > WIRE_SEC_MAX_ ? WIRE_SEC_MAX_ : min;
}

/* Answers c's CONNECT or AUTH with -NACRE_ESEC and the rule that sets min, and closes. */
static void send_sec_refusal(struct rpc_server *s, struct sconn *c, int min, const char *rule)
{
	struct wire_sec_refusal r = {.min = (uint8_t)min};
	struct wire_cursor cur;
	uint8_t buf[WIRE_SEC_RULE_MAX + 16];
	struct tx_frame *f;

	str_copy(r.rule, rule, sizeof(r.rule));
	wire_cursor_init_write(&cur, buf, sizeof(buf));
	wire_sec_refusal_encode(&cur, &r);
	f = rpc_frame_build(&c->hdr, -NACRE_ESEC, buf, (uint32_t)cur.pos, NULL, NULL, 0);
	if (f)
		f->close_after = 1;
	conn_send(s, c, f);
}

/* Picks the flavour of c from what its CONNECT asked for. Returns 0, or a negative status
 * after answering (and closing) the refusal. */
static int negotiate_sec(struct rpc_server *s, struct sconn *c, const struct wire_connect_req *req,
			 struct wire_connect_rep *rep)
{
	const char *rule;
	int min = peer_sec_min(s, c, &rule);
	int chosen = WIRE_SEC_NULL;

	c->req_features = req->features;
	c->rep_features = rep->features;
	c->sec_feat = (rep->features & WIRE_FEAT_SEC) != 0;
	if (!c->sec_feat && min > WIRE_SEC_NULL) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
				"refused %s (%s): it has no wire security and this server "
				"requires sec=%s or better for it (%s); upgrade it",
				c->peer, c->peer_name, sec_flavour_name(min), rule);
		send_status(s, c, -NACRE_EPROTO_VERSION, 1);
		return -NACRE_EPROTO_VERSION;
	}
	if (c->sec_feat) {
		chosen = req->sec;
		c->sec_asked = req->sec + 16 * req->sec_flags;
		if (chosen < min && (req->sec_flags & WIRE_SEC_RAISE))
			chosen = min;
		if (chosen < min) {
			LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
					"refused %s (%s): it asked for sec=%s, this server "
					"requires sec=%s or better for it (%s)",
					c->peer, c->peer_name, sec_flavour_name(req->sec),
					sec_flavour_name(min), rule);
			send_sec_refusal(s, c, min, rule);
			return -NACRE_ESEC;
		}
	}
	c->sec = chosen;
	rep->sec = (uint8_t)chosen;
	return 0;
}

/* The proof label of who ("nacre-server", "nacre-client") on c: the negotiation bound in
 * when both sides know WIRE_FEAT_SEC. */
static const char *proof_label(const struct sconn *c, const char *who, char *buf, size_t len)
{
	if (!c->sec_feat)
		return who;
	sec_proof_label(buf, len, who, c->req_features, c->rep_features, c->sec_asked, c->sec);
	return buf;
}

static void handle_connect(struct rpc_server *s, struct sconn *c, const uint8_t *body)
{
	char label[96];
	struct wire_cursor cur;
	struct wire_connect_req req;
	struct wire_connect_rep rep = { 0 };
	uint8_t buf[512];

	if (c->authed) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "CONNECT from %s (%s) after AUTH; closing",
				c->peer, c->peer_name);
		conn_close(s, c);
		return;
	}
	wire_cursor_init_read(&cur, body, c->hdr.body_len);
	wire_connect_req_decode(&cur, &req);
	if (!wire_cursor_ok(&cur)) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "malformed CONNECT from %s", c->peer);
		send_status(s, c, -EPROTO, 1);
		return;
	}
	str_copy(c->peer_name, req.name, sizeof(c->peer_name));
	if (req.version_min > WIRE_VERSION || req.version_max < 1) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
				"%s (%s) speaks protocol %u..%u, we speak %u", c->peer,
				c->peer_name, req.version_min, req.version_max, WIRE_VERSION);
		send_status(s, c, -NACRE_EPROTO_VERSION, 1);
		return;
	}
	if (strcmp(req.fsname, s->fsname) != 0) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
				"%s (%s) asked for file system '%s'; this server serves '%s'",
				c->peer, c->peer_name, req.fsname, s->fsname);
		send_status(s, c, -NACRE_EFSNAME, 1);
		return;
	}
	if (rpc_peer_key(&s->key, &req, &c->key) < 0) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
				"refused %s (%s): it offers %s key %s, and this server holds no "
				"cluster key to check it with", c->peer, c->peer_name,
				key_role_name(req.key.role), req.key.name);
		send_status(s, c, -NACRE_EAUTH, 1);
		return;
	}
	memcpy(c->cnonce, req.nonce, WIRE_NONCE_LEN);
	if (key_random(c->snonce, WIRE_NONCE_LEN) < 0) {
		send_status(s, c, -EIO, 1);
		return;
	}
	rep.version = req.version_max < WIRE_VERSION ? req.version_max : WIRE_VERSION;
	rep.features = req.features & WIRE_FEATURES_SUPPORTED;
	if (negotiate_sec(s, c, &req, &rep) < 0)
		return;
	c->env = (rep.features & WIRE_FEAT_RECOVERY) != 0;
	c->features = rep.features;
	if (c->env) {
		c->client_id = req.client_id;
		rep.instance = s->instance;
		rep.session = WIRE_SESSION_NEW;
		if (s->conf.last_committed)
			rep.last_committed = s->conf.last_committed(s->conf.arg);
		if (s->conf.on_connect)
			s->conf.on_connect(s->conf.arg, c->id, &req, &rep);
	}
	memcpy(rep.nonce, c->snonce, WIRE_NONCE_LEN);
	key_proof(peer_key(s, c), proof_label(c, "nacre-server", label, sizeof(label)), c->cnonce,
		  c->snonce, WIRE_NONCE_LEN, rep.proof);
	str_copy(rep.server_name, s->server_name, sizeof(rep.server_name));
	wire_cursor_init_write(&cur, buf, sizeof(buf));
	wire_connect_rep_encode(&cur, &rep);
	c->connected = 1;
	conn_send(s, c, rpc_frame_build(&c->hdr, 0, buf, (uint32_t)cur.pos, NULL, NULL, 0));
}

/* Whether c's proven client or admin key is still good (the key table): 0, or the error
 * to refuse it with (logged, rate-limited, if log). Server keys always are. */
static int key_current(struct rpc_server *s, struct sconn *c, int log)
{
	int rc;

	if (c->key.role == KEY_ROLE_SERVER)
		return 0;
	rc = s->conf.key_check ? s->conf.key_check(s->conf.arg, c->key.role, c->key.name,
						    c->key.gen)
			       : -EKEYREJECTED;
	if (rc && log)
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
				"refused %s (%s): %s key %s generation %llu: %s", c->peer,
				c->peer_name, key_role_name(c->key.role), c->key.name,
				(unsigned long long)c->key.gen, nacre_strerror(rc));
	return rc;
}

/* Closes every connection whose key the key table refuses now (rpc_server_recheck_keys). */
static void recheck_keys(struct rpc_server *s)
{
	for (struct sconn *c = s->conns; c; c = c->next) {
		if (c->closing || !c->authed || c->key.role == KEY_ROLE_SERVER)
			continue;
		int rc = key_current(s, c, 0);
		if (rc) {
			LOG_INFO(SUBSYS, "closing connection %llu from %s (%s): %s key %s is no "
				 "longer valid (%s)", (unsigned long long)c->id, c->peer,
				 c->peer_name, key_role_name(c->key.role), c->key.name,
				 nacre_strerror(rc));
			conn_close(s, c);
		}
	}
}

void rpc_server_recheck_keys(struct rpc_server *s)
{
	__atomic_store_n(&s->recheck_keys, 1, __ATOMIC_RELEASE);
	rpc_wake_loop(s);
}

static void handle_auth(struct rpc_server *s, struct sconn *c, const uint8_t *body)
{
	struct wire_cursor cur;
	struct wire_auth_req req;
	uint8_t expect[WIRE_PROOF_LEN];
	const char *rule;
	char label[96];
	int rc;

	wire_cursor_init_read(&cur, body, c->hdr.body_len);
	wire_auth_req_decode(&cur, &req);
	if (!wire_cursor_ok(&cur) || !c->connected) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "malformed or early AUTH from %s", c->peer);
		send_status(s, c, -EPROTO, 1);
		return;
	}
	if (c->authed) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "second AUTH from %s (%s); closing",
				c->peer, c->peer_name);
		conn_close(s, c);
		return;
	}
	key_proof(peer_key(s, c), proof_label(c, "nacre-client", label, sizeof(label)), c->snonce,
		  c->cnonce, WIRE_NONCE_LEN, expect);
	if (!key_proof_eq(expect, req.proof, WIRE_PROOF_LEN)) {
		if (c->key.role == KEY_ROLE_SERVER)
			LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
					"refused %s (%s): wrong cluster key (or the handshake was "
					"altered on the way)", c->peer, c->peer_name);
		else
			LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
					"refused %s (%s): wrong %s key %s generation %llu",
					c->peer, c->peer_name, key_role_name(c->key.role),
					c->key.name, (unsigned long long)c->key.gen);
		send_status(s, c, -NACRE_EAUTH, 1);
		return;
	}
	rc = key_current(s, c, 1);
	if (rc) {
		send_status(s, c, rc, 1);
		return;
	}
	/* The minimum again, now that the peer proved its key: a rule for a proven identity
	 * (per-client keys) applies here. */
	rc = peer_sec_min(s, c, &rule);
	if (c->sec < rc) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
				"refused %s (%s): its connection has sec=%s, this server requires "
				"sec=%s or better for it (%s)",
				c->peer, c->peer_name, sec_flavour_name(c->sec), sec_flavour_name(rc),
				rule);
		send_sec_refusal(s, c, rc, rule);
		return;
	}
	if (c->sec > WIRE_SEC_NULL) {
		rc = sec_session_open(peer_key(s, c), c->cnonce, c->snonce, c->sec, 1, &c->sess);
		if (rc < 0) {
			LOG_ERR(SUBSYS, "cannot set up sec=%s for %s (%s): %s",
				sec_flavour_name(c->sec), c->peer, c->peer_name,
				nacre_strerror(rc));
			send_status(s, c, -EIO, 1);
			return;
		}
	}
	c->authed = 1;
	if (c->ue.listed) {
		conn_limits_leave(&s->lim, &c->ue);
		__atomic_fetch_sub(&rpc_server_unauth, 1, __ATOMIC_RELAXED);
	}
	if (c->key.role == KEY_ROLE_SERVER)
		LOG_INFO(SUBSYS, "connection %llu from %s (%s) authenticated, sec=%s, with the "
			 "cluster key", (unsigned long long)c->id, c->peer, c->peer_name,
			 sec_flavour_name(c->sec));
	else
		LOG_INFO(SUBSYS, "connection %llu from %s (%s) authenticated, sec=%s, with %s "
			 "key %s generation %llu", (unsigned long long)c->id, c->peer,
			 c->peer_name, sec_flavour_name(c->sec), key_role_name(c->key.role),
			 c->key.name, (unsigned long long)c->key.gen);
	/* The AUTH reply is the last plain frame; everything after it, both ways, is sealed. */
	send_status(s, c, 0, 0);
	c->sealed = c->sess != NULL;
}

/* Sends j's reply on c (or what a fault point made of it). */
static void job_reply(struct rpc_server *s, struct sconn *c, struct job *j)
{
	if (j->close_conn) {
		rpc_frame_free(j->reply);
		conn_close(s, c);
	} else if (j->drop_reply) {
		rpc_frame_free(j->reply);
	} else {
		conn_send(s, c, j->reply);
	}
	j->reply = NULL;
}

/* Checks the tag of c's complete frame (and under privacy its body and bulk are plaintext
 * now). Returns 0, or -1 after logging and closing the connection. */
static int frame_open(struct rpc_server *s, struct sconn *c, const uint8_t *payload)
{
	size_t end = c->payload_len - WIRE_TAG_LEN;

	if (!c->sec_bad && c->sec_upto == end && sec_open_final(c->sess, payload + end) == 0)
		return 0;
	LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
			"frame %s (xid %llu) from %s (%s) failed sec=%s verification "
			"(altered, injected, replayed or reordered); closing",
			wire_opcode_name(c->hdr.opcode), (unsigned long long)c->hdr.xid, c->peer,
			c->peer_name, sec_flavour_name(c->sec));
	conn_close(s, c);
	return -1;
}

/* Frames the event thread answers itself (bad ones, the handshake, PING): returns 1 when c's
 * frame was one of them, and payload is then no longer needed. */
static int answered_here(struct rpc_server *s, struct sconn *c, const uint8_t *payload)
{
	if (c->hdr.flags & WIRE_FLAG_REPLY) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "unexpected reply frame from %s", c->peer);
		conn_close(s, c);
		return 1;
	}
	if (c->hdr.bulk_len && !c->sealed && c->bulk_crc != c->hdr.bulk_crc) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "bulk checksum mismatch in %s from %s",
				wire_opcode_name(c->hdr.opcode), c->peer);
		send_status(s, c, -EPROTO, 1);
		return 1;
	}
	if (c->hdr.opcode == WIRE_OP_CONNECT) {
		handle_connect(s, c, payload);
		return 1;
	}
	if (c->hdr.opcode == WIRE_OP_AUTH) {
		handle_auth(s, c, payload);
		return 1;
	}
	if (!c->authed) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "%s sent %s before authenticating",
				c->peer, wire_opcode_name(c->hdr.opcode));
		send_status(s, c, -NACRE_EAUTH, 1);
		return 1;
	}
	if (c->hdr.opcode == WIRE_OP_PING) {
		send_status(s, c, 0, 0);
		return 1;
	}
	if (c->hdr.opcode == WIRE_OP_FAULT_SET) {
		handle_fault_set(s, c, payload);
		return 1;
	}
	if (NACRE_FAULT_OP(FAULT_RPC_DROP_REQUEST, c->hdr.opcode, NULL))
		return 1; /* as if it were lost on the way: no execution, no reply */
	return 0;
}

/* A complete frame arrived on c: answer the handshake here, queue the rest for workers.
 * Takes ownership of c->payload. */
static void conn_dispatch(struct rpc_server *s, struct sconn *c)
{
	uint8_t *payload = c->payload;
	size_t cap = c->payload_cap;
	struct job *j;
	int deferred = 0;

	c->payload = NULL;
	if (c->sealed && frame_open(s, c, payload) < 0) {
		bufcache_put(&s->payloads, payload, cap);
		return;
	}
	if (answered_here(s, c, payload)) {
		bufcache_put(&s->payloads, payload, cap);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		bufcache_put(&s->payloads, payload, cap);
		send_status(s, c, -ENOMEM, 0);
		return;
	}
	j->kind = JOB_REQUEST;
	j->srv = s;
	j->conn = c;
	j->conn_id = c->id;
	j->hdr = c->hdr;
	j->payload = payload;
	j->payload_cap = cap;
	/* With fault points armed everything runs on workers: a delayed reply must not stall
	 * the event thread. */
	if (s->conf.runs_inline && s->conf.runs_inline(c->hdr.opcode) && !fault_any_armed) {
		if (!rpc_run_request(s, j)) {
			job_reply(s, c, j);
			free(j);
			return;
		}
		/* parked (or resumed already): from now on it is a worker's job, which the
		 * done queue hands back to this thread */
		deferred = 1;
	}
	c->inflight++;
	s->inflight++;
	s->inflight_bytes += (uint64_t)c->hdr.body_len + c->hdr.bulk_len;
	if (c->inflight >= CONN_MAX_INFLIGHT)
		conn_pause(s, c, PAUSE_INFLIGHT);
	if (!s->throttled && over_global(s, 1, 1)) {
		__atomic_store_n(&s->throttled, 1, __ATOMIC_RELAXED);
		metrics_add(metrics_counter("nacre_rpc_server_throttled_total", "",
					    "Times the requests at workers reached the global "
					    "bound and reading paused"),
			    1);
	}
	if (!deferred)
		rpc_queue_push(&s->work_q, j);
}

/* A frame header is complete in c->hdr_buf: checks it and prepares the payload buffer.
 * Returns 0, or -1 after closing the connection. */
static int hdr_complete(struct rpc_server *s, struct sconn *c)
{
	int rc = wire_hdr_decode(c->hdr_buf, &c->hdr);
	enum cl_reason why;

	if (rc < 0) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "bad frame header from %s: %s; closing",
				c->peer, nacre_strerror(rc));
		conn_close(s, c);
		return -1;
	}
	/* Before anything is allocated for the payload: what a peer without the key may
	 * send (conn_limits.h). */
	why = conn_limits_check_hdr(&c->hdr, c->connected, c->authed);
	if (why != CL_OK) {
		char detail[96];
		snprintf(detail, sizeof(detail), "%s, body %u, bulk %u bytes",
			 wire_opcode_name(c->hdr.opcode), c->hdr.body_len, c->hdr.bulk_len);
		conn_limits_refused(why, c->peer, detail);
		/* one try to tell the peer why (its unread bytes may reset the connection
		 * first), then closed whatever the socket took */
		send_status(s, c, why == CL_PREAUTH_OPCODE ? -NACRE_EAUTH : -EPROTO, 1);
		conn_close(s, c);
		return -1;
	}
	c->hdr_got = 0;
	c->payload_len = (size_t)c->hdr.body_len + c->hdr.bulk_len;
	c->payload_got = 0;
	c->bulk_crc = 0;
	c->crc_upto = c->hdr.body_len;
	if (c->sealed) {
		c->payload_len += WIRE_TAG_LEN; /* the tag follows the bulk */
		c->crc_upto = SIZE_MAX;         /* the tag covers the bulk: no CRC */
		c->sec_upto = 0;
		c->sec_bad = sec_open_begin(c->sess, c->hdr_buf) < 0;
	}
	c->payload = bufcache_get(&s->payloads, c->payload_len, &c->payload_cap);
	if (!c->payload) {
		conn_close(s, c);
		return -1;
	}
	c->rx = RX_PAYLOAD;
	return 0;
}

/* Extends c->bulk_crc over the bulk bytes received since the last call; on a sealed
 * connection feeds them (body and bulk, not the tag) to the session instead, while they are
 * still in the CPU cache. */
static void crc_advance(struct sconn *c)
{
	if (c->payload_got > c->crc_upto) {
		c->bulk_crc = crc32c(c->bulk_crc, c->payload + c->crc_upto,
				     c->payload_got - c->crc_upto);
		c->crc_upto = c->payload_got;
	}
	if (c->sealed) {
		size_t end = c->payload_len - WIRE_TAG_LEN;
		size_t upto = c->payload_got < end ? c->payload_got : end;

		/* a failure fails the frame at its end (frame_open) */
		if (upto > c->sec_upto && !c->sec_bad) {
			c->sec_bad = sec_open_update(c->sess, c->payload + c->sec_upto,
						     upto - c->sec_upto) < 0;
			c->sec_upto = upto;
		}
	}
}

/* Moves buffered bytes into the frame being assembled, dispatching every frame completed,
 * until the buffer is empty or the connection paused or closed. */
static void rx_consume(struct rpc_server *s, struct sconn *c)
{
	while (c->rx_off < c->rx_len && !c->closing && !c->paused && !global_pause(s, c)) {
		size_t avail = c->rx_len - c->rx_off;
		const uint8_t *src = c->rxbuf + c->rx_off;
		size_t take;

		if (c->rx == RX_HDR) {
			take = WIRE_HDR_LEN - c->hdr_got;
			if (take > avail)
				take = avail;
			memcpy(c->hdr_buf + c->hdr_got, src, take);
			c->hdr_got += take;
			c->rx_off += take;
			if (c->hdr_got < WIRE_HDR_LEN || hdr_complete(s, c) < 0)
				continue;
		} else {
			take = c->payload_len - c->payload_got;
			if (take > avail)
				take = avail;
			memcpy(c->payload + c->payload_got, src, take);
			c->payload_got += take;
			c->rx_off += take;
			crc_advance(c);
		}
		if (c->rx == RX_PAYLOAD && c->payload_got == c->payload_len) {
			c->rx = RX_HDR;
			conn_dispatch(s, c);
		}
	}
}

/* Reads what the socket has; returns when it would block, the connection paused or closed.
 * Small frames come through rxbuf, several per read(); the rest of a large payload is read
 * straight into its buffer. A read that fills less than asked means the socket is drained
 * for now (epoll is level-triggered and reports what comes later), which saves the read
 * that would only say EAGAIN. */
static void conn_read(struct rpc_server *s, struct sconn *c)
{
	for (;;) {
		ssize_t n;
		size_t want;
		int direct;

		rx_consume(s, c);
		if (c->closing || c->paused || global_pause(s, c))
			return;
		c->rx_off = c->rx_len = 0;
		/* Not told apart by want: the rest of a payload may be exactly RX_BUF bytes. */
		direct = c->rx == RX_PAYLOAD && c->payload_len - c->payload_got >= RX_BUF;
		if (direct) {
			want = c->payload_len - c->payload_got;
			if (want > RX_DIRECT_MAX)
				want = RX_DIRECT_MAX;
			n = read(c->fd, c->payload + c->payload_got, want);
		} else {
			want = RX_BUF;
			n = read(c->fd, c->rxbuf, want);
		}
		if (n == 0) {
			conn_close(s, c);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				conn_close(s, c);
			return;
		}
		metrics_add(metrics_net_recv(), (uint64_t)n);
		if (!direct) {
			c->rx_len = (size_t)n;
		} else {
			c->payload_got += (size_t)n;
			crc_advance(c);
			if (c->payload_got == c->payload_len) {
				c->rx = RX_HDR;
				conn_dispatch(s, c);
			}
		}
		if ((size_t)n < want) {
			rx_consume(s, c);
			return;
		}
	}
}

static void peer_format(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	}
	snprintf(out, len, "%s:%u", host, port);
}

/* The connection an un-authenticated entry is embedded in. */
static struct sconn *conn_of(struct cl_entry *e)
{
	return (struct sconn *)(void *)((char *)e - offsetof(struct sconn, ue));
}

/* accept() is out of descriptors (or memory): closes the oldest un-authenticated
 * connection to make room and returns 1 (accept again), or, with none to close, takes the
 * listening socket out of epoll for CL_ACCEPT_BACKOFF_MS (the loop puts it back) so that a
 * level-triggered listener does not spin, and returns 0. */
static int accept_starved(struct rpc_server *s, int err)
{
	struct cl_entry *e = conn_limits_oldest(&s->lim);

	if (e) {
		struct sconn *old = conn_of(e);
		conn_limits_refused(CL_FD_LIMIT, old->peer, strerror(err));
		conn_close(s, old);
		return 1;
	}
	cl_backoff_start(&s->backoff, err, s->server_name, net_now_ms());
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->listen_fd, NULL);
	return 0;
}

static void accept_all(struct rpc_server *s)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct epoll_event ev;
		struct cl_entry *evict;
		enum cl_reason why;
		struct sconn *c;
		int one = 1;
		int fd;

		fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int err = errno;
			if (err == EINTR || err == ECONNABORTED)
				continue;
			if (err == EAGAIN)
				return;
			if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
				if (accept_starved(s, err))
					continue;
				return;
			}
			LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "accept: %s", strerror(err));
			return;
		}
		cl_backoff_accepted(&s->backoff, s->server_name);
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		peer_format(&ss, c->peer, sizeof(c->peer));
		why = conn_limits_admit(&s->lim, &c->ue, &ss, net_now_ms());
		if (why == CL_PEER_CAP) {
			conn_limits_refused(why, c->peer, NULL);
			close(fd);
			free(c);
			continue;
		}
		__atomic_fetch_add(&rpc_server_unauth, 1, __ATOMIC_RELAXED);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		str_copy(c->peer_name, "?", sizeof(c->peer_name));
		c->fd = fd;
		c->id = ++s->next_conn_id;
		__atomic_fetch_add(&rpc_server_connections, 1, __ATOMIC_RELAXED);
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.ptr = c;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			c->closing = 1;
			close(fd);
			conn_unlist(s, c);
			__atomic_fetch_sub(&rpc_server_connections, 1, __ATOMIC_RELAXED);
			conn_maybe_reap(s, c);
		}
		/* over the total: the oldest make room (a lowered descriptor limit may ask
		 * for more than one) */
		while ((evict = conn_limits_excess(&s->lim)) != NULL) {
			struct sconn *old = conn_of(evict);
			conn_limits_refused(CL_TOTAL_CAP, old->peer, NULL);
			conn_close(s, old);
		}
	}
}

/* The loop's periodic work: listening again after a back-off, the handshake deadline
 * (O(expired): the list is in accept order), and once a second the peers that do not read
 * their replies (O(blocked)). */
static void timers_run(struct rpc_server *s)
{
	int64_t now = net_now_ms();
	struct cl_entry *e;

	if (s->backoff.active && now >= s->backoff.until_ms) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->listen_fd };
		s->backoff.active = 0;
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd, &ev);
	}
	while ((e = conn_limits_expired(&s->lim, now)) != NULL) {
		struct sconn *c = conn_of(e);
		conn_limits_refused(CL_HANDSHAKE_TIMEOUT, c->peer, c->connected ? "no AUTH"
									 : "no CONNECT");
		conn_close(s, c);
	}
	if (now - s->stall_swept_ms >= 1000) {
		struct sconn *c, *next;
		s->stall_swept_ms = now;
		for (c = s->blocked; c; c = next) {
			next = c->blk_next;
			if (now - c->tx_progress_ms >= s->tx_stall_ms) {
				char detail[64];
				snprintf(detail, sizeof(detail), "%zu bytes queued for %d s",
					 c->tx_bytes, s->tx_stall_ms / 1000);
				conn_limits_refused(CL_TX_STALL, c->peer, detail);
				conn_close(s, c);
			}
		}
	}
}

/* How long the loop may sleep: until the next handshake deadline or the end of a back-off,
 * at most a second (the stall sweep). */
static int timers_next_ms(struct rpc_server *s)
{
	int64_t now = net_now_ms();
	int t = 1000, u = conn_limits_next_ms(&s->lim, now);

	if (u >= 0 && u < t)
		t = u;
	if (s->backoff.active) {
		u = s->backoff.until_ms > now ? (int)(s->backoff.until_ms - now) : 0;
		if (u < t)
			t = u;
	}
	return t;
}

/* Reads the connections whose pauses were lifted during the batch. */
static void kicks_run(struct rpc_server *s)
{
	while (s->kick) {
		struct sconn *c = s->kick;
		s->kick = c->kick_next;
		c->kicked = 0;
		if (!c->closing && !c->paused)
			conn_read(s, c);
	}
}

/* Replies from workers: queue them on their connections. */
static void drain_done(struct rpc_server *s)
{
	struct job *j, *next;
	uint64_t cnt;
	ssize_t r = read(s->evfd, &cnt, sizeof(cnt));

	(void)r;
	pthread_mutex_lock(&s->done_lock);
	j = s->done_head;
	s->done_head = s->done_tail = NULL;
	pthread_mutex_unlock(&s->done_lock);
	for (; j; j = next) {
		struct sconn *c = j->conn;

		next = j->next;
		c->inflight--;
		s->inflight--;
		s->inflight_bytes -= (uint64_t)j->hdr.body_len + j->hdr.bulk_len;
		if (c->closing) {
			rpc_frame_free(j->reply);
			conn_maybe_reap(s, c);
		} else {
			job_reply(s, c, j);
			if (!c->closing && c->inflight < CONN_MAX_INFLIGHT / 2)
				conn_unpause(s, c, PAUSE_INFLIGHT);
		}
		free(j);
	}
	global_check(s); /* also after a handler deferred a request (rpc_defer wakes us) */
}

int rpc_server_run(struct rpc_server *s)
{
	struct epoll_event evs[EPOLL_BATCH];
	int i, n, rc = 0;

	s->workers = calloc((size_t)s->nworkers, sizeof(*s->workers));
	if (!s->workers)
		return -ENOMEM;
	for (i = 0; i < s->nworkers; i++) {
		if (pthread_create(&s->workers[i], NULL, rpc_worker_main, s) != 0) {
			s->nworkers = i;
			rc = -EAGAIN;
			goto out_stop;
		}
	}
	while (!__atomic_load_n(&s->stop_flag, __ATOMIC_ACQUIRE)) {
		n = epoll_wait(s->epfd, evs, EPOLL_BATCH, timers_next_ms(s));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		for (i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			struct sconn *c;

			if (p == &s->listen_fd) {
				accept_all(s);
				continue;
			}
			if (p == &s->evfd) {
				drain_done(s);
				if (__atomic_exchange_n(&s->recheck_keys, 0, __ATOMIC_ACQ_REL))
					recheck_keys(s);
				continue;
			}
			c = p;
			if (c->closing)
				continue;
			if (evs[i].events & EPOLLOUT)
				conn_flush(s, c);
			if (c->paused && (evs[i].events & (EPOLLHUP | EPOLLERR)))
				conn_close(s, c); /* gone both ways: nothing to read or answer */
			else if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				conn_read(s, c);
		}
		kicks_run(s);
		timers_run(s);
		kicks_run(s);
		reap_dead(s);
	}

out_stop:
	pthread_mutex_lock(&s->work_q.lock);
	s->work_q.stop = 1;
	pthread_cond_broadcast(&s->work_q.cond);
	pthread_mutex_unlock(&s->work_q.lock);
	for (i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	return rc;
}
