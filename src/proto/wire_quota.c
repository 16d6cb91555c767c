/* wire_quota.c - QUOTA's messages (wire.h, "QUOTA"): the request, the reply, the drift
 * entries of a recount and the per-target usage of lfs quota -v. Encoded field by field over the bounded cursor, as every message. */
#include <errno.h>
#include <string.h>

#include "proto/wire.h"

void wire_quota_req_encode(struct wire_cursor *c, const struct wire_quota_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u32(c, m->op);
	wire_put_u32(c, m->type);
	wire_put_u32(c, m->id);
	wire_put_u32(c, m->valid);
	wire_put_u64(c, m->bsoft);
	wire_put_u64(c, m->bhard);
	wire_put_u64(c, m->isoft);
	wire_put_u64(c, m->ihard);
	wire_put_u64(c, m->bgrace);
	wire_put_u64(c, m->igrace);
}

void wire_quota_req_decode(struct wire_cursor *c, struct wire_quota_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->op = wire_get_u32(c);
	m->type = wire_get_u32(c);
	m->id = wire_get_u32(c);
	m->valid = wire_get_u32(c);
	m->bsoft = wire_get_u64(c);
	m->bhard = wire_get_u64(c);
	m->isoft = wire_get_u64(c);
	m->ihard = wire_get_u64(c);
	m->bgrace = wire_get_u64(c);
	m->igrace = wire_get_u64(c);
	if (wire_cursor_ok(c) &&
	    (m->op >= WIRE_QUOTA_OPS_ || m->type > 2 || (m->valid & ~WIRE_QUOTA_V_ALL_)))
		wire_cursor_fail(c, -EPROTO);
}

void wire_quota_rep_encode(struct wire_cursor *c, const struct wire_quota_rep *m)
{
	wire_put_u64(c, m->kbytes);
	wire_put_u64(c, m->inodes);
	wire_put_u64(c, m->bsoft);
	wire_put_u64(c, m->bhard);
	wire_put_u64(c, m->isoft);
	wire_put_u64(c, m->ihard);
	wire_put_i64(c, m->btime);
	wire_put_i64(c, m->itime);
	wire_put_u64(c, m->bgrace);
	wire_put_u64(c, m->igrace);
	wire_put_u32(c, m->flags);
	wire_put_u32(c, m->count);
}

void wire_quota_rep_decode(struct wire_cursor *c, struct wire_quota_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->kbytes = wire_get_u64(c);
	m->inodes = wire_get_u64(c);
	m->bsoft = wire_get_u64(c);
	m->bhard = wire_get_u64(c);
	m->isoft = wire_get_u64(c);
	m->ihard = wire_get_u64(c);
	m->btime = wire_get_i64(c);
	m->itime = wire_get_i64(c);
	m->bgrace = wire_get_u64(c);
	m->igrace = wire_get_u64(c);
	m->flags = wire_get_u32(c);
	m->count = wire_get_u32(c);
	/* the items' kind follows the request: bound by the larger count and smaller item */
	if (wire_cursor_ok(c) &&
	    (m->count > WIRE_QUOTA_TARGET_MAX ||
	     (uint64_t)m->count * WIRE_QUOTA_TARGET_SIZE > wire_cursor_left(c)))
		wire_cursor_fail(c, -EPROTO);
}

void wire_quota_drift_put(struct wire_cursor *c, const struct wire_quota_drift *d)
{
	wire_put_u32(c, d->type);
	wire_put_u32(c, d->id);
	wire_put_u64(c, d->kbytes);
	wire_put_u64(c, d->inodes);
	wire_put_u64(c, d->count_kbytes);
	wire_put_u64(c, d->count_inodes);
}

void wire_quota_drift_get(struct wire_cursor *c, struct wire_quota_drift *d)
{
	memset(d, 0, sizeof(*d));
	d->type = wire_get_u32(c);
	d->id = wire_get_u32(c);
	d->kbytes = wire_get_u64(c);
	d->inodes = wire_get_u64(c);
	d->count_kbytes = wire_get_u64(c);
	d->count_inodes = wire_get_u64(c);
	if (wire_cursor_ok(c) && d->type > 2)
		wire_cursor_fail(c, -EPROTO);
}

void wire_quota_target_put(struct wire_cursor *c, const struct wire_quota_target *t)
{
	wire_put_u32(c, t->ost_idx);
	wire_put_u64(c, t->kbytes);
}

void wire_quota_target_get(struct wire_cursor *c, struct wire_quota_target *t)
{
	t->ost_idx = wire_get_u32(c);
	t->kbytes = wire_get_u64(c);
}
