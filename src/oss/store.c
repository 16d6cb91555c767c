/* store.c - OST objects as plain files under DIR/O/<hh>/, accessed with pread/pwrite.
 *
 * Reads and writes go through the target's fd cache (fdcache.h) so that a stream of RPCs
 * to one object does not open and close it each time; destroy forgets the cached fd before
 * it answers, so a later object of that name is a new file. Punch and sync open their own
 * fd (same inode: nothing goes stale). */
#include "oss/store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/log.h"
#include "oss/fdcache.h"
#include "proto/wire.h"

#define OBJ_MODE 0600 /* objects are only ever read through the OSS */
#define OBJ_DIR_MODE 0755

static unsigned obj_hash(const struct nacre_fid *fid)
{
	return (unsigned)(((uint64_t)fid->oid ^ fid->seq ^ (fid->seq >> 32)) & 0xff);
}

void oss_store_obj_name(const struct oss_obj_id *id, char out[OSS_OBJ_NAME_MAX])
{
	snprintf(out, OSS_OBJ_NAME_MAX, "%02x/%" PRIx64 "-%" PRIx32 "-%" PRIx32 "-%" PRIu32
		 "-%" PRIu32, obj_hash(&id->fid), id->fid.seq, id->fid.oid, id->fid.ver,
		 id->stripe, id->gen);
}

