/* ns.c - namespace operations: lookup, getattr, setattr, create family, readlink, unlink,
 * rmdir, link, readdir, fid2path, and the helpers the other ns files share. Rename is in
 * rename.c, xattrs in xattr.c, open and close in ns_open.c, layouts in ns_layout.c, HSM
 * import in ns_import.c. */
#include "mds/ns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fid.h"
#include "common/layout.h"
#include "common/log.h"
#include "common/util.h"
#include "mds/alloc.h"
#include "mds/changelog.h"
#include "mds/destroy.h"
#include "mds/fid_grant.h"
#include "mds/hsm.h"
#include "mds/inode.h"
#include "mds/ns_acl.h"
#include "mds/open.h"
#include "mds/oss_pool.h"
#include "mds/perm.h"
#include "mds/req.h"
#include "mds/writer.h"

int mds_ns_get_dir(struct mds_txn *txn, const struct nacre_fid *fid, struct mds_inode *dir)
{
	int rc = mds_db_inode_get(txn, fid, dir);
	if (rc)
		return rc;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (dir->nlink == 0)
		return -ENOENT; /* removed while someone still held its FID */
	return 0;
}

int mds_ns_destroy_inode(struct mds *m, struct mds_txn *txn, const struct mds_inode *ino)
{
	/* a released file has no objects left; an archived one may take its copy along */
	int rc = mds_hsm_inode_destroyed(m, txn, ino);
	if (!rc && S_ISREG(ino->mode) && ino->has_layout && ino->layout.nosts > 0 &&
	    !(ino->hsm_state & NACRE_HS_RELEASED))
		rc = mds_db_destroy_add(txn, &ino->fid, &ino->layout);
	if (!rc)
		rc = mds_db_xattr_del_all(txn, &ino->fid);
	if (!rc)
		rc = mds_db_inode_del(txn, &ino->fid);
	return rc;
}

int mds_ns_drop_name(struct mds *m, struct mds_txn *txn, struct mds_inode *ino,
		     struct nacre_time now)
{
	if (S_ISDIR(ino->mode))
		return mds_ns_destroy_inode(m, txn, ino);
	if (ino->nlink > 0)
		ino->nlink--;
	ino->ctime = now;
	if (ino->nlink > 0 || mds_open_count(m->open, &ino->fid) > 0)
		return mds_db_inode_put(txn, ino); /* still named, or an orphan until last close */
	return mds_ns_destroy_inode(m, txn, ino);
}

/* ---------------- reads ---------------- */

int mds_ns_lookup(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *parent,
		  const char *name, struct nacre_attr *out)
{
	struct mds_txn *txn;
	struct mds_inode ino;
	struct nacre_fid child;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		return rc;
	rc = mds_ns_get_dir(txn, parent, &ino);
	if (!rc)
		rc = mds_perm_check(cr, &ino, MDS_MAY_EXEC);
	if (!rc)
		rc = mds_db_dentry_get(txn, parent, name, &child, NULL);
	if (!rc)
		rc = mds_db_inode_get(txn, &child, &ino);
	mds_txn_abort(txn);
	if (!rc)
		mds_inode_to_attr(&ino, out);
	return rc;
}

int mds_ns_getattr(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   struct nacre_attr *out)
{
	(void)cr; /* stat needs search permission on the path, checked by lookups */
	struct mds_txn *txn;
	struct mds_inode ino;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		return rc;
	rc = mds_db_inode_get(txn, fid, &ino);
	mds_txn_abort(txn);
	if (!rc)
		mds_inode_to_attr(&ino, out);
	return rc;
}

int mds_ns_readlink(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		    char *target)
{
	(void)cr;
	struct mds_txn *txn;
	struct mds_inode ino;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		return rc;
	rc = mds_db_inode_get(txn, fid, &ino);
	mds_txn_abort(txn);
	if (rc)
		return rc;
	if (!S_ISLNK(ino.mode))
		return -EINVAL;
	str_copy(target, ino.target, NACRE_PATH_MAX + 1);
	return 0;
}

