/* nodemap_serve.c - the caller's nodemap applied to one request (see nodemap_serve.h). */
#include "mds/nodemap_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/req_fids.h"
#include "proto/wire.h"

/* Changes a read-only client may not make: the table's, and OPEN and QUOTA by their body. */
static int is_change(const struct rpc_request *req)
{
	switch (req->hdr->opcode) {
	case WIRE_OP_MDS_QUOTA: { /* setting limits or fixing usage */
		struct wire_quota_req q;
		struct wire_cursor c;
		wire_cursor_init_read(&c, req->body, req->body_len);
		wire_quota_req_decode(&c, &q);
		return wire_cursor_ok(&c) && q.op != WIRE_QUOTA_GET && q.op != WIRE_QUOTA_GETDEF &&
		       q.op != WIRE_QUOTA_TARGETS &&
		       !(q.op == WIRE_QUOTA_CHECK && !(q.valid & WIRE_QUOTA_V_FIX));
	}
	case WIRE_OP_MDS_OPEN: {
		struct wire_open_req o;
		struct wire_cursor c;
		wire_cursor_init_read(&c, req->body, req->body_len);
		wire_open_req_decode(&c, &o);
		return wire_cursor_ok(&c) && ((o.flags & O_ACCMODE) != O_RDONLY ||
					      (o.flags & (O_TRUNC | O_CREAT)));
	}
	default:
		return wire_op_has(req->hdr->opcode, WIRE_OPF_CHANGE);
	}
}

static int check_fid(struct mds *m, const struct nodemap_view *v, const struct nacre_fid *f)
{
	int in = nodemap_in_fileset(m->nodemap, v, f);

	if (in < 0)
		return in;
	return in ? 0 : -EACCES;
}

/* Every FID the request names must be in the client's fileset. */
static int check_fileset(struct mds *m, const struct rpc_request *req,
			 const struct nodemap_view *v)
{
	uint16_t op = req->hdr->opcode;
	struct wire_cursor c;
	struct nacre_cred cr;
	struct nacre_fid f;
	int rc = 0;

	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_cred_get(&c, &cr);
	if (op == WIRE_OP_MDS_HSM_REQUEST) {
		struct wire_hsm_request h;
		wire_cursor_init_read(&c, req->body, req->body_len);
		wire_hsm_request_decode(&c, &h);
		for (uint32_t i = 0; i < h.nfids && wire_cursor_ok(&c) && !rc; i++) {
			wire_fid_get(&c, &f);
			if (wire_cursor_ok(&c))
				rc = check_fid(m, v, &f);
		}
		return rc;
	}
	struct nacre_fid fids[MDS_REQ_FIDS_MAX];
	int n = mds_req_fids(op, req->body, req->body_len, fids);
	for (int i = 0; i < n && !rc; i++)
		rc = check_fid(m, v, &fids[i]);
	return rc;
}

/* The owner and group a FIND query tests for are the client's ids too; an id whose owner
 * the client would not see as that id matches nothing (-1 owns no file). */
static void map_find_owner(const struct nodemap_ids *ids, struct wire_find_query *q)
{
	uint32_t u = nodemap_ids_map_uid(ids, q->uid);
	uint32_t g = nodemap_ids_map_gid(ids, q->gid);
	q->uid = nodemap_ids_unmap_uid(ids, u) == q->uid ? u : UINT32_MAX;
	q->gid = nodemap_ids_unmap_gid(ids, g) == q->gid ? g : UINT32_MAX;
}

