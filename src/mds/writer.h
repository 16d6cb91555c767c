/* writer.h - group commit of LMDB write transactions.
 *
 * Every mutation is an operation (a function run inside a write transaction). Submitters
 * block until their operation has committed. Whichever submitter finds no batch running
 * takes every queued operation, opens one write transaction, runs each in a nested
 * transaction (so a failing one is rolled back alone), commits once and wakes every
 * submitter with its own result.
 *
 * An operation submitted while a request is current (req.h) gets a transno, and its nested
 * transaction also writes the request's reply-cache record: a change and the record that
 * it was made commit together or not at all. The writer also keeps the transno of the last
 * committed change and of the last one known to be on disk (last_committed).
 */
#ifndef NACRE_MDS_WRITER_H
#define NACRE_MDS_WRITER_H

#include <stdint.h>

#include "mds/db.h"

struct mds_writer;

/* An operation: runs inside txn, on the thread of whichever submitter runs the batch. Returns 0 to keep its changes or a
 * negative errno to roll them back. */
typedef int (*mds_op_fn)(struct mds_txn *txn, void *arg);

/* A group commit over db (borrowed; must outlive the writer). Reads the last transno. */
int mds_writer_create(struct mds_db *db, struct mds_writer **out);
struct mds_space;
/* Lets the space guard look before each commit and hear of a commit that found the file
 * system full (space.h). Call before the first submit. */
void mds_writer_set_space(struct mds_writer *w, struct mds_space *space);
/* Refuses new operations, waits for the queued ones to commit, and frees w. NULL is fine. */
void mds_writer_destroy(struct mds_writer *w);
/* Runs fn(txn, arg) in a batch and waits until it committed. Returns fn's result, or the
 * commit error. Thread-safe; must not be called from inside an operation, nor while holding
 * a lock that an operation takes. */
int mds_writer_submit(struct mds_writer *w, mds_op_fn fn, void *arg);
/* Flushes every committed change to disk (mds_db_sync) and advances last_committed.
 * Returns 0 or a negative errno. Thread-safe. */
int mds_writer_sync(struct mds_writer *w);
/* The highest transno on disk, and the highest committed (maybe not yet on disk). */
uint64_t mds_writer_last_committed(const struct mds_writer *w);
uint64_t mds_writer_last_transno(const struct mds_writer *w);

#endif
