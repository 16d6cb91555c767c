/* hsm.c - the HSM coordinator: queue, agents, admission control, state changes. See hsm.h. */
#include "mds/hsm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"
#include "mds/alloc.h"
#include "mds/ns.h"
#include "mds/open.h"
#include "mds/perm.h"
#include "mds/targets.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"

#define MAX_AGENTS 64
#define RECENT_FAILS 32
#define RECENT_FAIL_MS 15000 /* an open after a failed restore fails this long, then retries */
#define PURGE_BATCH 512
#define POLICY_RELEASE_SETTLE_MS 10000
#define USER_MASK (NACRE_HS_NORELEASE | NACRE_HS_NOARCHIVE | NACRE_HS_DIRTY)

/* A STARTED action, in memory for progress and timeouts. */
struct active {
	uint64_t cookie;
	struct nacre_fid fid;
	uint32_t action;
	uint64_t conn;
	int64_t last_ms; /* last progress (or start) */
	uint64_t done, total;
	int cancel;
	/* Finished or taken back, its new status not committed yet: it keeps its slot until
	 * then, so the queue never shows more actions STARTED than the limit allows. */
	int ending;
	struct nacre_layout layout; /* RESTORE: where the copytool writes */
};

struct agent {
	uint64_t conn;
	uint32_t ids[WIRE_HSM_ARCHIVES_MAX];
	uint32_t nids; /* 0 = any */
	uint32_t max_active;
	uint32_t active;
};

struct recent_fail {
	struct nacre_fid fid;
	int err;
	int64_t ms;
};

struct mds_hsm {
	struct mds *m;
	struct mds_hsm_conf conf;
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t work;  /* queue or slots changed (pollers wait on it) */
	pthread_cond_t tick;  /* wakes the coordinator thread to stop */
	struct active *act;
	uint32_t nact;
	uint32_t nact_max; /* high-water mark of nact: proves admission control in tests */
	struct metric *m_active, *m_active_max, *m_started;
	struct metric *m_waiting, *m_queued_started; /* set by the coordinator thread */
	int64_t last_release_ms; /* the policy's last release (coordinator thread only) */
	struct agent agents[MAX_AGENTS];
	uint32_t nagents;
	uint64_t next_cookie;
	struct recent_fail fails[RECENT_FAILS];
	unsigned nfails;
	int stop;
	pthread_t thread;
};

/* Set at start for the unlink hook, which runs without an mds pointer. */
static struct mds_hsm *g_hsm;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int is_owner(const struct nacre_cred *cr, const struct mds_inode *ino)
{
	return mds_perm_is_root(cr) || cr->uid == ino->uid;
}

/* Caller holds h->lock. */
static struct agent *agent_find(struct mds_hsm *h, uint64_t conn)
{
	for (uint32_t i = 0; i < h->nagents; i++)
		if (h->agents[i].conn == conn)
			return &h->agents[i];
	return NULL;
}

static int agent_serves(const struct agent *a, uint32_t id)
{
	if (a->nids == 0)
		return 1;
	for (uint32_t i = 0; i < a->nids; i++)
		if (a->ids[i] == id)
			return 1;
	return 0;
}

/* Caller holds h->lock. */
static struct active *active_find(struct mds_hsm *h, uint64_t cookie)
{
	for (uint32_t i = 0; i < h->nact; i++)
		if (h->act[i].cookie == cookie)
			return &h->act[i];
	return NULL;
}

/* Caller holds h->lock. Drops a (a pointer into h->act) and its agent's count. */
static void active_drop(struct mds_hsm *h, struct active *a)
{
	struct agent *ag = agent_find(h, a->conn);
	if (ag && ag->active > 0)
		ag->active--;
	*a = h->act[--h->nact];
	metrics_set(h->m_active, h->nact);
	pthread_cond_broadcast(&h->work);
}

/* Drops the ending actions of cookies once their new status is committed. */
static void drop_ended(struct mds_hsm *h, const uint64_t *cookies, uint32_t n)
{
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < n; i++) {
		struct active *a = active_find(h, cookies[i]);
		if (a && a->ending)
			active_drop(h, a);
	}
	pthread_mutex_unlock(&h->lock);
}

static void wake(struct mds_hsm *h)
{
	pthread_mutex_lock(&h->lock);
	pthread_cond_broadcast(&h->work);
	pthread_mutex_unlock(&h->lock);
}

/* ---------------- queueing (inside writer operations) ---------------- */

/* Adds a WAITING action for fid; the caller checked there is no active one. */
static int enqueue(struct mds_hsm *h, struct mds_txn *txn, const struct nacre_fid *fid,
		   uint32_t action, uint32_t archive_id, const char *path)
{
	struct mds_hsm_rec *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&h->lock);
	r->a.cookie = h->next_cookie++;
	pthread_mutex_unlock(&h->lock);
	r->a.action = action;
	r->a.status = NACRE_HAS_WAITING;
	r->a.fid = *fid;
	r->a.archive_id = archive_id ? archive_id : h->conf.default_archive;
	r->a.ctime = r->a.mtime = time_now();
	if (path)
		str_copy(r->a.path, path, sizeof(r->a.path));
	int rc = mds_db_hsm_put(txn, r);
	if (!rc)
		rc = mds_db_hsm_fid_put(txn, fid, r->a.cookie);
	free(r);
	return rc;
}

/* The archive object name stored on an archived inode ("" if none). */
static void stored_path(struct mds_txn *txn, const struct nacre_fid *fid, char *out)
{
	int n = mds_db_xattr_get(txn, fid, MDS_HSM_PATH_XATTR, out, NACRE_PATH_MAX);
	if (n < 0 || n > NACRE_PATH_MAX || memchr(out, 0, (size_t)n))
		n = 0;
	out[n] = 0;
}

/* The active action of fid, if any: 0 with *r filled, -ENOENT if none. */
static int active_rec(struct mds_txn *txn, const struct nacre_fid *fid, struct mds_hsm_rec *r)
{
	uint64_t cookie;
	int rc = mds_db_hsm_fid_get(txn, fid, &cookie);
	if (rc)
		return rc;
	rc = mds_db_hsm_get(txn, cookie, r);
	if (rc == 0 && r->a.status != NACRE_HAS_WAITING && r->a.status != NACRE_HAS_STARTED)
		rc = -ENOENT; /* a stale index entry: the action is over */
	return rc;
}

struct req_arg {
	struct mds_hsm *h;
	const struct wire_hsm_request *r;
	const struct nacre_fid *fids;
	int32_t *rcs;
	int released; /* objects were queued for destruction */
	int queued;
};

static int release_one(struct req_arg *a, struct mds_txn *txn, struct mds_inode *ino,
		       struct mds_hsm_rec *rec)
{
	uint32_t st = ino->hsm_state;
	if (st & NACRE_HS_RELEASED)
		return 0;
	if (!(st & NACRE_HS_EXISTS) || !(st & NACRE_HS_ARCHIVED) ||
	    (st & (NACRE_HS_DIRTY | NACRE_HS_NORELEASE | NACRE_HS_LOST)))
		return -EPERM; /* as Lustre: only a clean archived copy may stand in for the data */
	/* Open readers too, on purpose: there is no layout lock to take back from them, a
	 * reader keeps the layout it opened with, and the OSS reads a destroyed object as a
	 * hole, so its next read would return zeros instead of restoring. */
	if (mds_open_count(a->h->m->open, &ino->fid) > 0 || active_rec(txn, &ino->fid, rec) == 0)
		return -EBUSY;
	if (ino->has_layout && ino->layout.nosts > 0) {
		int rc = mds_db_destroy_add(txn, &ino->fid, &ino->layout);
		if (rc)
			return rc;
		a->released = 1;
	}
	ino->hsm_state |= NACRE_HS_RELEASED;
	return mds_db_inode_put(txn, ino);
}

