/* dispatch.h - the MDS request handler for the rpc server. */
#ifndef NACRE_MDS_DISPATCH_H
#define NACRE_MDS_DISPATCH_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/rpc.h"

/* rpc_handler_fn with arg = struct mds *. Decodes the body (a malformed one is answered
 * -EPROTO and logged, rate-limited, with the peer), runs the operation and encodes the
 * reply. Unknown opcodes answer -EOPNOTSUPP. Runs on worker threads, and on the event
 * thread for the operations mds_runs_inline names. */
int mds_dispatch(void *arg, const struct rpc_request *req, struct rpc_reply *rep);
/* rpc_inline_fn: the operations the event thread runs itself, those the opcode table marks
 * WIRE_OPF_INLINE: reads (short LMDB read transactions) and namespace changes that wait for
 * nothing but their group commit. */
int mds_runs_inline(uint16_t opcode);
/* rpc_disconnect_fn: closes the handles the connection left open and starts the eviction
 * clock of the locks its clients hold. */
void mds_on_disconnect(void *arg, uint64_t conn_id);

#endif
