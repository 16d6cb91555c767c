/* hsm_agent.c - HSM agents (copytools) and the STARTED actions they run, in memory: a poll
 * starts actions, progress and the final report end them, and a silent or departed agent's
 * actions go back to WAITING. See hsm_int.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"
#include "mds/alloc.h"
#include "mds/hsm_int.h"
#include "mds/changelog.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"

/* Caller holds h->lock. */
struct agent *mds_hsm_agent_find(struct mds_hsm *h, uint64_t conn)
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
struct active *mds_hsm_active_find(struct mds_hsm *h, uint64_t cookie)
{
	for (uint32_t i = 0; i < h->nact; i++)
		if (h->act[i].cookie == cookie)
			return &h->act[i];
	return NULL;
}

/* Caller holds h->lock. Drops a (a pointer into h->act) and its agent's count. */
static void active_drop(struct mds_hsm *h, struct active *a)
{
	struct agent *ag = mds_hsm_agent_find(h, a->conn);
	if (ag && ag->active > 0)
		ag->active--;
	*a = h->act[--h->nact];
	metrics_set(h->m_active, h->nact);
	pthread_cond_broadcast(&h->work);
}

/* Drops the ending actions of cookies once their new status is committed. */
void mds_hsm_drop_ended(struct mds_hsm *h, const uint64_t *cookies, uint32_t n)
{
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < n; i++) {
		struct active *a = mds_hsm_active_find(h, cookies[i]);
		if (a && a->ending)
			active_drop(h, a);
	}
	pthread_mutex_unlock(&h->lock);
}

/* ---------------- start, progress, requeue ---------------- */

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
	struct agent *ag = mds_hsm_agent_find(h, a->conn);
	if (!ag || ag->active >= ag->max_active || h->nact >= h->conf.max_active ||
	    mds_hsm_active_find(h, cookie)) {
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
		struct active *x = mds_hsm_active_find(h, cookie);
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
int mds_hsm_poll_once(struct mds_hsm *h, uint64_t conn, uint32_t max, struct nacre_hsm_action *out)
{
	struct agent ag;
	pthread_mutex_lock(&h->lock);
	struct agent *p = mds_hsm_agent_find(h, conn);
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

int mds_hsm_finish_op(struct mds_txn *txn, void *arg)
{
	struct hsm_finish_arg *a = arg;
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
	/* success: the object name used; failure: the name and the copytool's reason */
	if (p->path[0])
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
			/* no copy, no name: the next archive names it by its path then */
			int drc = mds_db_xattr_del(txn, &ino->fid, MDS_HSM_PATH_XATTR);
			if (drc && drc != -ENODATA && drc != -ENOENT)
				rc = drc;
			drc = mds_db_xattr_del(txn, &ino->fid, MDS_HSM_ORIGIN_XATTR);
			if (!rc && drc && drc != -ENODATA && drc != -ENOENT)
				rc = drc;
		}
	}
	if (!rc && have_ino) {
		uint32_t ev = r->a.status == NACRE_HAS_CANCELED ? NACRE_CL_HE_CANCEL
			      : r->a.action == NACRE_HSMA_ARCHIVE ? NACRE_CL_HE_ARCHIVE
			      : r->a.action == NACRE_HSMA_RESTORE ? NACRE_CL_HE_RESTORE
								  : NACRE_CL_HE_REMOVE;
		rc = mds_changelog_hsm(a->h->m->changelog, txn, ev, r->a.err,
				       (ino->hsm_state & NACRE_HS_DIRTY) != 0, &r->a.fid);
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

void mds_hsm_note_failure(struct mds_hsm *h, const struct nacre_fid *fid, int err)
{
	pthread_mutex_lock(&h->lock);
	struct recent_fail *f = &h->fails[h->nfails++ % RECENT_FAILS];
	f->fid = *fid;
	f->err = err == -ENOENT ? -ENODATA : -EIO;
	f->ms = now_ms();
	pthread_mutex_unlock(&h->lock);
}

int mds_hsm_restore_state(struct mds_hsm *h, uint64_t conn, const struct nacre_fid *fid,
			  struct nacre_layout *layout)
{
	int64_t now = now_ms();
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->nact; i++) {
		struct active *a = &h->act[i];
		if (a->action == NACRE_HSMA_RESTORE && fid_eq(&a->fid, fid)) {
			int mine = a->conn == conn;
			if (mine)
				*layout = a->layout;
			pthread_mutex_unlock(&h->lock);
			return mine ? 1 : -NACRE_ERESTORING;
		}
	}
	for (unsigned i = 0; i < RECENT_FAILS; i++) {
		struct recent_fail *f = &h->fails[i];
		if (f->ms && now - f->ms < RECENT_FAIL_MS && fid_eq(&f->fid, fid)) {
			int err = f->err;
			f->ms = 0; /* one open fails with it; the next one tries again */
			pthread_mutex_unlock(&h->lock);
			return err;
		}
	}
	pthread_mutex_unlock(&h->lock);
	return 0;
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
	mds_hsm_drop_ended(h, cookies, n);
	if (rc)
		LOG_WARN("hsm", "requeueing %u actions failed: %s", n, nacre_strerror(rc));
	else
		LOG_INFO("hsm", "%u actions back to WAITING: %s", n, why);
	wake(h);
}

int mds_hsm_disconnect(struct mds *m, uint64_t conn_id)
{
	struct mds_hsm *h = m->hsm;
	if (!h)
		return 0;
	uint64_t *cookies = NULL;
	uint32_t n = 0;
	pthread_mutex_lock(&h->lock);
	struct agent *ag = mds_hsm_agent_find(h, conn_id);
	if (!ag) {
		pthread_mutex_unlock(&h->lock);
		return 0;
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
	return 1;
}

void mds_hsm_check_timeouts(struct mds_hsm *h)
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
