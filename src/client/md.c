/* md.c - the namespace calls of nacre.h, one MDS RPC each.
 *
 * Each call encodes a wire message into a growable cursor, sends it with cl_mds_call() and
 * decodes the reply message, which must consume the body exactly. Whether the rpc layer may
 * resend a call after a reconnect is the opcode table's to say (wire.h): reads, yes;
 * namespace changes, no.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/fidseq.h"
#include "client/files.h"
#include "client/mdc.h"
#include "client/md.h"
#include "client/size.h"
#include "client/oss.h"
#include "proto/wire.h"

/* A component name the MDS will take: 1..NACRE_NAME_MAX bytes, no '/'. */
static int check_name(const char *name)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strnlen(name, NACRE_NAME_MAX + 1);
	if (n == 0)
		return -ENOENT;
	if (n > NACRE_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', n))
		return -EINVAL;
	return 0;
}

/* cl_mds_call that also frees the request cursor. */
static int mds_rpc(struct nacre_fs *fs, uint16_t op, struct wire_cursor *req,
		   struct rpc_msg **rep)
{
	int rc = cl_mds_call(fs, op, req, rep);

	wire_cursor_fini(req);
	return rc;
}

/* Decodes an attr-only reply into out (may be NULL) and frees the reply. */
static int attr_reply(struct rpc_msg *m, struct nacre_attr *out)
{
	struct wire_cursor c;
	struct wire_attr_rep a;
	int rc;

	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_attr_rep_decode(&c, &a);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc == 0 && out)
		*out = a.attr;
	return rc;
}

/* cl_mds_do of a request answered by an attr_rep, into out (may be NULL). */
static int attr_call(struct nacre_fs *fs, uint16_t op, const void *req, struct nacre_attr *out)
{
	struct wire_attr_rep a;
	int rc = cl_mds_do(fs, op, req, &a);

	if (rc == 0 && out)
		*out = a.attr;
	return rc;
}

/* Frees a reply that must be empty. */
static int empty_reply(struct rpc_msg *m)
{
	int rc = m->body_len == 0 ? 0 : -EPROTO;

	rpc_msg_free(m);
	return rc;
}

/* fid_req calls: GETATTR, READLINK, LAYOUT_GET, FID2PATH, SYNC. */
static int fid_call(struct nacre_fs *fs, const struct nacre_cred *cr, uint16_t op,
		    const struct nacre_fid *fid, struct rpc_msg **rep)
{
	struct wire_fid_req m;
	struct wire_cursor c;
	struct nacre_cred root;

	if (!fs || !fid)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.cred = *cl_cred(cr, &root);
	m.fid = *fid;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_fid_req_encode(&c, &m);
	return mds_rpc(fs, op, &c, rep);
}

/* name_req calls: LOOKUP, UNLINK, RMDIR. */
static int name_call(struct nacre_fs *fs, const struct nacre_cred *cr, uint16_t op,
		     const struct nacre_fid *parent, const char *name, struct rpc_msg **rep)
{
	struct wire_name_req m;
	struct wire_cursor c;
	struct nacre_cred root;
	int rc;

	if (!fs || !parent)
		return -EINVAL;
	rc = check_name(name);
	if (rc)
		return rc;
	memset(&m, 0, sizeof(m));
	m.cred = *cl_cred(cr, &root);
	m.parent = *parent;
	memcpy(m.name, name, strlen(name) + 1);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_name_req_encode(&c, &m);
	return mds_rpc(fs, op, &c, rep);
}

NACRE_API int nacre_lookup(struct nacre_fs *fs, const struct nacre_cred *cr,
			   const struct nacre_fid *parent, const char *name, struct nacre_attr *out)
{
	struct rpc_msg *m;
	int rc;

	if (name && strcmp(name, ".") == 0)
		return nacre_getattr(fs, cr, parent, out);
	if (name && strcmp(name, "..") == 0)
		return -EINVAL; /* the MDS keeps no parent pointers to answer this */
	if (fs && parent && name && out) {
		rc = cl_lease_lookup(fs, cr, parent, name, out);
		if (rc)
			return rc < 0 ? rc : 0; /* this mount holds the directory: it knows */
	}
	rc = name_call(fs, cr, WIRE_OP_MDS_LOOKUP, parent, name, &m);
	if (rc)
		return rc;
	return attr_reply(m, out);
}

NACRE_API int nacre_getattr(struct nacre_fs *fs, const struct nacre_cred *cr,
			    const struct nacre_fid *fid, struct nacre_attr *out)
{
	struct rpc_msg *m;
	int rc;

	if (fs && fid && out && cl_lease_getattr(fs, fid, out))
		return 0; /* made under a lease this mount holds: known here */
	rc = fid_call(fs, cr, WIRE_OP_MDS_GETATTR, fid, &m);

	if (rc)
		return rc;
	return attr_reply(m, out);
}

