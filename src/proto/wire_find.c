/* wire_find.c - FIND's messages (wire.h, "FIND"): the query, the cursor, the page and its
 * entries. Encoded field by field over the bounded cursor, as every message. */
#include <errno.h>
#include <string.h>

#include "proto/wire.h"

static void cmp_put(struct wire_cursor *c, const struct wire_find_cmp *m)
{
	wire_put_u8(c, (uint8_t)m->sign);
	wire_put_u64(c, m->value);
	wire_put_u64(c, m->unit);
	wire_put_u8(c, m->up);
}

static void cmp_get(struct wire_cursor *c, struct wire_find_cmp *m)
{
	m->sign = (int8_t)wire_get_u8(c);
	m->value = wire_get_u64(c);
	m->unit = wire_get_u64(c);
	m->up = wire_get_u8(c);
	if (m->sign < -1 || m->sign > 1 || m->up > 1)
		wire_cursor_fail(c, -EPROTO);
}

static void query_put(struct wire_cursor *c, const struct wire_find_query *q)
{
	wire_put_u32(c, q->preds);
	wire_put_u32(c, q->neg);
	wire_time_put(c, &q->now);
	wire_path_put(c, q->start_name);
	wire_put_u8(c, q->start_entry);
	wire_put_u32(c, q->mindepth);
	wire_put_u32(c, q->maxdepth);
	wire_path_put(c, q->name);
	wire_put_u8(c, q->name_icase);
	wire_put_u32(c, q->types);
	cmp_put(c, &q->size);
	cmp_put(c, &q->atime);
	cmp_put(c, &q->mtime);
	cmp_put(c, &q->ctime);
	wire_time_put(c, &q->newer);
	wire_put_u32(c, q->uid);
	wire_put_u32(c, q->gid);
	wire_put_u8(c, q->perm_kind);
	wire_put_u32(c, q->perm);
	cmp_put(c, &q->stripe_count);
	cmp_put(c, &q->stripe_size);
	if (q->nosts > WIRE_FIND_OSTS_MAX) {
		wire_cursor_fail(c, -EINVAL);
		return;
	}
	wire_put_u32(c, q->nosts);
	for (uint32_t i = 0; i < q->nosts; i++)
		wire_put_u32(c, q->osts[i]);
	wire_path_put(c, q->pool);
	wire_put_u32(c, q->layouts);
	wire_put_u32(c, q->hsm);
	wire_fid_put(c, &q->fid);
}

