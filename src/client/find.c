/* find.c - the FIND scan (nacre.h, "find"): the typed request and page translated to the
 * wire's find_req and find_rep, one page through the MDS (nacre_find_page) or through a
 * mount's NACRE_IOC_FIND ioctl (nacre_find_ioctl), and the mount's half of that ioctl. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "nacre/nacre.h"
#include "nacre/nacre_ioctl.h"
#include "proto/rpc.h"
#include "proto/wire.h"

/* The public bits and limits are the wire's, so masks pass unchanged. */
#define SAME(a, b) ((long)(a) == (long)(b))
_Static_assert(SAME(NACRE_FINDP_NAME, WIRE_FINDP_NAME) &&
		       SAME(NACRE_FINDP_TYPE, WIRE_FINDP_TYPE) &&
		       SAME(NACRE_FINDP_SIZE, WIRE_FINDP_SIZE) &&
		       SAME(NACRE_FINDP_ATIME, WIRE_FINDP_ATIME) &&
		       SAME(NACRE_FINDP_MTIME, WIRE_FINDP_MTIME) &&
		       SAME(NACRE_FINDP_CTIME, WIRE_FINDP_CTIME) &&
		       SAME(NACRE_FINDP_NEWER, WIRE_FINDP_NEWER) &&
		       SAME(NACRE_FINDP_UID, WIRE_FINDP_UID) &&
		       SAME(NACRE_FINDP_GID, WIRE_FINDP_GID) &&
		       SAME(NACRE_FINDP_PERM, WIRE_FINDP_PERM) &&
		       SAME(NACRE_FINDP_STRIPE_COUNT, WIRE_FINDP_STRIPE_COUNT) &&
		       SAME(NACRE_FINDP_STRIPE_SIZE, WIRE_FINDP_STRIPE_SIZE) &&
		       SAME(NACRE_FINDP_OST, WIRE_FINDP_OST) &&
		       SAME(NACRE_FINDP_POOL, WIRE_FINDP_POOL) &&
		       SAME(NACRE_FINDP_LAYOUT, WIRE_FINDP_LAYOUT) &&
		       SAME(NACRE_FINDP_HSM, WIRE_FINDP_HSM) &&
		       SAME(NACRE_FINDP_FID, WIRE_FINDP_FID) &&
		       SAME(NACRE_FINDP_MINDEPTH, WIRE_FINDP_MINDEPTH) &&
		       SAME(NACRE_FINDP_MAXDEPTH, WIRE_FINDP_MAXDEPTH) &&
		       SAME(NACRE_FINDP_EMPTY, WIRE_FINDP_EMPTY) &&
		       SAME(NACRE_FINDP_LINKS, WIRE_FINDP_LINKS) &&
		       SAME(NACRE_FINDP_BLOCKS, WIRE_FINDP_BLOCKS) &&
		       SAME(NACRE_FINDP_PROJID, WIRE_FINDP_PROJID) &&
		       SAME(NACRE_FINDP_NEWER_XY, WIRE_FINDP_NEWER_XY) &&
		       SAME(NACRE_FINDP_BTIME, WIRE_FINDP_BTIME) &&
		       SAME((NACRE_FINDP_BTIME << 1) - 1, WIRE_FINDP_ALL_),
	       "find predicate bits");
_Static_assert(SAME(NACRE_FIND_PERM_EXACT, WIRE_FIND_PERM_EXACT) &&
		       SAME(NACRE_FIND_PERM_ALL, WIRE_FIND_PERM_ALL) &&
		       SAME(NACRE_FIND_PERM_ANY, WIRE_FIND_PERM_ANY),
	       "find perm kinds");
_Static_assert(SAME(NACRE_FIND_LAYOUT_RAID0, WIRE_FIND_LAYOUT_RAID0) &&
		       SAME(NACRE_FIND_LAYOUT_RELEASED, WIRE_FIND_LAYOUT_RELEASED) &&
		       SAME(NACRE_FIND_LAYOUT_MDT, WIRE_FIND_LAYOUT_MDT),
	       "find layout kinds");
_Static_assert(SAME(NACRE_FIND_TIME_ATIME, WIRE_FIND_TIME_ATIME) &&
		       SAME(NACRE_FIND_TIME_MTIME, WIRE_FIND_TIME_MTIME) &&
		       SAME(NACRE_FIND_TIME_CTIME, WIRE_FIND_TIME_CTIME) &&
		       SAME(NACRE_FIND_TIME_BTIME, WIRE_FIND_TIME_BTIME),
	       "find -newerXY times");