/* The body with the credentials (and a SETATTR's new owner) mapped, if anything changes. */
static int map_body(struct nodemap_req *nr, const struct rpc_request *req)
{
	const struct nodemap_view *v = &nr->view;
	struct nacre_cred cr, mapped;
	struct wire_cursor c;

	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_cred_get(&c, &cr);
	if (!wire_cursor_ok(&c))
		return 0;
	size_t rest = wire_cursor_pos(&c);
	mapped = cr;
	nodemap_map_cred(v, &mapped);
	int setattr = req->hdr->opcode == WIRE_OP_MDS_SETATTR;
	int find = req->hdr->opcode == WIRE_OP_MDS_FIND &&
		   (v->ids.nuidmaps || v->ids.ngidmaps);
	if (!setattr && !find && !memcmp(&mapped, &cr, sizeof(cr)))
		return 0;
	wire_cursor_init_dyn(&nr->body, WIRE_BODY_MAX);
	nr->has_body = 1;
	if (setattr) {
		struct wire_setattr_req s;
		wire_cursor_init_read(&c, req->body, req->body_len);
		wire_setattr_req_decode(&c, &s);
		if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
			return 0;
		s.cred = mapped;
		if (s.sa.valid & NACRE_SET_UID)
			s.sa.uid = nodemap_map_uid(v, s.sa.uid);
		if (s.sa.valid & NACRE_SET_GID)
			s.sa.gid = nodemap_map_gid(v, s.sa.gid);
		wire_setattr_req_encode(&nr->body, &s);
	} else if (find) {
		/* the owner a FIND tests for is the client's id too */
		struct wire_find_req *f = malloc(sizeof(*f));
		if (!f)
			return -ENOMEM;
		wire_cursor_init_read(&c, req->body, req->body_len);
		wire_find_req_decode(&c, f);
		if (!wire_cursor_ok(&c) || wire_cursor_left(&c)) {
			free(f);
			return 0;
		}
		f->cred = mapped;
		map_find_owner(&v->ids, &f->q);
		for (uint32_t i = 0; i < f->nleaves; i++)
			map_find_owner(&v->ids, &f->leaves[i]);
		wire_find_req_encode(&nr->body, f);
		free(f);
	} else {
		wire_cred_put(&nr->body, &mapped);
		wire_put_bytes(&nr->body, req->body + rest, req->body_len - rest);
	}
	if (!wire_cursor_ok(&nr->body))
		return -EPROTO;
	nr->req.body = nr->body.buf;
	nr->req.body_len = (uint32_t)wire_cursor_pos(&nr->body);
	return 0;
}

/* A BATCH: each change as if it had come alone (fileset checked, credentials mapped), the
 * batch rebuilt from the mapped bodies. */
static int admit_batch(struct mds *m, const struct rpc_request *req, struct nodemap_req *nr)
{
	struct wire_batch_req *b = malloc(sizeof(*b));
	struct nodemap_req *subs = NULL;
	struct wire_cursor c;
	int rc = 0;

	if (!b)
		return -ENOMEM;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_batch_req_decode(&c, b);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
		goto out; /* the handler refuses the body */
	subs = calloc(b->count, sizeof(*subs));
	if (!subs) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < b->count && !rc; i++) {
		struct wire_hdr h = *req->hdr;
		struct rpc_request sub = *req;
		h.opcode = b->ch[i].opcode;
		sub.hdr = &h;
		sub.body = b->ch[i].body;
		sub.body_len = b->ch[i].len;
		subs[i].view = nr->view;
		if (nr->view.has_fileset)
			rc = check_fileset(m, &sub, &nr->view);
		if (!rc)
			rc = map_body(&subs[i], &sub);
		if (!rc && subs[i].has_body) {
			b->ch[i].body = subs[i].body.buf;
			b->ch[i].len = (uint32_t)wire_cursor_pos(&subs[i].body);
		}
	}
	if (rc)
		goto out;
	nodemap_map_cred(&nr->view, &b->cred);
	wire_cursor_init_dyn(&nr->body, WIRE_BODY_MAX);
	nr->has_body = 1;
	wire_batch_req_encode(&nr->body, b);
	if (!wire_cursor_ok(&nr->body)) {
		rc = -EPROTO; /* mapped ids may grow a body past the limit: send fewer */
		goto out;
	}
	nr->req.body = nr->body.buf;
	nr->req.body_len = (uint32_t)wire_cursor_pos(&nr->body);
