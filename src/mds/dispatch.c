/* dispatch.c - the MDS request handler: decode, route, encode the reply. */
#include "mds/dispatch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/caps.h"
#include "mds/changelog.h"
#include "mds/db.h"
#include "mds/groups.h"
#include "mds/find.h"
#include "mds/hsm.h"
#include "mds/keys.h"
#include "mds/lease.h"
#include "mds/lock_rpc.h"
#include "mds/notify.h"
#include "mds/nodemap_rpc.h"
#include "mds/quota.h"
#include "mds/ns.h"
#include "mds/open.h"
#include "mds/ost_wait.h"
#include "mds/batch.h"
#include "mds/fid_grant.h"
#include "mds/req.h"
#include "mds/session.h"
#include "mds/space.h"
#include "mds/targets.h"
#include "mds/writer.h"

/* A decoded body must be whole and exactly consumed. */
static int finish_decode(const struct rpc_request *req, const struct wire_cursor *c)
{
	if (wire_cursor_ok(c) && wire_cursor_left(c) == 0)
		return 0;
	LOG_RATELIMITED(LOG_LVL_WARN, "dispatch", "malformed %s request from %s (%s): %s",
			wire_opcode_name(req->hdr->opcode), req->peer,
			req->peer_name ? req->peer_name : "?",
			wire_cursor_ok(c) ? "trailing bytes" : "bad field");
	return -EPROTO;
}

#define DECODE(msg, var)                                                                    \
	struct wire_##msg var;                                                              \
	do {                                                                                \
		struct wire_cursor dc_;                                                     \
		wire_cursor_init_read(&dc_, req->body, req->body_len);                      \
		wire_##msg##_decode(&dc_, &var);                                            \
		int drc_ = finish_decode(req, &dc_);                                        \
		if (drc_)                                                                   \
			return drc_;                                                        \
	} while (0)

/* The MDT's own space and inode figures, from the file system holding the data dir. */
static void mdt_statfs(struct mds *m, struct nacre_statfs *st)
{
	struct statvfs sv;
	memset(st, 0, sizeof(*st));
	st->bsize = 4096;
	st->namemax = NACRE_NAME_MAX;
	uint64_t used = mds_db_inode_count(m->db);
	if (statvfs(m->data_dir, &sv) == 0) {
		st->kb_total = (uint64_t)sv.f_blocks * sv.f_frsize / 1024;
		st->kb_free = (uint64_t)sv.f_bfree * sv.f_frsize / 1024;
		st->kb_avail = (uint64_t)sv.f_bavail * sv.f_frsize / 1024;
	}
	/* an inode with its entry and link takes about 512 bytes of LMDB pages */
	st->ffree = st->kb_avail * 2;
	st->files = used + st->ffree;
}

/* ---------------- reads ---------------- */

static int do_lookup(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(name_req, r);
	struct wire_attr_rep a;
	int rc = mds_ns_lookup(m, &r.cred, &r.parent, r.name, &a.attr);
	if (!rc)
		wire_attr_rep_encode(&rep->body, &a);
	return rc;
}

static int do_getattr(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(fid_req, r);
	struct wire_attr_rep a;
	int rc = mds_ns_getattr(m, &r.cred, &r.fid, &a.attr);
	if (!rc)
		wire_attr_rep_encode(&rep->body, &a);
	return rc;
}

static int do_readlink(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(fid_req, r);
	struct wire_path_rep *t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	int rc = mds_ns_readlink(m, &r.cred, &r.fid, t->path);
	if (!rc)
		wire_path_rep_encode(&rep->body, t);
	free(t);
	return rc;
}

/* fsync/fsyncdir: everything committed so far goes to disk before the reply. */
static int do_sync(struct mds *m, const struct rpc_request *req)
{
	DECODE(fid_req, r);
	(void)r;
	return mds_writer_sync(m->writer);
}

static int do_fid2path(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(fid_req, r);
	struct wire_path_rep *p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	int rc = mds_ns_fid2path(m, &r.cred, &r.fid, p->path, sizeof(p->path));
	if (!rc)
		wire_path_rep_encode(&rep->body, p);
	free(p);
	return rc;
}