NACRE_API int nacre_setattr(struct nacre_fs *fs, const struct nacre_cred *cr,
			    const struct nacre_fid *fid, const struct nacre_setattr *sa,
			    struct nacre_attr *out)
{
	struct wire_setattr_req req;
	struct nacre_cred root;
	struct nacre_attr a_mds;
	int rc;

	if (!fs || !fid || !sa)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *fid;
	req.sa = *sa;
	req.sa.valid &= NACRE_SET_ALL_;
	/* This client's writes come before the truncate, not after it; their size too, so the
	 * MDS cuts the size this client sees and updates mtime and ctime when that changes it
	 * (truncate(2) of a file whose writes are still buffered here). */
	if (req.sa.valid & NACRE_SET_SIZE)
		cl_size_publish_fid(fs, fid);
	if (!(req.sa.valid & NACRE_SET_SIZE)) {
		struct wire_cursor c;
		struct nacre_attr a;
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_setattr_req_encode(&c, &req);
		rc = cl_lease_setattr(fs, cr, fid, &req.sa, &c, &a);
		wire_cursor_fini(&c);
		if (rc == 1) {
			if (out)
				*out = a;
			return 0;
		}
	}
	uint64_t asked = cl_lease_clock(fs);
	rc = attr_call(fs, WIRE_OP_MDS_SETATTR, &req, &a_mds);
	if (rc == 0) {
		cl_lease_attr_seen(fs, &a_mds, asked);
		if (out)
			*out = a_mds;
	}
	/* Open handles must not report their old written end at close: that would undo it. */
	if (rc == 0 && (req.sa.valid & NACRE_SET_SIZE))
		cl_files_set_size(fs, fid, sa->size);
	/* Nor their write time: an explicit mtime (futimens after writing, as cp -p does) is
	 * newer than the writes and must survive their close. */
	if (rc == 0 && (req.sa.valid & (NACRE_SET_MTIME | NACRE_SET_MTIME_NOW)))
		cl_files_mtime_set(fs, fid);
	return rc;
}

static int create_rpc(struct nacre_fs *fs, uint16_t op, const struct wire_create_req *req,
		      struct rpc_msg **rep)
{
	struct wire_cursor c;

	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_create_req_encode(&c, req);
	return mds_rpc(fs, op, &c, rep);
}

/* A create (CREATE, MKDIR, MKNOD, SYMLINK) as its caller asked for it. */
struct create_args {
	uint16_t op;
	const struct nacre_cred *cr;
	const struct nacre_fid *parent;
	const char *name;
	uint32_t mode; /* type, permission bits, and NACRE_MODE_UMASK_BITS */
	uint32_t rdev;
	uint32_t flags; /* WIRE_CREATE_* */
	const struct nacre_layout *layout;
	const char *target; /* a symlink's (length checked by the caller) */
	/* what it made (NULL: not wanted); the rest CREATE's only: its layout, and with
	 * WIRE_CREATE_OPEN the handle (0: not a new file) and capability */
	struct nacre_attr *out;
	struct nacre_layout *layout_out;
	uint64_t *handle_out;
	struct wire_cap *cap_out;
	uint8_t *has_cap_out;
};

/* The request of a, with a FID taken from this mount's grants when it has one. */
static struct wire_create_req *create_req_new(struct nacre_fs *fs, const struct create_args *a)
{
	struct wire_create_req *req = calloc(1, sizeof(*req)); /* a 4 KiB target: off the stack */
	struct nacre_cred root;

	if (!req)
		return NULL;
	req->cred = *cl_cred(a->cr, &root);
	req->parent = *a->parent;
	memcpy(req->name, a->name, strlen(a->name) + 1);
	req->mode = a->mode & ~NACRE_MODE_UMASK_BITS;
	req->rdev = a->rdev;
	req->flags = a->flags;
	if (a->mode & NACRE_MODE_UMASK_BITS) {
		req->flags |= WIRE_CREATE_UMASK;
		req->umask = (a->mode >> 16) & 0777u;
	}
	if (a->layout) {
		req->has_layout = 1;
		req->layout = *a->layout;
	}
	if (a->target)
		memcpy(req->target, a->target, strlen(a->target) + 1);
	if (cl_fidseq_take(fs, &req->fid) == 0)
		req->flags |= WIRE_CREATE_FID;
	return req;
}

/* Sends req; its results go where a says (attributes into *attr). */
static int create_at_mds(struct nacre_fs *fs, const struct create_args *a,
			 struct wire_create_req *req, struct nacre_attr *attr)
{
	struct wire_create_rep r;
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc = create_rpc(fs, a->op, req, &m);