int oss_store_prepare(int dir_fd)
{
	int created_top = 0, created_sub = 0;

	if (mkdirat(dir_fd, OSS_OBJ_DIR, OBJ_DIR_MODE) == 0)
		created_top = 1;
	else if (errno != EEXIST)
		return -errno;
	int obj_fd = openat(dir_fd, OSS_OBJ_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (obj_fd < 0)
		return -errno;
	for (unsigned i = 0; i < 256; i++) {
		char hh[4];
		snprintf(hh, sizeof(hh), "%02x", i);
		if (mkdirat(obj_fd, hh, OBJ_DIR_MODE) == 0) {
			created_sub = 1;
		} else if (errno != EEXIST) {
			int rc = -errno;
			close(obj_fd);
			return rc;
		}
	}
	/* New directory entries must survive a crash before the superblock says "formatted". */
	if ((created_sub && fsync(obj_fd) < 0) || (created_top && fsync(dir_fd) < 0)) {
		int rc = -errno;
		close(obj_fd);
		return rc;
	}
	return obj_fd;
}

/* close() that reports a late write-back error, which some file systems defer to close. */
static int close_rc(int fd, int rc)
{
	if (close(fd) < 0 && rc == 0 && errno != EINTR)
		rc = -errno;
	return rc;
}

/* An fd of the object for I/O: cached when the target has a cache. Returns the fd or
 * -errno; release with obj_put(). */
static int obj_get(struct oss_target *t, const char *name, int create, struct oss_fd **ref)
{
	*ref = NULL;
	if (t->fds)
		return oss_fdcache_get(t->fds, name, create, ref);
	int fd = openat(t->obj_fd, name, (create ? O_WRONLY | O_CREAT : O_RDONLY) | O_CLOEXEC,
			OBJ_MODE);
	return fd < 0 ? -errno : fd;
}

static int obj_put(struct oss_target *t, int fd, struct oss_fd *ref, int rc)
{
	if (ref) {
		oss_fdcache_put(t->fds, ref);
		return rc;
	}
	return close_rc(fd, rc);
}

/* Direct I/O: a write of whole 4 KiB blocks at a block-aligned offset goes to the object
 * with O_DIRECT, from an aligned copy of the request's bytes (they sit after the request
 * body in the receive buffer); a read of such a range of which the page cache holds
 * nothing is read with O_DIRECT. Measured on ext4 (docs/PERFORMANCE.md): the copy into the
 * page cache, its allocation and the later write-back cost the OSS more CPU than a memcpy
 * and a write the device does by DMA; and nothing stays dirty to be written at fsync. */
#define DIRECT_ALIGN 4096u
#define DIRECT_MIN (64u * 1024) /* smaller writes are cheaper through the page cache */
#define BOUNCE_LEN (1u << 20)   /* per worker thread */

static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;

static void bounce_key_make(void)
{
	pthread_key_create(&bounce_key, free);
}

static void *bounce_buffer(void)
{
	void *b;

	pthread_once(&bounce_once, bounce_key_make);
	b = pthread_getspecific(bounce_key);
	if (!b && posix_memalign(&b, DIRECT_ALIGN, BOUNCE_LEN) == 0 &&
	    pthread_setspecific(bounce_key, b) != 0) {
		free(b);
		b = NULL;
	}
	return b;
}

static void direct_refused(struct oss_target *t)
{
	if (atomic_exchange(&t->direct_io, 0))
		LOG_WARN("store", "%s: the file system under %s refuses O_DIRECT: reading and "
			 "writing through the page cache", t->name, t->dir);
}

/* Writes buf with O_DIRECT. Returns 0, -errno, or 1 when the caller must write through
 * the page cache (not aligned, no memory, or the file system refuses O_DIRECT). */
static int write_direct(struct oss_target *t, const char *name, uint64_t off,
			const uint8_t *buf, size_t len)
{
	int fd, rc = 0;
	uint8_t *bounce;

	if (!atomic_load_explicit(&t->direct_io, memory_order_relaxed) || len < DIRECT_MIN ||
	    off % DIRECT_ALIGN || len % DIRECT_ALIGN)
		return 1;
	bounce = (uintptr_t)buf % DIRECT_ALIGN ? bounce_buffer() : NULL;
	if ((uintptr_t)buf % DIRECT_ALIGN && !bounce)
		return 1;
	fd = openat(t->obj_fd, name, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		if (errno != EINVAL)
			return -errno;
		rc = 1;
		goto refused;
	}
	for (size_t done = 0; done < len;) {
		size_t n = len - done;
		const uint8_t *src = buf + done;
		if (bounce) {
			n = n < BOUNCE_LEN ? n : BOUNCE_LEN;
			memcpy(bounce, src, n);
			src = bounce;
		}
		ssize_t w = pwrite(fd, src, n, (off_t)(off + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EINVAL && done == 0) {
			rc = 1;
			close(fd);
			goto refused;
		}
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)w;
	}
	if (rc == 0)
		atomic_fetch_add_explicit(&t->stats.direct_write_bytes, len, memory_order_relaxed);
	return close_rc(fd, rc);

refused:
	direct_refused(t);
	return rc;
}

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* Linux 6.5; Debian 12's headers predate it */
#endif
struct cachestat_range_v1 {
	uint64_t off, len;
};
struct cachestat_v1 {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* 1 if the page cache holds none of [off, off + len) of fd, asked without any I/O (a
 * RWF_NOWAIT read would start readahead and read the range twice); 0 if it holds some, or
 * the kernel cannot say. */
static int uncached(int fd, uint64_t off, size_t len)
{
	struct cachestat_range_v1 r = {off, len};
	struct cachestat_v1 st;

	return syscall(__NR_cachestat, fd, &r, &st, 0) == 0 && st.nr_cache == 0;
}

/* Reads [off, off + len) of the object, block-aligned, at least DIRECT_MIN, none of it in
 * the page cache, with O_DIRECT into buf (or through the bounce buffer when buf is not
 * aligned): a cold stream costs the OSS no page-cache pages, a hot one still comes from
 * them. Returns the bytes read (short at the end of the object), or -EAGAIN when the caller
 * must read through the page cache. */
static ssize_t read_direct(struct oss_target *t, const char *name, int fd, uint64_t off,
			   uint8_t *buf, size_t len)
{
	ssize_t n = 0;
	size_t done = 0;
	int dfd;

	if (!atomic_load_explicit(&t->direct_io, memory_order_relaxed) || len < DIRECT_MIN ||
	    off % DIRECT_ALIGN || len % DIRECT_ALIGN || !uncached(fd, off, len))
		return -EAGAIN;
	uint8_t *bounce = (uintptr_t)buf % DIRECT_ALIGN ? bounce_buffer() : NULL;
	if ((uintptr_t)buf % DIRECT_ALIGN && !bounce)
		return -EAGAIN;
	dfd = openat(t->obj_fd, name, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == EINVAL)
			direct_refused(t);
		return -EAGAIN;
	}
	while (done < len) {
		size_t want = len - done;
		uint8_t *dst = bounce ? bounce : buf + done;
		if (bounce && want > BOUNCE_LEN)
			want = BOUNCE_LEN;
		n = pread(dfd, dst, want, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno == EINVAL)
				direct_refused(t);
			n = done ? 0 : -EAGAIN; /* what was read stands; else the ordinary read */
			break;
		}
		if (bounce)
			memcpy(buf + done, bounce, (size_t)n);
		done += (size_t)n;
		if ((size_t)n < want)
			break; /* end of object */
	}
	close(dfd);
	if (n < 0)
		return n;
	atomic_fetch_add_explicit(&t->stats.direct_read_bytes, done, memory_order_relaxed);
	return (ssize_t)done;
}