/* One entry of a listing with attributes: its inode read in the listing's transaction. */
struct readdir_plus {
	struct mds_txn *txn;
	int attrs; /* the caller may search the directory */
	int (*fn)(void *arg, const struct nacre_dirent *d, const struct nacre_attr *a);
	void *arg;
};

static int readdir_plus_one(void *arg, const struct nacre_dirent *d)
{
	struct readdir_plus *p = arg;
	struct mds_inode ino;
	struct nacre_attr a;

	if (!p->attrs || mds_db_inode_get(p->txn, &d->fid, &ino) != 0)
		return p->fn(p->arg, d, NULL); /* no attributes: the client asks as before */
	mds_inode_to_attr(&ino, &a);
	return p->fn(p->arg, d, &a);
}

int mds_ns_readdir_plus(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *dir,
			uint64_t cookie, int plus,
			int (*fn)(void *arg, const struct nacre_dirent *d,
				  const struct nacre_attr *a),
			void *arg)
{
	struct readdir_plus p = {.fn = fn, .arg = arg};
	struct mds_inode ino;
	if (cookie >= (1ull << 63))
		return 0; /* past every hash: end of directory */
	int rc = mds_txn_begin_read(m->db, &p.txn);
	if (rc)
		return rc;
	rc = mds_ns_get_dir(p.txn, dir, &ino);
	if (!rc)
		rc = mds_perm_check(cr, &ino, MDS_MAY_READ);
	/* attributes as lookups would give them: only to who may search the directory */
	p.attrs = plus && mds_perm_check(cr, &ino, MDS_MAY_EXEC) == 0;
	if (!rc)
		rc = mds_db_dentry_iter(p.txn, dir, cookie ? cookie + 1 : 0, readdir_plus_one, &p);
	mds_txn_abort(p.txn);
	return rc < 0 ? rc : 0;
}

/* The caller needs search permission on every directory of the path, as a lookup of that
 * path would: the names are not shown to someone who could not have walked to them. */
int mds_ns_fid2path(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		    char *buf, size_t len)
{
	struct nacre_fid root = mds_root_fid(), cur = *fid, parent;
	char name[NACRE_NAME_MAX + 1];
	char *tmp = malloc(NACRE_PATH_MAX + 1);
	if (!tmp)
		return -ENOMEM;
	size_t pos = NACRE_PATH_MAX; /* the path grows leftwards from the end of tmp */
	tmp[pos] = 0;
	struct mds_txn *txn;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		goto out_free;
	struct mds_inode *ino = malloc(sizeof(*ino));
	if (!ino) {
		rc = -ENOMEM;
		goto out_abort;
	}
	rc = mds_db_inode_get(txn, fid, ino);
	/* a directory chain is at most PATH_MAX/2 deep; the bound stops a corrupt loop */
	for (int depth = 0; !rc && !fid_eq(&cur, &root); depth++) {
		if (depth > NACRE_PATH_MAX) {
			rc = -ELOOP;
			break;
		}
		rc = mds_db_link_first(txn, &cur, &parent, name);
		if (!rc)
			rc = mds_db_inode_get(txn, &parent, ino);
		if (!rc)
			rc = mds_perm_check(cr, ino, MDS_MAY_EXEC);
		if (rc)
			break;
		size_t nl = strlen(name);
		if (nl + 1 > pos) {
			rc = -ERANGE;
			break;
		}
		pos -= nl;
		memcpy(tmp + pos, name, nl);
		tmp[--pos] = '/';
		cur = parent;
	}
	free(ino);
out_abort:
	mds_txn_abort(txn);
	if (!rc) {
		const char *p = tmp[pos] ? tmp + pos : "/";
		if (str_copy(buf, p, len) >= len)
			rc = -ERANGE;
	}
out_free:
	free(tmp);
	return rc;
}

struct links_walk {
	struct mds_txn *txn;
	const struct nacre_cred *cr;
	int (*fn)(void *arg, const struct nacre_fid *parent, const char *name);
	void *arg;
	struct mds_inode dir;
	uint32_t hidden, next, seen; /* seen: one past the last link number passed */
	int stopped;
};

