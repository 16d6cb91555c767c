/* batch.h - BATCH: a client's queued namespace changes applied in order in one MDT
 * transaction, each as if it had come alone (wire.h, "BATCH"; docs/writeback.md).
 *
 * Each change runs in a nested transaction of its own: its permission checks, quota and
 * changelog record are its own, a failure undoes only it, and the changes after it still
 * run. The batch as a whole is one reply-cached change: a resend is answered from the reply
 * cache (every change -EALREADY: made, its result not kept), and a replay after a restart
 * makes the same inodes with the same layouts (taken from the batch's first reply, as a
 * lone CREATE's replay does).
 */
#ifndef NACRE_MDS_BATCH_H
#define NACRE_MDS_BATCH_H

#include "mds/mds.h"
#include "proto/cursor.h"
#include "proto/rpc.h"

/* Applies the batch in req and encodes its batch_rep into rep_body. 0, or a negative
 * error for the batch as a whole (-EPROTO for a body that does not decode). */
int mds_batch_serve(struct mds *m, const struct rpc_request *req, struct wire_cursor *rep_body);

/* The reply to a resend of a batch the reply cache says was made: -EALREADY for each
 * change of the request. */
int mds_batch_reconstruct(const struct rpc_request *req, struct wire_cursor *rep_body);

#endif
