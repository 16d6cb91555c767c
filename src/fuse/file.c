/* file.c - regular file operations: create, open, read, write, flush, fsync, release.
 *
 * The kernel page cache is used for reads only (no writeback cache): every write arrives
 * here and goes to libnacre, which buffers and stripes it. O_APPEND handles skip the page
 * cache altogether (direct I/O), so that each write arrives here whole. Each open file
 * records the end of what it wrote so that getattr reports the size this client knows
 * before the MDS does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fuse/fz.h"
#include "fuse/fz_metrics.h"

/* open(2) flags libnacre does not take: creation is a separate call, the rest is the
 * kernel's business. */
#define OPEN_FLAGS_DROP (O_CREAT | O_EXCL | O_NOCTTY)

/* The open file of a request; the kernel sends only handles we gave it and not yet
 * released, so NULL means a bug (logged by the caller's reply of EBADF). */
static struct fz_file *file_of(fuse_req_t req, struct fuse_file_info *fi)
{
	return fz_handle_get(fz_mnt(req), fi->fh, FZ_H_FILE);
}

struct fz_file *fz_file_create(struct fz_inode *in, struct nacre_file *nf, int flags,
			       const struct nacre_cred *cr)
{
	struct fz_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->nf = nf;
	f->inode = in;
	f->append = (flags & O_APPEND) != 0;
	/* a re-open must not truncate or create again */
	f->flags = flags & ~(OPEN_FLAGS_DROP | O_TRUNC);
	if (cr)
		f->cred = *cr;
	/* O_TRUNC cut the file at the MDS: other handles here wrote nothing past 0 any more. */
	if (flags & O_TRUNC)
		fz_inode_clamp_size(in, 0);
	fz_inode_add_file(in, f);
	fz_metrics_open(1);
	return f;
}

/* Gives f a handle number in fi->fh; on ENOMEM closes f and returns -ENOMEM. */
static int file_publish(fuse_req_t req, struct fz_file *f, struct fuse_file_info *fi)
{
	uint64_t fh;
	int rc = fz_handle_add(fz_mnt(req), FZ_H_FILE, f, &fh);

	if (rc < 0)
		return rc;
	fi->fh = fh;
	return 0;
}

int fz_file_close(struct fz_file *f)
{
	int rc;

	if (!f)
		return 0;
	/* Close before unlinking: until the MDS has the size, getattr must still see it. From
	 * here on nf is nacre_close's, which frees it: the inode's other users skip f. */
	pthread_mutex_lock(&f->inode->lock);
	f->closing = 1;
	pthread_mutex_unlock(&f->inode->lock);
	rc = nacre_close(f->nf);
	fz_metrics_open(-1);
	fz_inode_del_file(f->inode, f);
	free(f);
	return rc;
}

/* fz_itable_walk callback: closes the files still open on in. */
static int close_files_of(struct fz_inode *in, void *arg)
{
	(void)arg;
	while (in->files) {
		int rc = fz_file_close(in->files);

		if (rc < 0)
			LOG_WARN("file", "close at unmount: %s", nacre_strerror(rc));
	}
	return 0;
}

void fz_file_close_all(struct fz_mount *m)
{
	/* The kernel connection is gone: no release will come for these. */
	fz_itable_walk(m, close_files_of, NULL);
}

static int time_eq(const struct nacre_time *a, const struct nacre_time *b)
{
	return a->sec == b->sec && a->nsec == b->nsec;
}

/* Records f's attributes as the state the page cache of its inode matches. Returns 1 if
 * they equal the previous record (nothing changed on the servers since). */
static int cache_stamp(struct fz_file *f)
{
	struct fz_inode *in = f->inode;
	struct nacre_attr a;
	int same;

	if (nacre_file_attr(f->nf, &a) < 0)
		return 0;
	pthread_mutex_lock(&in->lock);
	same = in->cache_valid && in->cache_size == a.size &&
	       time_eq(&in->cache_mtime, &a.mtime) && time_eq(&in->cache_ctime, &a.ctime);
	in->cache_valid = 1;
	in->cache_size = a.size;
	in->cache_mtime = a.mtime;
	in->cache_ctime = a.ctime;
	pthread_mutex_unlock(&in->lock);
	return same;
}

