/* io.c - open files and striped I/O.
 *
 * A read or write is cut by layout_split() into per-object pieces; consecutive pieces of
 * one object that are contiguous in it are coalesced into one RPC of up to CL_RPC_MAX
 * bytes whose bulk is an iovec over the caller's buffer (no copy for writes). Every RPC of
 * a batch is started before any is waited for, so all OSTs work at once with several
 * requests in flight each. Reads land straight in the caller's buffer when an RPC covers
 * one contiguous piece of it, else in a temporary buffer that is scattered afterwards.
 *
 * Size: the MDS holds it; a handle knows the size from OPEN (or a later getattr) and the
 * highest end offset it wrote itself, and reports the latter on fsync and close.
 *
 * With write-behind on (fs->dirty_max > 0) writes go to wb.c and reach the OSTs in the
 * background; reads first push out buffered writes of their range (read-your-writes) and
 * are served by readahead (ra.c) when it holds them. Writes larger than a quarter of the
 * per-file bound skip the buffer (they are large RPCs already).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "common/layout.h"
#include "proto/wire.h"

/* Bytes handled per batch of parallel RPCs: bounds the temporary memory and the RPCs in
 * flight of one huge call (16 x 4 MiB over 4 stripes of 1 MiB: 4 in flight per OST). */
#define BATCH_BYTES (64ull * 1024 * 1024)
#define SPLIT_CHUNK 64 /* extents asked of layout_split() at a time */
/* The largest offset we accept, so that offsets and ends never overflow. */
#define FILE_OFF_MAX ((uint64_t)INT64_MAX)

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
	uint8_t body[96];
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

static struct nacre_time now_realtime(void)
{
	struct timespec ts;
	struct nacre_time t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t.sec = ts.tv_sec;
	t.nsec = (uint32_t)ts.tv_nsec;
	return t;
}

static uint64_t known_size_locked(const struct nacre_file *f)
{
	return f->attr.size > f->written_end ? f->attr.size : f->written_end;
}

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

/* ---- running RPCs ---- */

