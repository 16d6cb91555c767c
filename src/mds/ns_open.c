/* ns_open.c - OPEN, CLOSE / SIZE_UPDATE, a connection's handles when it goes, and orphans
 * (unlinked inodes kept while open) at startup. The handles are open.c's table. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "mds/caps.h"
#include "mds/changelog.h"
#include "mds/destroy.h"
#include "mds/hsm.h"
#include "mds/inode.h"
#include "mds/ns.h"
#include "mds/open.h"
#include "mds/perm.h"
#include "mds/req.h"
#include "mds/writer.h"

/* ---------------- OPEN ---------------- */

struct open_note {
	struct mds *m;
	const struct nacre_fid *fid;
	const struct nacre_cred *cr;
};

static int open_note_op(struct mds_txn *txn, void *arg)
{
	struct open_note *n = arg;

	return mds_changelog_note(n->m->changelog, txn, NACRE_CL_OPEN, 0, n->fid, NULL, NULL,
				  n->cr);
}

int mds_ns_open(struct mds *m, uint64_t conn_id, uint64_t owner, const struct wire_open_req *r,
		struct wire_open_rep *rep)
{
	uint32_t acc = r->flags & O_ACCMODE;
	int mask = acc == O_RDONLY ? MDS_MAY_READ
		   : acc == O_WRONLY ? MDS_MAY_WRITE
				     : MDS_MAY_READ | MDS_MAY_WRITE;
	if (acc == O_RDONLY && (r->flags & WIRE_OPEN_EXEC))
		mask = MDS_MAY_EXEC; /* execve reads what it may not read otherwise */
	int trunc = (r->flags & O_TRUNC) && (mask & MDS_MAY_WRITE);
	/* a re-open after an MDS restart takes its handle back (in-flight requests name it) */
	uint64_t id = mds_req_current ? mds_req_current->replay_handle : 0;
	int reopen = id != 0;
	/* the handle exists before we look, so a racing unlink keeps the inode as an orphan */
	int rc = mds_open_handle_add(m->open, owner, &r->fid, &id);
	if (rc)
		return rc;
	struct mds_inode *ino = malloc(sizeof(*ino));
	struct mds_txn *txn = NULL;
	if (!ino) {
		rc = -ENOMEM;
		goto out_drop;
	}
	rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		goto out_drop;
	rc = mds_db_inode_get(txn, &r->fid, ino);
	mds_txn_abort(txn);
	if (rc)
		goto out_drop;
	if (S_ISLNK(ino->mode)) {
		rc = -ELOOP;
		goto out_drop;
	}
	if (!S_ISREG(ino->mode) && mask == MDS_MAY_EXEC) {
		rc = -EACCES; /* only regular files run */
		goto out_drop;
	}
	if (S_ISDIR(ino->mode) && (mask & MDS_MAY_WRITE)) {
		rc = -EISDIR;
		goto out_drop;
	}
	rc = mds_perm_check(&r->cred, ino, mask);
	if (rc)
		goto out_drop;
	/* what its capabilities will allow, now and at every renewal (caps.h) */
	mds_open_handle_set_rights(m->open, owner, id, &r->fid,
				   mds_cap_open_rights(&r->cred, ino, mask));
	/* a writer's re-open after an MDS restart: whether it wrote before went with the
	 * old table, so its close is noted as one that did (an HSM policy must see it) */
	if (reopen && (mask & MDS_MAY_WRITE))
		mds_open_handle_find(m->open, owner, id, &r->fid, 0, 1);
	mds_inode_to_attr(ino, &rep->attr);
	memset(&rep->layout, 0, sizeof(rep->layout));
	if (S_ISREG(ino->mode) && (ino->hsm_state & NACRE_HS_RELEASED)) {
		/* no data here: the copytool restoring it gets the new objects, anyone else
		 * queues (or joins) the restore and retries */
		rc = mds_hsm_open_released(m, conn_id, ino, &rep->layout);
		if (rc < 0)
			goto out_drop;
		mds_open_handle_set_restore(m->open, owner, id, &r->fid);
		rep->handle = id;
		free(ino);
		return 0;
	}
	if (S_ISREG(ino->mode) && (mask & MDS_MAY_WRITE) && (ino->hsm_state & NACRE_HS_EXISTS) &&
	    !(ino->hsm_state & NACRE_HS_DIRTY)) {
		/* the archive copy is about to be stale */
		rc = mds_hsm_set_dirty(m, &r->fid);
		if (rc)
			goto out_drop;
		rep->attr.hsm_state |= NACRE_HS_DIRTY;
	}
	if (trunc && S_ISREG(ino->mode)) {
		struct nacre_setattr sa = {.valid = NACRE_SET_SIZE | NACRE_SET_MTIME_NOW,
					   .size = 0};
		rc = mds_ns_setattr(m, &r->cred, &r->fid, &sa, &rep->attr);
		if (rc)
			goto out_drop;
	}
	if (S_ISREG(ino->mode) && ino->has_layout)
		rep->layout = ino->layout;
	if (mds_changelog_wants(m->changelog, NACRE_CL_OPEN)) {
		/* off by default, as in Lustre: an open is a read, this makes it a write */
		struct open_note n = {m, &r->fid, &r->cred};
		rc = mds_writer_submit(m->writer, open_note_op, &n);
		if (rc)
			goto out_drop;
	}
	rep->handle = id;
	if (mds_req_current)
		mds_req_current->note.value = id; /* a resent OPEN gets this handle back */
	free(ino);
	return 0;

out_drop:
	free(ino);
	mds_open_handle_drop(m->open, owner, id, &r->fid);
	return rc;
}

