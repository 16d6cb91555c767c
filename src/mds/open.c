/* open.c - open handles, CLOSE / SIZE_UPDATE, orphans. */
#include "mds/open.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/db.h"
#include "mds/hsm.h"
#include "mds/ns.h"
#include "mds/perm.h"
#include "mds/req.h"
#include "mds/writer.h"

#define NBUCKETS 4096u

struct handle {
	uint64_t id;
	uint64_t conn_id;
	struct nacre_fid fid;
	int restore;         /* a copytool's handle on a restore's new objects */
	struct handle *next; /* bucket chain by id */
};

struct fid_count {
	struct nacre_fid fid;
	int count;
	struct fid_count *next; /* bucket chain by fid */
};

struct mds_open_table {
	pthread_mutex_t lock;
	struct handle *handles[NBUCKETS]; /* protected by lock */
	struct fid_count *fids[NBUCKETS]; /* protected by lock */
	uint64_t next_id;                 /* protected by lock; handle ids are never 0 */
};

static unsigned fid_bucket(const struct nacre_fid *f)
{
	uint64_t h = f->seq * 0x9e3779b97f4a7c15ull ^ ((uint64_t)f->oid << 16) ^ f->ver;
	return (unsigned)(h ^ (h >> 29)) % NBUCKETS;
}

int mds_open_table_create(struct mds_open_table **out)
{
	struct mds_open_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	t->next_id = 1;
	*out = t;
	return 0;
}

