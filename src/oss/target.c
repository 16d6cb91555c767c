/* target.c - open, check, lock and format an OST directory (superblock in target.h). */
#include "oss/target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/key.h"
#include "common/layout.h"
#include "common/log.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "oss/fdcache.h"
#include "oss/store.h"
#include "proto/cursor.h"

#define SB_TMP_NAME OSS_SB_NAME ".tmp"
#define SB_FSNAME_LEN 16
#define SB_CRC_OFF 60

static void sb_encode(const struct oss_target *t, uint8_t out[OSS_SB_LEN])
{
	struct wire_cursor c;
	uint8_t fsname[SB_FSNAME_LEN] = { 0 };

	memcpy(fsname, t->fsname, strnlen(t->fsname, NACRE_FSNAME_MAX));
	wire_cursor_init_write(&c, out, OSS_SB_LEN);
	wire_put_bytes(&c, OSS_SB_MAGIC, 8);
	wire_put_u32(&c, OSS_SB_VERSION);
	wire_put_u32(&c, t->index);
	wire_put_bytes(&c, fsname, sizeof(fsname));
	wire_put_bytes(&c, t->uuid, OSS_UUID_LEN);
	wire_put_i64(&c, t->created);
	wire_put_u32(&c, 0);
	wire_put_u32(&c, crc32c(0, out, SB_CRC_OFF));
}

/* Decodes a superblock of n bytes into t. Checks magic, then version (so a newer format is
 * reported as such even if its length differs), then length and checksum. */
static int sb_decode(struct oss_target *t, const uint8_t *buf, size_t n, const char *dir,
		     char *err, size_t err_len)
{
	struct wire_cursor c;
	uint8_t magic[8], fsname[SB_FSNAME_LEN];

	if (n < 12 || memcmp(buf, OSS_SB_MAGIC, 8) != 0) {
		snprintf(err, err_len, "%s/%s is not a nacre OST superblock (bad magic): the "
			 "directory holds something else; choose another --ost directory", dir,
			 OSS_SB_NAME);
		return -NACRE_EBADMAGIC;
	}
	wire_cursor_init_read(&c, buf, n);
	wire_get_bytes(&c, magic, sizeof(magic));
	uint32_t version = wire_get_u32(&c);
	if (version != OSS_SB_VERSION) {
		snprintf(err, err_len, "%s has OST format version %u; this nacre-oss knows only "
			 "version %u: run a nacre-oss that matches the OST", dir, version,
			 OSS_SB_VERSION);
		return -NACRE_EFORMAT;
	}
	uint32_t crc = 0;
	if (n == OSS_SB_LEN) {
		crc = (uint32_t)buf[SB_CRC_OFF] | (uint32_t)buf[SB_CRC_OFF + 1] << 8 |
		      (uint32_t)buf[SB_CRC_OFF + 2] << 16 | (uint32_t)buf[SB_CRC_OFF + 3] << 24;
	}
	if (n != OSS_SB_LEN || crc != crc32c(0, buf, SB_CRC_OFF)) {
		snprintf(err, err_len, "%s/%s is corrupt (%s): restore it from a backup or "
			 "reformat the OST (its data is lost)", dir, OSS_SB_NAME,
			 n != OSS_SB_LEN ? "wrong length" : "checksum mismatch");
		return -NACRE_EBADMAGIC;
	}
	t->index = wire_get_u32(&c);
	wire_get_bytes(&c, fsname, sizeof(fsname));
	wire_get_bytes(&c, t->uuid, OSS_UUID_LEN);
	t->created = wire_get_i64(&c);
	size_t flen = strnlen((const char *)fsname, sizeof(fsname));
	if (!wire_cursor_ok(&c) || flen == 0 || flen > NACRE_FSNAME_MAX) {
		snprintf(err, err_len, "%s/%s is corrupt (bad fsname field)", dir, OSS_SB_NAME);
		return -NACRE_EBADMAGIC;
	}
	memcpy(t->fsname, fsname, flen);
	t->fsname[flen] = '\0';
	return 0;
}

static int read_all(int fd, uint8_t *buf, size_t cap, size_t *got)
{
	size_t done = 0;
	while (done < cap) {
		ssize_t n = pread(fd, buf + done, cap - done, (off_t)done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	*got = done;
	return 0;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pwrite(fd, buf + done, len - done, (off_t)done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

/* 1 if dir holds nothing but lost+found (a fresh file system's root is fine to format). */
static int dir_is_empty(int dir_fd, int *empty)
{
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	*empty = 1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "lost+found")) {
			*empty = 0;
			break;
		}
	}
	closedir(d);
	return 0;
}

static int lock_sb(int fd, const char *dir, char *err, size_t err_len)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		snprintf(err, err_len, "%s is already served by another nacre-oss (%s is locked): "
			 "stop that process or choose another --ost directory", dir, OSS_SB_NAME);
		return -EBUSY;
	}
	int rc = -errno;
	snprintf(err, err_len, "cannot lock %s/%s: %s", dir, OSS_SB_NAME, strerror(-rc));
	return rc;
}

