/* hsm_coord.c - the HSM coordinator's start and stop, and its thread: timeouts, purge, queue
 * gauges and the policy, once a second. The coordinator's files: hsm_int.h. */
#include "mds/hsm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/metrics.h"
#include "mds/hsm_int.h"
#include "mds/writer.h"

static void *coordinator(void *arg)
{
	struct mds_hsm *h = arg;
	int64_t last_purge = now_ms(), last_policy = now_ms();
	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&h->tick, &h->lock, &ts);
		if (h->stop)
			break;
		pthread_mutex_unlock(&h->lock);
		mds_hsm_check_timeouts(h);
		mds_hsm_count_queue(h);
		int64_t now = now_ms();
		if (now - last_purge > 10000) {
			mds_hsm_purge(h);
			last_purge = now;
		}
		if ((h->conf.archive_age_s > 0 || h->conf.release_high > 0) &&
		    now - last_policy > (int64_t)h->conf.policy_period_s * 1000) {
			mds_hsm_run_policy(h);
			last_policy = now;
		}
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* ---------------- start / stop ---------------- */

struct recover_arg {
	uint64_t last;
	uint32_t requeued;
};

static int recover_op(struct mds_txn *txn, void *arg)
{
	struct recover_arg *a = arg;
	struct mds_hsm_rec *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	int rc = mds_db_hsm_last(txn, &a->last);
	for (uint64_t from = 0; !rc && mds_db_hsm_next(txn, from, r) == 0; from = r->a.cookie + 1) {
		if (r->a.status != NACRE_HAS_STARTED)
			continue;
		r->a.status = NACRE_HAS_WAITING;
		r->a.bytes_done = 0;
		rc = mds_db_hsm_put(txn, r);
		a->requeued++;
		if (r->a.cookie == UINT64_MAX)
			break;
	}
	free(r);
	return rc;
}

int mds_hsm_start(struct mds *m, const struct mds_hsm_conf *conf, struct mds_hsm **out)
{
	struct mds_hsm *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->m = m;
	h->conf = *conf;
	if (!h->conf.max_active)
		h->conf.max_active = 64;
	if (!h->conf.timeout_s)
		h->conf.timeout_s = 120;
	if (!h->conf.grace_s)
		h->conf.grace_s = 300;
	if (!h->conf.default_archive)
		h->conf.default_archive = 1;
	if (!h->conf.policy_period_s)
		h->conf.policy_period_s = 30;
	if (h->conf.release_high > 0 && h->conf.release_low >= h->conf.release_high)
		h->conf.release_low = h->conf.release_high - 1;
	h->m_active = metrics_gauge("nacre_mds_hsm_active_actions", "",
				    "HSM actions STARTED now (at most --hsm-max-active)");
	h->m_active_max = metrics_gauge("nacre_mds_hsm_active_actions_max", "",
					"most HSM actions STARTED at once since the MDS started");
	h->m_started = metrics_counter("nacre_mds_hsm_actions_started_total", "",
				       "HSM actions handed to copytools");
	h->m_waiting = metrics_gauge("nacre_mds_hsm_actions", "status=\"WAITING\"",
				     "HSM actions in the coordinator queue by status "
				     "(counted every second)");
	h->m_queued_started = metrics_gauge("nacre_mds_hsm_actions", "status=\"STARTED\"",
					    "HSM actions in the coordinator queue by status "
					    "(counted every second)");
	/* plain gauges, not callbacks: the registry outlives h */
	metrics_set(metrics_gauge("nacre_mds_hsm_max_active", "", "the --hsm-max-active setting"),
		    h->conf.max_active);
	h->act = calloc(h->conf.max_active, sizeof(*h->act));
	if (!h->act) {
		free(h);
		return -ENOMEM;
	}
	struct recover_arg ra = {0, 0};
	int rc = mds_writer_submit(m->writer, recover_op, &ra);
	if (rc) {
		free(h->act);
		free(h);
		return rc;
	}
	if (ra.requeued)
		LOG_INFO("hsm", "%u actions started before the restart are WAITING again",
			 ra.requeued);
	h->next_cookie = ra.last + 1;
	mds_hsm_policy_init(h);
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->work, NULL);
	pthread_cond_init(&h->tick, NULL);
	rc = -pthread_create(&h->thread, NULL, coordinator, h);
	if (rc) {
		mds_hsm_policy_fini(h);
		free(h->act);
		free(h);
		return rc;
	}
	*out = h;
	return 0;
}

void mds_hsm_stop(struct mds_hsm *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = 1;
	pthread_cond_broadcast(&h->tick);
	pthread_cond_broadcast(&h->work);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	pthread_cond_destroy(&h->work);
	pthread_cond_destroy(&h->tick);
	pthread_mutex_destroy(&h->lock);
	mds_hsm_policy_fini(h);
	free(h->act);
	free(h);
}