void mds_open_table_destroy(struct mds_open_table *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < NBUCKETS; i++) {
		for (struct handle *h = t->handles[i], *n; h; h = n) {
			n = h->next;
			free(h);
		}
		for (struct fid_count *f = t->fids[i], *n; f; f = n) {
			n = f->next;
			free(f);
		}
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Caller holds t->lock. */
static struct fid_count **fid_slot(struct mds_open_table *t, const struct nacre_fid *fid)
{
	struct fid_count **pp = &t->fids[fid_bucket(fid)];
	while (*pp && !mds_fid_eq(&(*pp)->fid, fid))
		pp = &(*pp)->next;
	return pp;
}

int mds_open_count(struct mds_open_table *t, const struct nacre_fid *fid)
{
	pthread_mutex_lock(&t->lock);
	struct fid_count *f = *fid_slot(t, fid);
	int n = f ? f->count : 0;
	pthread_mutex_unlock(&t->lock);
	return n;
}

static int handle_add(struct mds_open_table *t, uint64_t conn_id, const struct nacre_fid *fid,
		      uint64_t *id)
{
	struct handle *h = malloc(sizeof(*h));
	struct fid_count *nf = malloc(sizeof(*nf));
	if (!h || !nf) {
		free(h);
		free(nf);
		return -ENOMEM;
	}
	pthread_mutex_lock(&t->lock);
	h->id = t->next_id++;
	h->conn_id = conn_id;
	h->fid = *fid;
	h->restore = 0;
	h->next = t->handles[h->id % NBUCKETS];
	t->handles[h->id % NBUCKETS] = h;
	struct fid_count **pp = fid_slot(t, fid);
	if (*pp) {
		(*pp)->count++;
		free(nf);
	} else {
		nf->fid = *fid;
		nf->count = 1;
		nf->next = NULL;
		*pp = nf;
	}
	*id = h->id;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* Caller holds t->lock. Unlinks h from its bucket (pp points at it) and frees it. */
static void handle_drop_locked(struct mds_open_table *t, struct handle **pp)
{
	struct handle *h = *pp;
	*pp = h->next;
	struct fid_count **fp = fid_slot(t, &h->fid);
	if (*fp && --(*fp)->count <= 0) {
		struct fid_count *f = *fp;
		*fp = f->next;
		free(f);
	}
	free(h);
}

/* Finds handle id of conn_id and fid; drops it if drop. Returns 1 for a restore handle, 0
 * for another, -EBADF if unknown. With set_restore, marks it a restore handle. */
static int handle_find(struct mds_open_table *t, uint64_t conn_id, uint64_t id,
		       const struct nacre_fid *fid, int drop, int set_restore)
{
	int rc = -EBADF;
	pthread_mutex_lock(&t->lock);
	for (struct handle **pp = &t->handles[id % NBUCKETS]; *pp; pp = &(*pp)->next) {
		struct handle *h = *pp;
		if (h->id == id && h->conn_id == conn_id && mds_fid_eq(&h->fid, fid)) {
			if (set_restore)
				h->restore = 1;
			rc = h->restore;
			if (drop)
				handle_drop_locked(t, pp);
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

static int handle_remove(struct mds_open_table *t, uint64_t conn_id, uint64_t id,
			 const struct nacre_fid *fid)
{
	int rc = handle_find(t, conn_id, id, fid, 1, 0);
	return rc < 0 ? rc : 0;
}

/* ---------------- OPEN ---------------- */

int mds_open_handle_add(struct mds_open_table *t, uint64_t conn_id, const struct nacre_fid *fid,
			uint64_t *handle)
{
	return handle_add(t, conn_id, fid, handle);
}

void mds_open_handle_drop(struct mds_open_table *t, uint64_t conn_id, uint64_t handle,
			  const struct nacre_fid *fid)
{
	handle_remove(t, conn_id, handle, fid);
}

int mds_open_handle_known(struct mds_open_table *t, uint64_t owner, uint64_t handle,
			  const struct nacre_fid *fid)
{
	return handle_find(t, owner, handle, fid, 0, 0) >= 0;
}

void mds_open_handle_forget(struct mds_open_table *t, uint64_t owner, uint64_t handle)
{
	pthread_mutex_lock(&t->lock);
	for (struct handle **pp = &t->handles[handle % NBUCKETS]; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == handle && (*pp)->conn_id == owner) {
			handle_drop_locked(t, pp);
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

int mds_ns_open(struct mds *m, uint64_t conn_id, uint64_t owner, const struct wire_open_req *r,
		struct wire_open_rep *rep)
{
	uint32_t acc = r->flags & O_ACCMODE;
	int mask = acc == O_RDONLY ? MDS_MAY_READ
		   : acc == O_WRONLY ? MDS_MAY_WRITE
				     : MDS_MAY_READ | MDS_MAY_WRITE;
	int trunc = (r->flags & O_TRUNC) && (mask & MDS_MAY_WRITE);
	uint64_t id;
	/* the handle exists before we look, so a racing unlink keeps the inode as an orphan */
	int rc = handle_add(m->open, owner, &r->fid, &id);
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
	if (S_ISDIR(ino->mode) && (mask & MDS_MAY_WRITE)) {
		rc = -EISDIR;
		goto out_drop;
	}
	rc = mds_perm_check(&r->cred, ino, mask);
	if (rc)
		goto out_drop;
	mds_inode_to_attr(ino, &rep->attr);
	memset(&rep->layout, 0, sizeof(rep->layout));
	if (S_ISREG(ino->mode) && (ino->hsm_state & NACRE_HS_RELEASED)) {
		/* no data here: the copytool restoring it gets the new objects, anyone else
		 * queues (or joins) the restore and retries */
		rc = mds_hsm_open_released(m, conn_id, ino, &rep->layout);
		if (rc < 0)
			goto out_drop;
		handle_find(m->open, owner, id, &r->fid, 0, 1);
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
	rep->handle = id;
	if (mds_req_current)
		mds_req_current->note.value = id; /* a resent OPEN gets this handle back */
	free(ino);
	return 0;

out_drop:
	free(ino);
	handle_remove(m->open, owner, id, &r->fid);
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
};

static int close_op(struct mds_txn *txn, void *arg)
{
	struct close_arg *a = arg;
	struct mds_inode ino;
	int rc = mds_db_inode_get(txn, a->fid, &ino);
	if (rc)
		return rc;
	int changed = 0;
	if (a->r && S_ISREG(ino.mode) && !a->restore) {
		if (a->r->size > ino.size) {
			ino.size = a->r->size;
			changed = 1;
		}
		if (a->r->has_mtime) {
			ino.mtime = a->r->mtime;
			ino.ctime = a->r->mtime;
			mds_hsm_mark_dirty(&ino);
			changed = 1;
		}
	}
	if (a->out)
		mds_inode_to_attr(&ino, a->out);
	/* the last close of an unlinked file: it goes now */
	if (ino.nlink == 0 && !S_ISDIR(ino.mode) && mds_open_count(a->m->open, a->fid) == 0) {
		a->destroyed = 1;
		return mds_ns_destroy_inode(txn, &ino);
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
	int kind = handle_find(m->open, conn_id, r->handle, &r->fid, is_close, 0);
	if (kind < 0 && is_close)
		LOG_DEBUG("open", "close of unknown handle %llu (conn %llu)",
			  (unsigned long long)r->handle, (unsigned long long)conn_id);
	struct close_arg a = {m, r, &r->fid, out, 0, kind == 1};
	int rc = mds_writer_submit(m->writer, close_op, &a);
	if (a.destroyed && !rc)
		mds_ns_kick_destroy(m);
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

void mds_open_disconnect(struct mds *m, uint64_t conn_id)
{
	struct mds_open_table *t = m->open;
	struct nacre_fid *closed = NULL;
	size_t n = 0, cap = 0;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < NBUCKETS; i++) {
		struct handle **pp = &t->handles[i];
		while (*pp) {
			if ((*pp)->conn_id != conn_id) {
				pp = &(*pp)->next;
				continue;
			}
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct nacre_fid *v = realloc(closed, ncap * sizeof(*v));
				if (v) {
					closed = v;
					cap = ncap;
				}
			}
			if (n < cap)
				closed[n++] = (*pp)->fid;
			handle_drop_locked(t, pp);
		}
	}
	pthread_mutex_unlock(&t->lock);
	int destroyed = 0;
	for (size_t i = 0; i < n; i++) {
		struct close_arg a = {m, NULL, &closed[i], NULL, 0, 0};
		if (mds_writer_submit(m->writer, close_op, &a) == 0 && a.destroyed)
			destroyed = 1;
	}
	if (n)
		LOG_DEBUG("open", "connection %llu went away with %zu open handles",
			  (unsigned long long)conn_id, n);
	free(closed);
	if (destroyed)
		mds_ns_kick_destroy(m);
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

int mds_reap_orphans(struct mds *m)
{
	struct orphans o = {0};
	struct mds_txn *txn;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		return rc;
	rc = mds_db_inode_iter(txn, collect_orphan, &o);
	mds_txn_abort(txn);
	for (size_t i = 0; !rc && i < o.n; i++) {
		struct close_arg a = {m, NULL, &o.v[i], NULL, 0, 0};
		rc = mds_writer_submit(m->writer, close_op, &a);
		if (rc == -ENOENT)
			rc = 0;
	}
	if (o.n)
		LOG_INFO("open", "destroyed %zu orphan inodes left by unlinked open files", o.n);
	free(o.v);
	if (!rc && o.n)
		mds_ns_kick_destroy(m);
	return rc;
}

uint64_t mds_open_handles(struct mds_open_table *t)
{
	uint64_t n = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < NBUCKETS; i++)
		for (struct handle *h = t->handles[i]; h; h = h->next)
			n++;
	pthread_mutex_unlock(&t->lock);
	return n;
}
