/* lock_wait.c - libnacre's blocking lock requests (nacre.h, nacre_lock_wait): a LOCK_WAIT the
 * MDS parks until it grants it, and LOCK_CANCEL from another thread.
 *
 * A cancel must reach the MDS after the LOCK_WAIT it cancels was sent (the MDS refuses a
 * LOCK_WAIT that arrives after a cancel sent later): so the waiting thread marks its wait
 * as out only once rpc_start gave it its xid, and whichever of it and the canceling thread
 * sees both "out" and "canceled" first sends the cancel. The cancel's reply is collected by
 * the waiting thread, so the canceling one (a FUSE interrupt) never waits for the MDS.
 *
 * Every parked LOCK_WAIT holds one of the MDS connection's in-flight requests on the MDS:
 * at most CL_LOCK_WAITS_MAX are out at once; more wait here, asking with LOCK_SET now and
 * then, until a slot frees. An MDS that does not know LOCK_WAIT is asked that way too.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/lock.h"
#include "client/mdc.h"

#define CL_LOCK_WAITS_MAX 8 /* of the MDS's 32 in-flight requests per connection */
#define POLL_MIN_MS 2       /* an overflowing wait's first pause between LOCK_SETs */
#define POLL_MAX_MS 100

struct nacre_lock_wait {
	struct nacre_fs *fs;
	struct wire_lock_req r;
	/* fs->waits_lock: */
	int canceled;               /* nacre_lock_wait_cancel was called */
	int out;                    /* the LOCK_WAIT went out: a cancel goes to the MDS */
	int done;                   /* it came back: nothing is left to cancel */
	int cancel_busy;            /* a thread is sending the cancel */
	struct rpc_pending *cancel; /* the cancel sent, for nacre_lock_wait to collect */
};

NACRE_API int nacre_lock_wait_create(struct nacre_fs *fs, const struct nacre_cred *cr,
				     const struct nacre_fid *fid, int kind, uint64_t owner,
				     const struct nacre_lock *l, struct nacre_lock_wait **out)
{
	struct nacre_lock_wait *w;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	rc = cl_lock_req(fs, cr, fid, kind, owner, l, &w->r);
	if (rc) {
		free(w);
		return rc;
	}
	w->fs = fs;
	*out = w;
	return 0;
}

NACRE_API void nacre_lock_wait_destroy(struct nacre_lock_wait *w)
{
	free(w);
}

/* Starts a call of opcode with body r on the MDS connection. 0 or a negative error. */
static int start(struct nacre_fs *fs, uint16_t opcode, uint32_t flags,
		 const struct wire_lock_req *r, struct rpc_pending **p)
{
	struct rpc_call_args a = {.opcode = opcode, .flags = flags | RPC_IDEMPOTENT};
	struct wire_cursor c;
	int rc;

	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_lock_req_encode(&c, r);
	a.body = c.buf;
	a.body_len = (uint32_t)wire_cursor_pos(&c);
	rc = wire_cursor_ok(&c) ? rpc_start(fs->mds, &a, p) : -EINVAL; /* the body is copied */
	wire_cursor_fini(&c);
	return rc;
}

/* Sends the cancel of w, whose caller set cancel_busy, and leaves its pending call to w. */
static void cancel_send(struct nacre_lock_wait *w)
{
	struct nacre_fs *fs = w->fs;
	struct rpc_pending *p = NULL;

	if (start(fs, WIRE_OP_MDS_LOCK_CANCEL, 0, &w->r, &p) < 0) {
		cl_log(fs, CL_LOG_WARN, "MDS %s: cannot send a lock cancel: the wait goes on until "
		       "the lock is granted", fs->addr);
		p = NULL;
	}
	pthread_mutex_lock(&fs->waits_lock);
	w->cancel = p;
	w->cancel_busy = 0;
	pthread_cond_broadcast(&fs->waits_cond);
	pthread_mutex_unlock(&fs->waits_lock);
}

/* 1 (and cancel_busy set) if the caller is to send w's cancel now. With waits_lock held. */
static int cancel_due(struct nacre_lock_wait *w)
{
	if (!w->canceled || !w->out || w->done || w->cancel_busy || w->cancel)
		return 0;
	w->cancel_busy = 1;
	return 1;
}