/* ---------------- CLOSE / SIZE_UPDATE ---------------- */

struct close_arg {
	struct mds *m;
	const struct wire_close_req *r; /* NULL: orphan check only */
	const struct nacre_fid *fid;
	struct nacre_attr *out;
	int destroyed;
	int restore; /* a copytool's restore handle: its size and mtime are not the file's */
	int is_close;
	int wrote; /* the handle reported a size or an mtime before (a CLOSE is noted) */
};

static int close_op(struct mds_txn *txn, void *arg)
{
	struct close_arg *a = arg;
	struct mds_inode ino;
	int rc = mds_db_inode_get(txn, a->fid, &ino);
	if (rc)
		return rc;
	int changed = 0;
	if (a->r && mds_perm_is_root(&a->r->cred))
		mds_txn_quota_exempt(txn);
	if (a->r && S_ISREG(ino.mode) && !a->restore) {
		int grew = a->r->size > ino.size;
		if (grew) {
			ino.size = a->r->size;
			changed = 1;
		}
		if (a->r->has_mtime) {
			ino.mtime = a->r->mtime;
			ino.ctime = a->r->mtime;
			mds_hsm_mark_dirty(&ino);
			changed = 1;
		}
		/* a read's atime: never backwards, and no ctime (it is not a change) */
		const struct nacre_time *at = &a->r->atime;
		if (a->r->has_atime && (at->sec > ino.atime.sec ||
					(at->sec == ino.atime.sec && at->nsec > ino.atime.nsec))) {
			ino.atime = *at;
			changed = 1;
		}
		/* measured after this client's writes reached the objects: the latest wins. A
		 * report that grew the file without a measure (a client writing front to back,
		 * an older client, a size update while writing) goes back to the estimate from
		 * the size, which never under-reports a file without holes. */
		if (a->r->has_blocks && (!ino.has_blocks || ino.blocks != a->r->blocks)) {
			ino.has_blocks = 1;
			ino.blocks = a->r->blocks;
			changed = 1;
		} else if (!a->r->has_blocks && grew && ino.has_blocks) {
			ino.has_blocks = 0;
			changed = 1;
		}
	}
	if (a->out)
		mds_inode_to_attr(&ino, a->out);
	/* the last close of an unlinked file: it goes now */
	if (ino.nlink == 0 && !S_ISDIR(ino.mode) && mds_open_count(a->m->open, a->fid) == 0) {
		a->destroyed = 1;
		return mds_ns_destroy_inode(a->m, txn, &ino);
	}
	/* Lustre writes CLOSE only for a file that was written: here the close of a handle
	 * that reported a size or an mtime, now or before (a reader's reports neither) */
	if (a->is_close && a->r && S_ISREG(ino.mode) && !a->restore &&
	    (a->r->size || a->r->has_mtime || a->wrote)) {
		rc = mds_changelog_note(a->m->changelog, txn, NACRE_CL_CLOSE, 0, a->fid, NULL,
					NULL, NULL);
		if (rc)
			return rc;
	}
	/* a close that brings nothing new (most of them: readers, empty files) writes
	 * nothing, so its commit is free */
	if (!changed)
		return 0;
	return mds_db_inode_put(txn, &ino);
}

