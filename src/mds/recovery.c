/* recovery.c - the recovery window (see recovery.h). */
#include "mds/recovery.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"
#include "common/util.h"
#include "mds/inode.h"
#include "mds/ns.h"
#include "mds/open.h"
#include "mds/session.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"

#define EXTEND_MS 10000 /* more time for clients still working when the window ends... */
#define EXTEND_MAX 3    /* ...up to this many windows in all */

enum cstate {
	C_WAITING,   /* expected, not seen yet */
	C_REPLAYING, /* connected, replaying */
	C_REPLAYED,  /* said its replays are all sent */
	C_COMPLETE,  /* its opens and locks are back too */
	C_EVICTED,   /* did not come back in time */
};

struct rclient {
	uint64_t id;
	char name[NACRE_NAME_MAX + 1];
	enum cstate st;
	uint64_t conn_id;
	int queued;       /* its replays in replay_q */
	uint64_t replays; /* executed (or answered from the reply cache) */
};

struct parked {
	struct parked *next;
	struct rpc_deferred *d;
	uint64_t conn_id, client_id, xid, transno;
	int answer; /* at the end: answer 0 (RECOVERY_DONE) instead of resuming */
};

enum phase { PH_REPLAY, PH_REOPEN, PH_DONE };

struct mds_recovery {
	struct mds *m;
	pthread_mutex_t lock; /* protects everything below but active */
	pthread_cond_t cond;  /* something changed: the thread looks again */
	int active;           /* atomic */
	enum phase phase;
	int64_t start_ms, end_ms, last_progress_ms;
	int64_t start_wall;
	int extended;
	uint32_t duration_s;
	struct rclient *c;
	int nc;
	struct parked *replay_q; /* by transno */
	struct parked *reopen_q; /* re-opens and locks, until every replay is done */
	struct parked *wait_q;   /* everything else, until the end */
	int running;             /* a replay is executing */
	uint64_t run_client, run_xid;
	uint64_t replayed, queued, evicted;
	int finished;            /* the end's work (evictions, orphans) is left to the thread */
	int stop;
	pthread_t thread;
};

static struct rclient *client_of(struct mds_recovery *r, uint64_t id)
{
	for (int i = 0; i < r->nc; i++)
		if (r->c[i].id == id)
			return &r->c[i];
	return NULL;
}

static void push(struct parked **q, struct parked *p)
{
	while (*q)
		q = &(*q)->next;
	p->next = NULL;
	*q = p;
}

static void push_by_transno(struct parked **q, struct parked *p)
{
	while (*q && (*q)->transno <= p->transno)
		q = &(*q)->next;
	p->next = *q;
	*q = p;
}

/* Parks req's request on q. Returns RPC_DEFER, or -ENOMEM. */
static int park(struct mds_recovery *r, struct parked **q, const struct rpc_request *req,
		int by_transno, int answer)
{
	struct parked *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->d = rpc_defer(req);
	p->conn_id = req->conn_id;
	p->client_id = req->client_id;
	p->xid = req->hdr->xid;
	p->transno = req->env ? req->env->transno : 0;
	p->answer = answer;
	if (by_transno)
		push_by_transno(q, p);
	else
		push(q, p);
	r->queued++;
	return RPC_DEFER;
}

/* Moves the whole of q to *out (in order), for resuming after the lock is dropped. */
static void take_all(struct mds_recovery *r, struct parked **q, struct parked **out)
{
	while (*q) {
		struct parked *p = *q;
		*q = p->next;
		r->queued--;
		push(out, p);
	}
}

static void release(struct parked *list)
{
	while (list) {
		struct parked *p = list;
		list = p->next;
		if (p->answer)
			rpc_answer(p->d, 0, NULL, 0, NULL);
		else
			rpc_resume(p->d);
		free(p);
	}
}

/* Runs the phases forward as far as they go. Called with r->lock held; what must be
 * resumed goes to *out. */