static int request_one(struct req_arg *a, struct mds_txn *txn, const struct nacre_fid *fid)
{
	struct mds_hsm *h = a->h;
	const struct nacre_cred *cr = &a->r->cred;
	struct mds_inode *ino = malloc(sizeof(*ino));
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	char *path = malloc(NACRE_PATH_MAX + 1);
	int rc = ino && rec && path ? 0 : -ENOMEM;
	if (!rc)
		rc = mds_db_inode_get(txn, fid, ino);
	if (rc)
		goto out;
	if (!S_ISREG(ino->mode)) {
		rc = -EINVAL;
		goto out;
	}
	uint32_t st = ino->hsm_state;
	int have = active_rec(txn, fid, rec) == 0;
	uint32_t archive = a->r->archive_id ? a->r->archive_id
					    : ino->archive_id ? ino->archive_id
							      : h->conf.default_archive;
	switch (a->r->action) {
	case NACRE_HUA_ARCHIVE:
		if (!is_owner(cr, ino))
			rc = -EPERM;
		else if (st & NACRE_HS_NOARCHIVE)
			rc = -EPERM;
		else if (st & NACRE_HS_RELEASED)
			rc = 0; /* its only data is the archive copy already */
		else if (have)
			rc = rec->a.action == NACRE_HSMA_ARCHIVE ? 0 : -EBUSY;
		else if ((rc = enqueue(h, txn, fid, NACRE_HSMA_ARCHIVE, archive, NULL)) == 0)
			a->queued = 1;
		break;
	case NACRE_HUA_RESTORE:
		rc = mds_perm_check(cr, ino, MDS_MAY_READ);
		if (rc || !(st & NACRE_HS_RELEASED))
			break;
		if (have) {
			rc = rec->a.action == NACRE_HSMA_RESTORE ? 0 : -EBUSY;
			break;
		}
		stored_path(txn, fid, path);
		if ((rc = enqueue(h, txn, fid, NACRE_HSMA_RESTORE, ino->archive_id, path)) == 0)
			a->queued = 1;
		break;
	case NACRE_HUA_RELEASE:
		rc = is_owner(cr, ino) ? release_one(a, txn, ino, rec) : -EPERM;
		break;
	case NACRE_HUA_REMOVE:
		if (!is_owner(cr, ino))
			rc = -EPERM;
		else if (st & NACRE_HS_RELEASED)
			rc = -EBUSY; /* the archive holds the only copy of the data */
		else if (have)
			rc = rec->a.action == NACRE_HSMA_REMOVE ? 0 : -EBUSY;
		else if (!(st & NACRE_HS_EXISTS))
			rc = 0;
		else {
			stored_path(txn, fid, path);
			rc = enqueue(h, txn, fid, NACRE_HSMA_REMOVE, ino->archive_id ? ino->archive_id : archive, path);
			if (!rc)
				a->queued = 1;
		}
		break;
	case NACRE_HUA_CANCEL:
		if (!is_owner(cr, ino)) {
			rc = -EPERM;
		} else if (have && rec->a.status == NACRE_HAS_WAITING) {
			rec->a.status = NACRE_HAS_CANCELED;
			rec->a.mtime = time_now();
			rc = mds_db_hsm_put(txn, rec);
			if (!rc)
				rc = mds_db_hsm_fid_del(txn, fid);
		} else if (have) {
			pthread_mutex_lock(&h->lock);
			struct active *ac = active_find(h, rec->a.cookie);
			if (ac)
				ac->cancel = 1; /* the agent stops at its next progress report */
			pthread_mutex_unlock(&h->lock);
		}
		break;
	default:
		rc = -EINVAL;
	}
out:
	free(ino);
	free(rec);
	free(path);
	return rc;
}

/* One writer op for a whole batch: each file in its own nested transaction, so one file's
 * failure does not undo the others. */
static int request_op(struct mds_txn *txn, void *arg)
{
	struct req_arg *a = arg;
	for (uint32_t i = 0; i < a->r->nfids; i++) {
		struct mds_txn *sub;
		int rc = mds_txn_begin_nested(txn, &sub);
		if (rc)
			return rc;
		rc = request_one(a, sub, &a->fids[i]);
		if (rc) {
			mds_txn_abort(sub);
			a->rcs[i] = rc;
			continue;
		}
		rc = mds_txn_commit(sub);
		a->rcs[i] = rc;
		if (rc)
			return rc;
	}
	return 0;
}

/* ---------------- agents: start, progress, requeue ---------------- */

struct start_arg {
	struct mds_hsm *h;
	uint64_t conn;
	const uint64_t *cookies;
	uint32_t n;
	struct nacre_hsm_action *out; /* started actions */
	uint32_t nout;
};

static int start_one(struct start_arg *a, struct mds_txn *txn, uint64_t cookie,
		     struct mds_hsm_rec *r, struct mds_inode *ino)
{
	struct mds_hsm *h = a->h;
	int rc = mds_db_hsm_get(txn, cookie, r);
	if (rc || r->a.status != NACRE_HAS_WAITING)
		return 0;
	int have_ino = mds_db_inode_get(txn, &r->a.fid, ino) == 0;
	if (!have_ino && r->a.action != NACRE_HSMA_REMOVE) {
		/* the file went away while queued */
		r->a.status = NACRE_HAS_FAILED;
		r->a.err = -ENOENT;
		r->a.mtime = time_now();
		rc = mds_db_hsm_put(txn, r);
		if (!rc)
			rc = mds_db_hsm_fid_del(txn, &r->a.fid);
		return rc;
	}
	if (r->a.action == NACRE_HSMA_ARCHIVE) {
		r->start_size = ino->size;
		r->start_mtime = ino->mtime;
		r->a.bytes_total = ino->size;
	} else if (r->a.action == NACRE_HSMA_RESTORE) {
		if (!(ino->hsm_state & NACRE_HS_RELEASED)) {
			r->a.status = NACRE_HAS_SUCCEED; /* restored meanwhile */
			r->a.mtime = time_now();
			rc = mds_db_hsm_put(txn, r);
			if (!rc)
				rc = mds_db_hsm_fid_del(txn, &r->a.fid);
			return rc;
		}
		r->a.bytes_total = ino->size;
		if (!r->has_layout) {
			/* new objects: same geometry, fresh OSTs, next generation */
			struct nacre_layout req = {.pattern = NACRE_PATTERN_RAID0,
						   .stripe_size = ino->layout.stripe_size,
						   .stripe_count = ino->layout.stripe_count,
						   .stripe_offset = -1};
			rc = mds_alloc_file_layout(h->m, txn, NULL, ino->has_layout ? &req : NULL,
						   &r->layout);
			if (rc)
				return rc == -ENOSPC ? 0 : rc; /* stays WAITING until an OST is up */
			r->layout.gen = ino->layout.gen + 1;
			r->has_layout = 1;
		}
	}
	pthread_mutex_lock(&h->lock);
	struct agent *ag = agent_find(h, a->conn);
	if (!ag || ag->active >= ag->max_active || h->nact >= h->conf.max_active ||
	    active_find(h, cookie)) {
		pthread_mutex_unlock(&h->lock);
		return 0;
	}
	struct active *ac = &h->act[h->nact++];
	memset(ac, 0, sizeof(*ac));
	ac->cookie = cookie;
	ac->fid = r->a.fid;
	ac->action = r->a.action;
	ac->conn = a->conn;
	ac->last_ms = now_ms();
	ac->total = r->a.bytes_total;
	ac->layout = r->layout;
	ag->active++;
	if (h->nact > h->nact_max) {
		h->nact_max = h->nact;
		metrics_set(h->m_active_max, h->nact_max);
	}
	metrics_set(h->m_active, h->nact);
	metrics_add(h->m_started, 1);
	pthread_mutex_unlock(&h->lock);
	r->a.status = NACRE_HAS_STARTED;
	r->a.bytes_done = 0;
	r->a.mtime = time_now();
	rc = mds_db_hsm_put(txn, r);
	if (rc) {
		pthread_mutex_lock(&h->lock);
		struct active *x = active_find(h, cookie);
		if (x)
			active_drop(h, x);
		pthread_mutex_unlock(&h->lock);
		return rc;
	}
	a->out[a->nout++] = r->a;
	return 0;
}

