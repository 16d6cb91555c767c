/* alloc.h - layouts on the MDS: OST allocation for new files, LAYOUT_GET and LAYOUT_SET.
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
/* A copy of a directory default to give to a new subdirectory (Lustre inherits it). */
void mds_alloc_inherit_default(const struct mds_inode *parent, struct mds_inode *child);
/* The file's layout or the directory's default; -ENODATA if there is none. */
int mds_layout_get(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   struct nacre_layout *out);
/* Directory: sets its default; a request with stripe_count 0, stripe_size 0 and
 * stripe_offset -1 clears it (out then has nosts 0 and stripe_count 0). Needs owner or root.
 * Regular file: only while its size is 0 (else -EBUSY); allocates new OSTs, bumps gen and
 * queues the old objects for destruction. Needs write permission. Others: -EINVAL. */
int mds_layout_set(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   const struct nacre_layout *l, struct nacre_layout *out);

#endif
