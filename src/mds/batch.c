/* batch.c - BATCH: queued namespace changes in one transaction (batch.h). */
#include "mds/batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "mds/destroy.h"
#include "mds/groups.h"
#include "mds/jobs.h"
#include "mds/lease.h"
#include "mds/notify.h"
#include "mds/ns.h"
#include "mds/req.h"
#include "mds/space.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"
#include "proto/wire.h"

/* What one change made. */
struct change_out {
	int status;
	int has_attr;            /* attr_rep, or create_rep for CREATE */
	struct nacre_attr attr;
	struct nacre_layout layout;
	int perm_changed;        /* a SETATTR of mode or owner: other clients are told */
	struct nacre_fid parent; /* a MKDIR's, for the lease of what it made */
};

struct batch_arg {
	struct mds *m;
	const struct wire_batch_req *b;
	const struct wire_batch_rep *first; /* a replay: the first execution's reply, or NULL */
	struct change_out *out;
	int destroys;                      /* an unlink or a rename ran: objects may go */
};

static int decoded(const struct wire_cursor *c)
{
	return wire_cursor_ok(c) && wire_cursor_left(c) == 0 ? 0 : -EPROTO;
}

static int apply_create(struct batch_arg *a, struct mds_txn *txn, uint16_t op,
			struct wire_cursor *c, struct change_out *o)
{
	struct wire_create_req *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	wire_create_req_decode(c, r);
	int rc = decoded(c);
	if (!rc)
		rc = mds_ns_create_txn(a->m, txn, op, r, &o->attr, &o->layout);
	o->parent = r->parent;
	free(r);
	o->has_attr = !rc;
	return rc;
}

/* One change in txn (its own nested transaction). */
static int apply(struct batch_arg *a, struct mds_txn *txn, const struct wire_batch_change *ch,
		 struct change_out *o)
{
	struct wire_cursor c;
	int rc;

	wire_cursor_init_read(&c, ch->body, ch->len);
	switch (ch->opcode) {
	case WIRE_OP_MDS_CREATE:
	case WIRE_OP_MDS_MKDIR:
	case WIRE_OP_MDS_MKNOD:
	case WIRE_OP_MDS_SYMLINK:
		return apply_create(a, txn, ch->opcode, &c, o);
	case WIRE_OP_MDS_UNLINK:
	case WIRE_OP_MDS_RMDIR: {
		struct wire_name_req r;
		wire_name_req_decode(&c, &r);
		rc = decoded(&c);
		if (!rc)
			rc = mds_ns_unlink_txn(a->m, txn, &r.cred, &r.parent, r.name,
					       ch->opcode == WIRE_OP_MDS_RMDIR);
		a->destroys |= !rc;
		return rc;
	}
	case WIRE_OP_MDS_RENAME: {
		struct wire_rename_req r;
		wire_rename_req_decode(&c, &r);
		rc = decoded(&c);
		if (!rc)
			rc = mds_ns_rename_txn(a->m, txn, &r);
		a->destroys |= !rc;
		return rc;
	}
	case WIRE_OP_MDS_LINK: {
		struct wire_link_req r;
		wire_link_req_decode(&c, &r);
		rc = decoded(&c);
		if (!rc)
			rc = mds_ns_link_txn(a->m, txn, &r.cred, &r.fid, &r.parent, r.name,
					     &o->attr);
		o->has_attr = !rc;
		return rc;
	}
	case WIRE_OP_MDS_SETATTR: {
		struct wire_setattr_req r;
		wire_setattr_req_decode(&c, &r);
		rc = decoded(&c);
		if (!rc)
			rc = mds_ns_setattr_txn(a->m, txn, &r.cred, &r.fid, &r.sa, &o->attr);
		o->has_attr = !rc;
		o->perm_changed = !rc && (r.sa.valid & (NACRE_SET_MODE | NACRE_SET_UID |
							NACRE_SET_GID));
		return rc;
	}
	default:
		return -EPROTO; /* the decoder let through only wire_batch_op_allowed's */
	}
}

/* A replay makes what the first execution made: change i's FID and CREATE's layout. */
static void replay_facts(const struct batch_arg *a, uint32_t i, struct mds_req *r)
{
	const struct wire_batch_result *f;

	if (!a->first || i >= a->first->count)
		return;
	f = &a->first->r[i];
	if (!f->status && f->len)
		mds_req_replay_facts(r, a->b->ch[i].opcode, f->body, f->len);
}

static int batch_op(struct mds_txn *txn, void *arg)
{
	struct batch_arg *a = arg;
	const struct mds_req *whole = mds_req_of(txn);
	int replay = whole && whole->replay;

	for (uint32_t i = 0; i < a->b->count; i++) {
		const struct wire_batch_change *ch = &a->b->ch[i];
		struct change_out *o = &a->out[i];
		/* the change's own request: the batch's, with its own replay facts */
		struct mds_req one = {0};
		struct mds_txn *child;

		if (whole)
			one = *whole;
		one.opcode = ch->opcode;
		one.has_replay_fid = one.has_replay_layout = 0;
		if (replay)
			replay_facts(a, i, &one);
		o->status = mds_space_admit(a->m->space, ch->opcode, replay);
		if (o->status)
			continue;
		o->status = mds_txn_begin_nested(txn, &child);
		if (o->status)
			continue;
		mds_txn_set_owner(child, &one);
		mds_groups_missing_reset();
		o->status = apply(a, child, ch, o);
		if (o->status) {
			if (mds_groups_missing())
				o->status = -NACRE_EGROUPS; /* register the list, send it again */
			mds_txn_abort(child);
			o->has_attr = 0;
			continue;
		}
		o->status = mds_txn_commit(child);
		if (o->status)
			o->has_attr = 0;
	}
	/* the batch's own note, for the reply cache: how many changes it held */
	mds_txn_note_result(txn, NULL, a->b->count);
	return 0;
}