static int start_op(struct mds_txn *txn, void *arg)
{
	struct start_arg *a = arg;
	struct mds_hsm_rec *r = malloc(sizeof(*r));
	struct mds_inode *ino = malloc(sizeof(*ino));
	int rc = r && ino ? 0 : -ENOMEM;
	for (uint32_t i = 0; !rc && i < a->n; i++)
		rc = start_one(a, txn, a->cookies[i], r, ino);
	free(r);
	free(ino);
	return rc;
}

/* Finds up to max WAITING actions the agent may run and starts them. Returns the count. */
static int poll_once(struct mds_hsm *h, uint64_t conn, uint32_t max, struct nacre_hsm_action *out)
{
	struct agent ag;
	pthread_mutex_lock(&h->lock);
	struct agent *p = agent_find(h, conn);
	if (!p) {
		pthread_mutex_unlock(&h->lock);
		return -EPERM;
	}
	ag = *p;
	uint32_t slots = ag.max_active > ag.active ? ag.max_active - ag.active : 0;
	uint32_t global = h->conf.max_active > h->nact ? h->conf.max_active - h->nact : 0;
	pthread_mutex_unlock(&h->lock);
	if (slots > global)
		slots = global;
	if (slots > max)
		slots = max;
	if (slots == 0)
		return 0;

	uint64_t cookies[WIRE_HSM_POLL_MAX];
	uint32_t n = 0;
	struct mds_hsm_rec *r = malloc(sizeof(*r));
	struct mds_txn *txn;
	if (!r)
		return -ENOMEM;
	int rc = mds_txn_begin_read(h->m->db, &txn);
	if (rc) {
		free(r);
		return rc;
	}
	for (uint64_t from = 0; n < slots && mds_db_hsm_next(txn, from, r) == 0;
	     from = r->a.cookie + 1) {
		if (r->a.status == NACRE_HAS_WAITING && agent_serves(&ag, r->a.archive_id))
			cookies[n++] = r->a.cookie;
	}
	mds_txn_abort(txn);
	free(r);
	if (n == 0)
		return 0;
	struct start_arg a = {h, conn, cookies, n, out, 0};
	rc = mds_writer_submit(h->m->writer, start_op, &a);
	if (rc)
		LOG_WARN("hsm", "starting actions failed: %s", nacre_strerror(rc));
	return (int)a.nout;
}

struct finish_arg {
	struct mds_hsm *h;
	uint64_t cookie;
	const struct wire_hsm_progress *p;
	int destroyed; /* objects queued for destruction */
};

static int finish_op(struct mds_txn *txn, void *arg)
{
	struct finish_arg *a = arg;
	const struct wire_hsm_progress *p = a->p;
	struct mds_hsm_rec *r = malloc(sizeof(*r));
	struct mds_inode *ino = malloc(sizeof(*ino));
	int rc = r && ino ? 0 : -ENOMEM;
	if (!rc)
		rc = mds_db_hsm_get(txn, a->cookie, r);
	if (rc || r->a.status != NACRE_HAS_STARTED)
		goto out;
	int ok = p->status == 0;
	int have_ino = mds_db_inode_get(txn, &r->a.fid, ino) == 0;
	r->a.bytes_done = p->bytes_done;
	if (p->bytes_total)
		r->a.bytes_total = p->bytes_total;
	r->a.mtime = time_now();
	r->a.err = ok ? 0 : p->status;
	r->a.status = ok ? NACRE_HAS_SUCCEED
			 : p->status == -ECANCELED ? NACRE_HAS_CANCELED : NACRE_HAS_FAILED;
	if (ok && p->path[0])
		str_copy(r->a.path, p->path, sizeof(r->a.path));
	if (have_ino && ok && r->a.action == NACRE_HSMA_ARCHIVE) {
		ino->hsm_state |= NACRE_HS_EXISTS | NACRE_HS_ARCHIVED;
		ino->hsm_state &= ~(uint32_t)NACRE_HS_LOST;
		/* written since the copy started: the archive holds an older version */
		if (ino->size != r->start_size || ino->mtime.sec != r->start_mtime.sec ||
		    ino->mtime.nsec != r->start_mtime.nsec)
			ino->hsm_state |= NACRE_HS_DIRTY;
		else
			ino->hsm_state &= ~(uint32_t)NACRE_HS_DIRTY;
		ino->archive_id = r->a.archive_id;
		rc = mds_db_inode_put(txn, ino);
		if (!rc && r->a.path[0])
			rc = mds_db_xattr_put(txn, &ino->fid, MDS_HSM_PATH_XATTR, r->a.path,
					      strlen(r->a.path));
	} else if (have_ino && r->a.action == NACRE_HSMA_RESTORE && r->has_layout) {
		if (ok && (ino->hsm_state & NACRE_HS_RELEASED)) {
			/* the layout swap: the file now lives in the restored objects */
			ino->layout = r->layout;
			ino->has_layout = 1;
			ino->hsm_state &= ~(uint32_t)NACRE_HS_RELEASED;
			rc = mds_db_inode_put(txn, ino);
		} else if (r->layout.nosts > 0) {
			rc = mds_db_destroy_add(txn, &r->a.fid, &r->layout);
			a->destroyed = 1;
		}
	} else if (have_ino && ok && r->a.action == NACRE_HSMA_REMOVE) {
		ino->hsm_state &= ~(uint32_t)(NACRE_HS_EXISTS | NACRE_HS_ARCHIVED |
					      NACRE_HS_DIRTY | NACRE_HS_LOST);
		ino->archive_id = 0;
		rc = mds_db_inode_put(txn, ino);
		if (!rc) {
			int drc = mds_db_xattr_del(txn, &ino->fid, MDS_HSM_PATH_XATTR);
			if (drc && drc != -ENODATA && drc != -ENOENT)
				rc = drc;
		}
	}
	if (!rc)
		rc = mds_db_hsm_put(txn, r);
	if (!rc)
		rc = mds_db_hsm_fid_del(txn, &r->a.fid);
out:
	free(r);
	free(ino);
	return rc;
}

