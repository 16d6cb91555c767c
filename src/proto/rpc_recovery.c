/* rpc_recovery.c - what a session client keeps for a restarted server, and the replay.
 *
 * Every call still open is in c->open, in xid order; its head is the ack_xid each request
 * carries. A session keeps each answered request whose change the server has not yet put
 * on disk (reply transno above last_committed) in c->retained, in transno order, with the
 * first reply's body; each reply's last_committed forgets those below. When the server
 * restarts (a new instance at reconnect), rpc_run_recovery replays them on the new socket,
 * reading the replies itself, before any other request may use it (see rpc.h, struct
 * rpc_recovery). Locking: as rpc_client.c says; everything here on c->retained and c->open
 * runs with c->lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/net.h"
#include "nacre/nacre_errno.h"
#include "proto/rpc_client_int.h"

#define SUBSYS "rpc"
#define RETAIN_MAX 65536         /* requests kept for replay; beyond it the oldest go */

static struct metric *replays_metric(void)
{
	static struct metric *m;

	return metrics_counter_once(&m, "nacre_rpc_client_replays_total",
				    "Requests replayed to a restarted server");
}

/* ---- open xids, retained requests (all with c->lock held) ---- */

void rpc_open_link_tail(struct rpc_conn *c, struct xid_link *l, uint64_t xid)
{
	l->xid = xid;
	l->prev = c->open.prev;
	l->next = &c->open;
	c->open.prev->next = l;
	c->open.prev = l;
}

void rpc_open_unlink(struct xid_link *l)
{
	if (!l->next)
		return;
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->next = l->prev = NULL;
}

/* Puts n where o is in the list (same xid position). */
static void open_replace(struct xid_link *o, struct xid_link *n)
{
	n->xid = o->xid;
	n->prev = o->prev;
	n->next = o->next;
	o->prev->next = n;
	o->next->prev = n;
	o->next = o->prev = NULL;
}

uint64_t rpc_ack_xid(const struct rpc_conn *c)
{
	return c->open.next != &c->open ? c->open.next->xid : c->next_xid;
}

static void retained_free(struct rpc_retained *r)
{
	free(r->body);
	free(r);
}

static void retained_insert(struct rpc_conn *c, struct rpc_retained *r)
{
	struct rpc_retained **pp = &c->retained;

	r->next = NULL;
	if (!c->retained_tail || c->retained_tail->transno <= r->transno) {
		if (c->retained_tail)
			c->retained_tail->next = r;
		else
			c->retained = r;
		c->retained_tail = r;
	} else {
		while (*pp && (*pp)->transno <= r->transno)
			pp = &(*pp)->next;
		r->next = *pp;
		*pp = r;
	}
	c->nretained++;
}

void rpc_retained_pop(struct rpc_conn *c)
{
	struct rpc_retained *r = c->retained;

	c->retained = r->next;
	if (!c->retained)
		c->retained_tail = NULL;
	c->nretained--;
	rpc_open_unlink(&r->open);
	retained_free(r);
}

/* The server says every transno up to lc is on disk: forget those requests. */
void rpc_committed_upto(struct rpc_conn *c, uint64_t lc)
{
	if (lc > c->last_committed)
		c->last_committed = lc;
	while (c->retained && c->retained->transno <= c->last_committed)
		rpc_retained_pop(c);
}

/* Keeps p's request for replay (its change is not on disk yet), with the reply body m.
 * The request body is copied: its sender may still be writing p->body_copy to the socket
 * while this reply is read. */
