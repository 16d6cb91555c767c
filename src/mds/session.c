/* session.c - client sessions (see session.h). */
#include "mds/session.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"
#include "common/util.h"
#include "mds/db.h"
#include "mds/ns.h"
#include "mds/open.h"
#include "mds/targets.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"

#define BUCKETS 1024
#define TRIM_STEP 32     /* acknowledged xids before a change also trims the reply cache */
#define OPEN_MEMO_MAX 64 /* OPEN xids remembered per session (resent OPENs) */
#define OWNER_BIT (1ull << 63)
#define STALL_MS 3000    /* a reaper tick this late means the MDS itself was stopped */

struct inprog {
	uint64_t xid;
	struct rpc_deferred **waiters; /* resends of the same xid, resumed at its end */
	int nwaiters;
};

struct open_memo {
	uint64_t xid, handle;
};

struct session {
	uint64_t id;
	char name[NACRE_NAME_MAX + 1];
	uint64_t conn_id; /* the connection it last used */
	int64_t gone_ms;  /* when that connection closed; 0 while connected */
	int persisted;    /* has its record in the clients table */
	uint64_t acked, trimmed;
	struct inprog *inprog;
	int ninprog, capinprog;
	struct open_memo memo[OPEN_MEMO_MAX];
	int nmemo;
	struct session *next;
};

struct mds_sessions {
	struct mds *m;
	int evict_ms;
	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t cond;  /* stop */
	struct session *b[BUCKETS];
	uint64_t n;
	int stop;
	int64_t tick_ms; /* the reaper's last look (atomic): a late one means a stall */
	pthread_t reaper;
};

uint64_t mds_owner_of(const struct rpc_request *req)
{
	return req->client_id ? req->client_id | OWNER_BIT : req->conn_id;
}

int mds_owner_is_session(uint64_t owner)
{
	return (owner & OWNER_BIT) != 0;
}

uint64_t mds_owner_client_id(uint64_t owner)
{
	return owner & ~OWNER_BIT;
}

static struct session **slot(struct mds_sessions *ss, uint64_t id)
{
	struct session **pp = &ss->b[(id ^ (id >> 29)) % BUCKETS];

	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next;
	return pp;
}

static struct session *session_new(struct mds_sessions *ss, uint64_t id, const char *name)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->id = id;
	str_copy(s->name, name && name[0] ? name : "?", sizeof(s->name));
	*slot(ss, id) = s;
	ss->n++;
	return s;
}

static void session_free(struct session *s)
{
	for (int i = 0; i < s->ninprog; i++)
		free(s->inprog[i].waiters);
	free(s->inprog);
	free(s);
}

static int load_one(void *arg, uint64_t id, const char *name)
{
	struct mds_sessions *ss = arg;
	struct session *s = session_new(ss, id, name);

	if (!s)
		return -ENOMEM;
	s->persisted = 1;
	return 0;
}

struct del_arg {
	uint64_t id;
};

static int del_op(struct mds_txn *txn, void *arg)
{
	return mds_db_client_del(txn, ((struct del_arg *)arg)->id);
}

struct put_arg {
	uint64_t id;
	const char *name;
};

static int put_op(struct mds_txn *txn, void *arg)
{
	struct put_arg *p = arg;
	return mds_db_client_put(txn, p->id, p->name);
}

/* The MDS did not run since the reaper's last tick (SIGSTOP, a frozen VM): nobody's
 * heartbeat counted, so OSTs and disconnected clients get their time again. Whoever runs
 * first after the stall (the reaper, or a create about to allocate OSTs) handles it.
 * Caller holds ss->lock. */
static void tick(struct mds_sessions *ss, int64_t now)
{
	int64_t last = __atomic_load_n(&ss->tick_ms, __ATOMIC_RELAXED);

	if (now - last > STALL_MS && ss->m->targets) {
		LOG_WARN("session", "the MDS did not run for %lld s: OSTs and clients get "
				    "time to check in again",
			 (long long)((now - last) / 1000));
		mds_targets_grace(ss->m->targets);
		for (int i = 0; i < BUCKETS; i++)
			for (struct session *s = ss->b[i]; s; s = s->next)
				if (s->gone_ms)
					s->gone_ms = now;
	}
	__atomic_store_n(&ss->tick_ms, now, __ATOMIC_RELAXED);
}