/* Change i's reply body (as its lone request's reply: CREATE's without a handle). */
static void encode_result(uint16_t op, const struct change_out *o, struct wire_cursor *c)
{
	if (!o->has_attr)
		return;
	if (op == WIRE_OP_MDS_CREATE) {
		struct wire_create_rep cr = {.attr = o->attr, .layout = o->layout};
		wire_create_rep_encode(c, &cr);
	} else {
		struct wire_attr_rep ar = {.attr = o->attr};
		wire_attr_rep_encode(c, &ar);
	}
}

static int encode_reply(const struct wire_batch_req *b, const struct change_out *out,
			struct wire_cursor *rep_body)
{
	struct wire_batch_rep *rep = calloc(1, sizeof(*rep));
	struct wire_cursor bodies;
	size_t at[WIRE_BATCH_MAX + 1];
	int rc = 0;

	if (!rep)
		return -ENOMEM;
	wire_cursor_init_dyn(&bodies, WIRE_BODY_MAX);
	for (uint32_t i = 0; i < b->count; i++) {
		at[i] = wire_cursor_pos(&bodies);
		if (!out[i].status)
			encode_result(b->ch[i].opcode, &out[i], &bodies);
	}
	at[b->count] = wire_cursor_pos(&bodies);
	if (!wire_cursor_ok(&bodies)) {
		rc = -EOVERFLOW; /* wire_batch_fits said it could not happen */
		goto out;
	}
	rep->count = b->count;
	for (uint32_t i = 0; i < b->count; i++) {
		rep->r[i].status = out[i].status;
		rep->r[i].len = (uint32_t)(at[i + 1] - at[i]);
		rep->r[i].body = bodies.buf + at[i];
	}
	wire_batch_rep_encode(rep_body, rep);
out:
	wire_cursor_fini(&bodies);
	free(rep);
	return rc;
}

/* The first execution's reply of a replayed batch, or NULL. */
static struct wire_batch_rep *first_reply(const struct rpc_request *req)
{
	struct wire_batch_rep *f;
	struct wire_cursor c;

	if (!req->replay_reply || !req->env || !(req->env->flags & WIRE_ENV_REPLAY))
		return NULL;
	f = malloc(sizeof(*f));
	if (!f)
		return NULL;
	wire_cursor_init_read(&c, req->replay_reply, req->env->replay_len);
	wire_batch_rep_decode(&c, f);
	if (!wire_cursor_ok(&c)) {
		free(f);
		return NULL;
	}
	return f;
}

static struct wire_batch_req *decode_request(const struct rpc_request *req)
{
	struct wire_batch_req *b = malloc(sizeof(*b));
	struct wire_cursor c;

	if (!b)
		return NULL;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_batch_req_decode(&c, b);
	if (decoded(&c)) {
		LOG_RATELIMITED(LOG_LVL_WARN, "batch", "malformed BATCH from %s (%s)", req->peer,
				req->peer_name ? req->peer_name : "?");
		free(b);
		return NULL;
	}
	return b;
}

int mds_batch_serve(struct mds *m, const struct rpc_request *req, struct wire_cursor *rep_body)
{
	struct wire_batch_req *b = decode_request(req);
	struct batch_arg a = {.m = m};
	int rc;

	if (!b)
		return -EPROTO;
	rc = wire_batch_fits(b) ? 0 : -E2BIG; /* refused before anything runs */
	if (rc) {
		LOG_RATELIMITED(LOG_LVL_WARN, "batch", "BATCH of %u changes from %s (%s): its "
				"replies could exceed %u bytes, refused", b->count, req->peer,
				req->peer_name ? req->peer_name : "?", WIRE_BODY_MAX);
		free(b);
		return rc;
	}
	a.b = b;
	a.first = first_reply(req);
	a.out = calloc(b->count, sizeof(*a.out));
	if (!a.out) {
		rc = -ENOMEM;
		goto out;
	}
	uint64_t start = m->jobs ? mds_jobs_now_us() : 0;
	rc = mds_writer_submit(m->writer, batch_op, &a);
	if (rc)
		goto out;
	/* each change made counts for its job, with its share of the batch's time */
	uint64_t share = m->jobs && b->count ? (mds_jobs_now_us() - start) / b->count : 0;
	for (uint32_t i = 0; m->jobs && i < b->count; i++)
		if (!a.out[i].status)
			mds_jobs_note(m, b->ch[i].opcode, b->ch[i].body, b->ch[i].len, share);
	if (a.destroys)
		mds_destroyer_kick(m->destroyer);
	for (uint32_t i = 0; i < b->count; i++) {
		if (a.out[i].perm_changed)
			mds_notify_perm_change(m, &a.out[i].attr.fid);
		if (!a.out[i].status && b->ch[i].opcode == WIRE_OP_MDS_MKDIR && !a.first)
			mds_lease_made_dir(m->leases, req, &a.out[i].parent, &a.out[i].attr.fid);
	}
	rc = encode_reply(b, a.out, rep_body);
out:
	free(a.out);
	free((void *)a.first);
	free(b);
	return rc;
}

int mds_batch_reconstruct(const struct rpc_request *req, struct wire_cursor *rep_body)
{
	struct wire_batch_req *b = decode_request(req);
	struct change_out *out;
	int rc;

	if (!b)
		return -EPROTO;
	out = calloc(b->count, sizeof(*out));
	if (!out) {
		free(b);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < b->count; i++)
		out[i].status = -EALREADY;
	rc = encode_reply(b, out, rep_body);
	free(out);
	free(b);
	return rc;
}
