/* wb.c - write-behind: writes are copied into per-stripe chunks and sent in the background
 * as large OST_WRITE RPCs (see cl_data.h for the rules).
 *
 * A chunk covers at most one window of rpc_max bytes of one object (windows aligned on
 * rpc_max in object space) and holds one contiguous dirty range. A chunk is sent when its
 * window is full, when a write would leave a gap in it, when the file has too many chunks,
 * when the dirty bounds are reached, and on flush, fsync, close, truncate and reads of its
 * range. Errors of background writes land in f->wb.async_err (the next write returns it)
 * and f->deferred_err (flush, fsync and close return it); the data of a failed RPC is
 * dropped, as Linux drops pages that failed write-back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_internal.h"
#include "client/mdc.h"
#include "client/obj.h"
#include "common/layout.h"
#include "common/util.h"
#include "proto/wire.h"

#define DIRTY_CHUNKS_MAX 64          /* per file: beyond this, send them all */
#define SMALL_BUF_MIN (16u * 1024u)  /* first buffer of a chunk grown by small writes */
#define SPACE_WAIT_MS 100            /* re-check the client bound at least this often */

struct wb_chunk {
	struct cl_job job;     /* first: the pool hands back &job */
	struct wb_chunk *next; /* f->wb.dirty or f->wb.inflight, under f->lock */
	struct nacre_file *f;
	uint32_t stripe;
	uint64_t win;    /* window start (object offset) */
	uint64_t lo, hi; /* dirty object range; lo == hi while empty */
	uint64_t bstart; /* object offset of buf[0] */
	uint64_t cap;    /* bytes in buf */
	uint8_t *buf;
	int pooled; /* buf is an rpc_max buffer of the pool */
};

static void list_del(struct wb_chunk **head, struct wb_chunk *c)
{
	for (struct wb_chunk **pp = head; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			c->next = NULL;
			return;
		}
	}
}

static void chunk_free(struct nacre_fs *fs, struct wb_chunk *c)
{
	if (c->pooled)
		cl_pool_buf_put(&fs->pool, c->buf);
	else
		free(c->buf);
	free(c);
}

static void pool_dirty_sub(struct nacre_fs *fs, uint64_t n)
{
	pthread_mutex_lock(&fs->pool.lock);
	fs->pool.dirty -= n < fs->pool.dirty ? n : fs->pool.dirty;
	pthread_cond_broadcast(&fs->pool.space_cond);
	pthread_mutex_unlock(&fs->pool.lock);
}

/* Bookkeeping of a finished (or never started) RPC. Caller holds f->lock. Returns the
 * bytes to take off the client count (after dropping f->lock). */
static uint64_t complete_locked(struct nacre_file *f, struct wb_chunk *c, int rc)
{
	uint64_t n = c->hi - c->lo;

	list_del(&f->wb.inflight, c);
	f->wb.ninflight--;
	f->wb.bytes -= n < f->wb.bytes ? n : f->wb.bytes;
	if (rc < 0) {
		if (f->wb.async_err == 0)
			f->wb.async_err = rc;
		if (f->deferred_err == 0)
			f->deferred_err = rc;
	}
	f->jobs--;
	pthread_cond_broadcast(&f->io_cond);
	return n;
}

static void chunk_run(struct cl_job *j)
{
	struct wb_chunk *c = (struct wb_chunk *)j;
	struct nacre_file *f = c->f;
	struct nacre_fs *fs = f->fs;
	struct iovec iov = {c->buf + (c->lo - c->bstart), c->hi - c->lo};
	uint64_t n;
	int rc;

	rc = cl_obj_io(f, WIRE_OP_OST_WRITE, c->stripe, c->lo, &iov, 1, c->hi - c->lo);
	if (rc == -NACRE_ENOTARGET)
		rc = -EIO;
	rc = cl_io_errno(rc);
	cl_wgen_bump(fs, &f->fid); /* the OSTs changed: readahead fetched before is stale */
	pthread_mutex_lock(&f->lock);
	n = complete_locked(f, c, rc);
	pthread_mutex_unlock(&f->lock);
	/* f may be closed and freed from here on. */
	pool_dirty_sub(fs, n);
	chunk_free(fs, c);
}

