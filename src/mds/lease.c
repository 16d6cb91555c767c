/* lease.c - write-back leases on directories (see lease.h). */
#include "mds/lease.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "common/fid.h"
#include "common/log.h"
#include "common/net.h"
#include "common/util.h"
#include "mds/nodemap.h"
#include "mds/notify.h"
#include "mds/acl.h"
#include "mds/db.h"
#include "mds/perm.h"
#include "mds/recovery.h"
#include "mds/req_fids.h"
#include "mds/session.h"
#include "proto/wire.h"

#define BUCKETS 4096
#define TICK_MS 100
#define SWEEP_MS 1000 /* how often leases of closed connections are looked for */

/* A request waiting for a lease to be given back. */
struct parked {
	struct parked *next;
	struct rpc_deferred *d;
	uint64_t conn_id;
};

struct lease {
	struct lease *next;      /* hash chain */
	struct lease *rnext;     /* the recalling list, while recalled */
	struct nacre_fid fid;    /* the directory */
	uint64_t owner;          /* mds_owner_of the holder */
	uint64_t conn_id;        /* where the holder listens for the recall */
	int64_t recall_ms;       /* when it was recalled; 0: not recalled */
	int undelivered;         /* the recall found the holder not listening (yet: a
				  * reclaimer polls after its recovery): sent again each tick */
	int64_t closed_ms;       /* when the holder's connection closed; 0: open */
	struct parked *waiters;  /* in arrival order */
};

struct mds_leases {
	struct mds *m;
	pthread_mutex_t lock;    /* protects everything below */
	pthread_cond_t cond;     /* the timer's sleep */
	struct lease *b[BUCKETS];
	struct lease *recalling; /* recalled and not given back yet */
	uint64_t held;           /* atomic: leases in the table */
	int closed;              /* some holder's connection closed: sweep_closed has work */
	int64_t next_sweep_ms;
	struct mds_lease_stats st;
	int stop;
	pthread_t thread;
};

static struct lease **slot(struct mds_leases *l, const struct nacre_fid *fid)
{
	struct lease **pp = &l->b[fid_hash(fid) % BUCKETS];

	while (*pp && !fid_eq(&(*pp)->fid, fid))
		pp = &(*pp)->next;
	return pp;
}

static void recalling_unlink(struct mds_leases *l, struct lease *e)
{
	for (struct lease **pp = &l->recalling; *pp; pp = &(*pp)->rnext) {
		if (*pp == e) {
			*pp = e->rnext;
			return;
		}
	}
}

/* Takes e out of the table; its waiters go on *resume. With l->lock held. */
static void lease_end(struct mds_leases *l, struct lease *e, struct parked **resume)
{
	struct lease **pp = slot(l, &e->fid);
	struct parked **tail = resume;

	if (*pp == e)
		*pp = e->next;
	if (e->recall_ms)
		recalling_unlink(l, e);
	while (*tail)
		tail = &(*tail)->next;
	*tail = e->waiters;
	__atomic_store_n(&l->held, l->held - 1, __ATOMIC_RELEASE);
	free(e);
}

static void resume_all(struct parked *q)
{
	while (q) {
		struct parked *p = q;
		q = p->next;
		rpc_resume(p->d);
		free(p);
	}
}

/* The moment a recalled lease is void: the holder's WIRE_LEASE_MS after its connection
 * closed (it renews nothing since), else WIRE_LEASE_RECALL_MS after the recall. */
static int64_t deadline_of(const struct lease *e)
{
	int64_t d = e->recall_ms + WIRE_LEASE_RECALL_MS;

	if (e->closed_ms && e->closed_ms + WIRE_LEASE_MS < d)
		d = e->closed_ms + WIRE_LEASE_MS;
	return d;
}

/* Ends the leases whose holder's connection closed WIRE_LEASE_MS ago: void on its side
 * (no renewal since), wanted or not; a session evicted after a disconnect leaves no lease
 * behind. With l->lock held. */
static void sweep_closed(struct mds_leases *l, int64_t now, struct parked **resume)
{
	l->closed = 0;
	for (int i = 0; i < BUCKETS; i++) {
		struct lease *e = l->b[i];
		while (e) {
			struct lease *next = e->next;
			if (e->closed_ms && now >= e->closed_ms + WIRE_LEASE_MS) {
				l->st.expired++;
				lease_end(l, e, resume);
			} else if (e->closed_ms) {
				l->closed = 1; /* its turn comes */
			}
			e = next;
		}
	}
}