static void op_start(struct nacre_file *f, struct io_op *op)
{
	struct wire_ost_io_req req;
	struct wire_cursor c;
	struct rpc_call_args *a = &op->args;
	int rc;

	memset(&req, 0, sizeof(req));
	req.ost_idx = f->layout.ost_idx[op->stripe];
	req.fid = f->fid;
	req.stripe_idx = op->stripe;
	req.layout_gen = f->layout.gen;
	req.offset = op->obj_off;
	req.len = op->len;
	wire_cursor_init_write(&c, op->body, sizeof(op->body));
	wire_ost_io_req_encode(&c, &req);
	if (!wire_cursor_ok(&c)) {
		op->rc = -EPROTO;
		return;
	}
	memset(a, 0, sizeof(*a));
	a->opcode = op->opcode;
	a->flags = RPC_IDEMPOTENT; /* object I/O at a fixed offset may be resent */
	a->body = op->body;
	a->body_len = (uint32_t)wire_cursor_pos(&c);
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
	rc = cl_oss_get(f->fs, req.ost_idx, &op->conn);
	if (rc) {
		op->rc = rc;
		return;
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
		if (cl_oss_get(f->fs, idx, &op->conn) == 0)
			rc = rpc_call(op->conn, &op->args, &m);
	}
	if (rc == -ENOENT && op->opcode == WIRE_OP_OST_READ)
		rc = 0; /* an object never written reads as a hole */
	else if (rc == 0 && !m)
		rc = -EPROTO;
	if (rc == 0 && op->opcode == WIRE_OP_OST_READ)
		rc = op_read_done(op, m);
	if (rc < 0) {
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

int cl_obj_io(struct nacre_file *f, uint16_t opcode, uint32_t stripe, uint64_t obj_off,
	      struct iovec *iov, int niov, uint64_t len)
{
	struct io_op op;
	int rc;

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

/* Reads or writes [off, off+len) of the file through buf, in batches. */
static int file_io(struct nacre_file *f, uint16_t opcode, uint8_t *buf, uint64_t len,
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

		batch_init(&b, f->fs->rpc_max);
		rc = batch_build(&b, l, opcode, buf + done, n, off + done);
		if (rc == 0)
			rc = batch_run(f, &b);
		batch_fini(&b);
		done += n;
	}
	return rc;
}

/* ---- open files ---- */

void cl_files_set_size(struct nacre_fs *fs, const struct nacre_fid *fid, uint64_t size)
{
	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *f = fs->files; f; f = f->next) {
		if (!nacre_fid_eq(&f->fid, fid))
			continue;
		pthread_mutex_lock(&f->lock);
		if (f->written_end > size)
			f->written_end = size;
		f->attr.size = size;
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_unlock(&fs->files_lock);
	cl_wgen_bump(fs, fid); /* readahead of the old contents is stale */
}

void cl_files_mtime_set(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *f = fs->files; f; f = f->next) {
		if (!nacre_fid_eq(&f->fid, fid))
			continue;
		pthread_mutex_lock(&f->lock);
		f->published_seq = f->write_seq;
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_unlock(&fs->files_lock);
}

static void file_register(struct nacre_file *f)
{
	struct nacre_fs *fs = f->fs;

	pthread_mutex_lock(&fs->files_lock);
	f->prev = NULL;
	f->next = fs->files;
	if (fs->files)
		fs->files->prev = f;
	fs->files = f;
	pthread_mutex_unlock(&fs->files_lock);
}

static void file_unregister(struct nacre_file *f)
{
	struct nacre_fs *fs = f->fs;

	pthread_mutex_lock(&fs->files_lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		fs->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&fs->files_lock);
}

/* A handle object for an open the MDS granted (not yet registered). */
static int file_new(struct nacre_fs *fs, const struct nacre_cred *cred, int flags,
		    uint64_t handle, const struct nacre_attr *attr,
		    const struct nacre_layout *layout, struct nacre_file **out)
{
	struct nacre_file *f;

	if (S_ISREG(attr->mode) && layout->nosts > 0 && layout_check_file(layout)) {
		cl_log(fs, CL_LOG_ERR, "MDS %s sent an invalid layout for a file", fs->addr);
		return -EPROTO; /* the handle dies with the connection or at MDS restart */
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fs = fs;
	f->fid = attr->fid;
	f->cred = *cred;
	f->flags = flags;
	f->handle = handle;
	f->layout = *layout;
	f->attr = *attr;
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->append_lock, NULL);
	pthread_cond_init(&f->io_cond, NULL);
	*out = f;
	return 0;
}

NACRE_API int nacre_open(struct nacre_fs *fs, const struct nacre_cred *cr,
			 const struct nacre_fid *fid, int flags, struct nacre_file **out)
{
	struct wire_open_req req;
	struct wire_open_rep rep;
	struct wire_cursor c;
	struct nacre_cred root;
	struct nacre_file *f;
	struct rpc_msg *m;
	int rc;

	if (!fs || !fid || !out)
		return -EINVAL;
	*out = NULL;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *fid;
	req.flags = (uint32_t)(flags & ~(O_CREAT | O_EXCL | O_NOCTTY)); /* create is separate */
	/* Buffered writes of other handles come before the truncate, not after it. */
	if (flags & O_TRUNC)
		cl_wb_flush_fid(fs, fid);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_open_req_encode(&c, &req);
	rc = cl_mds_call(fs, WIRE_OP_MDS_OPEN, &c, &m);
	wire_cursor_fini(&c);
	if (rc)
		return rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_open_rep_decode(&c, &rep);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc)
		return rc;
	rc = file_new(fs, &req.cred, flags, rep.handle, &rep.attr, &rep.layout, &f);
	if (rc)
		return rc;
	/* Other handles of this client must not report an end beyond the truncation. */
	if (flags & O_TRUNC)
		cl_files_set_size(fs, fid, rep.attr.size);
	file_register(f);
	*out = f;
	return 0;
}

NACRE_API int nacre_create_open(struct nacre_fs *fs, const struct nacre_cred *cr,
				const struct nacre_fid *parent, const char *name, uint32_t mode,
				int flags, const struct nacre_layout *layout,
				struct nacre_attr *attr_out, struct nacre_file **out)
{
	struct nacre_cred root;
	struct nacre_layout l;
	struct nacre_attr a;
	uint64_t handle;
	int rc;

	if (!fs || !parent || !out)
		return -EINVAL;
	*out = NULL;
	rc = cl_create_open(fs, cr, parent, name, mode, flags, layout, &a, &l, &handle);
	if (rc)
		return rc;
	if (attr_out)
		*attr_out = a;
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY);
	if (handle == 0) /* the name existed: an ordinary open, with its checks */
		return nacre_open(fs, cr, &a.fid, flags, out);
	rc = file_new(fs, cl_cred(cr, &root), flags, handle, &a, &l, out);
	if (rc)
		return rc; /* the handle dies with the connection or at MDS restart */
	file_register(*out);
	return 0;
}

