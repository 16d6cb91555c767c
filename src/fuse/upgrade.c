/* upgrade.c - nacre-mount --upgrade: a new process takes over a live FUSE session.
 *
 * The serving process listens on a root-only unix socket named after its mount
 * (/run/nacre/mount-MAJOR:MINOR.sock, or -o control_socket=PATH). The new process connects
 * and asks; then, in this order:
 *
 *   old: refuses if a request waits for a cluster lock (it could not be handed over);
 *        stops the FUSE loop (requests in flight finish, unread ones stay queued in the
 *        kernel) and flushes write-behind data of every open file;
 *        sends the /dev/fuse fd (SCM_RIGHTS) and a versioned state blob: the FUSE INIT
 *        parameters, spec and options, the inode table, the handle table, the lock owners
 *        and its lock client id.
 *   new: connects to the MDS, fills its tables with the same numbers, re-opens every open
 *        file by FID, adopts the lock client id (its first lock request binds the locks to
 *        its connection), replays FUSE_INIT to its own libfuse session; then acknowledges.
 *   old: on the acknowledgement confirms and exits without unmounting (its MDS connection
 *        and handles go with it); on any failure before it (or a broken socket) it serves
 *        again, having never closed the fd.
 *   new: serves once the confirmation arrived.
 *
 * The blob is little-endian, field by field, with a magic and a version; the reader checks
 * every count against the bytes present.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "fuse/fz.h"

#define UPG_MAGIC 0x4e555047u   /* "NUPG" */
#define UPG_VERSION 1u
#define UPG_REQ_MAGIC 0x4e555251u /* "NURQ": the request */
#define UPG_BLOB_MAX (1u << 30)
#define UPG_MSG_MAX 1024u
#define STOP_WAIT_MS 15000  /* for requests in flight to finish */
#define ACK_WAIT_MS 120000  /* for the new process to re-open every file */
#define SOCK_DIR "/run/nacre"

/* The kernel's FUSE_INIT request as it arrives on /dev/fuse (include/uapi/linux/fuse.h);
 * spelled out here because <linux/fuse.h> clashes with libfuse's headers. */
struct k_in_header {
	uint32_t len, opcode;
	uint64_t unique, nodeid;
	uint32_t uid, gid, pid;
	uint16_t total_extlen, padding;
};
struct k_init_in {
	uint32_t major, minor, max_readahead, flags, flags2;
	uint32_t unused[11];
};
#define K_FUSE_INIT 26
#define K_FUSE_MAX_PAGES (1u << 22) /* since 7.28: max_write above 128 KiB */
/* The reply to our replayed INIT names no request the kernel has: it answers ENOENT, which
 * libfuse ignores. Kernel request ids are small even numbers; this one never is pending. */
#define REPLAY_UNIQUE (1ull << 62)

enum { ST_SERVING, ST_STOPPING, ST_STOPPED, ST_RESUME, ST_ABORTED, ST_EXIT };

struct fz_upgrade {
	struct fz_mount *m;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int lfd;
	pthread_t thread;
	int started;
	pthread_t main_thread;     /* runs the FUSE loop */
	const struct fz_upgrade_conf *conf;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state;                 /* lock: ST_* */
	int conn_fd;               /* kept open after a handover: its EOF tells the new
				    * process this one is gone */
};

/* ---------------- the blob ---------------- */

struct obuf {
	char *p;
	size_t len, cap;
	int err;
};

static void put(struct obuf *b, const void *v, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + n)
			cap *= 2;
		char *p = cap > UPG_BLOB_MAX ? NULL : realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

static void put_u32(struct obuf *b, uint32_t v)
{
	unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			      (unsigned char)(v >> 24)};
	put(b, x, 4);
}