	if (rc == -NACRE_EFIDGRANT && (req->flags & WIRE_CREATE_FID)) {
		cl_fidseq_refused(fs, &req->fid); /* and the MDS chooses this one too */
		req->flags &= ~WIRE_CREATE_FID;
		rc = create_rpc(fs, a->op, req, &m);
	}
	if (rc)
		return rc;
	if (a->op != WIRE_OP_MDS_CREATE)
		return attr_reply(m, attr);
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_create_rep_decode(&c, &r);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc == 0 && r.has_handle && !(a->flags & WIRE_CREATE_OPEN))
		rc = -EPROTO; /* a handle nobody asked for */
	if (rc)
		return rc;
	*attr = r.attr;
	if (a->layout_out)
		*a->layout_out = r.layout;
	if (a->handle_out)
		*a->handle_out = r.handle;
	if (a->has_cap_out) {
		*a->has_cap_out = r.has_cap;
		if (r.has_cap)
			*a->cap_out = r.cap;
	}
	return 0;
}

/* Makes req under its parent's lease, queued for the MDS (lease.h): 1 (made, *attr what
 * the MDS will make), 0 (not under a lease) or the error the lease answers. A CREATE that
 * opens, or asks a layout, waits for the MDS. */
static int create_under_lease(struct nacre_fs *fs, const struct create_args *a,
			      const struct wire_create_req *req, struct nacre_attr *attr)
{
	struct wire_cursor c;
	int rc;

	if (!(req->flags & WIRE_CREATE_FID) || (a->flags & WIRE_CREATE_OPEN) || a->layout)
		return 0;
	memset(attr, 0, sizeof(*attr));
	attr->fid = req->fid;
	attr->mode = req->mode & (S_IFMT | 07777);
	if (req->flags & WIRE_CREATE_UMASK)
		attr->mode &= ~req->umask; /* no default ACL under a lease that makes things */
	attr->rdev = req->rdev;
	attr->size = S_ISLNK(req->mode) ? strlen(req->target) : 0;
	struct cl_lease_change ch = {.opcode = a->op, .parent = a->parent, .name = a->name,
				     .body = &c, .attr = attr};
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_create_req_encode(&c, req);
	rc = cl_lease_change(fs, a->cr, &ch);
	wire_cursor_fini(&c);
	return rc;
}

/* A create, under a lease when it can be, else at the MDS; the lease's names follow, and
 * a new directory's lease is taken. */
static int create_call(struct nacre_fs *fs, const struct create_args *a)
{
	struct wire_create_req *req;
	struct nacre_attr attr;
	int rc;

	if (!fs || !a->parent)
		return -EINVAL;
	rc = check_name(a->name);
	if (rc)
		return rc;
	req = create_req_new(fs, a);
	if (!req)
		return -ENOMEM;
	rc = create_under_lease(fs, a, req, &attr);
	if (rc == 1) {
		free(req);
		if (a->out)
			*a->out = attr;
		return 0;
	}
	if (rc == 0)
		rc = create_at_mds(fs, a, req, &attr);
	free(req);
	if (rc == 0 && a->out)
		*a->out = attr;
	if (rc == 0)
		cl_lease_named(fs, a->parent, a->name, &attr);
	else if (rc == -EEXIST)
		cl_lease_named(fs, a->parent, a->name, NULL);
	else
		cl_lease_doubt(fs, a->parent); /* the create may have been made */
	if (rc == 0 && a->op == WIRE_OP_MDS_MKDIR)
		cl_lease_take(fs, a->cr, a->parent, &attr);
	return rc;
}

int cl_create_open(struct nacre_fs *fs, const struct nacre_cred *cr,
		   const struct nacre_fid *parent, const char *name, uint32_t mode, int flags,
		   const struct nacre_layout *layout, struct nacre_attr *out,
		   struct nacre_layout *layout_out, uint64_t *handle_out,
		   struct wire_cap *cap_out, uint8_t *has_cap_out)
{
	struct create_args a = {
		.op = WIRE_OP_MDS_CREATE, .cr = cr, .parent = parent, .name = name,
		.mode = S_IFREG | (mode & (07777 | NACRE_MODE_UMASK_BITS)),
		.flags = ((uint32_t)flags & O_EXCL) | WIRE_CREATE_OPEN, .layout = layout,
		.out = out, .layout_out = layout_out, .handle_out = handle_out,
		.cap_out = cap_out, .has_cap_out = has_cap_out,
	};
	return create_call(fs, &a);
}