static int links_one(void *arg, uint32_t index, const struct nacre_fid *parent,
		     const char *name)
{
	struct links_walk *w = arg;
	int rc = mds_db_inode_get(w->txn, parent, &w->dir);

	w->seen = index + 1;
	if (!rc)
		rc = mds_perm_check(w->cr, &w->dir, MDS_MAY_EXEC);
	if (rc == -EACCES || rc == -EPERM) {
		w->hidden++;
		return 0;
	}
	if (rc)
		return rc;
	if (w->fn(w->arg, parent, name)) {
		w->next = index;
		w->stopped = 1;
		return 1;
	}
	return 0;
}

/* Each link is shown only if cr may search its directory; FID2PATH of that directory then
 * checks the rest of the path, so a path is shown exactly when fid2path would show it. */
int mds_ns_links(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		 uint32_t start,
		 int (*fn)(void *arg, const struct nacre_fid *parent, const char *name), void *arg,
		 uint32_t *hidden, uint32_t *next, int *eof)
{
	struct links_walk *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->cr = cr;
	w->fn = fn;
	w->arg = arg;
	rc = mds_txn_begin_read(m->db, &w->txn);
	if (rc)
		goto out_free;
	rc = mds_db_inode_get(w->txn, fid, &w->dir);
	if (!rc)
		rc = mds_db_link_iter(w->txn, fid, start, links_one, w);
	if (rc == 1)
		rc = 0;
	mds_txn_abort(w->txn);
	*hidden = w->hidden;
	*next = w->stopped ? w->next : (w->seen > start ? w->seen : start);
	*eof = !w->stopped;
out_free:
	free(w);
	return rc;
}

/* ---------------- setattr ---------------- */

/* The largest size file ino may have: what its objects can hold (common/layout.h). */
static uint64_t file_max_size(const struct mds_inode *ino)
{
	return layout_max_file_size(ino->has_layout ? &ino->layout : NULL);
}

struct setattr_arg {
	struct mds *m;
	const struct nacre_cred *cr;
	const struct nacre_fid *fid;
	const struct nacre_setattr *sa;
	struct nacre_attr *out;
};

/* Lustre's choice of record for a setattr: size > mode/owner > mtime > ctime > atime. */
static uint32_t setattr_type(uint32_t valid)
{
	if (valid & NACRE_SET_SIZE)
		return NACRE_CL_TRUNC;
	if (valid & (NACRE_SET_MODE | NACRE_SET_UID | NACRE_SET_GID))
		return NACRE_CL_SETATTR;
	if (valid & (NACRE_SET_MTIME | NACRE_SET_MTIME_NOW))
		return NACRE_CL_MTIME;
	if (valid & NACRE_SET_CTIME)
		return NACRE_CL_CTIME;
	if (valid & (NACRE_SET_ATIME | NACRE_SET_ATIME_NOW))
		return NACRE_CL_ATIME;
	return NACRE_CL_CTIME;
}

static int setattr_op(struct mds_txn *txn, void *arg)
{
	struct setattr_arg *a = arg;
	const struct nacre_setattr *sa = a->sa;
	struct mds_inode ino;
	int rc = mds_db_inode_get(txn, a->fid, &ino);
	if (rc)
		return rc;
	if (mds_perm_is_root(a->cr))
		mds_txn_quota_exempt(txn);
	if (sa->valid & NACRE_SET_SIZE) {
		if (S_ISDIR(ino.mode))
			return -EISDIR;
		if (!S_ISREG(ino.mode))
			return -EINVAL;
		if (sa->size > file_max_size(&ino))
			return -EFBIG;
	}
	rc = mds_perm_setattr(a->cr, &ino, sa);
	if (rc)
		return rc;
	struct nacre_time now = time_now();
	if (sa->valid & NACRE_SET_SIZE) {
		if (sa->size != ino.size && !(sa->valid & (NACRE_SET_MTIME | NACRE_SET_MTIME_NOW)))
			ino.mtime = now;
		if (sa->size != ino.size)
			mds_hsm_mark_dirty(&ino);
		/* the objects were cut to the new size: they hold at most what it rounds up
		 * to (a truncate up adds a hole, nothing allocated) */
		uint64_t most = (sa->size + 511) / 512;
		if (ino.has_blocks && ino.blocks > most)
			ino.blocks = most;
		ino.size = sa->size;
	}
	if (sa->valid & NACRE_SET_ATIME_NOW)
		ino.atime = now;
	else if (sa->valid & NACRE_SET_ATIME)
		ino.atime = sa->atime;
	if (sa->valid & NACRE_SET_MTIME_NOW)
		ino.mtime = now;
	else if (sa->valid & NACRE_SET_MTIME)
		ino.mtime = sa->mtime;
	ino.ctime = (sa->valid & NACRE_SET_CTIME) ? sa->ctime : now;
	rc = mds_db_inode_put(txn, &ino);
	if (!rc)
		rc = mds_changelog_note(a->m->changelog, txn, setattr_type(sa->valid), 0, a->fid,
					NULL, NULL, a->cr);
	if (!rc)
		mds_inode_to_attr(&ino, a->out);
	return rc;
}

