/* ring.c - FUSE over io_uring (Linux 6.14+; docs/fuse-transport.md). Once the kernel offers
 * it in FUSE_INIT and we accept, it stops handing requests to /dev/fuse readers: each goes
 * into a ring entry, a header buffer and a payload buffer we registered on one of its
 * per-CPU queues. The request arrives as the completion of the entry's pending command, and
 * the reply goes back with the next command (COMMIT_AND_FETCH), which also waits for the
 * next request: one system call per request instead of a read and a write.
 *
 * libfuse 3.14 does not speak it, so this sits below it (fuse_session_custom_io): reads of
 * /dev/fuse pass through (we note FUSE_INIT's offer); a reply to a ring request is written
 * into its entry, every other write (the INIT reply, replies to what still comes through
 * /dev/fuse, notifications) goes to /dev/fuse. Each entry has its own thread and io_uring
 * and serves its request with fuse_session_process_buf, as a /dev/fuse worker would. Forgets
 * and interrupts keep coming through /dev/fuse to libfuse's loop. A queue whose entries are
 * nearly all busy (requests waiting for locks, slow servers) gets another, up to
 * RING_ENT_MAX. */
#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"
#include "fuse/fz.h"
#include "fuse/kproto.h"
#include "nacre/nacre_vxattr.h"

#define RING_ENT_START 4  /* entries per queue at the start */
#define RING_ENT_MAX 64   /* per queue, as /dev/fuse has 64 workers: a lock waiter holds one */
/* A queue grows when fewer of its entries than this wait: a request that finds none is
 * queued by the kernel until an entry of that queue commits a reply (a new registration
 * does not take it), which takes long if the busy entries wait for locks. */
#define RING_SPARE 2
#define RING_FRONT 4096   /* before the payload: room for the headers process_buf wants */
#define RING_DEPTH 4      /* SQEs per entry's io_uring: a command, and a wake-up */
#define UD_WAKE 1         /* user_data of the NOP that tells an entry's thread to end */
#define REGISTER_TRIES 1000 /* ms the kernel may take to finish INIT before we register */
#define WATCH_MS 200      /* how often the watcher looks for stalled queues */
#define KICK_MAX 8        /* requests one kick makes a queue take */
#define KICK_BACKOFF 15   /* at most this many periods between kicks of one stalled queue */
/* Largest request on the ring, in pages, if fs.fuse.max_pages_limit allows: 4 MiB, the
 * default OST RPC. On /dev/fuse libfuse 3.14's read buffer keeps it at 1 MiB. */
#define RING_MAX_PAGES 1024

struct ring_queue;

struct ring_ent {
	struct fz_ring *r;
	struct ring_queue *q;
	struct io_uring uring;          /* this entry's own, used by its thread */
	struct k_uring_req_header *hdr; /* registered as iov[0] */
	char *mem;                      /* RING_FRONT bytes, then the payload (iov[1]) */
	struct iovec iov[2];
	pthread_t thread;
	uint64_t commit_id;             /* the thread's: the request it serves */
	pthread_mutex_t lock;           /* the io_uring's SQ, unique and replied */
	pthread_cond_t replied_cv;
	uint64_t unique;                /* lock: the request being served, 0 between */
	int replied;                    /* lock */
};

struct ring_queue {
	int qid;
	atomic_int idle;   /* entries waiting in the kernel for a request */
	atomic_int count;  /* entries in ents; set under fz_ring.lock */
	struct ring_ent *ents[RING_ENT_MAX];
	atomic_uint_fast64_t commits; /* replies given back, for the watcher */
	uint64_t seen;     /* the watcher's: commits at its last look */
	int skip, backoff; /* the watcher's: periods to wait before the next kick */
	int kicked;        /* the watcher's: it kicked since its last look */
};

