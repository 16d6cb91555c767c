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
 * The blob is little-endian, field by field through the wire cursor (proto/cursor.h), with a
 * magic and a version; the reader checks every count against the bytes present.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "common/net.h"
#include "common/util.h"
#include "fuse/fz.h"
#include "proto/cursor.h"
#include "proto/wire.h"

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

/* A string: u32 length, then the bytes (no NUL). NULL is written as "". */
static void put_str(struct wire_cursor *c, const char *s)
{
	wire_put_blob(c, s ? s : "", s ? (uint32_t)strlen(s) : 0);
}

static void put_time(struct wire_cursor *c, const struct nacre_time *t)
{
	wire_put_i64(c, t->sec);
	wire_put_u32(c, t->nsec);
}

/* A NUL-terminated copy (caller frees), or NULL with the cursor failed. */
static char *get_str(struct wire_cursor *c)
{
	uint32_t n;
	const uint8_t *x = wire_get_blob(c, UINT32_MAX, &n);
	char *s;

	if (!x)
		return NULL;
	if (memchr(x, '\0', n)) {
		wire_cursor_fail(c, -EPROTO);
		return NULL;
	}
	s = malloc((size_t)n + 1);
	if (!s) {
		wire_cursor_fail(c, -ENOMEM);
		return NULL;
	}
	memcpy(s, x, n);
	s[n] = '\0';
	return s;
}

static void get_time(struct wire_cursor *c, struct nacre_time *t)
{
	t->sec = wire_get_i64(c);
	t->nsec = wire_get_u32(c);
}

/* Every count is checked against the bytes left: each item takes at least min bytes.
 * 0 once the cursor failed. */
static uint64_t get_count(struct wire_cursor *c, size_t min)
{
	uint64_t n = wire_get_u64(c);

	if (wire_cursor_ok(c) && n > wire_cursor_left(c) / min)
		wire_cursor_fail(c, -EPROTO);
	return wire_cursor_ok(c) ? n : 0;
}

#define INODE_REC_MIN (8 + 16 + 16 + 8 + 4 + 8 + 12 + 12)
#define HANDLE_REC_MIN (8 + 4 + 8 + 4 + 12)
#define OWNER_REC_MIN (16 + 8)

static int put_inode(struct fz_inode *in, void *arg)
{
	struct wire_cursor *c = arg;

	wire_put_u64(c, in->ino);
	wire_fid_put(c, &in->fid);
	wire_fid_put(c, &in->parent);
	wire_put_u64(c, in->nlookup);
	pthread_mutex_lock(&in->lock);
	wire_put_u32(c, (uint32_t)in->cache_valid);
	wire_put_u64(c, in->cache_size);
	put_time(c, &in->cache_mtime);
	put_time(c, &in->cache_ctime);
	pthread_mutex_unlock(&in->lock);
	return c->err;
}

static int count_inode(struct fz_inode *in, void *arg)
{
	(void)in;
	++*(uint64_t *)arg;
	return 0;
}

static int put_handle(uint64_t fh, int kind, void *obj, void *arg)
{
	static const struct nacre_cred no_cred;
	struct wire_cursor *c = arg;
	struct fz_file *f = kind == FZ_H_FILE ? obj : NULL;

	wire_put_u64(c, fh);
	wire_put_u32(c, (uint32_t)kind);
	wire_put_u64(c, f ? f->inode->ino : 0);
	wire_put_u32(c, f ? (uint32_t)f->flags : 0);
	wire_cred_put(c, f ? &f->cred : &no_cred);
	return c->err;
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
	struct wire_cursor *c = arg;

	wire_fid_put(c, fid);
	wire_put_u64(c, owner);
	return c->err;
}

static int count_owner(const struct nacre_fid *fid, uint64_t owner, void *arg)
{
	(void)fid;
	(void)owner;
	++*(uint64_t *)arg;
	return 0;
}

/* The state of a stopped session. Called with the loop stopped: nothing changes it. */
static int blob_build(struct fz_upgrade *u, struct wire_cursor *c)
{
	struct fz_mount *m = u->m;
	const struct fz_upgrade_conf *cf = u->conf;
	uint64_t n;

	wire_put_u32(c, UPG_MAGIC);
	wire_put_u32(c, UPG_VERSION);
	wire_put_u32(c, m->init.proto_major);
	wire_put_u32(c, m->init.proto_minor);
	wire_put_u32(c, m->init.max_readahead);
	wire_put_u32(c, m->init.capable);
	wire_put_u32(c, m->init.want);
	put_str(c, cf->spec);
	put_str(c, cf->opts);
	put_str(c, cf->mnt);
	wire_put_u64(c, nacre_fs_lock_client(m->fs));
	n = 0;
	fz_itable_walk(m, count_inode, &n);
	wire_put_u64(c, n);
	fz_itable_walk(m, put_inode, c);
	n = 0;
	fz_htable_walk(m, count_handle, &n);
	wire_put_u64(c, n);
	fz_htable_walk(m, put_handle, c);
	n = 0;
	fz_lock_owners_walk(count_owner, &n);
	wire_put_u64(c, n);
	fz_lock_owners_walk(put_owner, c);
	return c->err;
}