_Static_assert(SAME(NACRE_FIND_OP_AND, WIRE_FIND_OP_AND) && SAME(NACRE_FIND_OP_OR, WIRE_FIND_OP_OR) &&
		       SAME(NACRE_FIND_OP_NOT, WIRE_FIND_OP_NOT) &&
		       NACRE_FIND_LEAVES_MAX == WIRE_FIND_LEAVES_MAX &&
		       NACRE_FIND_OPS_MAX == WIRE_FIND_OPS_MAX,
	       "find expressions");
_Static_assert(NACRE_FIND_NEWER_MAX == WIRE_FIND_NEWER_MAX &&
		       NACRE_FIND_GLOB_MAX == WIRE_FIND_GLOB_MAX &&
		       NACRE_FIND_OSTS_MAX == WIRE_FIND_OSTS_MAX &&
		       NACRE_FIND_POOL_MAX == WIRE_FIND_POOL_MAX,
	       "find limits");
_Static_assert(WIRE_FIND_CUR_BEGIN == 0, "a zeroed cursor is the beginning");

/* The room a reply header takes in a buffer besides its entries (a cursor path at most). */
#define FIND_REP_HEAD_ROOM 4200u

static void cmp_to_wire(struct wire_find_cmp *w, const struct nacre_find_cmp *c)
{
	w->sign = c->sign;
	w->value = c->value;
	w->unit = c->unit;
	w->up = c->up;
}

static void cursor_to_wire(struct wire_find_cursor *w, const struct nacre_find_cursor *c)
{
	w->state = c->state;
	memcpy(w->path, c->path, sizeof(w->path));
	w->path[sizeof(w->path) - 1] = 0;
}

/* The predicates of req (preds, neg and their values) into q. */
static int preds_to_wire(struct wire_find_query *q, const struct nacre_find_req *req,
			 uint32_t version)
{
	/* a version-1 caller's struct ends at fid: the later fields are not read */
	uint32_t known = version == 1 ? NACRE_FINDP_MAXDEPTH * 2 - 1 : WIRE_FINDP_ALL_;
	if ((req->preds | req->neg) & ~known || req->nosts > NACRE_FIND_OSTS_MAX)
		return -EINVAL;
	q->preds = req->preds;
	q->neg = req->neg;
	memcpy(q->name, req->name, sizeof(q->name));
	q->name[sizeof(q->name) - 1] = 0;
	q->name_icase = req->name_icase;
	q->types = req->types;
	cmp_to_wire(&q->size, &req->size);
	cmp_to_wire(&q->atime, &req->atime);
	cmp_to_wire(&q->mtime, &req->mtime);
	cmp_to_wire(&q->ctime, &req->ctime);
	q->newer = req->newer;
	q->uid = req->uid;
	q->gid = req->gid;
	q->perm_kind = req->perm_kind;
	q->perm = req->perm;
	cmp_to_wire(&q->stripe_count, &req->stripe_count);
	cmp_to_wire(&q->stripe_size, &req->stripe_size);
	q->nosts = req->nosts;
	memcpy(q->osts, req->osts, req->nosts * sizeof(q->osts[0]));
	memcpy(q->pool, req->pool, sizeof(q->pool));
	q->pool[sizeof(q->pool) - 1] = 0;
	q->layouts = req->layouts;
	q->hsm = req->hsm;
	q->fid = req->fid;
	if (version < 2)
		return 0;
	if (req->nnewer > NACRE_FIND_NEWER_MAX)
		return -EINVAL;
	cmp_to_wire(&q->links, &req->links);
	cmp_to_wire(&q->blocks, &req->blocks);
	cmp_to_wire(&q->btime, &req->btime);
	q->projid = req->projid;
	q->nnewer = req->nnewer;
	for (uint32_t i = 0; i < req->nnewer; i++) {
		q->newer_xy[i].which = req->newer_xy[i].which;
		q->newer_xy[i].neg = req->newer_xy[i].neg;
		q->newer_xy[i].t = req->newer_xy[i].t;
	}
	return 0;
}

/* req as a find_req (cred and FID left zero, max_bytes 0 as the most), field by field so
 * that the public type and the wire may part. */
