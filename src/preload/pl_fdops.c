/* pl_fdops.c - the descriptor calls: open and close, dup, fcntl, fstat; and those after which
 * the kernel must see the data itself (mmap, locks, ftruncate, copy_file_range...).
 * Built without _FILE_OFFSET_BITS=64, as pl_io.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/pl.h"

#define EXPORT __attribute__((visibility("default")))

/* glibc's old stat entry points: binaries built before 2.33 call these */
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

static int active(void)
{
	if (pl_inside)
		return 0;
	pl_init();
	return 1;
}

static int opened(int fd, int flags)
{
	if (fd >= 0 && active())
		pl_fd_opened(fd, flags);
	return fd;
}

/* The mode argument of an open that creates; the kernel ignores it otherwise. */
#define MODE_ARG(flags, mode)                                                               \
	do {                                                                                \
		va_list ap_;                                                                \
		va_start(ap_, flags);                                                       \
		mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ?              \
			       va_arg(ap_, mode_t) : 0;                                     \
		va_end(ap_);                                                                \
	} while (0)

/* open(path) is openat(AT_FDCWD, path): one way in for the four names. */
static int open_at(int dirfd, const char *path, int flags, mode_t mode)
{
	pl_init();
	return opened(pl_real.openat(dirfd, path, flags, mode), flags);
}

EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode;

	MODE_ARG(flags, mode);
	return open_at(AT_FDCWD, path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode;

	MODE_ARG(flags, mode);
	return open_at(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

EXPORT int __open_2(const char *path, int flags)
{
	return open_at(AT_FDCWD, path, flags, 0);
}

EXPORT int __open64_2(const char *path, int flags)
{
	return open_at(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode;

	MODE_ARG(flags, mode);
	return open_at(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode;

	MODE_ARG(flags, mode);
	return open_at(dirfd, path, flags | O_LARGEFILE, mode);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return open_at(dirfd, path, flags, 0);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return open_at(dirfd, path, flags | O_LARGEFILE, 0);
}

EXPORT int creat(const char *path, mode_t mode)
{
	return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

EXPORT int creat64(const char *path, mode_t mode)
{
	return open64(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

EXPORT int close(int fd)
{
	int rc = 0, r;

	if (active() && pl_fd_known(fd))
		rc = pl_fd_closing(fd);
	r = pl_real.close(fd);
	if (r == 0 && rc < 0)
		return pl_fail(rc); /* a write that failed in the background */
	return r;
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (active() && !(flags & CLOSE_RANGE_CLOEXEC))
		for (unsigned fd = first; fd <= last && fd < 65536; fd++)
			if (pl_fd_known((int)fd))
				pl_fd_closing((int)fd);
	return pl_real.close_range(first, last, flags);
}

EXPORT int dup(int fd)
{
	int nfd;

	pl_init();
	nfd = pl_real.dup(fd);
	if (nfd >= 0 && active() && pl_fd_known(fd))
		pl_fd_duped(fd, nfd);
	return nfd;
}

/* dup2 and dup3 close newfd first: its handle is closed while newfd still names it. */
static void before_replace(int oldfd, int newfd)
{
	if (oldfd != newfd && active() && pl_fd_known(newfd))
		pl_fd_closing(newfd);
}

static int after_dup(int oldfd, int newfd)
{
	if (newfd >= 0 && newfd != oldfd && active() && pl_fd_known(oldfd))
		pl_fd_duped(oldfd, newfd);
	return newfd;
}

EXPORT int dup2(int oldfd, int newfd)
{
	pl_init();
	if (fcntl(oldfd, F_GETFD) < 0)
		return pl_real.dup2(oldfd, newfd); /* EBADF: newfd stays open */
	before_replace(oldfd, newfd);
	return after_dup(oldfd, pl_real.dup2(oldfd, newfd));
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	pl_init();
	if (oldfd == newfd || fcntl(oldfd, F_GETFD) < 0)
		return pl_real.dup3(oldfd, newfd, flags);
	before_replace(oldfd, newfd);
	return after_dup(oldfd, pl_real.dup3(oldfd, newfd, flags));
}

static int is_lock_cmd(int cmd)
{
	return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
}

static int fcntl_with(int fd, int cmd, unsigned long arg)
{
	pl_init();
	if (!active() || !pl_fd_known(fd))
		return pl_real.fcntl(fd, cmd, arg);
	/* a locked range is read and written through the mount, whose lock grants keep the
	 * kernel's view coherent; an appending file gets the mount's atomic appends */
	if (is_lock_cmd(cmd) || (cmd == F_SETFL && (arg & O_APPEND)))
		pl_fd_to_kernel(fd, 1);
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		return after_dup(fd, pl_real.fcntl(fd, cmd, arg));
	return pl_real.fcntl(fd, cmd, arg);
}

/* fcntl's third argument, an int or a pointer: taken as a word, as glibc does. */
#define WORD_ARG(last, arg)                                                                 \
	do {                                                                                \
		va_list ap_;                                                                \
		va_start(ap_, last);                                                        \
		arg = va_arg(ap_, unsigned long);                                           \
		va_end(ap_);                                                                \
	} while (0)

EXPORT int fcntl(int fd, int cmd, ...)
{
	unsigned long arg;

	WORD_ARG(cmd, arg);
	return fcntl_with(fd, cmd, arg);
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	unsigned long arg;

	WORD_ARG(cmd, arg);
	return fcntl_with(fd, cmd, arg);
}

EXPORT int flock(int fd, int op)
{
	pl_init();
	if (active() && pl_fd_known(fd))
		pl_fd_to_kernel(fd, 1);
	return pl_real.flock(fd, op);
}

/* AT_EMPTY_PATH's "" (or NULL, which glibc declares impossible but the kernel takes). */
__attribute__((noinline)) static int empty_path(const char *path)
{
	return !path || !path[0];
}

/* The kernel's answer with the size this process wrote through libnacre. */
static void patch_size(int fd, off_t *size, blkcnt_t *blocks)
{
	struct pl_file *f;
	struct nacre_attr a;

	if (!active() || !pl_fd_known(fd))
		return;
	f = pl_fd_get(fd);
	if (!f)
		return;
	pl_inside++;
	if (nacre_file_attr(pl_fd_nf(f), &a) == 0 && (off_t)a.size != *size) {
		*size = (off_t)a.size;
		if (*blocks < (blkcnt_t)((a.size + 511) / 512))
			*blocks = (blkcnt_t)((a.size + 511) / 512);
	}
	pl_inside--;
	pl_count(PL_C_STAT, 0);
	pl_fd_put(f, 0);
}

EXPORT int fstat(int fd, struct stat *st)
{
	pl_init();
	int r = pl_real.fstat(fd, st);

	if (r == 0)
		patch_size(fd, &st->st_size, &st->st_blocks);
	return r;
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	return fstat(fd, (struct stat *)st); /* the same layout on 64-bit Linux */
}

EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	(void)ver;
	return fstat(fd, st);
}

EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	(void)ver;
	return fstat(fd, (struct stat *)st);
}

EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	pl_init();
	int r = pl_real.fstatat(dirfd, path, st, flags);

	if (r == 0 && (flags & AT_EMPTY_PATH) && empty_path(path))
		patch_size(dirfd, &st->st_size, &st->st_blocks);
	return r;
}

EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	return fstatat(dirfd, path, (struct stat *)st, flags);
}

EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *st)
{
	pl_init();
	int r = pl_real.statx(dirfd, path, flags, mask, st);

	if (r == 0 && (flags & AT_EMPTY_PATH) && empty_path(path) && (st->stx_mask & STATX_SIZE)) {
		off_t size = (off_t)st->stx_size;
		blkcnt_t blocks = (blkcnt_t)st->stx_blocks;

		patch_size(dirfd, &size, &blocks);
		st->stx_size = (uint64_t)size;
		st->stx_blocks = (uint64_t)blocks;
	}
	return r;
}

/* ---- the kernel takes the data over ---- */

static void to_kernel(int fd, int forever)
{
	if (active() && pl_fd_known(fd))
		pl_fd_to_kernel(fd, forever);
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	pl_init();
	if (!(flags & MAP_ANONYMOUS))
		to_kernel(fd, 1); /* the mapping's pages are the kernel's */
	return pl_real.mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

EXPORT int ftruncate(int fd, off_t len)
{
	pl_init();
	to_kernel(fd, 0);
	return pl_real.ftruncate(fd, len);
}

EXPORT int ftruncate64(int fd, off_t len)
{
	return ftruncate(fd, len);
}

EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	pl_init();
	to_kernel(fd, 0);
	return pl_real.fallocate(fd, mode, off, len);
}

EXPORT int fallocate64(int fd, int mode, off_t off, off_t len)
{
	return fallocate(fd, mode, off, len);
}

EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
	pl_init();
	to_kernel(fd, 0);
	return pl_real.posix_fallocate(fd, off, len);
}

EXPORT int posix_fallocate64(int fd, off_t off, off_t len)
{
	return posix_fallocate(fd, off, len);
}

EXPORT ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t len,
			       unsigned flags)
{
	pl_init();
	if (active() && (pl_fd_known(in) || pl_fd_known(out))) {
		/* this library serves the bytes: a copier falls back to read and write */
		errno = EXDEV;
		return -1;
	}
	return pl_real.copy_file_range(in, in_off, out, out_off, len, flags);
}

EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t len)
{
	pl_init();
	to_kernel(in, 0);
	to_kernel(out, 0);
	return pl_real.sendfile(out, in, off, len);
}

EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t len)
{
	return sendfile(out, in, off, len);
}

EXPORT ssize_t splice(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned flags)
{
	pl_init();
	to_kernel(in, 0);
	to_kernel(out, 0);
	return pl_real.splice(in, in_off, out, out_off, len, flags);
}

/* _exit skips the destructors: what this process wrote must still reach the servers, as
 * the kernel's page cache would keep it. */
EXPORT void _exit(int status)
{
	if (active() && getpid() == pl_pid) /* not a vfork child: the handles are its own */
		pl_finish();
	pl_real._exit(status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	_exit(status);
}

EXPORT FILE *fdopen(int fd, const char *mode)
{
	pl_init();
	/* stdio reads, writes and closes it without the entry points above */
	to_kernel(fd, 1);
	return pl_real.fdopen(fd, mode);
}