/* Ends the recalls past their deadline; the owners to evict go to evict (up to max). A
 * recall not delivered yet is sent again. With l->lock held. */
static int expire(struct mds_leases *l, int64_t now, struct parked **resume, uint64_t *evict,
		  int max)
{
	int n = 0;
	struct lease *e = l->recalling;

	while (e) {
		struct lease *next = e->rnext;
		if (e->undelivered && !e->closed_ms)
			e->undelivered = mds_notify_recall(l->m, e->conn_id, &e->fid) != 0;
		if (now >= deadline_of(e)) {
			char f[NACRE_FID_STR_MAX];
			fid_format(&e->fid, f, sizeof(f));
			if (e->closed_ms) {
				l->st.expired++;
				LOG_INFO("lease", "the write-back lease on %s ended with its holder's "
					 "connection", f);
			} else {
				l->st.evicted++;
				LOG_WARN("lease", "the holder of the write-back lease on %s did not give "
					 "it back within %d ms of its recall: evicting it", f,
					 WIRE_LEASE_RECALL_MS);
				int seen = 0;
				for (int i = 0; i < n; i++)
					seen |= evict[i] == e->owner;
				if (!seen && n < max)
					evict[n++] = e->owner;
			}
			lease_end(l, e, resume);
		}
		e = next;
	}
	return n;
}

#define EVICT_MAX 16

