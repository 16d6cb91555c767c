/* attr.c - attributes: getattr, setattr, access, statfs. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/log.h"
#include "fuse/fz.h"

#define STATFS_BSIZE 4096

/* Replies a's attributes, with the size raised to what files open here wrote. */
static void reply_attr(fuse_req_t req, struct fz_inode *in, const struct nacre_attr *a)
{
	struct stat st;
	uint64_t size = a->size;

	struct nacre_time atime = a->atime;

	fz_inode_size_for_kernel(in, &size);
	fz_atime_merge(in, &atime);
	fz_attr_to_stat(a, &st);
	/* writes here the MDS does not know yet: their blocks, as if the growth were all data
	 * (close or fsync reports what the objects really hold) */
	if (size > a->size)
		st.st_blocks += (blkcnt_t)((size - a->size + 511) / 512);
	st.st_size = (off_t)size;
	st.st_atim.tv_sec = (time_t)atime.sec;
	st.st_atim.tv_nsec = (long)atime.nsec;
	fuse_reply_attr(req, &st, fz_mnt(req)->attr_timeout);
}

void fz_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_cred cr;
	struct nacre_attr a;
	double valid_s;
	int rc;

	(void)fi;
	if (fz_dattr_lookup(in, &a, &valid_s)) {
		struct stat st;
		fz_attr_to_stat(&a, &st);
		fuse_reply_attr(req, &st, valid_s);
		return;
	}
	/* While this mount replays to a restarted MDS, its calls wait for the end of the
	 * recovery window; the kernel checks permissions on the root before it reads the
	 * mount's status xattrs (`nacre recovery-status`), so the root's last attributes
	 * answer, kept by the kernel for no time. */
	if (ino == FUSE_ROOT_ID && nacre_mds_recovering(m->fs) && fz_dattr_last(in, &a)) {
		struct stat st;
		fz_attr_to_stat(&a, &st);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	fz_cred(req, &cr);
	uint64_t gen = fz_dattr_gen(in);
	rc = nacre_getattr(m->fs, &cr, &in->fid, &a);
	/* The MDS removes a directory at once, but the kernel asks about one it still holds
	 * (open, or a working directory): it is there with no link, as on a local file
	 * system. (An open file lives at the MDS as an orphan until its last close.) */
	if (rc == -ENOENT && fz_dattr_gone(in, &a)) {
		struct stat st;
		fz_attr_to_stat(&a, &st);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	fz_dattr_store(m, in, &a, gen);
	reply_attr(req, in, &a);
}

static void time_from(struct nacre_time *t, const struct timespec *ts)
{
	t->sec = ts->tv_sec;
	t->nsec = (uint32_t)ts->tv_nsec;
}

void fz_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_setattr sa;
	struct nacre_cred cr;
	struct nacre_attr a;
	int rc;

	if (fz_check_ro(req))
		return;
	memset(&sa, 0, sizeof(sa));
	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.valid |= NACRE_SET_MODE;
		sa.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.valid |= NACRE_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.valid |= NACRE_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.valid |= NACRE_SET_SIZE;
		sa.size = (uint64_t)attr->st_size;
	}
	/* The kernel sets ATIME together with ATIME_NOW; "now" is the server's clock. */
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.valid |= NACRE_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.valid |= NACRE_SET_ATIME;
		time_from(&sa.atime, &attr->st_atim);
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.valid |= NACRE_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.valid |= NACRE_SET_MTIME;
		time_from(&sa.mtime, &attr->st_mtim);
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		sa.valid |= NACRE_SET_CTIME;
		time_from(&sa.ctime, &attr->st_ctim);
	}
	fz_cred(req, &cr);
	/* ftruncate: this handle's size must reach the MDS before the cut, not after it
	 * (where its close would extend the file again). */
	struct fz_file *f = fi ? fz_handle_get(m, fi->fh, FZ_H_FILE) : NULL;
	if ((sa.valid & NACRE_SET_SIZE) && f) {
		rc = nacre_flush(f->nf);
		if (rc < 0) {
			fz_reply_rc(req, rc);
			return;
		}
	}
	fz_dattr_drop(in);
	if (sa.valid & (NACRE_SET_ATIME | NACRE_SET_ATIME_NOW))
		fz_atime_drop(in); /* a read's atime noted before must not undo it at close */
	uint64_t gen = fz_dattr_gen(in);
	rc = nacre_setattr(m->fs, &cr, &in->fid, &sa, &a);
	/* ftruncate through a descriptor open for writing needs no write permission now: it
	 * was granted at open (a file created O_RDWR with mode 0, pjdfstest ftruncate/00.t),
	 * and the kernel checked the descriptor. The MDS judges the caller's mode bits, so
	 * the cut is asked again with the mount's own credentials. */
	if (rc == -EACCES && f && (f->flags & O_ACCMODE) != O_RDONLY &&
	    (sa.valid & NACRE_SET_SIZE) &&
	    !(sa.valid & ~(NACRE_SET_SIZE | NACRE_SET_MTIME_NOW | NACRE_SET_ATIME_NOW)))
		rc = nacre_setattr(m->fs, NULL, &in->fid, &sa, &a);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	fz_dattr_store(m, in, &a, gen);
	if (sa.valid & NACRE_SET_SIZE)
		fz_inode_clamp_size(in, sa.size);
	reply_attr(req, in, &a);
}