struct requeue_arg {
	const uint64_t *cookies;
	uint32_t n;
};

static int requeue_op(struct mds_txn *txn, void *arg)
{
	struct requeue_arg *a = arg;
	struct mds_hsm_rec *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	int rc = 0;
	for (uint32_t i = 0; !rc && i < a->n; i++) {
		if (mds_db_hsm_get(txn, a->cookies[i], r) || r->a.status != NACRE_HAS_STARTED)
			continue;
		r->a.status = NACRE_HAS_WAITING;
		r->a.bytes_done = 0;
		r->a.mtime = time_now();
		rc = mds_db_hsm_put(txn, r); /* a RESTORE keeps its layout: the retry overwrites it */
	}
	free(r);
	return rc;
}

static void requeue(struct mds_hsm *h, const uint64_t *cookies, uint32_t n, const char *why)
{
	if (n == 0)
		return;
	struct requeue_arg a = {cookies, n};
	int rc = mds_writer_submit(h->m->writer, requeue_op, &a);
	drop_ended(h, cookies, n);
	if (rc)
		LOG_WARN("hsm", "requeueing %u actions failed: %s", n, nacre_strerror(rc));
	else
		LOG_INFO("hsm", "%u actions back to WAITING: %s", n, why);
	wake(h);
}

void mds_hsm_disconnect(struct mds *m, uint64_t conn_id)
{
	struct mds_hsm *h = m->hsm;
	if (!h)
		return;
	uint64_t *cookies = NULL;
	uint32_t n = 0;
	pthread_mutex_lock(&h->lock);
	struct agent *ag = agent_find(h, conn_id);
	if (!ag) {
		pthread_mutex_unlock(&h->lock);
		return;
	}
	*ag = h->agents[--h->nagents];
	cookies = malloc(sizeof(*cookies) * (h->nact + 1));
	for (uint32_t i = 0; cookies && i < h->nact; i++) {
		if (h->act[i].conn == conn_id && !h->act[i].ending) {
			cookies[n++] = h->act[i].cookie;
			h->act[i].ending = 1;
		}
	}
	pthread_mutex_unlock(&h->lock);
	LOG_INFO("hsm", "agent on connection %llu went away", (unsigned long long)conn_id);
	requeue(h, cookies, n, "their agent disconnected");
	free(cookies);
}

/* ---------------- hooks from open/close/setattr/unlink ---------------- */

void mds_hsm_mark_dirty(struct mds_inode *ino)
{
	if (S_ISREG(ino->mode) && (ino->hsm_state & NACRE_HS_EXISTS))
		ino->hsm_state |= NACRE_HS_DIRTY;
}

static int dirty_op(struct mds_txn *txn, void *arg)
{
	struct mds_inode ino;
	int rc = mds_db_inode_get(txn, arg, &ino);
	if (rc || (ino.hsm_state & NACRE_HS_DIRTY) || !(ino.hsm_state & NACRE_HS_EXISTS))
		return rc;
	ino.hsm_state |= NACRE_HS_DIRTY;
	return mds_db_inode_put(txn, &ino);
}

int mds_hsm_set_dirty(struct mds *m, const struct nacre_fid *fid)
{
	struct nacre_fid f = *fid;
	return mds_writer_submit(m->writer, dirty_op, &f);
}

int mds_hsm_inode_destroyed(struct mds_txn *txn, const struct mds_inode *ino)
{
	struct mds_hsm *h = g_hsm;
	if (!h || !h->conf.remove_on_unlink || !S_ISREG(ino->mode) ||
	    !(ino->hsm_state & NACRE_HS_EXISTS))
		return 0;
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	char *path = malloc(NACRE_PATH_MAX + 1);
	int rc = rec && path ? 0 : -ENOMEM;
	if (!rc && active_rec(txn, &ino->fid, rec) == 0) {
		if (rec->a.status == NACRE_HAS_WAITING) {
			rec->a.status = NACRE_HAS_CANCELED;
			rc = mds_db_hsm_put(txn, rec);
		}
		/* a STARTED one ends on its own; the REMOVE below takes the index entry */
	}
	if (!rc) {
		stored_path(txn, &ino->fid, path);
		if (path[0])
			rc = enqueue(h, txn, &ino->fid, NACRE_HSMA_REMOVE, ino->archive_id, path);
		else
			LOG_WARN("hsm", "unlinked archived file has no archive path: nothing removed");
	}
	free(rec);
	free(path);
	return rc;
}

struct fid_arg {
	struct mds_hsm *h;
	struct nacre_fid fid;
	int queued;
};

static int restore_op(struct mds_txn *txn, void *arg)
{
	struct fid_arg *a = arg;
	struct mds_inode *ino = malloc(sizeof(*ino));
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	char *path = malloc(NACRE_PATH_MAX + 1);
	int rc = ino && rec && path ? 0 : -ENOMEM;
	if (!rc)
		rc = mds_db_inode_get(txn, &a->fid, ino);
	if (!rc && (ino->hsm_state & NACRE_HS_RELEASED) && active_rec(txn, &a->fid, rec) != 0) {
		stored_path(txn, &a->fid, path);
		rc = enqueue(a->h, txn, &a->fid, NACRE_HSMA_RESTORE, ino->archive_id, path);
		a->queued = !rc;
	}
	free(ino);
	free(rec);
	free(path);
	return rc;
}

int mds_hsm_open_released(struct mds *m, uint64_t conn_id, const struct mds_inode *ino,
			  struct nacre_layout *layout)
{
	struct mds_hsm *h = m->hsm;
	if (!h)
		return -ENODATA;
	int64_t now = now_ms();
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->nact; i++) {
		struct active *a = &h->act[i];
		if (a->action == NACRE_HSMA_RESTORE && mds_fid_eq(&a->fid, &ino->fid)) {
			int mine = a->conn == conn_id;
			if (mine)
				*layout = a->layout;
			pthread_mutex_unlock(&h->lock);
			return mine ? 1 : -NACRE_ERESTORING;
		}
	}
	for (unsigned i = 0; i < RECENT_FAILS; i++) {
		struct recent_fail *f = &h->fails[i];
		if (f->ms && now - f->ms < RECENT_FAIL_MS && mds_fid_eq(&f->fid, &ino->fid)) {
			int err = f->err;
			f->ms = 0; /* one open fails with it; the next one tries again */
			pthread_mutex_unlock(&h->lock);
			return err;
		}
	}
	pthread_mutex_unlock(&h->lock);

	/* queue a restore unless one waits already (checked without the writer first) */
	struct mds_txn *txn;
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	int rc = mds_txn_begin_read(m->db, &txn);
	int have = 0;
	if (!rc) {
		have = active_rec(txn, &ino->fid, rec) == 0;
		mds_txn_abort(txn);
	}
	free(rec);
	if (rc)
		return rc;
	if (!have) {
		struct fid_arg a = {h, ino->fid, 0};
		rc = mds_writer_submit(m->writer, restore_op, &a);
		if (rc)
			return rc;
		if (a.queued) {
			char fs[NACRE_FID_STR_MAX];
			LOG_DEBUG("hsm", "open of released %s queued a restore",
				  mds_fid_str(&ino->fid, fs, sizeof(fs)));
			wake(h);
		}
	}
	return -NACRE_ERESTORING;
}