NACRE_API int nacre_create(struct nacre_fs *fs, const struct nacre_cred *cr,
			   const struct nacre_fid *parent, const char *name, uint32_t mode,
			   uint32_t flags, const struct nacre_layout *layout, struct nacre_attr *out)
{
	struct create_args a = {
		.op = WIRE_OP_MDS_CREATE, .cr = cr, .parent = parent, .name = name,
		.mode = S_IFREG | (mode & (07777 | NACRE_MODE_UMASK_BITS)),
		.flags = flags & O_EXCL, .layout = layout, .out = out,
	};
	return create_call(fs, &a);
}

NACRE_API int nacre_mkdir(struct nacre_fs *fs, const struct nacre_cred *cr,
			  const struct nacre_fid *parent, const char *name, uint32_t mode,
			  struct nacre_attr *out)
{
	struct create_args a = {
		.op = WIRE_OP_MDS_MKDIR, .cr = cr, .parent = parent, .name = name,
		.mode = S_IFDIR | (mode & (07777 | NACRE_MODE_UMASK_BITS)), .out = out,
	};
	return create_call(fs, &a);
}

NACRE_API int nacre_mknod(struct nacre_fs *fs, const struct nacre_cred *cr,
			  const struct nacre_fid *parent, const char *name, uint32_t mode,
			  uint32_t rdev, struct nacre_attr *out)
{
	if ((mode & S_IFMT) == 0)
		mode |= S_IFREG; /* mknod(2): a zero type means a regular file */
	uint32_t umask_bits = mode & NACRE_MODE_UMASK_BITS;
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	default:
		return -EINVAL;
	}
	struct create_args a = {
		.op = WIRE_OP_MDS_MKNOD, .cr = cr, .parent = parent, .name = name,
		.mode = (mode & (S_IFMT | 07777)) | umask_bits, .rdev = rdev, .out = out,
	};
	return create_call(fs, &a);
}

NACRE_API int nacre_symlink(struct nacre_fs *fs, const struct nacre_cred *cr,
			    const struct nacre_fid *parent, const char *name, const char *target,
			    struct nacre_attr *out)
{
	size_t n;

	if (!target)
		return -EINVAL;
	n = strnlen(target, NACRE_PATH_MAX + 1);
	if (n == 0)
		return -ENOENT;
	if (n > NACRE_PATH_MAX)
		return -ENAMETOOLONG;
	struct create_args a = {
		.op = WIRE_OP_MDS_SYMLINK, .cr = cr, .parent = parent, .name = name,
		.mode = S_IFLNK | 0777, .target = target, .out = out,
	};
	return create_call(fs, &a);
}

/* Copies a wire_path reply (READLINK, FID2PATH) into buf; -ERANGE if it does not fit. */
static int path_reply(struct rpc_msg *m, char *buf, size_t len)
{
	struct wire_cursor c;
	struct wire_path_rep *r;
	size_t n;
	int rc;

	r = malloc(sizeof(*r));
	if (!r) {
		rpc_msg_free(m);
		return -ENOMEM;
	}
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_path_rep_decode(&c, r);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc == 0) {
		n = strlen(r->path);
		if (n >= len)
			rc = -ERANGE;
		else
			memcpy(buf, r->path, n + 1);
	}
	free(r);
	return rc;
}

NACRE_API int nacre_readlink(struct nacre_fs *fs, const struct nacre_cred *cr,
			     const struct nacre_fid *fid, char *buf, size_t len)
{
	struct rpc_msg *m;
	int rc;

	if (!buf)
		return -EINVAL;
	rc = fid_call(fs, cr, WIRE_OP_MDS_READLINK, fid, &m);
	if (rc)
		return rc;
	return path_reply(m, buf, len);
}

/* UNLINK or RMDIR: under the parent's lease when it can be, else at the MDS. */
static int remove_call(struct nacre_fs *fs, const struct nacre_cred *cr, uint16_t op,
		       const struct nacre_fid *parent, const char *name)
{
	struct wire_name_req m;
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *rep;
	int rc;

	if (!fs || !parent)
		return -EINVAL;
	rc = check_name(name);
	if (rc)
		return rc;
	memset(&m, 0, sizeof(m));
	m.cred = *cl_cred(cr, &root);
	m.parent = *parent;
	memcpy(m.name, name, strlen(name) + 1);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_name_req_encode(&c, &m);
	struct cl_lease_change ch = {.opcode = op, .parent = parent, .name = name, .body = &c};
	rc = cl_lease_change(fs, cr, &ch);
	if (rc) {
		wire_cursor_fini(&c);
		return rc < 0 ? rc : 0;
	}
	rc = mds_rpc(fs, op, &c, &rep);
	if (rc == 0)
		rc = empty_reply(rep);
	if (rc == 0 || rc == -ENOENT)
		cl_lease_unnamed(fs, parent, name);
	else
		cl_lease_doubt(fs, parent);
	return rc;
}