struct fz_ring {
	struct fz_mount *m;
	int fd;             /* /dev/fuse of the session */
	int want;           /* -o io_uring: accept the kernel's offer */
	uint64_t init_unique; /* FUSE_INIT as read, whose reply we complete */
	int offered;        /* that INIT offered io_uring */
	size_t payload;     /* bytes per payload buffer */
	int nq;
	struct ring_queue *queues;
	pthread_mutex_t lock; /* growth and stop */
	pthread_cond_t stop_cv;
	int go;               /* lock: 1 once the kernel has our INIT reply, -1: no ring */
	pthread_cond_t go_cv;
	int stopping;         /* lock */
	atomic_int in_use;    /* the session took the ring (the kernel may refuse it later) */
	atomic_int refused;   /* the kernel refused a registration: said once */
	char *mnt;            /* the mount point, which the watcher asks */
	pthread_t watcher;
	int watching;
	atomic_size_t read_min; /* the kernel's least /dev/fuse read once max_write is raised */
};

static __thread struct ring_ent *tls_ent; /* the entry this thread serves */
static atomic_uint_fast64_t g_ring_requests, g_ring_entries;

static double load(void *arg)
{
	return (double)atomic_load_explicit((atomic_uint_fast64_t *)arg, memory_order_relaxed);
}

void fz_ring_metrics_register(void)
{
	metrics_counter_fn("nacre_client_fuse_ring_requests_total", "",
			   "FUSE requests served through io_uring instead of /dev/fuse", load,
			   &g_ring_requests);
	metrics_gauge_fn("nacre_client_fuse_ring_entries", "",
			 "io_uring entries registered with the kernel, all queues (0: /dev/fuse)",
			 load, &g_ring_entries);
}

/* The kernel's queues: one per possible CPU (num_possible_cpus). */
static int possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int lo, hi, n = 0;
	char sep;

	if (!f)
		return -1;
	while (fscanf(f, "%d", &lo) == 1) {
		hi = lo;
		sep = 0;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-' && fscanf(f, "%d%c", &hi, &sep) < 1)
			break;
		n += hi - lo + 1;
		if (sep != ',')
			break;
	}
	fclose(f);
	return n > 0 ? n : -1;
}

static struct ring_ent *ent_new(struct fz_ring *r, struct ring_queue *q, int *err)
{
	struct ring_ent *e = calloc(1, sizeof(*e));
	int rc;

	if (!e) {
		*err = ENOMEM;
		return NULL;
	}
	e->r = r;
	e->q = q;
	e->hdr = calloc(1, sizeof(*e->hdr));
	/* aligned_alloc wants a multiple of the alignment */
	e->mem = aligned_alloc(4096, RING_FRONT + ((r->payload + 4095) & ~(size_t)4095));
	if (!e->hdr || !e->mem) {
		*err = ENOMEM;
		goto fail;
	}
	rc = io_uring_queue_init(RING_DEPTH, &e->uring, IORING_SETUP_SQE128);
	if (rc < 0) {
		*err = -rc;
		goto fail;
	}
	e->iov[0] = (struct iovec){e->hdr, sizeof(*e->hdr)};
	e->iov[1] = (struct iovec){e->mem + RING_FRONT, r->payload};
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->replied_cv, NULL);
	return e;
fail:
	free(e->hdr);
	free(e->mem);
	free(e);
	return NULL;
}

static void ent_free(struct ring_ent *e)
{
	io_uring_queue_exit(&e->uring);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->replied_cv);
	free(e->hdr);
	free(e->mem);
	free(e);
}

/* Submits a command on the entry, with hdr and payload as its buffers. 0 or -errno. */
static int ent_submit(struct ring_ent *e, uint32_t op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe;
	struct k_uring_cmd_req *cmd;
	int rc;

	pthread_mutex_lock(&e->lock);
	sqe = io_uring_get_sqe(&e->uring);
	if (!sqe) {
		pthread_mutex_unlock(&e->lock);
		return -EBUSY;
	}
	memset(sqe, 0, 2 * sizeof(*sqe)); /* SQE128: the command area is the second half */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = e->r->fd;
	sqe->cmd_op = op;
	sqe->addr = (uint64_t)(uintptr_t)e->iov;
	sqe->len = 2;
	cmd = (struct k_uring_cmd_req *)sqe->cmd;
	cmd->commit_id = commit_id;
	cmd->qid = (uint16_t)e->q->qid;
	rc = io_uring_submit(&e->uring);
	pthread_mutex_unlock(&e->lock);
	return rc < 0 ? rc : 0;
}