struct links_enc {
	struct wire_cursor *c;
	uint32_t used, count;
};

static int links_put(void *arg, const struct nacre_fid *parent, const char *name)
{
	struct links_enc *e = arg;
	struct wire_link_entry le;
	uint32_t sz = 16 + 2 + (uint32_t)strlen(name);

	if (e->count > 0 && e->used + sz > WIRE_LINKS_MAX_BYTES)
		return 1;
	le.parent = *parent;
	str_copy(le.name, name, sizeof(le.name));
	wire_link_entry_put(e->c, &le);
	e->used += sz;
	e->count++;
	return 0;
}

static int do_links(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(links_req, r);
	struct links_enc e = {.c = &rep->body};
	struct wire_links_rep head = {0};
	size_t head_pos = wire_cursor_pos(&rep->body);
	int eof = 0;

	wire_links_rep_encode(&rep->body, &head);
	int rc = mds_ns_links(m, &r.cred, &r.fid, r.start, links_put, &e, &head.hidden,
			      &head.next, &eof);
	if (rc)
		return rc;
	head.count = e.count;
	head.eof = (uint8_t)eof;
	wire_links_rep_patch(&rep->body, head_pos, &head);
	return wire_cursor_ok(&rep->body) ? 0 : -EOVERFLOW;
}

struct readdir_enc {
	struct wire_cursor *c;
	uint32_t max;        /* bytes of entries allowed */
	uint32_t used;       /* bytes of entries written */
	uint32_t count;      /* entries written */
	uint64_t last_hash;  /* cookie of the last entry written */
	size_t group_pos;    /* body position where the last hash group started */
	uint32_t group_used; /* used and count at that point */
	uint32_t group_count;
	int full;
	int plus;            /* WIRE_READDIR_PLUS: entries carry attributes */
};

static int readdir_one(void *arg, const struct nacre_dirent *d, const struct nacre_attr *a)
{
	struct readdir_enc *e = arg;
	uint32_t sz = WIRE_DIRENT_FIXED + (uint32_t)strlen(d->name);
	if (e->plus)
		sz += 1 + (a ? WIRE_ATTR_SIZE : 0);
	if (e->used + sz > e->max) {
		/* entries sharing a hash share a cookie: never split them between replies */
		if (e->count > 0 && d->cookie == e->last_hash && e->group_count > 0) {
			e->c->pos = e->group_pos;
			e->used = e->group_used;
			e->count = e->group_count;
		}
		e->full = 1;
		return 1;
	}
	if (e->count == 0 || d->cookie != e->last_hash) {
		e->group_pos = wire_cursor_pos(e->c);
		e->group_used = e->used;
		e->group_count = e->count;
	}
	if (e->plus)
		wire_direntplus_put(e->c, d, a);
	else
		wire_dirent_put(e->c, d);
	e->used += sz;
	e->count++;
	e->last_hash = d->cookie;
	return 0;
}

static int do_readdir(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(readdir_req, r);
	struct readdir_enc e = {.c = &rep->body, .plus = (r.flags & WIRE_READDIR_PLUS) != 0};
	e.max = r.max_bytes < WIRE_READDIR_MAX_BYTES ? r.max_bytes : WIRE_READDIR_MAX_BYTES;
	if (e.max < (e.plus ? WIRE_DIRENT_PLUS_MAX : WIRE_DIRENT_MAX))
		return -EINVAL; /* too small for one entry: the caller could never progress */
	size_t head_pos = wire_cursor_pos(&rep->body);
	struct wire_readdir_rep head = {0};
	wire_readdir_rep_encode(&rep->body, &head);
	int rc = mds_ns_readdir_plus(m, &r.cred, &r.fid, r.cookie, e.plus, readdir_one, &e);
	if (rc)
		return rc;
	head.count = e.count;
	head.eof = !e.full;
	wire_readdir_rep_patch(&rep->body, head_pos, &head);
	return wire_cursor_ok(&rep->body) ? 0 : -EOVERFLOW;
}

