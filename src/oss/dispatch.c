/* dispatch.c - OST request handler: decode, validate, call the store, encode the reply. */
#include "oss/dispatch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"
#include "common/fid.h"
#include "common/log.h"
#include "common/lprocfs.h"
#include "nacre/nacre_errno.h"
#include "oss/cap_check.h"
#include "oss/jobs.h"
#include "oss/store.h"
#include "proto/cursor.h"
#include "proto/wire.h"

struct oss_target *oss_ctx_find(const struct oss_ctx *ctx, uint32_t index)
{
	for (int i = 0; i < ctx->ntargets; i++)
		if (ctx->targets[i]->index == index)
			return ctx->targets[i];
	return NULL;
}

/* What an oss.write_* fault point that fired does: crash (its default), or fail the write
 * with the point's error. */
static int write_fault(enum fault_point point, const struct fault_hit *hit)
{
	if (hit->action != FAULT_ACT_ERROR)
		fault_crash(point);
	return hit->err;
}

/* Counts one request of n bytes in z (min and max kept with compare-and-swap). */
static void count_size(struct oss_io_sizes *z, uint64_t n)
{
	atomic_fetch_add_explicit(&z->count, 1, memory_order_relaxed);
	lprocfs_minmax(&z->min, &z->max, n);
}

static int do_write(struct oss_target *t, const struct oss_obj_id *id,
		    const struct wire_ost_io_req *m, const struct rpc_request *req)
{
	struct fault_hit hit;
	int rc;

	if (NACRE_FAULT(FAULT_OSS_WRITE_BEFORE, &hit))
		return write_fault(FAULT_OSS_WRITE_BEFORE, &hit); /* nothing written */
	rc = oss_store_write(t, id, m->offset, req->bulk, req->bulk_len);
	if (rc == 0 && m->len > 0) {
		atomic_fetch_add_explicit(&t->stats.write_bytes, m->len, memory_order_relaxed);
		count_size(&t->stats.write_sizes, m->len);
	}
	if (rc == 0 && NACRE_FAULT(FAULT_OSS_WRITE_AFTER, &hit))
		rc = write_fault(FAULT_OSS_WRITE_AFTER, &hit); /* written, the client is told not */
	return rc;
}

static int do_read(struct oss_target *t, const struct oss_obj_id *id,
		   const struct wire_ost_io_req *m, struct rpc_reply *rep)
{
	if (m->len > WIRE_BULK_MAX)
		return -EINVAL;
	if (m->len == 0)
		return 0;
	void *buf = rpc_reply_bulk_alloc(rep, (size_t)m->len);
	if (!buf)
		return -ENOMEM;
	size_t got = 0;
	int rc = oss_store_read(t, id, m->offset, buf, (size_t)m->len, &got);
	if (rc || got == 0) {
		rpc_reply_bulk_free(rep, buf);
		return rc;
	}
	rep->bulk = buf; /* the transport takes it back after sending */
	rep->bulk_len = (uint32_t)got;
	atomic_fetch_add_explicit(&t->stats.read_bytes, got, memory_order_relaxed);
	count_size(&t->stats.read_sizes, got);
	return 0;
}

static int do_getattr(struct oss_target *t, const struct oss_obj_id *id, struct rpc_reply *rep)
{
	struct wire_ost_attr_rep a;
	int rc = oss_store_getattr(t, id, &a.size, &a.blocks);
	if (rc)
		return rc;
	wire_ost_attr_rep_encode(&rep->body, &a);
	return wire_cursor_ok(&rep->body) ? 0 : -EPROTO;
}

static int do_seek(struct oss_target *t, const struct oss_obj_id *id, uint32_t whence,
		   uint64_t off, struct rpc_reply *rep)
{
	struct wire_ost_seek_rep r;
	int rc = oss_store_seek(t, id, whence, off, &r.offset);
	if (rc)
		return rc;
	wire_ost_seek_rep_encode(&rep->body, &r);
	return wire_cursor_ok(&rep->body) ? 0 : -EPROTO;
}

static int do_statfs(struct oss_target *t, struct rpc_reply *rep)
{
	struct wire_statfs_rep st;
	int rc = oss_store_statfs(t, &st.st);
	if (rc)
		return rc;
	wire_statfs_rep_encode(&rep->body, &st);
	return wire_cursor_ok(&rep->body) ? 0 : -EPROTO;
}