int mds_ns_setattr(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   const struct nacre_setattr *sa, struct nacre_attr *out)
{
	if (sa->valid & NACRE_SET_SIZE) {
		/* objects are cut before the size is committed, so a crash leaves a file no
		 * longer than its size says */
		struct mds_txn *txn;
		struct mds_inode ino;
		int rc = mds_txn_begin_read(m->db, &txn);
		if (rc)
			return rc;
		rc = mds_db_inode_get(txn, fid, &ino);
		mds_txn_abort(txn);
		if (rc)
			return rc;
		if (S_ISDIR(ino.mode))
			return -EISDIR;
		if (!S_ISREG(ino.mode))
			return -EINVAL;
		struct mds_inode check = ino;
		rc = mds_perm_setattr(cr, &check, sa);
		if (rc)
			return rc;
		if ((ino.hsm_state & NACRE_HS_RELEASED) && sa->size != ino.size && m->hsm)
			/* the data must be back before it can be cut: restore, caller retries */
			return mds_hsm_open_released(m, 0, &ino, &(struct nacre_layout){0});
		if (ino.has_layout && ino.layout.nosts > 0 && m->oss &&
		    !(ino.hsm_state & NACRE_HS_RELEASED)) {
			rc = mds_oss_punch(m, fid, &ino.layout, sa->size);
			if (rc)
				return rc;
		}
	}
	struct setattr_arg a = {m, cr, fid, sa, out};
	return mds_writer_submit(m->writer, setattr_op, &a);
}

int mds_ns_setattr_txn(struct mds *m, struct mds_txn *txn, const struct nacre_cred *cr,
		       const struct nacre_fid *fid, const struct nacre_setattr *sa,
		       struct nacre_attr *out)
{
	if (sa->valid & NACRE_SET_SIZE) {
		/* objects are cut before a size is committed: not inside a transaction */
		struct mds_inode ino;
		int rc = mds_db_inode_get(txn, fid, &ino);
		if (rc)
			return rc;
		if (sa->size < ino.size || (ino.hsm_state & NACRE_HS_RELEASED))
			return -EOPNOTSUPP;
	}
	struct setattr_arg a = {m, cr, fid, sa, out};
	return setattr_op(txn, &a);
}

/* ---------------- create family ---------------- */

struct create_arg {
	struct mds *m;
	uint16_t opcode;
	const struct wire_create_req *req;
	struct nacre_attr *out;
	struct nacre_layout *layout_out;
	uint64_t conn_id;
	uint64_t handle; /* WIRE_CREATE_OPEN: the new file's handle, 0 if none */
};

/* The type a create opcode makes, or -EINVAL for a mode that does not fit it. */
static int create_mode(uint16_t opcode, uint32_t mode, uint32_t *out)
{
	uint32_t type = mode & S_IFMT, perm = mode & 07777;
	switch (opcode) {
	case WIRE_OP_MDS_CREATE:
		if (type && type != S_IFREG)
			return -EINVAL;
		*out = S_IFREG | perm;
		return 0;
	case WIRE_OP_MDS_MKDIR:
		if (type && type != S_IFDIR)
			return -EINVAL;
		*out = S_IFDIR | (perm & 07777);
		return 0;
	case WIRE_OP_MDS_MKNOD:
		if (type == 0)
			type = S_IFREG;
		if (type != S_IFREG && type != S_IFCHR && type != S_IFBLK && type != S_IFIFO &&
		    type != S_IFSOCK)
			return -EINVAL;
		*out = type | perm;
		return 0;
	case WIRE_OP_MDS_SYMLINK:
		*out = S_IFLNK | 0777;
		return 0;
	default:
		return -EINVAL;
	}
}

