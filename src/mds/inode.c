/* inode.c - inode attributes and the root FID. See inode.h. */
#include "mds/inode.h"

#include <string.h>
#include <sys/stat.h>

struct nacre_fid mds_root_fid(void)
{
	struct nacre_fid f = {NACRE_ROOT_SEQ, NACRE_ROOT_OID, 0};
	return f;
}

void mds_inode_to_attr(const struct mds_inode *ino, struct nacre_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->fid = ino->fid;
	a->mode = ino->mode;
	a->nlink = ino->nlink;
	a->uid = ino->uid;
	a->gid = ino->gid;
	a->rdev = ino->rdev;
	if (S_ISREG(ino->mode) && ino->has_layout && ino->layout.stripe_size)
		a->blksize = ino->layout.stripe_size;
	else
		a->blksize = S_ISREG(ino->mode) ? NACRE_STRIPE_SIZE_DEFAULT : 4096;
	a->size = ino->size;
	/* what the objects hold, as a client last measured it (sparse files, fallocate);
	 * without a report (an older client, nothing written yet) the size rounded up */
	a->blocks = ino->has_blocks && S_ISREG(ino->mode) ? ino->blocks : (ino->size + 511) / 512;
	/* as Lustre: a released file's data is in the archive; one block says it is not a
	 * hole (tools skip files with st_blocks 0 as sparse), du shows what is on disk */
	if (S_ISREG(ino->mode) && (ino->hsm_state & NACRE_HS_RELEASED) && ino->size)
		a->blocks = 1;
	a->atime = ino->atime;
	a->mtime = ino->mtime;
	a->ctime = ino->ctime;
	a->hsm_state = ino->hsm_state;
	a->archive_id = ino->archive_id;
}
