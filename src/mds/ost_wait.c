/* ost_wait.c - creates wait for the OSTs after a start (see ost_wait.h). */
#include "mds/ost_wait.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "common/net.h"
#include "mds/targets.h"

struct parked {
	struct parked *next;
	struct rpc_deferred *d;
	uint64_t conn_id;
};

struct mds_ost_wait {
	struct mds *m;
	pthread_mutex_t lock; /* protects everything below but over */
	pthread_cond_t cond;  /* an OST registered, or stop */
	int over;             /* atomic: requests pass */
	int64_t start_ms, end_ms;
	struct parked *q;     /* in arrival order */
	int nparked;
	int stop;
	int has_thread;
	pthread_t thread;
};

int mds_ost_wait_needed(uint16_t opcode)
{
	return wire_op_has(opcode, WIRE_OPF_OST_OBJECTS);
}

/* Ends the wait: returns the parked requests, for resuming after the lock is dropped.
 * Caller holds w->lock. */
static struct parked *finish(struct mds_ost_wait *w, int down)
{
	struct parked *q = w->q;
	int64_t waited = net_now_ms() - w->start_ms;

	w->q = NULL;
	__atomic_store_n(&w->over, 1, __ATOMIC_RELEASE);
	if (down)
		LOG_WARN("ost_wait", "%d OST%s not back %lld ms after the start: creating files on "
				     "the OSTs that are up (%d creates waited)",
			 down, down == 1 ? " is" : "s are", (long long)waited, w->nparked);
	else
		LOG_INFO("ost_wait", "every OST is back after %lld ms: creates go on (%d waited)",
			 (long long)waited, w->nparked);
	return q;
}

static void resume(struct parked *q)
{
	while (q) {
		struct parked *p = q;
		q = p->next;
		rpc_resume(p->d);
		free(p);
	}
}

static void *wait_main(void *arg)
{
	struct mds_ost_wait *w = arg;
	struct parked *q = NULL;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		int down = mds_targets_down(w->m->targets);
		int64_t now = net_now_ms();
		if (down == 0 || now >= w->end_ms) {
			q = finish(w, down);
			break;
		}
		struct timespec ts;
		int64_t left = w->end_ms - now;
		time_after_ms(&ts, CLOCK_MONOTONIC, left);
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	}
	pthread_mutex_unlock(&w->lock);
	resume(q);
	return NULL;
}

int mds_ost_wait_create(struct mds *m, int grace_ms, struct mds_ost_wait **out)
{
	struct mds_ost_wait *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	int down;

	if (!w)
		return -ENOMEM;
	w->m = m;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	w->start_ms = net_now_ms();
	w->end_ms = w->start_ms + (grace_ms > 0 ? grace_ms : MDS_OST_GRACE_MS);
	down = mds_targets_down(m->targets);
	*out = w;
	if (down == 0) {
		w->over = 1;
		return 0;
	}
	LOG_INFO("ost_wait", "creates wait up to %lld ms for the %d OST%s this MDT knows to "
			     "register again",
		 (long long)(w->end_ms - w->start_ms), down, down == 1 ? "" : "s");
	if (pthread_create(&w->thread, NULL, wait_main, w) != 0) {
		mds_ost_wait_destroy(w);
		*out = NULL;
		return -EAGAIN;
	}
	w->has_thread = 1;
	return 0;
}

void mds_ost_wait_destroy(struct mds_ost_wait *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (w->has_thread)
		pthread_join(w->thread, NULL);
	while (w->q) {
		struct parked *p = w->q;
		w->q = p->next;
		free(p);
	}
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int mds_ost_wait_admit(struct mds_ost_wait *w, const struct rpc_request *req)
{
	struct parked *p, **tail;

	if (!w || __atomic_load_n(&w->over, __ATOMIC_ACQUIRE))
		return MDS_OST_WAIT_PASS;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&w->lock);
	if (w->over || w->stop) {
		pthread_mutex_unlock(&w->lock);
		free(p);
		return MDS_OST_WAIT_PASS;
	}
	p->d = rpc_defer(req);
	p->conn_id = req->conn_id;
	for (tail = &w->q; *tail; tail = &(*tail)->next)
		;
	*tail = p;
	w->nparked++;
	pthread_mutex_unlock(&w->lock);
	return RPC_DEFER;
}

void mds_ost_wait_kick(struct mds_ost_wait *w)
{
	if (!w || __atomic_load_n(&w->over, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&w->lock);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void mds_ost_wait_disconnect(struct mds_ost_wait *w, uint64_t conn_id)
{
	struct parked *gone = NULL;

	if (!w || __atomic_load_n(&w->over, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&w->lock);
	for (struct parked **q = &w->q; *q;) {
		struct parked *p = *q;
		if (p->conn_id != conn_id) {
			q = &p->next;
			continue;
		}
		*q = p->next;
		p->next = gone;
		gone = p;
	}
	pthread_mutex_unlock(&w->lock);
	while (gone) {
		struct parked *p = gone;
		gone = p->next;
		rpc_answer(p->d, 0, NULL, 0, NULL); /* the connection is gone: nobody hears it */
		free(p);
	}
}