/* ---------------- request handlers ---------------- */

static int finish_decode(const struct rpc_request *req, const struct wire_cursor *c)
{
	if (wire_cursor_ok(c) && wire_cursor_left(c) == 0)
		return 0;
	LOG_RATELIMITED(LOG_LVL_WARN, "hsm", "malformed %s request from %s: %s",
			wire_opcode_name(req->hdr->opcode), req->peer,
			wire_cursor_ok(c) ? "trailing bytes" : "bad field");
	return -EPROTO;
}

static int do_request(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_request r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_request_decode(&c, &r);
	if (!wire_cursor_ok(&c))
		return finish_decode(req, &c);
	struct nacre_fid *fids = malloc(sizeof(*fids) * r.nfids);
	int32_t *rcs = calloc(r.nfids, sizeof(*rcs));
	if (!fids || !rcs) {
		free(fids);
		free(rcs);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < r.nfids; i++)
		wire_fid_get(&c, &fids[i]);
	int rc = finish_decode(req, &c);
	if (!rc) {
		struct req_arg a = {h, &r, fids, rcs, 0, 0};
		rc = mds_writer_submit(h->m->writer, request_op, &a);
		if (a.released)
			mds_ns_kick_destroy(h->m);
		if (a.queued)
			wake(h);
	}
	if (!rc) {
		struct wire_hsm_request_rep head = {.nfids = r.nfids};
		wire_hsm_request_rep_encode(&rep->body, &head);
		for (uint32_t i = 0; i < r.nfids; i++)
			wire_hsm_rc_put(&rep->body, rcs[i]);
		rc = wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
	}
	free(fids);
	free(rcs);
	return rc;
}

static int do_state_get(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_fid_req r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_fid_req_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	struct nacre_attr a;
	rc = mds_ns_getattr(h->m, &r.cred, &r.fid, &a);
	if (rc)
		return rc;
	struct wire_hsm_state s = {a.hsm_state, a.archive_id};
	wire_hsm_state_encode(&rep->body, &s);
	return 0;
}

struct state_arg {
	const struct wire_hsm_state_set *r;
	struct wire_hsm_state out;
};

static int state_op(struct mds_txn *txn, void *arg)
{
	struct state_arg *a = arg;
	const struct wire_hsm_state_set *r = a->r;
	struct mds_inode ino;
	int rc = mds_db_inode_get(txn, &r->fid, &ino);
	if (rc)
		return rc;
	if (!S_ISREG(ino.mode))
		return -EINVAL;
	if (!is_owner(&r->cred, &ino))
		return -EPERM;
	/* as Lustre: users may change only the user flags; released follows the objects */
	if (!mds_perm_is_root(&r->cred) && ((r->set | r->clear) & ~(uint32_t)USER_MASK))
		return -EPERM;
	if ((r->set | r->clear) & NACRE_HS_RELEASED)
		return -EINVAL;
	ino.hsm_state = (ino.hsm_state | r->set) & ~r->clear;
	if (r->archive_id)
		ino.archive_id = r->archive_id;
	rc = mds_db_inode_put(txn, &ino);
	a->out.state = ino.hsm_state;
	a->out.archive_id = ino.archive_id;
	return rc;
}

static int do_state_set(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_state_set r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_state_set_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	struct state_arg a = {&r, {0, 0}};
	rc = mds_writer_submit(h->m->writer, state_op, &a);
	if (!rc)
		wire_hsm_state_encode(&rep->body, &a.out);
	return rc;
}

/* Overlays the in-memory progress of a STARTED action. */
static void overlay(struct mds_hsm *h, struct nacre_hsm_action *a)
{
	if (a->status != NACRE_HAS_STARTED)
		return;
	pthread_mutex_lock(&h->lock);
	struct active *ac = active_find(h, a->cookie);
	if (ac) {
		a->bytes_done = ac->done;
		if (ac->total)
			a->bytes_total = ac->total;
	}
	pthread_mutex_unlock(&h->lock);
}

static int do_action(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_fid_req r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_fid_req_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	struct mds_txn *txn;
	if (!rec)
		return -ENOMEM;
	rc = mds_txn_begin_read(h->m->db, &txn);
	if (rc) {
		free(rec);
		return rc;
	}
	struct mds_inode ino;
	rc = mds_db_inode_get(txn, &r.fid, &ino);
	int have = !rc && active_rec(txn, &r.fid, rec) == 0;
	mds_txn_abort(txn);
	if (!rc) {
		struct wire_hsm_action_rep head = {.has = have ? 1 : 0};
		wire_hsm_action_rep_encode(&rep->body, &head);
		if (have) {
			overlay(h, &rec->a);
			wire_hsm_action_put(&rep->body, &rec->a);
		}
	}
	free(rec);
	return rc;
}

static int do_list(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_list_req r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_list_req_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	uint32_t max = r.max ? r.max : WIRE_HSM_POLL_MAX;
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	struct mds_txn *txn;
	if (!rec)
		return -ENOMEM;
	rc = mds_txn_begin_read(h->m->db, &txn);
	if (rc) {
		free(rec);
		return rc;
	}
	size_t head_pos = wire_cursor_pos(&rep->body);
	struct wire_hsm_list_rep head = {0};
	wire_hsm_list_rep_encode(&rep->body, &head);
	uint32_t n = 0;
	int eof = 1;
	for (uint64_t from = r.cookie + 1; r.cookie != UINT64_MAX; from = rec->a.cookie + 1) {
		if (mds_db_hsm_next(txn, from, rec))
			break;
		/* stop before an action could overflow the body */
		if (n >= max || wire_cursor_pos(&rep->body) + WIRE_HSM_ACTION_MAX + 64 >
					WIRE_BODY_MAX) {
			eof = 0;
			break;
		}
		overlay(h, &rec->a);
		wire_hsm_action_put(&rep->body, &rec->a);
		n++;
		if (rec->a.cookie == UINT64_MAX)
			break;
	}
	mds_txn_abort(txn);
	free(rec);
	head.count = n;
	head.eof = eof;
	wire_hsm_list_rep_patch(&rep->body, head_pos, &head);
	return wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
}

static int do_register(struct mds_hsm *h, const struct rpc_request *req)
{
	struct wire_hsm_agent_reg r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_agent_reg_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	if (!mds_perm_is_root(&r.cred))
		return -EPERM;
	pthread_mutex_lock(&h->lock);
	struct agent *ag = agent_find(h, req->conn_id);
	if (!ag) {
		if (h->nagents >= MAX_AGENTS) {
			pthread_mutex_unlock(&h->lock);
			return -EUSERS;
		}
		ag = &h->agents[h->nagents++];
		memset(ag, 0, sizeof(*ag));
		ag->conn = req->conn_id;
	}
	memcpy(ag->ids, r.ids, sizeof(ag->ids));
	ag->nids = r.nids;
	ag->max_active = r.max_active;
	pthread_cond_broadcast(&h->work);
	pthread_mutex_unlock(&h->lock);
	LOG_INFO("hsm", "agent %s (%s) registered for %u archive ids, %u actions at once",
		 req->peer_name ? req->peer_name : "?", req->peer, r.nids, r.max_active);
	return 0;
}