static void advance(struct mds_recovery *r, struct parked **out)
{
	if (r->phase == PH_REPLAY && !r->running && r->replay_q) {
		int ready = 1;
		for (int i = 0; i < r->nc; i++) {
			const struct rclient *c = &r->c[i];
			if ((c->st == C_WAITING || c->st == C_REPLAYING) && c->queued == 0)
				ready = 0; /* it may still send an earlier transno */
		}
		if (ready) {
			struct parked *p = r->replay_q;
			struct rclient *c = client_of(r, p->client_id);
			r->replay_q = p->next;
			r->queued--;
			if (c)
				c->queued--;
			r->running = 1;
			r->run_client = p->client_id;
			r->run_xid = p->xid;
			push(out, p);
			return;
		}
	}
	if (r->phase == PH_REPLAY && !r->running && !r->replay_q) {
		int done = 1;
		for (int i = 0; i < r->nc; i++)
			if (r->c[i].st == C_WAITING || r->c[i].st == C_REPLAYING)
				done = 0;
		if (done) {
			r->phase = PH_REOPEN;
			LOG_INFO("recovery", "every replay done (%llu): re-opening files and locks",
				 (unsigned long long)r->replayed);
			take_all(r, &r->reopen_q, out);
		}
	}
	if (r->phase == PH_REOPEN) {
		for (int i = 0; i < r->nc; i++)
			if (r->c[i].st != C_COMPLETE && r->c[i].st != C_EVICTED)
				return;
		r->phase = PH_DONE;
		r->duration_s = (uint32_t)((net_now_ms() - r->start_ms) / 1000);
		take_all(r, &r->replay_q, out); /* late replays of evicted clients */
		take_all(r, &r->wait_q, out);
		r->finished = 1;
		__atomic_store_n(&r->active, 0, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&r->cond);
		LOG_INFO("recovery", "recovery complete in %u s: %d clients, %llu replayed, "
				     "%llu evicted",
			 r->duration_s, r->nc, (unsigned long long)r->replayed,
			 (unsigned long long)r->evicted);
	}
}

/* GETATTR of the root: the kernel checks permissions on the mount root (default_permissions)
 * before it reads a mount's own status xattrs (`nacre recovery-status`), so this one read
 * passes; it may show the root's times as they were before the replays. */
static int is_root_getattr(const struct rpc_request *req)
{
	struct wire_fid_req f;
	struct wire_cursor cur;
	struct nacre_fid root = mds_root_fid();

	if (req->hdr->opcode != WIRE_OP_MDS_GETATTR)
		return 0;
	wire_cursor_init_read(&cur, req->body, req->body_len);
	wire_fid_req_decode(&cur, &f);
	return wire_cursor_ok(&cur) && fid_eq(&f.fid, &root);
}

