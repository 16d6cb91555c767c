/* writer.c - group commit: one LMDB write transaction per batch of queued operations. */
#include "mds/writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/log.h"

struct op {
	mds_op_fn fn;
	void *arg;
	int rc;
	int done;        /* protected by writer.lock */
	struct op *next; /* protected by writer.lock */
};

/* Group commit by combining: there is no writer thread. A submitter that finds no batch
 * running takes every queued op and runs them in one transaction on its own thread; the
 * others wait and find their result when it finishes. An uncontended op thus costs no
 * thread hand-off, and under load the batches grow by themselves. */
struct mds_writer {
	struct mds_db *db;
	pthread_mutex_t lock;
	pthread_cond_t done_cv; /* broadcast when a batch is committed */
	struct op *head, *tail; /* queue; protected by lock */
	int busy;               /* a batch is running; protected by lock */
	int stop;               /* protected by lock */
};

/* Runs one batch. Each op gets a nested txn so its failure undoes only its own changes. */
static void run_batch(struct mds_writer *w, struct op *batch)
{
	struct mds_txn *txn;
	int rc = mds_txn_begin_write(w->db, &txn);
	if (rc) {
		for (struct op *o = batch; o; o = o->next)
			o->rc = rc;
		return;
	}
	int any_ok = 0;
	for (struct op *o = batch; o; o = o->next) {
		struct mds_txn *child;
		o->rc = mds_txn_begin_nested(txn, &child);
		if (o->rc)
			continue;
		o->rc = o->fn(child, o->arg);
		if (o->rc) {
			mds_txn_abort(child);
			continue;
		}
		o->rc = mds_txn_commit(child);
		if (!o->rc)
			any_ok = 1;
	}
	if (!any_ok) {
		mds_txn_abort(txn);
		return;
	}
	rc = mds_txn_commit(txn);
	if (rc) {
		LOG_ERR("writer", "group commit failed: %d", rc);
		for (struct op *o = batch; o; o = o->next)
			if (!o->rc)
				o->rc = rc;
	}
}

int mds_writer_create(struct mds_db *db, struct mds_writer **out)
{
	struct mds_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->db = db;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->done_cv, NULL);
	*out = w;
	return 0;
}

void mds_writer_destroy(struct mds_writer *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	while (w->busy || w->head) /* every queued op has a submitter that will run it */
		pthread_cond_wait(&w->done_cv, &w->lock);
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->done_cv);
	free(w);
}

int mds_writer_submit(struct mds_writer *w, mds_op_fn fn, void *arg)
{
	struct op o = {.fn = fn, .arg = arg};
	pthread_mutex_lock(&w->lock);
	if (w->stop) {
		pthread_mutex_unlock(&w->lock);
		return -ESHUTDOWN;
	}
	if (w->tail)
		w->tail->next = &o;
	else
		w->head = &o;
	w->tail = &o;
	while (!o.done) {
		if (w->busy) {
			pthread_cond_wait(&w->done_cv, &w->lock);
			continue;
		}
		/* Nobody is committing: this thread runs everything queued as one batch. */
		struct op *batch = w->head;
		w->head = w->tail = NULL;
		w->busy = 1;
		pthread_mutex_unlock(&w->lock);

		run_batch(w, batch);

		pthread_mutex_lock(&w->lock);
		for (struct op *b = batch, *next; b; b = next) {
			next = b->next; /* b lives on its submitter's stack: read next first */
			b->done = 1;
		}
		w->busy = 0;
		/* wakes this batch's submitters and those queued meanwhile (one of them
		 * runs the next batch) */
		pthread_cond_broadcast(&w->done_cv);
	}
	pthread_mutex_unlock(&w->lock);
	return o.rc;
}