/* ---------------- socket helpers ---------------- */

/* The request: u32 UPG_REQ_MAGIC, u8 UPG_VERSION, 3 bytes zero. */
#define REQ_LEN 8
/* The 8 bytes that start a status message and the handover: u32 status, u32 length. */
#define HDR_LEN 8

static void hdr_encode(unsigned char h[HDR_LEN], uint32_t status, uint32_t len)
{
	struct wire_cursor c;

	wire_cursor_init_write(&c, h, HDR_LEN);
	wire_put_u32(&c, status);
	wire_put_u32(&c, len);
}

static void hdr_decode(const unsigned char h[HDR_LEN], uint32_t *status, uint32_t *len)
{
	struct wire_cursor c;

	wire_cursor_init_read(&c, h, HDR_LEN);
	*status = wire_get_u32(&c);
	*len = wire_get_u32(&c);
}

/* Reads a status text of n bytes into text (UPG_MSG_MAX + 1 bytes), NUL-terminated; on
 * failure text is "". 0, -EPROTO (too long) or net_read_full_timeout()'s error. */
static int recv_text(int fd, uint32_t n, int timeout_ms, char *text)
{
	int rc = n > UPG_MSG_MAX ? -EPROTO : net_read_full_timeout(fd, text, n, timeout_ms);

	text[rc < 0 ? 0 : n] = '\0';
	return rc;
}

/* A status message: u32 status (0 or a positive errno), u32 length, text. */
static int send_status(int fd, int status, const char *msg)
{
	unsigned char h[HDR_LEN];
	size_t n = msg ? strlen(msg) : 0;
	struct iovec iov[2] = {{h, sizeof(h)}, {(void *)msg, 0}};

	if (n > UPG_MSG_MAX)
		n = UPG_MSG_MAX;
	hdr_encode(h, (uint32_t)status, (uint32_t)n);
	iov[1].iov_len = n;
	return net_writev_full(fd, iov, 2);
}

