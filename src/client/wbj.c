/* wbj.c - the write-back journal's writer (wbj.h). */
#include "client/wbj.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "common/crc32c.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "proto/cursor.h"

void cl_wbj_segment_path(const char *dir, uint32_t segno, char *out, size_t len)
{
	snprintf(out, len, "%s/%08u.wbj", dir, segno);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int cl_wbj_segments(const char *dir, uint32_t **out)
{
	DIR *d = opendir(dir);
	uint32_t *v = NULL;
	int n = 0, cap = 0;
	struct dirent *e;

	*out = NULL;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (strlen(e->d_name) != 12 || strcmp(e->d_name + 8, ".wbj") != 0 ||
		    strspn(e->d_name, "0123456789") != 8)
			continue;
		uint32_t segno = (uint32_t)strtoul(e->d_name, NULL, 10);
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			uint32_t *nv = realloc(v, (size_t)cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = segno;
	}
	closedir(d);
	if (n > 1)
		qsort(v, (size_t)n, sizeof(*v), cmp_u32);
	*out = v;
	return n;
}

int cl_wbj_lock(const char *dir)
{
	char path[NACRE_PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* Writes all of buf at the end of j->fd; on a short write cuts the file back to what it
 * was, so a later record does not follow a torn one. With j->lock held. */
static int write_all(struct cl_wbj *j, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t w = write(j->fd, buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? -errno : -ENOSPC;
			if (ftruncate(j->fd, (off_t)j->size) == 0)
				lseek(j->fd, (off_t)j->size, SEEK_SET);
			return e;
		}
		off += (size_t)w;
	}
	j->size += len;
	j->bytes += len;
	return 0;
}

/* Starts segment segno: its header, written now. With j->lock held (or before use). */
static int start_segment(struct cl_wbj *j, uint32_t segno)
{
	char path[NACRE_PATH_MAX + 16];
	uint8_t buf[NACRE_PATH_MAX + 512];
	struct wire_cursor c;
	int fd;

	cl_wbj_segment_path(j->dir, segno, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	wire_cursor_init_write(&c, buf, sizeof(buf));
	wire_put_bytes(&c, CL_WBJ_MAGIC, 8);
	wire_put_u32(&c, CL_WBJ_VERSION);
	wire_put_u64(&c, j->client_id);
	wire_put_u32(&c, segno);
	wire_put_blob(&c, j->spec, (uint32_t)strlen(j->spec));
	wire_put_blob(&c, j->client_name, (uint32_t)strlen(j->client_name));
	wire_put_u32(&c, crc32c(0, buf, wire_cursor_pos(&c)));
	if (!wire_cursor_ok(&c)) {
		close(fd);
		unlink(path);
		return -ENAMETOOLONG;
	}
	if (j->fd >= 0)
		close(j->fd);
	j->fd = fd;
	j->segno = segno;
	j->size = 0;
	int rc = write_all(j, buf, wire_cursor_pos(&c));
	j->hdr_size = j->size;
	return rc;
}

int cl_wbj_open(struct nacre_fs *fs, const char *dir, int mode, const char *spec, char *err,
		size_t err_len)
{
	struct cl_wbj *j;
	uint32_t *segs = NULL;
	int n, rc;

	if (mode != NACRE_WB_JOURNAL_ASYNC && mode != NACRE_WB_JOURNAL_SYNC) {
		snprintf(err, err_len, "unknown write-back journal mode %d", mode);
		return -EINVAL;
	}
	if (strlen(dir) >= sizeof(j->dir) - 32 || strlen(spec) >= sizeof(j->spec)) {
		snprintf(err, err_len, "write-back journal directory or spec too long");
		return -ENAMETOOLONG;
	}
	rc = mkdir_p(dir, 0700);
	if (rc < 0) {
		snprintf(err, err_len, "cannot create the write-back journal directory %s: %s "
			 "(give another with -o wb_journal_dir=DIR, or -o wb_journal=off)", dir,
			 nacre_strerror(rc));
		return rc;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&j->lock, NULL);
	pthread_mutex_init(&j->sync_lock, NULL);
	str_copy(j->dir, dir, sizeof(j->dir));
	str_copy(j->spec, spec, sizeof(j->spec));
	j->mode = mode;
	j->fd = -1;
	j->client_id = fs->client_id;
	str_copy(j->client_name, fs->client_name, sizeof(j->client_name));
	j->lock_fd = cl_wbj_lock(dir);
	if (j->lock_fd < 0) {
		rc = j->lock_fd;
		snprintf(err, err_len, "write-back journal %s: %s", dir,
			 rc == -EBUSY ? "in use by another nacre-mount (one journal per mount)"
				      : nacre_strerror(rc));
		goto fail;
	}
	n = cl_wbj_segments(dir, &segs);
	free(segs);
	if (n != 0) {
		rc = n < 0 ? n : -EEXIST;
		snprintf(err, err_len, "write-back journal %s %s", dir,
			 n < 0 ? nacre_strerror(n)
			       : "holds changes of an earlier mount: recover them first "
				 "(nacre wb-recover DIR)");
		goto fail;
	}
	rc = start_segment(j, 1);
	if (rc) {
		snprintf(err, err_len, "cannot write the write-back journal in %s: %s", dir,
			 nacre_strerror(rc));
		goto fail;
	}
	fs->wbj = j;
	return 0;
fail:
	if (j->fd >= 0)
		close(j->fd);
	if (j->lock_fd >= 0)
		close(j->lock_fd);
	pthread_mutex_destroy(&j->sync_lock);
	pthread_mutex_destroy(&j->lock);
	free(j);
	return rc;
}

void cl_wbj_remove_dir(const char *dir)
{
	char lock[NACRE_PATH_MAX + 16];

	snprintf(lock, sizeof(lock), "%s/lock", dir);
	unlink(lock);
	rmdir(dir); /* unless something else is there (conflicts/) */
}

static void remove_segment(struct cl_wbj *j, uint32_t segno)
{
	char path[NACRE_PATH_MAX + 16];

	cl_wbj_segment_path(j->dir, segno, path, sizeof(path));
	unlink(path);
}

void cl_wbj_close(struct nacre_fs *fs)
{
	struct cl_wbj *j = fs->wbj;

	if (!j)
		return;
	fs->wbj = NULL;
	pthread_mutex_lock(&j->lock);
	int empty = j->done >= j->appended;
	if (empty) { /* nothing outstanding: nothing to recover, nothing left behind */
		for (int i = 0; i < j->nold; i++)
			remove_segment(j, j->old[i].segno);
		remove_segment(j, j->segno);
		cl_wbj_remove_dir(j->dir);
	} else {
		cl_log(fs, CL_LOG_WARN, "write-back journal %s keeps %llu changes the MDS did "
		       "not answer: the next mount on this mount point sends them (or nacre "
		       "wb-recover %s)", j->dir, (unsigned long long)(j->appended - j->done),
		       j->dir);
	}
	if (j->fd >= 0) {
		if (j->mode == NACRE_WB_JOURNAL_SYNC)
			fdatasync(j->fd);
		close(j->fd);
	}
	pthread_mutex_unlock(&j->lock);
	close(j->lock_fd);
	pthread_mutex_destroy(&j->sync_lock);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

/* The record of kind with seq, and for a change its fields, into c; the CRC last. */
static void encode_record(struct wire_cursor *c, int kind, uint64_t seq, uint16_t opcode,
			  const struct nacre_fid *parent, const char *name, const void *body,
			  uint32_t len)
{
	size_t start = wire_cursor_pos(c);

	wire_put_u32(c, CL_WBJ_REC_MAGIC);
	wire_put_u32(c, 0); /* the record's length, patched below */
	wire_put_u8(c, (uint8_t)kind);
	wire_put_u64(c, seq);
	if (kind == CL_WBJ_CHANGE) {
		wire_put_u16(c, opcode);
		wire_put_u64(c, parent->seq);
		wire_put_u32(c, parent->oid);
		wire_put_u32(c, parent->ver);
		wire_put_blob(c, name, (uint32_t)strlen(name));
		wire_put_blob(c, body, len);
	}
	if (!wire_cursor_ok(c))
		return;
	wire_patch_u32(c, start + 4, (uint32_t)(wire_cursor_pos(c) - start + 4));
	wire_put_u32(c, crc32c(0, c->buf + start, wire_cursor_pos(c) - start));
}

/* Follows a full segment with a new one; the full one is kept until its changes are
 * answered. With j->lock held. */
static void rotate(struct cl_wbj *j)
{
	if (j->size < CL_WBJ_SEGMENT || j->nold == CL_WBJ_OLD_MAX)
		return;
	uint32_t segno = j->segno;
	uint64_t last = j->appended;
	int fd = j->fd;
	j->fd = -1; /* start_segment closes nothing: the full one is synced first */
	if (j->mode == NACRE_WB_JOURNAL_SYNC)
		fdatasync(fd);
	if (start_segment(j, segno + 1) != 0) {
		if (j->fd >= 0)
			close(j->fd);
		j->fd = fd; /* go on in the full one */
		j->segno = segno;
		struct stat st;
		j->size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : j->size;
		return;
	}
	close(fd);
	j->old[j->nold].segno = segno;
	j->old[j->nold++].last = last;
}

int cl_wbj_append(struct cl_wbj *j, uint64_t seq, uint16_t opcode, const struct nacre_fid *parent,
		  const char *name, const void *body, uint32_t len)
{
	struct wire_cursor c;
	int rc;

	if (len > CL_WBJ_REC_MAX - NACRE_NAME_MAX - 64)
		return -E2BIG;
	wire_cursor_init_dyn(&c, CL_WBJ_REC_MAX);
	encode_record(&c, CL_WBJ_CHANGE, seq, opcode, parent, name ? name : "", body, len);
	rc = wire_cursor_ok(&c) ? 0 : c.err < 0 ? c.err : -EINVAL;
	pthread_mutex_lock(&j->lock);
	if (!rc)
		rc = write_all(j, c.buf, wire_cursor_pos(&c));
	if (!rc) {
		j->appended = seq;
		rotate(j);
	} else {
		j->errors++;
	}
	pthread_mutex_unlock(&j->lock);
	wire_cursor_fini(&c);
	return rc;
}

int cl_wbj_sync(struct cl_wbj *j, uint64_t seq)
{
	int rc = 0;

	if (j->mode != NACRE_WB_JOURNAL_SYNC)
		return 0;
	pthread_mutex_lock(&j->sync_lock);
	pthread_mutex_lock(&j->lock);
	uint64_t upto = j->appended;
	int fd = j->synced >= seq ? -1 : dup(j->fd);
	pthread_mutex_unlock(&j->lock);
	if (fd >= 0) { /* one fdatasync for every change written meanwhile */
		if (fdatasync(fd) < 0)
			rc = -errno;
		close(fd);
		if (!rc) {
			pthread_mutex_lock(&j->lock);
			if (upto > j->synced)
				j->synced = upto;
			pthread_mutex_unlock(&j->lock);
		}
	}
	pthread_mutex_unlock(&j->sync_lock);
	return rc;
}

void cl_wbj_done(struct cl_wbj *j, uint64_t seq)
{
	uint8_t buf[64];
	struct wire_cursor c;

	pthread_mutex_lock(&j->lock);
	if (seq <= j->done) {
		pthread_mutex_unlock(&j->lock);
		return;
	}
	j->done = seq;
	int keep = 0;
	for (int i = 0; i < j->nold; i++) {
		if (j->old[i].last <= seq)
			remove_segment(j, j->old[i].segno);
		else
			j->old[keep++] = j->old[i];
	}
	j->nold = keep;
	if (seq >= j->appended && !keep) {
		/* nothing outstanding: the segment goes back to its header */
		if (ftruncate(j->fd, (off_t)j->hdr_size) == 0)
			j->size = j->hdr_size;
	} else {
		wire_cursor_init_write(&c, buf, sizeof(buf));
		encode_record(&c, CL_WBJ_DONE, seq, 0, NULL, NULL, NULL, 0);
		if (write_all(j, buf, wire_cursor_pos(&c)) == 0)
			rotate(j);
	}
	pthread_mutex_unlock(&j->lock);
}

NACRE_API int nacre_fs_wb_journal(struct nacre_fs *fs, const char *dir, int mode,
				  const char *spec, char *err, size_t err_len)
{
	if (err_len)
		err[0] = '\0';
	if (mode == NACRE_WB_JOURNAL_OFF)
		return 0;
	if (!fs || !dir || !spec) {
		snprintf(err, err_len, "nacre_fs_wb_journal: no fs, directory or spec");
		return -EINVAL;
	}
	if (fs->wbj)
		return 0; /* journaling already (write-back turned on again) */
	return cl_wbj_open(fs, dir, mode, spec, err, err_len);
}
