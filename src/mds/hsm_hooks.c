/* hsm_hooks.c - what the namespace calls when a file changes under HSM (hsm.h): the dirty
 * bit, the REMOVE an unlink may queue, and the restore an open of a released file queues. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/log.h"
#include "mds/hsm_int.h"
#include "mds/changelog.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"

void mds_hsm_mark_dirty(struct mds_inode *ino)
{
	if (S_ISREG(ino->mode) && (ino->hsm_state & NACRE_HS_EXISTS))
		ino->hsm_state |= NACRE_HS_DIRTY;
}

struct dirty_arg {
	struct mds *m;
	struct nacre_fid fid;
};

static int dirty_op(struct mds_txn *txn, void *arg)
{
	struct dirty_arg *a = arg;
	struct mds_inode ino;
	int rc = mds_db_inode_get(txn, &a->fid, &ino);
	if (rc || (ino.hsm_state & NACRE_HS_DIRTY) || !(ino.hsm_state & NACRE_HS_EXISTS))
		return rc;
	ino.hsm_state |= NACRE_HS_DIRTY;
	rc = mds_db_inode_put(txn, &ino);
	/* as Lustre: the archive copy going stale is an HSM state record, dirty */
	return rc ? rc
		  : mds_changelog_hsm(a->m->changelog, txn, NACRE_CL_HE_STATE, 0, 1, &a->fid);
}

int mds_hsm_set_dirty(struct mds *m, const struct nacre_fid *fid)
{
	struct dirty_arg a = {m, *fid};
	return mds_writer_submit(m->writer, dirty_op, &a);
}

int mds_hsm_inode_destroyed(struct mds *m, struct mds_txn *txn, const struct mds_inode *ino)
{
	struct mds_hsm *h = m->hsm;
	if (!h || !h->conf.remove_on_unlink || !S_ISREG(ino->mode) ||
	    !(ino->hsm_state & NACRE_HS_EXISTS))
		return 0;
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	char *path = malloc(NACRE_PATH_MAX + 1);
	int rc = rec && path ? 0 : -ENOMEM;
	if (!rc && mds_hsm_active_rec(txn, &ino->fid, rec) == 0) {
		if (rec->a.status == NACRE_HAS_WAITING) {
			rec->a.status = NACRE_HAS_CANCELED;
			rc = mds_db_hsm_put(txn, rec);
		}
		/* a STARTED one ends on its own; the REMOVE below takes the index entry */
	}
	if (!rc) {
		mds_hsm_stored_path(txn, &ino->fid, path);
		if (path[0])
			rc = mds_hsm_enqueue(h, txn, &ino->fid, NACRE_HSMA_REMOVE, ino->archive_id,
					     path);
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
	if (!rc && (ino->hsm_state & NACRE_HS_RELEASED) &&
	    mds_hsm_active_rec(txn, &a->fid, rec) != 0) {
		mds_hsm_stored_path(txn, &a->fid, path);
		rc = mds_hsm_enqueue(a->h, txn, &a->fid, NACRE_HSMA_RESTORE, ino->archive_id, path);
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
	int rc = mds_hsm_restore_state(h, conn_id, &ino->fid, layout);
	if (rc)
		return rc;

	/* queue a restore unless one waits already (checked without the writer first) */
	struct mds_txn *txn;
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rc = mds_txn_begin_read(m->db, &txn);
	int have = 0;
	if (!rc) {
		have = mds_hsm_active_rec(txn, &ino->fid, rec) == 0;
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
				  fid_format(&ino->fid, fs, sizeof(fs)));
			wake(h);
		}
	}
	return -NACRE_ERESTORING;
}