static int do_poll(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_poll_req r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_poll_req_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	uint32_t max = r.max < WIRE_HSM_POLL_REP_MAX ? r.max : WIRE_HSM_POLL_REP_MAX;
	struct nacre_hsm_action *out = malloc(sizeof(*out) * max);
	if (!out)
		return -ENOMEM;
	int64_t deadline = now_ms() + r.wait_ms;
	int n;
	for (;;) {
		n = poll_once(h, req->conn_id, max, out);
		if (n != 0 || now_ms() >= deadline)
			break;
		/* a bounded wait: workers are shared, so never longer than WIRE_HSM_WAIT_MAX_MS */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t wait = deadline - now_ms();
		if (wait > 500)
			wait = 500;
		ts.tv_sec += wait / 1000;
		ts.tv_nsec += (wait % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&h->lock);
		if (!h->stop)
			pthread_cond_timedwait(&h->work, &h->lock, &ts);
		int stop = h->stop;
		pthread_mutex_unlock(&h->lock);
		if (stop)
			break;
	}
	if (n < 0) {
		free(out);
		return n;
	}
	struct wire_hsm_poll_rep head = {.count = (uint32_t)n};
	wire_hsm_poll_rep_encode(&rep->body, &head);
	for (int i = 0; i < n; i++)
		wire_hsm_action_put(&rep->body, &out[i]);
	free(out);
	return wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
}

static void note_failure(struct mds_hsm *h, const struct nacre_fid *fid, int err)
{
	pthread_mutex_lock(&h->lock);
	struct recent_fail *f = &h->fails[h->nfails++ % RECENT_FAILS];
	f->fid = *fid;
	f->err = err == -ENOENT ? -ENODATA : -EIO;
	f->ms = now_ms();
	pthread_mutex_unlock(&h->lock);
}

static int do_progress(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_progress *p = malloc(sizeof(*p));
	struct wire_cursor c;
	if (!p)
		return -ENOMEM;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_progress_decode(&c, p);
	int rc = finish_decode(req, &c);
	if (rc) {
		free(p);
		return rc;
	}
	uint32_t flags = 0, action = 0;
	pthread_mutex_lock(&h->lock);
	struct active *ac = active_find(h, p->cookie);
	if (!ac || ac->ending || ac->conn != req->conn_id || !mds_fid_eq(&ac->fid, &p->fid)) {
		pthread_mutex_unlock(&h->lock);
		free(p);
		return -ESTALE; /* taken back (timeout) or never ours: the agent must drop it */
	}
	ac->done = p->bytes_done;
	if (p->bytes_total)
		ac->total = p->bytes_total;
	ac->last_ms = now_ms();
	if (ac->cancel)
		flags |= WIRE_HSM_REP_CANCEL;
	action = ac->action;
	if (p->flags & WIRE_HSM_PROGRESS_FINAL)
		ac->ending = 1;
	pthread_mutex_unlock(&h->lock);
	if (p->flags & WIRE_HSM_PROGRESS_FINAL) {
		struct finish_arg a = {h, p->cookie, p, 0};
		char fs[NACRE_FID_STR_MAX];
		rc = mds_writer_submit(h->m->writer, finish_op, &a);
		drop_ended(h, &p->cookie, 1);
		if (a.destroyed)
			mds_ns_kick_destroy(h->m);
		if (p->status && p->status != -ECANCELED) {
			LOG_WARN("hsm", "%s of %s failed on %s: %s",
				 action == NACRE_HSMA_ARCHIVE	  ? "ARCHIVE"
				 : action == NACRE_HSMA_RESTORE ? "RESTORE"
								: "REMOVE",
				 mds_fid_str(&p->fid, fs, sizeof(fs)), req->peer,
				 nacre_strerror(p->status));
			if (action == NACRE_HSMA_RESTORE)
				note_failure(h, &p->fid, p->status);
		}
		wake(h);
	}
	free(p);
	if (!rc) {
		struct wire_hsm_progress_rep out = {.flags = flags};
		wire_hsm_progress_rep_encode(&rep->body, &out);
	}
	return rc;
}

struct import_arg {
	struct mds *m;
	const struct wire_hsm_import_req *r;
	struct wire_attr_rep out;
};

static int import_op(struct mds_txn *txn, void *arg)
{
	struct import_arg *a = arg;
	const struct wire_hsm_import_req *r = a->r;
	struct mds_inode *dir = malloc(sizeof(*dir)), *ino = calloc(1, sizeof(*ino));
	struct nacre_fid existing;
	int rc = dir && ino ? 0 : -ENOMEM;
	if (!rc)
		rc = mds_ns_get_dir(txn, &r->parent, dir);
	if (!rc)
		rc = mds_perm_check(&r->cred, dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (!rc) {
		rc = mds_db_dentry_get(txn, &r->parent, r->name, &existing, NULL);
		rc = rc == 0 ? -EEXIST : rc == -ENOENT ? 0 : rc;
	}
	if (!rc)
		rc = mds_db_fid_alloc(txn, &ino->fid);
	if (!rc)
		rc = mds_alloc_file_layout(a->m, txn, dir, NULL, &ino->layout);
	if (rc)
		goto out;
	struct nacre_time now = time_now();
	ino->mode = S_IFREG | (r->mode & 07777);
	ino->uid = r->uid;
	ino->gid = r->gid;
	ino->nlink = 1;
	ino->size = r->size;
	ino->atime = ino->mtime = r->mtime;
	ino->ctime = now;
	ino->has_layout = 1;
	/* a stub: the data is only in the archive until its first open */
	ino->hsm_state = NACRE_HS_EXISTS | NACRE_HS_ARCHIVED | NACRE_HS_RELEASED;
	ino->archive_id = r->archive_id;
	rc = mds_db_inode_put(txn, ino);
	if (!rc)
		rc = mds_db_dentry_put(txn, &r->parent, r->name, &ino->fid, S_IFREG);
	if (!rc)
		rc = mds_db_link_put(txn, &ino->fid, &r->parent, r->name);
	if (!rc)
		rc = mds_db_xattr_put(txn, &ino->fid, MDS_HSM_PATH_XATTR, r->path, strlen(r->path));
	if (rc)
		goto out;
	dir->nentries++;
	dir->mtime = dir->ctime = now;
	rc = mds_db_inode_put(txn, dir);
	if (!rc)
		mds_inode_to_attr(ino, &a->out.attr);
out:
	free(dir);
	free(ino);
	return rc;
}

static int do_import(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_import_req *r = malloc(sizeof(*r));
	struct wire_cursor c;
	if (!r)
		return -ENOMEM;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_import_req_decode(&c, r);
	int rc = finish_decode(req, &c);
	if (!rc && !mds_perm_is_root(&r->cred))
		rc = -EPERM; /* it sets any owner, as chown does */
	if (!rc) {
		struct import_arg a = {.m = h->m, .r = r};
		rc = mds_writer_submit(h->m->writer, import_op, &a);
		if (!rc)
			wire_attr_rep_encode(&rep->body, &a.out);
	}
	free(r);
	return rc;
}

int mds_hsm_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct mds_hsm *h = m->hsm;
	if (!h)
		return -EOPNOTSUPP;
	switch (req->hdr->opcode) {
	case WIRE_OP_MDS_HSM_REQUEST:
		return do_request(h, req, rep);
	case WIRE_OP_MDS_HSM_STATE_GET:
		return do_state_get(h, req, rep);
	case WIRE_OP_MDS_HSM_STATE_SET:
		return do_state_set(h, req, rep);
	case WIRE_OP_MDS_HSM_ACTION:
		return do_action(h, req, rep);
	case WIRE_OP_MDS_HSM_LIST:
		return do_list(h, req, rep);
	case WIRE_OP_MDS_HSM_AGENT_REGISTER:
		return do_register(h, req);
	case WIRE_OP_MDS_HSM_AGENT_POLL:
		return do_poll(h, req, rep);
	case WIRE_OP_MDS_HSM_AGENT_PROGRESS:
		return do_progress(h, req, rep);
	case WIRE_OP_MDS_HSM_IMPORT:
		return do_import(h, req, rep);
	default:
		return -EOPNOTSUPP;
	}
}

