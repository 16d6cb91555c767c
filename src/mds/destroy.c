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

/* A round: the records read from the log at once, whose objects go to the OSSes in one
 * OST_DESTROY_BATCH per OST. A record is taken only while its objects still fit, so a round
 * always holds at least one (of at most NACRE_MAX_STRIPES objects). */
#define ROUND_RECORDS 256
#define ROUND_OBJECTS 4096
_Static_assert(ROUND_OBJECTS >= NACRE_MAX_STRIPES, "a round holds any one record");

struct round {
	uint64_t seq[ROUND_RECORDS];
	int rc[ROUND_RECORDS]; /* the first error among the record's objects, 0 if all gone */
	int nrec;
	struct mds_oss_obj objs[ROUND_OBJECTS]; /* tag = index into seq and rc */
	size_t nobj;
};

/* Log records whose objects are gone, removed in one commit. */
struct done_seqs {
	uint64_t seq[ROUND_RECORDS];
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

/* Reads records from *from on into r while they fit, and moves *from past them. Returns 1
 * if the log may hold more records after them, 0 at its end (or on a read error). */
static int read_round(struct mds *m, uint64_t *from, struct nacre_layout *l, struct round *r)
{
	struct mds_txn *txn;
	struct nacre_fid fid;
	uint64_t seq;
	int more = 1;

	r->nrec = 0;
	r->nobj = 0;
	if (mds_txn_begin_read(m->db, &txn))
		return 0;
	while (r->nrec < ROUND_RECORDS) {
		if (mds_db_destroy_next(txn, *from, &seq, &fid, l)) {
			more = 0;
			break;
		}
		uint32_t n = l->nosts <= NACRE_MAX_STRIPES ? l->nosts : NACRE_MAX_STRIPES;
		if (r->nobj + n > ROUND_OBJECTS)
			break; /* the next round starts with it */
		int k = r->nrec++;
		r->seq[k] = seq;
		r->rc[k] = 0;
		for (uint32_t i = 0; i < n; i++)
			r->objs[r->nobj++] = (struct mds_oss_obj){.fid = fid,
								  .ost_idx = l->ost_idx[i],
								  .stripe = i,
								  .gen = l->gen,
								  .tag = (uint32_t)k};
		*from = seq + 1;
	}
	mds_txn_abort(txn);
	return more;
}

/* One pass over the log, a round at a time. Returns 1 if records remain (some OSS was down
 * or failed). */
static int pass(struct mds_destroyer *d)
{
	struct mds *m = d->m;
	uint64_t from = 0;
	struct nacre_layout *l = malloc(sizeof(*l));
	struct round *r = malloc(sizeof(*r));
	struct done_seqs *done = calloc(1, sizeof(*done));
	int left = 0;
	if (!l || !r || !done) {
		left = 1;
		goto out_free;
	}
	for (;;) {
		int more = read_round(m, &from, l, r);
		if (r->nrec == 0)
			break;
		mds_oss_destroy_batch(m, r->objs, r->nobj);
		for (size_t i = 0; i < r->nobj; i++)
			if (r->objs[i].rc && !r->rc[r->objs[i].tag])
				r->rc[r->objs[i].tag] = r->objs[i].rc;
		/* a record stays while any of its objects may exist: retried later */
		for (int k = 0; k < r->nrec; k++) {
			if (r->rc[k])
				left = 1;
			else
				done->seq[done->n++] = r->seq[k];
		}
		left |= del_flush(m, done);
		if (!more)
			break;
		pthread_mutex_lock(&d->lock);
		int stop = d->stop;
		pthread_mutex_unlock(&d->lock);
		if (stop)
			break;
	}
out_free:
	free(l);
	free(r);
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
