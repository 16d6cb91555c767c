/* writer.h - group commit of LMDB write transactions.
 *
 * Every mutation is an operation (a function run inside a write transaction). Submitters
 * block until their operation has committed. Whichever submitter finds no batch running
 * takes every queued operation, opens one write transaction, runs each in a nested
 * transaction (so a failing one is rolled back alone), commits once and wakes every
 * submitter with its own result.
 */
#ifndef NACRE_MDS_WRITER_H
#define NACRE_MDS_WRITER_H

#include "mds/db.h"

struct mds_writer;

/* An operation: runs inside txn, on the thread of whichever submitter runs the batch. Returns 0 to keep its changes or a
 * negative errno to roll them back. */
typedef int (*mds_op_fn)(struct mds_txn *txn, void *arg);

/* A group commit over db (borrowed; must outlive the writer). */
int mds_writer_create(struct mds_db *db, struct mds_writer **out);
/* Refuses new operations, waits for the queued ones to commit, and frees w. NULL is fine. */
void mds_writer_destroy(struct mds_writer *w);
/* Runs fn(txn, arg) in a batch and waits until it committed. Returns fn's result, or the
 * commit error. Thread-safe; must not be called from inside an operation, nor while holding
 * a lock that an operation takes. */
int mds_writer_submit(struct mds_writer *w, mds_op_fn fn, void *arg);

#endif
