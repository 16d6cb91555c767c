/* fid_grant.h - sequences of FIDs granted to clients (Lustre's sequence controller, for
 * clients): a client that holds one names its new inodes itself, so it knows a file's FID,
 * and where its objects go, before the MDS has seen the create (docs/writeback.md).
 *
 * A grant belongs to a client id (the recovery session's, which outlives reconnects and MDS
 * restarts) and is kept on the MDT: FIDs granted once are never handed out again, to that
 * client or any other, nor taken by the MDS's own allocator. A create carrying a FID is
 * accepted only from the client the FID's sequence was granted to, within its width.
 */
#ifndef NACRE_MDS_FID_GRANT_H
#define NACRE_MDS_FID_GRANT_H

#include <stdint.h>

#include "mds/db.h"
#include "mds/mds.h"

/* Lustre's client sequence width (LUSTRE_DATA_SEQ_MAX_WIDTH): 131,072 FIDs per grant. */
#define MDS_FID_GRANT_WIDTH_DEFAULT (1u << 17)
#define MDS_FID_GRANT_WIDTH_MIN 16u

/* A new sequence for client (nonzero), in a change of its own (reply-cached: a resend
 * gets the same one): *seq and *width. A replay sets *seq and *width on entry to what its
 * first execution answered, and gets that grant again (-EEXIST if it went to another). */
int mds_fid_grant(struct mds *m, uint64_t client, uint64_t *seq, uint32_t *width);

/* 0 if fid lies in a sequence granted to client (write txn of the create);
 * -NACRE_EFIDGRANT (logged, rate-limited) otherwise. */
int mds_fid_grant_check(struct mds_txn *txn, uint64_t client, const struct nacre_fid *fid);

#endif
