/* ioctl.c - nacre-mount's ioctls (include/nacre/nacre_ioctl.h): NACRE_IOC_FIND, a page of
 * the MDS's namespace scan with the caller's credentials, and NACRE_IOC_QUOTA. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuse/fz.h"
#include "nacre/nacre_ioctl.h"

void fz_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
		 size_t out_bufsz)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_cred cr;
	(void)arg;
	(void)fi;

	if ((cmd != NACRE_IOC_FIND && cmd != NACRE_IOC_QUOTA) || !in) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if ((flags & FUSE_IOCTL_COMPAT) || in_bufsz == 0 || out_bufsz < 4096) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	void *out = malloc(out_bufsz);
	if (!out) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fz_cred(req, &cr);
	/* u32 little-endian length, then the body; the rest of the buffer is padding */
	const unsigned char *b = in_buf;
	size_t len = in_bufsz >= 4 ? (size_t)b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 |
					    (size_t)b[3] << 24
				   : SIZE_MAX;
	int rc = len > in_bufsz - 4 ? -EINVAL
		 : cmd == NACRE_IOC_QUOTA
			 ? nacre_quota_ioctl_serve(m->fs, &cr, b + 4, len, out, out_bufsz)
			 : nacre_find_ioctl_serve(m->fs, &cr, &in->fid, b + 4, len, out, out_bufsz);
	if (rc < 0)
		fz_reply_rc(req, rc);
	else
		fuse_reply_ioctl(req, rc, out, (size_t)rc);
	free(out);
}