NACRE_API int nacre_unlink(struct nacre_fs *fs, const struct nacre_cred *cr,
			   const struct nacre_fid *parent, const char *name)
{
	return remove_call(fs, cr, WIRE_OP_MDS_UNLINK, parent, name);
}

NACRE_API int nacre_rmdir(struct nacre_fs *fs, const struct nacre_cred *cr,
			  const struct nacre_fid *parent, const char *name)
{
	return remove_call(fs, cr, WIRE_OP_MDS_RMDIR, parent, name);
}

NACRE_API int nacre_rename(struct nacre_fs *fs, const struct nacre_cred *cr,
			   const struct nacre_fid *sparent, const char *sname,
			   const struct nacre_fid *dparent, const char *dname, uint32_t flags)
{
	struct wire_rename_req req;
	struct nacre_cred root;
	struct wire_cursor c;
	int rc;

	if (!fs || !sparent || !dparent)
		return -EINVAL;
	if ((rc = check_name(sname)) || (rc = check_name(dname)))
		return rc;
	if (flags & ~3u)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.sparent = *sparent;
	memcpy(req.sname, sname, strlen(sname) + 1);
	req.dparent = *dparent;
	memcpy(req.dname, dname, strlen(dname) + 1);
	req.flags = flags;
	if (!(flags & 2)) { /* an exchange (RENAME_EXCHANGE) the MDS makes */
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_rename_req_encode(&c, &req);
		struct cl_lease_change ch = {.opcode = WIRE_OP_MDS_RENAME, .parent = sparent,
					     .name = sname, .dparent = dparent, .dname = dname,
					     .body = &c};
		rc = cl_lease_change(fs, cr, &ch);
		wire_cursor_fini(&c);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	rc = cl_mds_do(fs, WIRE_OP_MDS_RENAME, &req, NULL);
	if (rc == 0) {
		cl_lease_renamed(fs, sparent, sname, dparent, dname, (flags & 2) != 0);
	} else if (rc != -ENOENT) {
		cl_lease_doubt(fs, sparent);
		cl_lease_doubt(fs, dparent);
	}
	return rc;
}

NACRE_API int nacre_link(struct nacre_fs *fs, const struct nacre_cred *cr,
			 const struct nacre_fid *fid, const struct nacre_fid *newparent,
			 const char *newname, struct nacre_attr *out)
{
	struct wire_link_req req;
	struct nacre_cred root;
	struct nacre_attr a;
	int rc;

	if (!fs || !fid || !newparent)
		return -EINVAL;
	rc = check_name(newname);
	if (rc)
		return rc;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *fid;
	req.parent = *newparent;
	memcpy(req.name, newname, strlen(newname) + 1);
	rc = attr_call(fs, WIRE_OP_MDS_LINK, &req, &a);
	if (rc == 0 && out)
		*out = a;
	if (rc == 0)
		cl_lease_named(fs, newparent, newname, &a);
	else if (rc == -EEXIST)
		cl_lease_named(fs, newparent, newname, NULL);
	else
		cl_lease_doubt(fs, newparent);
	if (rc == 0)
		cl_lease_attr_forget(fs, fid); /* two names now: its attributes the MDS says */
	return rc;
}

/* READDIR, with each entry's attributes into attrs when attrs is not NULL (and the MDS
 * can: WIRE_FEAT_READDIR_PLUS). */
static int readdir_call(struct nacre_fs *fs, const struct nacre_cred *cr,
			const struct nacre_fid *dir, uint64_t cookie, struct nacre_dirent *ents,
			struct nacre_attr *attrs, int max, int *eof)
{
	struct wire_readdir_req req;
	struct wire_readdir_rep head;
	struct wire_cursor c;
	struct nacre_cred root;
	struct nacre_dirent extra;
	struct nacre_attr extra_attr;
	struct rpc_msg *m;
	uint32_t i;
	int rc, more = 0, has;

	if (!fs || !dir || !ents || max <= 0)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *dir;
	req.cookie = cookie;
	if (attrs && (rpc_conn_features(fs->mds) & WIRE_FEAT_READDIR_PLUS))
		req.flags = WIRE_READDIR_PLUS;
	/* Ask for about max entries' worth; the server caps it anyway. */
	uint64_t want = (uint64_t)max * (req.flags ? WIRE_DIRENT_PLUS_MAX : WIRE_DIRENT_MAX);
	req.max_bytes = want < WIRE_READDIR_MAX_BYTES ? (uint32_t)want : WIRE_READDIR_MAX_BYTES;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_readdir_req_encode(&c, &req);
	rc = mds_rpc(fs, WIRE_OP_MDS_READDIR, &c, &m);
	if (rc)
		return rc;

	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_readdir_rep_decode(&c, &head);
	if (!wire_cursor_ok(&c)) {
		rpc_msg_free(m);
		return -EPROTO;
	}
	for (i = 0; i < head.count; i++) {
		/* More than asked for: dropped; the caller resumes from our last cookie. */
		struct nacre_dirent *d = i < (uint32_t)max ? &ents[i] : &extra;
		struct nacre_attr *a = i < (uint32_t)max && attrs ? &attrs[i] : &extra_attr;
		more |= i >= (uint32_t)max;
		if (req.flags)
			wire_direntplus_get(&c, d, a, &has);
		else
			wire_dirent_get(&c, d);
		if (attrs && !req.flags)
			memset(a, 0, sizeof(*a)); /* mode 0: none came */
	}
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc)
		return rc;
	if (eof)
		*eof = head.eof && !more;
	return (int)(head.count < (uint32_t)max ? head.count : (uint32_t)max);
}