static void set_open_flags(struct fz_mount *m, struct fz_file *f, struct fuse_file_info *fi)
{
	/* O_APPEND: each write(2) must reach us whole, for libnacre asks the MDS for an offset
	 * per request. Through the page cache the kernel ends a request at every page the
	 * write fills only in part (4,133 bytes at offset 4,133 arrive as 4,059 + 74), and
	 * another client's append then lands between the pieces. Direct I/O sends a write as
	 * one request of up to max_write bytes; nor does the kernel cache our bytes at its own
	 * idea of the end of file, which is stale while other clients append. */
	fi->direct_io = f->append;
	/* Close-to-open: drop cached pages on open if the file changed since this client
	 * last knew it (another client may have written); keep them otherwise. Under
	 * strictatime every open's first read must reach us (atime.c). */
	fi->keep_cache = (unsigned)cache_stamp(f) && m->atime_mode != FZ_ATIME_STRICT;
}

void fz_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *p = fz_inode_get(m, parent);
	struct fuse_entry_param e;
	struct nacre_file *nf;
	struct nacre_cred cr;
	struct nacre_attr a;
	struct fz_inode *in;
	struct fz_file *f;
	int rc;

	if (fz_check_ro(req) || fz_check_name(req, name))
		return;
	fz_cred(req, &cr);
	/* one MDS request; the creator may open a new file whatever mode it gave
	 * (open(O_CREAT|O_WRONLY, 0444) succeeds) */
	rc = nacre_create_open(m->fs, &cr, &p->fid, name, (mode & 07777) | fz_umask_bits(req),
			       fi->flags & ~(O_CREAT | O_NOCTTY), NULL, &a, &nf);
	if (rc < 0)
		goto out_err;
	fz_dattr_changed(p, &a.ctime, 0);
	rc = fz_entry_prepare(req, &a, &p->fid, &e, &in);
	if (rc < 0)
		goto out_close;
	f = fz_file_create(in, nf, fi->flags, &cr);
	if (!f) {
		rc = -ENOMEM;
		goto out_forget;
	}
	if (file_publish(req, f, fi) < 0) {
		fz_file_close(f);
		fz_inode_forget(m, in, 1);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	set_open_flags(m, f, fi);
	/* If the kernel dropped the reply, it holds neither the lookup nor the file. */
	if (fuse_reply_create(req, &e, fi) != 0) {
		fz_handle_del(m, fi->fh, FZ_H_FILE);
		fz_file_close(f);
		fz_inode_forget(m, in, 1);
	}
	return;

out_forget:
	fz_inode_forget(m, in, 1);
out_close:
	nacre_close(nf);
out_err:
	fz_reply_rc(req, rc);
}

void fz_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_file *nf;
	struct nacre_cred cr;
	struct fz_file *f;
	int rc;

	if (!in) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) && fz_mount_ro(m)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fz_cred(req, &cr);
	/* O_TRUNC arrives here (atomic O_TRUNC) and libnacre truncates at the MDS. */
	rc = nacre_open(m->fs, &cr, &in->fid, fi->flags & ~OPEN_FLAGS_DROP, &nf);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	f = fz_file_create(in, nf, fi->flags, &cr);
	if (!f) {
		nacre_close(nf);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (file_publish(req, f, fi) < 0) {
		fz_file_close(f);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	set_open_flags(m, f, fi);
	/* Close-to-open holds for the size too: the kernel may keep attributes from before
	 * another client's close for attr_timeout, and a read stops at the size it holds.
	 * When the size this open found is not the one the kernel was last given, they are
	 * dropped before the reply, so the first read or stat of this open asks again (not at
	 * every open: that GETATTR would cost an MDS round trip per open). */
	if (!fi->keep_cache && m->se && fz_inode_kernel_size_differs(in))
		fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);
	if (fuse_reply_open(req, fi) != 0) {
		fz_handle_del(m, fi->fh, FZ_H_FILE);
		fz_file_close(f);
	}
}