NACRE_API ssize_t nacre_pread(struct nacre_file *f, void *buf, size_t len, uint64_t off)
{
	uint64_t size;
	int rc;

	if (!f || (!buf && len > 0))
		return -EINVAL;
	if (off > FILE_OFF_MAX)
		return -EINVAL;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	pthread_mutex_lock(&f->lock);
	size = known_size_locked(f);
	pthread_mutex_unlock(&f->lock);
	if (len == 0 || off >= size)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	cl_wb_flush_range(f, off, len); /* read-your-writes, for every handle of this client */
	if (cl_ra_read(f, buf, len, off, size))
		return (ssize_t)len;
	rc = file_io(f, WIRE_OP_OST_READ, buf, len, off);
	return rc < 0 ? rc : (ssize_t)len;
}

/* Reloads the MDS size (for O_APPEND). */
static int refresh_attr(struct nacre_file *f)
{
	struct nacre_attr a;
	int rc = nacre_getattr(f->fs, &f->cred, &f->fid, &a);

	if (rc)
		return rc;
	pthread_mutex_lock(&f->lock);
	f->attr = a;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

NACRE_API ssize_t nacre_pwrite(struct nacre_file *f, const void *buf, size_t len, uint64_t off)
{
	int append, rc = 0;

	if (!f || (!buf && len > 0))
		return -EINVAL;
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (len > SSIZE_MAX)
		return -EINVAL;
	if (len == 0)
		return 0;
	append = (f->flags & O_APPEND) != 0;
	if (append) {
		pthread_mutex_lock(&f->append_lock);
		rc = cl_io_errno(refresh_attr(f));
		if (rc == 0) {
			pthread_mutex_lock(&f->lock);
			off = known_size_locked(f);
			pthread_mutex_unlock(&f->lock);
		}
	}
	if (rc == 0 && (off > FILE_OFF_MAX || len > FILE_OFF_MAX - off))
		rc = -EFBIG;
	if (rc == 0 && f->fs->dirty_max > 0)
		rc = cl_wb_take_error(f); /* a background write failed: say so once */
	if (rc == 0) {
		if (f->fs->dirty_max > 0 && len <= f->fs->file_dirty_max / 4) {
			rc = cl_wb_write(f, buf, len, off);
		} else {
			/* Large enough to go as is; older buffered data of the range first. */
			cl_wb_flush_range(f, off, len);
			rc = file_io(f, WIRE_OP_OST_WRITE, (uint8_t *)(uintptr_t)buf, len, off);
			cl_wgen_bump(f->fs, &f->fid);
		}
		pthread_mutex_lock(&f->lock);
		if (rc == 0) {
			if (off + len > f->written_end)
				f->written_end = off + len;
			f->wrote = 1;
			f->write_seq++;
			f->mtime = now_realtime();
		} else if (f->deferred_err == 0) {
			/* Data may be half written: close reports it again, as NFS does. */
			f->deferred_err = rc;
		}
		pthread_mutex_unlock(&f->lock);
	}
	if (append)
		pthread_mutex_unlock(&f->append_lock);
	if (rc == 0 && (f->flags & O_DSYNC)) /* O_SYNC includes the O_DSYNC bit */
		rc = nacre_fsync(f, (f->flags & O_SYNC) != O_SYNC);
	return rc < 0 ? rc : (ssize_t)len;
}

/* CLOSE or SIZE_UPDATE with this handle's written end and mtime. */
static int send_size(struct nacre_file *f, uint16_t opcode)
{
	struct wire_close_req req;
	struct wire_cursor c;
	struct wire_attr_rep a;
	struct rpc_msg *m;
	uint64_t seq;
	int rc;

	memset(&req, 0, sizeof(req));
	req.cred = f->cred;
	req.fid = f->fid;
	req.handle = f->handle;
	pthread_mutex_lock(&f->lock);
	req.size = f->written_end;
	seq = f->write_seq;
	req.has_mtime = seq != f->published_seq;
	req.mtime = f->mtime;
	pthread_mutex_unlock(&f->lock);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_close_req_encode(&c, &req);
	rc = cl_mds_call(f->fs, opcode, &c, &m);
	wire_cursor_fini(&c);
	if (rc)
		return cl_io_errno(rc);
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_attr_rep_decode(&c, &a);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc == 0) {
		pthread_mutex_lock(&f->lock);
		f->attr = a.attr;
		if (seq > f->published_seq)
			f->published_seq = seq;
		pthread_mutex_unlock(&f->lock);
	}
	return rc;
}