/* ---------------- coordinator thread: timeouts, purge, policy ---------------- */

static void check_timeouts(struct mds_hsm *h)
{
	uint64_t cookies[WIRE_HSM_POLL_MAX];
	uint32_t n = 0;
	int64_t now = now_ms(), limit = (int64_t)h->conf.timeout_s * 1000;
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->nact && n < WIRE_HSM_POLL_MAX; i++) {
		if (!h->act[i].ending && now - h->act[i].last_ms > limit) {
			cookies[n++] = h->act[i].cookie;
			h->act[i].ending = 1;
		}
	}
	pthread_mutex_unlock(&h->lock);
	requeue(h, cookies, n, "no progress from their agent within the timeout");
}

struct purge_arg {
	const uint64_t *cookies;
	uint32_t n;
};

static int purge_op(struct mds_txn *txn, void *arg)
{
	struct purge_arg *a = arg;
	for (uint32_t i = 0; i < a->n; i++) {
		int rc = mds_db_hsm_del(txn, a->cookies[i]);
		if (rc && rc != -ENOENT)
			return rc;
	}
	return 0;
}

static void purge(struct mds_hsm *h)
{
	uint64_t *cookies = malloc(sizeof(*cookies) * PURGE_BATCH);
	struct mds_hsm_rec *r = malloc(sizeof(*r));
	struct mds_txn *txn;
	uint32_t n = 0;
	if (!cookies || !r || mds_txn_begin_read(h->m->db, &txn)) {
		free(cookies);
		free(r);
		return;
	}
	int64_t old = time_now().sec - h->conf.grace_s;
	for (uint64_t from = 0; n < PURGE_BATCH && mds_db_hsm_next(txn, from, r) == 0;
	     from = r->a.cookie + 1) {
		if (r->a.status >= NACRE_HAS_FAILED && r->a.mtime.sec < old)
			cookies[n++] = r->a.cookie;
	}
	mds_txn_abort(txn);
	if (n) {
		struct purge_arg a = {cookies, n};
		mds_writer_submit(h->m->writer, purge_op, &a);
	}
	free(cookies);
	free(r);
}

/* Policy candidates, collected in one read pass over the inodes. */
struct cand {
	struct nacre_fid fid;
	int64_t atime;
	uint64_t size;
};
struct policy_scan {
	struct mds_hsm *h;
	int64_t now;
	struct nacre_fid *archive;
	size_t narchive, caparchive;
	struct cand *release;
	size_t nrelease, caprelease;
};

static int policy_inode(void *arg, const struct mds_inode *ino)
{
	struct policy_scan *s = arg;
	const struct mds_hsm_conf *cf = &s->h->conf;
	uint32_t st = ino->hsm_state;
	if (!S_ISREG(ino->mode) || ino->nlink == 0)
		return 0;
	if (cf->archive_age_s > 0 && !(st & (NACRE_HS_NOARCHIVE | NACRE_HS_RELEASED)) &&
	    (!(st & NACRE_HS_ARCHIVED) || (st & NACRE_HS_DIRTY)) &&
	    s->now - ino->mtime.sec >= cf->archive_age_s && s->narchive < 100000) {
		if (s->narchive == s->caparchive) {
			size_t cap = s->caparchive ? s->caparchive * 2 : 256;
			void *v = realloc(s->archive, cap * sizeof(*s->archive));
			if (!v)
				return -ENOMEM;
			s->archive = v;
			s->caparchive = cap;
		}
		s->archive[s->narchive++] = ino->fid;
	}
	if (cf->release_high > 0 && (st & NACRE_HS_ARCHIVED) && (st & NACRE_HS_EXISTS) &&
	    !(st & (NACRE_HS_RELEASED | NACRE_HS_DIRTY | NACRE_HS_NORELEASE | NACRE_HS_LOST)) &&
	    ino->size > 0 && s->nrelease < 1000000) {
		if (s->nrelease == s->caprelease) {
			size_t cap = s->caprelease ? s->caprelease * 2 : 256;
			void *v = realloc(s->release, cap * sizeof(*s->release));
			if (!v)
				return -ENOMEM;
			s->release = v;
			s->caprelease = cap;
		}
		s->release[s->nrelease++] = (struct cand){ino->fid, ino->atime.sec, ino->size};
	}
	return 0;
}

static int by_atime(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return x->atime < y->atime ? -1 : x->atime > y->atime;
}

/* Sends one user request (as root) for fids through the normal request path. */
static void policy_request(struct mds_hsm *h, uint32_t action, const struct nacre_fid *fids,
			   uint32_t n)
{
	while (n > 0) {
		uint32_t k = n > 1000 ? 1000 : n;
		struct wire_hsm_request r = {.action = action, .nfids = k};
		int32_t *rcs = calloc(k, sizeof(*rcs));
		if (!rcs)
			return;
		struct req_arg a = {h, &r, fids, rcs, 0, 0};
		mds_writer_submit(h->m->writer, request_op, &a);
		if (a.released)
			mds_ns_kick_destroy(h->m);
		if (a.queued)
			wake(h);
		free(rcs);
		fids += k;
		n -= k;
	}
}

