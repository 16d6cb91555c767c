/* wbj_replay.c - recovery of a write-back journal (wbj.h, nacre_wb_recover): its changes
 * the MDS did not answer are sent again, in order, in the session of the process that
 * wrote them (its FID grants are that session's), then the journal is emptied.
 *
 * The session is taken up with xids past any the dead process used (its replies the MDS
 * still keeps must not answer ours), and ended with the unmount's DISCONNECT, which also
 * lets go of what the dead process held (opens, locks, leases) at once.
 *
 * What a change finds may tell that the MDS already has it: a create with the FID it
 * names under the same name is answered as made (fid_grant.h), an unlink or rmdir finds
 * the name gone. Anything else refused is a conflict: logged with its path and kept,
 * readable, under the journal's conflicts/ directory. Records are checksummed: a torn
 * tail or a corrupt record stops the reading; the bytes from there are reported, kept
 * under conflicts/ and never applied.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "client/wbj.h"
#include "client/wbq.h"
#include "common/crc32c.h"
#include "common/fid.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "proto/cursor.h"
#include "proto/wire.h"

#define SEGMENT_READ_MAX (1ull << 30)

struct rec {
	uint64_t seq;
	uint16_t opcode;
	struct nacre_fid parent;
	char name[NACRE_NAME_MAX + 1];
	uint32_t len;
	const uint8_t *body; /* into its segment's buffer */
};

struct journal {
	uint64_t client_id;
	char spec[NACRE_PATH_MAX];
	char client_name[256];
	uint8_t **bufs;      /* the segments read */
	int nbufs;
	struct rec *recs;
	size_t nrecs, cap;
	uint64_t done;       /* the last answered sequence number */
	uint64_t unreadable;
	uint32_t bad_segno;  /* the segment where reading stopped; 0: none */
	char why[160];       /* why it stopped */
};

static int read_file(const char *path, uint8_t **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > SEGMENT_READ_MAX) {
		close(fd);
		return -EFBIG;
	}
	uint8_t *b = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (b && got < (size_t)st.st_size) {
		ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!b)
		return -ENOMEM;
	*out = b;
	*len = got;
	return 0;
}

/* The header of a segment; its length, or 0 when it is not one of ours. */
static size_t parse_header(struct journal *j, const uint8_t *b, size_t len, int first)
{
	struct wire_cursor c;
	uint32_t n;

	wire_cursor_init_read(&c, b, len);
	const uint8_t *magic = wire_get_view(&c, 8);
	uint32_t version = wire_get_u32(&c);
	uint64_t client_id = wire_get_u64(&c);
	wire_get_u32(&c); /* segno */
	const uint8_t *spec = wire_get_blob(&c, NACRE_PATH_MAX - 1, &n);
	uint32_t nn;
	const uint8_t *name = wire_get_blob(&c, sizeof(j->client_name) - 1, &nn);
	size_t end = wire_cursor_pos(&c);
	uint32_t crc = wire_get_u32(&c);
	if (!wire_cursor_ok(&c) || memcmp(magic, CL_WBJ_MAGIC, 8) != 0 ||
	    version != CL_WBJ_VERSION || crc != crc32c(0, b, end))
		return 0;
	if (first) {
		j->client_id = client_id;
		memcpy(j->spec, spec, n);
		j->spec[n] = '\0';
		memcpy(j->client_name, name, nn);
		j->client_name[nn] = '\0';
	} else if (client_id != j->client_id) {
		return 0;
	}
	return wire_cursor_pos(&c);
}