static int do_find(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_find_req *r = malloc(sizeof(*r));
	struct wire_cursor dc;
	if (!r)
		return -ENOMEM;
	wire_cursor_init_read(&dc, req->body, req->body_len);
	wire_find_req_decode(&dc, r);
	int rc = finish_decode(req, &dc);
	if (!rc)
		rc = mds_find(m, r, &rep->body);
	free(r);
	return rc;
}

static int do_layout_get(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(fid_req, r);
	struct wire_layout_rep l;
	int rc = mds_ns_layout_get(m, &r.cred, &r.fid, &l.layout);
	l.has_cap = 0;
	if (!rc && (req->features & WIRE_FEAT_CAPS) && l.layout.nosts > 0)
		mds_cap_for_reply(m, req, &r.fid, &l.layout,
				  mds_cap_layout_rights(m, &r.cred, &r.fid), &l.has_cap, &l.cap);
	if (!rc)
		wire_layout_rep_encode(&rep->body, &l);
	return rc;
}

static int do_fid_grant(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(cred_req, r);
	(void)r; /* any client may hold FIDs: what it makes with them is checked at create */
	struct wire_fid_grant_rep g = {0};
	if (mds_req_current && mds_req_current->replay && req->replay_reply) {
		/* the grant its first execution answered, which the client gives FIDs from */
		struct wire_cursor c;
		wire_cursor_init_read(&c, req->replay_reply, req->env->replay_len);
		wire_fid_grant_rep_decode(&c, &g);
		if (!wire_cursor_ok(&c))
			memset(&g, 0, sizeof(g));
	}
	int rc = mds_fid_grant(m, req->client_id, &g.seq, &g.width);
	if (!rc)
		wire_fid_grant_rep_encode(&rep->body, &g);
	return rc;
}

static int do_cap_get(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(cap_req, r);
	struct wire_cap_rep c;
	int rc = mds_cap_get(m, req, mds_owner_of(req), &r, &c);
	if (!rc)
		wire_cap_rep_encode(&rep->body, &c);
	return rc;
}

static int do_getxattr(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep,
		       int list)
{
	DECODE(xattr_req, r);
	if (!list && !r.name[0])
		return -EINVAL;
	/* a client that predates WIRE_FEAT_XATTR_64K takes no more than it could send */
	size_t max = (req->features & WIRE_FEAT_XATTR_64K) ? NACRE_XATTR_MAX : WIRE_XATTR_MAX_V1;
	size_t size = r.size < max ? r.size : max;
	void *buf = size ? malloc(size) : NULL;
	if (size && !buf)
		return -ENOMEM;
	int rc = list ? mds_xattr_list(m, &r.cred, &r.fid, buf, size)
		      : mds_xattr_get(m, &r.cred, &r.fid, r.name, buf, size);
	if (rc >= 0 && size == 0 && (size_t)rc > max) {
		rc = -E2BIG;
	} else if (rc >= 0) {
		if (size == 0) {
			struct wire_xattr_len_rep x = {.len = (uint32_t)rc};
			wire_xattr_len_rep_encode(&rep->body, &x);
		} else {
			struct wire_xattr_rep x = {.value = buf, .len = (uint32_t)rc};
			wire_xattr_rep_encode(&rep->body, &x);
		}
		rc = wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
	}
	free(buf);
	return rc;
}

static int do_statfs(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(cred_req, r);
	(void)r;
	struct nacre_statfs mdt;
	struct wire_statfs_rep sum = {0};
	mdt_statfs(m, &mdt);
	mds_targets_space(m->targets, &sum.st);
	sum.st.files = mdt.files;
	sum.st.ffree = mdt.ffree;
	sum.st.bsize = 4096;
	sum.st.namemax = NACRE_NAME_MAX;
	wire_statfs_rep_encode(&rep->body, &sum);
	return 0;
}