/* Logs an error the disk gave us; the client sees the status, the admin sees which OST. */
static void log_store_error(const struct oss_target *t, uint16_t op, const struct oss_obj_id *id,
			    int rc)
{
	if (rc == -ENOSPC || rc == -EDQUOT) {
		LOG_RATELIMITED(LOG_LVL_WARN, "dispatch", "%s: %s: %s is full", t->name,
				wire_opcode_name(op), t->dir);
		return;
	}
	char name[OSS_OBJ_NAME_MAX] = "-";
	if (id)
		oss_store_obj_name(id, name);
	LOG_RATELIMITED(LOG_LVL_ERR, "dispatch", "%s: %s of %s/%s/%s failed: %s", t->name,
			wire_opcode_name(op), t->dir, OSS_OBJ_DIR, name, strerror(-rc));
}

/* Refuses a request whose body or bulk does not decode: -EPROTO, and a line naming the peer. */
static int malformed(const struct rpc_request *req, uint16_t op)
{
	LOG_RATELIMITED(LOG_LVL_WARN, "dispatch",
			"malformed %s request from %s (%s): body %u bytes, bulk %u bytes",
			wire_opcode_name(op), req->peer, req->peer_name ? req->peer_name : "?",
			req->body_len, req->bulk_len);
	return -EPROTO;
}

/* The target a request names, counted in its per-op statistics; NULL (logged) if this OSS
 * does not serve it. *slot is op's index in t->stats, for the caller to count its errors. */
static struct oss_target *target_of(const struct oss_ctx *ctx, const struct rpc_request *req,
				    uint16_t op, uint32_t ost_idx, unsigned *slot)
{
	struct oss_target *t = oss_ctx_find(ctx, ost_idx);
	if (!t) {
		LOG_RATELIMITED(LOG_LVL_WARN, "dispatch", "%s from %s for OST%04x, not served here",
				wire_opcode_name(op), req->peer, ost_idx);
		return NULL;
	}
	*slot = (unsigned)(op - WIRE_OP_OST_WRITE);
	atomic_fetch_add_explicit(&t->stats.ops[*slot], 1, memory_order_relaxed);
	return t;
}

/* OST_DESTROY_BATCH: every object in order, after checking the whole list (a bad entry
 * refuses the request before anything is removed). The reply lists the failures. */
static int do_destroy_batch(const struct oss_ctx *ctx, const struct rpc_request *req,
			    struct rpc_reply *rep)
{
	const uint16_t op = WIRE_OP_OST_DESTROY_BATCH;
	struct wire_ost_destroy_req m;
	struct wire_ost_obj o;
	struct wire_cursor c, objs;

	if (ctx->no_destroy_batch)
		return -EOPNOTSUPP;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_ost_destroy_req_decode(&c, &m);
	objs = c; /* a read cursor over borrowed bytes: a copy reads them again */
	const uint8_t *list = c.buf + wire_cursor_pos(&c);
	size_t list_len = wire_cursor_left(&c);
	for (uint32_t i = 0; i < m.count && wire_cursor_ok(&c); i++)
		wire_ost_obj_get(&c, &o);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c) != 0 || req->bulk_len != 0)
		return malformed(req, op);
	unsigned slot;
	struct oss_target *t = target_of(ctx, req, op, m.ost_idx, &slot);
	if (!t)
		return -NACRE_ENOTARGET;
	if (oss_cap_check_list(&ctx->capkey, req, &m, list, list_len)) {
		atomic_fetch_add_explicit(&t->stats.errors[slot], 1, memory_order_relaxed);
		return -EACCES;
	}

	/* the failure count is patched in at the end */
	size_t head_pos = wire_cursor_pos(&rep->body);
	struct wire_ost_destroy_rep r = { .nfailed = 0 };
	wire_ost_destroy_rep_encode(&rep->body, &r);
	int first_err = 0;
	for (uint32_t i = 0; i < m.count; i++) {
		wire_ost_obj_get(&objs, &o);
		struct oss_obj_id id = { .fid = o.fid, .stripe = o.stripe_idx, .gen = o.layout_gen };
		int rc = oss_store_destroy(t, &id);
		if (!rc)
			continue;
		log_store_error(t, op, &id, rc);
		struct wire_ost_destroy_fail f = { .index = i, .status = rc };
		wire_ost_destroy_fail_put(&rep->body, &f);
		r.nfailed++;
		if (!first_err)
			first_err = rc;
	}
	wire_ost_destroy_rep_patch(&rep->body, head_pos, &r);
	if (first_err)
		atomic_fetch_add_explicit(&t->stats.errors[slot], 1, memory_order_relaxed);
	return first_err;
}