/* Waits for the entry's command to complete: 0 with a request in the buffers, 1 when told
 * to end, or the command's -errno (-ENOTCONN: the session is gone). */
static int ent_wait(struct ring_ent *e)
{
	struct io_uring_cqe *cqe;
	uint64_t ud;
	int rc;

	do
		rc = io_uring_wait_cqe(&e->uring, &cqe);
	while (rc == -EINTR);
	if (rc < 0)
		return rc;
	rc = cqe->res;
	ud = cqe->user_data;
	io_uring_cqe_seen(&e->uring, cqe);
	return ud == UD_WAKE ? 1 : rc;
}

/* Answers a request ourselves: one we cannot hand to libfuse (malformed: the kernel would
 * not send it), one libfuse does not answer (err 0), or one whose reply does not fit. */
static void ent_fail(struct ring_ent *e, uint64_t unique, int err)
{
	struct k_out_header oh = {sizeof(oh), -err, unique};

	memcpy(e->hdr->in_out, &oh, sizeof(oh));
	e->hdr->ent.payload_sz = 0;
	pthread_mutex_lock(&e->lock);
	e->replied = 1;
	pthread_cond_signal(&e->replied_cv);
	pthread_mutex_unlock(&e->lock);
}

static void grow(struct ring_queue *q, struct fz_ring *r);

/* The ring's threads take no signals: they are for libfuse's threads and the upgrade's. */
static void block_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

/* Whether libfuse answers a request of this opcode: not FORGET, BATCH_FORGET, INTERRUPT,
 * NOTIFY_REPLY. */
static int has_reply(uint32_t opcode)
{
	return opcode != K_FUSE_FORGET && opcode != K_FUSE_BATCH_FORGET &&
	       opcode != K_FUSE_INTERRUPT && opcode != K_FUSE_NOTIFY_REPLY;
}

/* Serves the request in the entry's buffers; on return the reply is in them. libfuse
 * wants the request in one piece: the two headers go right in front of the payload. */
static void ent_serve(struct ring_ent *e)
{
	struct fz_ring *r = e->r;
	struct k_in_header in;
	struct fuse_buf fb;
	uint32_t payload = e->hdr->ent.payload_sz;
	size_t op_len;
	char *start;

	memcpy(&in, e->hdr->in_out, sizeof(in));
	e->commit_id = e->hdr->ent.commit_id;
	if (atomic_fetch_sub(&e->q->idle, 1) - 1 < RING_SPARE)
		grow(e->q, r);
	if (in.len < sizeof(in) + payload || payload > r->payload ||
	    in.len - sizeof(in) - payload > sizeof(e->hdr->op_in)) {
		LOG_WARN("fuse", "io_uring: request %llu (opcode %u) of %u bytes with a payload of "
			 "%u does not fit its entry; answering EIO",
			 (unsigned long long)in.unique, in.opcode, in.len, payload);
		ent_fail(e, in.unique, EIO);
		return;
	}
	op_len = in.len - sizeof(in) - payload;
	start = e->mem + RING_FRONT - op_len - sizeof(in);
	memcpy(start, &in, sizeof(in));
	memcpy(start + sizeof(in), e->hdr->op_in, op_len);
	pthread_mutex_lock(&e->lock);
	e->unique = in.unique;
	e->replied = 0;
	pthread_mutex_unlock(&e->lock);
	atomic_fetch_add_explicit(&g_ring_requests, 1, memory_order_relaxed);

	memset(&fb, 0, sizeof(fb));
	fb.mem = start;
	fb.size = in.len;
	tls_ent = e;
	fuse_session_process_buf(r->m->se, &fb);
	tls_ent = NULL;
	if (!has_reply(in.opcode))
		ent_fail(e, in.unique, 0); /* (the kernel sends them to /dev/fuse today) */
	/* a reply may come from another thread (none does today: every operation answers
	 * before it returns); the entry is not given back before it */
	pthread_mutex_lock(&e->lock);
	while (!e->replied)
		pthread_cond_wait(&e->replied_cv, &e->lock);
	e->unique = 0;
	pthread_mutex_unlock(&e->lock);
}

