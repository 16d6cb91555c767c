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

#include "common/jobid.h"
#include "common/log.h"
#include "common/net.h"
#include "fuse/fz.h"

/* The supplementary groups of thread pid from /proc/PID/task/PID/status (libfuse's
 * fuse_req_getgroups opens the file twice when it passes 1 KiB, which it always does), all
 * of them (up to NACRE_MAX_GROUPS). Returns a heap array (*n entries; the caller frees it),
 * or NULL if the file cannot be read. */
static uint32_t *proc_groups(pid_t pid, uint32_t *n)
{
	char path[64];
	size_t cap = 8192, len = 0;
	char *buf = malloc(cap);
	uint32_t *out = NULL;

	*n = 0;
	if (!buf)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/status", (long)pid, (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	for (;;) {
		if (len + 1 >= cap) {
			char *nb = cap < (8u << 20) ? realloc(buf, cap * 2) : NULL;
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	const char *p = strstr(buf, "\nGroups:");
	if (!p)
		goto out;
	p += strlen("\nGroups:");
	out = malloc(NACRE_CRED_GROUPS * sizeof(*out));
	size_t ocap = NACRE_CRED_GROUPS;
	while (out && *n < NACRE_MAX_GROUPS) {
		char *end;
		unsigned long g = strtoul(p, &end, 10);
		if (end == p)
			break; /* end of the line: the next one starts with a letter */
		if (*n == ocap) {
			uint32_t *no = realloc(out, ocap * 2 * sizeof(*out));
			if (!no)
				break;
			out = no;
			ocap *= 2;
		}
		out[(*n)++] = (uint32_t)g;
		p = end;
	}
out:
	free(buf);
	return out;
}

/* Credentials of recent callers. Reading /proc costs three system calls per request and a
 * process's groups rarely change, so an answer is reused for GROUPS_TTL_MS, and only for the
 * same thread id, uid and gid (a reused id under another user reads /proc again). A process
 * that calls setgroups() is seen with its old groups for at most that long — the trade
 * Lustre's identity cache makes too, with a far longer expiry. A long list is registered
 * with the MDS once (nacre_groups_cred): the slot keeps the cred with its token. */
#define GROUPS_SLOTS 64
#define GROUPS_TTL_MS 1000

struct groups_slot {
	pid_t pid;
	int64_t at_ms;
	int valid;
	struct nacre_cred cred;
};

static struct groups_slot groups_cache[GROUPS_SLOTS];
static pthread_mutex_t groups_lock = PTHREAD_MUTEX_INITIALIZER;

void fz_cred(fuse_req_t req, struct nacre_cred *cr)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct groups_slot *s = &groups_cache[(unsigned)ctx->pid % GROUPS_SLOTS];
	struct fz_mount *m = fz_mnt(req);
	int job = m->jobid && nacre_fs_jobids(m->fs);
	int64_t now;
	int hit = 0;

	memset(cr, 0, sizeof(*cr));
	cr->uid = ctx->uid;
	cr->gid = ctx->gid;
	/* The MDS never consults root's groups (root passes every permission check), and
	 * reading them costs a /proc read per request; root's job id is read, and kept. */
	if (ctx->uid == 0 && !job)
		return;
	now = net_now_ms();
	pthread_mutex_lock(&groups_lock);
	if (s->valid && s->pid == ctx->pid && s->cred.uid == ctx->uid && s->cred.gid == ctx->gid &&
	    now - s->at_ms < GROUPS_TTL_MS) {
		*cr = s->cred;
		hit = 1;
	}
	pthread_mutex_unlock(&groups_lock);
	if (hit) {
		if (!job)
			cr->jobid[0] = '\0'; /* an MDS that takes none (a failover to an older one) */
		return;
	}
	struct nacre_cred c = *cr;
	int keep = 1;
	if (ctx->uid != 0) {
		/* When the caller is gone or /proc is missing: the primary group only. */
		uint32_t n = 0;
		uint32_t *g = proc_groups(ctx->pid, &n);
		int rc = g ? nacre_groups_cred(m->fs, ctx->uid, ctx->gid, g, n, &c) : -ENOENT;
		free(g);
		if (rc < 0) {
			if (g)
				LOG_RATELIMITED(LOG_LVL_WARN, "cred", "cannot register the %u "
						"groups of pid %ld with the MDS: %s; only its "
						"primary group counts", n, (long)ctx->pid,
						strerror(-rc));
			c = *cr;
			keep = 0; /* asked again at the next request */
		}
	}
	if (job && m->jobid_var)
		jobid_from_env(ctx->pid, ctx->uid, m->jobid_var, c.jobid);
	else if (job)
		jobid_procname_uid(ctx->pid, ctx->uid, c.jobid);
	*cr = c;
	if (!keep)
		return;
	pthread_mutex_lock(&groups_lock);
	*s = (struct groups_slot){.pid = ctx->pid, .at_ms = now, .valid = 1, .cred = c};
	pthread_mutex_unlock(&groups_lock);
}

int fz_protected_hardlinks(void)
{
	char c = '0';
	int fd = open("/proc/sys/fs/protected_hardlinks", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, &c, 1) != 1)
		c = '0';
	close(fd);
	return c == '1';
}

uint32_t fz_umask_bits(fuse_req_t req)
{
	if (!(fz_mnt(req)->init.want & FUSE_CAP_DONT_MASK))
		return 0;
	return NACRE_MODE_UMASK(fuse_req_ctx(req)->umask);
}

int fz_errno(int rc)
{
	return nacre_errno_for_app(rc);
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
	fz_dattr_note(in, a); /* for fstat once the directory is gone (fz_dattr_gone) */
	struct nacre_time atime = a->atime;
	fz_atime_merge(in, &atime);
	e->attr.st_atim.tv_sec = (time_t)atime.sec;
	e->attr.st_atim.tv_nsec = (long)atime.nsec;
	size = a->size;
	fz_inode_size_for_kernel(in, &size);
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

int fz_mount_ro(struct fz_mount *m)
{
	if (!__atomic_load_n(&m->ro, __ATOMIC_RELAXED))
		return 0;
	if (!m->kdev[0] || fz_mount_sb_ro(m->kdev) != 0)
		return 1;
	if (__atomic_exchange_n(&m->ro, 0, __ATOMIC_RELAXED))
		LOG_INFO("main", "remounted read-write: modifications are allowed again");
	return 0;
}

int fz_check_ro(fuse_req_t req)
{
	if (!fz_mount_ro(fz_mnt(req)))
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

void fz_reply_xattr_text(fuse_req_t req, const char *text, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, text, len);
}

#define TARGETS_MAX 65537 /* the MDT and every possible OST index */

int fz_targets_all(struct nacre_fs *fs, struct nacre_target **out)
{
	struct nacre_target *t = NULL;
	int max = 64, n;

	/* Grow until the answer is not cut by our array. */
	for (;;) {
		struct nacre_target *nt = realloc(t, (size_t)max * sizeof(*t));

		if (!nt) {
			free(t);
			return -ENOMEM;
		}
		t = nt;
		n = nacre_targets(fs, t, max);
		if (n < 0) {
			free(t);
			return n;
		}
		if (n < max || max >= TARGETS_MAX)
			break;
		max = max * 4 > TARGETS_MAX ? TARGETS_MAX : max * 4;
	}
	*out = t;
	return n;
}