out:
	for (uint32_t i = 0; subs && i < b->count; i++)
		mds_nodemap_req_fini(&subs[i]);
	free(subs);
	free(b);
	return rc;
}

int mds_nodemap_admit(struct mds *m, const struct rpc_request *req, struct nodemap_req *nr)
{
	uint16_t op = req->hdr->opcode;
	int rc;

	nr->req = *req;
	nr->has_body = 0;
	nodemap_lookup(m->nodemap, req, &nr->view);
	if (op == WIRE_OP_MDS_NODEMAP || op == WIRE_OP_PING)
		return 0; /* answers for itself, naming the rule (nodemap_rpc.c) */
	if (op == WIRE_OP_MDS_DISCONNECT || op == WIRE_OP_MDS_RECOVERY_DONE ||
	    op == WIRE_OP_MDS_RECOVERY_STATUS)
		return 0; /* the session protocol: even a denied client may say goodbye */
	if (nr->view.deny) {
		LOG_RATELIMITED(LOG_LVL_WARN, "nodemap", "%s (%s) refused: nodemap %s denies it",
				req->peer, nodemap_peer_identity(req), nr->view.rule);
		return -EACCES;
	}
	if (nr->view.readonly && is_change(req))
		return -EROFS;
	if (nr->view.has_fileset) {
		rc = check_fileset(m, req, &nr->view);
		if (rc)
			return rc;
	}
	if (op == WIRE_OP_MDS_TARGET_REGISTER || op == WIRE_OP_MDS_TARGET_HEARTBEAT)
		return 0; /* no credentials */
	if (op == WIRE_OP_MDS_BATCH)
		return admit_batch(m, req, nr);
	return map_body(nr, req);
}

/* A fileset client sees paths from its own root. */
static void strip_fileset(struct mds *m, struct nodemap_req *nr, struct rpc_reply *rep)
{
	char set[NACRE_PATH_MAX + 1];
	struct wire_path_rep p;
	struct wire_cursor c;

	nodemap_fileset_path(m->nodemap, nr->view.rule, set);
	size_t n = strlen(set);
	wire_cursor_init_read(&c, rep->body.buf, wire_cursor_pos(&rep->body));
	wire_path_rep_decode(&c, &p);
	if (!n || !wire_cursor_ok(&c) || strncmp(p.path, set, n) ||
	    (p.path[n] && p.path[n] != '/'))
		return;
	memmove(p.path, p.path + n, strlen(p.path + n) + 1);
	if (!p.path[0])
		str_copy(p.path, "/", sizeof(p.path));
	rep->body.pos = 0;
	wire_path_rep_encode(&rep->body, &p);
}

/* A fileset client sees only the links inside its fileset; the others count as hidden. */
static void filter_links(struct mds *m, struct nodemap_req *nr, struct rpc_reply *rep)
{
	size_t len = wire_cursor_pos(&rep->body);
	struct wire_link_entry *e = malloc(sizeof(*e));
	struct wire_cursor c;
	struct wire_links_rep h;
	uint8_t *copy = malloc(len ? len : 1);

	if (!e || !copy)
		goto out_free;
	memcpy(copy, rep->body.buf, len);
	wire_cursor_init_read(&c, copy, len);
	wire_links_rep_decode(&c, &h);
	if (!wire_cursor_ok(&c))
		goto out_free;
	uint32_t n = h.count;
	rep->body.pos = 0;
	h.count = 0;
	wire_links_rep_encode(&rep->body, &h);
	for (uint32_t i = 0; i < n && wire_cursor_ok(&c); i++) {
		wire_link_entry_get(&c, e);
		if (!wire_cursor_ok(&c))
			break;
		if (nodemap_in_fileset(m->nodemap, &nr->view, &e->parent) == 1) {
			wire_link_entry_put(&rep->body, e);
			h.count++;
		} else {
			h.hidden++;
		}
	}
	wire_links_rep_patch(&rep->body, 0, &h);
out_free:
	free(copy);
	free(e);
}