/* Writes a new superblock for t (fsname and index set) through a temp file, and leaves the
 * locked superblock fd in t->sb_fd. The lock is taken on the temp file before the rename so
 * no other process can ever hold the new superblock unlocked. */
static int format_sb(struct oss_target *t, char *err, size_t err_len)
{
	uint8_t buf[OSS_SB_LEN];
	int rc;

	rc = key_random(t->uuid, OSS_UUID_LEN);
	if (rc) {
		snprintf(err, err_len, "cannot get random bytes for the OST uuid: %s",
			 strerror(-rc));
		return rc;
	}
	t->uuid[6] = (uint8_t)((t->uuid[6] & 0x0f) | 0x40); /* RFC 4122 version 4 */
	t->uuid[8] = (uint8_t)((t->uuid[8] & 0x3f) | 0x80);
	t->created = (int64_t)time(NULL);
	sb_encode(t, buf);

	int fd = openat(t->dir_fd, SB_TMP_NAME, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, err_len, "cannot create %s/%s: %s", t->dir, SB_TMP_NAME,
			 strerror(-rc));
		return rc;
	}
	rc = lock_sb(fd, t->dir, err, err_len);
	if (rc)
		goto out_unlink;
	rc = write_all(fd, buf, sizeof(buf));
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (!rc && renameat(t->dir_fd, SB_TMP_NAME, t->dir_fd, OSS_SB_NAME) < 0)
		rc = -errno;
	if (rc) {
		snprintf(err, err_len, "cannot write %s/%s: %s", t->dir, OSS_SB_NAME,
			 strerror(-rc));
		goto out_unlink;
	}
	if (fsync(t->dir_fd) < 0) {
		rc = -errno;
		snprintf(err, err_len, "cannot fsync %s: %s", t->dir, strerror(-rc));
		close(fd);
		return rc;
	}
	t->sb_fd = fd;
	return 0;

out_unlink:
	unlinkat(t->dir_fd, SB_TMP_NAME, 0);
	close(fd);
	return rc;
}

static int format_target(struct oss_target *t, char *err, size_t err_len)
{
	int empty = 0;
	int rc = dir_is_empty(t->dir_fd, &empty);
	if (rc) {
		snprintf(err, err_len, "cannot list %s: %s", t->dir, strerror(-rc));
		return rc;
	}
	if (!empty) {
		snprintf(err, err_len, "%s is not empty; refusing to format (it has no %s): "
			 "empty it or choose another --ost directory", t->dir, OSS_SB_NAME);
		return -ENOTEMPTY;
	}
	/* Objects directories first, superblock last: a superblock means a complete OST. */
	int ofd = oss_store_prepare(t->dir_fd);
	if (ofd < 0) {
		snprintf(err, err_len, "cannot create %s/%s: %s", t->dir, OSS_OBJ_DIR,
			 strerror(-ofd));
		return ofd;
	}
	close(ofd);
	rc = format_sb(t, err, err_len);
	if (rc)
		return rc;
	char uuid[37];
	oss_target_uuid_str(t, uuid);
	LOG_INFO("target", "formatted %s as %s-%s (uuid %s)", t->dir, t->fsname, t->name, uuid);
	return 0;
}

static int load_target(struct oss_target *t, const char *fsname, uint32_t index, char *err,
		       size_t err_len)
{
	uint8_t buf[4096];
	size_t n = 0;

	int rc = lock_sb(t->sb_fd, t->dir, err, err_len);
	if (rc)
		return rc;
	rc = read_all(t->sb_fd, buf, sizeof(buf), &n);
	if (rc) {
		snprintf(err, err_len, "cannot read %s/%s: %s", t->dir, OSS_SB_NAME,
			 strerror(-rc));
		return rc;
	}
	rc = sb_decode(t, buf, n, t->dir, err, err_len);
	if (rc)
		return rc;
	if (strcmp(t->fsname, fsname) != 0) {
		snprintf(err, err_len, "%s belongs to file system %s, not %s: check --fsname "
			 "and --ost", t->dir, t->fsname, fsname);
		return -NACRE_EFSNAME;
	}
	if (t->index != index) {
		snprintf(err, err_len, "%s is OST%04x, not OST%04x as --ost says: use --ost "
			 "%u:%s", t->dir, t->index, index, t->index, t->dir);
		return -NACRE_ENOTARGET;
	}
	return 0;
}

