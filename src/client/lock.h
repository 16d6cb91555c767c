/* lock.h - what lock.c gives the rest of libnacre: lock requests, the record of the locks
 * this mount holds, and their replay to a restarted MDS. The lock calls themselves are in
 * nacre.h.
 */
#ifndef NACRE_CL_LOCK_H
#define NACRE_CL_LOCK_H

#include "nacre/nacre.h"
#include "proto/rpc.h"
#include "proto/wire.h"

/* The request for owner's lock l on fid (the arguments of nacre_lock_set). 0 or -EINVAL. */
int cl_lock_req(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		int kind, uint64_t owner, const struct nacre_lock *l, struct wire_lock_req *r);
/* LOCK_SET of r, then cl_lock_granted. Returns as nacre_lock_set. Thread-safe. */
int cl_lock_set_req(struct nacre_fs *fs, const struct wire_lock_req *r);
/* The MDS granted r: it goes into the record and, for a lock taken, this fs's open handles
 * of the file see the size the MDS has. Thread-safe. */
void cl_lock_granted(struct nacre_fs *fs, const struct wire_lock_req *r);

/* Re-asserts every lock this mount holds, in the order it took them, on a recovering MDS
 * connection (a conflict is logged: that lock is lost). 0 or a transport error. */
int cl_locks_replay(struct nacre_fs *fs, struct rpc_recovery *r);
/* Sets up the record and the waits' lock (at mount). */
void cl_locks_init(struct nacre_fs *fs);
/* Frees the record and the locks (at umount). */
void cl_locks_fini(struct nacre_fs *fs);

#endif