void mds_sessions_check_stall(struct mds_sessions *ss)
{
	int64_t now = net_now_ms();

	if (!ss || now - __atomic_load_n(&ss->tick_ms, __ATOMIC_RELAXED) <= STALL_MS)
		return;
	pthread_mutex_lock(&ss->lock);
	tick(ss, now);
	pthread_mutex_unlock(&ss->lock);
}

/* Evicts the sessions whose connection is gone longer than evict_ms. */
static void *reaper_main(void *arg)
{
	struct mds_sessions *ss = arg;

	pthread_mutex_lock(&ss->lock);
	while (!ss->stop) {
		struct timespec ts;
		uint64_t victim = 0;
		int64_t now = net_now_ms(), gone = 0;

		tick(ss, now);

		for (int i = 0; i < BUCKETS && !victim; i++)
			for (struct session *s = ss->b[i]; s && !victim; s = s->next)
				if (s->gone_ms && now - s->gone_ms >= ss->evict_ms) {
					victim = s->id;
					gone = now - s->gone_ms;
				}
		if (victim) {
			char why[96];
			pthread_mutex_unlock(&ss->lock);
			snprintf(why, sizeof(why), "no connection for %lld s",
				 (long long)(gone / 1000));
			mds_session_evict(ss, victim, why);
			pthread_mutex_lock(&ss->lock);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&ss->cond, &ss->lock, &ts);
	}
	pthread_mutex_unlock(&ss->lock);
	return NULL;
}

int mds_sessions_create(struct mds *m, int evict_ms, struct mds_sessions **out)
{
	struct mds_sessions *ss = calloc(1, sizeof(*ss));
	struct mds_txn *txn;
	int rc;

	if (!ss)
		return -ENOMEM;
	ss->m = m;
	ss->evict_ms = evict_ms > 0 ? evict_ms : MDS_EVICT_MS_DEFAULT;
	pthread_mutex_init(&ss->lock, NULL);
	pthread_cond_init(&ss->cond, NULL);
	ss->tick_ms = net_now_ms();
	rc = mds_txn_begin_read(m->db, &txn);
	if (!rc) {
		rc = mds_db_client_iter(txn, load_one, ss);
		mds_txn_abort(txn);
	}
	if (!rc && pthread_create(&ss->reaper, NULL, reaper_main, ss) != 0)
		rc = -EAGAIN;
	if (rc) {
		ss->stop = 1;
		mds_sessions_destroy(ss);
		return rc;
	}
	*out = ss;
	return 0;
}

void mds_sessions_destroy(struct mds_sessions *ss)
{
	if (!ss)
		return;
	pthread_mutex_lock(&ss->lock);
	int running = !ss->stop;
	ss->stop = 1;
	pthread_cond_broadcast(&ss->cond);
	pthread_mutex_unlock(&ss->lock);
	if (running)
		pthread_join(ss->reaper, NULL);
	for (int i = 0; i < BUCKETS; i++)
		for (struct session *s = ss->b[i], *n; s; s = n) {
			n = s->next;
			session_free(s);
		}
	pthread_mutex_destroy(&ss->lock);
	pthread_cond_destroy(&ss->cond);
	free(ss);
}

uint32_t mds_session_state(struct mds_sessions *ss, uint64_t client_id)
{
	uint32_t st;

	pthread_mutex_lock(&ss->lock);
	st = *slot(ss, client_id) ? WIRE_SESSION_KNOWN : WIRE_SESSION_NEW;
	pthread_mutex_unlock(&ss->lock);
	return st;
}