/* Registers the entry: 0 once it waits for requests, else -errno. */
static int ent_register(struct ring_ent *e)
{
	int rc;

	for (int tries = 0;; tries++) {
		rc = ent_submit(e, K_URING_CMD_REGISTER, 0);
		if (rc < 0)
			return rc;
		atomic_fetch_add(&e->q->idle, 1);
		rc = ent_wait(e);
		/* the kernel marks the connection initialized as our INIT reply arrives */
		if (rc != -EAGAIN || tries >= REGISTER_TRIES)
			return rc;
		atomic_fetch_sub(&e->q->idle, 1);
		usleep(1000);
	}
}

static void *ent_main(void *arg)
{
	struct ring_ent *e = arg;
	int rc;

	block_signals();
	pthread_mutex_lock(&e->r->lock);
	while (e->r->go == 0)
		pthread_cond_wait(&e->r->go_cv, &e->r->lock);
	rc = e->r->go;
	pthread_mutex_unlock(&e->r->lock);
	if (rc < 0)
		return NULL;
	rc = ent_register(e);
	if (rc < 0 && rc != -ENOTCONN && rc != -ECONNABORTED) {
		/* the kernel gave up on the ring for this session: /dev/fuse serves */
		if (!atomic_exchange(&e->r->refused, 1))
			LOG_ERR("fuse", "FUSE transport: /dev/fuse after all (the kernel refused "
				 "io_uring queue %d: %s)%s", e->q->qid, strerror(-rc),
				 e->r->payload > FZ_MAX_IO ? "; requests above 1 MiB fail "
				 "there: remount with -o io_uring=off" : "");
		return NULL;
	}
	while (rc == 0) {
		ent_serve(e);
		rc = ent_submit(e, K_URING_CMD_COMMIT_AND_FETCH, e->commit_id);
		if (rc == 0) {
			atomic_fetch_add(&e->q->commits, 1);
			atomic_fetch_add(&e->q->idle, 1);
			rc = ent_wait(e);
		}
	}
	/* -ENOTCONN and -ECONNABORTED: the session ended */
	if (rc < 0 && rc != -ENOTCONN && rc != -ECONNABORTED && rc != -ECANCELED)
		LOG_WARN("fuse", "io_uring queue %d: an entry stopped: %s", e->q->qid,
			 strerror(-rc));
	return NULL;
}

/* Adds an entry to q and starts its thread. 0 or -errno. Under r->lock. */
static int add_entry(struct fz_ring *r, struct ring_queue *q)
{
	int n = atomic_load(&q->count), err = 0;
	struct ring_ent *e;

	if (n >= RING_ENT_MAX || r->stopping)
		return -ENOSPC;
	e = ent_new(r, q, &err);
	if (!e)
		return -err;
	if (pthread_create(&e->thread, NULL, ent_main, e) != 0) {
		ent_free(e);
		return -EAGAIN;
	}
	q->ents[n] = e;
	atomic_store(&q->count, n + 1);
	atomic_fetch_add(&g_ring_entries, 1);
	return 0;
}

static void grow(struct ring_queue *q, struct fz_ring *r)
{
	static atomic_int warned;
	int rc;

	pthread_mutex_lock(&r->lock);
	rc = atomic_load(&q->idle) < RING_SPARE ? add_entry(r, q) : 0;
	pthread_mutex_unlock(&r->lock);
	if (rc < 0 && rc != -ENOSPC && !atomic_exchange(&warned, 1))
		LOG_WARN("fuse", "io_uring queue %d: cannot add an entry (%s); requests wait for "
			 "a busy one", q->qid, strerror(-rc));
}

/* Makes queue qid take up to n requests: asks the mount for a virtual xattr (answered
 * without the network) from that queue's CPU. */
static void kick(struct fz_ring *r, int qid, int n)
{
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(qid, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus) < 0)
		return;
	for (int i = 0; i < n; i++)
		getxattr(r->mnt, NACRE_VXATTR_FSNAME, NULL, 0);
}