static uint32_t create_type(uint32_t mode)
{
	if (S_ISDIR(mode))
		return NACRE_CL_MKDIR;
	if (S_ISLNK(mode))
		return NACRE_CL_SOFTLINK;
	if (S_ISREG(mode))
		return NACRE_CL_CREATE;
	return NACRE_CL_MKNOD;
}

/* What a create answers: the inode's attributes, and CREATE's layout. */
static void create_answer(struct create_arg *a, const struct mds_inode *ino)
{
	mds_inode_to_attr(ino, a->out);
	if (a->layout_out) {
		if (ino->has_layout)
			*a->layout_out = ino->layout;
		else
			memset(a->layout_out, 0, sizeof(*a->layout_out));
	}
}

/* A create of a FID that already has this name: a resend or replay of one made, answered
 * as made (a handle is not: with none, the client opens the file). */
static int same_create(struct create_arg *a, struct mds_txn *txn, const struct nacre_fid *fid)
{
	struct mds_inode *ino = &(struct mds_inode){0};
	int rc = mds_db_inode_get(txn, fid, ino);
	if (rc)
		return rc;
	create_answer(a, ino);
	mds_txn_note_result(txn, &ino->fid, 0);
	return 0;
}

static int create_op(struct mds_txn *txn, void *arg)
{
	struct create_arg *a = arg;
	const struct wire_create_req *req = a->req;
	struct mds_inode dir, *ino = &(struct mds_inode){0};
	struct nacre_fid existing;
	uint32_t mode;
	int rc = create_mode(a->opcode, req->mode, &mode);
	if (mds_perm_is_root(&req->cred))
		mds_txn_quota_exempt(txn);
	if (rc)
		return rc;
	rc = mds_ns_get_dir(txn, &req->parent, &dir);
	if (rc)
		return rc;
	rc = mds_perm_check(&req->cred, &dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc)
		return rc;
	rc = mds_db_dentry_get(txn, &req->parent, req->name, &existing, NULL);
	if (rc == 0 && (req->flags & WIRE_CREATE_FID) && fid_eq(&existing, &req->fid))
		return same_create(a, txn, &existing);
	if (rc == 0) {
		/* open(O_CREAT) without O_EXCL of an existing file opens it */
		if (a->opcode != WIRE_OP_MDS_CREATE || (req->flags & O_EXCL))
			return -EEXIST;
		rc = mds_db_inode_get(txn, &existing, ino);
		if (rc)
			return rc;
		if (S_ISDIR(ino->mode))
			return -EISDIR;
		if (!S_ISREG(ino->mode))
			return -EEXIST;
		mds_inode_to_attr(ino, a->out);
		if (a->layout_out)
			*a->layout_out = ino->layout;
		mds_txn_note_result(txn, &ino->fid, 0);
		return 0;
	}
	if (rc != -ENOENT)
		return rc;

	struct nacre_time now = time_now();
	const struct mds_req *rq = mds_req_of(txn);
	if (req->flags & WIRE_CREATE_FID) {
		/* the FID the client chose, from a sequence granted to it (fid_grant.h) */
		ino->fid = req->fid;
		rc = mds_fid_grant_check(txn, rq ? rq->client_id : 0, &ino->fid);
		if (!rc && mds_db_inode_get(txn, &ino->fid, &(struct mds_inode){0}) == 0)
			rc = -EEXIST; /* made before under another name */
	} else if (rq && rq->has_replay_fid) {
		/* a replay makes the FID its first execution made */
		ino->fid = rq->replay_fid;
		rc = mds_db_fid_reserve(txn, &ino->fid);
		if (!rc && mds_db_inode_get(txn, &ino->fid, &(struct mds_inode){0}) == 0)
			rc = -EEXIST;
	} else {
		rc = mds_db_fid_alloc(txn, &ino->fid);
	}
	if (rc)
		return rc;
	ino->mode = mode;
	ino->uid = req->cred.uid;
	ino->gid = req->cred.gid;
	if (dir.proj_inherit) { /* as ext4's project inherit flag: ids and flag carry over */
		ino->projid = dir.projid;
		ino->proj_inherit = S_ISDIR(mode) ? 1 : 0;
	}
	if (dir.mode & S_ISGID) {
		/* BSD group semantics in setgid directories */
		ino->gid = dir.gid;
		if (S_ISDIR(mode))
			ino->mode |= S_ISGID;
	}
	if (!S_ISDIR(mode) && (ino->mode & S_ISGID) && (ino->mode & S_IXGRP) &&
	    !mds_perm_is_root(&req->cred) && !mds_perm_in_group(&req->cred, ino->gid))
		ino->mode &= ~(uint32_t)S_ISGID;
	int copy_default = mds_ns_acl_inherit(txn, &dir, req, ino);
	if (copy_default < 0)
		return copy_default;
	ino->nlink = S_ISDIR(mode) ? 2 : 1;
	ino->atime = ino->mtime = ino->ctime = now;
	ino->btime = now;
	ino->has_btime = 1;
	if (S_ISREG(mode) && rq && rq->has_replay_layout) {
		ino->layout = rq->replay_layout; /* where its data already is */
		ino->has_layout = 1;
	} else if (S_ISREG(mode) && a->opcode == WIRE_OP_MDS_CREATE) {
		rc = mds_alloc_file_layout(a->m, txn, &dir, req->has_layout ? &req->layout : NULL,
					   &ino->layout);
		if (rc)
			return rc;
		ino->has_layout = 1;
	} else if (S_ISREG(mode)) {
		/* mknod of a regular file: it gets a layout like any other */
		rc = mds_alloc_file_layout(a->m, txn, &dir, NULL, &ino->layout);
		if (rc)
			return rc;
		ino->has_layout = 1;
	} else if (S_ISDIR(mode)) {
		mds_alloc_inherit_default(&dir, ino);
	} else if (S_ISLNK(mode)) {
		str_copy(ino->target, req->target, sizeof(ino->target));
		ino->size = strlen(ino->target);
	} else {
		ino->rdev = req->rdev;
	}
	rc = mds_db_inode_put(txn, ino);
	if (!rc)
		rc = mds_db_dentry_put(txn, &req->parent, req->name, &ino->fid, mode & S_IFMT);
	if (!rc)
		rc = mds_db_link_put(txn, &ino->fid, &req->parent, req->name);
	if (!rc && copy_default)
		rc = mds_ns_acl_copy_default(txn, &req->parent, &ino->fid);
	if (rc)
		return rc;
	if (S_ISDIR(mode))
		dir.nlink++;
	dir.nentries++;
	dir.mtime = dir.ctime = now;
	rc = mds_db_inode_put(txn, &dir);
	if (!rc)
		rc = mds_changelog_note(a->m->changelog, txn, create_type(mode), 0, &ino->fid,
					&req->parent, req->name, &req->cred);
	if (rc)
		return rc;
	create_answer(a, ino);
	/* Registered before the commit makes the name visible, so an unlink racing with the
	 * create finds the file open and keeps it as an orphan. A replay opens nothing: the
	 * client re-opens what it still has open afterwards. */
	if (a->opcode == WIRE_OP_MDS_CREATE && (req->flags & WIRE_CREATE_OPEN) &&
	    !(rq && rq->replay)) {
		rc = mds_open_handle_add(a->m->open, a->conn_id, &ino->fid, &a->handle);
		if (rc)
			return rc;
	}
	mds_txn_note_result(txn, &ino->fid, a->handle);
	return 0;
}

