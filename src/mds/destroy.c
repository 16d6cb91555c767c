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

/* Log records whose objects are gone, removed in one commit. */
#define DEL_BATCH 64
struct done_seqs {
	uint64_t seq[DEL_BATCH];
	int n;
};

static int del_op(struct mds_txn *txn, void *arg)
{
	const struct done_seqs *d = arg;
	for (int i = 0; i < d->n; i++) {
		int rc = mds_db_destroy_del(txn, d->seq[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/* Returns 1 if the records could not be removed (they are destroyed again later: harmless,
 * a missing object is fine). */
static int del_flush(struct mds *m, struct done_seqs *done)
{
	int rc = done->n ? mds_writer_submit(m->writer, del_op, done) : 0;
	done->n = 0;
	return rc != 0;
}

/* One pass over the log. Returns 1 if records remain (some OSS was down). */
static int pass(struct mds_destroyer *d)
{
	struct mds *m = d->m;
	uint64_t from = 0, seq;
	struct nacre_fid fid;
	struct nacre_layout *l = malloc(sizeof(*l));
	struct done_seqs *done = calloc(1, sizeof(*done));
	int left = 0;
	if (!l || !done) {
		free(l);
		free(done);
		return 1;
	}
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
		done->seq[done->n++] = seq;
		if (done->n == DEL_BATCH)
			left |= del_flush(m, done);
		pthread_mutex_lock(&d->lock);
		int stop = d->stop;
		pthread_mutex_unlock(&d->lock);
		if (stop)
			break;
	}
	left |= del_flush(m, done);
	free(l);
	free(done);
	return left;
}

static void *destroy_main(void *arg)
{
	struct mds_destroyer *d = arg;
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		d->kicked = 0;
		pthread_mutex_unlock(&d->lock);
		/* let a stream of unlinks queue up first, so that one pass and few commits
		 * handle many of them */
		struct timespec coalesce = {0, MDS_DESTROY_COALESCE_MS * 1000000L};
		nanosleep(&coalesce, NULL);
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