int oss_store_write(struct oss_target *t, const struct oss_obj_id *id, uint64_t off,
		    const void *buf, size_t len)
{
	char name[OSS_OBJ_NAME_MAX];

	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return -EFBIG;
	if (len == 0)
		return 0; /* nothing to store; do not create an empty object */
	oss_store_obj_name(id, name);
	struct oss_fd *ref;
	int fd = obj_get(t, name, 1, &ref);
	if (fd < 0)
		return fd;

	/* No rollback on a failed write: other requests may be writing the same object at
	 * the same time, and cutting it back could drop their acknowledged data. As with
	 * pwrite(2), a failed range is left undefined and the error is reported. */
	const uint8_t *p = buf;
	size_t done = 0;
	int rc = write_direct(t, name, off, p, len); /* the object exists now */
	if (rc <= 0)
		return obj_put(t, fd, ref, rc);
	rc = 0;
	while (done < len) {
		ssize_t n = pwrite(fd, p + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (n == 0) {
			rc = -EIO;
			break;
		}
		done += (size_t)n;
	}
	return obj_put(t, fd, ref, rc);
}

int oss_store_read(struct oss_target *t, const struct oss_obj_id *id, uint64_t off, void *buf,
		   size_t len, size_t *got)
{
	char name[OSS_OBJ_NAME_MAX];

	*got = 0;
	if (len == 0 || off > (uint64_t)INT64_MAX)
		return 0; /* nothing can live past INT64_MAX: read as end of object */
	if (len > (uint64_t)INT64_MAX - off)
		len = (size_t)((uint64_t)INT64_MAX - off);
	oss_store_obj_name(id, name);
	struct oss_fd *ref;
	int fd = obj_get(t, name, 0, &ref);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;

	uint8_t *p = buf;
	size_t done = 0;
	int rc = 0;
	ssize_t direct = read_direct(t, name, fd, off, p, len);
	if (direct >= 0) {
		*got = (size_t)direct;
		obj_put(t, fd, ref, 0);
		return 0;
	}
	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (n == 0)
			break; /* end of object */
		done += (size_t)n;
	}
	*got = done;
	obj_put(t, fd, ref, 0); /* a read: nothing for close to report */
	return rc;
}

