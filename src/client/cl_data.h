/* cl_data.h - libnacre's asynchronous data path: the I/O pool (pool.c), write-behind (wb.c)
 * and readahead (ra.c).
 *
 * - The pool is a small set of threads per fs that run object RPCs in the background: each
 *   job is one OST_WRITE of a dirty chunk or one OST_READ of a readahead chunk. At most
 *   max_rpcs_in_flight jobs run per OST index at once (Lustre's max_rpcs_in_flight); jobs
 *   wait in one FIFO queue. A job's run function does the RPC (cl_obj_io of the object
 *   engine, obj.h: rpc_start + rpc_wait, with the retry of a moved OSS) and its completion;
 *   it may free the job.
 * - Write-behind: nacre_pwrite copies into per-stripe chunks (object space, windows of
 *   max_rpc_size bytes, one contiguous dirty range each) and returns; full chunks go to the
 *   pool at once, the others on flush/fsync/close, when the dirty bounds are reached, or
 *   when a write leaves a gap. No dirty range ever overlaps an in-flight one of the same
 *   stripe (a write that would waits for the RPC first), so RPCs to one object never race.
 * - Readahead: per handle, sequential streams get a window (doubling to readahead_max)
 *   fetched into chunks in object space; a read served from chunks makes no round trip.
 *   A chunk is valid while the fid's write generation (fs->wgen) has not moved since it was
 *   issued: every local write, write completion and truncate bumps it.
 *
 * Lock order: fs->files_lock, nacre_file.append_lock, nacre_file.lock, cl_pool.lock
 * (see docs/threading.md). No RPC is made while holding any of them.
 */
#ifndef NACRE_CL_DATA_H
#define NACRE_CL_DATA_H

#include <pthread.h>
#include <stdint.h>

struct nacre_fs;
struct nacre_file;
struct nacre_fid;

/* Defaults of the tunables (struct nacre_mount_opts). */
#define CL_RPC_SIZE_DEFAULT (4u * 1024u * 1024u)
#define CL_RPC_SIZE_MIN (64u * 1024u)
#define CL_RPCS_IN_FLIGHT_DEFAULT 8
#define CL_DIRTY_MB_DEFAULT 256
#define CL_FILE_DIRTY_MB_MAX 64
#define CL_RA_MB_DEFAULT 64
#define CL_POOL_THREADS_MAX 32
#define CL_WGEN_BUCKETS 256

/* ---- pool.c ---- */

struct cl_job;
typedef void (*cl_job_fn)(struct cl_job *j);

/* Embedded in the chunk that owns it. */
struct cl_job {
	struct cl_job *next; /* queue link, under cl_pool.lock */
	uint32_t ost;        /* OST index the RPC goes to; set before submit */
	cl_job_fn run;       /* runs on a pool thread; may free the job */
};

struct cl_pool {
	pthread_mutex_t lock;     /* protects every field below */
	pthread_cond_t work_cond; /* a job was queued, a slot freed, or stop */
	pthread_cond_t space_cond;/* dirty bytes went down */
	struct cl_job *head, *tail;
	int nthreads, idle, stopping;
	pthread_t threads[CL_POOL_THREADS_MAX];
	uint16_t *inflight;       /* running jobs per OST index (65536 entries) */
	uint16_t *max_ost;        /* limit per OST index set while mounted; 0 = max_inflight */
	int max_inflight;         /* the limit of an OST with no max_ost */
	uint64_t dirty;           /* write-behind bytes of every file of this fs */
	uint64_t ra_bytes;        /* readahead cache bytes of every file of this fs */
	uint8_t **bufs;           /* free buffers of rpc_max bytes, reused */
	int nbufs;
	uint32_t buf_size;        /* immutable after init: fs->rpc_max */
};

int cl_pool_init(struct cl_pool *p, int max_inflight, uint32_t buf_size);
/* Waits for the running jobs (the queue must be empty: every file closed), joins the
 * threads and frees p's memory. */
void cl_pool_fini(struct cl_pool *p);
/* The limit of running jobs for OST index ost; cl_pool_set_max sets it (1..65535) for one
 * OST, or for every OST when ost is -1 (which drops the per-OST ones). Thread-safe. */
int cl_pool_max(struct cl_pool *p, int ost);
void cl_pool_set_max(struct cl_pool *p, int ost, int max);
/* Queues j; starts a thread if none is idle and the pool is not full. Thread-safe;
 * may be called with a nacre_file.lock held. Returns 0 or -ENOMEM/-EAGAIN (then nothing
 * was queued and no thread runs: the caller runs j->run itself). */
int cl_pool_submit(struct cl_pool *p, struct cl_job *j);
/* A buffer of p->buf_size bytes (reused or malloc'd), or NULL. Thread-safe. */
uint8_t *cl_pool_buf_get(struct cl_pool *p);
/* Returns a buffer from cl_pool_buf_get; NULL is fine. Thread-safe. */
void cl_pool_buf_put(struct cl_pool *p, uint8_t *b);

/* ---- wb.c: write-behind ---- */

struct wb_chunk;

/* Per open file, under nacre_file.lock. */
struct cl_wb {
	struct wb_chunk *dirty;    /* chunks being filled */
	struct wb_chunk *inflight; /* chunks whose RPC is queued or running */
	int ndirty, ninflight;
	uint64_t bytes;            /* dirty + in-flight bytes */
	int async_err;             /* first background error not yet returned by a write */
};

/* Buffers len bytes at off (the caller handled O_APPEND, limits and the read-only check).
 * Returns 0 or a negative error. Thread-safe. */
int cl_wb_write(struct nacre_file *f, const uint8_t *buf, uint64_t len, uint64_t off);
/* Sends every dirty chunk of f and waits until none is in flight. Returns 0; errors are
 * left in f->deferred_err. Thread-safe. */
void cl_wb_flush(struct nacre_file *f);
/* Makes [off, off+len) of every open handle of f's fid on this fs visible on the OSTs
 * (sends and waits for the chunks overlapping it). Thread-safe. */
void cl_wb_flush_range(struct nacre_file *f, uint64_t off, uint64_t len);
/* cl_wb_flush of every open handle of fid (before a truncate). Thread-safe. */
void cl_wb_flush_fid(struct nacre_fs *fs, const struct nacre_fid *fid);
/* Returns and clears f's unreported background write error (0 if none). Thread-safe. */
int cl_wb_take_error(struct nacre_file *f);
/* Frees what is left (after cl_wb_flush and with no job outstanding). */
void cl_wb_fini(struct nacre_file *f);

/* ---- ra.c: readahead ---- */

struct ra_chunk;

/* Per open file, under nacre_file.lock. */
struct cl_ra {
	struct ra_chunk *chunks;
	uint64_t bytes;      /* sum of the chunks' lengths */
	uint64_t last_end;   /* end of the stream so far (highest read end), file offset */
	uint64_t window;     /* kept issued ahead of last_end, bytes; 0 = not streaming */
	int seq;             /* consecutive sequential reads */
	uint64_t hits, misses;
};

/* Serves [off, off+len) (within the known size) from the readahead cache if it holds all of
 * it, after updating the stream state and issuing readahead. Returns 1 if buf was filled, 0
 * if the caller must read from the OSTs. Thread-safe. */
int cl_ra_read(struct nacre_file *f, uint8_t *buf, uint64_t len, uint64_t off, uint64_t size);
/* Frees every chunk (no job outstanding). */
void cl_ra_fini(struct nacre_file *f);

#endif