NACRE_API int nacre_readdir(struct nacre_fs *fs, const struct nacre_cred *cr,
			    const struct nacre_fid *dir, uint64_t cookie, struct nacre_dirent *ents,
			    int max, int *eof)
{
	return readdir_call(fs, cr, dir, cookie, ents, NULL, max, eof);
}

NACRE_API int nacre_readdir_plus(struct nacre_fs *fs, const struct nacre_cred *cr,
				 const struct nacre_fid *dir, uint64_t cookie,
				 struct nacre_dirent *ents, struct nacre_attr *attrs, int max,
				 int *eof)
{
	if (!attrs)
		return -EINVAL;
	return readdir_call(fs, cr, dir, cookie, ents, attrs, max, eof);
}

/* The largest xattr value (and list) the MDS takes and gives: 64 KiB, or 64,000 bytes from
 * an MDS that predates WIRE_FEAT_XATTR_64K. */
static size_t xattr_max(struct nacre_fs *fs)
{
	return (rpc_conn_features(fs->mds) & WIRE_FEAT_XATTR_64K) ? NACRE_XATTR_MAX
								  : WIRE_XATTR_MAX_V1;
}

/* GETXATTR and LISTXATTR share the reply forms: xattr_len_rep when size is 0, else
 * xattr_rep. Returns the length. */
static int xattr_read(struct nacre_fs *fs, const struct nacre_cred *cr, uint16_t op,
		      const struct nacre_fid *fid, const char *name, void *value, size_t size)
{
	struct wire_xattr_req req;
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *m;
	int rc;

	if (!fs || !fid || (size > 0 && !value))
		return -EINVAL;
	if (size > xattr_max(fs))
		size = xattr_max(fs);
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *fid;
	if (name)
		memcpy(req.name, name, strlen(name) + 1);
	req.size = (uint32_t)size;
	wire_cursor_init_dyn(&c, WIRE_BODY_BIG_MAX);
	wire_xattr_req_encode(&c, &req);
	rc = mds_rpc(fs, op, &c, &m);
	if (rc)
		return rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	if (size == 0) {
		struct wire_xattr_len_rep r;

		wire_xattr_len_rep_decode(&c, &r);
		rc = cl_decode_end(&c);
		if (rc == 0)
			rc = (int)r.len;
	} else {
		struct wire_xattr_rep r;

		wire_xattr_rep_decode(&c, &r);
		rc = cl_decode_end(&c);
		if (rc == 0 && r.len > size)
			rc = -ERANGE;
		else if (rc == 0) {
			if (r.len > 0)
				memcpy(value, r.value, r.len);
			rc = (int)r.len;
		}
	}
	rpc_msg_free(m);
	return rc;
}

static int check_xattr_name(const char *name)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strnlen(name, NACRE_NAME_MAX + 1);
	if (n == 0)
		return -EINVAL;
	return n > NACRE_NAME_MAX ? -ERANGE : 0; /* getxattr(2) answers ERANGE for long names */
}

NACRE_API int nacre_getxattr(struct nacre_fs *fs, const struct nacre_cred *cr,
			     const struct nacre_fid *fid, const char *name, void *value, size_t size)
{
	int rc = check_xattr_name(name);

	if (rc)
		return rc;
	/* what the kernel asks of every file it writes or checks (security.capability, the
	 * ACLs): an inode made under a lease has none unless this mount set one */
	if (fs && fid && (strncmp(name, "security.", 9) == 0 || strncmp(name, "system.", 7) == 0) &&
	    cl_lease_xattr_none(fs, fid))
		return -ENODATA;
	return xattr_read(fs, cr, WIRE_OP_MDS_GETXATTR, fid, name, value, size);
}

