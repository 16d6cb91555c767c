/* recover.h - bringing a restarted MDS back to what this client holds (recover.c): the
 * rpc layer's recovery hook of the MDS connection (rpc.h, rpc_recover_fn). Below the file
 * and lock calls; calls the rpc layer only, and lock.c's replay.
 */
#ifndef NACRE_CL_RECOVER_H
#define NACRE_CL_RECOVER_H

#include "proto/rpc.h"

/* rpc_recover_fn for the MDS connection; arg is the struct nacre_fs. Replays the retained
 * changes, re-opens every open file (an unlinked one too: the MDS keeps it for us during
 * its recovery window), re-asserts the locks held, and tells the MDS at each stage. */
int cl_recover(void *arg, struct rpc_recovery *r, const struct wire_connect_rep *rep);

#endif