int mds_session_touch(struct mds_sessions *ss, uint64_t client_id, uint64_t conn_id,
		      const char *name, uint64_t ack_xid, struct mds_session_view *out)
{
	struct session *s;

	pthread_mutex_lock(&ss->lock);
	s = *slot(ss, client_id);
	if (!s) {
		s = session_new(ss, client_id, name);
		if (!s) {
			pthread_mutex_unlock(&ss->lock);
			return -ENOMEM;
		}
		LOG_INFO("session", "new client %s (%016llx)", s->name,
			 (unsigned long long)client_id);
	}
	if (s->conn_id != conn_id && s->conn_id && s->gone_ms)
		LOG_INFO("session", "client %s (%016llx) is back after %lld ms", s->name,
			 (unsigned long long)client_id, (long long)(net_now_ms() - s->gone_ms));
	s->conn_id = conn_id;
	s->gone_ms = 0;
	if (ack_xid > s->acked) {
		int keep = 0;
		s->acked = ack_xid;
		for (int i = 0; i < s->nmemo; i++)
			if (s->memo[i].xid >= ack_xid)
				s->memo[keep++] = s->memo[i];
		s->nmemo = keep;
	}
	out->persisted = s->persisted;
	out->trim_below = s->acked >= s->trimmed + TRIM_STEP ? s->acked : 0;
	pthread_mutex_unlock(&ss->lock);
	return 0;
}

void mds_session_committed(struct mds_sessions *ss, uint64_t client_id, int persisted,
			   uint64_t trimmed)
{
	struct session *s;

	pthread_mutex_lock(&ss->lock);
	s = *slot(ss, client_id);
	if (s) {
		s->persisted |= persisted;
		if (trimmed > s->trimmed)
			s->trimmed = trimmed;
	}
	pthread_mutex_unlock(&ss->lock);
}

int mds_session_persist(struct mds_sessions *ss, uint64_t client_id)
{
	char name[NACRE_NAME_MAX + 1];
	struct session *s;
	int rc;

	pthread_mutex_lock(&ss->lock);
	s = *slot(ss, client_id);
	if (!s || s->persisted) {
		pthread_mutex_unlock(&ss->lock);
		return s ? 0 : -ENOENT;
	}
	str_copy(name, s->name, sizeof(name));
	pthread_mutex_unlock(&ss->lock);
	struct put_arg p = {client_id, name};
	rc = mds_writer_submit(ss->m->writer, put_op, &p);
	if (!rc)
		mds_session_committed(ss, client_id, 1, 0);
	return rc;
}

static struct inprog *inprog_find(struct session *s, uint64_t xid)
{
	for (int i = 0; i < s->ninprog; i++)
		if (s->inprog[i].xid == xid)
			return &s->inprog[i];
	return NULL;
}

int mds_session_begin(struct mds_sessions *ss, uint64_t client_id, uint64_t xid,
		      struct rpc_deferred *d)
{
	struct session *s;
	struct inprog *ip;
	int rc = 0;

	pthread_mutex_lock(&ss->lock);
	s = *slot(ss, client_id);
	if (!s)
		goto out;
	ip = inprog_find(s, xid);
	if (ip && !d) {
		rc = 1;
		goto out;
	}
	if (ip) {
		struct rpc_deferred **w = realloc(ip->waiters, (size_t)(ip->nwaiters + 1) * sizeof(*w));
		if (w) {
			ip->waiters = w;
			w[ip->nwaiters++] = d;
			rc = 1;
		}
		goto out;
	}
	if (s->ninprog == s->capinprog) {
		int cap = s->capinprog ? s->capinprog * 2 : 8;
		struct inprog *v = realloc(s->inprog, (size_t)cap * sizeof(*v));
		if (!v)
			goto out; /* untracked: a concurrent resend would run twice, as without */
		s->inprog = v;
		s->capinprog = cap;
	}
	s->inprog[s->ninprog++] = (struct inprog){.xid = xid};
out:
	pthread_mutex_unlock(&ss->lock);
	return rc;
}

void mds_session_end(struct mds_sessions *ss, uint64_t client_id, uint64_t xid)
{
	struct session *s;
	struct inprog done = {0};

	pthread_mutex_lock(&ss->lock);
	s = *slot(ss, client_id);
	struct inprog *ip = s ? inprog_find(s, xid) : NULL;
	if (ip) {
		done = *ip;
		*ip = s->inprog[--s->ninprog];
	}
	pthread_mutex_unlock(&ss->lock);
	for (int i = 0; i < done.nwaiters; i++)
		rpc_resume(done.waiters[i]); /* they find the reply-cache record now */
	free(done.waiters);
}

