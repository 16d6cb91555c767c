/* writer.h - the single LMDB writer thread with group commit.
 *
 * Every mutation is an operation (a function run inside a write transaction). Submitters
 * block until their operation has committed. The writer takes every queued operation, opens
 * one write transaction, runs each in a nested transaction (so a failing one is rolled back
 * alone), commits once and wakes every submitter with its own result.
 */
#ifndef NACRE_MDS_WRITER_H
#define NACRE_MDS_WRITER_H

#include "mds/db.h"

struct mds_writer;

/* An operation: runs on the writer thread inside txn. Returns 0 to keep its changes or a
 * negative errno to roll them back. */
typedef int (*mds_op_fn)(struct mds_txn *txn, void *arg);

/* Starts the writer thread over db (borrowed; must outlive the writer). */
int mds_writer_create(struct mds_db *db, struct mds_writer **out);
/* Stops the thread after the queued operations ran, and frees w. NULL is fine. */
void mds_writer_destroy(struct mds_writer *w);
/* Runs fn(txn, arg) on the writer thread and waits until it committed. Returns fn's result,
 * or the commit error. Thread-safe; must not be called from inside an operation. */
int mds_writer_submit(struct mds_writer *w, mds_op_fn fn, void *arg);

#endif