static int add_rec(struct journal *j, const struct rec *r)
{
	if (j->nrecs == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 256;
		struct rec *v = realloc(j->recs, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		j->recs = v;
		j->cap = cap;
	}
	j->recs[j->nrecs++] = *r;
	return 0;
}

/* The records of one segment from off; stops (setting j->why) at a torn or corrupt one.
 * 0, 1 (stopped) or -ENOMEM. */
static int parse_records(struct journal *j, const uint8_t *b, size_t len, size_t off)
{
	while (off < len) {
		struct wire_cursor c;
		size_t left = len - off;
		wire_cursor_init_read(&c, b + off, left);
		uint32_t magic = wire_get_u32(&c), rlen = wire_get_u32(&c);
		if (!wire_cursor_ok(&c) || magic != CL_WBJ_REC_MAGIC || rlen < 21 ||
		    rlen > CL_WBJ_REC_MAX || rlen > left) {
			snprintf(j->why, sizeof(j->why), "%s at byte %zu",
				 wire_cursor_ok(&c) && magic == CL_WBJ_REC_MAGIC && rlen <= CL_WBJ_REC_MAX
					 ? "a torn record (the process died while writing it)"
					 : "an unreadable record", off);
			j->unreadable += left;
			return 1;
		}
		uint32_t crc;
		memcpy(&crc, b + off + rlen - 4, 4);
		if (le32toh(crc) != crc32c(0, b + off, rlen - 4)) {
			snprintf(j->why, sizeof(j->why), "a record failing its checksum at byte %zu",
				 off);
			j->unreadable += left;
			return 1;
		}
		wire_cursor_init_read(&c, b + off + 8, rlen - 12);
		uint8_t kind = wire_get_u8(&c);
		struct rec r = {.seq = wire_get_u64(&c)};
		if (kind == CL_WBJ_CHANGE) {
			uint32_t n;
			r.opcode = wire_get_u16(&c);
			r.parent.seq = wire_get_u64(&c);
			r.parent.oid = wire_get_u32(&c);
			r.parent.ver = wire_get_u32(&c);
			const uint8_t *name = wire_get_blob(&c, NACRE_NAME_MAX, &n);
			if (name) {
				memcpy(r.name, name, n);
				r.name[n] = '\0';
			}
			r.body = wire_get_blob(&c, WIRE_BODY_MAX, &r.len);
		}
		if (!wire_cursor_ok(&c) || (kind != CL_WBJ_CHANGE && kind != CL_WBJ_DONE)) {
			snprintf(j->why, sizeof(j->why), "a record of an unknown form at byte %zu",
				 off);
			j->unreadable += left;
			return 1;
		}
		if (kind == CL_WBJ_DONE) {
			if (r.seq > j->done)
				j->done = r.seq;
		} else if (add_rec(j, &r)) {
			return -ENOMEM;
		}
		off += rlen;
	}
	return 0;
}

/* Reads every segment of dir into j, in order, up to the first unreadable byte. */
static int read_journal(const char *dir, struct journal *j, char *err, size_t err_len)
{
	uint32_t *segs = NULL;
	int n = cl_wbj_segments(dir, &segs), rc = 0;

	if (n < 0) {
		snprintf(err, err_len, "cannot read the write-back journal %s: %s", dir,
			 nacre_strerror(n));
		return n;
	}
	j->bufs = calloc((size_t)n + 1, sizeof(*j->bufs));
	if (!j->bufs) {
		free(segs);
		return -ENOMEM;
	}
	for (int i = 0; i < n && !j->bad_segno; i++) {
		char path[NACRE_PATH_MAX + 16];
		uint8_t *b = NULL;
		size_t len = 0, hdr;
		cl_wbj_segment_path(dir, segs[i], path, sizeof(path));
		rc = read_file(path, &b, &len);
		if (rc) {
			snprintf(err, err_len, "cannot read %s: %s", path, nacre_strerror(rc));
			break;
		}
		j->bufs[j->nbufs++] = b;
		hdr = parse_header(j, b, len, i == 0);
		if (!hdr) {
			if (i == 0) {
				snprintf(err, err_len, "%s is not a nacre write-back journal segment "
					 "(or its header is damaged)", path);
				rc = -EINVAL;
				break;
			}
			snprintf(j->why, sizeof(j->why), "a damaged segment header");
			j->unreadable += len;
			j->bad_segno = segs[i];
			break;
		}
		rc = parse_records(j, b, len, hdr);
		if (rc < 0)
			break;
		if (rc == 1)
			j->bad_segno = segs[i];
		rc = 0;
	}
	/* nothing after the first unreadable byte is applied: later segments only count */
	for (int i = 0; i < n && j->bad_segno && !rc; i++) {
		struct stat st;
		char path[NACRE_PATH_MAX + 16];
		cl_wbj_segment_path(dir, segs[i], path, sizeof(path));
		if (segs[i] > j->bad_segno && stat(path, &st) == 0)
			j->unreadable += (uint64_t)st.st_size;
	}
	free(segs);
	return rc;
}

static void journal_free(struct journal *j)
{
	for (int i = 0; i < j->nbufs; i++)
		free(j->bufs[i]);
	free(j->bufs);
	free(j->recs);
}

/* ---- the conflicts directory ---- */

struct conflicts {
	char dir[NACRE_PATH_MAX];
	char stamp[32];
	FILE *txt;      /* one line per change not applied */
	char txt_path[NACRE_PATH_MAX + 64];
};

static int conflicts_open(struct conflicts *k)
{
	if (k->txt)
		return 0;
	char sub[NACRE_PATH_MAX + 16];
	snprintf(sub, sizeof(sub), "%s/conflicts", k->dir);
	if (mkdir(sub, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(k->txt_path, sizeof(k->txt_path), "%s/%s.txt", sub, k->stamp);
	k->txt = fopen(k->txt_path, "a");
	return k->txt ? 0 : -errno;
}

/* Moves segment segno (unreadable from some byte) under conflicts/. */
static void conflicts_keep_segment(struct conflicts *k, uint32_t segno)
{
	char from[NACRE_PATH_MAX + 16], to[NACRE_PATH_MAX + 96];

	if (conflicts_open(k))
		return;
	cl_wbj_segment_path(k->dir, segno, from, sizeof(from));
	snprintf(to, sizeof(to), "%s/conflicts/%s-%08u.wbj", k->dir, k->stamp, segno);
	if (rename(from, to) == 0)
		fprintf(k->txt, "unreadable\t%s\t(from the first bad byte on)\n", to);
}

/* ---- sending ---- */

/* The path of r's directory and name for the log, as well as the MDS can tell. */
static void rec_path(struct nacre_fs *fs, const struct rec *r, char *out, size_t len)
{
	char dir[NACRE_PATH_MAX], f[NACRE_FID_STR_MAX];
	struct nacre_cred root;

	if (nacre_fid2path(fs, cl_cred(NULL, &root), &r->parent, dir, sizeof(dir)) == 0)
		snprintf(out, len, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", r->name);
	else
		snprintf(out, len, "%s/%s", fid_format(&r->parent, f, sizeof(f)), r->name);
}

/* Whether a refusal says the MDS has the change already. */
static int had_it(const struct rec *r, int status)
{
	return (status == -ENOENT &&
		(r->opcode == WIRE_OP_MDS_UNLINK || r->opcode == WIRE_OP_MDS_RMDIR));
}

static void conflict(struct nacre_fs *fs, struct conflicts *k, const struct rec *r, int status)
{
	char path[NACRE_PATH_MAX + NACRE_NAME_MAX + 2];

	rec_path(fs, r, path, sizeof(path));
	if (conflicts_open(k) == 0) {
		fprintf(k->txt, "%s\t%s\t%s\tseq %llu\n", wire_opcode_name(r->opcode), path,
			nacre_strerror(status), (unsigned long long)r->seq);
		fprintf(k->txt, "\tbody");
		for (uint32_t i = 0; i < r->len; i++)
			fprintf(k->txt, "%02x", r->body[i]);
		fprintf(k->txt, "\n");
	}
	cl_log(fs, CL_LOG_ERR, "write-back recovery: %s %s%s refused by MDS %s: %s (kept in %s)",
	       wire_opcode_name(r->opcode), path, r->name[0] ? "" : " (an inode)", fs->addr,
	       nacre_strerror(status), k->txt ? k->txt_path : "nowhere: cannot write it");
}

/* Sends recs[0..n) in one BATCH; statuses into st. 0 or the call's error. */
static int send_batch(struct nacre_fs *fs, const struct rec *recs, uint32_t n, int32_t *st)
{
	struct wire_batch_req *b = calloc(1, sizeof(*b));
	struct wire_batch_rep *r = calloc(1, sizeof(*r));
	int rc = -ENOMEM;

	if (!b || !r)
		goto out;
	b->count = n;
	for (uint32_t i = 0; i < n; i++)
		b->ch[i] = (struct wire_batch_change){recs[i].opcode, recs[i].len, recs[i].body};
	rc = cl_wbq_call(fs, b, r);
	for (uint32_t i = 0; !rc && i < n; i++)
		st[i] = r->r[i].status;
out:
	free(b);
	free(r);
	return rc;
}

/* How many of recs[0..n) one BATCH carries. */
static uint32_t batch_len(const struct rec *recs, size_t n)
{
	struct cl_wbq_room room;
	uint32_t k = 0;

	cl_wbq_room_init(&room);
	while (k < n && k < WIRE_BATCH_MAX && cl_wbq_room_take(&room, k, recs[k].opcode,
								 recs[k].len))
		k++;
	return k;
}

static int replay(struct nacre_fs *fs, const struct journal *j, struct conflicts *k,
		  struct nacre_wb_report *out)
{
	int32_t st[WIRE_BATCH_MAX];
	size_t i = 0;

	while (i < j->nrecs) {
		const struct rec *r = j->recs + i;
		if (r->seq <= j->done) { /* the MDS answered it */
			i++;
			continue;
		}
		size_t run = 0; /* the unanswered ones that follow */
		while (i + run < j->nrecs && j->recs[i + run].seq > j->done)
			run++;
		uint32_t n = batch_len(r, run);
		int rc = send_batch(fs, r, n, st);
		if (rc == -E2BIG && n > 1) { /* one at a time */
			n = 1;
			rc = send_batch(fs, r, n, st);
		}
		if (rc)
			return rc;
		for (uint32_t x = 0; x < n; x++) {
			out->changes++;
			if (st[x] == 0 || st[x] == -EALREADY || had_it(r + x, st[x])) {
				out->applied++;
			} else {
				out->conflicts++;
				conflict(fs, k, r + x, st[x]);
			}
		}
		i += n;
	}
	return 0;
}

static void remove_segments(const char *dir)
{
	uint32_t *segs = NULL;
	int n = cl_wbj_segments(dir, &segs);

	for (int i = 0; i < n; i++) {
		char path[NACRE_PATH_MAX + 16];
		cl_wbj_segment_path(dir, segs[i], path, sizeof(path));
		unlink(path);
	}
	free(segs);
}

/* Past any xid the journal's writer used: it started at 16, one per request. */
static uint64_t first_xid(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (1ull << 62) + (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

NACRE_API int nacre_wb_recover(const char *dir, const struct nacre_mount_opts *opts,
			       struct nacre_wb_report *out, char *err, size_t err_len)
{
	struct journal j = {0};
	struct conflicts k = {0};
	struct nacre_fs *fs = NULL;
	struct tm tm;
	time_t now = time(NULL);
	int lock_fd, rc;

	memset(out, 0, sizeof(*out));
	if (err_len)
		err[0] = '\0';
	if (strlen(dir) >= sizeof(k.dir) - 32) {
		snprintf(err, err_len, "journal directory name too long: %s", dir);
		return -ENAMETOOLONG;
	}
	struct stat sdir;
	if (stat(dir, &sdir) < 0 || !S_ISDIR(sdir.st_mode)) {
		snprintf(err, err_len, "no write-back journal at %s (not a directory)", dir);
		return -ENOENT;
	}
	lock_fd = cl_wbj_lock(dir);
	if (lock_fd < 0) {
		snprintf(err, err_len, "write-back journal %s: %s", dir,
			 lock_fd == -EBUSY ? "in use by a running nacre-mount (unmount it first)"
					   : nacre_strerror(lock_fd));
		return lock_fd;
	}
	str_copy(k.dir, dir, sizeof(k.dir));
	gmtime_r(&now, &tm);
	strftime(k.stamp, sizeof(k.stamp), "%Y%m%d-%H%M%S", &tm);
	rc = read_journal(dir, &j, err, err_len);
	if (rc || (!j.nrecs && !j.bad_segno))
		goto done; /* nothing to send: an empty journal is emptied below */
	out->unreadable = j.unreadable;
	int pending = 0;
	for (size_t i = 0; i < j.nrecs; i++)
		pending += j.recs[i].seq > j.done;
	if (pending) {
		/* the client that made them, as the nodemaps know it */
		struct nacre_mount_opts as = opts ? *opts : (struct nacre_mount_opts){0};
		as.client_name = j.client_name[0] ? j.client_name : as.client_name;
		rc = cl_fs_mount(j.spec, &as, j.client_id, first_xid(), &fs, err, err_len);
		if (rc)
			goto done;
		rc = replay(fs, &j, &k, out);
		if (rc)
			snprintf(err, err_len, "sending the journal's changes to MDS %s: %s (the "
				 "journal is kept: try again)", fs->addr, nacre_strerror(rc));
	}
	if (!rc && j.bad_segno) {
		if (opts && opts->log_fn) {
			char line[NACRE_PATH_MAX * 2 + 256];
			snprintf(line, sizeof(line), "write-back recovery: journal %s: %s in segment "
				 "%u: %llu bytes from there were not applied (kept under "
				 "%s/conflicts)", dir, j.why, j.bad_segno,
				 (unsigned long long)j.unreadable, dir);
			opts->log_fn(CL_LOG_ERR, line, opts->log_arg);
		}
		uint32_t *segs = NULL;
		int n = cl_wbj_segments(dir, &segs);
		for (int i = 0; i < n; i++)
			if (segs[i] >= j.bad_segno)
				conflicts_keep_segment(&k, segs[i]);
		free(segs);
	}
done:
	if (fs)
		nacre_fs_umount(fs); /* SYNC, then DISCONNECT: the dead process's session ends */
	if (!rc)
		remove_segments(dir);
	if (k.txt) {
		fclose(k.txt);
		str_copy(out->conflicts_file, k.txt_path, sizeof(out->conflicts_file));
	}
	journal_free(&j);
	if (!rc) /* nothing left to recover: nothing left behind (but conflicts/) */
		cl_wbj_remove_dir(dir);
	close(lock_fd);
	return rc;
}