int oss_store_punch(struct oss_target *t, const struct oss_obj_id *id, uint64_t size)
{
	char name[OSS_OBJ_NAME_MAX];
	struct stat st;

	oss_store_obj_name(id, name);
	int fd = openat(t->obj_fd, name, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int rc = 0;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	/* Only shrink: a larger file size is served by short reads the client zero-fills. */
	else if (size < (uint64_t)st.st_size && ftruncate(fd, (off_t)size) < 0)
		rc = -errno;
	return close_rc(fd, rc);
}

int oss_store_destroy(struct oss_target *t, const struct oss_obj_id *id)
{
	char name[OSS_OBJ_NAME_MAX];

	oss_store_obj_name(id, name);
	int rc = unlinkat(t->obj_fd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (t->fds)
		oss_fdcache_forget(t->fds, name);
	return rc;
}

int oss_store_getattr(struct oss_target *t, const struct oss_obj_id *id, uint64_t *size,
		      uint64_t *blocks)
{
	char name[OSS_OBJ_NAME_MAX];
	struct stat st;

	*size = 0;
	*blocks = 0;
	oss_store_obj_name(id, name);
	if (fstatat(t->obj_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	*size = (uint64_t)st.st_size;
	*blocks = (uint64_t)st.st_blocks;
	return 0;
}

int oss_store_fallocate(struct oss_target *t, const struct oss_obj_id *id, uint32_t mode,
			uint64_t off, uint64_t len)
{
	char name[OSS_OBJ_NAME_MAX];
	int punch = (mode & WIRE_FALLOC_PUNCH_HOLE) != 0;

	if (off > (uint64_t)INT64_MAX || len == 0 || len > (uint64_t)INT64_MAX - off)
		return -EINVAL;
	oss_store_obj_name(id, name);
	/* its own fd, as punch: the cached ones may be read-only */
	int fd = openat(t->obj_fd, name, O_WRONLY | (punch ? 0 : O_CREAT) | O_CLOEXEC, OBJ_MODE);
	if (fd < 0)
		return punch && errno == ENOENT ? 0 : -errno;
	int rc = 0;
	_Static_assert(WIRE_FALLOC_KEEP_SIZE == FALLOC_FL_KEEP_SIZE &&
			       WIRE_FALLOC_PUNCH_HOLE == FALLOC_FL_PUNCH_HOLE &&
			       WIRE_FALLOC_ZERO_RANGE == FALLOC_FL_ZERO_RANGE,
		       "the wire's fallocate modes are Linux's");
	while (fallocate(fd, (int)mode, (off_t)off, (off_t)len) < 0) {
		if (errno != EINTR) {
			rc = -errno;
			break;
		}
	}
	return close_rc(fd, rc);
}

int oss_store_seek(struct oss_target *t, const struct oss_obj_id *id, uint32_t whence,
		   uint64_t off, uint64_t *out)
{
	char name[OSS_OBJ_NAME_MAX];
	struct stat st;

	*out = off;
	if (off > (uint64_t)INT64_MAX)
		return whence == WIRE_SEEK_HOLE ? 0 : -ENXIO;
	oss_store_obj_name(id, name);
	int fd = openat(t->obj_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) /* never written: all hole */
		return errno != ENOENT ? -errno : whence == WIRE_SEEK_HOLE ? 0 : -ENXIO;
	int rc = 0;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
	} else if (off >= (uint64_t)st.st_size) {
		rc = whence == WIRE_SEEK_HOLE ? 0 : -ENXIO; /* lseek(2) says ENXIO for both */
	} else {
		off_t r = lseek(fd, (off_t)off, whence == WIRE_SEEK_DATA ? SEEK_DATA : SEEK_HOLE);
		if (r < 0)
			rc = -errno; /* ENXIO: no data after off */
		else
			*out = (uint64_t)r;
	}
	close(fd);
	return rc;
}

/* Converts a count of frsize-byte blocks to KiB without overflowing. */
static uint64_t blocks_to_kb(uint64_t blocks, uint64_t frsize)
{
	if (frsize >= 1024)
		return blocks * (frsize / 1024);
	if (frsize == 0)
		return 0;
	return blocks / (1024 / frsize);
}

int oss_store_statfs(struct oss_target *t, struct nacre_statfs *st)
{
	struct statvfs v;

	if (fstatvfs(t->dir_fd, &v) < 0)
		return -errno;
	uint64_t fr = v.f_frsize ? v.f_frsize : v.f_bsize;
	st->kb_total = blocks_to_kb(v.f_blocks, fr);
	st->kb_free = blocks_to_kb(v.f_bfree, fr);
	st->kb_avail = blocks_to_kb(v.f_bavail, fr);
	st->files = v.f_files;
	st->ffree = v.f_ffree;
	st->bsize = (uint32_t)v.f_bsize;
	st->namemax = (uint32_t)v.f_namemax;
	return 0;
}

int oss_store_sync(struct oss_target *t, const struct oss_obj_id *id)
{
	char name[OSS_OBJ_NAME_MAX];

	if (!id)
		return syncfs(t->dir_fd) < 0 ? -errno : 0;
	oss_store_obj_name(id, name);
	int fd = openat(t->obj_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int rc = fdatasync(fd) < 0 ? -errno : 0;
	close(fd);
	if (rc)
		return rc;

	/* A new object's directory entry must be durable too, or a crash loses the file. */
	name[2] = '\0';
	int dfd = openat(t->obj_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	rc = fsync(dfd) < 0 ? -errno : 0;
	close(dfd);
	return rc;
}
