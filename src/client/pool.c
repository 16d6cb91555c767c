/* pool.c - the I/O pool of an fs: a few threads that run object RPCs in the background,
 * at most max_inflight at once per OST index (see cl_data.h).
 *
 * Threads start on demand (a job queued while none is idle) up to CL_POOL_THREADS_MAX and
 * stay until umount. A worker takes the first queued job whose OST has a free slot, so one
 * slow OST does not hold back the others.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_data.h"

#define OST_SLOTS 65536u /* OST indices are 16-bit on the wire (OST%04x) */
#define FREE_BUFS_MAX 16 /* rpc-sized buffers kept for reuse */

int cl_pool_init(struct cl_pool *p, int max_inflight, uint32_t buf_size)
{
	memset(p, 0, sizeof(*p));
	p->inflight = calloc(OST_SLOTS, sizeof(*p->inflight));
	p->max_ost = calloc(OST_SLOTS, sizeof(*p->max_ost));
	p->bufs = calloc(FREE_BUFS_MAX, sizeof(*p->bufs));
	if (!p->inflight || !p->max_ost || !p->bufs) {
		free(p->inflight);
		free(p->max_ost);
		free(p->bufs);
		return -ENOMEM;
	}
	p->max_inflight = max_inflight > 0 ? max_inflight : 1;
	p->buf_size = buf_size;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work_cond, NULL);
	pthread_cond_init(&p->space_cond, NULL);
	return 0;
}

/* The first queued job whose OST has a free slot, unlinked; NULL if none. Under p->lock. */
static struct cl_job *take_locked(struct cl_pool *p)
{
	struct cl_job **pp = &p->head, *prev = NULL;

	for (struct cl_job *j = p->head; j; prev = j, pp = &j->next, j = j->next) {
		uint32_t slot = j->ost % OST_SLOTS;

		if (p->inflight[slot] >= (p->max_ost[slot] ? p->max_ost[slot] : p->max_inflight))
			continue;
		*pp = j->next;
		if (p->tail == j)
			p->tail = prev;
		j->next = NULL;
		return j;
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct cl_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct cl_job *j = take_locked(p);

		if (!j) {
			if (p->stopping)
				break;
			p->idle++;
			pthread_cond_wait(&p->work_cond, &p->lock);
			p->idle--;
			continue;
		}
		uint32_t slot = j->ost % OST_SLOTS;
		p->inflight[slot]++;
		pthread_mutex_unlock(&p->lock);
		j->run(j); /* j may be gone after this */
		pthread_mutex_lock(&p->lock);
		p->inflight[slot]--;
		/* A job held back by this OST's limit may go now. */
		if (p->head)
			pthread_cond_signal(&p->work_cond);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int cl_pool_max(struct cl_pool *p, int ost)
{
	int v;

	pthread_mutex_lock(&p->lock);
	v = ost >= 0 && p->max_ost[(uint32_t)ost % OST_SLOTS] ? p->max_ost[(uint32_t)ost % OST_SLOTS]
							      : p->max_inflight;
	pthread_mutex_unlock(&p->lock);
	return v;
}

void cl_pool_set_max(struct cl_pool *p, int ost, int max)
{
	if (max < 1)
		max = 1;
	if (max > 65535)
		max = 65535;
	pthread_mutex_lock(&p->lock);
	if (ost < 0) {
		p->max_inflight = max;
		memset(p->max_ost, 0, OST_SLOTS * sizeof(*p->max_ost));
	} else {
		p->max_ost[(uint32_t)ost % OST_SLOTS] = (uint16_t)max;
	}
	/* A raised limit lets held-back jobs go now. */
	pthread_cond_broadcast(&p->work_cond);
	pthread_mutex_unlock(&p->lock);
}

int cl_pool_submit(struct cl_pool *p, struct cl_job *j)
{
	int rc = 0;

	j->next = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->idle == 0 && p->nthreads < CL_POOL_THREADS_MAX) {
		if (pthread_create(&p->threads[p->nthreads], NULL, worker_main, p) == 0)
			p->nthreads++;
		else if (p->nthreads == 0)
			rc = -EAGAIN;
	}
	if (rc == 0) {
		if (p->tail)
			p->tail->next = j;
		else
			p->head = j;
		p->tail = j;
		pthread_cond_signal(&p->work_cond);
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void cl_pool_fini(struct cl_pool *p)
{
	if (!p->inflight)
		return; /* never initialized */
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	pthread_cond_broadcast(&p->work_cond);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	for (int i = 0; i < p->nbufs; i++)
		free(p->bufs[i]);
	free(p->bufs);
	free(p->inflight);
	free(p->max_ost);
	pthread_cond_destroy(&p->space_cond);
	pthread_cond_destroy(&p->work_cond);
	pthread_mutex_destroy(&p->lock);
	memset(p, 0, sizeof(*p));
}

uint8_t *cl_pool_buf_get(struct cl_pool *p)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->nbufs > 0)
		b = p->bufs[--p->nbufs];
	pthread_mutex_unlock(&p->lock);
	return b ? b : malloc(p->buf_size);
}

void cl_pool_buf_put(struct cl_pool *p, uint8_t *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->nbufs < FREE_BUFS_MAX) {
		p->bufs[p->nbufs++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	free(b);
}