static int do_targets(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(cred_req, r);
	(void)r;
	struct nacre_target *osts = NULL;
	int n = mds_targets_list(m->targets, &osts);
	if (n < 0)
		return n;
	struct nacre_target mdt = {.type = NACRE_TGT_MDT, .index = 0, .up = 1};
	mdt_statfs(m, &mdt.st);
	str_copy(mdt.addr, m->addr, sizeof(mdt.addr));
	struct wire_targets_rep head = {.count = (uint32_t)n + 1};
	wire_targets_rep_encode(&rep->body, &head);
	wire_target_put(&rep->body, &mdt);
	for (int i = 0; i < n; i++)
		wire_target_put(&rep->body, &osts[i]);
	free(osts);
	return wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
}

/* ---------------- mutations ---------------- */

static int do_setattr(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(setattr_req, r);
	struct wire_attr_rep a;
	int rc = mds_ns_setattr(m, &r.cred, &r.fid, &r.sa, &a.attr);
	if (!rc)
		wire_attr_rep_encode(&rep->body, &a);
	/* other clients check permissions from what they cached: they are told first */
	if (!rc && (r.sa.valid & (NACRE_SET_MODE | NACRE_SET_UID | NACRE_SET_GID)))
		mds_notify_perm_change(m, &r.fid);
	return rc;
}

static int do_create(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_create_req *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_create_req_decode(&c, r);
	int rc = finish_decode(req, &c);
	if (!rc) {
		struct wire_create_rep o = {0};
		uint16_t op = req->hdr->opcode;
		rc = mds_ns_create(m, mds_owner_of(req), op, r, &o.attr, &o.layout, &o.handle);
		o.has_handle = (r->flags & WIRE_CREATE_OPEN) != 0;
		if (!rc && op == WIRE_OP_MDS_CREATE && o.has_handle && o.handle) {
			/* the creator opened it: read and write, whatever its mode */
			uint32_t rights = CAP_READ | CAP_WRITE;
			mds_open_handle_set_rights(m->open, mds_owner_of(req), o.handle,
						   &o.attr.fid, rights);
			mds_cap_for_reply(m, req, &o.attr.fid, &o.layout, rights, &o.has_cap,
					  &o.cap);
		}
		if (!rc && op == WIRE_OP_MDS_MKDIR && !(mds_req_current && mds_req_current->replay))
			mds_lease_made_dir(m->leases, req, &r->parent, &o.attr.fid);
		if (!rc && op == WIRE_OP_MDS_CREATE) {
			wire_create_rep_encode(&rep->body, &o);
		} else if (!rc) {
			struct wire_attr_rep a = {.attr = o.attr};
			wire_attr_rep_encode(&rep->body, &a);
		}
	}
	free(r);
	return rc;
}

static int do_unlink(struct mds *m, const struct rpc_request *req, int is_rmdir)
{
	DECODE(name_req, r);
	return mds_ns_unlink(m, &r.cred, &r.parent, r.name, is_rmdir);
}

static int do_rename(struct mds *m, const struct rpc_request *req)
{
	DECODE(rename_req, r);
	return mds_ns_rename(m, &r);
}

static int do_link(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(link_req, r);
	struct wire_attr_rep a;
	int rc = mds_ns_link(m, &r.cred, &r.fid, &r.parent, r.name, &a.attr);
	if (!rc)
		wire_attr_rep_encode(&rep->body, &a);
	return rc;
}

static int do_open(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(open_req, r);
	struct wire_open_rep *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	uint64_t owner = mds_owner_of(req);
	int rc = mds_ns_open(m, req->conn_id, owner, &r, o);
	uint32_t rights = 0;
	if (!rc && mds_open_handle_rights(m->open, owner, o->handle, &r.fid, &rights) == 0)
		mds_cap_for_reply(m, req, &r.fid, &o->layout, rights, &o->has_cap, &o->cap);
	if (!rc)
		wire_open_rep_encode(&rep->body, o);
	free(o);
	return rc;
}

static int do_close(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep,
		    int is_close)
{
	DECODE(close_req, r);
	struct wire_attr_rep a;
	int rc = mds_ns_close(m, mds_owner_of(req), &r, is_close, &a.attr);
	if (!rc)
		wire_attr_rep_encode(&rep->body, &a);
	return rc;
}

