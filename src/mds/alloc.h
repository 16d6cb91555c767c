/* alloc.h - OST allocation for new files' layouts (LAYOUT_GET and LAYOUT_SET are namespace
 * operations: ns.h).
 *
 * A new file's layout is merged field by field from, in order: the request, the parent's
 * default, the root's default, then stripe_count 1 / stripe_size 1 MiB. stripe_count -1 is
 * every up OST (a larger count is capped to the number of usable OSTs); stripe_offset -1
 * starts at a rotating round-robin position. OSTs with under 0.5% free space are skipped.
 * No usable OST: -ENOSPC, with a log line. Thread-safe. */
#ifndef NACRE_MDS_ALLOC_H
#define NACRE_MDS_ALLOC_H

#include "mds/db.h"
#include "mds/mds.h"

/* Instantiates a file layout (gen 0) inside txn for a new file in parent. req may be NULL. */
int mds_alloc_file_layout(struct mds *m, struct mds_txn *txn, const struct mds_inode *parent,
			  const struct nacre_layout *req, struct nacre_layout *out);
/* A requested stripe_offset (-1: any) must name an OST this MDT knows, up or down, as Lustre
 * refuses `setstripe -i` beyond its OSTs. Returns 0 or -EINVAL, with a log line. */
int mds_alloc_check_offset(struct mds *m, int32_t offset);
/* A copy of a directory default to give to a new subdirectory (Lustre inherits it). */
void mds_alloc_inherit_default(const struct mds_inode *parent, struct mds_inode *child);

#endif