static void run_policy(struct mds_hsm *h)
{
	struct policy_scan s = {.h = h, .now = time_now().sec};
	struct mds_txn *txn;
	if (mds_txn_begin_read(h->m->db, &txn))
		return;
	int rc = mds_db_inode_iter(txn, policy_inode, &s);
	mds_txn_abort(txn);
	if (!rc && s.narchive) {
		LOG_INFO("hsm", "policy: archiving %zu files not modified for %llds", s.narchive,
			 (long long)h->conf.archive_age_s);
		policy_request(h, NACRE_HUA_ARCHIVE, s.archive, (uint32_t)s.narchive);
	}
	/* The space a release frees shows in the OSTs' statfs only after the destroy log ran
	 * and a few heartbeats: deciding again before would release far too much. */
	if (!rc && s.nrelease && h->conf.release_high > 0 &&
	    now_ms() - h->last_release_ms >= POLICY_RELEASE_SETTLE_MS) {
		/* the fullest OST decides; release LRU files until the bytes freed bring it
		 * below the low mark (an estimate: files spread over the OSTs) */
		struct nacre_target *t = NULL;
		int n = mds_targets_list(h->m->targets, &t);
		uint64_t need = 0;
		for (int i = 0; i < n; i++) {
			if (!t[i].up || t[i].st.kb_total == 0)
				continue;
			uint64_t u = t[i].st.kb_total - t[i].st.kb_free;
			if (u * 100 > (uint64_t)h->conf.release_high * t[i].st.kb_total) {
				uint64_t low = (uint64_t)h->conf.release_low * t[i].st.kb_total / 100;
				/* files are spread over the n OSTs: freeing X frees ~X/n here */
				uint64_t over = (u - low) * 1024 * (uint64_t)n;
				if (over > need)
					need = over;
			}
		}
		free(t);
		if (need > 0) {
			qsort(s.release, s.nrelease, sizeof(*s.release), by_atime);
			struct nacre_fid *fids = malloc(sizeof(*fids) * s.nrelease);
			uint32_t k = 0;
			uint64_t freed = 0;
			for (size_t i = 0; fids && i < s.nrelease && freed < need; i++) {
				fids[k++] = s.release[i].fid;
				freed += s.release[i].size;
			}
			LOG_INFO("hsm", "policy: an OST is above %d%%: releasing %u files",
				 h->conf.release_high, k);
			if (fids)
				policy_request(h, NACRE_HUA_RELEASE, fids, k);
			h->last_release_ms = now_ms();
			free(fids);
		}
	}
	free(s.archive);
	free(s.release);
}

/* The queue depth by status, for the gauges: one read pass over the records each tick
 * (counting there rather than in every transaction that changes a status keeps the gauges
 * right when a batch aborts). */
static void count_queue(struct mds_hsm *h)
{
	struct mds_hsm_rec *r = malloc(sizeof(*r));
	struct mds_txn *txn;
	uint64_t waiting = 0, started = 0;
	if (!r || mds_txn_begin_read(h->m->db, &txn)) {
		free(r);
		return;
	}
	for (uint64_t from = 0; mds_db_hsm_next(txn, from, r) == 0; from = r->a.cookie + 1) {
		if (r->a.status == NACRE_HAS_WAITING)
			waiting++;
		else if (r->a.status == NACRE_HAS_STARTED)
			started++;
		if (r->a.cookie == UINT64_MAX)
			break;
	}
	mds_txn_abort(txn);
	free(r);
	metrics_set(h->m_waiting, (double)waiting);
	metrics_set(h->m_queued_started, (double)started);
}

static void *coordinator(void *arg)
{
	struct mds_hsm *h = arg;
	int64_t last_purge = now_ms(), last_policy = now_ms();
	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&h->tick, &h->lock, &ts);
		if (h->stop)
			break;
		pthread_mutex_unlock(&h->lock);
		check_timeouts(h);
		count_queue(h);
		int64_t now = now_ms();
		if (now - last_purge > 10000) {
			purge(h);
			last_purge = now;
		}
		if ((h->conf.archive_age_s > 0 || h->conf.release_high > 0) &&
		    now - last_policy > (int64_t)h->conf.policy_period_s * 1000) {
			run_policy(h);
			last_policy = now;
		}
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* ---------------- start / stop ---------------- */

struct recover_arg {
	uint64_t last;
	uint32_t requeued;
};

static int recover_op(struct mds_txn *txn, void *arg)
{
	struct recover_arg *a = arg;
	struct mds_hsm_rec *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	int rc = mds_db_hsm_last(txn, &a->last);
	for (uint64_t from = 0; !rc && mds_db_hsm_next(txn, from, r) == 0; from = r->a.cookie + 1) {
		if (r->a.status != NACRE_HAS_STARTED)
			continue;
		r->a.status = NACRE_HAS_WAITING;
		r->a.bytes_done = 0;
		rc = mds_db_hsm_put(txn, r);
		a->requeued++;
		if (r->a.cookie == UINT64_MAX)
			break;
	}
	free(r);
	return rc;
}

int mds_hsm_start(struct mds *m, const struct mds_hsm_conf *conf, struct mds_hsm **out)
{
	struct mds_hsm *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->m = m;
	h->conf = *conf;
	if (!h->conf.max_active)
		h->conf.max_active = 64;
	if (!h->conf.timeout_s)
		h->conf.timeout_s = 120;
	if (!h->conf.grace_s)
		h->conf.grace_s = 300;
	if (!h->conf.default_archive)
		h->conf.default_archive = 1;
	if (!h->conf.policy_period_s)
		h->conf.policy_period_s = 30;
	if (h->conf.release_high > 0 && h->conf.release_low >= h->conf.release_high)
		h->conf.release_low = h->conf.release_high - 1;
	h->m_active = metrics_gauge("nacre_mds_hsm_active_actions", "",
				    "HSM actions STARTED now (at most --hsm-max-active)");
	h->m_active_max = metrics_gauge("nacre_mds_hsm_active_actions_max", "",
					"most HSM actions STARTED at once since the MDS started");
	h->m_started = metrics_counter("nacre_mds_hsm_actions_started_total", "",
				       "HSM actions handed to copytools");
	h->m_waiting = metrics_gauge("nacre_mds_hsm_actions", "status=\"WAITING\"",
				     "HSM actions in the coordinator queue by status "
				     "(counted every second)");
	h->m_queued_started = metrics_gauge("nacre_mds_hsm_actions", "status=\"STARTED\"",
					    "HSM actions in the coordinator queue by status "
					    "(counted every second)");
	/* plain gauges, not callbacks: the registry outlives h */
	metrics_set(metrics_gauge("nacre_mds_hsm_max_active", "", "the --hsm-max-active setting"),
		    h->conf.max_active);
	h->act = calloc(h->conf.max_active, sizeof(*h->act));
	if (!h->act) {
		free(h);
		return -ENOMEM;
	}
	struct recover_arg ra = {0, 0};
	int rc = mds_writer_submit(m->writer, recover_op, &ra);
	if (rc) {
		free(h->act);
		free(h);
		return rc;
	}
	if (ra.requeued)
		LOG_INFO("hsm", "%u actions started before the restart are WAITING again",
			 ra.requeued);
	h->next_cookie = ra.last + 1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->work, NULL);
	pthread_cond_init(&h->tick, NULL);
	rc = -pthread_create(&h->thread, NULL, coordinator, h);
	if (rc) {
		free(h->act);
		free(h);
		return rc;
	}
	g_hsm = h;
	*out = h;
	return 0;
}

void mds_hsm_stop(struct mds_hsm *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = 1;
	pthread_cond_broadcast(&h->tick);
	pthread_cond_broadcast(&h->work);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	g_hsm = NULL;
	pthread_cond_destroy(&h->work);
	pthread_cond_destroy(&h->tick);
	pthread_mutex_destroy(&h->lock);
	free(h->act);
	free(h);
}
