/* syncer.c - the MDS's commit-interval thread (see syncer.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/syncer.h"
#include "nacre/nacre_errno.h"

struct mds_syncer {
	struct mds_writer *w;
	int interval_ms;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop; /* protected by lock */
};

static void *syncer_main(void *arg)
{
	struct mds_syncer *s = arg;
	int rc, failing = 0;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct timespec ts;

		time_after_ms(&ts, CLOCK_REALTIME, s->interval_ms);
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		pthread_mutex_unlock(&s->lock);
		/* A sync with nothing new to flush is a cheap no-op in LMDB. */
		rc = mds_writer_sync(s->w);
		if (rc && !failing)
			LOG_ERR("syncer", "cannot flush metadata to disk: %s (will retry)",
				nacre_strerror(rc));
		else if (!rc && failing)
			LOG_INFO("syncer", "metadata flushes work again");
		failing = rc != 0;
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int mds_syncer_start(struct mds_writer *w, int interval_ms, struct mds_syncer **out)
{
	struct mds_syncer *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->w = w;
	s->interval_ms = interval_ms > 0 ? interval_ms : 1000;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (pthread_create(&s->thread, NULL, syncer_main, s) != 0) {
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
		free(s);
		return -EAGAIN;
	}
	*out = s;
	return 0;
}

void mds_syncer_stop(struct mds_syncer *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	mds_writer_sync(s->w); /* a clean stop leaves everything on disk */
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}