static void *timer_main(void *arg)
{
	struct mds_leases *l = arg;

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		struct timespec ts;
		struct parked *resume = NULL;
		uint64_t evict[EVICT_MAX];

		time_after_ms(&ts, CLOCK_REALTIME, TICK_MS);
		pthread_cond_timedwait(&l->cond, &l->lock, &ts);
		int64_t now = net_now_ms();
		int n = expire(l, now, &resume, evict, EVICT_MAX);
		if (l->closed && now >= l->next_sweep_ms) {
			l->next_sweep_ms = now + SWEEP_MS;
			sweep_closed(l, now, &resume);
		}
		if (!resume && !n)
			continue;
		pthread_mutex_unlock(&l->lock);
		/* the session first: the requests resumed must not find its handles or locks;
		 * its other leases end with it */
		for (int i = 0; i < n; i++) {
			if (l->m->sessions && mds_owner_is_session(evict[i]))
				mds_session_evict(l->m->sessions, mds_owner_client_id(evict[i]),
						  "did not give back a write-back lease");
			mds_lease_drop_owner(l, evict[i]);
		}
		resume_all(resume);
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int mds_leases_create(struct mds *m, struct mds_leases **out)
{
	struct mds_leases *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->m = m;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	if (pthread_create(&l->thread, NULL, timer_main, l) != 0) {
		pthread_cond_destroy(&l->cond);
		pthread_mutex_destroy(&l->lock);
		free(l);
		return -EAGAIN;
	}
	*out = l;
	return 0;
}

void mds_leases_stop(struct mds_leases *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	int joined = l->stop;
	l->stop = 1;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	if (!joined)
		pthread_join(l->thread, NULL);
}

void mds_leases_destroy(struct mds_leases *l)
{
	if (!l)
		return;
	mds_leases_stop(l);
	for (int i = 0; i < BUCKETS; i++) {
		while (l->b[i]) {
			struct lease *e = l->b[i];
			l->b[i] = e->next;
			while (e->waiters) { /* freed with the transport, which is gone */
				struct parked *p = e->waiters;
				e->waiters = p->next;
				free(p);
			}
			free(e);
		}
	}
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* Adds a lease on fid for owner on conn_id. 0, -EAGAIN (table full) or -ENOMEM. With
 * l->lock held; fid is not in the table. */
static int lease_add(struct mds_leases *l, const struct nacre_fid *fid, uint64_t owner,
		     uint64_t conn_id)
{
	struct lease *e;

	if (l->held >= MDS_LEASE_MAX)
		return -EAGAIN;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->fid = *fid;
	e->owner = owner;
	e->conn_id = conn_id;
	e->next = l->b[fid_hash(fid) % BUCKETS];
	l->b[fid_hash(fid) % BUCKETS] = e;
	__atomic_store_n(&l->held, l->held + 1, __ATOMIC_RELEASE);
	return 0;
}

static int lease_get(struct mds *m, const struct rpc_request *req, const struct wire_lease_req *r,
		     struct wire_lease_rep *out)
{
	struct mds_leases *l = m->leases;
	uint64_t owner = mds_owner_of(req);
	/* a reclaim: what this client held when the MDS went away, asked back in its
	 * recovery, before any other client's request runs (wire.h, LEASE) */
	int reclaim = req->env && (req->env->flags & WIRE_ENV_REPLAY);
	struct mds_inode ino;
	struct mds_txn *txn;
	int rc;

	if (!req->client_id)
		return -EPROTO; /* leases are a client id's (WIRE_FEAT_RECOVERY) */
	if (reclaim && !mds_recovery_expects(m->recovery, req->client_id))
		return -ESTALE; /* too late: others may have seen the directory since */
	if (m->nodemap) {
		struct nodemap_view v;
		nodemap_lookup(m->nodemap, req, &v);
		if (v.readonly)
			return -EROFS; /* it could make nothing under it */
	}
	rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		return rc;
	rc = mds_db_inode_get(txn, &r->fid, &ino);
	int dacl = rc ? 0 : mds_db_xattr_get(txn, &r->fid, MDS_ACL_XATTR_DEFAULT, NULL, 0);
	mds_txn_abort(txn);
	if (rc)
		return rc;
	if (dacl != -ENODATA)
		out->flags |= WIRE_LEASE_DEFAULT_ACL; /* (or unreadable: the MDS works it out) */
	if (!S_ISDIR(ino.mode))
		return -ENOTDIR;
	rc = mds_perm_check(&r->cred, &ino, MDS_MAY_EXEC);
	if (rc)
		return rc;
	/* the holder knows every name in it: none (a lease on a listing is for later); a
	 * reclaimer knows them from before. Its callback poll starts after its recovery:
	 * a recall meanwhile waits for it (notify.c). */
	if (ino.nentries > 0 && !reclaim)
		return -ENOTEMPTY;
	if (!reclaim && !mds_notify_listening(m, req->conn_id))
		return -EAGAIN; /* a recall could not reach it */
	pthread_mutex_lock(&l->lock);
	struct lease **pp = slot(l, &r->fid), *e = *pp;
	if (e && (e->owner != owner || e->recall_ms)) {
		rc = -EBUSY;
	} else if (e) {
		e->conn_id = req->conn_id; /* it asks again from a new connection */
		e->closed_ms = 0;
	} else {
		rc = lease_add(l, &r->fid, owner, req->conn_id);
	}
	if (rc)
		l->st.refused++;
	else
		l->st.granted++;
	pthread_mutex_unlock(&l->lock);
	return rc;
}

void mds_lease_made_dir(struct mds_leases *l, const struct rpc_request *req,
			const struct nacre_fid *parent, const struct nacre_fid *dir)
{
	uint64_t owner = mds_owner_of(req);

	if (!l || !__atomic_load_n(&l->held, __ATOMIC_ACQUIRE) || !req->client_id)
		return;
	pthread_mutex_lock(&l->lock);
	struct lease *p = *slot(l, parent);
	if (p && p->owner == owner && !p->recall_ms && !*slot(l, dir) &&
	    lease_add(l, dir, owner, p->conn_id) == 0)
		l->st.granted++;
	pthread_mutex_unlock(&l->lock);
}

static int lease_put(struct mds *m, const struct rpc_request *req, const struct wire_lease_req *r)
{
	struct mds_leases *l = m->leases;
	struct parked *resume = NULL;

	pthread_mutex_lock(&l->lock);
	struct lease *e = *slot(l, &r->fid);
	if (e && e->owner == mds_owner_of(req)) {
		l->st.returned++;
		lease_end(l, e, &resume);
	}
	pthread_mutex_unlock(&l->lock);
	resume_all(resume);
	return 0;
}

int mds_lease_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_lease_req r;
	struct wire_lease_rep out = {0};
	struct wire_cursor c;
	int rc;

	if (!m->leases)
		return -EOPNOTSUPP;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_lease_req_decode(&c, &r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c)) {
		LOG_RATELIMITED(LOG_LVL_WARN, "lease", "malformed LEASE from %s", req->peer);
		return -EPROTO;
	}
	rc = r.op == WIRE_LEASE_GET ? lease_get(m, req, &r, &out) : lease_put(m, req, &r);
	if (!rc)
		wire_lease_rep_encode(&rep->body, &out);
	return rc;
}