NACRE_API void nacre_lock_wait_cancel(struct nacre_lock_wait *w)
{
	struct nacre_fs *fs;
	int send;

	if (!w)
		return;
	fs = w->fs;
	pthread_mutex_lock(&fs->waits_lock);
	w->canceled = 1;
	send = cancel_due(w);
	pthread_cond_broadcast(&fs->waits_cond); /* a wait for a slot gives up */
	pthread_mutex_unlock(&fs->waits_lock);
	if (send)
		cancel_send(w);
}

/* Waits on waits_cond (held) for up to ms. */
static void pause_ms(struct nacre_fs *fs, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&fs->waits_cond, &fs->waits_lock, &ts);
}

/* Asks with LOCK_SET, pausing a little longer each time, until the lock is granted (0),
 * the wait is canceled (-EINTR), LOCK_SET fails otherwise, or, if for_slot, one of the MDS
 * slots is free: then it is taken and the result is 1. */
static int poll_set(struct nacre_lock_wait *w, int for_slot)
{
	struct nacre_fs *fs = w->fs;
	int ms = POLL_MIN_MS, rc;

	pthread_mutex_lock(&fs->waits_lock);
	for (;;) {
		if (w->canceled) {
			rc = -EINTR;
			break;
		}
		if (for_slot && fs->lock_waits < CL_LOCK_WAITS_MAX) {
			fs->lock_waits++;
			rc = 1;
			break;
		}
		pthread_mutex_unlock(&fs->waits_lock);
		rc = cl_lock_set_req(fs, &w->r);
		pthread_mutex_lock(&fs->waits_lock);
		if (rc != -EAGAIN)
			break;
		if (!w->canceled && !(for_slot && fs->lock_waits < CL_LOCK_WAITS_MAX))
			pause_ms(fs, ms);
		ms = ms * 2 > POLL_MAX_MS ? POLL_MAX_MS : ms * 2;
	}
	pthread_mutex_unlock(&fs->waits_lock);
	return rc;
}

NACRE_API int nacre_lock_wait(struct nacre_lock_wait *w)
{
	struct rpc_pending *p = NULL, *cp;
	struct rpc_msg *m = NULL;
	struct nacre_fs *fs;
	int rc, send = 0;

	if (!w)
		return -EINVAL;
	fs = w->fs;
	if (w->r.type == WIRE_LK_UNLCK)
		return cl_lock_set_req(fs, &w->r); /* never waits */
	rc = poll_set(w, 1);
	if (rc != 1)
		return rc;
	rc = start(fs, WIRE_OP_MDS_LOCK_WAIT, RPC_NO_TIMEOUT, &w->r, &p);
	pthread_mutex_lock(&fs->waits_lock);
	w->out = rc == 0;
	send = cancel_due(w); /* canceled before it had its xid: the cancel is ours to send */
	pthread_mutex_unlock(&fs->waits_lock);
	if (send)
		cancel_send(w);
	if (rc == 0) {
		rc = rpc_wait(p, &m);
		rc = cl_mds_result(fs, WIRE_OP_MDS_LOCK_WAIT, rc, m, &m);
		rpc_msg_free(m);
	}
	pthread_mutex_lock(&fs->waits_lock);
	w->done = 1;
	fs->lock_waits--;
	pthread_cond_broadcast(&fs->waits_cond); /* a slot is free */
	while (w->cancel_busy)
		pthread_cond_wait(&fs->waits_cond, &fs->waits_lock);
	cp = w->cancel;
	w->cancel = NULL;
	pthread_mutex_unlock(&fs->waits_lock);
	if (cp) {
		struct rpc_msg *cm = NULL;
		rpc_wait(cp, &cm); /* answered right after the wait ended */
		rpc_msg_free(cm);
	}
	if (rc == -EOPNOTSUPP)
		return poll_set(w, 0); /* an MDS from before LOCK_WAIT */
	if (rc == 0)
		cl_lock_granted(fs, &w->r);
	return rc;
}