int mds_ns_create(struct mds *m, uint64_t conn_id, uint16_t opcode,
		  const struct wire_create_req *req, struct nacre_attr *out,
		  struct nacre_layout *layout_out, uint64_t *handle_out)
{
	if (opcode == WIRE_OP_MDS_SYMLINK && !req->target[0])
		return -ENOENT; /* as symlink(2) with an empty target */
	struct create_arg a = {m, opcode, req, out, layout_out, conn_id, 0};
	int rc = mds_writer_submit(m->writer, create_op, &a);
	if (rc && a.handle)
		mds_open_handle_drop(m->open, conn_id, a.handle, &out->fid); /* not committed */
	if (handle_out)
		*handle_out = rc ? 0 : a.handle;
	return rc;
}

int mds_ns_create_txn(struct mds *m, struct mds_txn *txn, uint16_t opcode,
		      const struct wire_create_req *req, struct nacre_attr *out,
		      struct nacre_layout *layout_out)
{
	if (opcode == WIRE_OP_MDS_SYMLINK && !req->target[0])
		return -ENOENT;
	if (req->flags & WIRE_CREATE_OPEN)
		return -EINVAL; /* a handle is a reply only a lone CREATE gives */
	struct create_arg a = {m, opcode, req, out, layout_out, 0, 0};
	return create_op(txn, &a);
}

