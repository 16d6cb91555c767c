/* lock_rpc.h - the lock service's requests (LOCK_SET, LOCK_GET, LOCK_WAIT, LOCK_CANCEL) and
 * connection hooks: lock.c behind the rpc layer. A LOCK_WAIT that must wait is a deferred
 * request (rpc_defer), answered by whichever thread grants or ends it.
 */
#ifndef NACRE_MDS_LOCK_RPC_H
#define NACRE_MDS_LOCK_RPC_H

#include <stdint.h>

#include "mds/lock.h"
#include "mds/mds.h"
#include "proto/rpc.h"

/* mds_lock_answer_fn for mds_locks_create: answers a parked LOCK_WAIT (token is its
 * struct rpc_deferred) with status and an empty body. Any thread. */
void mds_lock_answer(void *arg, void *token, int status);
/* Decodes and runs a lock request (rpc handler part); returns its status or RPC_DEFER.
 * Runs on worker threads. */
int mds_lock_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);
/* rpc close part: the connection's parked LOCK_WAITs end now (m->locks may be NULL). Event
 * thread; does not block. */
void mds_lock_close(struct mds *m, uint64_t conn_id);
/* rpc disconnect part: mds_locks_disconnect at the current time (m->locks may be NULL). */
void mds_lock_disconnect(struct mds *m, uint64_t conn_id);

struct mds_lock_reaper;
/* Starts a thread that ticks lk (mds_locks_tick) every MDS_LOCK_TICK_MS, so that a client
 * gone for good loses its locks on time although nobody asks for one. Returns 0 or
 * -EAGAIN / -ENOMEM. */
#define MDS_LOCK_TICK_MS 500
int mds_lock_reaper_start(struct mds_locks *lk, struct mds_lock_reaper **out);
/* Stops and frees it; NULL is fine. */
void mds_lock_reaper_stop(struct mds_lock_reaper *r);

#endif
