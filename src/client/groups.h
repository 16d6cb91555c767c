/* groups.h - group lists longer than NACRE_CRED_GROUPS, registered with the MDS once
 * (GROUPS_SET, wire.h) and carried as a token (nacre.h, nacre_groups_cred).
 *
 * The mount keeps the lists it registered (CL_GROUPS_LISTS, least recently used dropped),
 * so it can register one again when the MDS answers -NACRE_EGROUPS (it forgot it) and all
 * of them after an MDS restart, before its replays. Thread-safe (fs->groups_lock, a leaf).
 */
#ifndef NACRE_CL_GROUPS_H
#define NACRE_CL_GROUPS_H

#include "client/cl_internal.h"

#define CL_GROUPS_LISTS 64

struct cl_glist {
	uint64_t token;  /* 0 = free slot */
	uint32_t n;
	uint32_t *g;     /* sorted, no duplicates */
	uint64_t used;   /* fs->groups_clock at the last use */
};

void cl_groups_init(struct nacre_fs *fs);
void cl_groups_fini(struct nacre_fs *fs);
/* Registers the list of token again (after -NACRE_EGROUPS). 0, -ENOENT (not one of ours:
 * the request fails as it did) or the call's error. */
int cl_groups_reregister(struct nacre_fs *fs, uint64_t token);
/* Inside an rpc_recover_fn: registers every list again on the recovering socket. 0 or a
 * transport error. */
int cl_groups_recover(struct nacre_fs *fs, struct rpc_recovery *r);

#endif