static int req_to_wire(struct wire_find_req *w, const struct nacre_find_req *req)
{
	struct wire_find_query *q = &w->q;

	if (req->version < 1 || req->version > NACRE_FIND_VERSION)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->max_bytes = req->max_bytes && req->max_bytes < WIRE_FIND_MAX_BYTES
			       ? req->max_bytes
			       : WIRE_FIND_MAX_BYTES;
	cursor_to_wire(&w->cur, &req->cursor);
	q->now = req->now;
	memcpy(q->start_name, req->start_name, sizeof(q->start_name));
	q->start_name[sizeof(q->start_name) - 1] = 0;
	q->start_entry = req->start_entry;
	q->mindepth = req->mindepth;
	q->maxdepth = req->maxdepth;
	int rc = preds_to_wire(q, req, req->version);
	if (rc || req->version < 2 || !req->nleaves)
		return rc;
	/* the expression: its leaves' ages count from the request's now */
	if (req->nleaves > NACRE_FIND_LEAVES_MAX || !req->leaves || !req->nops ||
	    req->nops > NACRE_FIND_OPS_MAX)
		return -EINVAL;
	w->nleaves = req->nleaves;
	for (uint32_t i = 0; i < req->nleaves; i++) {
		w->leaves[i].now = req->now;
		rc = preds_to_wire(&w->leaves[i], &req->leaves[i], req->version);
		if (rc)
			return rc;
	}
	w->nops = req->nops;
	memcpy(w->ops, req->ops, req->nops);
	return 0;
}

/* Encodes w into c, refusing (-EINVAL) what the MDS's decoder would refuse, so that a bad
 * request fails here rather than as a protocol error. */
static int req_encode(struct wire_cursor *c, const struct wire_find_req *w)
{
	struct wire_find_req *check = malloc(sizeof(*check));
	struct wire_cursor r;
	size_t start = wire_cursor_pos(c);
	int rc = -EINVAL;

	if (!check)
		return -ENOMEM;
	wire_find_req_encode(c, w);
	if (wire_cursor_ok(c)) {
		wire_cursor_init_read(&r, c->buf + start, wire_cursor_pos(c) - start);
		wire_find_req_decode(&r, check);
		if (wire_cursor_ok(&r) && !wire_cursor_left(&r))
			rc = 0;
	} else if (c->err == -E2BIG || c->err == -ENOMEM) {
		rc = c->err == -E2BIG ? -EMSGSIZE : -ENOMEM;
	}
	free(check);
	return rc;
}

void nacre_find_page_free(struct nacre_find_page *page)
{
	if (!page)
		return;
	free(page->entries);
	free(page);
}

/* A find_rep body as a page: one allocation for the page, its entries and their strings.
 * Returns 0, -ENOMEM, or -EBADMSG with *pagep holding the entries before the bad one. */
static int page_decode(const void *body, size_t len, struct nacre_find_page **pagep)
{
	struct nacre_find_page *page = calloc(1, sizeof(*page));
	struct wire_find_ent *e = malloc(sizeof(*e));
	struct wire_find_rep h;
	struct wire_cursor c;
	char *strs;
	int rc = 0;

	*pagep = NULL;
	if (!page || !e)
		goto nomem;
	wire_cursor_init_read(&c, body, len);
	wire_find_rep_decode(&c, &h);
	if (!wire_cursor_ok(&c))
		h.count = 0; /* the decoder bounds count by the bytes left */
	/* each entry's two strings with their NULs take no more than their encoding */
	page->entries = malloc(h.count * sizeof(page->entries[0]) + len + 1);
	if (!page->entries)
		goto nomem;
	strs = (char *)(page->entries + h.count);
	for (uint32_t i = 0; i < h.count && wire_cursor_ok(&c); i++) {
		struct nacre_find_entry *pe = &page->entries[i];
		size_t n;

		wire_find_ent_get(&c, e);
		if (!wire_cursor_ok(&c))
			break;
		memset(pe, 0, sizeof(*pe));
		n = strlen(e->path) + 1;
		pe->path = memcpy(strs, e->path, n);
		strs += n;
		n = strlen(e->target) + 1;
		pe->target = memcpy(strs, e->target, n);
		strs += n;
		pe->err = e->err;
		pe->attr = e->attr;
		pe->has_layout = e->has_layout;
		if (e->has_layout)
			pe->layout = e->layout;
		page->count = i + 1;
	}
	if (!wire_cursor_ok(&c)) {
		rc = -EBADMSG;
	} else {
		page->eof = h.done != 0;
		page->next.state = h.cur.state;
		memcpy(page->next.path, h.cur.path, sizeof(page->next.path));
	}
	free(e);
	*pagep = page;
	return rc;
nomem:
	free(e);
	nacre_find_page_free(page);
	return -ENOMEM;
}