/* The FIDs of a BATCH's changes into out (up to max); how many. */
static int batch_fids(const struct rpc_request *req, struct nacre_fid *out, int max)
{
	struct wire_batch_req *b = malloc(sizeof(*b));
	struct wire_cursor c;
	int n = 0;

	if (!b)
		return -ENOMEM;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_batch_req_decode(&c, b);
	for (uint32_t i = 0; wire_cursor_ok(&c) && i < b->count; i++) {
		if (n + MDS_REQ_FIDS_MAX > max)
			break;
		n += mds_req_fids(b->ch[i].opcode, b->ch[i].body, b->ch[i].len, out + n);
	}
	free(b);
	return n;
}

/* Parks req on e and recalls e if that is not under way. With l->lock held. */
static int park(struct mds_leases *l, struct lease *e, const struct rpc_request *req,
		struct parked *p)
{
	struct parked **tail = &e->waiters;

	if (!e->recall_ms) {
		e->recall_ms = net_now_ms();
		e->rnext = l->recalling;
		l->recalling = e;
		l->st.recalled++;
		/* not listening: again each tick, until the deadline */
		e->undelivered = mds_notify_recall(l->m, e->conn_id, &e->fid) != 0;
	}
	p->d = rpc_defer(req);
	p->conn_id = req->conn_id;
	while (*tail)
		tail = &(*tail)->next;
	*tail = p;
	return RPC_DEFER;
}

int mds_lease_admit(struct mds_leases *l, const struct rpc_request *req)
{
	struct nacre_fid one[MDS_REQ_FIDS_MAX], *fids = one;
	uint16_t op = req->hdr->opcode;
	int n, rc = MDS_LEASE_PASS;

	if (!l || !__atomic_load_n(&l->held, __ATOMIC_ACQUIRE) || op == WIRE_OP_MDS_LEASE)
		return MDS_LEASE_PASS;
	if (op == WIRE_OP_MDS_BATCH) {
		fids = malloc(WIRE_BATCH_MAX * MDS_REQ_FIDS_MAX * sizeof(*fids));
		if (!fids)
			return -ENOMEM;
		n = batch_fids(req, fids, WIRE_BATCH_MAX * MDS_REQ_FIDS_MAX);
	} else {
		n = mds_req_fids(op, req->body, req->body_len, fids);
	}
	struct parked *p = n > 0 ? calloc(1, sizeof(*p)) : NULL;
	if (n > 0 && !p)
		rc = -ENOMEM;
	uint64_t owner = mds_owner_of(req);
	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < n && rc == MDS_LEASE_PASS; i++) {
		struct lease *e = *slot(l, &fids[i]);
		if (e && e->owner != owner) {
			rc = park(l, e, req, p);
			p = NULL;
		}
	}
	if (rc == RPC_DEFER)
		l->st.waited++;
	pthread_mutex_unlock(&l->lock);
	free(p);
	if (fids != one)
		free(fids);
	return rc;
}

void mds_lease_close(struct mds_leases *l, uint64_t conn_id)
{
	struct parked *gone = NULL;

	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < BUCKETS; i++) {
		for (struct lease *e = l->b[i]; e; e = e->next) {
			if (e->conn_id == conn_id && !e->closed_ms) {
				e->closed_ms = net_now_ms();
				l->closed = 1;
			}
			for (struct parked **pp = &e->waiters; *pp;) {
				struct parked *p = *pp;
				if (p->conn_id != conn_id) {
					pp = &p->next;
					continue;
				}
				*pp = p->next;
				p->next = gone;
				gone = p;
			}
		}
	}
	pthread_mutex_unlock(&l->lock);
	while (gone) {
		struct parked *p = gone;
		gone = p->next;
		rpc_answer(p->d, 0, NULL, 0, NULL); /* the connection is gone: nobody hears it */
		free(p);
	}
}

void mds_lease_drop_owner(struct mds_leases *l, uint64_t owner)
{
	struct parked *resume = NULL;

	if (!l || !__atomic_load_n(&l->held, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < BUCKETS; i++) {
		struct lease *e = l->b[i];
		while (e) {
			struct lease *next = e->next;
			if (e->owner == owner)
				lease_end(l, e, &resume);
			e = next;
		}
	}
	pthread_mutex_unlock(&l->lock);
	resume_all(resume);
}

void mds_lease_stats(struct mds_leases *l, struct mds_lease_stats *out)
{
	*out = (struct mds_lease_stats){0};
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	*out = l->st;
	out->held = l->held;
	pthread_mutex_unlock(&l->lock);
}
