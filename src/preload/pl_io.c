/* pl_io.c - the data calls: read, write and their positional, vector and 64-bit variants,
 * lseek, fsync. A descriptor libnacre serves moves the kernel's offset as the kernel would;
 * any other goes straight to libc.
 *
 * Built without _FILE_OFFSET_BITS=64 (CMakeLists.txt): glibc's headers would otherwise turn
 * every definition below into its 64-bit name. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload/pl.h"

#define EXPORT __attribute__((visibility("default")))

/* glibc's _FORTIFY_SOURCE entry points (declared only in a fortified build) */
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t len, off_t off, size_t buflen);

/* The handle behind fd, or NULL: the kernel's. */
static struct pl_file *enter(int fd)
{
	struct pl_file *f;

	if (pl_inside)
		return NULL;
	pl_init();
	f = pl_fd_get(fd);
	if (f)
		pl_inside++;
	return f;
}

static void leave(struct pl_file *f, int wrote)
{
	pl_inside--;
	pl_fd_put(f, wrote);
}

static ssize_t io_at(struct pl_file *f, int write, const struct iovec *iov, int cnt, off_t off)
{
	ssize_t done = 0;

	if (cnt < 0 || cnt > IOV_MAX || off < 0) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < cnt; i++) {
		ssize_t n;

		if (iov[i].iov_len == 0)
			continue;
		if (write)
			n = nacre_pwrite(pl_fd_nf(f), iov[i].iov_base, iov[i].iov_len,
					 (uint64_t)off + (uint64_t)done);
		else
			n = nacre_pread(pl_fd_nf(f), iov[i].iov_base, iov[i].iov_len,
					(uint64_t)off + (uint64_t)done);
		if (n < 0) {
			if (done > 0)
				break; /* what was done is the answer, as the kernel's */
			return pl_fail((int)n);
		}
		done += n;
		if ((size_t)n < iov[i].iov_len)
			break; /* end of file */
	}
	pl_count(write ? PL_C_WRITE : PL_C_READ, (uint64_t)done);
	return done;
}

/* At the kernel's offset, which moves past what was done. */
static ssize_t io_cur(struct pl_file *f, int fd, int write, const struct iovec *iov, int cnt)
{
	off_t off = pl_real.lseek(fd, 0, SEEK_CUR);
	ssize_t n;

	if (off < 0)
		return -1;
	n = io_at(f, write, iov, cnt, off);
	if (n > 0)
		pl_real.lseek(fd, off + n, SEEK_SET);
	return n;
}

/* Serves a call on fd through libnacre at off (cur: at the kernel's offset, which moves):
 * 1 with the result in *n, or 0 when the kernel serves fd. */
static int served(int fd, int write, const struct iovec *iov, int cnt, int cur, off_t off,
		  ssize_t *n)
{
	struct pl_file *f = enter(fd);

	if (!f)
		return 0;
	*n = cur ? io_cur(f, fd, write, iov, cnt) : io_at(f, write, iov, cnt, off);
	leave(f, write && *n > 0);
	return 1;
}

EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	struct iovec v = {buf, len};
	ssize_t n;

	return served(fd, 0, &v, 1, 1, 0, &n) ? n : pl_real.read(fd, buf, len);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		abort(); /* glibc's __chk_fail: a buffer overflow the compiler proved */
	return read(fd, buf, len);
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	struct iovec v = {(void *)buf, len};
	ssize_t n;

	return served(fd, 1, &v, 1, 1, 0, &n) ? n : pl_real.write(fd, buf, len);
}

EXPORT ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	struct iovec v = {buf, len};
	ssize_t n;

	return served(fd, 0, &v, 1, 0, off, &n) ? n : pl_real.pread(fd, buf, len, off);
}

EXPORT ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	return pread(fd, buf, len, off);
}

EXPORT ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	if (len > buflen)
		abort();
	return pread(fd, buf, len, off);
}

EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	return __pread_chk(fd, buf, len, off, buflen);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	struct iovec v = {(void *)buf, len};
	ssize_t n;

	return served(fd, 1, &v, 1, 0, off, &n) ? n : pl_real.pwrite(fd, buf, len, off);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	return pwrite(fd, buf, len, off);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	ssize_t n;

	return served(fd, 0, iov, cnt, 1, 0, &n) ? n : pl_real.readv(fd, iov, cnt);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	ssize_t n;

	return served(fd, 1, iov, cnt, 1, 0, &n) ? n : pl_real.writev(fd, iov, cnt);
}

/* preadv2/pwritev2: off -1 is the current offset; flags that ask the kernel for something
 * of its own (RWF_APPEND, RWF_NOWAIT) hand the file to it. */
static ssize_t rw_v2(int fd, int write, const struct iovec *iov, int cnt, off_t off, int flags)
{
	struct pl_file *f = NULL;
	ssize_t n;

	if ((flags & ~(RWF_HIPRI | RWF_DSYNC | RWF_SYNC)) && !pl_inside && pl_fd_known(fd))
		pl_fd_to_kernel(fd, 0);
	else
		f = enter(fd);
	if (!f)
		return write ? pl_real.pwritev2(fd, iov, cnt, off, flags)
			     : pl_real.preadv2(fd, iov, cnt, off, flags);
	n = off == -1 ? io_cur(f, fd, write, iov, cnt) : io_at(f, write, iov, cnt, off);
	if (n > 0 && write && (flags & (RWF_DSYNC | RWF_SYNC))) {
		int rc = nacre_fsync(pl_fd_nf(f), (flags & RWF_SYNC) == 0);
		if (rc < 0)
			n = pl_fail(rc);
	}
	leave(f, write && n > 0);
	return n;
}

EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return rw_v2(fd, 0, iov, cnt, off < 0 ? -2 : off, 0);
}

EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return preadv(fd, iov, cnt, off);
}

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return rw_v2(fd, 1, iov, cnt, off < 0 ? -2 : off, 0);
}

EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return pwritev(fd, iov, cnt, off);
}

EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return rw_v2(fd, 0, iov, cnt, off, flags);
}

EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return rw_v2(fd, 0, iov, cnt, off, flags);
}

EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return rw_v2(fd, 1, iov, cnt, off, flags);
}

EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return rw_v2(fd, 1, iov, cnt, off, flags);
}

/* SEEK_END needs the size with this process's own writes; SEEK_DATA and SEEK_HOLE the
 * data on the OSTs, which the kernel asks for. */
EXPORT off_t lseek(int fd, off_t off, int whence)
{
	struct pl_file *f;
	struct nacre_attr a;
	off_t r;
	int rc;

	if ((whence == SEEK_DATA || whence == SEEK_HOLE) && !pl_inside && pl_fd_known(fd))
		pl_fd_to_kernel(fd, 0);
	f = whence == SEEK_END ? enter(fd) : NULL;
	if (!f)
		return pl_real.lseek(fd, off, whence);
	rc = nacre_file_attr(pl_fd_nf(f), &a);
	if (rc < 0) {
		r = pl_fail(rc);
	} else if (off < 0 && (uint64_t)-off > a.size) {
		errno = EINVAL;
		r = -1;
	} else {
		r = pl_real.lseek(fd, (off_t)a.size + off, SEEK_SET);
		pl_count(PL_C_SEEK, 0);
	}
	leave(f, 0);
	return r;
}

EXPORT off_t lseek64(int fd, off_t off, int whence)
{
	return lseek(fd, off, whence);
}

static int sync_fd(int fd, int datasync)
{
	struct pl_file *f = enter(fd);
	int rc;

	if (!f)
		return datasync ? pl_real.fdatasync(fd) : pl_real.fsync(fd);
	rc = nacre_fsync(pl_fd_nf(f), datasync);
	pl_count(PL_C_SYNC, 0);
	leave(f, 0);
	return rc < 0 ? pl_fail(rc) : 0;
}

EXPORT int fsync(int fd)
{
	return sync_fd(fd, 0);
}

EXPORT int fdatasync(int fd)
{
	return sync_fd(fd, 1);
}
