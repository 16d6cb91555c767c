/* obj.c - the object I/O engine: OST RPCs for a range of a file, striped over its objects.
 *
 * A read or write is cut by layout_split() into per-object pieces; consecutive pieces of
 * one object that are contiguous in it are coalesced into one RPC of up to rpc_max
 * bytes whose bulk is an iovec over the caller's buffer (no copy for writes). Every RPC of
 * a batch is started before any is waited for, so all OSTs work at once with several
 * requests in flight each. Reads land straight in the caller's buffer when an RPC covers
 * one contiguous piece of it, else in a temporary buffer that is scattered afterwards.
 * The pool's jobs (write-behind, readahead) send their single RPCs through cl_obj_io, with
 * the same retry of an OSS that moved.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/caps.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "client/obj.h"
#include "client/oss.h"
#include "common/layout.h"
#include "proto/wire.h"

/* Bytes handled per batch of parallel RPCs: bounds the temporary memory and the RPCs in
 * flight of one huge call (16 x 4 MiB over 4 stripes of 1 MiB: 4 in flight per OST). */
#define BATCH_BYTES (64ull * 1024 * 1024)
#define SPLIT_CHUNK 64 /* extents asked of layout_split() at a time */

/* One OST RPC of a batch. */
struct io_op {
	uint16_t opcode;
	uint32_t stripe;
	uint64_t obj_off;
	uint64_t len;
	struct iovec *iov; /* the pieces of the caller's buffer, in object order */
	int niov;
	int cap_iov;
	uint8_t *tmp; /* read bounce buffer when the pieces are not contiguous */
	uint32_t arg;  /* OST_FALLOCATE: the mode; OST_SEEK: whence */
	uint8_t rep[16]; /* OST_GETATTR, OST_SEEK: the reply body */
	uint32_t rep_len;
	uint8_t body[104];
	struct wire_cap cap; /* the file's capability when the op was encoded */
	int has_cap;
	struct rpc_call_args args;
	struct rpc_conn *conn;
	struct rpc_pending *pend;
	int rc;
};

struct io_batch {
	struct io_op *ops;
	int nops;
	int cap;
	uint64_t rpc_max; /* largest RPC */
	int open[NACRE_MAX_STRIPES]; /* op still growing for each stripe, -1 = none */
};

/* ---- batches ---- */

static void batch_init(struct io_batch *b, uint64_t rpc_max)
{
	memset(b, 0, sizeof(*b));
	b->rpc_max = rpc_max;
	for (int i = 0; i < NACRE_MAX_STRIPES; i++)
		b->open[i] = -1;
}

static void batch_fini(struct io_batch *b)
{
	for (int i = 0; i < b->nops; i++) {
		free(b->ops[i].iov);
		free(b->ops[i].tmp);
	}
	free(b->ops);
}

static struct io_op *batch_new_op(struct io_batch *b, uint16_t opcode, uint32_t stripe,
				  uint64_t obj_off)
{
	struct io_op *op;

	if (b->nops == b->cap) {
		int cap = b->cap ? b->cap * 2 : 16;
		struct io_op *n = realloc(b->ops, (size_t)cap * sizeof(*n));
		if (!n)
			return NULL;
		b->ops = n;
		b->cap = cap;
	}
	op = &b->ops[b->nops++];
	memset(op, 0, sizeof(*op));
	op->opcode = opcode;
	op->stripe = stripe;
	op->obj_off = obj_off;
	return op;
}