/* ---------------- append ---------------- */

struct append_arg {
	const struct wire_append_req *r;
	uint64_t offset;
};

static int append_op(struct mds_txn *txn, void *arg)
{
	struct append_arg *a = arg;
	struct mds_inode ino;
	int rc = mds_db_inode_get(txn, &a->r->fid, &ino);

	if (rc)
		return rc;
	if (mds_perm_is_root(&a->r->cred))
		mds_txn_quota_exempt(txn);
	if (S_ISDIR(ino.mode))
		return -EISDIR;
	if (!S_ISREG(ino.mode))
		return -EINVAL;
	uint64_t max = file_max_size(&ino);
	if (ino.size > max || a->r->len > max - ino.size)
		return -EFBIG;
	a->offset = ino.size;
	ino.size += a->r->len;
	ino.mtime = ino.ctime = time_now();
	mds_hsm_mark_dirty(&ino);
	rc = mds_db_inode_put(txn, &ino);
	if (!rc)
		mds_txn_note_result(txn, &ino.fid, a->offset);
	return rc;
}

int mds_ns_append(struct mds *m, uint64_t owner, const struct wire_append_req *r,
		  uint64_t *offset)
{
	struct append_arg a = {.r = r};
	int rc;

	/* the open that checked write permission is the right to append */
	if (!mds_open_handle_known(m->open, owner, r->handle, &r->fid))
		return -EBADF;
	rc = mds_writer_submit(m->writer, append_op, &a);
	if (!rc)
		*offset = a.offset;
	return rc;
}

/* ---------------- unlink / rmdir ---------------- */

struct unlink_arg {
	struct mds *m;
	const struct nacre_cred *cr;
	const struct nacre_fid *parent;
	const char *name;
	int is_rmdir;
};

static int unlink_op(struct mds_txn *txn, void *arg)
{
	struct unlink_arg *a = arg;
	struct mds_inode dir, ino;
	struct nacre_fid child;
	int rc = mds_ns_get_dir(txn, a->parent, &dir);
	if (rc)
		return rc;
	rc = mds_perm_check(a->cr, &dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc)
		return rc;
	rc = mds_db_dentry_get(txn, a->parent, a->name, &child, NULL);
	if (rc)
		return rc;
	rc = mds_db_inode_get(txn, &child, &ino);
	if (rc)
		return rc;
	if (a->is_rmdir) {
		if (!S_ISDIR(ino.mode))
			return -ENOTDIR;
		if (ino.nentries > 0)
			return -ENOTEMPTY;
	} else if (S_ISDIR(ino.mode)) {
		return -EISDIR;
	}
	rc = mds_perm_sticky(a->cr, &dir, &ino);
	if (rc)
		return rc;
	struct nacre_time now = time_now();
	/* the flags say what the record's reader needs: the last name went, an archive
	 * copy may need removing */
	uint32_t clf = 0;
	if (S_ISDIR(ino.mode) || ino.nlink <= 1)
		clf |= NACRE_CLF_UNLINK_LAST;
	if ((clf & NACRE_CLF_UNLINK_LAST) && (ino.hsm_state & NACRE_HS_EXISTS))
		clf |= NACRE_CLF_UNLINK_HSM_EXISTS;
	rc = mds_db_dentry_del(txn, a->parent, a->name);
	if (!rc)
		rc = mds_db_link_del(txn, &child, a->parent, a->name);
	if (!rc)
		rc = mds_ns_drop_name(a->m, txn, &ino, now);
	if (!rc)
		rc = mds_changelog_note(a->m->changelog, txn,
					a->is_rmdir ? NACRE_CL_RMDIR : NACRE_CL_UNLINK, clf, &child,
					a->parent, a->name, a->cr);
	if (rc)
		return rc;
	if (S_ISDIR(ino.mode) && dir.nlink > 2)
		dir.nlink--;
	if (dir.nentries > 0)
		dir.nentries--;
	dir.mtime = dir.ctime = now;
	return mds_db_inode_put(txn, &dir);
}