void fz_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct fz_file *f = file_of(req, fi);
	ssize_t n;
	char *buf, *own = NULL;

	(void)ino;
	if (!f) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	buf = fz_ring_reply_buffer(size);
	if (!buf)
		buf = own = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = nacre_pread(f->nf, buf, size, (uint64_t)off);
	if (n < 0)
		fz_reply_rc(req, (int)n);
	else {
		fz_atime_read(fz_mnt(req), f); /* before the reply: a stat after read(2) sees it */
		fz_metrics_read((uint64_t)n);
		fuse_reply_buf(req, buf, (size_t)n);
	}
	free(own);
}

void fz_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	struct fz_file *f = file_of(req, fi);
	struct fz_inode *in;
	uint64_t end;
	ssize_t n;

	if (!f) {
		fuse_reply_err(req, EBADF);
		return;
	}
	in = f->inode;
	n = nacre_pwrite(f->nf, buf, size, (uint64_t)off);
	if (n < 0) {
		fz_reply_rc(req, (int)n);
		return;
	}
	/* With O_APPEND libnacre chose the offset; it knows where the data ended. */
	end = f->append ? nacre_file_written_size(f->nf) : (uint64_t)off + (uint64_t)n;
	pthread_mutex_lock(&in->lock);
	if (end > f->written_end)
		f->written_end = end;
	f->dirty = 1;
	pthread_mutex_unlock(&in->lock);
	/* An O_DIRECT write does not go through the page cache, and pages that readers here
	 * loaded while it ran may hold the old bytes. The kernel drops that range after a
	 * synchronous direct write but not after an asynchronous one (io_submit): drop it
	 * ourselves, before the write completes. Reads that follow see the new bytes
	 * (read-your-writes in libnacre). */
	if ((fi->flags & O_DIRECT) && fz_mnt(req)->se) {
		int rc = fuse_lowlevel_notify_inval_inode(fz_mnt(req)->se, ino, off, (off_t)n);
		if (rc < 0 && rc != -ENOENT)
			LOG_RATELIMITED(LOG_LVL_WARN, "file", "cannot drop the kernel's pages of "
					"inode %llu after a direct write: %s",
					(unsigned long long)ino, strerror(-rc));
	}
	fz_metrics_write((uint64_t)n);
	fuse_reply_write(req, (size_t)n);
}

/* Publishes f's size to the MDS if it wrote since the last push; durable (fsync) also makes
 * the data durable on the OSTs. */
static int file_push(struct fz_file *f, int datasync, int durable)
{
	struct fz_inode *in = f->inode;
	int dirty, rc;

	pthread_mutex_lock(&in->lock);
	dirty = f->dirty;
	f->dirty = 0;
	pthread_mutex_unlock(&in->lock);
	if (!dirty && !durable)
		return 0;
	rc = durable ? nacre_fsync(f->nf, datasync) : nacre_flush(f->nf);
	if (rc < 0) {
		pthread_mutex_lock(&in->lock);
		f->dirty = 1;
		pthread_mutex_unlock(&in->lock);
	} else if (dirty) {
		/* The page cache holds what we wrote and the MDS now says so: the next open
		 * here may keep it. */
		cache_stamp(f);
	}
	return rc;
}

int fz_file_push(struct fz_file *f)
{
	return file_push(f, 0, 0);
}

void fz_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	/* close(2) returns before release reaches us, so release alone would leave a window
	 * where another client opens the file and sees neither the data nor the size
	 * (close-to-open, as NFS). Pushing here also reports write errors to close(2). It
	 * is a size update at the MDS, not a disk sync: close(2) does not promise durability. */
	struct fz_file *f = file_of(req, fi);

	fuse_reply_err(req, f ? fz_errno_or_ok(file_push(f, 0, 0)) : EBADF);
}

void fz_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fz_file *f = file_of(req, fi);

	(void)ino;
	fuse_reply_err(req, f ? fz_errno_or_ok(file_push(f, datasync, 1)) : EBADF);
}

void fz_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = fz_file_close(fz_handle_del(fz_mnt(req), fi->fh, FZ_H_FILE));

	(void)ino;
	/* Nobody waits for release: the error can only be logged. */
	if (rc < 0)
		LOG_RATELIMITED(LOG_LVL_WARN, "file", "close of inode %llu: %s",
				(unsigned long long)ino, nacre_strerror(rc));
	fuse_reply_err(req, 0);
}
