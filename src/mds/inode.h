/* inode.h - an inode as every MDS module shows it: the attributes clients see, and the
 * root's FID. Pure functions over struct mds_inode (db.h); thread-safe. */
#ifndef NACRE_MDS_INODE_H
#define NACRE_MDS_INODE_H

#include "mds/db.h"

/* Attributes as sent to clients: blksize is the stripe size (directories 4096), blocks is
 * what a client last reported the objects hold (ino->has_blocks), else (size + 511) / 512;
 * 1 for a released file with data. */
void mds_inode_to_attr(const struct mds_inode *ino, struct nacre_attr *a);
/* The root directory's fixed FID. */
struct nacre_fid mds_root_fid(void);

#endif
