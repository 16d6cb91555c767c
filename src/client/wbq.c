/* wbq.c - the write-back queue (wbq.h). */
#include "client/wbq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/cl_internal.h"
#include "client/mdc.h"
#include "client/wbj.h"
#include "common/fid.h"
#include "common/net.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "proto/wire.h"

struct cl_wbq_change {
	struct cl_wbq_change *next;
	uint16_t opcode;
	uint32_t len;
	uint64_t seq;                /* in the journal (wbj.h); 0 without one */
	struct nacre_fid parent;     /* for the log and the lease to give back */
	struct nacre_fid fsync_fid;  /* whose fsync reports its refusal */
	int64_t granted_ms;          /* its lease's grant: with the renewals, its validity */
	char name[NACRE_NAME_MAX + 1]; /* "" for a change of an inode */
	uint8_t body[];
};

static int pending(struct cl_wbq *q);

/* fs->before_mds: what is queued goes first, but for the queue's own requests and those
 * that depend on nothing queued (callbacks, grants, leases, group lists, pings). */
static void before_mds(struct nacre_fs *fs, uint16_t opcode)
{
	switch (opcode) {
	case WIRE_OP_MDS_BATCH:
	case WIRE_OP_MDS_NOTIFY_WAIT:
	case WIRE_OP_MDS_FID_GRANT:
	case WIRE_OP_MDS_LEASE:
	case WIRE_OP_MDS_GROUPS_SET:
	case WIRE_OP_PING:
		return;
	default:
		if (pending(&fs->wbq))
			cl_wbq_flush(fs); /* waits for a flush under way too */
	}
}

void cl_wbq_init(struct nacre_fs *fs)
{
	struct cl_wbq *q = &fs->wbq;

	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	pthread_mutex_init(&q->flush_lock, NULL);
	q->delay_ms = CL_WBQ_DELAY_MS;
	fs->before_mds = before_mds;
}