/* Moves c from the dirty list to the pool. Caller holds f->lock. */
static void send_locked(struct nacre_file *f, struct wb_chunk *c)
{
	struct nacre_fs *fs = f->fs;

	list_del(&f->wb.dirty, c);
	f->wb.ndirty--;
	if (c->hi == c->lo) { /* nothing written into it after all */
		chunk_free(fs, c);
		return;
	}
	c->next = f->wb.inflight;
	f->wb.inflight = c;
	f->wb.ninflight++;
	f->jobs++;
	c->job.ost = f->layout.ost_idx[c->stripe];
	c->job.run = chunk_run;
	if (cl_pool_submit(&fs->pool, &c->job) != 0) {
		uint64_t n = complete_locked(f, c, -ENOMEM);
		pthread_mutex_lock(&fs->pool.lock); /* pool lock after f->lock: the lock order */
		fs->pool.dirty -= n < fs->pool.dirty ? n : fs->pool.dirty;
		pthread_cond_broadcast(&fs->pool.space_cond);
		pthread_mutex_unlock(&fs->pool.lock);
		chunk_free(fs, c);
	}
}

static void send_all_locked(struct nacre_file *f)
{
	while (f->wb.dirty)
		send_locked(f, f->wb.dirty);
}

static int inflight_overlaps(const struct nacre_file *f, uint32_t stripe, uint64_t a, uint64_t b)
{
	for (const struct wb_chunk *c = f->wb.inflight; c; c = c->next)
		if (c->stripe == stripe && c->lo < b && a < c->hi)
			return 1;
	return 0;
}

/* Makes c's buffer hold [lo, hi) (object offsets inside c's window). */
static int chunk_grow(struct nacre_fs *fs, struct wb_chunk *c, uint64_t lo, uint64_t hi,
		      uint64_t write_len)
{
	uint64_t r = fs->rpc_max, win_end = c->win + r;
	uint64_t nbstart, ncap;
	uint8_t *nb;
	int pooled = 0;

	if (c->buf && lo >= c->bstart && hi <= c->bstart + c->cap)
		return 0;
	if (write_len >= r / 16 || hi - lo > r / 2) {
		/* Large writes: the whole window at once, from the pool's reusable buffers. */
		nbstart = c->win;
		ncap = r;
		nb = cl_pool_buf_get(&fs->pool);
		pooled = 1;
	} else {
		nbstart = lo;
		ncap = 2 * (hi - lo);
		if (ncap < SMALL_BUF_MIN)
			ncap = SMALL_BUF_MIN;
		if (ncap > win_end - nbstart)
			ncap = win_end - nbstart;
		nb = malloc(ncap);
	}
	if (!nb)
		return -ENOMEM;
	if (c->hi > c->lo)
		memcpy(nb + (c->lo - nbstart), c->buf + (c->lo - c->bstart), c->hi - c->lo);
	if (c->pooled)
		cl_pool_buf_put(&fs->pool, c->buf);
	else
		free(c->buf);
	c->buf = nb;
	c->bstart = nbstart;
	c->cap = ncap;
	c->pooled = pooled;
	return 0;
}

/* Copies one piece that lies in one window of one object. Caller holds f->lock (dropped
 * while waiting for an overlapping RPC). */