static int op_push_iov(struct io_op *op, uint8_t *p, uint64_t len)
{
	if (op->niov > 0) {
		struct iovec *last = &op->iov[op->niov - 1];
		if ((uint8_t *)last->iov_base + last->iov_len == p) {
			last->iov_len += len; /* contiguous in the buffer too (one stripe) */
			return 0;
		}
	}
	if (op->niov == op->cap_iov) {
		int cap = op->cap_iov ? op->cap_iov * 2 : 4;
		struct iovec *n = realloc(op->iov, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		op->iov = n;
		op->cap_iov = cap;
	}
	op->iov[op->niov].iov_base = p;
	op->iov[op->niov].iov_len = len;
	op->niov++;
	return 0;
}

/* Adds one piece of an object: appended to that stripe's growing op when it continues it
 * in the object and there is room, else starts new ops of at most b->rpc_max bytes. */
static int batch_add(struct io_batch *b, uint16_t opcode, uint32_t stripe, uint64_t obj_off,
		     uint8_t *p, uint64_t len)
{
	while (len > 0) {
		struct io_op *op = b->open[stripe] >= 0 ? &b->ops[b->open[stripe]] : NULL;

		if (op && (op->obj_off + op->len != obj_off || op->len >= b->rpc_max))
			op = NULL;
		if (!op) {
			op = batch_new_op(b, opcode, stripe, obj_off);
			if (!op)
				return -ENOMEM;
			b->open[stripe] = b->nops - 1;
		}
		uint64_t take = b->rpc_max - op->len;
		if (take > len)
			take = len;
		if (op_push_iov(op, p, take))
			return -ENOMEM;
		op->len += take;
		obj_off += take;
		p += take;
		len -= take;
	}
	return 0;
}

/* Fills b with the RPCs for [off, off+len) of the file, buf holding that range. */
static int batch_build(struct io_batch *b, const struct nacre_layout *l, uint16_t opcode,
		       uint8_t *buf, uint64_t len, uint64_t off)
{
	struct layout_extent ext[SPLIT_CHUNK];
	uint64_t pos = 0;

	while (pos < len) {
		int n = layout_split(l, off + pos, len - pos, ext, SPLIT_CHUNK);
		uint64_t sum = 0;

		if (n <= 0)
			return -EIO;
		for (int i = 0; i < n; i++) {
			const struct layout_extent *e = &ext[i];
			if (e->stripe >= l->nosts || e->file_off < off || e->len > len ||
			    e->file_off - off > len - e->len)
				return -EIO; /* layout_split broke its contract */
			int rc = batch_add(b, opcode, e->stripe, e->obj_off, buf + (e->file_off - off),
					   e->len);
			if (rc)
				return rc;
			sum += e->len;
		}
		if (sum == 0)
			return -EIO;
		pos += sum;
	}
	return 0;
}

/* The largest RPC of an I/O starting now (the mount's, or lower: max_pages_per_rpc). */
static uint64_t rpc_now(const struct nacre_fs *fs)
{
	return __atomic_load_n(&fs->rpc_cap, __ATOMIC_RELAXED);
}

/* ---- running RPCs ---- */

/* How long the first request to an OSS waits for its connection before it goes without a
 * job id. */
#define JOBID_CONNECT_MS 2000

/* Encodes op's request body, with the file's current capability (and its opener's job id
 * for an OSS that counts jobs). 0 or -EPROTO. */
static int op_encode(struct nacre_file *f, struct io_op *op)
{
	struct wire_ost_io_req req;
	struct wire_cursor c;

	memset(&req, 0, sizeof(req));
	req.ost_idx = f->layout.ost_idx[op->stripe];
	req.fid = f->fid;
	req.stripe_idx = op->stripe;
	req.layout_gen = f->layout.gen;
	req.offset = op->obj_off;
	req.len = op->len;
	op->has_cap = cl_cap_get(f, &op->cap);
	req.has_cap = (uint8_t)op->has_cap;
	req.cap = op->cap;
	if (rpc_conn_features(op->conn) & WIRE_FEAT_OST_JOBID)
		memcpy(req.jobid, f->cred.jobid, sizeof(req.jobid));
	wire_cursor_init_write(&c, op->body, sizeof(op->body));
	if (op->opcode == WIRE_OP_OST_FALLOCATE) {
		struct wire_ost_falloc_req fa = {.mode = op->arg, .io = req};
		wire_ost_falloc_req_encode(&c, &fa);
	} else if (op->opcode == WIRE_OP_OST_SEEK) {
		struct wire_ost_seek_req sk = {.whence = op->arg, .io = req};
		wire_ost_seek_req_encode(&c, &sk);
	} else {
		wire_ost_io_req_encode(&c, &req);
	}
	if (!wire_cursor_ok(&c))
		return -EPROTO;
	op->args.body_len = (uint32_t)wire_cursor_pos(&c);
	return 0;
}

static void op_start(struct nacre_file *f, struct io_op *op)
{
	struct rpc_call_args *a = &op->args;
	int rc;

	memset(a, 0, sizeof(*a));
	rc = cl_oss_get(f->fs, f->layout.ost_idx[op->stripe], &op->conn);
	if (rc) {
		op->rc = rc;
		return;
	}
	if (f->cred.jobid[0] && !rpc_conn_features(op->conn)) {
		/* never connected: whether the OSS takes a job id is known once it is (a failure
		 * here is the call's to retry and report) */
		char err[160];
		(void)rpc_conn_connect(op->conn, JOBID_CONNECT_MS, err, sizeof(err));
	}
	if (op_encode(f, op)) {
		op->rc = -EPROTO;
		return;
	}
	a->opcode = op->opcode;
	a->flags = RPC_IDEMPOTENT; /* object I/O at a fixed offset may be resent */
	a->body = op->body;
	if (op->opcode == WIRE_OP_OST_WRITE) {
		a->bulk = op->iov;
		a->bulk_iovcnt = op->niov;
	} else if (op->opcode == WIRE_OP_OST_READ) {
		if (op->niov == 1) {
			a->reply_bulk = op->iov[0].iov_base;
		} else {
			op->tmp = malloc(op->len);
			if (!op->tmp) {
				op->rc = -ENOMEM;
				return;
			}
			a->reply_bulk = op->tmp;
		}
		a->reply_bulk_cap = (uint32_t)op->len;
	}
	rc = rpc_start(op->conn, a, &op->pend);
	if (rc) {
		op->pend = NULL;
		op->rc = rc;
	}
}

/* Copies n received bytes over the op's pieces and zeroes the rest (a short object read:
 * a hole or the end of the object). */
static void op_scatter(const struct io_op *op, const uint8_t *src, uint64_t n)
{
	uint64_t pos = 0;

	for (int i = 0; i < op->niov; i++) {
		uint8_t *dst = op->iov[i].iov_base;
		uint64_t l = op->iov[i].iov_len;

		if (pos >= n) {
			memset(dst, 0, l);
		} else if (pos + l <= n) {
			if (dst != src + pos)
				memcpy(dst, src + pos, l);
		} else {
			if (dst != src + pos)
				memcpy(dst, src + pos, n - pos);
			memset(dst + (n - pos), 0, l - (n - pos));
		}
		pos += l;
	}
}

static int op_read_done(struct io_op *op, struct rpc_msg *m)
{
	uint8_t *dst = op->args.reply_bulk;
	uint64_t n = m ? m->bulk_len : 0;

	if (n > op->len)
		return -EPROTO;
	if (n > 0 && m->bulk != dst)
		memcpy(dst, m->bulk, n); /* the transport kept its own copy */
	op_scatter(op, dst, n);
	return 0;
}

static int op_finish(struct nacre_file *f, struct io_op *op)
{
	struct rpc_msg *m = NULL;
	uint32_t idx = f->layout.ost_idx[op->stripe];
	int rc = op->rc;

	if (op->pend) {
		rc = rpc_wait(op->pend, &m);
		op->pend = NULL;
	}
	/* An OSS that vanished may have come back at another address: retry once there. */
	if (rc < 0 && cl_is_transport_err(rc) && op->conn && op->args.opcode &&
	    cl_oss_moved(f->fs, idx, op->conn)) {
		rpc_msg_free(m);
		m = NULL;
		if (cl_oss_get(f->fs, idx, &op->conn) == 0 && op_encode(f, op) == 0)
			rc = rpc_call(op->conn, &op->args, &m); /* re-encoded: its features */
	}
	/* Refused: the capability expired (or the clocks disagree): renew it once, resend. */
	if (rc == -EACCES && op->conn && op->args.opcode &&
	    cl_cap_refresh(f, op->has_cap ? &op->cap : NULL) == 0 && op_encode(f, op) == 0) {
		rpc_msg_free(m);
		m = NULL;
		rc = rpc_call(op->conn, &op->args, &m);
	}
	if (rc == -ENOENT && op->opcode == WIRE_OP_OST_READ)
		rc = 0; /* an object never written reads as a hole */
	else if (rc == 0 && !m)
		rc = -EPROTO;
	if (rc == 0 && op->opcode == WIRE_OP_OST_READ)
		rc = op_read_done(op, m);
	if (rc == 0 && (op->opcode == WIRE_OP_OST_GETATTR || op->opcode == WIRE_OP_OST_SEEK)) {
		if (m->body_len > sizeof(op->rep)) {
			rc = -EPROTO;
		} else {
			memcpy(op->rep, m->body, m->body_len);
			op->rep_len = m->body_len;
		}
	}
	/* answers, not failures: no data after the offset; an OSS (or its disk file system)
	 * without fallocate or SEEK_DATA, which the caller falls back from */
	int expected = rc == -ENXIO || (rc == -EOPNOTSUPP && op->opcode != WIRE_OP_OST_READ &&
					op->opcode != WIRE_OP_OST_WRITE);
	if (rc < 0 && !expected) {
		char fid[NACRE_FID_STR_MAX];
		cl_log(f->fs, CL_LOG_WARN, "%s of %s stripe %u on OST%04x (%s): %s",
		       wire_opcode_name(op->opcode), nacre_fid_format(&f->fid, fid, sizeof(fid)),
		       op->stripe, idx, op->conn ? rpc_conn_addr(op->conn) : "?",
		       nacre_strerror(rc));
	}
	rpc_msg_free(m);
	op->rc = rc;
	return rc;
}

/* Starts every op, then waits for all of them. Returns the first error, mapped for
 * applications. */
static int batch_run(struct nacre_file *f, struct io_batch *b)
{
	int first = 0;

	for (int i = 0; i < b->nops; i++)
		op_start(f, &b->ops[i]);
	for (int i = 0; i < b->nops; i++) {
		int rc = op_finish(f, &b->ops[i]);
		if (rc < 0 && first == 0)
			first = rc;
	}
	if (first == -NACRE_ENOTARGET)
		return -EIO;
	return cl_io_errno(first);
}

/* A read or write of one object range longer than an RPC may be now
 * (osc.*.max_pages_per_rpc below the mount's): RPCs of at most cap bytes, all at once. */
static int obj_io_split(struct nacre_file *f, uint16_t opcode, uint32_t stripe,
			uint64_t obj_off, struct iovec *iov, int niov, uint64_t len, uint64_t cap)
{
	struct io_batch b;
	int rc = 0;

	batch_init(&b, cap);
	for (int i = 0; i < niov && len > 0 && rc == 0; i++) {
		uint64_t n = iov[i].iov_len < len ? iov[i].iov_len : len;
		rc = batch_add(&b, opcode, stripe, obj_off, iov[i].iov_base, n);
		obj_off += n;
		len -= n;
	}
	if (rc == 0)
		rc = batch_run(f, &b);
	batch_fini(&b);
	return rc;
}

int cl_obj_io(struct nacre_file *f, uint16_t opcode, uint32_t stripe, uint64_t obj_off,
	      struct iovec *iov, int niov, uint64_t len)
{
	uint64_t cap = rpc_now(f->fs);
	struct io_op op;
	int rc;

	if ((opcode == WIRE_OP_OST_READ || opcode == WIRE_OP_OST_WRITE) && len > cap)
		return obj_io_split(f, opcode, stripe, obj_off, iov, niov, len, cap);
	memset(&op, 0, sizeof(op));
	op.opcode = opcode;
	op.stripe = stripe;
	op.obj_off = obj_off;
	op.len = len;
	op.iov = iov; /* borrowed: op is not freed through batch_fini */
	op.niov = niov;
	op.cap_iov = niov;
	op_start(f, &op);
	rc = op_finish(f, &op);
	free(op.tmp);
	return rc;
}

int cl_obj_file_io(struct nacre_file *f, uint16_t opcode, uint8_t *buf, uint64_t len,
		   uint64_t off)
{
	const struct nacre_layout *l = &f->layout;
	uint64_t row = (uint64_t)l->stripe_size * l->nosts;
	uint64_t batch = BATCH_BYTES;
	uint64_t done = 0;
	int rc = 0;

	if (l->nosts == 0)
		return -EINVAL; /* not a regular file with objects */
	if (row > 0 && row <= BATCH_BYTES)
		batch = BATCH_BYTES / row * row; /* whole rows: every RPC as large as it can be */
	while (done < len && rc == 0) {
		struct io_batch b;
		uint64_t n = len - done < batch ? len - done : batch;

		batch_init(&b, rpc_now(f->fs));
		rc = batch_build(&b, l, opcode, buf + done, n, off + done);
		if (rc == 0)
			rc = batch_run(f, &b);
		batch_fini(&b);
		done += n;
	}
	return rc;
}

int cl_obj_sync(struct nacre_file *f)
{
	struct io_batch b;
	int rc = 0;

	batch_init(&b, rpc_now(f->fs));
	for (uint32_t i = 0; i < f->layout.nosts && rc == 0; i++) {
		struct io_op *op = batch_new_op(&b, WIRE_OP_OST_SYNC, i, 0);
		if (!op)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc = batch_run(f, &b);
	batch_fini(&b);
	return rc;
}

/* One op per stripe of f: opcode at object offset off[i], length len[i] (a stripe with
 * len[i] 0 is left out when skip_empty), started together and waited for. The ops stay in
 * b for the caller to read (each its rc); b is initialized here, batch_fini it. Returns 0,
 * or -ENOMEM with nothing sent. */
static int stripe_ops(struct nacre_file *f, struct io_batch *b, uint16_t opcode, uint32_t arg,
		       const uint64_t *off, const uint64_t *len, int skip_empty)
{
	batch_init(b, rpc_now(f->fs));
	for (uint32_t i = 0; i < f->layout.nosts; i++) {
		if (skip_empty && len[i] == 0)
			continue;
		struct io_op *op = batch_new_op(b, opcode, i, off ? off[i] : 0);
		if (!op)
			return -ENOMEM;
		op->len = len ? len[i] : 0;
		op->arg = arg;
	}
	for (int i = 0; i < b->nops; i++)
		op_start(f, &b->ops[i]);
	for (int i = 0; i < b->nops; i++)
		op_finish(f, &b->ops[i]);
	return 0;
}

int cl_obj_blocks(struct nacre_file *f, uint64_t *blocks)
{
	struct io_batch b;
	int rc = 0;

	*blocks = 0;
	if (f->layout.nosts == 0)
		return 0;
	rc = stripe_ops(f, &b, WIRE_OP_OST_GETATTR, 0, NULL, NULL, 0);
	for (int i = 0; i < b.nops && rc == 0; i++) {
		struct wire_ost_attr_rep a = {0, 0};
		struct wire_cursor c;

		rc = b.ops[i].rc;
		if (rc)
			break;
		wire_cursor_init_read(&c, b.ops[i].rep, b.ops[i].rep_len);
		wire_ost_attr_rep_decode(&c, &a);
		rc = cl_decode_end(&c);
		if (rc == 0)
			*blocks += a.blocks;
	}
	batch_fini(&b);
	return cl_io_errno(rc);
}

int cl_obj_fallocate(struct nacre_file *f, uint32_t mode, uint64_t off, uint64_t len)
{
	const struct nacre_layout *l = &f->layout;
	uint64_t lo[NACRE_MAX_STRIPES], n[NACRE_MAX_STRIPES];
	struct io_batch b;
	int rc = 0;

	if (l->nosts == 0)
		return -EINVAL;
	/* The bytes of stripe i in [off, off + len) are one range of its object: from the
	 * object's size for a file of off bytes to its size for one of off + len bytes. */
	for (uint32_t i = 0; i < l->nosts; i++) {
		lo[i] = layout_object_size(l, off, i);
		n[i] = layout_object_size(l, off + len, i) - lo[i];
	}
	rc = stripe_ops(f, &b, WIRE_OP_OST_FALLOCATE, mode, lo, n, 1);
	for (int i = 0; i < b.nops && rc == 0; i++)
		rc = b.ops[i].rc;
	batch_fini(&b);
	return rc == -NACRE_ENOTARGET ? -EIO : cl_io_errno(rc);
}

int cl_obj_seek(struct nacre_file *f, uint32_t whence, uint64_t off, uint64_t *out)
{
	const struct nacre_layout *l = &f->layout;
	uint64_t from[NACRE_MAX_STRIPES];
	uint64_t best = UINT64_MAX;
	struct io_batch b;
	int rc = 0;

	if (l->nosts == 0)
		return -EINVAL;
	/* Each object from its first byte at or after off; the answer is the smallest file
	 * offset any object gives (within one object, file order is object order). */
	for (uint32_t i = 0; i < l->nosts; i++)
		from[i] = layout_object_size(l, off, i);
	rc = stripe_ops(f, &b, WIRE_OP_OST_SEEK, whence, from, NULL, 0);
	for (int i = 0; i < b.nops && rc == 0; i++) {
		struct wire_ost_seek_rep r;
		struct wire_cursor c;

		if (b.ops[i].rc == -ENXIO && whence == WIRE_SEEK_DATA)
			continue; /* no data in this object after off */
		rc = b.ops[i].rc;
		if (rc)
			break;
		wire_cursor_init_read(&c, b.ops[i].rep, b.ops[i].rep_len);
		wire_ost_seek_rep_decode(&c, &r);
		rc = cl_decode_end(&c);
		if (rc == 0 && r.offset < from[i])
			rc = -EPROTO; /* an OSS that seeks backwards */
		if (rc == 0) {
			uint64_t fo = cl_obj_to_file(f, b.ops[i].stripe, r.offset);
			if (fo < best)
				best = fo;
		}
	}
	batch_fini(&b);
	if (rc)
		return rc == -NACRE_ENOTARGET ? -EIO : cl_io_errno(rc);
	if (best == UINT64_MAX)
		return -ENXIO;
	*out = best;
	return 0;
}

/* ---- write generations and offsets ---- */

static unsigned fid_bucket(const struct nacre_fid *fid)
{
	uint64_t h = fid->seq * 0x9e3779b97f4a7c15ull ^ fid->oid * 0xc2b2ae3d27d4eb4full ^ fid->ver;
	return (unsigned)(h >> 32) % CL_WGEN_BUCKETS;
}

uint64_t cl_wgen(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	return __atomic_load_n(&fs->wgen[fid_bucket(fid)], __ATOMIC_ACQUIRE);
}

void cl_wgen_bump(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	__atomic_add_fetch(&fs->wgen[fid_bucket(fid)], 1, __ATOMIC_ACQ_REL);
}

uint64_t cl_obj_to_file(const struct nacre_file *f, uint32_t stripe, uint64_t obj_off)
{
	uint64_t s = f->layout.stripe_size, c = f->layout.nosts;

	return obj_off / s * s * c + (uint64_t)stripe * s + obj_off % s;
}
