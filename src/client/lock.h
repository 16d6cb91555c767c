/* lock.h - what lock.c gives the rest of libnacre: the record of the locks this mount holds,
 * and their replay to a restarted MDS. The lock calls themselves are in nacre.h.
 */
#ifndef NACRE_CL_LOCK_H
#define NACRE_CL_LOCK_H

#include "proto/rpc.h"

struct nacre_fs;

/* Re-asserts every lock this mount holds, in the order it took them, on a recovering MDS
 * connection (a conflict is logged: that lock is lost). 0 or a transport error. */
int cl_locks_replay(struct nacre_fs *fs, struct rpc_recovery *r);
/* Frees the record (at umount). */
void cl_locks_fini(struct nacre_fs *fs);

#endif
