/* destroy.c - drains the destroy log in the background. */
#include "mds/destroy.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "mds/db.h"
#include "mds/oss_pool.h"
#include "mds/writer.h"

struct mds_destroyer {
	struct mds *m;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int kicked; /* protected by lock */
	int stop;   /* protected by lock */
};

static int del_op(struct mds_txn *txn, void *arg)
{
	return mds_db_destroy_del(txn, *(uint64_t *)arg);
}

/* One pass over the log. Returns 1 if records remain (some OSS was down). */
static int pass(struct mds_destroyer *d)
{
	struct mds *m = d->m;
	uint64_t from = 0, seq;
	struct nacre_fid fid;
	struct nacre_layout *l = malloc(sizeof(*l));
	int left = 0;
	if (!l)
		return 1;
	for (;;) {
		struct mds_txn *txn;
		if (mds_txn_begin_read(m->db, &txn))
			break;
		int rc = mds_db_destroy_next(txn, from, &seq, &fid, l);
		mds_txn_abort(txn);
		if (rc)
			break;
		from = seq + 1;
		rc = mds_oss_destroy_objects(m, &fid, l);
		if (rc) {
			left = 1;
			continue;
		}
		rc = mds_writer_submit(m->writer, del_op, &seq);
		if (rc)
			left = 1;
		pthread_mutex_lock(&d->lock);
		int stop = d->stop;
		pthread_mutex_unlock(&d->lock);
		if (stop)
			break;
	}
	free(l);
	return left;
}

static void *destroy_main(void *arg)
{
	struct mds_destroyer *d = arg;
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		d->kicked = 0;
		pthread_mutex_unlock(&d->lock);
		int left = pass(d);
		pthread_mutex_lock(&d->lock);
		if (d->kicked || d->stop)
			continue;
		/* nothing new: sleep until kicked, or retry the leftovers in a while */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += left ? MDS_DESTROY_RETRY_MS / 1000 : 30;
		pthread_cond_timedwait(&d->cv, &d->lock, &ts);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int mds_destroyer_start(struct mds *m, struct mds_destroyer **out)
{
	struct mds_destroyer *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->m = m;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cv, NULL);
	int rc = pthread_create(&d->thread, NULL, destroy_main, d);
	if (rc) {
		free(d);
		return -rc;
	}
	*out = d;
	return 0;
}

void mds_destroyer_stop(struct mds_destroyer *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = 1;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

void mds_destroyer_kick(struct mds_destroyer *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->kicked = 1;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->lock);
}
