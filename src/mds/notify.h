/* notify.h - the MDS's callbacks to clients: a change of mode, owner, group or ACL is pushed
 * to every other client that caches attributes before the change is answered.
 *
 * Each such client keeps one NOTIFY_WAIT outstanding (wire.h); the MDS parks it
 * (rpc_defer) and answers it with a batch of FIDs when another client changes one. The
 * request that made the change is held (its reply built, then deferred) until every client
 * that got the FID acknowledged it with its next NOTIFY_WAIT, the client closed its
 * connection, or MDS_NOTIFY_ACK_MS passed: a client that does not acknowledge in time is
 * logged and no longer waited for until it acknowledges again. With no other client
 * listening nothing is held.
 *
 * A handler reports a change with mds_notify_perm_change while it runs; mds_serve calls
 * mds_notify_request_begin before and mds_notify_request_end after every request, which
 * queues the FIDs (the change is committed by then) and decides whether to hold the reply.
 */
#ifndef NACRE_MDS_NOTIFY_H
#define NACRE_MDS_NOTIFY_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/rpc.h"

#define MDS_NOTIFY_ACK_MS 3000 /* longest a change waits for one client */

struct mds_notify;

/* Creates the callback state and its timer thread (answers held replies at their deadline,
 * renews parked waits). 0, -ENOMEM or -EAGAIN; *out is the caller's (mds_notify_destroy). */
int mds_notify_create(struct mds_notify **out);
/* Frees n and what it parked or held, unanswered; NULL is fine. After the rpc server was
 * destroyed (which frees the deferred requests). */
void mds_notify_destroy(struct mds_notify *n);

/* NOTIFY_WAIT (rpc handler part): takes the ack, then answers with pending FIDs or parks
 * the request. Returns a status or RPC_DEFER. Any thread; does not block. */
int mds_notify_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);
/* rpc close part: the connection's parked wait ends and nothing waits for it any more.
 * Event thread; does not block. */
void mds_notify_close(struct mds *m, uint64_t conn_id);

/* Whether the connection keeps a NOTIFY_WAIT outstanding (it can be told of a recall). */
int mds_notify_listening(struct mds *m, uint64_t conn_id);
/* Recalls the client of conn_id's write-back lease on dir (lease.h) with its next batch,
 * sent now if its wait is parked. 0, or -ENOENT when that connection does not listen. Any
 * thread; does not block. */
int mds_notify_recall(struct mds *m, uint64_t conn_id, const struct nacre_fid *dir);

/* Notes, from inside a request's handler, that the mode, owner, group or ACL of fid just
 * changed: the other listening clients are told once the handler returned, and the reply
 * waits for them. Cheap (a thread-local note); ignored outside mds_serve (unit tests) and in
 * a replay (nobody caches anything yet). For the setattr path and the ACL setxattr path. */
void mds_notify_perm_change(struct mds *m, const struct nacre_fid *fid);

/* mds_serve's part: begin clears the thread's notes; end, given the handler's status and
 * reply, queues the noted FIDs and returns RPC_DEFER if it took the reply over (answered
 * later, as the handler built it), else status unchanged. */
void mds_notify_request_begin(void);
int mds_notify_request_end(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep,
			   int status);

#endif