static void unmap_attr(const struct nodemap_view *v, struct nacre_attr *a)
{
	a->uid = nodemap_ids_unmap_uid(&v->ids, a->uid);
	a->gid = nodemap_ids_unmap_gid(&v->ids, a->gid);
}

/* A FIND page: the entries' owners, re-encoded in place (the same length). */
static void unmap_find_rep(const struct nodemap_view *v, struct rpc_reply *rep,
			   struct wire_cursor *c)
{
	struct wire_find_rep h;
	struct wire_find_ent *e = malloc(sizeof(*e));

	if (!e)
		return;
	wire_find_rep_decode(c, &h);
	for (uint32_t i = 0; i < h.count && wire_cursor_ok(c); i++) {
		size_t at = wire_cursor_pos(c);
		wire_find_ent_get(c, e);
		if (!wire_cursor_ok(c))
			break;
		unmap_attr(v, &e->attr);
		struct wire_cursor w;
		wire_cursor_init_write(&w, rep->body.buf + at, wire_cursor_pos(c) - at);
		wire_find_ent_put(&w, e);
	}
	free(e);
}

static void unmap_reply(const struct nodemap_view *v, uint16_t op, struct rpc_reply *rep);

/* A BATCH's results, each unmapped as its change's own reply would be. */
static void unmap_batch_rep(const struct nodemap_view *v, const struct rpc_request *req,
			    struct rpc_reply *rep)
{
	struct wire_batch_req *b = malloc(sizeof(*b));
	struct wire_batch_rep *r = malloc(sizeof(*r));
	size_t len = wire_cursor_pos(&rep->body);
	uint8_t *copy = malloc(len ? len : 1);
	struct rpc_reply *one = calloc(1, sizeof(*one));
	struct wire_cursor c;

	if (!b || !r || !copy || !one)
		goto out;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_batch_req_decode(&c, b);
	if (!wire_cursor_ok(&c))
		goto out;
	memcpy(copy, rep->body.buf, len);
	wire_cursor_init_read(&c, copy, len);
	wire_batch_rep_decode(&c, r);
	if (!wire_cursor_ok(&c) || r->count != b->count)
		goto out;
	/* every result at the same length (ids are u32s): rewritten in place, in the copy */
	for (uint32_t i = 0; i < r->count; i++) {
		if (!r->r[i].len)
			continue;
		wire_cursor_init_dyn(&one->body, WIRE_BODY_MAX);
		wire_put_bytes(&one->body, r->r[i].body, r->r[i].len);
		unmap_reply(v, b->ch[i].opcode, one);
		if (wire_cursor_ok(&one->body) && wire_cursor_pos(&one->body) == r->r[i].len)
			memcpy((uint8_t *)r->r[i].body, one->body.buf, r->r[i].len);
		wire_cursor_fini(&one->body);
	}
	rep->body.pos = 0;
	wire_batch_rep_encode(&rep->body, r);
out:
	free(one);
	free(copy);
	free(r);
	free(b);
}

/* A READDIR page with attributes (WIRE_READDIR_PLUS): each entry's, in place. */
static void unmap_readdir_plus(const struct nodemap_view *v, const struct rpc_request *req,
			       struct rpc_reply *rep)
{
	struct wire_readdir_req q;
	struct wire_readdir_rep h;
	struct nacre_dirent *d = malloc(sizeof(*d));
	struct nacre_attr a;
	struct wire_cursor c;
	int has;

	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_readdir_req_decode(&c, &q);
	if (!d || !wire_cursor_ok(&c) || !(q.flags & WIRE_READDIR_PLUS))
		goto out;
	wire_cursor_init_read(&c, rep->body.buf, wire_cursor_pos(&rep->body));
	wire_readdir_rep_decode(&c, &h);
	for (uint32_t i = 0; i < h.count && wire_cursor_ok(&c); i++) {
		wire_direntplus_get(&c, d, &a, &has);
		if (!wire_cursor_ok(&c) || !has)
			continue;
		unmap_attr(v, &a);
		struct wire_cursor w; /* the attribute ends where the entry does */
		wire_cursor_init_write(&w, rep->body.buf + wire_cursor_pos(&c) - WIRE_ATTR_SIZE,
				       WIRE_ATTR_SIZE);
		wire_attr_put(&w, &a);
	}
out:
	free(d);
}