static int recv_status(int fd, int timeout_ms, int *status, char *msg, size_t len)
{
	unsigned char h[HDR_LEN];
	char text[UPG_MSG_MAX + 1];
	uint32_t st, n;
	int rc = net_read_full_timeout(fd, h, sizeof(h), timeout_ms);

	if (rc < 0)
		return rc;
	hdr_decode(h, &st, &n);
	rc = recv_text(fd, n, timeout_ms, text);
	if (rc < 0)
		return rc;
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

/* The handover: a status 0 header carrying the fd, then the blob (c, encoded). */
static int send_fd_blob(int fd, int fuse_fd, const struct wire_cursor *c)
{
	unsigned char h[HDR_LEN];
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {h, sizeof(h)};
	struct iovec blob = {c->buf, wire_cursor_pos(c)};
	struct msghdr msg;
	struct cmsghdr *cm;
	ssize_t n;

	hdr_encode(h, 0, (uint32_t)wire_cursor_pos(c));
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
	return net_writev_full(fd, &blob, 1);
}

/* One upgrade request on fd. Returns 1 if the session was handed over. */
static int serve_upgrade(struct fz_upgrade *u, int fd)
{
	struct fz_mount *m = u->m;
	struct wire_cursor b;
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
	wire_cursor_init_dyn(&b, UPG_BLOB_MAX);
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
	wire_cursor_fini(&b);
	if (rc < 0) {
		snprintf(why, sizeof(why), "sending the session: %s", strerror(-rc));
		goto out_resume;
	}
	rc = recv_status(fd, ACK_WAIT_MS, &status, msg, sizeof(msg));
	if (rc < 0 || status != 0) {
		snprintf(why, sizeof(why), "the new process did not take over: %s",
			 rc < 0 ? (rc == -ECONNRESET ? "it went away" : strerror(-rc)) : msg);
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
	wire_cursor_fini(&b);
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
		unsigned char req[REQ_LEN];
		struct wire_cursor c;
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
		wire_cursor_init_read(&c, req, sizeof(req));
		if (net_read_full_timeout(fd, req, sizeof(req), 5000) < 0 ||
		    wire_get_u32(&c) != UPG_REQ_MAGIC) {
			close(fd);
			continue;
		}
		if (wire_get_u8(&c) != UPG_VERSION) {
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
	struct wire_cursor cur; /* over blob; at the inode table once the header is read */
	struct fz_init_params init;
	char *spec, *opts, *mnt;
	uint64_t lock_client;
};

static int recv_fd_hdr(int fd, unsigned char h[HDR_LEN], int *fuse_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {h, HDR_LEN};
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
	return n == HDR_LEN ? 0 : -EPIPE;
}

int fz_upgrade_request(const char *sock_path, struct fz_takeover **out, char *err, size_t len)
{
	struct fz_takeover *t = calloc(1, sizeof(*t));
	struct sockaddr_un sa;
	unsigned char req[REQ_LEN] = {0}, h[HDR_LEN];
	struct iovec iov = {req, sizeof(req)};
	struct wire_cursor rq, *c;
	uint32_t status, blen;
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
	wire_cursor_init_write(&rq, req, sizeof(req));
	wire_put_u32(&rq, UPG_REQ_MAGIC);
	wire_put_u8(&rq, UPG_VERSION);
	rc = net_writev_full(t->sock, &iov, 1);
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
	hdr_decode(h, &status, &blen);
	if (status != 0) {
		char msg[UPG_MSG_MAX + 1];
		rc = -(int)status;
		recv_text(t->sock, blen, 5000, msg); /* "" if it fails */
		snprintf(err, len, "the running process refused: %s", msg);
		goto out_free;
	}
	if (t->fuse_fd < 0 || blen > UPG_BLOB_MAX) {
		rc = -EPROTO;
		snprintf(err, len, "the running process sent no /dev/fuse descriptor");
		goto out_free;
	}
	t->blob = malloc(blen ? blen : 1);
	if (!t->blob) {
		rc = -ENOMEM;
		snprintf(err, len, "out of memory");
		goto out_free;
	}
	rc = net_read_full_timeout(t->sock, t->blob, blen, 60000);
	if (rc < 0) {
		snprintf(err, len, "receiving the state: %s", strerror(-rc));
		goto out_free;
	}
	c = &t->cur;
	wire_cursor_init_read(c, t->blob, blen);
	if (wire_get_u32(c) != UPG_MAGIC || wire_get_u32(c) != UPG_VERSION) {
		rc = -EPROTO;
		snprintf(err, len, "the running process sent state of an unknown format");
		goto out_free;
	}
	t->init.proto_major = wire_get_u32(c);
	t->init.proto_minor = wire_get_u32(c);
	t->init.max_readahead = wire_get_u32(c);
	t->init.capable = wire_get_u32(c);
	t->init.want = wire_get_u32(c);
	t->spec = get_str(c);
	t->opts = get_str(c);
	t->mnt = get_str(c);
	t->lock_client = wire_get_u64(c);
	if (!wire_cursor_ok(c)) {
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
	struct wire_cursor *c = &t->cur;
	uint64_t n, i;
	int rc;

	n = get_count(c, INODE_REC_MIN);
	for (i = 0; i < n && wire_cursor_ok(c); i++) {
		struct nacre_fid fid, parent;
		struct nacre_time mt, ct;
		uint64_t ino = wire_get_u64(c), nl, size;
		uint32_t valid;

		wire_fid_get(c, &fid);
		wire_fid_get(c, &parent);
		nl = wire_get_u64(c);
		valid = wire_get_u32(c);
		size = wire_get_u64(c);
		get_time(c, &mt);
		get_time(c, &ct);
		if (!wire_cursor_ok(c))
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
	n = get_count(c, HANDLE_REC_MIN);
	for (i = 0; i < n && wire_cursor_ok(c); i++) {
		struct nacre_cred cr;
		uint64_t fh = wire_get_u64(c), ino;
		uint32_t kind = wire_get_u32(c), flags;

		ino = wire_get_u64(c);
		flags = wire_get_u32(c);
		wire_cred_get(c, &cr); /* fails the cursor if ngroups > NACRE_MAX_GROUPS */
		if (!wire_cursor_ok(c))
			break;
		rc = import_handle(m, fh, (int)kind, ino, (int)flags, &cr, err, len);
		if (rc < 0)
			return rc;
	}
	n = get_count(c, OWNER_REC_MIN);
	for (i = 0; i < n && wire_cursor_ok(c); i++) {
		struct nacre_fid fid;
		uint64_t owner;

		wire_fid_get(c, &fid);
		owner = wire_get_u64(c);
		if (wire_cursor_ok(c) && fz_lock_owner_import(&fid, owner) < 0) {
			snprintf(err, len, "out of memory");
			return -ENOMEM;
		}
	}
	if (!wire_cursor_ok(c) || wire_cursor_left(c) != 0) {
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
	while (net_read_full_timeout(t->sock, &c, 1, timeout_ms) == 0)
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