NACRE_API int nacre_fsync(struct nacre_file *f, int datasync)
{
	struct io_batch b;
	int rc = 0, wrote, deferred;

	(void)datasync; /* the size goes to the MDS either way: fdatasync needs it too */
	if (!f)
		return -EINVAL;
	cl_wb_flush(f);
	batch_init(&b, f->fs->rpc_max);
	for (uint32_t i = 0; i < f->layout.nosts && rc == 0; i++) {
		struct io_op *op = batch_new_op(&b, WIRE_OP_OST_SYNC, i, 0);
		if (!op)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc = batch_run(f, &b);
	batch_fini(&b);
	if (rc)
		return rc;
	pthread_mutex_lock(&f->lock);
	wrote = f->wrote;
	deferred = f->deferred_err; /* a failed write is not durable: say so, as Linux does */
	pthread_mutex_unlock(&f->lock);
	rc = wrote ? send_size(f, WIRE_OP_MDS_SIZE_UPDATE) : 0;
	/* The MDS commits asynchronously: fsync also makes the file's name and size durable. */
	if (rc == 0)
		rc = nacre_sync_md(f->fs, &f->cred, &f->fid);
	return deferred ? deferred : rc;
}

NACRE_API int nacre_flush(struct nacre_file *f)
{
	int rc, wrote, deferred;

	if (!f)
		return -EINVAL;
	/* Buffered writes go to the OSSes (acknowledged from their page cache), then the size
	 * and mtime to the MDS: another client's open then sees both. */
	cl_wb_flush(f);
	pthread_mutex_lock(&f->lock);
	wrote = f->wrote;
	deferred = f->deferred_err;
	pthread_mutex_unlock(&f->lock);
	rc = wrote ? send_size(f, WIRE_OP_MDS_SIZE_UPDATE) : 0;
	return deferred ? deferred : rc;
}

NACRE_API int nacre_close(struct nacre_file *f)
{
	int rc, deferred;

	if (!f)
		return 0;
	cl_wb_flush(f);
	file_unregister(f);
	rc = send_size(f, WIRE_OP_MDS_CLOSE);
	if (rc) {
		char fid[NACRE_FID_STR_MAX];
		cl_log(f->fs, CL_LOG_WARN, "close of %s: %s",
		       nacre_fid_format(&f->fid, fid, sizeof(fid)), nacre_strerror(rc));
	}
	pthread_mutex_lock(&f->lock);
	while (f->jobs > 0) /* readahead still landing in our buffers */
		pthread_cond_wait(&f->io_cond, &f->lock);
	deferred = f->deferred_err;
	cl_ra_fini(f);
	cl_wb_fini(f);
	pthread_mutex_unlock(&f->lock);
	pthread_cond_destroy(&f->io_cond);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->append_lock);
	free(f);
	return deferred ? deferred : rc;
}

NACRE_API int nacre_file_attr(struct nacre_file *f, struct nacre_attr *out)
{
	if (!f || !out)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	*out = f->attr;
	out->size = known_size_locked(f);
	if (f->write_seq != f->published_seq && (f->mtime.sec > out->mtime.sec ||
			 (f->mtime.sec == out->mtime.sec && f->mtime.nsec > out->mtime.nsec))) {
		out->mtime = f->mtime;
		out->ctime = f->mtime;
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

NACRE_API uint64_t nacre_file_written_size(const struct nacre_file *f)
{
	struct nacre_file *mf = (struct nacre_file *)(uintptr_t)f; /* the lock is not state */
	uint64_t v;

	if (!f)
		return 0;
	pthread_mutex_lock(&mf->lock);
	v = f->written_end;
	pthread_mutex_unlock(&mf->lock);
	return v;
}

NACRE_API const struct nacre_layout *nacre_file_layout(const struct nacre_file *f)
{
	return f ? &f->layout : NULL;
}
