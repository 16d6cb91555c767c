/* probe.c - the MDS's probe of the OSSes (probe.h). */
#include "mds/probe.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "mds/oss_pool.h"
#include "mds/targets.h"

#define PROBE_ADDRS_MAX 1024

struct mds_probe {
	struct mds *m;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop; /* lock */
	char (*addrs)[NACRE_ADDR_MAX + 1];
};

/* Waits ms or until stopped: 1 if stopped. */
static int pause_ms(struct mds_probe *p, int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->lock);
	while (!p->stop && pthread_cond_timedwait(&p->cond, &p->lock, &ts) != ETIMEDOUT) {
	}
	int stop = p->stop;
	pthread_mutex_unlock(&p->lock);
	return stop;
}

static void *probe_main(void *arg)
{
	struct mds_probe *p = arg;

	while (!pause_ms(p, MDS_PROBE_EVERY_MS)) {
		int n = mds_targets_addrs(p->m->targets, p->addrs, PROBE_ADDRS_MAX);
		for (int i = 0; i < n; i++) {
			int rc = mds_oss_ping(p->m, p->addrs[i], MDS_PROBE_TIMEOUT_MS);
			mds_targets_reachable(p->m, p->addrs[i], rc == 0);
		}
	}
	return NULL;
}

int mds_probe_start(struct mds *m, struct mds_probe **out)
{
	struct mds_probe *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->addrs = calloc(PROBE_ADDRS_MAX, sizeof(*p->addrs));
	if (!p->addrs) {
		free(p);
		return -ENOMEM;
	}
	p->m = m;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	int rc = pthread_create(&p->thread, NULL, probe_main, p);
	if (rc) {
		free(p->addrs);
		free(p);
		return -rc;
	}
	*out = p;
	return 0;
}

void mds_probe_stop(struct mds_probe *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->addrs);
	free(p);
}