NACRE_API int nacre_listxattr(struct nacre_fs *fs, const struct nacre_cred *cr,
			      const struct nacre_fid *fid, char *list, size_t size)
{
	return xattr_read(fs, cr, WIRE_OP_MDS_LISTXATTR, fid, "", list, size);
}

/* An xattr of fid was set or removed (or may have been): an access ACL changes the mode
 * this mount may keep for it, a default ACL what is made in it (lease.h). */
static void xattr_changed(struct nacre_fs *fs, const struct nacre_fid *fid, const char *name)
{
	cl_lease_attr_forget(fs, fid);
	if (strcmp(name, "system.posix_acl_default") == 0)
		cl_lease_doubt(fs, fid);
}

NACRE_API int nacre_setxattr(struct nacre_fs *fs, const struct nacre_cred *cr,
			     const struct nacre_fid *fid, const char *name, const void *value,
			     size_t size, int flags)
{
	struct wire_xattr_req req;
	struct nacre_cred root;
	int rc;

	if (!fs || !fid || (size > 0 && !value) || (flags & ~3))
		return -EINVAL;
	rc = check_xattr_name(name);
	if (rc)
		return rc;
	if (size > xattr_max(fs))
		return -E2BIG;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *fid;
	memcpy(req.name, name, strlen(name) + 1);
	req.flags = (uint32_t)flags;
	req.value = value;
	req.value_len = (uint32_t)size;
	rc = cl_mds_do(fs, WIRE_OP_MDS_SETXATTR, &req, NULL);
	xattr_changed(fs, fid, name);
	return rc;
}

NACRE_API int nacre_removexattr(struct nacre_fs *fs, const struct nacre_cred *cr,
				const struct nacre_fid *fid, const char *name)
{
	struct wire_xattr_req req;
	struct nacre_cred root;
	int rc;

	if (!fs || !fid)
		return -EINVAL;
	rc = check_xattr_name(name);
	if (rc)
		return rc;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *fid;
	memcpy(req.name, name, strlen(name) + 1);
	rc = cl_mds_do(fs, WIRE_OP_MDS_REMOVEXATTR, &req, NULL);
	xattr_changed(fs, fid, name);
	return rc;
}

static int layout_reply(struct rpc_msg *m, struct nacre_layout *out)
{
	struct wire_cursor c;
	struct wire_layout_rep l;
	int rc;

	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_layout_rep_decode(&c, &l);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc == 0 && out)
		*out = l.layout;
	return rc;
}

NACRE_API int nacre_layout_get(struct nacre_fs *fs, const struct nacre_cred *cr,
			       const struct nacre_fid *fid, struct nacre_layout *out)
{
	struct rpc_msg *m;
	int rc = fid_call(fs, cr, WIRE_OP_MDS_LAYOUT_GET, fid, &m);

	if (rc)
		return rc;
	return layout_reply(m, out);
}

NACRE_API int nacre_layout_set(struct nacre_fs *fs, const struct nacre_cred *cr,
			       const struct nacre_fid *fid, const struct nacre_layout *layout,
			       struct nacre_layout *out)
{
	struct wire_layout_set_req req;
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *m;
	int rc;

	if (!fs || !fid || !layout)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *fid;
	req.layout = *layout;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_layout_set_req_encode(&c, &req);
	rc = mds_rpc(fs, WIRE_OP_MDS_LAYOUT_SET, &c, &m);
	cl_lease_attr_forget(fs, fid); /* its block size follows the layout */
	if (rc)
		return rc;
	return layout_reply(m, out);
}

/* Requests whose body is only the caller's credentials (STATFS). */
static int cred_call(struct nacre_fs *fs, uint16_t op, struct rpc_msg **rep)
{
	struct wire_cred_req r;
	struct wire_cursor c;
	struct nacre_cred root;

	r.cred = *cl_cred(NULL, &root);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_cred_req_encode(&c, &r);
	return mds_rpc(fs, op, &c, rep);
}

NACRE_API int nacre_sync_md(struct nacre_fs *fs, const struct nacre_cred *cr,
			    const struct nacre_fid *fid)
{
	struct rpc_msg *m = NULL;
	int rc = fid_call(fs, cr, WIRE_OP_MDS_SYNC, fid, &m); /* after the queue (wbq.h) */

	rpc_msg_free(m);
	/* a change queued under a lease and refused since the last sync is reported here */
	int refused = fs && fid ? cl_wbq_error(fs, fid) : 0;
	return rc ? rc : refused;
}