static void query_get(struct wire_cursor *c, struct wire_find_query *q)
{
	q->preds = wire_get_u32(c);
	q->neg = wire_get_u32(c);
	wire_time_get(c, &q->now);
	wire_path_get(c, q->start_name, NACRE_NAME_MAX);
	q->start_entry = wire_get_u8(c);
	if (q->start_entry > 1 || (q->start_entry && !q->start_name[0]))
		wire_cursor_fail(c, -EPROTO);
	q->mindepth = wire_get_u32(c);
	q->maxdepth = wire_get_u32(c);
	wire_path_get(c, q->name, WIRE_FIND_GLOB_MAX);
	q->name_icase = wire_get_u8(c);
	q->types = wire_get_u32(c);
	cmp_get(c, &q->size);
	cmp_get(c, &q->atime);
	cmp_get(c, &q->mtime);
	cmp_get(c, &q->ctime);
	wire_time_get(c, &q->newer);
	q->uid = wire_get_u32(c);
	q->gid = wire_get_u32(c);
	q->perm_kind = wire_get_u8(c);
	q->perm = wire_get_u32(c);
	cmp_get(c, &q->stripe_count);
	cmp_get(c, &q->stripe_size);
	q->nosts = wire_get_u32(c);
	if (q->nosts > WIRE_FIND_OSTS_MAX) {
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	for (uint32_t i = 0; i < q->nosts; i++)
		q->osts[i] = wire_get_u32(c);
	wire_path_get(c, q->pool, WIRE_FIND_POOL_MAX);
	q->layouts = wire_get_u32(c);
	q->hsm = wire_get_u32(c);
	wire_fid_get(c, &q->fid);
	if ((q->preds | q->neg) & ~(uint32_t)WIRE_FINDP_ALL_ ||
	    (q->neg & (WIRE_FINDP_MINDEPTH | WIRE_FINDP_MAXDEPTH | WIRE_FINDP_NEWER_XY)) ||
	    q->perm_kind > WIRE_FIND_PERM_ANY || q->perm > 07777 ||
	    (q->layouts & ~(uint32_t)WIRE_FIND_LAYOUT_ALL_))
		wire_cursor_fail(c, -EPROTO);
	/* a comparison in use needs a unit */
	if (((q->preds & WIRE_FINDP_SIZE) && !q->size.unit) ||
	    ((q->preds & WIRE_FINDP_ATIME) && !q->atime.unit) ||
	    ((q->preds & WIRE_FINDP_MTIME) && !q->mtime.unit) ||
	    ((q->preds & WIRE_FINDP_CTIME) && !q->ctime.unit) ||
	    ((q->preds & WIRE_FINDP_STRIPE_COUNT) && !q->stripe_count.unit) ||
	    ((q->preds & WIRE_FINDP_STRIPE_SIZE) && !q->stripe_size.unit))
		wire_cursor_fail(c, -EPROTO);
}

/* find_more: the values of the WIRE_FINDP_MORE_ predicates */
static void more_put(struct wire_cursor *c, const struct wire_find_query *q)
{
	cmp_put(c, &q->links);
	cmp_put(c, &q->blocks);
	cmp_put(c, &q->btime);
	wire_put_u32(c, q->projid);
	if (q->nnewer > WIRE_FIND_NEWER_MAX) {
		wire_cursor_fail(c, -EINVAL);
		return;
	}
	wire_put_u8(c, (uint8_t)q->nnewer);
	for (uint32_t i = 0; i < q->nnewer; i++) {
		wire_put_u8(c, q->newer_xy[i].which);
		wire_put_u8(c, q->newer_xy[i].neg);
		wire_time_put(c, &q->newer_xy[i].t);
	}
}

static void more_get(struct wire_cursor *c, struct wire_find_query *q)
{
	cmp_get(c, &q->links);
	cmp_get(c, &q->blocks);
	cmp_get(c, &q->btime);
	q->projid = wire_get_u32(c);
	q->nnewer = wire_get_u8(c);
	if (q->nnewer > WIRE_FIND_NEWER_MAX ||
	    !q->nnewer != !(q->preds & WIRE_FINDP_NEWER_XY)) {
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	for (uint32_t i = 0; i < q->nnewer; i++) {
		q->newer_xy[i].which = wire_get_u8(c);
		q->newer_xy[i].neg = wire_get_u8(c);
		wire_time_get(c, &q->newer_xy[i].t);
		if (q->newer_xy[i].which > WIRE_FIND_TIME_BTIME || q->newer_xy[i].neg > 1)
			wire_cursor_fail(c, -EPROTO);
	}
	if (((q->preds & WIRE_FINDP_LINKS) && !q->links.unit) ||
	    ((q->preds & WIRE_FINDP_BLOCKS) && !q->blocks.unit) ||
	    ((q->preds & WIRE_FINDP_BTIME) && !q->btime.unit))
		wire_cursor_fail(c, -EPROTO);
}

/* find_expr: the leaves and the program over them */
static void expr_put(struct wire_cursor *c, const struct wire_find_req *m)
{
	if (m->nleaves > WIRE_FIND_LEAVES_MAX || !m->nops || m->nops > WIRE_FIND_OPS_MAX) {
		wire_cursor_fail(c, -EINVAL);
		return;
	}
	wire_put_u8(c, (uint8_t)m->nleaves);
	for (uint32_t i = 0; i < m->nleaves; i++) {
		query_put(c, &m->leaves[i]);
		if (m->leaves[i].preds & WIRE_FINDP_MORE_)
			more_put(c, &m->leaves[i]);
	}
	wire_put_u8(c, (uint8_t)m->nops);
	wire_put_bytes(c, m->ops, m->nops);
}

/* 0 if ops is a postfix program over nleaves leaves that leaves one value */
static int program_ok(const uint8_t *ops, uint32_t nops, uint32_t nleaves)
{
	uint32_t depth = 0;
	for (uint32_t i = 0; i < nops; i++) {
		if (ops[i] < WIRE_FIND_OP_AND) {
			if (ops[i] >= nleaves)
				return -1;
			depth++;
		} else if (ops[i] == WIRE_FIND_OP_NOT) {
			if (depth < 1)
				return -1;
		} else if (ops[i] == WIRE_FIND_OP_AND || ops[i] == WIRE_FIND_OP_OR) {
			if (depth < 2)
				return -1;
			depth--;
		} else {
			return -1;
		}
	}
	return depth == 1 ? 0 : -1;
}

static void expr_get(struct wire_cursor *c, struct wire_find_req *m)
{
	m->nleaves = wire_get_u8(c);
	if (!m->nleaves || m->nleaves > WIRE_FIND_LEAVES_MAX) {
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	for (uint32_t i = 0; i < m->nleaves && wire_cursor_ok(c); i++) {
		struct wire_find_query *q = &m->leaves[i];
		query_get(c, q);
		if (q->preds & (WIRE_FINDP_MINDEPTH | WIRE_FINDP_MAXDEPTH))
			wire_cursor_fail(c, -EPROTO); /* depth is the scan's, not a leaf's */
		if (q->preds & WIRE_FINDP_MORE_)
			more_get(c, q);
	}
	m->nops = wire_get_u8(c);
	if (!m->nops || m->nops > WIRE_FIND_OPS_MAX) {
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	wire_get_bytes(c, m->ops, m->nops);
	if (wire_cursor_ok(c) && program_ok(m->ops, m->nops, m->nleaves))
		wire_cursor_fail(c, -EPROTO);
}

static void cursor_put(struct wire_cursor *c, const struct wire_find_cursor *m)
{
	wire_put_u8(c, m->state);
	wire_path_put(c, m->path);
}

static void cursor_get(struct wire_cursor *c, struct wire_find_cursor *m)
{
	m->state = wire_get_u8(c);
	wire_path_get(c, m->path, NACRE_PATH_MAX);
	if (m->state > WIRE_FIND_CUR_RESUME ||
	    (m->state == WIRE_FIND_CUR_RESUME && m->path[0] == 0))
		wire_cursor_fail(c, -EPROTO);
}

/* find_req (since version 1; find_more after the cursor when a WIRE_FINDP_MORE_ bit is
 * set, then find_expr when there are leaves): see wire.h. The decoder caps max_bytes. */
void wire_find_req_encode(struct wire_cursor *c, const struct wire_find_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u32(c, m->max_bytes);
	query_put(c, &m->q);
	cursor_put(c, &m->cur);
	if (m->q.preds & WIRE_FINDP_MORE_)
		more_put(c, &m->q);
	if (m->nleaves)
		expr_put(c, m);
}

void wire_find_req_decode(struct wire_cursor *c, struct wire_find_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->max_bytes = wire_get_u32(c);
	if (m->max_bytes > WIRE_FIND_MAX_BYTES)
		m->max_bytes = WIRE_FIND_MAX_BYTES;
	query_get(c, &m->q);
	cursor_get(c, &m->cur);
	if (m->q.preds & WIRE_FINDP_MORE_)
		more_get(c, &m->q);
	if (wire_cursor_ok(c) && wire_cursor_left(c) > 0)
		expr_get(c, m);
}

/* find_rep (since version 1): u32 count, u8 done, cursor; the decoder checks that count of
 * the smallest entry fit in the bytes left. */
void wire_find_rep_encode(struct wire_cursor *c, const struct wire_find_rep *m)
{
	wire_put_u32(c, m->count);
	wire_put_u8(c, m->done);
	cursor_put(c, &m->cur);
}

void wire_find_rep_decode(struct wire_cursor *c, struct wire_find_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->count = wire_get_u32(c);
	m->done = wire_get_u8(c);
	cursor_get(c, &m->cur);
	if (wire_cursor_ok(c) && m->count > wire_cursor_left(c) / WIRE_FIND_ENT_MIN)
		wire_cursor_fail(c, -EPROTO);
}

void wire_find_ent_put(struct wire_cursor *c, const struct wire_find_ent *e)
{
	wire_path_put(c, e->path);
	wire_put_i32(c, e->err);
	wire_attr_put(c, &e->attr);
	wire_put_u8(c, e->has_layout ? 1 : 0);
	if (e->has_layout)
		wire_layout_put(c, &e->layout);
	wire_path_put(c, e->target);
}

void wire_find_ent_get(struct wire_cursor *c, struct wire_find_ent *e)
{
	wire_path_get(c, e->path, NACRE_PATH_MAX);
	e->err = wire_get_i32(c);
	wire_attr_get(c, &e->attr);
	e->has_layout = wire_get_u8(c);
	if (e->has_layout > 1)
		wire_cursor_fail(c, -EPROTO);
	if (e->has_layout)
		wire_layout_get(c, &e->layout);
	else
		memset(&e->layout, 0, sizeof(e->layout));
	wire_path_get(c, e->target, NACRE_PATH_MAX);
	if (e->err > 0)
		wire_cursor_fail(c, -EPROTO);
}

size_t wire_find_ent_size(const struct wire_find_ent *e)
{
	size_t n = WIRE_FIND_ENT_MIN + strlen(e->path) + strlen(e->target);

	if (e->has_layout)
		n += 44 + 4 * (size_t)e->layout.nosts;
	return n;
}