static int put_piece(struct nacre_file *f, uint32_t stripe, uint64_t a, const uint8_t *src,
		     uint64_t n)
{
	struct nacre_fs *fs = f->fs;
	uint64_t b = a + n, win = a - a % fs->rpc_max;
	struct wb_chunk *c;
	uint64_t lo, hi, added;
	int rc;

	/* Never let new data race an RPC of the same bytes to the OST. */
	while (inflight_overlaps(f, stripe, a, b))
		pthread_cond_wait(&f->io_cond, &f->lock);
	for (c = f->wb.dirty; c; c = c->next)
		if (c->stripe == stripe && c->win == win)
			break;
	if (c && c->hi > c->lo && (b < c->lo || a > c->hi)) {
		send_locked(f, c); /* a gap: the chunk holds one contiguous range */
		c = NULL;
	}
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->f = f;
		c->stripe = stripe;
		c->win = win;
		c->lo = c->hi = a;
		c->next = f->wb.dirty;
		f->wb.dirty = c;
		f->wb.ndirty++;
	}
	lo = c->hi > c->lo && c->lo < a ? c->lo : a;
	hi = c->hi > c->lo && c->hi > b ? c->hi : b;
	rc = chunk_grow(fs, c, lo, hi, n);
	if (rc)
		return rc;
	memcpy(c->buf + (a - c->bstart), src, n);
	added = (hi - lo) - (c->hi - c->lo);
	c->lo = lo;
	c->hi = hi;
	f->wb.bytes += added;
	pthread_mutex_lock(&fs->pool.lock);
	fs->pool.dirty += added;
	pthread_mutex_unlock(&fs->pool.lock);
	if (c->lo == win && c->hi == win + fs->rpc_max)
		send_locked(f, c); /* a full RPC: off it goes */
	return 0;
}

/* Sends the dirty chunks of every open file of fs (the client bound was reached). */
static void push_all_files(struct nacre_fs *fs)
{
	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *g = fs->files; g; g = g->next) {
		pthread_mutex_lock(&g->lock);
		send_all_locked(g);
		pthread_mutex_unlock(&g->lock);
	}
	pthread_mutex_unlock(&fs->files_lock);
}

/* Waits until len more bytes fit under the file and client bounds. Caller holds f->lock
 * (dropped while waiting). A bound is never enforced against an empty count, so one write
 * larger than a bound still goes through. */
static void wait_for_space(struct nacre_file *f, uint64_t len)
{
	struct nacre_fs *fs = f->fs;

	for (;;) {
		int over_file = f->wb.bytes > 0 && f->wb.bytes + len > fs->file_dirty_max;
		int over_client;

		pthread_mutex_lock(&fs->pool.lock);
		over_client = fs->pool.dirty > 0 && fs->pool.dirty + len > fs->dirty_max;
		pthread_mutex_unlock(&fs->pool.lock);
		if (!over_file && !over_client)
			return;
		send_all_locked(f);
		if (f->wb.ninflight > 0) {
			pthread_cond_wait(&f->io_cond, &f->lock);
			continue;
		}
		/* Our file holds nothing: the client's dirty data is in other files. */
		pthread_mutex_unlock(&f->lock);
		push_all_files(fs);
		pthread_mutex_lock(&fs->pool.lock);
		if (fs->pool.dirty > 0 && fs->pool.dirty + len > fs->dirty_max) {
			struct timespec ts;
			time_after_ms(&ts, CLOCK_REALTIME, SPACE_WAIT_MS);
			pthread_cond_timedwait(&fs->pool.space_cond, &fs->pool.lock, &ts);
		}
		pthread_mutex_unlock(&fs->pool.lock);
		pthread_mutex_lock(&f->lock);
	}
}

int cl_wb_write(struct nacre_file *f, const uint8_t *buf, uint64_t len, uint64_t off)
{
	struct nacre_fs *fs = f->fs;
	const struct nacre_layout *l = &f->layout;
	struct layout_extent ext[64];
	uint64_t pos = 0;
	int rc = 0;

	if (l->nosts == 0)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	wait_for_space(f, len);
	while (pos < len && rc == 0) {
		int n = layout_split(l, off + pos, len - pos, ext, 64);
		uint64_t sum = 0;

		if (n <= 0) {
			rc = -EIO;
			break;
		}
		for (int i = 0; i < n && rc == 0; i++) {
			uint64_t o = ext[i].obj_off, left = ext[i].len;
			const uint8_t *src = buf + (ext[i].file_off - off);

			if (ext[i].stripe >= l->nosts || ext[i].file_off < off ||
			    ext[i].file_off - off + left > len) {
				rc = -EIO; /* layout_split broke its contract */
				break;
			}
			while (left > 0 && rc == 0) {
				uint64_t room = fs->rpc_max - o % fs->rpc_max;
				uint64_t take = left < room ? left : room;

				rc = put_piece(f, ext[i].stripe, o, src, take);
				o += take;
				src += take;
				left -= take;
			}
			sum += ext[i].len;
		}
		if (sum == 0 && rc == 0)
			rc = -EIO;
		pos += sum;
	}
	if (f->wb.ndirty > DIRTY_CHUNKS_MAX)
		send_all_locked(f);
	pthread_mutex_unlock(&f->lock);
	cl_wgen_bump(fs, &f->fid);
	return rc;
}