NACRE_API int nacre_statfs(struct nacre_fs *fs, struct nacre_statfs *out)
{
	struct wire_cursor c;
	struct wire_statfs_rep st;
	struct rpc_msg *m;
	int rc;

	if (!fs || !out)
		return -EINVAL;
	rc = cred_call(fs, WIRE_OP_MDS_STATFS, &m);
	if (rc)
		return rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_statfs_rep_decode(&c, &st);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc == 0)
		*out = st.st;
	return rc;
}

NACRE_API int nacre_targets(struct nacre_fs *fs, struct nacre_target *out, int max)
{
	struct nacre_target *t;
	int n, rc;

	if (!fs || (max > 0 && !out) || max < 0)
		return -EINVAL;
	rc = cl_targets_fetch(fs, 0, &t, &n);
	if (rc)
		return rc;
	if (n > max)
		n = max;
	if (n > 0)
		memcpy(out, t, (size_t)n * sizeof(*t));
	free(t);
	return n;
}

NACRE_API int nacre_fid2path(struct nacre_fs *fs, const struct nacre_cred *cr,
			     const struct nacre_fid *fid, char *buf, size_t len)
{
	struct rpc_msg *m;
	int rc;

	if (!buf)
		return -EINVAL;
	rc = fid_call(fs, cr, WIRE_OP_MDS_FID2PATH, fid, &m);
	if (rc)
		return rc;
	return path_reply(m, buf, len);
}

NACRE_API int nacre_links(struct nacre_fs *fs, const struct nacre_cred *cr,
			  const struct nacre_fid *fid,
			  int (*fn)(void *arg, const struct nacre_fid *parent, const char *name),
			  void *arg)
{
	struct wire_links_req req;
	struct wire_links_rep head;
	struct wire_link_entry *e;
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *m;
	uint64_t shown = 0, hidden = 0;
	int rc = 0, stop = 0;

	if (!fs || !fid || !fn)
		return -EINVAL;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *fid;
	for (;;) {
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_links_req_encode(&c, &req);
		rc = mds_rpc(fs, WIRE_OP_MDS_LINKS, &c, &m);
		if (rc)
			break;
		wire_cursor_init_read(&c, m->body, m->body_len);
		wire_links_rep_decode(&c, &head);
		for (uint32_t i = 0; i < head.count && wire_cursor_ok(&c); i++) {
			wire_link_entry_get(&c, e);
			if (wire_cursor_ok(&c) && !stop) {
				shown++;
				stop = fn(arg, &e->parent, e->name);
			}
		}
		rc = cl_decode_end(&c);
		rpc_msg_free(m);
		if (rc)
			break;
		hidden += head.hidden;
		/* a page must move on, or the list would never end */
		if (stop || head.eof || head.next <= req.start)
			break;
		req.start = head.next;
	}
	free(e);
	if (!rc && !shown)
		rc = hidden ? -EACCES : -ENOENT;
	return rc;
}

NACRE_API int nacre_resolve(struct nacre_fs *fs, const struct nacre_cred *cr, const char *path,
			    struct nacre_attr *out)
{
	struct nacre_fid *stack; /* the directories walked, so ".." can go back up */
	struct nacre_attr a;
	char name[NACRE_NAME_MAX + 1];
	size_t depth = 0, len;
	const char *p = path;
	int rc;

	if (!fs || !path)
		return -EINVAL;
	len = strnlen(path, NACRE_PATH_MAX + 1);
	if (len > NACRE_PATH_MAX)
		return -ENAMETOOLONG;
	rc = nacre_getattr(fs, cr, &fs->root, &a);
	if (rc)
		return rc;
	stack = malloc((len / 2 + 2) * sizeof(*stack)); /* a component takes >= 2 bytes */
	if (!stack)
		return -ENOMEM;
	stack[0] = fs->root;
	while (*p) {
		while (*p == '/')
			p++;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - c);
		if (n == 0 || (n == 1 && c[0] == '.'))
			continue;
		if (!S_ISDIR(a.mode)) {
			rc = -ENOTDIR;
			goto out_free;
		}
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			/* Never above the mount root, as on a chrooted path. */
			if (depth > 0)
				depth--;
			rc = nacre_getattr(fs, cr, &stack[depth], &a);
			if (rc)
				goto out_free;
			continue;
		}
		if (n > NACRE_NAME_MAX) {
			rc = -ENAMETOOLONG;
			goto out_free;
		}
		memcpy(name, c, n);
		name[n] = '\0';
		rc = nacre_lookup(fs, cr, &stack[depth], name, &a);
		if (rc)
			goto out_free;
		stack[++depth] = a.fid;
	}
	if (out)
		*out = a;
out_free:
	free(stack);
	return rc;
}