static void put_u64(struct obuf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(struct obuf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	put_u32(b, (uint32_t)n);
	put(b, s ? s : "", n);
}

static void put_fid(struct obuf *b, const struct nacre_fid *f)
{
	put_u64(b, f->seq);
	put_u32(b, f->oid);
	put_u32(b, f->ver);
}

static void put_time(struct obuf *b, const struct nacre_time *t)
{
	put_u64(b, (uint64_t)t->sec);
	put_u32(b, t->nsec);
}

/* A bounded reader: a short read sets err, after which everything reads as 0. */
struct icur {
	const unsigned char *p;
	size_t len, pos;
	int err;
};

static const unsigned char *take(struct icur *c, size_t n)
{
	if (c->err || c->len - c->pos < n) {
		c->err = -EPROTO;
		return NULL;
	}
	c->pos += n;
	return c->p + c->pos - n;
}

static uint32_t get_u32(struct icur *c)
{
	const unsigned char *x = take(c, 4);

	return x ? (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 |
			   (uint32_t)x[3] << 24
		 : 0;
}

static uint64_t get_u64(struct icur *c)
{
	uint64_t lo = get_u32(c);

	return lo | (uint64_t)get_u32(c) << 32;
}

/* A NUL-terminated copy (caller frees), or NULL with c->err set. */
static char *get_str(struct icur *c)
{
	uint32_t n = get_u32(c);
	const unsigned char *x = take(c, n);
	char *s;

	if (!x)
		return NULL;
	if (memchr(x, '\0', n)) {
		c->err = -EPROTO;
		return NULL;
	}
	s = malloc((size_t)n + 1);
	if (!s) {
		c->err = -ENOMEM;
		return NULL;
	}
	memcpy(s, x, n);
	s[n] = '\0';
	return s;
}

static void get_fid(struct icur *c, struct nacre_fid *f)
{
	f->seq = get_u64(c);
	f->oid = get_u32(c);
	f->ver = get_u32(c);
}

static void get_time(struct icur *c, struct nacre_time *t)
{
	t->sec = (int64_t)get_u64(c);
	t->nsec = get_u32(c);
}

/* Every count is checked against the bytes left: each item takes at least min bytes. */
static uint64_t get_count(struct icur *c, size_t min)
{
	uint64_t n = get_u64(c);

	if (!c->err && n > (c->len - c->pos) / min)
		c->err = -EPROTO;
	return c->err ? 0 : n;
}

#define INODE_REC_MIN (8 + 16 + 16 + 8 + 4 + 8 + 12 + 12)
#define HANDLE_REC_MIN (8 + 4 + 8 + 4 + 12)
#define OWNER_REC_MIN (16 + 8)

static int put_inode(struct fz_inode *in, void *arg)
{
	struct obuf *b = arg;

	put_u64(b, in->ino);
	put_fid(b, &in->fid);
	put_fid(b, &in->parent);
	put_u64(b, in->nlookup);
	pthread_mutex_lock(&in->lock);
	put_u32(b, (uint32_t)in->cache_valid);
	put_u64(b, in->cache_size);
	put_time(b, &in->cache_mtime);
	put_time(b, &in->cache_ctime);
	pthread_mutex_unlock(&in->lock);
	return b->err;
}

static int count_inode(struct fz_inode *in, void *arg)
{
	(void)in;
	++*(uint64_t *)arg;
	return 0;
}

static int put_handle(uint64_t fh, int kind, void *obj, void *arg)
{
	struct obuf *b = arg;
	struct fz_file *f = kind == FZ_H_FILE ? obj : NULL;

	put_u64(b, fh);
	put_u32(b, (uint32_t)kind);
	put_u64(b, f ? f->inode->ino : 0);
	put_u32(b, f ? (uint32_t)f->flags : 0);
	put_u32(b, f ? f->cred.uid : 0);
	put_u32(b, f ? f->cred.gid : 0);
	put_u32(b, f ? f->cred.ngroups : 0);
	for (uint32_t i = 0; f && i < f->cred.ngroups && i < NACRE_MAX_GROUPS; i++)
		put_u32(b, f->cred.groups[i]);
	return b->err;
}

static int count_handle(uint64_t fh, int kind, void *obj, void *arg)
{
	(void)fh;
	(void)kind;
	(void)obj;
	++*(uint64_t *)arg;
	return 0;
}

static int put_owner(const struct nacre_fid *fid, uint64_t owner, void *arg)
{
	struct obuf *b = arg;

	put_fid(b, fid);
	put_u64(b, owner);
	return b->err;
}

static int count_owner(const struct nacre_fid *fid, uint64_t owner, void *arg)
{
	(void)fid;
	(void)owner;
	++*(uint64_t *)arg;
	return 0;
}

/* The state of a stopped session. Called with the loop stopped: nothing changes it. */
static int blob_build(struct fz_upgrade *u, struct obuf *b)
{
	struct fz_mount *m = u->m;
	const struct fz_upgrade_conf *cf = u->conf;
	uint64_t n;

	put_u32(b, UPG_MAGIC);
	put_u32(b, UPG_VERSION);
	put_u32(b, m->init.proto_major);
	put_u32(b, m->init.proto_minor);
	put_u32(b, m->init.max_readahead);
	put_u32(b, m->init.capable);
	put_u32(b, m->init.want);
	put_str(b, cf->spec);
	put_str(b, cf->opts);
	put_str(b, cf->mnt);
	put_u64(b, nacre_fs_lock_client(m->fs));
	n = 0;
	fz_itable_walk(m, count_inode, &n);
	put_u64(b, n);
	fz_itable_walk(m, put_inode, b);
	n = 0;
	fz_htable_walk(m, count_handle, &n);
	put_u64(b, n);
	fz_htable_walk(m, put_handle, b);
	n = 0;
	fz_lock_owners_walk(count_owner, &n);
	put_u64(b, n);
	fz_lock_owners_walk(put_owner, b);
	return b->err;
}

/* ---------------- socket helpers ---------------- */

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads exactly len bytes within timeout_ms (-1: no limit). 0, -ETIMEDOUT, -EPIPE (EOF). */
static int read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int r = poll(&pfd, 1, timeout_ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		ssize_t n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A status message: u32 status (0 or a positive errno), u32 length, text. */
static int send_status(int fd, int status, const char *msg)
{
	unsigned char h[8];
	size_t n = msg ? strlen(msg) : 0;

	if (n > UPG_MSG_MAX)
		n = UPG_MSG_MAX;
	for (int i = 0; i < 4; i++) {
		h[i] = (unsigned char)((uint32_t)status >> (8 * i));
		h[4 + i] = (unsigned char)((uint32_t)n >> (8 * i));
	}
	int rc = write_all(fd, h, sizeof(h));
	return rc < 0 || !n ? rc : write_all(fd, msg, n);
}

static int recv_status(int fd, int timeout_ms, int *status, char *msg, size_t len)
{
	unsigned char h[8];
	char text[UPG_MSG_MAX + 1];
	uint32_t st = 0, n = 0;
	int rc = read_all(fd, h, sizeof(h), timeout_ms);

	if (rc < 0)
		return rc;
	for (int i = 0; i < 4; i++) {
		st |= (uint32_t)h[i] << (8 * i);
		n |= (uint32_t)h[4 + i] << (8 * i);
	}
	if (n > UPG_MSG_MAX)
		return -EPROTO;
	rc = read_all(fd, text, n, timeout_ms);
	if (rc < 0)
		return rc;
	text[n] = '\0';
	*status = (int)st;
	if (len)
		str_copy(msg, text, len);
	return 0;
}

int fz_upgrade_socket_path(const char *mnt, const char *opt_path, char *out, size_t len)
{
	char dev[64];
	int rc;

	if (opt_path) {
		if (strlen(opt_path) >= len)
			return -ENAMETOOLONG;
		str_copy(out, opt_path, len);
		return 0;
	}
	rc = fz_mount_find(mnt, dev, sizeof(dev), NULL, 0);
	if (rc < 0)
		return rc;
	if ((size_t)snprintf(out, len, SOCK_DIR "/mount-%s.sock", dev) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* ---------------- the serving side ---------------- */

static void wake(int sig)
{
	(void)sig; /* only interrupts the FUSE loop's wait */
}

/* Flushes every open file's write-behind data; the first error, if any. */
static int flush_file(uint64_t fh, int kind, void *obj, void *arg)
{
	int *first = arg;

	(void)fh;
	if (kind == FZ_H_FILE) {
		int rc = fz_file_push(obj);
		if (rc < 0 && !*first)
			*first = rc;
	}
	return 0;
}

static void set_state(struct fz_upgrade *u, int st)
{
	pthread_mutex_lock(&u->lock);
	u->state = st;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/* Stops the FUSE loop and waits until the main thread saw it end. 0 or -ETIMEDOUT (the loop
 * then resumes on its own once it ends). */
static int stop_loop(struct fz_upgrade *u)
{
	int rc = 0;

	pthread_mutex_lock(&u->lock);
	u->state = ST_STOPPING;
	pthread_mutex_unlock(&u->lock);
	fuse_session_exit(u->m->se);
	for (int waited = 0; ; waited += 100) {
		/* again and again: a signal between the loop's check and its wait is lost */
		pthread_kill(u->main_thread, SIGUSR2);
		pthread_mutex_lock(&u->lock);
		if (u->state == ST_STOPPED) {
			pthread_mutex_unlock(&u->lock);
			break;
		}
		if (waited >= STOP_WAIT_MS) {
			u->state = ST_ABORTED;
			pthread_mutex_unlock(&u->lock);
			rc = -ETIMEDOUT;
			break;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&u->cond, &u->lock, &ts);
		pthread_mutex_unlock(&u->lock);
	}
	return rc;
}

static int send_fd_blob(int fd, int fuse_fd, const struct obuf *b)
{
	unsigned char h[8];
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {h, sizeof(h)};
	struct msghdr msg;
	struct cmsghdr *cm;
	ssize_t n;

	memset(h, 0, 4); /* status 0 */
	for (int i = 0; i < 4; i++)
		h[4 + i] = (unsigned char)((uint32_t)b->len >> (8 * i));
	memset(&msg, 0, sizeof(msg));
	memset(cbuf, 0, sizeof(cbuf));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fuse_fd, sizeof(int));
	do {
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(h))
		return n < 0 ? -errno : -EPIPE;
	return write_all(fd, b->p, b->len);
}

/* One upgrade request on fd. Returns 1 if the session was handed over. */
static int serve_upgrade(struct fz_upgrade *u, int fd)
{
	struct fz_mount *m = u->m;
	struct obuf b = {0};
	char msg[UPG_MSG_MAX + 1], why[2 * UPG_MSG_MAX];
	int rc, status;

	if (m->lock_mode == FZ_LOCK_CLUSTER && fz_lock_waiters() > 0) {
		snprintf(why, sizeof(why), "%d request(s) on %s wait for a cluster lock and cannot "
			 "be handed over; retry when they have it", fz_lock_waiters(), u->conf->mnt);
		send_status(fd, EBUSY, why);
		return 0;
	}
	LOG_INFO("upgrade", "handing %s over to a new process: stopping the FUSE loop",
		 u->conf->mnt);
	if (stop_loop(u) < 0) {
		snprintf(why, sizeof(why), "stopping: requests in flight on %s did not finish "
			 "within %d s; the old process serves on", u->conf->mnt, STOP_WAIT_MS / 1000);
		LOG_WARN("upgrade", "%s", why);
		send_status(fd, ETIMEDOUT, why);
		return 0;
	}
	status = 0;
	fz_htable_walk(m, flush_file, &status);
	if (status < 0) {
		snprintf(why, sizeof(why), "flushing: write-behind data of an open file could not be "
			 "written (%s); the old process serves on", nacre_strerror(status));
		goto out_resume;
	}
	rc = blob_build(u, &b);
	if (rc < 0) {
		snprintf(why, sizeof(why), "saving state: %s", strerror(-rc));
		goto out_resume;
	}
	rc = send_fd_blob(fd, fuse_session_fd(m->se), &b);
	free(b.p);
	b.p = NULL;
	if (rc < 0) {
		snprintf(why, sizeof(why), "sending the session: %s", strerror(-rc));
		goto out_resume;
	}
	rc = recv_status(fd, ACK_WAIT_MS, &status, msg, sizeof(msg));
	if (rc < 0 || status != 0) {
		snprintf(why, sizeof(why), "the new process did not take over: %s",
			 rc < 0 ? (rc == -EPIPE ? "it went away" : strerror(-rc)) : msg);
		goto out_resume;
	}
	/* The successor serves only after this confirmation: had the wait above timed out,
	 * this process would serve on and the successor must not. */
	if (send_status(fd, 0, NULL) < 0) {
		snprintf(why, sizeof(why), "the new process went away after acknowledging");
		goto out_resume;
	}
	LOG_INFO("upgrade", "%s handed over; exiting without unmounting", u->conf->mnt);
	/* the successor listens here once this process is gone */
	unlink(u->path);
	u->conn_fd = fd;
	set_state(u, ST_EXIT);
	return 1;

out_resume:
	free(b.p);
	LOG_WARN("upgrade", "upgrade of %s failed: %s; serving again", u->conf->mnt, why);
	set_state(u, ST_RESUME);
	return 0;
}

static void *control_main(void *arg)
{
	struct fz_upgrade *u = arg;

	for (;;) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		unsigned char req[8];
		int fd = accept4(u->lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* shut down */
		}
		/* root or the mount's own user only (the socket is 0600 too) */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
		    (cr.uid != 0 && cr.uid != geteuid())) {
			close(fd);
			continue;
		}
		if (read_all(fd, req, sizeof(req), 5000) < 0 ||
		    ((uint32_t)req[0] | (uint32_t)req[1] << 8 | (uint32_t)req[2] << 16 |
		     (uint32_t)req[3] << 24) != UPG_REQ_MAGIC) {
			close(fd);
			continue;
		}
		if ((uint32_t)req[4] != UPG_VERSION) {
			send_status(fd, EPROTONOSUPPORT, "upgrade protocol version mismatch");
			close(fd);
			continue;
		}
		if (serve_upgrade(u, fd))
			break;
		close(fd);
	}
	return NULL;
}

int fz_upgrade_listen(struct fz_mount *m, const struct fz_upgrade_conf *conf,
		      pthread_t main_thread)
{
	struct fz_upgrade *u = calloc(1, sizeof(*u));
	struct sockaddr_un sa;
	struct sigaction act;
	int rc;

	if (!u)
		return -ENOMEM;
	u->m = m;
	u->conf = conf;
	u->lfd = -1;
	u->conn_fd = -1;
	u->main_thread = main_thread;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	rc = fz_upgrade_socket_path(conf->mnt, conf->sock, u->path, sizeof(u->path));
	if (rc < 0)
		goto out_free;
	if (!conf->sock && mkdir(SOCK_DIR, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		goto out_free;
	}
	u->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (u->lfd < 0) {
		rc = -errno;
		goto out_free;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	str_copy(sa.sun_path, u->path, sizeof(sa.sun_path));
	/* a socket left by a process that died; a live one still serving this mount cannot
	 * exist: the mount is new, or its previous server handed over and unlinked it */
	unlink(u->path);
	mode_t old = umask(077);
	rc = bind(u->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0 || listen(u->lfd, 4) < 0) {
		rc = -errno;
		goto out_close;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = wake;
	sigemptyset(&act.sa_mask);
	sigaction(SIGUSR2, &act, NULL);
	rc = pthread_create(&u->thread, NULL, control_main, u);
	if (rc) {
		rc = -rc;
		goto out_unlink;
	}
	u->started = 1;
	m->upg = u;
	LOG_INFO("upgrade", "control socket %s", u->path);
	return 0;

out_unlink:
	unlink(u->path);
out_close:
	close(u->lfd);
out_free:
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u);
	return rc;
}

int fz_upgrade_after_loop(struct fz_mount *m)
{
	struct fz_upgrade *u = m->upg;
	int st;

	if (!u)
		return FZ_UPG_NONE;
	pthread_mutex_lock(&u->lock);
	if (u->state == ST_STOPPING) {
		u->state = ST_STOPPED;
		pthread_cond_broadcast(&u->cond);
		while (u->state == ST_STOPPED)
			pthread_cond_wait(&u->cond, &u->lock);
	}
	st = u->state;
	if (st != ST_EXIT)
		u->state = ST_SERVING;
	pthread_mutex_unlock(&u->lock);
	if (st == ST_EXIT)
		return FZ_UPG_HANDED;
	return st == ST_SERVING ? FZ_UPG_NONE : FZ_UPG_RESUME;
}

void fz_upgrade_stop(struct fz_mount *m)
{
	struct fz_upgrade *u = m->upg;

	if (!u)
		return;
	shutdown(u->lfd, SHUT_RDWR);
	if (u->started)
		pthread_join(u->thread, NULL);
	if (u->state != ST_EXIT)
		unlink(u->path);
	close(u->lfd);
	/* conn_fd stays open until exit: its EOF tells the successor this process is gone */
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u);
	m->upg = NULL;
}

/* ---------------- the taking-over side ---------------- */

struct fz_takeover {
	int sock;            /* to the old process */
	int fuse_fd;
	unsigned char *blob;
	size_t blob_len;
	struct icur cur;     /* at the inode table once the header is read */
	struct fz_init_params init;
	char *spec, *opts, *mnt;
	uint64_t lock_client;
};

static int recv_fd_hdr(int fd, unsigned char h[8], int *fuse_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {h, 8};
	struct msghdr msg;
	struct cmsghdr *cm;
	ssize_t n;

	*fuse_fd = -1;
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	do {
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	} while (n < 0 && errno == EINTR);
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fuse_fd, CMSG_DATA(cm), sizeof(int));
	if (n < 0)
		return -errno;
	return n == 8 ? 0 : -EPIPE;
}

int fz_upgrade_request(const char *sock_path, struct fz_takeover **out, char *err, size_t len)
{
	struct fz_takeover *t = calloc(1, sizeof(*t));
	struct sockaddr_un sa;
	unsigned char req[8] = {0}, h[8];
	uint32_t status = 0, blen = 0;
	int rc;

	if (!t) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	t->fuse_fd = -1;
	t->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->sock < 0) {
		rc = -errno;
		snprintf(err, len, "socket: %s", strerror(errno));
		goto out_free;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	str_copy(sa.sun_path, sock_path, sizeof(sa.sun_path));
	if (connect(t->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		snprintf(err, len, "connecting to the control socket %s: %s (is the running "
			 "nacre-mount too old for --upgrade, or was it given another "
			 "control_socket=?)", sock_path, strerror(errno));
		goto out_free;
	}
	for (int i = 0; i < 4; i++)
		req[i] = (unsigned char)(UPG_REQ_MAGIC >> (8 * i));
	req[4] = (unsigned char)UPG_VERSION;
	rc = write_all(t->sock, req, sizeof(req));
	if (rc < 0) {
		snprintf(err, len, "sending the request: %s", strerror(-rc));
		goto out_free;
	}
	rc = recv_fd_hdr(t->sock, h, &t->fuse_fd);
	if (rc < 0) {
		snprintf(err, len, "waiting for the running process: %s",
			 rc == -EPIPE ? "it closed the connection" : strerror(-rc));
		goto out_free;
	}
	for (int i = 0; i < 4; i++) {
		status |= (uint32_t)h[i] << (8 * i);
		blen |= (uint32_t)h[4 + i] << (8 * i);
	}
	if (status != 0) {
		char msg[UPG_MSG_MAX + 1];
		rc = -(int)status;
		if (blen > UPG_MSG_MAX || read_all(t->sock, msg, blen, 5000) < 0)
			blen = 0;
		msg[blen] = '\0';
		snprintf(err, len, "the running process refused: %s", msg);
		goto out_free;
	}
	if (t->fuse_fd < 0 || blen > UPG_BLOB_MAX) {
		rc = -EPROTO;
		snprintf(err, len, "the running process sent no /dev/fuse descriptor");
		goto out_free;
	}
	t->blob = malloc(blen ? blen : 1);
	t->blob_len = blen;
	if (!t->blob) {
		rc = -ENOMEM;
		snprintf(err, len, "out of memory");
		goto out_free;
	}
	rc = read_all(t->sock, t->blob, blen, 60000);
	if (rc < 0) {
		snprintf(err, len, "receiving the state: %s", strerror(-rc));
		goto out_free;
	}
	t->cur = (struct icur){t->blob, t->blob_len, 0, 0};
	struct icur *c = &t->cur;
	if (get_u32(c) != UPG_MAGIC || get_u32(c) != UPG_VERSION) {
		rc = -EPROTO;
		snprintf(err, len, "the running process sent state of an unknown format");
		goto out_free;
	}
	t->init.proto_major = get_u32(c);
	t->init.proto_minor = get_u32(c);
	t->init.max_readahead = get_u32(c);
	t->init.capable = get_u32(c);
	t->init.want = get_u32(c);
	t->spec = get_str(c);
	t->opts = get_str(c);
	t->mnt = get_str(c);
	t->lock_client = get_u64(c);
	if (c->err) {
		rc = c->err;
		snprintf(err, len, "the running process sent truncated state");
		goto out_free;
	}
	*out = t;
	return 0;

out_free:
	if (t->fuse_fd >= 0)
		close(t->fuse_fd);
	fz_takeover_free(t);
	return rc;
}

const char *fz_takeover_spec(const struct fz_takeover *t)
{
	return t->spec;
}

const char *fz_takeover_opts(const struct fz_takeover *t)
{
	return t->opts;
}

int fz_takeover_fd(const struct fz_takeover *t)
{
	return t->fuse_fd;
}

/* Re-opens one handle by FID, as the opener and with its flags. */
static int import_handle(struct fz_mount *m, uint64_t fh, int kind, uint64_t ino, int flags,
			 const struct nacre_cred *cr, char *err, size_t len)
{
	struct nacre_file *nf;
	struct fz_inode *in;
	struct fz_file *f;
	char fs[NACRE_FID_STR_MAX];
	int rc;

	if (kind == FZ_H_DIR) {
		void *d = fz_dir_create();
		rc = d ? fz_handle_import(m, fh, FZ_H_DIR, d) : -ENOMEM;
		if (rc < 0) {
			fz_dir_destroy(d);
			snprintf(err, len, "directory handle %llu: %s", (unsigned long long)fh,
				 strerror(-rc));
		}
		return rc;
	}
	if (kind != FZ_H_FILE || !(in = fz_inode_get(m, ino))) {
		snprintf(err, len, "handle %llu names no known inode", (unsigned long long)fh);
		return -EPROTO;
	}
	rc = nacre_open(m->fs, cr, &in->fid, flags, &nf);
	/* the open was allowed once; a later chmod does not take it back (POSIX) */
	if (rc == -EACCES || rc == -EPERM)
		rc = nacre_open(m->fs, NULL, &in->fid, flags, &nf);
	if (rc < 0) {
		snprintf(err, len, "re-opening file %s: %s",
			 nacre_fid_format(&in->fid, fs, sizeof(fs)), nacre_strerror(rc));
		return rc;
	}
	f = fz_file_create(in, nf, flags, cr);
	if (!f) {
		nacre_close(nf);
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	rc = fz_handle_import(m, fh, FZ_H_FILE, f);
	if (rc < 0) {
		fz_file_close(f);
		snprintf(err, len, "file handle %llu: %s", (unsigned long long)fh, strerror(-rc));
	}
	return rc;
}

int fz_takeover_import(struct fz_mount *m, struct fz_takeover *t, char *err, size_t len)
{
	struct icur *c = &t->cur;
	uint64_t n, i;
	int rc;

	n = get_count(c, INODE_REC_MIN);
	for (i = 0; i < n && !c->err; i++) {
		struct nacre_fid fid, parent;
		struct nacre_time mt, ct;
		uint64_t ino = get_u64(c), nl, size;
		uint32_t valid;

		get_fid(c, &fid);
		get_fid(c, &parent);
		nl = get_u64(c);
		valid = get_u32(c);
		size = get_u64(c);
		get_time(c, &mt);
		get_time(c, &ct);
		if (c->err)
			break;
		rc = fz_inode_import(m, ino, &fid, &parent, nl);
		if (rc < 0) {
			snprintf(err, len, "inode %llu: %s", (unsigned long long)ino,
				 rc == -EINVAL && ino == FUSE_ROOT_ID
					 ? "the root differs: was another SPEC given?"
					 : strerror(-rc));
			return rc;
		}
		struct fz_inode *in = fz_inode_get(m, ino);
		in->cache_valid = valid != 0;
		in->cache_size = size;
		in->cache_mtime = mt;
		in->cache_ctime = ct;
	}
	n = c->err ? 0 : get_count(c, HANDLE_REC_MIN);
	for (i = 0; i < n && !c->err; i++) {
		struct nacre_cred cr;
		uint64_t fh = get_u64(c), ino;
		uint32_t kind = get_u32(c), flags;

		ino = get_u64(c);
		flags = get_u32(c);
		memset(&cr, 0, sizeof(cr));
		cr.uid = get_u32(c);
		cr.gid = get_u32(c);
		cr.ngroups = get_u32(c);
		if (cr.ngroups > NACRE_MAX_GROUPS) {
			c->err = -EPROTO;
			break;
		}
		for (uint32_t g = 0; g < cr.ngroups; g++)
			cr.groups[g] = get_u32(c);
		if (c->err)
			break;
		rc = import_handle(m, fh, (int)kind, ino, (int)flags, &cr, err, len);
		if (rc < 0)
			return rc;
	}
	n = c->err ? 0 : get_count(c, OWNER_REC_MIN);
	for (i = 0; i < n && !c->err; i++) {
		struct nacre_fid fid;
		uint64_t owner;

		get_fid(c, &fid);
		owner = get_u64(c);
		if (!c->err && fz_lock_owner_import(&fid, owner) < 0) {
			snprintf(err, len, "out of memory");
			return -ENOMEM;
		}
	}
	if (c->err || c->pos != c->len) {
		snprintf(err, len, "the running process sent malformed state");
		return -EPROTO;
	}
	if (t->lock_client) {
		rc = nacre_fs_set_lock_client(m->fs, t->lock_client);
		if (rc < 0) {
			snprintf(err, len, "adopting the lock client id: %s", strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int fz_locks_rebind(struct fz_mount *m, char *err, size_t len)
{
	struct nacre_fid root = nacre_fs_root(m->fs);
	struct nacre_lock none = {.type = NACRE_LK_UNLCK, .start = 0, .end = NACRE_LOCK_EOF};
	/* Unlocking nothing (owner 0 is never a kernel lock owner) still makes the MDS bind
	 * this lock client's locks to our connection, before the old one goes away. */
	int rc = nacre_lock_set(m->fs, NULL, &root, NACRE_LOCK_POSIX, 0, &none);

	if (rc < 0)
		snprintf(err, len, "taking over the cluster locks at the MDS: %s",
			 nacre_strerror(rc));
	return rc;
}

int fz_takeover_replay_init(struct fz_mount *m, struct fz_takeover *t, char *err, size_t len)
{
	struct {
		struct k_in_header h;
		struct k_init_in a;
	} in;
	struct fuse_buf fb;

	memset(&in, 0, sizeof(in));
	in.h.len = sizeof(in);
	in.h.opcode = K_FUSE_INIT;
	in.h.unique = REPLAY_UNIQUE;
	in.a.major = t->init.proto_major;
	in.a.minor = t->init.proto_minor;
	in.a.max_readahead = t->init.max_readahead;
	/* libfuse sizes its request buffer from this one: without it, 1 MiB writes would not
	 * fit. The other flags only set capabilities, which op_init restores. */
	if (in.a.major > 7 || (in.a.major == 7 && in.a.minor >= 28))
		in.a.flags = K_FUSE_MAX_PAGES;
	memset(&fb, 0, sizeof(fb));
	fb.mem = &in;
	fb.size = sizeof(in);
	m->replay_init = &t->init;
	memset(&m->init, 0, sizeof(m->init));
	fuse_session_process_buf(m->se, &fb);
	m->replay_init = NULL;
	if (m->init.proto_major != t->init.proto_major || fuse_session_exited(m->se)) {
		snprintf(err, len, "replaying FUSE_INIT (protocol %u.%u) to libfuse failed",
			 t->init.proto_major, t->init.proto_minor);
		return -EPROTO;
	}
	return 0;
}

int fz_takeover_ack(struct fz_takeover *t, int status, const char *msg)
{
	int rc = send_status(t->sock, status < 0 ? -status : status, msg), confirmed = -1;

	if (rc < 0 || status != 0)
		return rc;
	/* the old process confirms at once, or closes the connection if it gave up on us */
	rc = recv_status(t->sock, 30000, &confirmed, NULL, 0);
	return rc < 0 ? rc : confirmed == 0 ? 0 : -EPROTO;
}

void fz_takeover_wait_old(struct fz_takeover *t, int timeout_ms)
{
	char c;

	/* nothing more is sent: EOF (or an error) means the old process exited */
	while (read_all(t->sock, &c, 1, timeout_ms) == 0)
		;
}

void fz_takeover_free(struct fz_takeover *t)
{
	if (!t)
		return;
	if (t->sock >= 0)
		close(t->sock);
	free(t->blob);
	free(t->spec);
	free(t->opts);
	free(t->mnt);
	free(t);
}