int mds_ns_unlink(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *parent,
		  const char *name, int is_rmdir)
{
	struct unlink_arg a = {m, cr, parent, name, is_rmdir};
	int rc = mds_writer_submit(m->writer, unlink_op, &a);
	if (!rc)
		mds_destroyer_kick(m->destroyer);
	return rc;
}

int mds_ns_unlink_txn(struct mds *m, struct mds_txn *txn, const struct nacre_cred *cr,
		      const struct nacre_fid *parent, const char *name, int is_rmdir)
{
	struct unlink_arg a = {m, cr, parent, name, is_rmdir};
	return unlink_op(txn, &a);
}

/* ---------------- link ---------------- */

struct link_arg {
	struct mds *m;
	const struct nacre_cred *cr;
	const struct nacre_fid *fid;
	const struct nacre_fid *parent;
	const char *name;
	struct nacre_attr *out;
};

static int link_op(struct mds_txn *txn, void *arg)
{
	struct link_arg *a = arg;
	struct mds_inode dir, ino;
	struct nacre_fid existing;
	int rc = mds_db_inode_get(txn, a->fid, &ino);
	if (rc)
		return rc;
	/* first, as the kernel's do_linkat checks it before the directory */
	if (a->cr->flags & NACRE_CRED_PROTECTED_HARDLINKS) {
		rc = mds_perm_may_link(a->cr, &ino);
		if (rc)
			return rc;
	}
	if (S_ISDIR(ino.mode))
		return -EPERM;
	if (ino.nlink == 0)
		return -ENOENT; /* linkat of an unlinked open file, as Linux without O_TMPFILE */
	if (ino.nlink >= 65000)
		return -EMLINK;
	rc = mds_ns_get_dir(txn, a->parent, &dir);
	if (rc)
		return rc;
	rc = mds_perm_check(a->cr, &dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc)
		return rc;
	rc = mds_db_dentry_get(txn, a->parent, a->name, &existing, NULL);
	if (rc == 0)
		return -EEXIST;
	if (rc != -ENOENT)
		return rc;
	struct nacre_time now = time_now();
	ino.nlink++;
	ino.ctime = now;
	rc = mds_db_inode_put(txn, &ino);
	if (!rc)
		rc = mds_db_dentry_put(txn, a->parent, a->name, a->fid, ino.mode & S_IFMT);
	if (!rc)
		rc = mds_db_link_put(txn, a->fid, a->parent, a->name);
	if (rc)
		return rc;
	dir.nentries++;
	dir.mtime = dir.ctime = now;
	rc = mds_db_inode_put(txn, &dir);
	if (!rc)
		rc = mds_changelog_note(a->m->changelog, txn, NACRE_CL_HARDLINK, 0, a->fid,
					a->parent, a->name, a->cr);
	if (!rc)
		mds_inode_to_attr(&ino, a->out);
	return rc;
}

int mds_ns_link(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		const struct nacre_fid *parent, const char *name, struct nacre_attr *out)
{
	struct link_arg a = {m, cr, fid, parent, name, out};
	return mds_writer_submit(m->writer, link_op, &a);
}

int mds_ns_link_txn(struct mds *m, struct mds_txn *txn, const struct nacre_cred *cr,
		    const struct nacre_fid *fid, const struct nacre_fid *parent, const char *name,
		    struct nacre_attr *out)
{
	struct link_arg a = {m, cr, fid, parent, name, out};
	return link_op(txn, &a);
}
