/* hsm_queue.c - the persistent HSM action queue (LMDB): enqueueing, the user requests of
 * HSM_REQUEST (archive, restore, release, remove, cancel), and the purge of finished
 * records. See hsm_int.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/metrics.h"
#include "common/util.h"
#include "mds/hsm_int.h"
#include "mds/changelog.h"
#include "mds/open.h"
#include "mds/writer.h"

#define PURGE_BATCH 512

/* Adds a WAITING action for fid; the caller checked there is no active one. */
int mds_hsm_enqueue(struct mds_hsm *h, struct mds_txn *txn, const struct nacre_fid *fid,
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
void mds_hsm_stored_path(struct mds_txn *txn, const struct nacre_fid *fid, char *out)
{
	int n = mds_db_xattr_get(txn, fid, MDS_HSM_PATH_XATTR, out, NACRE_PATH_MAX);
	if (n < 0 || n > NACRE_PATH_MAX || memchr(out, 0, (size_t)n))
		n = 0;
	out[n] = 0;
}

/* The active action of fid, if any: 0 with *r filled, -ENOENT if none. */
int mds_hsm_active_rec(struct mds_txn *txn, const struct nacre_fid *fid, struct mds_hsm_rec *r)
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

/* ---------------- user requests (inside writer operations) ---------------- */

static int release_one(struct hsm_req_arg *a, struct mds_txn *txn, struct mds_inode *ino,
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
	if (mds_open_count(a->h->m->open, &ino->fid) > 0 ||
	    mds_hsm_active_rec(txn, &ino->fid, rec) == 0)
		return -EBUSY;
	if (ino->has_layout && ino->layout.nosts > 0) {
		int rc = mds_db_destroy_add(txn, &ino->fid, &ino->layout);
		if (rc)
			return rc;
		a->released = 1;
	}
	ino->hsm_state |= NACRE_HS_RELEASED;
	int rc = mds_db_inode_put(txn, ino);
	return rc ? rc
		  : mds_changelog_hsm(a->h->m->changelog, txn, NACRE_CL_HE_RELEASE, 0, 0,
				      &ino->fid);
}

static int request_one(struct hsm_req_arg *a, struct mds_txn *txn, const struct nacre_fid *fid)
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
	int have = mds_hsm_active_rec(txn, fid, rec) == 0;
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
		else {
			/* the name it already has (import, earlier archive), whatever its path now:
			 * the archive-name rule in README.md ("HSM") and src/hsm/copytool.c */
			mds_hsm_stored_path(txn, fid, path);
			rc = mds_hsm_enqueue(h, txn, fid, NACRE_HSMA_ARCHIVE, archive, path);
			if (!rc)
				a->queued = 1;
		}
		break;
	case NACRE_HUA_RESTORE:
		rc = mds_perm_check(cr, ino, MDS_MAY_READ);
		if (rc || !(st & NACRE_HS_RELEASED))
			break;
		if (have) {
			rc = rec->a.action == NACRE_HSMA_RESTORE ? 0 : -EBUSY;
			break;
		}
		mds_hsm_stored_path(txn, fid, path);
		rc = mds_hsm_enqueue(h, txn, fid, NACRE_HSMA_RESTORE, ino->archive_id, path);
		if (rc == 0)
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
			mds_hsm_stored_path(txn, fid, path);
			rc = mds_hsm_enqueue(h, txn, fid, NACRE_HSMA_REMOVE,
					     ino->archive_id ? ino->archive_id : archive, path);
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
			struct active *ac = mds_hsm_active_find(h, rec->a.cookie);
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
int mds_hsm_request_op(struct mds_txn *txn, void *arg)
{
	struct hsm_req_arg *a = arg;
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

/* ---------------- purge and queue depth ---------------- */

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

void mds_hsm_purge(struct mds_hsm *h)
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

/* The queue depth by status, for the gauges: one read pass over the records each tick
 * (counting there rather than in every transaction that changes a status keeps the gauges
 * right when a batch aborts). */
void mds_hsm_count_queue(struct mds_hsm *h)
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
