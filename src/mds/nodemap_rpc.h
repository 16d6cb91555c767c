/* nodemap_rpc.h - the NODEMAP request (wire.h): ADD, DEL, MODIFY, LIST and TEST for clients
 * whose rule is admin (or any client while the MDT has no rules), and SELF for every
 * client: its rule's name and root directory, or -EACCES naming the rule that denies it.
 * The reply's text is the output, or on an error the sentence saying what is wrong. */
#ifndef NACRE_MDS_NODEMAP_RPC_H
#define NACRE_MDS_NODEMAP_RPC_H

#include "mds/mds.h"
#include "proto/rpc.h"

/* A dispatch handler (dispatch.h); runs on a worker (changes wait for the group commit). */
int mds_nodemap_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);

#endif