static void *flusher_main(void *arg)
{
	struct nacre_fs *fs = arg;
	struct cl_wbq *q = &fs->wbq;

	pthread_mutex_lock(&q->lock);
	while (!q->stop) {
		if (!q->count) {
			pthread_cond_wait(&q->cond, &q->lock);
			continue;
		}
		int64_t due = q->first_ms + __atomic_load_n(&q->delay_ms, __ATOMIC_RELAXED);
		int64_t now = net_now_ms();
		if (now < due && q->count < CL_WBQ_MAX) {
			struct timespec ts;
			time_after_ms(&ts, CLOCK_REALTIME, (int)(due - now));
			pthread_cond_timedwait(&q->cond, &q->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&q->lock);
		cl_wbq_flush(fs);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int cl_wbq_start(struct nacre_fs *fs)
{
	struct cl_wbq *q = &fs->wbq;
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	if (!q->started && !q->stop) {
		if (pthread_create(&q->thread, NULL, flusher_main, fs) == 0)
			q->started = 1;
		else
			rc = -EAGAIN;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

void cl_wbq_fini(struct nacre_fs *fs)
{
	struct cl_wbq *q = &fs->wbq;

	cl_wbq_flush(fs);
	pthread_mutex_lock(&q->lock);
	q->stop = 1;
	pthread_cond_signal(&q->cond);
	int started = q->started;
	pthread_mutex_unlock(&q->lock);
	if (started)
		pthread_join(q->thread, NULL);
	q->started = 0;
	while (q->head) { /* the MDS was gone for good: logged by the flush */
		struct cl_wbq_change *c = q->head;
		q->head = c->next;
		free(c);
	}
	pthread_mutex_destroy(&q->flush_lock);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
}

/* Keeps err for the next fsync of fid. With q->lock held. */
static void keep_error(struct cl_wbq *q, const struct nacre_fid *fid, int err)
{
	for (int i = 0; i < q->nerrs; i++)
		if (fid_eq(&q->errs[i].fid, fid))
			return; /* the first one is reported */
	if (q->nerrs < CL_WBQ_ERRS) {
		q->errs[q->nerrs].fid = *fid;
		q->errs[q->nerrs++].err = err;
	} else if (!q->err_any) {
		q->err_any = err;
	}
}

/* Logs a journal that cannot be written (once a minute): the change is made at the MDS
 * instead, as without write-back. */
static void journal_failed(struct nacre_fs *fs, int rc)
{
	static int64_t last_ms;
	int64_t now = net_now_ms();
	int64_t prev = __atomic_load_n(&last_ms, __ATOMIC_RELAXED);

	if (prev && now - prev < 60000)
		return;
	__atomic_store_n(&last_ms, now, __ATOMIC_RELAXED);
	cl_log(fs, CL_LOG_ERR, "write-back journal %s: cannot write: %s; changes go to MDS %s "
	       "at once (without write-back) until it can", fs->wbj->dir, nacre_strerror(rc),
	       fs->addr);
}

int cl_wbq_add(struct nacre_fs *fs, uint16_t opcode, const struct wire_cursor *body,
	       const struct nacre_fid *parent, const char *name, int64_t granted_ms)
{
	struct cl_wbq *q = &fs->wbq;
	uint32_t len = (uint32_t)wire_cursor_pos(body);
	struct cl_wbq_change *c;

	if (!wire_cursor_ok(body))
		return body->err < 0 ? body->err : -EINVAL;
	c = malloc(sizeof(*c) + len);
	if (!c)
		return -ENOMEM;
	c->next = NULL;
	c->opcode = opcode;
	c->len = len;
	c->parent = *parent;
	c->fsync_fid = *parent;
	if (opcode == WIRE_OP_MDS_SETATTR) { /* the inode's own fsync reports it */
		struct wire_cursor rc;
		struct wire_setattr_req sr;
		wire_cursor_init_read(&rc, body->buf, len);
		wire_setattr_req_decode(&rc, &sr);
		if (wire_cursor_ok(&rc))
			c->fsync_fid = sr.fid;
	}
	c->granted_ms = granted_ms;
	str_copy(c->name, name ? name : "", sizeof(c->name));
	memcpy(c->body, body->buf, len);
	c->seq = 0;
	pthread_mutex_lock(&q->lock);
	if (fs->wbj) {
		/* journaled before it is answered, in queue order */
		int rc = cl_wbj_append(fs->wbj, q->seq + 1, opcode, parent, c->name, c->body, len);
		if (rc) {
			pthread_mutex_unlock(&q->lock);
			journal_failed(fs, rc);
			free(c);
			return rc;
		}
		c->seq = ++q->seq;
	}
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	if (!q->count)
		q->first_ms = net_now_ms();
	__atomic_store_n(&q->count, q->count + 1, __ATOMIC_RELEASE);
	q->queued++;
	if (q->count == 1 || q->count >= CL_WBQ_MAX)
		pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

void cl_wbq_durable(struct nacre_fs *fs)
{
	struct cl_wbq *q = &fs->wbq;
	uint64_t seq;

	if (!fs->wbj)
		return;
	pthread_mutex_lock(&q->lock);
	seq = q->seq;
	pthread_mutex_unlock(&q->lock);
	if (seq && cl_wbj_sync(fs->wbj, seq) != 0)
		journal_failed(fs, -EIO); /* written, not on the disk: it goes on, logged */
}

/* The moment a change's lease is judged at: now, or while the connection recovers a
 * restarted MDS, the moment the MDS went away (what the lease was then decides: the
 * recovery asks it back, cl_lease_reclaim, or reports what is queued lost). */
static int64_t judged_at(struct nacre_fs *fs)
{
	int64_t now = net_now_ms(), down = rpc_conn_lost_before_recovery(fs->mds);

	return down && down < now ? down : now;
}

/* Whether c's lease was still good at now: renewed (or granted, or asked back after an MDS
 * restart) less than WIRE_LEASE_MS before. On any connection: the changes queued when the
 * MDS restarts are sent after it. */
static int in_time(struct nacre_fs *fs, const struct cl_wbq_change *c, int64_t now)
{
	int64_t from = __atomic_load_n(&fs->leases.renew_sent_ms, __ATOMIC_RELAXED);

	if (c->granted_ms > from)
		from = c->granted_ms;
	return now < from + WIRE_LEASE_MS - CL_LEASE_MARGIN_MS;
}

/* Moves the changes at the head whose lease had run out at now to *lost. With q->lock
 * held. */
static void take_lost(struct nacre_fs *fs, struct cl_wbq *q, int64_t now,
		      struct cl_wbq_change **lost)
{
	while (q->head && (q->lose_all || !in_time(fs, q->head, now))) {
		struct cl_wbq_change *c = q->head;
		q->head = c->next;
		c->next = *lost;
		*lost = c;
		__atomic_store_n(&q->count, q->count - 1, __ATOMIC_RELEASE);
	}
	q->lose_all = 0;
	if (!q->head)
		q->tail = NULL;
}

void cl_wbq_lose_queued(struct nacre_fs *fs)
{
	pthread_mutex_lock(&fs->wbq.lock);
	fs->wbq.lose_all = fs->wbq.head != NULL;
	pthread_mutex_unlock(&fs->wbq.lock);
}

void cl_wbq_room_init(struct cl_wbq_room *r)
{
	r->req = 64 + 16 * 4; /* cred with a group token, count */
	r->rep = 4;
}

int cl_wbq_room_take(struct cl_wbq_room *r, uint32_t n, uint16_t opcode, uint32_t len)
{
	size_t need = 6 + (size_t)len, back = wire_batch_result_max(opcode);

	if (n > 0 && (r->req + need > WIRE_BODY_MAX || r->rep + back > WIRE_BODY_MAX))
		return 0;
	r->req += need;
	r->rep += back;
	return 1;
}

/* Takes the longest prefix of the queue one BATCH can carry (count, request and reply
 * sizes) into b, after the lost ones; returns its changes (chained), or NULL when
 * empty. */
static struct cl_wbq_change *take_batch(struct nacre_fs *fs, struct cl_wbq *q,
					struct wire_batch_req *b, struct cl_wbq_change **lost)
{
	struct cl_wbq_change *first, *c, **last;
	struct cl_wbq_room room;
	int64_t now = judged_at(fs);

	cl_wbq_room_init(&room);
	pthread_mutex_lock(&q->lock);
	take_lost(fs, q, now, lost);
	first = q->head;
	last = &q->head;
	b->count = 0;
	for (c = q->head; c && b->count < WIRE_BATCH_MAX; c = c->next) {
		if (!in_time(fs, c, now))
			break; /* lost: the next take finds it at the head */
		if (!cl_wbq_room_take(&room, b->count, c->opcode, c->len))
			break;
		b->ch[b->count++] = (struct wire_batch_change){c->opcode, c->len, c->body};
		last = &c->next;
	}
	q->head = *last;
	*last = NULL;
	if (!q->head)
		q->tail = NULL;
	__atomic_store_n(&q->count, q->count - b->count, __ATOMIC_RELEASE);
	__atomic_store_n(&q->inflight, q->inflight + b->count, __ATOMIC_RELEASE);
	if (q->count)
		q->first_ms = net_now_ms();
	pthread_mutex_unlock(&q->lock);
	return b->count ? first : NULL;
}

/* Logs a refused change and returns its parent's lease to give back. */
static void refused(struct nacre_fs *fs, const struct cl_wbq_change *c, int status)
{
	char f[NACRE_FID_STR_MAX];

	fid_format(&c->parent, f, sizeof(f));
	cl_log(fs, CL_LOG_WARN, "write-back: %s %s%s in directory %s refused by MDS %s: %s "
	       "(reported at the next fsync)", wire_opcode_name(c->opcode), c->name,
	       c->name[0] ? "" : "(an inode)", f, fs->addr, nacre_strerror(status));
}

/* Logs and frees the changes whose lease ran out before they were sent; the next fsync
 * fails with EIO. Returns the last one's journal sequence number (0 for none). */
static uint64_t report_lost(struct nacre_fs *fs, struct cl_wbq *q, struct cl_wbq_change *lost,
			struct nacre_fid *doubt, int *ndoubt, int max)
{
	uint64_t last = 0;

	while (lost) {
		struct cl_wbq_change *c = lost;
		char f[NACRE_FID_STR_MAX];
		lost = c->next;
		fid_format(&c->parent, f, sizeof(f));
		cl_log(fs, CL_LOG_ERR, "write-back: %s %s%s in directory %s lost: this mount's "
		       "lease ended before it reached MDS %s (the process was stopped or cut off "
		       "longer than %d ms, and was evicted); the next fsync fails with EIO",
		       wire_opcode_name(c->opcode), c->name, c->name[0] ? "" : "(an inode)", f,
		       fs->addr, WIRE_LEASE_MS);
		if (*ndoubt < max)
			doubt[(*ndoubt)++] = c->parent;
		pthread_mutex_lock(&q->lock);
		q->refused++;
		keep_error(q, &c->fsync_fid, -EIO);
		pthread_mutex_unlock(&q->lock);
		if (c->seq > last)
			last = c->seq;
		free(c);
	}
	return last;
}

int cl_wbq_call(struct nacre_fs *fs, const struct wire_batch_req *b, struct wire_batch_rep *r)
{
	struct wire_cursor req, rc_cur;
	struct rpc_msg *m = NULL;
	int rc;

	wire_cursor_init_dyn(&req, WIRE_BODY_MAX);
	wire_batch_req_encode(&req, b);
	rc = cl_mds_call(fs, WIRE_OP_MDS_BATCH, &req, &m);
	wire_cursor_fini(&req);
	if (rc == 0) {
		wire_cursor_init_read(&rc_cur, m->body, m->body_len);
		wire_batch_rep_decode(&rc_cur, r);
		rc = cl_decode_end(&rc_cur);
		if (!rc && r->count != b->count)
			rc = -EPROTO;
	}
	rpc_msg_free(m);
	return rc;
}

/* Sends one batch of the changes chained from first (b describes them). Returns 0 or the
 * first refusal; *doubt gets the parents of refused changes (up to max). */
static int send_batch(struct nacre_fs *fs, struct wire_batch_req *b, struct cl_wbq_change *first,
		      struct nacre_fid *doubt, int *ndoubt, int max)
{
	struct wire_batch_rep *r = calloc(1, sizeof(*r));
	struct cl_wbq_change *c;
	int rc, first_err = 0;

	if (!r)
		return -ENOMEM;
	rc = cl_wbq_call(fs, b, r);
	c = first;
	for (uint32_t i = 0; i < b->count && c; i++, c = c->next) {
		int st = rc ? rc : r->r[i].status;
		if (st == 0 || st == -EALREADY) /* made (the reply cache kept no result) */
			continue;
		refused(fs, c, st);
		pthread_mutex_lock(&fs->wbq.lock);
		fs->wbq.refused++;
		keep_error(&fs->wbq, &c->fsync_fid, st);
		pthread_mutex_unlock(&fs->wbq.lock);
		if (!first_err)
			first_err = st;
		if (*ndoubt < max)
			doubt[(*ndoubt)++] = c->parent;
	}
	free(r);
	return first_err;
}

/* Sends b's changes, halving a batch the MDS finds too big for one reply. */
static int send_split(struct nacre_fs *fs, struct wire_batch_req *b, struct cl_wbq_change *first,
		      struct nacre_fid *doubt, int *ndoubt, int max)
{
	int rc = send_batch(fs, b, first, doubt, ndoubt, max);

	if (rc != -E2BIG || b->count < 2)
		return rc;
	*ndoubt = 0; /* nothing ran */
	struct wire_batch_req *half = calloc(1, sizeof(*half));
	if (!half)
		return -ENOMEM;
	uint32_t n = b->count / 2;
	struct cl_wbq_change *second = first;
	for (uint32_t i = 0; i < n; i++)
		second = second->next;
	half->count = n;
	memcpy(half->ch, b->ch, n * sizeof(b->ch[0]));
	rc = send_split(fs, half, first, doubt, ndoubt, max);
	half->count = b->count - n;
	memcpy(half->ch, b->ch + n, half->count * sizeof(b->ch[0]));
	int rc2 = send_split(fs, half, second, doubt, ndoubt, max);
	free(half);
	return rc ? rc : rc2;
}

#define DOUBT_MAX 64

/* Changes queued, or in a BATCH not answered yet: a request that may depend on them must
 * wait for them. */
static int pending(struct cl_wbq *q)
{
	return __atomic_load_n(&q->count, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&q->inflight, __ATOMIC_ACQUIRE);
}

int cl_wbq_flush(struct nacre_fs *fs)
{
	struct cl_wbq *q = &fs->wbq;
	struct wire_batch_req *b;
	struct nacre_fid doubt[DOUBT_MAX];
	int ndoubt = 0, first_err = 0;

	if (!pending(q))
		return 0;
	b = malloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	pthread_mutex_lock(&q->flush_lock);
	for (;;) {
		struct cl_wbq_change *lost = NULL;
		memset(&b->cred, 0, sizeof(b->cred));
		struct cl_wbq_change *first = take_batch(fs, q, b, &lost);
		if (lost && !first_err)
			first_err = -EIO;
		uint64_t lost_last = report_lost(fs, q, lost, doubt, &ndoubt, DOUBT_MAX);
		if (!first) {
			if (lost_last && fs->wbj) /* reported: not for a recovery either */
				cl_wbj_done(fs->wbj, lost_last);
			break;
		}
		int64_t t0 = net_now_us();
		int rc = send_split(fs, b, first, doubt, &ndoubt, DOUBT_MAX);
		int64_t took = net_now_us() - t0;
		pthread_mutex_lock(&q->lock);
		__atomic_store_n(&q->inflight, q->inflight - b->count, __ATOMIC_RELEASE);
		q->batches++;
		q->sent += b->count;
		q->flush_us += (uint64_t)took;
		pthread_mutex_unlock(&q->lock);
		if (rc && !first_err)
			first_err = rc;
		uint64_t last = 0;
		while (first) {
			struct cl_wbq_change *c = first;
			first = c->next;
			last = c->seq;
			free(c);
		}
		if (last && fs->wbj)
			cl_wbj_done(fs->wbj, last);
	}
	pthread_mutex_unlock(&q->flush_lock);
	free(b);
	/* what a refused change's directory knows is wrong now: the lease layer gives its
	 * lease back before it answers anything again (cl_wbq_take_doubts) */
	pthread_mutex_lock(&q->lock);
	for (int i = 0; i < ndoubt; i++)
		if (q->ndoubts < CL_WBQ_DOUBTS)
			q->doubts[q->ndoubts++] = doubt[i];
		else
			q->doubt_all = 1;
	__atomic_store_n(&q->has_doubts, q->ndoubts || q->doubt_all, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&q->lock);
	return first_err;
}

void cl_wbq_bound(struct nacre_fs *fs)
{
	if (__atomic_load_n(&fs->wbq.count, __ATOMIC_ACQUIRE) >= CL_WBQ_MAX)
		cl_wbq_flush(fs);
}

int cl_wbq_take_doubts(struct nacre_fs *fs, struct nacre_fid *out, int max, int *all)
{
	struct cl_wbq *q = &fs->wbq;
	int n;

	*all = 0;
	if (!__atomic_load_n(&q->has_doubts, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&q->lock);
	n = q->ndoubts < max ? q->ndoubts : max;
	memcpy(out, q->doubts, (size_t)n * sizeof(*out));
	memmove(q->doubts, q->doubts + n, (size_t)(q->ndoubts - n) * sizeof(*out));
	q->ndoubts -= n;
	if (!q->ndoubts) {
		*all = q->doubt_all;
		q->doubt_all = 0;
	}
	__atomic_store_n(&q->has_doubts, q->ndoubts || q->doubt_all, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&q->lock);
	return n;
}

int cl_wbq_pending(struct nacre_fs *fs)
{
	return pending(&fs->wbq);
}

int cl_wbq_parents(struct nacre_fs *fs, struct nacre_fid *out, int n, int max)
{
	struct cl_wbq *q = &fs->wbq;

	pthread_mutex_lock(&q->lock);
	for (const struct cl_wbq_change *c = q->head; c && n < max; c = c->next) {
		int seen = 0;
		for (int i = n - 1; i >= 0 && !seen; i--) /* from the end: runs of one parent */
			seen = fid_eq(&out[i], &c->parent);
		if (!seen)
			out[n++] = c->parent;
	}
	pthread_mutex_unlock(&q->lock);
	return n;
}

int cl_wbq_error(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	struct cl_wbq *q = &fs->wbq;
	int err = 0;

	pthread_mutex_lock(&q->lock);
	for (int i = 0; i < q->nerrs && !err; i++) {
		if (fid_eq(&q->errs[i].fid, fid)) {
			err = q->errs[i].err;
			q->errs[i] = q->errs[--q->nerrs];
		}
	}
	if (!err) {
		err = q->err_any;
		q->err_any = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return err;
}