/* Clients stop every file where one of its objects would pass LAYOUT_OBJ_MAXBYTES and
 * write behind up to there: a target whose file system holds less would refuse a write after
 * the application was told it succeeded. Tried on a sparse scratch file (no data). */
static int check_object_size(struct oss_target *t, char *err, size_t err_len)
{
	static const char probe[] = ".maxbytes-probe";
	int fd = openat(t->dir_fd, probe, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = 0;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, err_len, "cannot create %s/%s: %s", t->dir, probe, strerror(-rc));
		return rc;
	}
	if (ftruncate(fd, (off_t)LAYOUT_OBJ_MAXBYTES) < 0) {
		rc = -errno;
		if (rc == -EFBIG)
			snprintf(err, err_len, "the file system of %s cannot hold files of %llu "
				 "bytes, the size of an object nacre may write (use ext4 with 4 KiB "
				 "blocks, xfs, btrfs or tmpfs)", t->dir,
				 (unsigned long long)LAYOUT_OBJ_MAXBYTES);
		else
			snprintf(err, err_len, "cannot size %s/%s: %s", t->dir, probe,
				 strerror(-rc));
	}
	close(fd);
	unlinkat(t->dir_fd, probe, 0);
	return rc;
}

int oss_target_open(const char *dir, const char *fsname, uint32_t index, int format,
		    struct oss_target **out, char *err, size_t err_len)
{
	struct stat st;
	int rc;

	*out = NULL;
	if (!dir[0] || strlen(dir) >= PATH_MAX) {
		snprintf(err, err_len, "bad OST directory \"%s\"", dir);
		return -EINVAL;
	}
	if (stat(dir, &st) < 0) {
		rc = -errno;
		if (rc != -ENOENT) {
			snprintf(err, err_len, "cannot access %s: %s", dir, strerror(-rc));
			return rc;
		}
		if (!format)
			goto not_ost;
		rc = mkdir_p(dir, 0755);
		if (rc) {
			snprintf(err, err_len, "cannot create %s: %s", dir, strerror(-rc));
			return rc;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		snprintf(err, err_len, "%s is not a directory: --ost takes IDX:DIR", dir);
		return -ENOTDIR;
	}

	struct oss_target *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	t->dir_fd = t->obj_fd = t->sb_fd = -1;
	t->index = index;
	str_copy(t->dir, dir, sizeof(t->dir));
	str_copy(t->fsname, fsname, sizeof(t->fsname));
	snprintf(t->name, sizeof(t->name), "OST%04x", index);

	t->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->dir_fd < 0) {
		rc = -errno;
		snprintf(err, err_len, "cannot open %s: %s", dir, strerror(-rc));
		goto out_close;
	}
	rc = check_object_size(t, err, err_len); /* before a format: refused, left as it was */
	if (rc)
		goto out_close;
	t->sb_fd = openat(t->dir_fd, OSS_SB_NAME, O_RDONLY | O_CLOEXEC);
	if (t->sb_fd < 0) {
		rc = -errno;
		if (rc == -ENOENT && !format) {
			oss_target_close(t);
			goto not_ost;
		}
		if (rc == -ENOENT)
			rc = format_target(t, err, err_len);
		else
			snprintf(err, err_len, "cannot open %s/%s: %s", dir, OSS_SB_NAME,
				 strerror(-rc));
	} else {
		rc = load_target(t, fsname, index, err, err_len);
	}
	if (rc)
		goto out_close;

	/* Recreates any hash directory lost since format (cheap; EEXIST for each). */
	t->obj_fd = oss_store_prepare(t->dir_fd);
	if (t->obj_fd < 0) {
		rc = t->obj_fd;
		snprintf(err, err_len, "cannot open %s/%s: %s", dir, OSS_OBJ_DIR, strerror(-rc));
		goto out_close;
	}
	rc = oss_fdcache_create(t->obj_fd, OSS_FDCACHE_MAX, &t->fds);
	if (rc) {
		snprintf(err, err_len, "out of memory opening %s", dir);
		goto out_close;
	}
	*out = t;
	return 0;

out_close:
	oss_target_close(t);
	return rc;
not_ost:
	snprintf(err, err_len, "%s is not a nacre OST (no %s): run nacre-oss with --format to "
		 "create one", dir, OSS_SB_NAME);
	return -ENOENT;
}

void oss_target_close(struct oss_target *t)
{
	if (!t)
		return;
	oss_fdcache_destroy(t->fds);
	if (t->obj_fd >= 0)
		close(t->obj_fd);
	if (t->sb_fd >= 0)
		close(t->sb_fd);
	if (t->dir_fd >= 0)
		close(t->dir_fd);
	free(t);
}

void oss_target_uuid_str(const struct oss_target *t, char out[37])
{
	const uint8_t *u = t->uuid;
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}