static int in_group(const struct nacre_cred *cr, uint32_t gid)
{
	uint32_t i;

	if (cr->gid == gid)
		return 1;
	for (i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == gid)
			return 1;
	return 0;
}

void fz_op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_cred cr;
	struct nacre_attr a;
	uint32_t bits;
	int rc;

	fz_cred(req, &cr);
	rc = nacre_getattr(m->fs, &cr, &in->fid, &a);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	if (mask == F_OK) {
		fuse_reply_err(req, 0);
		return;
	}
	if ((mask & W_OK) && fz_mount_ro(m) && !S_ISCHR(a.mode) && !S_ISBLK(a.mode) &&
	    !S_ISFIFO(a.mode) && !S_ISSOCK(a.mode)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (cr.uid == 0) {
		/* root may read and write anything, and execute what anyone may execute. */
		if ((mask & X_OK) && !S_ISDIR(a.mode) && !(a.mode & 0111))
			fuse_reply_err(req, EACCES);
		else
			fuse_reply_err(req, 0);
		return;
	}
	if (cr.uid == a.uid)
		bits = (a.mode >> 6) & 7;
	else if (in_group(&cr, a.gid))
		bits = (a.mode >> 3) & 7;
	else
		bits = a.mode & 7;
	fuse_reply_err(req, ((uint32_t)mask & bits) == (uint32_t)mask ? 0 : EACCES);
}

void fz_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct nacre_statfs s;
	struct statvfs st;
	int rc;

	rc = nacre_statfs(fz_mnt(req)->fs, &s);
	if (rc >= 0 && ino != FUSE_ROOT_ID) {
		struct fz_inode *in = fz_inode_get(fz_mnt(req), ino);
		struct nacre_cred cr;
		if (in) {
			fz_cred(req, &cr);
			rc = nacre_statfs_project(fz_mnt(req)->fs, &cr, &in->fid, &s);
		}
	}
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.f_bsize = STATFS_BSIZE;
	st.f_frsize = STATFS_BSIZE;
	st.f_blocks = s.kb_total / (STATFS_BSIZE / 1024);
	st.f_bfree = s.kb_free / (STATFS_BSIZE / 1024);
	st.f_bavail = s.kb_avail / (STATFS_BSIZE / 1024);
	st.f_files = s.files;
	st.f_ffree = s.ffree;
	st.f_favail = s.ffree;
	st.f_namemax = NACRE_NAME_MAX;
	fuse_reply_statfs(req, &st);
}
