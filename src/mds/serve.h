/* serve.h - the MDS's request path around dispatch: sessions, the recovery window, the reply
 * cache (docs/recovery.md). These are the rpc_server_conf hooks of nacre-mds.
 *
 * A request of a session first binds the session to its connection. While the recovery
 * window is open, recovery.c decides whether it runs now or waits. A non-idempotent
 * request (wire_op_records) runs at most once: a resent or replayed xid that has a
 * reply-cache record is answered from it (the reply rebuilt from what the change made, as
 * Lustre reconstructs one), one still executing makes the resend wait for it, and the
 * first execution writes the record in the change's own transaction.
 */
#ifndef NACRE_MDS_SERVE_H
#define NACRE_MDS_SERVE_H

#include <stdint.h>

#include "proto/rpc.h"

/* rpc_handler_fn: arg is the struct mds. */
int mds_serve(void *arg, const struct rpc_request *req, struct rpc_reply *rep);
/* rpc_connect_fn: tells a connecting client what the MDS holds of it. */
void mds_serve_connect(void *arg, uint64_t conn_id, const struct wire_connect_req *req,
		       struct wire_connect_rep *rep);
/* rpc_close_fn: the connection's parked requests are dropped, its session starts its
 * eviction clock. */
void mds_serve_close(void *arg, uint64_t conn_id);
/* rpc_server_conf.last_committed. */
uint64_t mds_serve_last_committed(void *arg);
/* Whether a request of opcode runs at most once through the reply cache (a change). */
int mds_op_records(uint16_t opcode);

#endif