uint64_t mds_session_open_handle(struct mds_sessions *ss, uint64_t client_id, uint64_t xid)
{
	struct session *s;
	uint64_t h = 0;

	pthread_mutex_lock(&ss->lock);
	s = *slot(ss, client_id);
	for (int i = 0; s && i < s->nmemo; i++)
		if (s->memo[i].xid == xid)
			h = s->memo[i].handle;
	pthread_mutex_unlock(&ss->lock);
	return h;
}

void mds_session_open_done(struct mds_sessions *ss, uint64_t client_id, uint64_t xid,
			   uint64_t handle)
{
	struct session *s;

	pthread_mutex_lock(&ss->lock);
	s = *slot(ss, client_id);
	if (s) {
		int i = 0;
		while (i < s->nmemo && s->memo[i].xid != xid)
			i++;
		if (i == s->nmemo) {
			if (s->nmemo == OPEN_MEMO_MAX) /* forget the oldest */
				memmove(s->memo, s->memo + 1, --s->nmemo * sizeof(s->memo[0]));
			i = s->nmemo++;
		}
		s->memo[i] = (struct open_memo){xid, handle};
	}
	pthread_mutex_unlock(&ss->lock);
}

void mds_session_disconnect(struct mds_sessions *ss, uint64_t conn_id)
{
	pthread_mutex_lock(&ss->lock);
	for (int i = 0; i < BUCKETS; i++)
		for (struct session *s = ss->b[i]; s; s = s->next)
			if (s->conn_id == conn_id && !s->gone_ms)
				s->gone_ms = net_now_ms();
	pthread_mutex_unlock(&ss->lock);
}

void mds_session_evict_conn(struct mds_sessions *ss, uint64_t conn_id, const char *why)
{
	uint64_t id = 0;

	pthread_mutex_lock(&ss->lock);
	for (int i = 0; i < BUCKETS && !id; i++)
		for (struct session *s = ss->b[i]; s && !id; s = s->next)
			if (s->conn_id == conn_id && s->gone_ms)
				id = s->id;
	pthread_mutex_unlock(&ss->lock);
	if (id)
		mds_session_evict(ss, id, why);
}

int mds_session_evict(struct mds_sessions *ss, uint64_t client_id, const char *why)
{
	struct mds *m = ss->m;
	struct session **pp, *s;
	struct del_arg d = {client_id};
	int rc = 0;

	pthread_mutex_lock(&ss->lock);
	pp = slot(ss, client_id);
	s = *pp;
	if (s) {
		*pp = s->next;
		ss->n--;
	}
	pthread_mutex_unlock(&ss->lock);
	if (!s)
		return -ENOENT;
	/* its locks have their own clock (lock.c, --lock-evict-timeout): they are the mount's
	 * lock client's, which outlives a session across nacre-mount --upgrade */
	mds_ns_disconnect(m, client_id | OWNER_BIT);
	if (s->persisted)
		rc = mds_writer_submit(m->writer, del_op, &d);
	LOG_INFO("session", "evicted client %s (%016llx): %s", s->name,
		 (unsigned long long)client_id, why);
	session_free(s);
	return rc;
}

void mds_sessions_expected(struct mds_sessions *ss,
			   void (*fn)(void *arg, uint64_t client_id, const char *name), void *arg)
{
	pthread_mutex_lock(&ss->lock);
	for (int i = 0; i < BUCKETS; i++)
		for (struct session *s = ss->b[i]; s; s = s->next)
			if (s->persisted)
				fn(arg, s->id, s->name);
	pthread_mutex_unlock(&ss->lock);
}

uint64_t mds_sessions_count(struct mds_sessions *ss)
{
	uint64_t n;

	pthread_mutex_lock(&ss->lock);
	n = ss->n;
	pthread_mutex_unlock(&ss->lock);
	return n;
}