int mds_recovery_admit(struct mds_recovery *r, const struct rpc_request *req)
{
	uint16_t op = req->hdr->opcode;
	uint32_t flags = req->env ? req->env->flags : 0;
	struct parked *out = NULL;
	struct rclient *c;
	int rc;

	if (!mds_recovery_active(r) || wire_op_has(op, WIRE_OPF_RECOVERY_PASS) || is_root_getattr(req))
		return MDS_RECOVERY_PASS;
	pthread_mutex_lock(&r->lock);
	if (r->phase == PH_DONE) {
		pthread_mutex_unlock(&r->lock);
		return MDS_RECOVERY_PASS;
	}
	c = req->client_id ? client_of(r, req->client_id) : NULL;
	if (c && c->st == C_EVICTED)
		c = NULL;
	if (c) {
		if (c->st == C_WAITING) {
			c->st = C_REPLAYING;
			LOG_INFO("recovery", "client %s (%016llx) is back", c->name,
				 (unsigned long long)c->id);
		}
		c->conn_id = req->conn_id;
		r->last_progress_ms = net_now_ms();
	}
	if (op == WIRE_OP_MDS_RECOVERY_DONE) {
		struct wire_recovery_done_req d;
		struct wire_cursor cur;
		wire_cursor_init_read(&cur, req->body, req->body_len);
		wire_recovery_done_req_decode(&cur, &d);
		if (!wire_cursor_ok(&cur) || wire_cursor_left(&cur)) {
			rc = -EPROTO;
		} else if (d.stage == WIRE_RECOVERY_REPLAYED) {
			if (c && c->st < C_REPLAYED)
				c->st = C_REPLAYED;
			rc = 0;
		} else {
			if (c && c->st != C_COMPLETE) {
				c->st = C_COMPLETE;
				LOG_INFO("recovery", "client %s (%016llx) recovered: %llu requests "
						     "replayed, its opens and locks back",
					 c->name, (unsigned long long)c->id,
					 (unsigned long long)c->replays);
			}
			rc = park(r, &r->wait_q, req, 0, 1); /* answered at the end */
		}
		advance(r, &out);
		pthread_mutex_unlock(&r->lock);
		release(out);
		return rc;
	}
	if (c && (flags & WIRE_ENV_REPLAY) && !wire_op_has(op, WIRE_OPF_REOPEN) && r->phase == PH_REPLAY) {
		if (req->resumed && r->running && r->run_client == c->id &&
		    r->run_xid == req->hdr->xid) {
			pthread_mutex_unlock(&r->lock);
			return MDS_RECOVERY_PASS; /* its turn */
		}
		rc = park(r, &r->replay_q, req, 1, 0);
		if (rc == RPC_DEFER)
			c->queued++;
		advance(r, &out);
		pthread_mutex_unlock(&r->lock);
		release(out);
		return rc;
	}
	if (c && (flags & WIRE_ENV_REPLAY) && wire_op_has(op, WIRE_OPF_REOPEN)) {
		rc = r->phase == PH_REPLAY ? park(r, &r->reopen_q, req, 0, 0) : MDS_RECOVERY_PASS;
		pthread_mutex_unlock(&r->lock);
		return rc;
	}
	rc = park(r, &r->wait_q, req, 0, 0);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int mds_recovery_expects(struct mds_recovery *r, uint64_t client_id)
{
	int yes = 0;

	if (!mds_recovery_active(r) || !client_id)
		return 0;
	pthread_mutex_lock(&r->lock);
	struct rclient *c = client_of(r, client_id);
	yes = r->phase != PH_DONE && c && c->st != C_EVICTED && c->st != C_COMPLETE;
	pthread_mutex_unlock(&r->lock);
	return yes;
}

void mds_recovery_replay_done(struct mds_recovery *r, uint64_t client_id, uint64_t xid)
{
	struct parked *out = NULL;

	pthread_mutex_lock(&r->lock);
	if (r->running && r->run_client == client_id && r->run_xid == xid) {
		struct rclient *c = client_of(r, client_id);
		r->running = 0;
		r->replayed++;
		if (c)
			c->replays++;
		r->last_progress_ms = net_now_ms();
		advance(r, &out);
	}
	pthread_mutex_unlock(&r->lock);
	release(out);
}

/* Answers (drops) and removes the requests of conn_id parked on q. */
static void drop_conn(struct mds_recovery *r, struct parked **q, uint64_t conn_id,
		      struct parked **out)
{
	while (*q) {
		struct parked *p = *q;
		if (p->conn_id != conn_id) {
			q = &p->next;
			continue;
		}
		*q = p->next;
		r->queued--;
		struct rclient *c = client_of(r, p->client_id);
		if (c && q != &r->wait_q && c->queued > 0 && p->transno)
			c->queued--;
		p->answer = 1; /* the connection is gone: the answer goes nowhere */
		push(out, p);
	}
}

void mds_recovery_disconnect(struct mds_recovery *r, uint64_t conn_id)
{
	struct parked *out = NULL, *more = NULL;

	if (!mds_recovery_active(r))
		return;
	pthread_mutex_lock(&r->lock);
	drop_conn(r, &r->replay_q, conn_id, &out);
	drop_conn(r, &r->reopen_q, conn_id, &out);
	drop_conn(r, &r->wait_q, conn_id, &out);
	for (int i = 0; i < r->nc; i++) {
		struct rclient *c = &r->c[i];
		if (c->conn_id == conn_id && c->st != C_COMPLETE && c->st != C_EVICTED) {
			c->st = C_WAITING; /* it starts over when it reconnects */
			c->queued = 0;
		}
	}
	advance(r, &more);
	pthread_mutex_unlock(&r->lock);
	release(out);
	release(more);
}

void mds_recovery_connect(struct mds_recovery *r, uint64_t client_id, uint32_t *session,
			  uint32_t *left_ms)
{
	struct rclient *c;

	if (!mds_recovery_active(r))
		return;
	pthread_mutex_lock(&r->lock);
	c = client_of(r, client_id);
	if (r->phase != PH_DONE) {
		int64_t left = r->end_ms - net_now_ms();
		*left_ms = left > 0 ? (uint32_t)left : 1;
		if (c && c->st != C_EVICTED && c->st != C_COMPLETE)
			*session = WIRE_SESSION_RECOVER;
	}
	pthread_mutex_unlock(&r->lock);
}

void mds_recovery_status(struct mds_recovery *r, struct wire_recovery_status *out)
{
	memset(out, 0, sizeof(*out));
	if (!r)
		return; /* no window was ever opened: COMPLETE */
	pthread_mutex_lock(&r->lock);
	out->state = r->phase == PH_DONE ? WIRE_RECOVERY_STATE_COMPLETE
					 : WIRE_RECOVERY_STATE_RECOVERING;
	out->start = r->start_wall;
	out->duration_s = r->phase == PH_DONE ? r->duration_s
					      : (uint32_t)((net_now_ms() - r->start_ms) / 1000);
	if (r->phase != PH_DONE && r->end_ms > net_now_ms())
		out->time_left_s = (uint32_t)((r->end_ms - net_now_ms() + 999) / 1000);
	out->clients_expected = (uint32_t)r->nc;
	for (int i = 0; i < r->nc; i++) {
		enum cstate st = r->c[i].st;
		out->clients_connected += st != C_WAITING && st != C_EVICTED;
		out->clients_replayed += st == C_REPLAYED || st == C_COMPLETE;
		out->clients_completed += st == C_COMPLETE;
		out->clients_evicted += st == C_EVICTED;
	}
	out->replayed = r->replayed;
	out->queued = r->queued;
	pthread_mutex_unlock(&r->lock);
	out->last_transno = mds_writer_last_transno(r->m->writer);
	out->last_committed = mds_writer_last_committed(r->m->writer);
}

int mds_recovery_active(const struct mds_recovery *r)
{
	return r && __atomic_load_n(&r->active, __ATOMIC_ACQUIRE);
}

/* The window ended with clients missing (missing_only: those that never came back; else
 * every one not finished too): evict them, so that the others go on. Called with r->lock
 * held (dropped while evicting). */
static void window_ended(struct mds_recovery *r, int missing_only)
{
	struct parked *out = NULL;

	for (int i = 0; i < r->nc; i++) {
		struct rclient *c = &r->c[i];
		uint64_t id;
		if (c->st == C_COMPLETE || c->st == C_EVICTED || (missing_only && c->st != C_WAITING))
			continue;
		c->st = C_EVICTED;
		c->queued = 0;
		r->evicted++;
		id = c->id;
		LOG_WARN("recovery", "client %s (%016llx) did not finish recovery within the "
				     "window: evicted",
			 c->name, (unsigned long long)id);
		pthread_mutex_unlock(&r->lock);
		mds_session_evict(r->m->sessions, id, "did not come back within the recovery window");
		pthread_mutex_lock(&r->lock);
	}
	/* its parked replays run as late ones now */
	for (struct parked **q = &r->replay_q; *q;) {
		struct parked *p = *q;
		struct rclient *c = client_of(r, p->client_id);
		if (c && c->st == C_EVICTED) {
			*q = p->next;
			r->queued--;
			push(&out, p);
		} else {
			q = &p->next;
		}
	}
	advance(r, &out);
	pthread_mutex_unlock(&r->lock);
	release(out);
	pthread_mutex_lock(&r->lock);
}

static void *recovery_main(void *arg)
{
	struct mds_recovery *r = arg;

	pthread_mutex_lock(&r->lock);
	while (!r->stop && r->phase != PH_DONE) {
		int64_t now = net_now_ms();
		if (now >= r->end_ms) {
			int working = 0, missing = 0;
			for (int i = 0; i < r->nc; i++) {
				working |= r->c[i].st == C_REPLAYING || r->c[i].st == C_REPLAYED;
				missing |= r->c[i].st == C_WAITING;
			}
			/* those that came back may be waiting for the missing ones (their
			 * re-opens wait for every replay): those go first */
			if (missing) {
				window_ended(r, 1);
				r->last_progress_ms = net_now_ms(); /* they may go on from now */
				continue;
			}
			if (working && now - r->last_progress_ms < EXTEND_MS &&
			    r->extended < EXTEND_MAX) {
				r->extended++;
				r->end_ms = now + EXTEND_MS;
				LOG_INFO("recovery", "clients are still recovering: window extended "
						     "by %d s",
					 EXTEND_MS / 1000);
				continue;
			}
			window_ended(r, 0);
			continue;
		}
		struct timespec ts;
		int64_t wait = r->end_ms - now;
		if (wait > 1000)
			wait = 1000;
		time_after_ms(&ts, CLOCK_REALTIME, wait);
		pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	}
	int finished = r->finished && !r->stop;
	pthread_mutex_unlock(&r->lock);
	if (finished) {
		/* unlinked files that nobody re-opened go now */
		int rc = mds_ns_reap_orphans(r->m);
		if (rc)
			LOG_ERR("recovery", "cannot destroy the orphans left after recovery: %s",
				nacre_strerror(rc));
	}
	return NULL;
}

static void add_expected(void *arg, uint64_t id, const char *name)
{
	struct mds_recovery *r = arg;
	struct rclient *v = realloc(r->c, (size_t)(r->nc + 1) * sizeof(*v));

	if (!v)
		return; /* it is simply not waited for */
	r->c = v;
	memset(&v[r->nc], 0, sizeof(v[r->nc]));
	v[r->nc].id = id;
	str_copy(v[r->nc].name, name, sizeof(v[r->nc].name));
	r->nc++;
}

int mds_recovery_create(struct mds *m, int window_ms, struct mds_recovery **out)
{
	struct mds_recovery *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->m = m;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->phase = PH_DONE;
	if (m->sessions)
		mds_sessions_expected(m->sessions, add_expected, r);
	if (r->nc) {
		r->phase = PH_REPLAY;
		r->start_ms = r->last_progress_ms = net_now_ms();
		r->start_wall = time(NULL);
		r->end_ms = r->start_ms + (window_ms > 0 ? window_ms : MDS_RECOVERY_WINDOW_MS_DEFAULT);
		r->active = 1;
		LOG_INFO("recovery", "waiting up to %d s for %d clients to recover",
			 (int)((r->end_ms - r->start_ms) / 1000), r->nc);
		if (pthread_create(&r->thread, NULL, recovery_main, r) != 0) {
			mds_recovery_destroy(r);
			return -EAGAIN;
		}
	}
	*out = r;
	return 0;
}

void mds_recovery_destroy(struct mds_recovery *r)
{
	struct parked *out = NULL;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	int joinable = r->nc && r->thread;
	r->stop = 1;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	if (joinable)
		pthread_join(r->thread, NULL);
	/* the server has stopped: what is still parked is only freed */
	take_all(r, &r->replay_q, &out);
	take_all(r, &r->reopen_q, &out);
	take_all(r, &r->wait_q, &out);
	while (out) {
		struct parked *p = out;
		out = p->next;
		free(p);
	}
	free(r->c);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}
