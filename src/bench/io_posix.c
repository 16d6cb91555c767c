/* io_posix.c - the POSIX back end: open/pread/pwrite/fsync on any mounted file system. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench/bench.h"

static int px_init(const struct bench_opts *o)
{
	(void)o;
	return 0;
}

static void px_fini(void) {}

static int px_open(const char *path, int flags, int shared, void **h)
{
	int oflags = O_CLOEXEC;
	int fd;

	(void)shared;
	if ((flags & BENCH_O_READ) && (flags & BENCH_O_WRITE))
		oflags |= O_RDWR;
	else if (flags & BENCH_O_WRITE)
		oflags |= O_WRONLY;
	else
		oflags |= O_RDONLY;
	if (flags & BENCH_O_CREATE)
		oflags |= O_CREAT;
	fd = open(path, oflags, 0644);
	if (fd < 0)
		return -errno;
	/* The descriptor travels in the pointer: no allocation per open, as mdtest needs. */
	*h = (void *)(intptr_t)(fd + 1);
	return 0;
}

static int fd_of(void *h)
{
	return (int)(intptr_t)h - 1;
}

static ssize_t px_pwrite(void *h, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd_of(h), (const char *)buf + done, len - done,
				   (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static ssize_t px_pread(void *h, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd_of(h), (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* end of file: the caller reports the short read */
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int px_fsync(void *h)
{
	return fsync(fd_of(h)) < 0 ? -errno : 0;
}

static int px_close(void *h)
{
	return close(fd_of(h)) < 0 ? -errno : 0;
}

static int px_remove(const char *path)
{
	return unlink(path) < 0 ? -errno : 0;
}

static int px_mkdir(const char *path)
{
	return mkdir(path, 0755) < 0 ? -errno : 0;
}

static int px_rmdir(const char *path)
{
	return rmdir(path) < 0 ? -errno : 0;
}

static int px_stat(const char *path, uint64_t *size)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	*size = (uint64_t)st.st_size;
	return 0;
}

static int px_statfs(const char *path, struct bench_fsinfo *out)
{
	struct statvfs sv;

	if (statvfs(path, &sv) < 0)
		return -errno;
	out->bytes_total = (uint64_t)sv.f_blocks * sv.f_frsize;
	out->bytes_free = (uint64_t)sv.f_bfree * sv.f_frsize;
	out->files_total = sv.f_files;
	out->files_free = sv.f_ffree;
	return 0;
}

const struct bench_io bench_io_posix = {
	.name = "POSIX",
	.init = px_init,
	.fini = px_fini,
	.open = px_open,
	.pwrite = px_pwrite,
	.pread = px_pread,
	.fsync = px_fsync,
	.close = px_close,
	.remove = px_remove,
	.mkdir = px_mkdir,
	.rmdir = px_rmdir,
	.stat = px_stat,
	.statfs = px_statfs,
};
