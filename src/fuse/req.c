/* req.c - what every request handler needs: the caller's credentials, error mapping,
 * attribute conversion and entry replies. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/log.h"
#include "common/net.h"
#include "fuse/fz.h"

/* The supplementary groups of thread pid from /proc/PID/task/PID/status, in one read
 * (libfuse's fuse_req_getgroups opens the file twice when it passes 1 KiB, which it
 * always does). Returns how many were stored, or -1 if the file cannot be read. */
static int proc_groups(pid_t pid, uint32_t *out, int max)
{
	char path[64], buf[8192];
	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/status", (long)pid, (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	const char *p = strstr(buf, "\nGroups:");
	if (!p)
		return -1;
	p += strlen("\nGroups:");
	int n = 0;
	while (n < max) {
		char *end;
		unsigned long g = strtoul(p, &end, 10);
		if (end == p)
			break; /* end of the line: the next one starts with a letter */
		out[n++] = (uint32_t)g;
		p = end;
	}
	return n;
}

/* Groups of recent callers. Reading /proc costs three system calls per request and a
 * process's groups rarely change, so an answer is reused for GROUPS_TTL_MS, and only for the
 * same thread id, uid and gid (a reused id under another user reads /proc again). A process
 * that calls setgroups() is seen with its old groups for at most that long — the trade
 * Lustre's identity cache makes too, with a far longer expiry. */
#define GROUPS_SLOTS 64
#define GROUPS_TTL_MS 1000

struct groups_slot {
	pid_t pid;
	uint32_t uid, gid;
	int64_t at_ms;
	int n;
	uint32_t g[NACRE_MAX_GROUPS];
};

static struct groups_slot groups_cache[GROUPS_SLOTS];
static pthread_mutex_t groups_lock = PTHREAD_MUTEX_INITIALIZER;

/* The groups of (pid, uid, gid) into out: from the cache or /proc. -1 if unreadable. */
static int caller_groups(pid_t pid, uint32_t uid, uint32_t gid, uint32_t *out)
{
	struct groups_slot *s = &groups_cache[(unsigned)pid % GROUPS_SLOTS];
	int64_t now = net_now_ms();
	int n = -1;

	pthread_mutex_lock(&groups_lock);
	if (s->pid == pid && s->uid == uid && s->gid == gid && now - s->at_ms < GROUPS_TTL_MS) {
		n = s->n;
		memcpy(out, s->g, (size_t)n * sizeof(*out));
	}
	pthread_mutex_unlock(&groups_lock);
	if (n >= 0)
		return n;
	n = proc_groups(pid, out, NACRE_MAX_GROUPS);
	if (n < 0)
		return n;
	pthread_mutex_lock(&groups_lock);
	*s = (struct groups_slot){.pid = pid, .uid = uid, .gid = gid, .at_ms = now, .n = n};
	memcpy(s->g, out, (size_t)n * sizeof(*out));
	pthread_mutex_unlock(&groups_lock);
	return n;
}

void fz_cred(fuse_req_t req, struct nacre_cred *cr)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	memset(cr, 0, sizeof(*cr));
	cr->uid = ctx->uid;
	cr->gid = ctx->gid;
	/* The MDS never consults root's groups (root passes every permission check), and
	 * reading them costs a /proc read per request. */
	if (ctx->uid == 0)
		return;
	/* When the caller is gone or /proc is missing: the primary group only. Groups past
	 * NACRE_MAX_GROUPS are dropped. */
	int n = caller_groups(ctx->pid, ctx->uid, ctx->gid, cr->groups);
	if (n > 0)
		cr->ngroups = (uint32_t)n;
}

uint32_t fz_umask_bits(fuse_req_t req)
{
	if (!(fz_mnt(req)->init.want & FUSE_CAP_DONT_MASK))
		return 0;
	return NACRE_MODE_UMASK(fuse_req_ctx(req)->umask);
}

int fz_errno(int rc)
{
	int e = rc < 0 ? -rc : rc;

	/* The kernel refuses error values from 512 up; our own codes and server timeouts are
	 * I/O errors to applications. */
	if (e == 0 || e >= 512 || e == ETIMEDOUT)
		return EIO;
	return e;
}

int fz_errno_or_ok(int rc)
{
	return rc < 0 ? fz_errno(rc) : 0;
}

void fz_reply_rc(fuse_req_t req, int rc)
{
	fuse_reply_err(req, fz_errno(rc));
}

uint64_t fz_fid_ino(const struct nacre_fid *fid)
{
	/* Lustre's flattening: distinct for the first 2^24 objects of each sequence, and the
	 * same on every client, so tools comparing st_ino agree across mounts. */
	uint64_t ino = (fid->seq << 24) + ((fid->seq >> 24) & 0xffffff0000ULL) + fid->oid;

	return ino ? ino : fid->oid;
}

void fz_attr_to_stat(const struct nacre_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)fz_fid_ino(&a->fid);
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_size = (off_t)a->size;
	st->st_blksize = a->blksize ? (blksize_t)a->blksize : 4096;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_atim.tv_sec = a->atime.sec;
	st->st_atim.tv_nsec = a->atime.nsec;
	st->st_mtim.tv_sec = a->mtime.sec;
	st->st_mtim.tv_nsec = a->mtime.nsec;
	st->st_ctim.tv_sec = a->ctime.sec;
	st->st_ctim.tv_nsec = a->ctime.nsec;
}

int fz_entry_prepare(fuse_req_t req, const struct nacre_attr *a, const struct nacre_fid *parent,
		     struct fuse_entry_param *e, struct fz_inode **out)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_ref(m, &a->fid, parent);
	uint64_t size;

	if (!in)
		return -ENOMEM;
	memset(e, 0, sizeof(*e));
	e->ino = in->ino;
	e->generation = 0;
	e->attr_timeout = m->attr_timeout;
	e->entry_timeout = m->entry_timeout;
	fz_attr_to_stat(a, &e->attr);
	size = a->size;
	fz_inode_merge_size(in, &size);
	e->attr.st_size = (off_t)size;
	*out = in;
	return 0;
}

void fz_reply_entry(fuse_req_t req, const struct nacre_attr *a, const struct nacre_fid *parent)
{
	struct fuse_entry_param e;
	struct fz_inode *in;
	int rc = fz_entry_prepare(req, a, parent, &e, &in);

	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	/* An interrupted request's reply is dropped by the kernel, and with it the lookup. */
	if (fuse_reply_entry(req, &e) != 0)
		fz_inode_forget(fz_mnt(req), in, 1);
}

int fz_check_ro(fuse_req_t req)
{
	if (!fz_mnt(req)->ro)
		return 0;
	fuse_reply_err(req, EROFS);
	return 1;
}

int fz_check_name(fuse_req_t req, const char *name)
{
	if (strlen(name) <= NACRE_NAME_MAX)
		return 0;
	fuse_reply_err(req, ENAMETOOLONG);
	return 1;
}