NACRE_API int nacre_find_page(struct nacre_fs *fs, const struct nacre_cred *cr,
			      const struct nacre_fid *dir, const struct nacre_find_req *req,
			      struct nacre_find_page **page)
{
	struct wire_find_req *w;
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *m;
	int rc;

	if (!fs || !dir || !req || !page)
		return -EINVAL;
	*page = NULL;
	w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	rc = req_to_wire(w, req);
	if (rc) {
		free(w);
		return rc;
	}
	w->cred = *cl_cred(cr, &root);
	w->fid = *dir;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	rc = req_encode(&c, w);
	free(w);
	if (!rc)
		rc = cl_mds_call(fs, WIRE_OP_MDS_FIND, &c, &m);
	wire_cursor_fini(&c);
	if (rc)
		return rc;
	rc = page_decode(m->body, m->body_len, page);
	rpc_msg_free(m);
	if (rc == -EBADMSG) {
		nacre_find_page_free(*page);
		*page = NULL;
		rc = -EPROTO; /* as any malformed reply from a server */
	}
	return rc;
}

NACRE_API int nacre_find_ioctl(int fd, const struct nacre_find_req *req,
			       struct nacre_find_page **page)
{
	struct wire_find_req *w;
	struct wire_cursor c;
	unsigned char *buf;
	int rc, n;

	if (!req || !page)
		return -EINVAL;
	*page = NULL;
	w = malloc(sizeof(*w));
	buf = calloc(1, NACRE_IOC_FIND_SIZE);
	if (!w || !buf) {
		free(w);
		free(buf);
		return -ENOMEM;
	}
	rc = req_to_wire(w, req);
	if (!rc) {
		/* the mount replaces the credentials and the FID, and fits the page to the ioctl */
		wire_cursor_init_write(&c, buf + 4, NACRE_IOC_FIND_SIZE - 4);
		rc = req_encode(&c, w);
	}
	free(w);
	if (rc) {
		free(buf);
		return rc;
	}
	/* the body's length as a little-endian u32, then the body; the rest is padding */
	size_t len = wire_cursor_pos(&c);
	buf[0] = (unsigned char)len;
	buf[1] = (unsigned char)(len >> 8);
	buf[2] = buf[3] = 0;
	n = ioctl(fd, NACRE_IOC_FIND, buf);
	if (n < 0)
		rc = -errno;
	else if ((size_t)n > NACRE_IOC_FIND_SIZE)
		rc = -EBADMSG;
	else
		rc = page_decode(buf, (size_t)n, page);
	free(buf);
	return rc;
}

NACRE_API int nacre_find_ioctl_serve(struct nacre_fs *fs, const struct nacre_cred *cr,
				     const struct nacre_fid *dir, const void *in,
				     size_t in_len, void *out, size_t out_len)
{
	struct wire_find_req *r;
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *m;
	int rc;

	if (!fs || !dir || !in || !out)
		return -EINVAL;
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	wire_cursor_init_read(&c, in, in_len);
	wire_find_req_decode(&c, r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c)) {
		free(r);
		return -EINVAL;
	}
	/* the page must fit in out with the reply header */
	size_t room = out_len > FIND_REP_HEAD_ROOM ? out_len - FIND_REP_HEAD_ROOM : 0;
	if (r->max_bytes > room)
		r->max_bytes = (uint32_t)room;
	r->cred = *cl_cred(cr, &root);
	r->fid = *dir;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_find_req_encode(&c, r);
	free(r);
	rc = cl_mds_call(fs, WIRE_OP_MDS_FIND, &c, &m);
	wire_cursor_fini(&c);
	if (rc)
		return rc;
	if (m->body_len > out_len) {
		rpc_msg_free(m);
		return -EPROTO;
	}
	memcpy(out, m->body, m->body_len);
	rc = (int)m->body_len;
	rpc_msg_free(m);
	return rc;
}