/* The kernel gives a queued request to an entry only when an entry of its queue commits
 * a reply: a request that came while every entry was busy waits, even with entries added
 * since free, for as long as the busy ones wait (for locks). A queue with busy and free
 * entries that committed nothing for a period is made to commit (kick), less often the
 * longer it stays so. */
static void *watch_main(void *arg)
{
	struct fz_ring *r = arg;
	struct timespec ts;

	block_signals();
	pthread_mutex_lock(&r->lock);
	while (!r->stopping) {
		time_after_ms(&ts, CLOCK_REALTIME, WATCH_MS);
		pthread_cond_timedwait(&r->stop_cv, &r->lock, &ts);
		for (int qi = 0; qi < r->nq && !r->stopping; qi++) {
			struct ring_queue *q = &r->queues[qi];
			uint64_t c = atomic_load(&q->commits);
			int idle = atomic_load(&q->idle), busy = atomic_load(&q->count) - idle;
			/* the commits of our own kick are no progress */
			int progress = c != q->seen && !q->kicked;

			q->seen = c;
			q->kicked = 0;
			if (busy == 0 || idle == 0 || progress) {
				q->skip = q->backoff = 0;
				continue;
			}
			if (q->skip > 0) {
				q->skip--;
				continue;
			}
			q->backoff = q->backoff * 2 + 1 > KICK_BACKOFF ? KICK_BACKOFF
								       : q->backoff * 2 + 1;
			q->skip = q->backoff;
			q->kicked = 1;
			pthread_mutex_unlock(&r->lock);
			kick(r, q->qid, busy < KICK_MAX ? busy : KICK_MAX);
			pthread_mutex_lock(&r->lock);
		}
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* A reply that does not fit the entry (a bug: the kernel sizes its requests to our
 * buffers) is answered EIO, so that the entry is given back and the caller hears of it. */
static ssize_t ent_reply_misfit(struct ring_ent *e, const struct k_out_header *oh, size_t len)
{
	LOG_RATELIMITED(LOG_LVL_ERR, "fuse", "io_uring: the reply to request %llu (%zu bytes) "
			"does not fit its entry (%zu); answering EIO",
			(unsigned long long)oh->unique, len, e->r->payload);
	ent_fail(e, oh->unique, EIO);
	errno = EINVAL;
	return -1;
}

/* The entry's reply: out header into the header buffer, the rest into the payload. */
static ssize_t ent_reply(struct ring_ent *e, const struct iovec *iov, int count)
{
	const struct k_out_header *oh = iov[0].iov_base;
	char *payload = e->mem + RING_FRONT;
	size_t off = 0;

	if (iov[0].iov_len != sizeof(struct k_out_header))
		return ent_reply_misfit(e, oh, iov[0].iov_len);
	for (int i = 1; i < count; i++) {
		if (iov[i].iov_len > e->r->payload - off)
			return ent_reply_misfit(e, oh, off + iov[i].iov_len);
		if (iov[i].iov_base != payload + off)
			memcpy(payload + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	memcpy(e->hdr->in_out, iov[0].iov_base, sizeof(struct k_out_header));
	e->hdr->ent.payload_sz = (uint32_t)off;
	pthread_mutex_lock(&e->lock);
	e->replied = 1;
	pthread_cond_signal(&e->replied_cv);
	pthread_mutex_unlock(&e->lock);
	return (ssize_t)(sizeof(struct k_out_header) + off);
}

/* The entry serving request unique, or NULL (it came through /dev/fuse). */
static struct ring_ent *find_entry(struct fz_ring *r, uint64_t unique)
{
	if (tls_ent && tls_ent->unique == unique)
		return tls_ent;
	for (int qi = 0; qi < r->nq; qi++) {
		struct ring_queue *q = &r->queues[qi];
		int n = atomic_load(&q->count);

		for (int i = 0; i < n; i++) {
			struct ring_ent *e = q->ents[i];
			int hit;

			pthread_mutex_lock(&e->lock);
			hit = e->unique == unique && !e->replied;
			pthread_mutex_unlock(&e->lock);
			if (hit)
				return e;
		}
	}
	return NULL;
}

static void free_queues(struct fz_ring *r)
{
	for (int qi = 0; r->queues && qi < r->nq; qi++) {
		struct ring_queue *q = &r->queues[qi];

		for (int i = 0; i < atomic_load(&q->count); i++)
			ent_free(q->ents[i]);
		atomic_store(&q->count, 0);
	}
	free(r->queues);
	r->queues = NULL;
}

/* Lets the prepared entries' threads register (go 1) or end (go -1). */
static void release(struct fz_ring *r, int go)
{
	pthread_mutex_lock(&r->lock);
	r->go = go;
	pthread_cond_broadcast(&r->go_cv);
	pthread_mutex_unlock(&r->lock);
}

/* Joins the entries' threads (told to end) and frees them. */
static void drop_queues(struct fz_ring *r)
{
	for (int qi = 0; r->queues && qi < r->nq; qi++) {
		struct ring_queue *q = &r->queues[qi];

		for (int i = 0; i < atomic_load(&q->count); i++)
			pthread_join(q->ents[i]->thread, NULL);
		atomic_fetch_sub(&g_ring_entries, (uint_fast64_t)atomic_load(&q->count));
	}
	free_queues(r);
}

/* RING_ENT_START entries per queue with their threads, which wait until release: made
 * before we accept the ring, so that a machine where they cannot be made (no io_uring, as
 * in a container whose seccomp refuses it; no memory) keeps the session on /dev/fuse.
 * 0 or -errno. */
static int prepare_queues(struct fz_ring *r)
{
	int err = 0;

	r->queues = calloc((size_t)r->nq, sizeof(*r->queues));
	if (!r->queues)
		return -ENOMEM;
	for (int qi = 0; qi < r->nq && !err; qi++) {
		struct ring_queue *q = &r->queues[qi];

		q->qid = qi;
		for (int i = 0; i < RING_ENT_START && !err; i++) {
			struct ring_ent *e = ent_new(r, q, &err);

			if (e && pthread_create(&e->thread, NULL, ent_main, e) != 0) {
				ent_free(e);
				e = NULL;
				err = EAGAIN;
			}
			if (e) {
				q->ents[i] = e;
				atomic_store(&q->count, i + 1);
				atomic_fetch_add(&g_ring_entries, 1);
			}
		}
	}
	if (err) {
		release(r, -1);
		drop_queues(r);
	}
	return -err;
}

/* fs.fuse.max_pages_limit: the most pages the kernel puts in one request. */
static unsigned kernel_max_pages(void)
{
	FILE *f = fopen("/proc/sys/fs/fuse/max_pages_limit", "r");
	unsigned n = 256;

	if (f) {
		if (fscanf(f, "%u", &n) != 1)
			n = 256;
		fclose(f);
	}
	return n;
}

/* The reply to FUSE_INIT: accepts the ring when offered and wanted, then starts it. */
static ssize_t init_reply(struct fz_ring *r, int fd, struct iovec *iov, int count)
{
	const struct k_out_header *oh = iov[0].iov_base;
	struct k_init_out *out = NULL;
	int rc = 0;
	ssize_t n;

	r->init_unique = 0;
	if (count >= 2 && iov[1].iov_len >= sizeof(*out) && oh->error == 0)
		out = iov[1].iov_base;
	if (out && r->offered && r->want) {
		unsigned pages = kernel_max_pages();
		uint32_t max_write = out->max_write;

		/* the payload buffers are ours: larger requests than libfuse's buffer takes */
		if (pages > RING_MAX_PAGES)
			pages = RING_MAX_PAGES;
		if ((out->flags & K_FUSE_MAX_PAGES) && pages > out->max_pages)
			max_write = pages * 4096;
		else
			pages = out->max_pages;
		r->payload = max_write > K_FUSE_MIN_READ_BUFFER ? max_write : K_FUSE_MIN_READ_BUFFER;
		if ((size_t)pages * 4096 > r->payload)
			r->payload = (size_t)pages * 4096;
		r->nq = possible_cpus();
		rc = r->nq > 0 ? prepare_queues(r) : -ENXIO;
		if (rc == 0) {
			out->flags |= K_FUSE_INIT_EXT;
			out->flags2 |= K_FUSE_OVER_IO_URING;
			out->max_write = max_write;
			out->max_pages = (uint16_t)pages;
			/* the kernel refuses /dev/fuse reads smaller than a whole WRITE */
			if (max_write > FZ_MAX_IO)
				atomic_store(&r->read_min, (size_t)max_write + 4096);
		}
	}
	n = writev(fd, iov, count);
	if (!out)
		return n;
	if (!r->want) {
		LOG_INFO("fuse", "FUSE transport: /dev/fuse (-o io_uring=off)");
		return n;
	}
	if (!r->offered) {
		LOG_INFO("fuse", "FUSE transport: /dev/fuse (the kernel offers no io_uring; root can "
			 "turn it on: echo Y > /sys/module/fuse/parameters/enable_uring, then "
			 "remount)");
		return n;
	}
	if (rc < 0) {
		LOG_WARN("fuse", "FUSE transport: /dev/fuse (cannot set up io_uring: %s)",
			 rc == -ENXIO ? "cannot count the CPUs" : strerror(-rc));
		return n;
	}
	if (n < 0) {
		release(r, -1);
		drop_queues(r);
		return n;
	}
	atomic_store(&r->in_use, 1);
	release(r, 1);
	if (pthread_create(&r->watcher, NULL, watch_main, r) == 0)
		r->watching = 1;
	else
		LOG_WARN("fuse", "io_uring: no watcher thread: a request queued while every entry "
			 "was busy waits for the next reply on its queue");
	LOG_INFO("fuse", "FUSE transport: io_uring, %d queue(s) of %d entries (up to %d), "
		 "requests up to %zu KiB (fs.fuse.max_pages_limit)", r->nq, RING_ENT_START,
		 RING_ENT_MAX, r->payload / 1024);
	return n;
}

static ssize_t ring_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fz_ring *r = ((struct fz_mount *)userdata)->ring;
	const struct k_out_header *oh = iov[0].iov_base;

	if (count > 0 && iov[0].iov_len >= sizeof(*oh) && oh->unique != 0) {
		struct ring_ent *e = r->queues ? find_entry(r, oh->unique) : NULL;

		if (e)
			return ent_reply(e, iov, count);
		if (oh->unique == r->init_unique)
			return init_reply(r, fd, iov, count);
	}
	return writev(fd, iov, count);
}

/* A /dev/fuse read into a buffer of the size the kernel wants since it has max_write above
 * what libfuse's buffer holds: one per libfuse thread. What comes through /dev/fuse then
 * (forgets, interrupts) is small; a request that does not fit libfuse's buffer (the kernel
 * fell back from the ring) is answered EIO here. */
static pthread_key_t big_key;

static void big_key_make(void)
{
	pthread_key_create(&big_key, free);
}

static ssize_t read_big(int fd, void *buf, size_t len, size_t need)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	static atomic_int warned;
	char *big;
	ssize_t n;

	pthread_once(&once, big_key_make);
	big = pthread_getspecific(big_key);
	if (!big) {
		big = malloc(need);
		if (!big || pthread_setspecific(big_key, big) != 0) {
			free(big);
			errno = ENOMEM;
			return -1;
		}
	}
	n = read(fd, big, need);
	if (n > (ssize_t)len) {
		const struct k_in_header *in = (const void *)big;
		struct k_out_header oh = {sizeof(oh), -EIO, in->unique};

		if (!atomic_exchange(&warned, 1))
			LOG_ERR("fuse", "a %zd-byte request (opcode %u) came through /dev/fuse, whose "
				"buffer holds %zu: answered EIO (remount with -o io_uring=off)", n,
				in->opcode, len);
		if (write(fd, &oh, sizeof(oh)) < 0)
			LOG_DEBUG("fuse", "answering EIO: %s", strerror(errno));
		errno = ENOENT; /* libfuse reads again */
		return -1;
	}
	if (n > 0)
		memcpy(buf, big, (size_t)n);
	return n;
}

static ssize_t ring_read(int fd, void *buf, size_t len, void *userdata)
{
	struct fz_ring *r = ((struct fz_mount *)userdata)->ring;
	size_t need = atomic_load(&r->read_min);
	ssize_t n = need > len ? read_big(fd, buf, len, need) : read(fd, buf, len);
	const struct k_in_header *in = buf;

	/* A read that waited since before INIT raised max_write is checked again when a
	 * signal restarts it (SIGSTOP, then SIGCONT): its buffer is now too small (EINVAL),
	 * which would end libfuse's loop and the mount. Read again with one the kernel takes. */
	if (n < 0 && errno == EINVAL && need <= len && (need = atomic_load(&r->read_min)) > len)
		n = read_big(fd, buf, len, need);

	if (n >= (ssize_t)(sizeof(*in) + sizeof(struct k_init_in)) && in->opcode == K_FUSE_INIT) {
		const struct k_init_in *a = (const void *)(in + 1);

		r->init_unique = in->unique;
		r->offered = (a->flags & K_FUSE_INIT_EXT) && (a->flags2 & K_FUSE_OVER_IO_URING);
	}
	return n;
}

int fz_ring_setup(struct fz_mount *m, const char *mnt, int want)
{
	static const struct fuse_custom_io io = {.writev = ring_writev, .read = ring_read};
	struct fz_ring *r = calloc(1, sizeof(*r));
	int rc;

	if (!r || !(r->mnt = strdup(mnt))) {
		free(r);
		return -ENOMEM;
	}
	r->m = m;
	r->fd = fuse_session_fd(m->se);
	r->want = want;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->stop_cv, NULL);
	pthread_cond_init(&r->go_cv, NULL);
	m->ring = r;
	rc = fuse_session_custom_io(m->se, &io, r->fd);
	if (rc < 0)
		fz_ring_free(m);
	return rc;
}

void *fz_ring_reply_buffer(size_t size)
{
	struct ring_ent *e = tls_ent;

	return e && size <= e->r->payload ? e->mem + RING_FRONT : NULL;
}

int fz_ring_in_use(struct fz_mount *m)
{
	return m->ring && atomic_load(&m->ring->in_use);
}

void fz_ring_stop(struct fz_mount *m)
{
	struct fz_ring *r = m->ring;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = 1;
	pthread_cond_broadcast(&r->stop_cv);
	pthread_mutex_unlock(&r->lock);
	if (r->watching) {
		struct timespec ts;

		/* its kick is answered by a free entry, unless every one became busy since */
		time_after_ms(&ts, CLOCK_REALTIME, 2000);
		if (pthread_timedjoin_np(r->watcher, NULL, &ts) != 0) {
			LOG_WARN("fuse", "io_uring: the watcher waits for a busy queue; leaving it");
			pthread_detach(r->watcher);
			r->watching = 0;
			return; /* it reads the queues when it wakes: they stay */
		}
		r->watching = 0;
	}
	pthread_mutex_lock(&r->lock);
	if (r->go == 0) { /* never released: they wait for it */
		r->go = -1;
		pthread_cond_broadcast(&r->go_cv);
	}
	pthread_mutex_unlock(&r->lock);
	for (int qi = 0; r->queues && qi < r->nq; qi++) {
		struct ring_queue *q = &r->queues[qi];

		for (int i = 0; i < atomic_load(&q->count); i++) {
			struct ring_ent *e = q->ents[i];
			struct io_uring_sqe *sqe;

			pthread_mutex_lock(&e->lock);
			sqe = io_uring_get_sqe(&e->uring);
			if (sqe) {
				io_uring_prep_nop(sqe);
				sqe->user_data = UD_WAKE;
				io_uring_submit(&e->uring);
			}
			pthread_mutex_unlock(&e->lock);
		}
	}
	drop_queues(r);
	atomic_store(&r->in_use, 0);
	/* m->ring stays: libfuse's custom io still reads and writes through it */
}

void fz_ring_free(struct fz_mount *m)
{
	struct fz_ring *r = m->ring;

	if (!r || r->queues) /* queues left to a watcher that never came back */
		return;
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->stop_cv);
	pthread_cond_destroy(&r->go_cv);
	free(r->mnt);
	free(r);
	m->ring = NULL;
}