int mds_ns_close(struct mds *m, uint64_t conn_id, const struct wire_close_req *r, int is_close,
		 struct nacre_attr *out)
{
	int kind = mds_open_handle_find(m->open, conn_id, r->handle, &r->fid, is_close,
					r->size || r->has_mtime);
	if (kind < 0 && is_close)
		LOG_DEBUG("open", "close of unknown handle %llu (conn %llu)",
			  (unsigned long long)r->handle, (unsigned long long)conn_id);
	struct close_arg a = {m, r, &r->fid, out, 0, kind > 0 && (kind & MDS_OPEN_RESTORE),
			      is_close, kind > 0 && (kind & MDS_OPEN_WROTE)};
	int rc = mds_writer_submit(m->writer, close_op, &a);
	if (a.destroyed && !rc)
		mds_destroyer_kick(m->destroyer);
	if (rc == -ENOENT) {
		/* The inode is gone: an unlinked file whose other handle's close destroyed it
		 * first, or an orphan reaped when the MDS restarted. Closing it has nothing
		 * left to do; a size report names a file handle that is stale. */
		if (!is_close)
			return -ESTALE;
		memset(out, 0, sizeof(*out));
		out->fid = r->fid;
		rc = 0;
	}
	return rc;
}

void mds_ns_disconnect(struct mds *m, uint64_t conn_id)
{
	struct nacre_fid *closed;
	size_t n = mds_open_drop_conn(m->open, conn_id, &closed);
	int destroyed = 0;
	for (size_t i = 0; i < n; i++) {
		struct close_arg a = {m, NULL, &closed[i], NULL, 0, 0, 0, 0};
		if (mds_writer_submit(m->writer, close_op, &a) == 0 && a.destroyed)
			destroyed = 1;
	}
	if (n)
		LOG_DEBUG("open", "connection %llu went away with %zu open handles",
			  (unsigned long long)conn_id, n);
	free(closed);
	if (destroyed)
		mds_destroyer_kick(m->destroyer);
}

/* ---------------- orphans at startup ---------------- */

struct orphans {
	struct nacre_fid *v;
	size_t n, cap;
};

static int collect_orphan(void *arg, const struct mds_inode *ino)
{
	struct orphans *o = arg;
	if (ino->nlink != 0 || S_ISDIR(ino->mode))
		return 0;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct nacre_fid *v = realloc(o->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		o->v = v;
		o->cap = cap;
	}
	o->v[o->n++] = ino->fid;
	return 0;
}

int mds_ns_reap_orphans(struct mds *m)
{
	struct orphans o = {0};
	struct mds_txn *txn;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		return rc;
	rc = mds_db_inode_iter(txn, collect_orphan, &o);
	mds_txn_abort(txn);
	size_t destroyed = 0;
	for (size_t i = 0; !rc && i < o.n; i++) {
		struct close_arg a = {m, NULL, &o.v[i], NULL, 0, 0, 0, 0};
		rc = mds_writer_submit(m->writer, close_op, &a);
		if (rc == -ENOENT)
			rc = 0;
		destroyed += a.destroyed;
	}
	if (destroyed)
		LOG_INFO("open", "destroyed %zu orphan inodes left by unlinked open files "
				 "(%zu still open)", destroyed, o.n - destroyed);
	free(o.v);
	if (!rc && destroyed)
		mds_destroyer_kick(m->destroyer);
	return rc;
}