static int do_append(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(append_req, r);
	struct wire_append_rep o = {0};
	int rc = mds_ns_append(m, mds_owner_of(req), &r, &o.offset);
	if (!rc)
		wire_append_rep_encode(&rep->body, &o);
	return rc;
}

static int do_setxattr(struct mds *m, const struct rpc_request *req, int remove)
{
	DECODE(xattr_req, r);
	if (!r.name[0])
		return -EINVAL;
	if (remove)
		return mds_xattr_remove(m, &r.cred, &r.fid, r.name);
	return mds_xattr_set(m, &r.cred, &r.fid, r.name, r.value, r.value_len, r.flags);
}

static int do_layout_set(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	DECODE(layout_set_req, r);
	struct wire_layout_rep l = {.has_cap = 0};
	int rc = mds_ns_layout_set(m, &r.cred, &r.fid, &r.layout, &l.layout);
	if (!rc)
		wire_layout_rep_encode(&rep->body, &l);
	return rc;
}

static int do_target(struct mds *m, const struct rpc_request *req, int heartbeat)
{
	int rc = rpc_require_role(req, RPC_ROLES_SERVER, "register a target");
	if (rc)
		return rc;
	DECODE(target_reg, r);
	rc = mds_targets_register(m, &r, heartbeat, req->conn_id);
	if (!rc)
		mds_ost_wait_kick(m->ost_wait); /* creates may be waiting for this one */
	return rc;
}

static int do_groups_set(const struct rpc_request *req)
{
	DECODE(groups_set_req, r);
	return mds_groups_set(&r);
}

