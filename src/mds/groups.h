/* groups.h - group lists registered by clients (GROUPS_SET, wire.h): a caller with more
 * than NACRE_CRED_GROUPS supplementary groups carries a token in its cred, and permission
 * checks (perm.c) look its groups up here.
 *
 * One table per process, in memory, bounded (MDS_GROUPS_LISTS lists, MDS_GROUPS_TOTAL
 * groups; the least recently used list goes first). A lookup of a token the table does not
 * hold (the MDS restarted, or dropped it) counts as "not a member" and is noted on the
 * calling thread, so that the request path answers -NACRE_EGROUPS instead of the refusal
 * and the client registers the list again. Thread-safe (one mutex).
 */
#ifndef NACRE_MDS_GROUPS_H
#define NACRE_MDS_GROUPS_H

#include <stdint.h>

#include "proto/wire.h"

#define MDS_GROUPS_LISTS 1024
#define MDS_GROUPS_TOTAL (4u << 20)

/* Takes one chunk of a list (chunks come in order; a first chunk starts the list afresh).
 * Once the last arrived the list must be sorted, without duplicates, and match its token.
 * Returns 0, -EINVAL (out of order, unsorted, wrong token) or -ENOMEM. */
int mds_groups_set(const struct wire_groups_set_req *r);
/* 1 if gid is in the list of token, 0 if not, and also 0 (noted, see above) if the list is
 * not known. */
int mds_groups_has(uint64_t token, uint32_t gid);
/* The calling thread's note: cleared by reset, read by missing. */
void mds_groups_missing_reset(void);
int mds_groups_missing(void);
/* Frees every list (shutdown, tests). */
void mds_groups_clear(void);

#endif