/* A client with id maps sees its own ids in the attributes it gets back. */
static void unmap_reply(const struct nodemap_view *v, uint16_t op, struct rpc_reply *rep)
{
	const struct wire_op_info *o = wire_op_info(op);
	struct wire_cursor c;
	size_t len = wire_cursor_pos(&rep->body);

	if (!o || !len)
		return;
	wire_cursor_init_read(&c, rep->body.buf, len);
	if (!strcmp(o->rep, "attr_rep")) {
		struct wire_attr_rep a;
		wire_attr_rep_decode(&c, &a);
		if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
			return;
		unmap_attr(v, &a.attr);
		rep->body.pos = 0;
		wire_attr_rep_encode(&rep->body, &a);
	} else if (!strcmp(o->rep, "create_rep")) {
		struct wire_create_rep cr;
		wire_create_rep_decode(&c, &cr);
		if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
			return;
		unmap_attr(v, &cr.attr);
		rep->body.pos = 0;
		wire_create_rep_encode(&rep->body, &cr);
	} else if (!strcmp(o->rep, "open_rep")) {
		struct wire_open_rep *or = malloc(sizeof(*or));
		if (!or)
			return;
		wire_open_rep_decode(&c, or);
		if (wire_cursor_ok(&c) && !wire_cursor_left(&c)) {
			unmap_attr(v, &or->attr);
			rep->body.pos = 0;
			wire_open_rep_encode(&rep->body, or);
		}
		free(or);
	} else if (!strcmp(o->rep, "find_rep")) {
		unmap_find_rep(v, rep, &c);
	}
}

void mds_nodemap_done(struct mds *m, struct nodemap_req *nr, int rc, struct rpc_reply *rep)
{
	uint16_t op = nr->req.hdr->opcode;

	if (rc == 0 && (nr->view.ids.nuidmaps || nr->view.ids.ngidmaps)) {
		if (op == WIRE_OP_MDS_BATCH)
			unmap_batch_rep(&nr->view, &nr->req, rep);
		else if (op == WIRE_OP_MDS_READDIR)
			unmap_readdir_plus(&nr->view, &nr->req, rep);
		else
			unmap_reply(&nr->view, op, rep);
	}
	if (rc == 0 && op == WIRE_OP_MDS_BATCH)
		nodemap_ns_moved(m->nodemap); /* it may hold a rename */
	if (rc == 0 && op == WIRE_OP_MDS_RENAME)
		nodemap_ns_moved(m->nodemap);
	if (rc == 0 && op == WIRE_OP_MDS_FID2PATH && nr->view.has_fileset)
		strip_fileset(m, nr, rep);
	if (rc == 0 && op == WIRE_OP_MDS_LINKS && nr->view.has_fileset)
		filter_links(m, nr, rep);
}

void mds_nodemap_req_fini(struct nodemap_req *nr)
{
	if (nr->has_body)
		wire_cursor_fini(&nr->body);
	nr->has_body = 0;
}

int mds_nodemap_sec_min_for(void *arg, const char *addr, const char *name, const char **rule)
{
	static __thread char what[NODEMAP_NAME_MAX + 24];
	struct mds *m = arg;
	struct nodemap_view v;
	int min = m->sec_min;

	*rule = "--sec-min";
	if (!m->nodemap)
		return min;
	nodemap_lookup_client(m->nodemap, addr, name, &v);
	if (v.has_rule && (int)nodemap_sec_min(&v) > min) {
		min = (int)nodemap_sec_min(&v);
		snprintf(what, sizeof(what), "nodemap rule '%s'", v.rule);
		*rule = what;
	}
	return min;
}
