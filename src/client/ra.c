/* ra.c - readahead: sequential streams are detected per handle and read ahead into chunks
 * of object data, fetched by the pool in parallel over the stripes (see cl_data.h).
 *
 * A read within min(4 x its length, RA_SEQ_SLACK) of the end of the stream so far is
 * sequential. Once the stream reads ahead, so is a read up to RA_KEEP_BEHIND behind that
 * end or one whose first byte the stream holds: the kernel's parallel readahead requests
 * overtake each other by several MiB while they wait on a slow link, and taking them for
 * random reads dropped the whole window. From the second sequential read on, a window
 * starting at max(2 x the read, rpc_max) and doubling with each sequential read up to
 * ra_max is kept issued ahead of the stream's end. It is topped up on every read, per
 * object in whole rpc windows, the lowest object offsets first, so every OST of the
 * stripes keeps several RPCs in flight and none waits for the reader to drain half a
 * window (with 1 MiB stripes a 4 MiB RPC holds data spread over N x 4 MiB of the file;
 * refilling in bursts once half a window was read let the OSTs drain in turn). Any other
 * read ends the stream and drops its unused chunks.
 *
 * Memory: a chunk is freed once every byte of it was read, or when it lies RA_KEEP_BEHIND
 * behind the reader. The cache of a file is bounded by ra_max plus one row of RPCs
 * (rpc_max per stripe: the row the reader is in), and the client's by four times that.
 * When the bound is reached, readahead stops issuing until the reader frees chunks; it
 * never evicts data ahead of the reader to fetch data further ahead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_internal.h"
#include "client/obj.h"
#include "common/layout.h"
#include "proto/wire.h"

#define RA_SEQ_SLACK (8ull * 1024 * 1024)  /* out-of-order tolerance of a stream, at most */
/* Chunks this far behind a read are freed, and a stream accepts reads this far behind its
 * end: the kernel has up to max_background (12) readahead requests of 1 MiB out at once. */
#define RA_KEEP_BEHIND (16ull * 1024 * 1024)

enum { RA_FETCHING, RA_READY, RA_FAILED };

struct ra_chunk {
	struct cl_job job;     /* first: the pool hands back &job */
	struct ra_chunk *next; /* f->ra.chunks, under f->lock */
	struct nacre_file *f;
	uint32_t stripe;
	uint64_t obj_off, len; /* object range */
	uint64_t file_last;    /* file offset of its last byte */
	uint64_t gen;          /* fid write generation when issued */
	uint64_t used;         /* bytes copied out to readers (f->lock) */
	uint8_t *buf;
	int pooled;
	int state; /* f->lock */
};

/* ---- chunks ---- */

static void chunk_free(struct nacre_file *f, struct ra_chunk *c)
{
	struct nacre_fs *fs = f->fs;

	f->ra.bytes -= c->len;
	pthread_mutex_lock(&fs->pool.lock);
	fs->pool.ra_bytes -= c->len < fs->pool.ra_bytes ? c->len : fs->pool.ra_bytes;
	pthread_mutex_unlock(&fs->pool.lock);
	if (c->pooled)
		cl_pool_buf_put(&fs->pool, c->buf);
	else
		free(c->buf);
	free(c);
}

static void chunk_run(struct cl_job *j)
{
	struct ra_chunk *c = (struct ra_chunk *)j;
	struct nacre_file *f = c->f;
	struct iovec iov = {c->buf, c->len};
	int rc;

	rc = cl_obj_io(f, WIRE_OP_OST_READ, c->stripe, c->obj_off, &iov, 1, c->len);
	pthread_mutex_lock(&f->lock);
	c->state = rc < 0 ? RA_FAILED : RA_READY;
	f->jobs--;
	pthread_cond_broadcast(&f->io_cond);
	pthread_mutex_unlock(&f->lock);
}

/* Frees the chunks matching: stale (another generation), failed, read to the end, or (if
 * below is set) wholly before file offset below, or (all) every chunk not being fetched.
 * Returns how many of them had failed. Caller holds f->lock. */
static int drop_locked(struct nacre_file *f, uint64_t gen, uint64_t below, int all)
{
	struct ra_chunk **pp = &f->ra.chunks;
	int failed = 0;

	while (*pp) {
		struct ra_chunk *c = *pp;
		int drop = c->state != RA_FETCHING &&
			   (all || c->gen != gen || c->state == RA_FAILED || c->used >= c->len ||
			    c->file_last < below);
		if (drop) {
			failed += c->state == RA_FAILED;
			*pp = c->next;
			chunk_free(f, c);
		} else {
			pp = &c->next;
		}
	}
	return failed;
}

