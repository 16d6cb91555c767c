/* writer.c - group commit: one LMDB write transaction per batch of queued operations. */
#include "mds/writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/fault.h"
#include "common/log.h"
#include "mds/req.h"
#include "mds/space.h"
#include "nacre/nacre_errno.h"

struct op {
	mds_op_fn fn;
	void *arg;
	struct mds_req *req; /* the request it is made for, or NULL */
	uint64_t transno;    /* assigned in the batch */
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
	struct mds_space *space; /* may be NULL; set before the first submit */
	pthread_mutex_t lock;
	pthread_cond_t done_cv; /* broadcast when a batch is committed */
	struct op *head, *tail; /* queue; protected by lock */
	int busy;               /* a batch is running; protected by lock */
	int stop;               /* protected by lock */
	uint64_t next_transno;  /* the batch runner's (one at a time) */
	uint64_t committed;     /* last transno committed; atomic */
	uint64_t synced;        /* last transno on disk; atomic */
	pthread_mutex_t sync_lock; /* one sync at a time, so synced only grows */
};

/* The reply-cache side of an op made for a request: its record, the trim of what the client
 * acknowledged, the session record of a client's first change. In the op's nested txn. */
static int record(struct mds_txn *child, struct op *o)
{
	const struct mds_req *r = o->req;
	struct mds_reply_rec rec = {.transno = o->transno};
	const struct mds_txn_note *n = mds_txn_noted(child);
	int rc = 0;

	if (n->set) {
		rec.fid = n->fid;
		rec.value = n->value;
	}
	if (r->persist_client)
		rc = mds_db_client_put(child, r->client_id, r->client_name);
	if (!rc && r->trim_below)
		rc = mds_db_reply_trim(child, r->client_id, r->trim_below);
	if (!rc)
		rc = mds_db_reply_put(child, r->client_id, r->xid, &rec);
	return rc;
}

/* Runs one batch. Each op gets a nested txn so its failure undoes only its own changes. */
static void run_batch(struct mds_writer *w, struct op *batch)
{
	struct fault_hit hit = {0};
	struct mds_txn *txn;
	uint64_t transno = w->next_transno;
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
		mds_txn_set_owner(child, o->req);
		o->rc = o->fn(child, o->arg);
		if (!o->rc && o->req && o->req->record) {
			o->transno = transno + 1;
			o->rc = record(child, o);
			if (!o->rc)
				o->req->note = *mds_txn_noted(child);
		}
		if (o->rc) {
			mds_txn_abort(child);
			continue;
		}
		o->rc = mds_txn_commit(child);
		if (!o->rc) {
			any_ok = 1;
			if (o->transno)
				transno = o->transno;
		}
	}
	if (!any_ok) {
		mds_txn_abort(txn);
		return;
	}
	if (transno != w->next_transno)
		rc = mds_db_transno_put(txn, transno);
	if (!rc && NACRE_FAULT(FAULT_MDS_DB_FULL, &hit))
		rc = hit.action == FAULT_ACT_ERROR ? hit.err : -ENOSPC;
	if (!rc && NACRE_FAULT(FAULT_MDS_COMMIT_BEFORE, &hit)) {
		if (hit.action == FAULT_ACT_ERROR)
			rc = hit.err;
		else
			fault_crash(FAULT_MDS_COMMIT_BEFORE);
	}
	if (rc) {
		mds_txn_abort(txn);
	} else {
		mds_space_before_commit(w->space);
		rc = mds_txn_commit(txn);
	}
	if (rc == -ENOSPC)
		mds_space_commit_failed(w->space);
	if (rc) {
		LOG_RATELIMITED(LOG_LVL_ERR, "writer", "group commit failed: %s",
				nacre_strerror(rc));
		for (struct op *o = batch; o; o = o->next)
			if (!o->rc)
				o->rc = rc;
		return;
	}
	w->next_transno = transno;
	__atomic_store_n(&w->committed, transno, __ATOMIC_RELEASE);
	for (struct op *o = batch; o; o = o->next)
		if (!o->rc && o->req)
			o->req->transno = o->transno;
	if (NACRE_FAULT(FAULT_MDS_COMMIT_AFTER, &hit) && hit.action != FAULT_ACT_ERROR)
		fault_crash(FAULT_MDS_COMMIT_AFTER); /* committed, nobody answered */
}

int mds_writer_create(struct mds_db *db, struct mds_writer **out)
{
	struct mds_txn *txn;
	uint64_t last = 0;
	int rc = mds_txn_begin_read(db, &txn);
	if (rc)
		return rc;
	rc = mds_db_transno_get(txn, &last);
	mds_txn_abort(txn);
	if (rc)
		return rc;
	struct mds_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->db = db;
	w->next_transno = w->committed = w->synced = last;
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->sync_lock, NULL);
	pthread_cond_init(&w->done_cv, NULL);
	*out = w;
	return 0;
}

void mds_writer_set_space(struct mds_writer *w, struct mds_space *space)
{
	w->space = space;
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
	pthread_mutex_destroy(&w->sync_lock);
	pthread_cond_destroy(&w->done_cv);
	free(w);
}

int mds_writer_submit(struct mds_writer *w, mds_op_fn fn, void *arg)
{
	struct op o = {.fn = fn, .arg = arg, .req = mds_req_current};
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

int mds_writer_sync(struct mds_writer *w)
{
	pthread_mutex_lock(&w->sync_lock);
	/* what is committed now is on disk once the sync returns */
	uint64_t upto = __atomic_load_n(&w->committed, __ATOMIC_ACQUIRE);
	int rc = mds_db_sync(w->db);
	if (!rc && upto > __atomic_load_n(&w->synced, __ATOMIC_RELAXED))
		__atomic_store_n(&w->synced, upto, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&w->sync_lock);
	return rc;
}

uint64_t mds_writer_last_committed(const struct mds_writer *w)
{
	return __atomic_load_n(&w->synced, __ATOMIC_ACQUIRE);
}

uint64_t mds_writer_last_transno(const struct mds_writer *w)
{
	return __atomic_load_n(&w->committed, __ATOMIC_ACQUIRE);
}