void rpc_retain(struct rpc_conn *c, struct rpc_pending *p, const struct rpc_msg *m)
{
	struct rpc_retained *r = calloc(1, sizeof(*r));
	uint8_t *both = r && p->args.body_len + m->body_len + WIRE_REQ_ENV_LEN <=
				     wire_op_body_max(p->args.opcode)
				? malloc(p->args.body_len + m->body_len + 1)
				: NULL;

	if (!both) {
		free(r);
		return; /* it will not be replayed: the change was answered all the same */
	}
	memcpy(both, p->body_copy, p->args.body_len);
	memcpy(both + p->args.body_len, m->body, m->body_len);
	if (c->nretained >= RETAIN_MAX) {
		LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
				"%s reports nothing on disk for %d changes: the oldest will not "
				"be replayed if it crashes",
				c->addrs[c->cur_addr], RETAIN_MAX);
		rpc_retained_pop(c);
	}
	r->opcode = p->args.opcode;
	r->transno = m->env.transno;
	r->body = both;
	r->body_len = p->args.body_len;
	r->reply_len = m->body_len;
	open_replace(&p->open, &r->open);
	retained_insert(c, r);
}

/* ---- recovery ---- */

struct rpc_recovery {
	struct rpc_conn *c;
	int fd;
	struct sec_session *sess; /* fd's, NULL for null */
	int env;
	int64_t deadline;
	int replayed; /* requests replayed */
};

int rpc_recovery_call(struct rpc_recovery *r, uint16_t opcode, uint32_t env_flags,
		      const void *body, uint32_t body_len, const void *first_reply,
		      uint32_t first_len, struct rpc_msg **reply)
{
	struct rpc_conn *c = r->c;
	struct wire_req_env e = {.flags = env_flags, .replay_len = first_len};
	struct rpc_msg *m;
	uint8_t *both = NULL;
	uint64_t xid;
	int rc;

	*reply = NULL;
	if (first_len) {
		both = malloc((size_t)body_len + first_len);
		if (!both)
			return -ENOMEM;
		memcpy(both, body, body_len);
		memcpy(both + body_len, first_reply, first_len);
		body = both;
		body_len += first_len;
	}
	pthread_mutex_lock(&c->lock);
	xid = c->next_xid++;
	e.ack_xid = rpc_ack_xid(c);
	pthread_mutex_unlock(&c->lock);
	rc = rpc_send_frame(r->fd, r->sess, opcode, xid, r->env ? &e : NULL, body, body_len, NULL,
			    0);
	free(both);
	if (rc < 0)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	do { /* a ping's reply may come first */
		free(m->body);
		rc = rpc_read_frame_sync(r->fd, r->sess, r->deadline, &m->hdr, &m->body);
	} while (rc == 0 && m->hdr.xid != xid && m->hdr.xid == PING_XID);
	if (rc == 0 && m->hdr.xid != xid)
		rc = -EPROTO;
	m->body_len = m->hdr.body_len;
	if (rc == 0 && r->env)
		rc = rpc_strip_rep_env(m);
	if (rc < 0) {
		rpc_msg_free(m);
		return rc;
	}
	pthread_mutex_lock(&c->lock);
	rpc_heard(c);
	if (r->env)
		rpc_committed_upto(c, m->env.last_committed);
	pthread_mutex_unlock(&c->lock);
	*reply = m;
	return m->hdr.status;
}

/* One retained request, replayed: its first reply's transno in the envelope, its body after
 * the request's. */