void cl_wb_flush(struct nacre_file *f)
{
	pthread_mutex_lock(&f->lock);
	send_all_locked(f);
	while (f->wb.ninflight > 0)
		pthread_cond_wait(&f->io_cond, &f->lock);
	pthread_mutex_unlock(&f->lock);
}

void cl_wb_flush_fid(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	if (fs->dirty_max == 0)
		return;
	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *g = fs->files; g; g = g->next)
		if (nacre_fid_eq(&g->fid, fid))
			cl_wb_flush(g);
	pthread_mutex_unlock(&fs->files_lock);
}

/* Sends g's chunks overlapping the file range (object range [lo[s], hi[s]) per stripe)
 * and waits for the RPCs overlapping it. Caller holds g->lock. */
static void flush_range_locked(struct nacre_file *g, const uint64_t *lo, const uint64_t *hi)
{
	struct wb_chunk *c, *next;

	for (c = g->wb.dirty; c; c = next) {
		next = c->next;
		if (c->hi > c->lo && c->lo < hi[c->stripe] && lo[c->stripe] < c->hi)
			send_locked(g, c);
	}
	for (;;) {
		int busy = 0;
		for (c = g->wb.inflight; c && !busy; c = c->next)
			busy = c->lo < hi[c->stripe] && lo[c->stripe] < c->hi;
		if (!busy)
			return;
		pthread_cond_wait(&g->io_cond, &g->lock);
	}
}

void cl_wb_flush_range(struct nacre_file *f, uint64_t off, uint64_t len)
{
	struct nacre_fs *fs = f->fs;
	const struct nacre_layout *l = &f->layout;
	uint64_t lo[NACRE_MAX_STRIPES], hi[NACRE_MAX_STRIPES];
	uint64_t dirty;

	if (fs->dirty_max == 0 || l->nosts == 0 || len == 0)
		return;
	pthread_mutex_lock(&fs->pool.lock);
	dirty = fs->pool.dirty;
	pthread_mutex_unlock(&fs->pool.lock);
	if (dirty == 0)
		return; /* nothing buffered anywhere: the common case of a reader */
	/* A contiguous file range is one contiguous range in each object. */
	for (uint32_t s = 0; s < l->nosts; s++) {
		lo[s] = layout_object_size(l, off, s);
		hi[s] = layout_object_size(l, off + len, s);
	}
	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *g = fs->files; g; g = g->next) {
		if (!nacre_fid_eq(&g->fid, &f->fid))
			continue;
		pthread_mutex_lock(&g->lock);
		if (g->wb.dirty || g->wb.inflight)
			flush_range_locked(g, lo, hi);
		pthread_mutex_unlock(&g->lock);
	}
	pthread_mutex_unlock(&fs->files_lock);
}

int cl_wb_take_error(struct nacre_file *f)
{
	int rc;

	pthread_mutex_lock(&f->lock);
	rc = f->wb.async_err;
	f->wb.async_err = 0;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void cl_wb_fini(struct nacre_file *f)
{
	uint64_t n = 0;

	while (f->wb.dirty) {
		struct wb_chunk *c = f->wb.dirty;
		f->wb.dirty = c->next;
		n += c->hi - c->lo;
		chunk_free(f->fs, c);
	}
	f->wb.ndirty = 0;
	f->wb.bytes = 0;
	if (n)
		pool_dirty_sub(f->fs, n);
}