int oss_dispatch(void *arg, const struct rpc_request *req, struct rpc_reply *rep)
{
	const struct oss_ctx *ctx = arg;
	uint16_t op = req->hdr->opcode;
	struct wire_ost_io_req m;
	struct wire_ost_falloc_req fa;
	struct wire_ost_seek_req sk;
	struct wire_cursor c;

	if (op == WIRE_OP_OST_DESTROY_BATCH)
		return do_destroy_batch(ctx, req, rep);
	if (op < WIRE_OP_OST_WRITE || op > WIRE_OP_OST_SEEK)
		return -EOPNOTSUPP;
	if (ctx->no_space_ops && (op == WIRE_OP_OST_FALLOCATE || op == WIRE_OP_OST_SEEK))
		return -EOPNOTSUPP;

	memset(&m, 0, sizeof(m));
	memset(&fa, 0, sizeof(fa));
	memset(&sk, 0, sizeof(sk));
	wire_cursor_init_read(&c, req->body, req->body_len);
	/* FALLOCATE and SEEK are an ost_io_req after a field of their own */
	if (op == WIRE_OP_OST_FALLOCATE) {
		wire_ost_falloc_req_decode(&c, &fa);
		m = fa.io;
	} else if (op == WIRE_OP_OST_SEEK) {
		wire_ost_seek_req_decode(&c, &sk);
		m = sk.io;
	} else {
		wire_ost_io_req_decode(&c, &m);
	}
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c) != 0 ||
	    (op == WIRE_OP_OST_WRITE ? m.len != req->bulk_len : req->bulk_len != 0))
		return malformed(req, op);
	unsigned slot;
	struct oss_target *t = target_of(ctx, req, op, m.ost_idx, &slot);
	if (!t)
		return -NACRE_ENOTARGET;

	int rc = oss_cap_check(&ctx->capkey, req, op, &m);
	if (rc)
		goto out;
	if (m.offset > (uint64_t)INT64_MAX || m.len > (uint64_t)INT64_MAX - m.offset) {
		rc = -EFBIG; /* offset + len must fit an off_t */
		goto out;
	}
	struct oss_obj_id id = { .fid = m.fid, .stripe = m.stripe_idx, .gen = m.layout_gen };
	const struct oss_obj_id *idp = &id;
	uint64_t start = t->jobs && m.jobid[0] ? oss_jobs_now_us() : 0;
	switch (op) {
	case WIRE_OP_OST_WRITE:
		rc = do_write(t, idp, &m, req);
		break;
	case WIRE_OP_OST_READ:
		rc = do_read(t, idp, &m, rep);
		break;
	case WIRE_OP_OST_PUNCH:
		rc = oss_store_punch(t, idp, m.offset);
		break;
	case WIRE_OP_OST_DESTROY:
		rc = oss_store_destroy(t, idp);
		break;
	case WIRE_OP_OST_GETATTR:
		rc = do_getattr(t, idp, rep);
		break;
	case WIRE_OP_OST_FALLOCATE:
		rc = oss_store_fallocate(t, idp, fa.mode, m.offset, m.len);
		break;
	case WIRE_OP_OST_SEEK:
		rc = do_seek(t, idp, sk.whence, m.offset, rep);
		break;
	case WIRE_OP_OST_STATFS:
		idp = NULL;
		rc = do_statfs(t, rep);
		break;
	default: /* WIRE_OP_OST_SYNC */
		if (fid_is_zero(&m.fid))
			idp = NULL; /* the whole OST */
		rc = oss_store_sync(t, idp);
		break;
	}
	if (!rc && start)
		oss_jobs_note(t, op, m.jobid, op == WIRE_OP_OST_READ ? rep->bulk_len : m.len,
			      oss_jobs_now_us() - start);
	/* ENXIO: no data after the offset; EOPNOTSUPP: the disk file system cannot (the
	 * client falls back); neither is the store's failure */
	if (rc && rc != -EINVAL && rc != -ENXIO && rc != -EOPNOTSUPP)
		log_store_error(t, op, idp, rc);
out:
	if (rc)
		atomic_fetch_add_explicit(&t->stats.errors[slot], 1, memory_order_relaxed);
	return rc;
}
