/* space.c - the allocation of a file's bytes: fallocate and lseek's SEEK_DATA/SEEK_HOLE.
 * Both go through libnacre to every object of the file at once (nacre_fallocate,
 * nacre_seek_data); the kernel handles SEEK_SET/CUR/END itself and, around a punch or a
 * zeroed range, writes back and drops its page cache of the range. */
#include <errno.h>

#include "fuse/fz.h"

void fz_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		     struct fuse_file_info *fi)
{
	struct fz_file *f = fz_handle_get(fz_mnt(req), fi->fh, FZ_H_FILE);
	struct fz_inode *in;
	int rc;

	(void)ino;
	if (!f) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (fz_check_ro(req))
		return;
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	in = f->inode;
	rc = nacre_fallocate(f->nf, mode, (uint64_t)off, (uint64_t)len);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	/* the size an open file here reports (fz_inode_size_for_kernel) grows as a write's would */
	if (!(mode & FALLOC_FL_KEEP_SIZE)) {
		pthread_mutex_lock(&in->lock);
		if ((uint64_t)off + (uint64_t)len > f->written_end)
			f->written_end = (uint64_t)off + (uint64_t)len;
		pthread_mutex_unlock(&in->lock);
	}
	fuse_reply_err(req, 0);
}

void fz_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		 struct fuse_file_info *fi)
{
	struct fz_file *f = fz_handle_get(fz_mnt(req), fi->fh, FZ_H_FILE);
	uint64_t found;
	int rc;

	(void)ino;
	if (!f) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	rc = nacre_seek_data(f->nf, whence, (uint64_t)off, &found);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	fuse_reply_lseek(req, (off_t)found);
}
