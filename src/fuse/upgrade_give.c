/* upgrade_give.c - the serving side of an upgrade: the control socket's thread stops the
 * FUSE loop and hands the session over (see upgrade.h for the steps). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/net.h"
#include "common/util.h"
#include "fuse/upgrade.h"

#define STOP_WAIT_MS 15000  /* for requests in flight to finish */
#define ACK_WAIT_MS 120000  /* for the new process to re-open every file */

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
		time_after_ms(&ts, CLOCK_REALTIME, 100);
		pthread_cond_timedwait(&u->cond, &u->lock, &ts);
		pthread_mutex_unlock(&u->lock);
	}
	return rc;
}

/* One upgrade request on fd. Returns 1 if the session was handed over. */
static int serve_upgrade(struct fz_upgrade *u, int fd)
{
	struct fz_mount *m = u->m;
	struct upg_writer b;
	char msg[UPG_MSG_MAX + 1], why[2 * UPG_MSG_MAX];
	int64_t wb = 0;
	int rc, status;

	if (fz_ring_in_use(m)) {
		/* The kernel binds ring entries to the buffers and threads of this process, and
		 * has no way to give their requests to another one. */
		snprintf(why, sizeof(why), "%s serves FUSE through io_uring, whose requests cannot "
			 "be handed to another process; remount it with -o io_uring=off to upgrade "
			 "in place", u->conf->mnt);
		upg_send_status(fd, EOPNOTSUPP, why);
		return 0;
	}
	if (m->lock_mode == FZ_LOCK_CLUSTER && fz_lock_waiters() > 0) {
		snprintf(why, sizeof(why), "%d request(s) on %s wait for a cluster lock and cannot "
			 "be handed over; retry when they have it", fz_lock_waiters(), u->conf->mnt);
		upg_send_status(fd, EBUSY, why);
		return 0;
	}
	LOG_INFO("upgrade", "handing %s over to a new process: stopping the FUSE loop",
		 u->conf->mnt);
	if (stop_loop(u) < 0) {
		snprintf(why, sizeof(why), "stopping: requests in flight on %s did not finish "
			 "within %d s; the old process serves on", u->conf->mnt, STOP_WAIT_MS / 1000);
		LOG_WARN("upgrade", "%s", why);
		upg_send_status(fd, ETIMEDOUT, why);
		return 0;
	}
	upg_writer_init_dyn(&b, UPG_BLOB_MAX);
	/* write-back changes reach the MDS and every lease goes back: the successor's
	 * journal starts empty, and other clients do not wait for a lease nobody holds */
	if (nacre_fs_tunable_get(m->fs, NACRE_TUNE_WB, -1, &wb) < 0)
		wb = 0;
	if (wb)
		nacre_fs_tunable_set(m->fs, NACRE_TUNE_WB, -1, 0);
	status = 0;
	fz_htable_walk(m, flush_file, &status);
	if (status < 0) {
		snprintf(why, sizeof(why), "flushing: write-behind data of an open file could not be "
			 "written (%s); the old process serves on", nacre_strerror(status));
		goto out_resume;
	}
	rc = upg_blob_build(m, u->conf, &b);
	if (rc < 0) {
		snprintf(why, sizeof(why), "saving state: %s", strerror(-rc));
		goto out_resume;
	}
	rc = upg_send_fd_blob(fd, fuse_session_fd(m->se), upg_writer_data(&b),
			      upg_writer_len(&b));
	upg_writer_fini(&b);
	if (rc < 0) {
		snprintf(why, sizeof(why), "sending the session: %s", strerror(-rc));
		goto out_resume;
	}
	rc = upg_recv_status(fd, ACK_WAIT_MS, &status, msg, sizeof(msg));
	if (rc < 0 || status != 0) {
		snprintf(why, sizeof(why), "the new process did not take over: %s",
			 rc < 0 ? (rc == -ECONNRESET ? "it went away" : strerror(-rc)) : msg);
		goto out_resume;
	}
	/* The successor serves only after this confirmation: had the wait above timed out,
	 * this process would serve on and the successor must not. */
	if (upg_send_status(fd, 0, NULL) < 0) {
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
	upg_writer_fini(&b);
	if (wb)
		nacre_fs_tunable_set(m->fs, NACRE_TUNE_WB, -1, 1);
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
		unsigned char req[UPG_REQ_LEN];
		struct upg_reader r;
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
		upg_reader_init(&r, req, sizeof(req));
		if (net_read_full_timeout(fd, req, sizeof(req), 5000) < 0 ||
		    upg_get_u32(&r) != UPG_REQ_MAGIC) {
			close(fd);
			continue;
		}
		if (upg_get_u8(&r) != UPG_VERSION) {
			upg_send_status(fd, EPROTONOSUPPORT, "upgrade protocol version mismatch");
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
	if (!conf->sock && mkdir(UPG_SOCK_DIR, 0700) < 0 && errno != EEXIST) {
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