/* 1 if need more bytes fit the file's and the client's bounds. Nothing is evicted to make
 * room: chunks ahead of the reader are the data it needs next, and the ones behind it are
 * freed by drop_locked once read or left behind. Caller holds f->lock. */
static int fits_locked(struct nacre_file *f, uint64_t need)
{
	struct nacre_fs *fs = f->fs;
	uint64_t file_max = cl_ra_max(fs) + (uint64_t)fs->rpc_max * f->layout.nosts;
	uint64_t total;

	pthread_mutex_lock(&fs->pool.lock);
	total = fs->pool.ra_bytes;
	pthread_mutex_unlock(&fs->pool.lock);
	return f->ra.bytes + need <= file_max && total + need <= 4 * file_max;
}

/* The chunk of stripe holding object offset o (valid generation, not failed). */
static struct ra_chunk *find_locked(struct nacre_file *f, uint32_t stripe, uint64_t o,
				    uint64_t gen)
{
	for (struct ra_chunk *c = f->ra.chunks; c; c = c->next)
		if (c->stripe == stripe && c->obj_off <= o && o < c->obj_off + c->len &&
		    c->gen == gen && c->state != RA_FAILED)
			return c;
	return NULL;
}

/* Issues [p, q) of one object (p..q within one rpc window) as one chunk. Returns 0, or -1
 * when the cache is full or memory is short (stop issuing). Caller holds f->lock. */
static int issue_one(struct nacre_file *f, uint32_t stripe, uint64_t p, uint64_t q, uint64_t gen)
{
	struct nacre_fs *fs = f->fs;
	struct ra_chunk *c;

	if (!fits_locked(f, q - p))
		return -1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->pooled = q - p == fs->rpc_max;
	c->buf = c->pooled ? cl_pool_buf_get(&fs->pool) : malloc(q - p);
	if (!c->buf) {
		free(c);
		return -1;
	}
	c->f = f;
	c->stripe = stripe;
	c->obj_off = p;
	c->len = q - p;
	c->file_last = cl_obj_to_file(f, stripe, q - 1);
	c->gen = gen;
	c->state = RA_FETCHING;
	c->next = f->ra.chunks;
	f->ra.chunks = c;
	f->ra.bytes += c->len;
	pthread_mutex_lock(&fs->pool.lock);
	fs->pool.ra_bytes += c->len;
	pthread_mutex_unlock(&fs->pool.lock);
	c->job.ost = f->layout.ost_idx[stripe];
	c->job.run = chunk_run;
	f->jobs++;
	if (cl_pool_submit(&fs->pool, &c->job) != 0) {
		f->jobs--;
		c->state = RA_FAILED; /* dropped by the next pass */
		return -1;
	}
	return 0;
}

/* Issues readahead of file range [a, b): per object the range it maps to, extended to
 * the end of its rpc window (within the file size), skipping what is cached or being
 * fetched; round-robin over the stripes, one RPC each per round, so that every OST gets
 * the RPC the reader needs first before any gets a second. Stops at the memory bound (the
 * next read tops up again). Caller holds f->lock. */
static void issue_locked(struct nacre_file *f, uint64_t a, uint64_t b, uint64_t size,
			 uint64_t gen)
{
	const struct nacre_layout *l = &f->layout;
	uint64_t r = f->fs->rpc_max;
	uint64_t pos[NACRE_MAX_STRIPES], end[NACRE_MAX_STRIPES];
	int more = 1;

	for (uint32_t s = 0; s < l->nosts; s++) {
		uint64_t osize = layout_object_size(l, size, s);

		pos[s] = layout_object_size(l, a, s);
		end[s] = layout_object_size(l, b, s);
		if (end[s] > pos[s] && end[s] % r)
			end[s] += r - end[s] % r; /* whole RPCs */
		if (end[s] > osize)
			end[s] = osize;
	}
	while (more) {
		more = 0;
		for (uint32_t s = 0; s < l->nosts; s++) {
			uint64_t p = pos[s], q;
			struct ra_chunk *c;

			if (p >= end[s])
				continue;
			c = find_locked(f, s, p, gen);
			if (c) {
				pos[s] = c->obj_off + c->len;
				more = 1;
				continue;
			}
			q = p - p % r + r;
			if (q > end[s])
				q = end[s];
			for (c = f->ra.chunks; c; c = c->next)
				if (c->stripe == s && c->gen == gen && c->state != RA_FAILED &&
				    c->obj_off > p && c->obj_off < q)
					q = c->obj_off;
			if (issue_one(f, s, p, q, gen) < 0)
				return;
			pos[s] = q;
			more = 1;
		}
	}
}