static int replay_one(struct rpc_recovery *r, struct rpc_retained *t)
{
	struct rpc_conn *c = r->c;
	struct wire_req_env e = {.transno = t->transno, .flags = WIRE_ENV_REPLAY,
				 .replay_len = t->reply_len};
	struct rpc_msg *m;
	int rc;

	pthread_mutex_lock(&c->lock);
	e.ack_xid = rpc_ack_xid(c);
	pthread_mutex_unlock(&c->lock);
	rc = rpc_send_frame(r->fd, r->sess, t->opcode, t->open.xid, &e, t->body,
			    t->body_len + t->reply_len,
			    NULL, 0);
	if (rc < 0)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	do {
		free(m->body);
		rc = rpc_read_frame_sync(r->fd, r->sess, r->deadline, &m->hdr, &m->body);
	} while (rc == 0 && m->hdr.xid == PING_XID);
	if (rc == 0 && m->hdr.xid != t->open.xid)
		rc = -EPROTO;
	m->body_len = m->hdr.body_len;
	if (rc == 0)
		rc = rpc_strip_rep_env(m);
	if (rc < 0) {
		rpc_msg_free(m);
		return rc;
	}
	metrics_add(replays_metric(), 1);
	r->replayed++;
	if (m->hdr.status < 0)
		LOG_ERR(SUBSYS, "replay of %s (xid %llu, transno %llu) to %s failed: %s; the "
				"change the application was told of is lost",
			wire_opcode_name(t->opcode), (unsigned long long)t->open.xid,
			(unsigned long long)t->transno, c->addrs[c->cur_addr],
			nacre_strerror(m->hdr.status));
	pthread_mutex_lock(&c->lock);
	rpc_heard(c);
	/* re-executed: it has a new transno (or none, if it failed) */
	t->transno = m->hdr.status < 0 ? 0 : m->env.transno;
	pthread_mutex_unlock(&c->lock);
	rpc_msg_free(m);
	return 0;
}

int rpc_recovery_replay(struct rpc_recovery *r)
{
	struct rpc_conn *c = r->c;
	struct rpc_retained **list, *t;
	int n = 0, rc = 0;

	/* Nobody else touches the retained list while the socket is being recovered (no
	 * replies can arrive), but records may move once replayed: take them out first. */
	pthread_mutex_lock(&c->lock);
	list = calloc((size_t)c->nretained + 1, sizeof(*list));
	if (!list) {
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	while ((t = c->retained) != NULL) {
		c->retained = t->next;
		list[n++] = t;
	}
	c->retained_tail = NULL;
	c->nretained = 0;
	pthread_mutex_unlock(&c->lock);
	if (n)
		LOG_INFO(SUBSYS, "replaying %d requests to %s (%s)", n, c->addrs[c->cur_addr],
			 c->server_name);
	for (int i = 0; i < n; i++) {
		if (rc == 0)
			rc = replay_one(r, list[i]);
		pthread_mutex_lock(&c->lock);
		if (rc == 0 && list[i]->transno == 0) {
			rpc_open_unlink(&list[i]->open);
			retained_free(list[i]);
		} else {
			retained_insert(c, list[i]); /* kept: replayed again if this one fails */
		}
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_lock(&c->lock);
	rpc_committed_upto(c, c->last_committed);
	pthread_mutex_unlock(&c->lock);
	free(list);
	return rc;
}

/* A reconnected session whose server instance changed: bring the server back before any
 * other request may use fd. Returns 0 or a negative error (drop the socket, try again). */
int rpc_run_recovery(struct rpc_conn *c, const char *addr, int fd, struct sec_session *sess,
		     int env, const struct wire_connect_rep *rep)
{
	struct rpc_recovery r = {.c = c, .fd = fd, .sess = sess, .env = env};
	int rc;

	r.deadline = net_now_ms() + c->recovery_ms + (int64_t)rep->recovery_ms;
	LOG_WARN(SUBSYS, "%s (%s) restarted (%s); %s", addr, rep->server_name,
		 rep->session == WIRE_SESSION_RECOVER ? "in recovery"
						       : "it no longer knows this client",
		 rep->session == WIRE_SESSION_RECOVER ? "replaying" : "re-establishing state");
	__atomic_store_n(&c->recovering, 1, __ATOMIC_RELEASE);
	if (c->recover)
		rc = c->recover(c->recover_arg, &r, rep);
	else
		rc = rpc_recovery_replay(&r);
	__atomic_store_n(&c->recovering, 0, __ATOMIC_RELEASE);
	if (rc < 0)
		LOG_WARN(SUBSYS, "recovery with %s interrupted: %s; reconnecting", addr,
			 nacre_strerror(rc));
	else
		LOG_INFO(SUBSYS, "recovery with %s done (%d requests replayed)", addr, r.replayed);
	return rc;
}