int mds_dispatch(void *arg, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct mds *m = arg;
	/* a full MDT refuses what takes space; a replay was acknowledged before: it runs */
	int rc = mds_space_admit(m->space, req->hdr->opcode,
				 mds_req_current && mds_req_current->replay);
	if (rc)
		return rc;
	switch (req->hdr->opcode) {
	case WIRE_OP_PING:
		return 0;
	case WIRE_OP_MDS_STATFS:
		return do_statfs(m, req, rep);
	case WIRE_OP_MDS_LOOKUP:
		return do_lookup(m, req, rep);
	case WIRE_OP_MDS_GETATTR:
		return do_getattr(m, req, rep);
	case WIRE_OP_MDS_SETATTR:
		return do_setattr(m, req, rep);
	case WIRE_OP_MDS_CREATE:
	case WIRE_OP_MDS_MKDIR:
	case WIRE_OP_MDS_MKNOD:
	case WIRE_OP_MDS_SYMLINK:
		return do_create(m, req, rep);
	case WIRE_OP_MDS_UNLINK:
		return do_unlink(m, req, 0);
	case WIRE_OP_MDS_RMDIR:
		return do_unlink(m, req, 1);
	case WIRE_OP_MDS_RENAME:
		return do_rename(m, req);
	case WIRE_OP_MDS_LINK:
		return do_link(m, req, rep);
	case WIRE_OP_MDS_READLINK:
		return do_readlink(m, req, rep);
	case WIRE_OP_MDS_READDIR:
		return do_readdir(m, req, rep);
	case WIRE_OP_MDS_OPEN:
		return do_open(m, req, rep);
	case WIRE_OP_MDS_FIND:
		return do_find(m, req, rep);
	case WIRE_OP_MDS_CLOSE:
		return do_close(m, req, rep, 1);
	case WIRE_OP_MDS_SIZE_UPDATE:
		return do_close(m, req, rep, 0);
	case WIRE_OP_MDS_GETXATTR:
		return do_getxattr(m, req, rep, 0);
	case WIRE_OP_MDS_LISTXATTR:
		return do_getxattr(m, req, rep, 1);
	case WIRE_OP_MDS_SETXATTR:
		return do_setxattr(m, req, 0);
	case WIRE_OP_MDS_REMOVEXATTR:
		return do_setxattr(m, req, 1);
	case WIRE_OP_MDS_LAYOUT_GET:
		return do_layout_get(m, req, rep);
	case WIRE_OP_MDS_LAYOUT_SET:
		return do_layout_set(m, req, rep);
	case WIRE_OP_MDS_TARGETS:
		return do_targets(m, req, rep);
	case WIRE_OP_MDS_FID2PATH:
		return do_fid2path(m, req, rep);
	case WIRE_OP_MDS_LINKS:
		return do_links(m, req, rep);
	case WIRE_OP_MDS_TARGET_REGISTER:
		return do_target(m, req, 0);
	case WIRE_OP_MDS_TARGET_HEARTBEAT:
		return do_target(m, req, 1);
	case WIRE_OP_MDS_SYNC:
		return do_sync(m, req);
	case WIRE_OP_MDS_APPEND:
		return do_append(m, req, rep);
	case WIRE_OP_MDS_HSM_REQUEST:
	case WIRE_OP_MDS_HSM_STATE_GET:
	case WIRE_OP_MDS_HSM_STATE_SET:
	case WIRE_OP_MDS_HSM_ACTION:
	case WIRE_OP_MDS_HSM_LIST:
	case WIRE_OP_MDS_HSM_IMPORT:
		return mds_hsm_dispatch(m, req, rep);
	case WIRE_OP_MDS_HSM_AGENT_REGISTER:
	case WIRE_OP_MDS_HSM_AGENT_POLL:
	case WIRE_OP_MDS_HSM_AGENT_PROGRESS:
		/* copytools run with the cluster key */
		rc = rpc_require_role(req, RPC_ROLES_SERVER, "act as an HSM agent");
		return rc ? rc : mds_hsm_dispatch(m, req, rep);
	case WIRE_OP_MDS_KEY_ISSUE:
	case WIRE_OP_MDS_KEY_REVOKE:
	case WIRE_OP_MDS_KEY_LIST:
		return mds_keys_dispatch(m, req, rep);
	case WIRE_OP_MDS_LOCK_SET:
	case WIRE_OP_MDS_LOCK_GET:
	case WIRE_OP_MDS_LOCK_WAIT:
	case WIRE_OP_MDS_LOCK_CANCEL:
		return mds_lock_dispatch(m, req, rep);
	case WIRE_OP_MDS_CAP_GET:
		return do_cap_get(m, req, rep);
	case WIRE_OP_MDS_FID_GRANT:
		return do_fid_grant(m, req, rep);
	case WIRE_OP_MDS_BATCH:
		return mds_batch_serve(m, req, &rep->body);
	case WIRE_OP_MDS_NOTIFY_WAIT:
		return mds_notify_dispatch(m, req, rep);
	case WIRE_OP_MDS_LEASE:
		return mds_lease_dispatch(m, req, rep);
	case WIRE_OP_MDS_GROUPS_SET:
		return do_groups_set(req);
	case WIRE_OP_MDS_NODEMAP:
		return mds_nodemap_dispatch(m, req, rep);
	case WIRE_OP_MDS_CL_REGISTER:
	case WIRE_OP_MDS_CL_DEREGISTER:
	case WIRE_OP_MDS_CL_READ:
	case WIRE_OP_MDS_CL_CLEAR:
	case WIRE_OP_MDS_CL_MASK:
		return mds_changelog_dispatch(m, req, rep);
	case WIRE_OP_MDS_QUOTA:
		return mds_quota_dispatch(m, req, rep);
	default:
		LOG_RATELIMITED(LOG_LVL_INFO, "dispatch", "unsupported opcode %u (%s) from %s",
				req->hdr->opcode, wire_opcode_name(req->hdr->opcode), req->peer);
		return -EOPNOTSUPP;
	}
}

int mds_runs_inline(uint16_t opcode)
{
	return wire_op_inline(opcode); /* the opcode table says which, and why */
}

void mds_on_disconnect(void *arg, uint64_t conn_id)
{
	struct mds *m = arg;

	mds_ns_disconnect(m, conn_id);
	if (mds_hsm_disconnect(m, conn_id) && m->sessions)
		mds_session_evict_conn(m->sessions, conn_id, "its HSM agent's connection closed");
	mds_lock_disconnect(m, conn_id);
	mds_targets_disconnect(m, conn_id);
}