/* Copies [off, off+len) out of the chunks, waiting for chunks being fetched. Returns 1 if
 * every byte was there. Caller holds f->lock. */
static int serve_locked(struct nacre_file *f, uint8_t *buf, uint64_t len, uint64_t off,
			uint64_t gen)
{
	const struct nacre_layout *l = &f->layout;
	struct layout_extent ext[32];
	uint64_t done = 0;

	while (done < len) {
		int n = layout_split(l, off + done, len - done, ext, 32);
		uint64_t sum = 0;

		if (n <= 0)
			return 0;
		for (int i = 0; i < n; i++) {
			uint64_t o = ext[i].obj_off, left = ext[i].len;
			uint8_t *dst = buf + (ext[i].file_off - off);

			if (ext[i].file_off < off || ext[i].file_off - off + left > len)
				return 0;
			while (left > 0) {
				struct ra_chunk *c = find_locked(f, ext[i].stripe, o, gen);
				uint64_t take;

				if (!c)
					return 0;
				if (c->state == RA_FETCHING) {
					pthread_cond_wait(&f->io_cond, &f->lock);
					if (cl_wgen(f->fs, &f->fid) != gen)
						return 0;
					continue; /* the chunk may be gone: look again */
				}
				take = c->obj_off + c->len - o;
				if (take > left)
					take = left;
				memcpy(dst, c->buf + (o - c->obj_off), take);
				c->used += take; /* freed by the next pass once all read */
				o += take;
				dst += take;
				left -= take;
			}
			sum += ext[i].len;
		}
		if (sum == 0)
			return 0;
		done += sum;
	}
	return 1;
}

/* 1 if the stream's chunks hold (or are fetching) the byte at file offset off. Caller
 * holds f->lock. */
static int held_locked(struct nacre_file *f, uint64_t off, uint64_t gen)
{
	struct layout_extent ext;

	return layout_split(&f->layout, off, 1, &ext, 1) == 1 &&
	       find_locked(f, ext.stripe, ext.obj_off, gen) != NULL;
}

int cl_ra_read(struct nacre_file *f, uint8_t *buf, uint64_t len, uint64_t off, uint64_t size)
{
	struct nacre_fs *fs = f->fs;
	struct cl_ra *r = &f->ra;
	uint64_t end = off + len, gen, slack, behind, ra_max = cl_ra_max(fs);
	int seq, served;

	if (ra_max == 0 || f->layout.nosts == 0 || len == 0)
		return 0;
	gen = cl_wgen(fs, &f->fid);
	pthread_mutex_lock(&f->lock);
	/* Out of order by a few reads is still a stream; once it reads ahead, so is a read up
	 * to RA_KEEP_BEHIND behind its end or of what it fetched (the kernel's readahead
	 * requests overtake each other while they wait on a slow link). Farther is random. */
	slack = 4 * len < RA_SEQ_SLACK ? 4 * len : RA_SEQ_SLACK;
	behind = r->window > 0 ? RA_KEEP_BEHIND : slack;
	seq = (off + behind >= r->last_end && off <= r->last_end + slack) ||
	      (r->window > 0 && held_locked(f, off, gen));
	if (seq) {
		r->seq++;
		if (end > r->last_end)
			r->last_end = end;
	} else {
		/* Random access: no stream, no window, nothing kept for it. */
		r->seq = 0;
		r->window = 0;
		r->last_end = end;
		drop_locked(f, gen, 0, 1);
	}
	if (drop_locked(f, gen, off > RA_KEEP_BEHIND ? off - RA_KEEP_BEHIND : 0, 0) > 0) {
		/* An RPC failed: the reader's own read reports it; restart the stream rather
		 * than refetch on every read. */
		r->seq = 0;
		r->window = 0;
	}
	if (r->seq >= 2) {
		if (r->window == 0)
			r->window = 2 * len > fs->rpc_max ? 2 * len : fs->rpc_max;
		else
			r->window *= 2;
		if (r->window > ra_max)
			r->window = ra_max;
		/* Top up from the stream's end: what is held or in flight is skipped. */
		if (r->last_end < size)
			issue_locked(f, r->last_end,
				     size - r->last_end > r->window ? r->last_end + r->window : size,
				     size, gen);
	}
	served = f->ra.chunks ? serve_locked(f, buf, len, off, gen) : 0;
	if (served)
		r->hits++;
	else
		r->misses++;
	pthread_mutex_unlock(&f->lock);
	return served;
}

void cl_ra_fini(struct nacre_file *f)
{
	while (f->ra.chunks) {
		struct ra_chunk *c = f->ra.chunks;
		f->ra.chunks = c->next;
		chunk_free(f, c);
	}
}
