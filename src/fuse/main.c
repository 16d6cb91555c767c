/* main.c - nacre-mount (also mount.nacre and mount.fuse.nacre): mounting, daemonizing, the
 * FUSE loop, the takeover of --upgrade, remount and teardown. The command line and its -o
 * options are parsed by options.c.
 *
 *   nacre-mount SPEC MOUNTPOINT [-o opt,...] [-f] [-d]
 *   mount.nacre SPEC MOUNTPOINT [-sfnv] [-o opts]       (as mount(8) runs it)
 *   mount.fuse.nacre SPEC MOUNTPOINT -o remount,... -t fuse.nacre
 *                                   (mount -o remount of a mount whose type is fuse.nacre)
 *   nacre-mount --upgrade MOUNTPOINT [-o opt,...] [-f]  (take over a running mount)
 *
 * The file system is contacted first, and the FUSE mount made only once that worked, so a
 * failed mount leaves nothing behind and mount(8) returns only when the mount works.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* syslog.h's priority macros clash with log.h's logging macros; only openlog's flags and
 * syslog() are used here, with log.h's levels (which are syslog's values). */
#include <syslog.h>
#undef LOG_ERR
#undef LOG_INFO
#undef LOG_DEBUG

#include "common/log.h"
#include "common/metrics_opts.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "fuse/fz.h"
#include "fuse/fluid.h"
#include "fuse/fz_metrics.h"
#include "fuse/journal.h"
#include "fuse/options.h"

#define MAX_IDLE_THREADS 16
/* libfuse's default is 10; every F_SETLKW waiting on the MDS holds one thread, and the
 * mount must still serve the unlock that ends the wait. */
#define MAX_THREADS 64
#define FUSE_OPTS_MAX 2048

/* fsname=SPEC inside a libfuse -o list: commas and backslashes need a backslash. */
static int append_escaped(char *buf, size_t len, const char *s)
{
	size_t pos = strlen(buf);

	for (; *s; s++) {
		if (*s == ',' || *s == '\\') {
			if (pos + 1 >= len)
				return -1;
			buf[pos++] = '\\';
		}
		if (pos + 1 >= len)
			return -1;
		buf[pos++] = *s;
	}
	buf[pos] = '\0';
	return 0;
}

static void nacre_log(int level, const char *line, void *arg)
{
	(void)arg;
	LOG_AT(level, "nacre", "%s", line);
}

static void syslog_sink(int level, const char *line, void *arg)
{
	(void)arg;
	syslog(level, "%s", line);
}

/* Until a daemon detaches: everything to syslog, and warnings and errors also to the
 * terminal of whoever mounted (mount(8) prints nothing on success, and xfstests compares
 * what a test prints with what it expects). */
static void starting_sink(int level, const char *line, void *arg)
{
	(void)arg;
	syslog(level, "%s", line);
	if (level <= LOG_LVL_WARN)
		fprintf(stderr, "%s\n", line);
}

/* Tells the waiting parent how the mount went (0 = mounted) and lets it exit. */
static void notify_parent(int *fd, unsigned char status)
{
	ssize_t n;

	if (*fd < 0)
		return;
	do {
		n = write(*fd, &status, 1);
	} while (n < 0 && errno == EINTR);
	close(*fd);
	*fd = -1;
}

/* The daemon's remaining setup once the parent is gone: its own session, no cwd pinned,
 * no terminal, logs to syslog. */
static void detach(void)
{
	int fd;

	if (setsid() < 0)
		LOG_WARN("main", "setsid: %s", strerror(errno));
	if (chdir("/") < 0)
		LOG_WARN("main", "chdir /: %s", strerror(errno));
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	log_set_sink(syslog_sink, NULL);
}

/* Unmounts mnt for a process that received its session from another (libfuse knows no
 * mount point then, so fuse_session_unmount would do nothing). As libfuse: a lazy unmount
 * as root, else fusermount3. */
static void unmount_taken(const char *mnt)
{
	pid_t pid;
	int ws;

	if (umount2(mnt, MNT_DETACH) == 0)
		return;
	if (errno != EPERM) {
		LOG_WARN("main", "cannot unmount %s: %s", mnt, strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-q", "-z", "--", mnt, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		LOG_WARN("main", "cannot unmount %s (fusermount3 failed)", mnt);
}

/* After a takeover: once the old process is gone, its metrics port and control socket are
 * free for this one. Runs beside the FUSE loop, which stops it through stop. */
struct finisher {
	const struct fz_args *a;
	struct fz_mount *m;
	struct fz_takeover *t;
	const struct fz_upgrade_conf *conf;
	const struct nacre_mount_opts *mo;
	pthread_t main_thread;
	pthread_t thread;
	int started;
	int stop; /* atomic */
};

static int finisher_stopped(struct finisher *f)
{
	return __atomic_load_n(&f->stop, __ATOMIC_ACQUIRE);
}

static void *finisher_main(void *arg)
{
	struct finisher *f = arg;
	char err[512];
	int rc = -1, gone = 0, journal_ok = 0;

	/* the old process closes its MDS connection and exits right after our ack */
	for (int waited = 0; waited < 60000 && !gone && !finisher_stopped(f); waited += 200)
		gone = fz_takeover_wait_old(f->t, 200);
	if (!gone) /* stopped: it may have exited meanwhile all the same */
		gone = fz_takeover_wait_old(f->t, 0);
	/* it let go of its journal as it exited: what it holds is sent now, even if this
	 * process is stopping already, so that no journal is left behind for a later mount.
	 * Its lock goes with its last descriptor, a moment after its control connection. */
	if (f->a->wb && gone) {
		for (int i = 0; (rc = fz_journal_recover(f->m->journal, f->mo, err,
							  sizeof(err))) == -EBUSY && i < 50; i++) {
			struct timespec ts = {0, 200 * 1000000L};
			nanosleep(&ts, NULL);
		}
		journal_ok = rc == 0;
		if (!journal_ok)
			LOG_ERR("main", "write-back stays off after the upgrade: %s", err);
	} else if (f->a->wb && !finisher_stopped(f)) {
		LOG_ERR("main", "write-back stays off after the upgrade: the old process did not "
			"exit within 60 s and keeps its journal");
	}
	if (finisher_stopped(f))
		return NULL;
	/* its port may linger a moment after it exited */
	for (int i = 0; i < 50 && !finisher_stopped(f); i++) {
		err[0] = '\0';
		rc = metrics_opts_start(&f->a->metrics, "mount", err, sizeof(err));
		if (rc == 0)
			break;
		struct timespec ts = {0, 200 * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (rc < 0)
		LOG_ERR("main", "metrics after the upgrade: %s", err);
	/* the old process gave its leases back: they are this one's to take now */
	if (journal_ok && !finisher_stopped(f) && fz_journal_wb_on(f->m, err, sizeof(err)) < 0)
		LOG_ERR("main", "write-back stays off after the upgrade: %s", err);
	if (!finisher_stopped(f)) {
		rc = fz_upgrade_listen(f->m, f->conf, f->main_thread);
		if (rc < 0)
			LOG_WARN("main", "no control socket for a later --upgrade: %s", strerror(-rc));
	}
	return NULL;
}

static void finisher_stop(struct finisher *f)
{
	if (!f->started)
		return;
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
	pthread_join(f->thread, NULL);
	f->started = 0;
}

static int destroy_dir(uint64_t fh, int kind, void *obj, void *arg)
{
	(void)fh;
	(void)arg;
	if (kind == FZ_H_DIR)
		fz_dir_destroy(obj);
	return 0;
}

/* nacre.connect's text: what a program needs to reach the file system as this mount does.
 * Paths are made absolute (the daemon runs from /). NULL when out of memory. */
static char *connect_text(const struct fz_args *a, const struct nacre_mount_opts *mo)
{
	const char *key = mo->key_file ? mo->key_file : getenv("NACRE_KEY_FILE");
	const char *name = mo->client_name ? mo->client_name : getenv("NACRE_CLIENT_NAME");
	char *abs_key = key && key[0] ? realpath(key, NULL) : NULL;
	struct strbuf b = STRBUF_INIT;

	strbuf_printf(&b, "spec=%s\nkey_file=%s\nclient_name=%s\nsec=%s\n", a->spec,
		      abs_key ? abs_key : key ? key : "", name ? name : "",
		      mo->sec ? mo->sec : "");
	strbuf_printf(&b, "timeout_ms=%d\nrecovery_timeout_ms=%d\n", mo->timeout_ms,
		      mo->recovery_timeout_ms);
	free(abs_key);
	return strbuf_take(&b);
}

/* 1 if a mount of type fstype may be a nacre mount: fuse.nacre, or fuse (-o nosubtype). */
static int nacre_fstype(const char *fstype)
{
	return strcmp(fstype, "fuse.nacre") == 0 || strcmp(fstype, "fuse") == 0;
}

/* Notes the device number of the FUSE mount just made (or taken over) on mnt: -o ro follows
 * its superblock's flag (fz_mount_ro). */
static void mount_dev(struct fz_mount *m, const char *mnt)
{
	char fstype[64];

	if (fz_mount_find(mnt, m->kdev, sizeof(m->kdev), fstype, sizeof(fstype)) < 0 ||
	    !nacre_fstype(fstype)) {
		m->kdev[0] = '\0';
		if (m->ro)
			LOG_WARN("main", "%s not found in /proc/self/mountinfo: a remount,rw will "
				 "not lift -o ro", mnt);
	}
}

/* Mounts and serves until unmounted or signalled. *status_fd (or -1) gets 0 once mounted
 * and is then closed (set to -1). With tk, takes over the session of the process behind it
 * instead of mounting (nacre-mount --upgrade). Returns the exit code. */
static int run(const struct fz_args *a, const char *mnt, const char *addr, int *status_fd,
	       struct fz_takeover *tk)
{
	struct nacre_mount_opts mo;
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	struct nacre_fid root;
	struct fz_mount m;
	struct fz_upgrade_conf conf = {a->spec, a->opts_raw, mnt, a->control_socket};
	struct finisher fin;
	char fopts[FUSE_OPTS_MAX], journal[NACRE_PATH_MAX];
	char err[512], why[FUSE_OPTS_MAX + 1024];
	int rc, ret = 1, handed = 0;

	memset(&fin, 0, sizeof(fin));
	/* Here, in the process that serves the mount: threads do not survive fork_daemon. */
	fz_metrics_register();
	/* A successor binds the metrics port once its predecessor let go of it. */
	if (!tk && metrics_opts_start(&a->metrics, "mount", err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", a->prog, err);
		return 1;
	}
	memset(&mo, 0, sizeof(mo));
	mo.key_file = a->key_file;
	mo.sec = a->sec;
	mo.client_name = a->client_name;
	mo.timeout_ms = (int)(a->timeout * 1000.0);
	if (mo.timeout_ms < 1)
		mo.timeout_ms = 1;
	mo.recovery_timeout_ms = (int)(a->recovery_timeout * 1000.0);
	if (mo.recovery_timeout_ms < 1)
		mo.recovery_timeout_ms = 1;
	mo.log_fn = nacre_log;
	mo.max_rpc_size = a->max_rpc_size;
	mo.max_rpcs_in_flight = a->max_rpcs_in_flight;
	mo.max_dirty_mb = a->max_dirty_mb;
	mo.readahead_max_mb = a->readahead_max_mb;

	memset(&m, 0, sizeof(m));
	m.kernel_ra_kb = a->readahead_max_mb < 0 ? 0 : FZ_KERNEL_RA_KB;
	m.attr_timeout = a->attr_timeout;
	m.jobid = !a->no_jobid;
	m.jobid_var = a->jobid_var;
	m.entry_timeout = a->entry_timeout;
	m.ro = a->ro;
	m.lock_mode = a->lock_mode;
	m.atime_mode = a->atime_mode;
	err[0] = '\0';
	why[0] = '\0';
	fz_journal_dir(a, mnt, journal, sizeof(journal));
	m.journal = journal;
	m.wb_journal = a->wb_journal;
	m.spec = a->spec;
	/* what an earlier process on this mount point acknowledged and did not send (its
	 * successor after --upgrade recovers once the old process is gone) */
	if (!tk && fz_journal_recover(journal, &mo, why, sizeof(why)) < 0)
		goto out;
	rc = nacre_fs_mount(a->spec, &mo, &m.fs, err, sizeof(err));
	if (rc < 0) {
		/* Name the MDS, unless libnacre's sentence already does. */
		if (err[0] && strstr(err, addr))
			snprintf(why, sizeof(why), "cannot mount %s: %s", a->spec, err);
		else
			snprintf(why, sizeof(why), "cannot mount %s from the MDS at %s: %s", a->spec,
				 addr, err[0] ? err : nacre_strerror(rc));
		goto out;
	}
	if (a->wb && !tk && fz_journal_wb_on(&m, why, sizeof(why)) < 0)
		goto out_umount_fs;
	fz_metrics_wb_register(m.fs);
	root = nacre_fs_root(m.fs);
	m.connect = connect_text(a, &mo);
	if (!m.connect || fz_itable_init(&m.itab, &root) < 0 || fz_htable_init(&m.htab) < 0) {
		snprintf(why, sizeof(why), "out of memory");
		goto out_umount_fs;
	}
	if (tk && fz_takeover_import(&m, tk, err, sizeof(err)) < 0) {
		snprintf(why, sizeof(why), "%s", err);
		goto out_itable;
	}

	/* default_permissions: the kernel checks permissions from the attributes and ACLs we
	 * give it (special files, which it opens without asking us, and every component of a
	 * path it walks from its caches), which the MDS keeps fresh with its invalidations
	 * (notify.c); the MDS checks every request again with the caller's credentials and
	 * decides. */
	snprintf(fopts, sizeof(fopts), "allow_other,default_permissions,%sfsname=",
		 a->nosubtype ? "" : "subtype=nacre,");
	if (append_escaped(fopts, sizeof(fopts), a->spec) < 0 ||
	    strlen(fopts) + strlen(a->vfs_flags) + 16 >= sizeof(fopts)) {
		snprintf(why, sizeof(why), "SPEC too long");
		goto out_itable;
	}
	if (a->ro)
		snprintf(fopts + strlen(fopts), sizeof(fopts) - strlen(fopts), ",ro");
	/* As mount.fuse does for root: a mount made through mount(8) honours setuid bits and
	 * device files unless nosuid or nodev says otherwise (given after these, they win in
	 * libfuse); nacre-mount itself keeps libfuse's default, nosuid,nodev. */
	if (a->helper && geteuid() == 0)
		snprintf(fopts + strlen(fopts), sizeof(fopts) - strlen(fopts), ",dev,suid");
	snprintf(fopts + strlen(fopts), sizeof(fopts) - strlen(fopts), "%s", a->vfs_flags);
	if (fuse_opt_add_arg(&fargs, a->prog) < 0 || fuse_opt_add_arg(&fargs, "-o") < 0 ||
	    fuse_opt_add_arg(&fargs, fopts) < 0 ||
	    (a->fuse_debug && fuse_opt_add_arg(&fargs, "-d") < 0)) {
		snprintf(why, sizeof(why), "out of memory");
		goto out_args;
	}
	se = fuse_session_new(&fargs, &fz_ops, sizeof(fz_ops), &m);
	if (!se) {
		snprintf(why, sizeof(why), "cannot set up the FUSE session (options %s)", fopts);
		goto out_args;
	}
	m.se = se;
	if (fuse_set_signal_handlers(se) < 0) {
		snprintf(why, sizeof(why), "cannot install signal handlers");
		goto out_session;
	}
	if (tk) {
		char dev_fd[32];

		snprintf(dev_fd, sizeof(dev_fd), "/dev/fd/%d", fz_takeover_fd(tk));
		if (fuse_session_mount(se, dev_fd) < 0) {
			snprintf(why, sizeof(why), "libfuse did not take the received /dev/fuse fd");
			goto out_signals;
		}
		mount_dev(&m, mnt);
		/* before the replayed INIT, which tells it the kernel is ready */
		fz_bdi_start(&m, mnt);
		if (fz_takeover_replay_init(&m, tk, err, sizeof(err)) < 0 ||
		    (m.lock_mode == FZ_LOCK_CLUSTER && fz_locks_rebind(&m, err, sizeof(err)) < 0)) {
			snprintf(why, sizeof(why), "%s", err);
			goto out_bdi;
		}
		/* From here the session is ours: the old process exits once it reads this. */
		if (fz_takeover_ack(tk, 0, NULL) < 0) {
			snprintf(why, sizeof(why), "acknowledging: the old process did not confirm "
				 "(it serves on if it still runs)");
			goto out_bdi;
		}
		LOG_INFO("main", "took over %s (%s)%s", mnt, a->spec, a->ro ? " read-only" : "");
	} else {
		if (fuse_session_mount(se, mnt) < 0) {
			snprintf(why, sizeof(why), "cannot mount FUSE on %s (is /dev/fuse there, and "
				 "are you root or is user_allow_other set in /etc/fuse.conf?)", mnt);
			goto out_signals;
		}
		LOG_INFO("main", "mounted %s on %s%s", a->spec, mnt, a->ro ? " read-only" : "");
		mount_dev(&m, mnt);
		rc = fz_ring_setup(&m, mnt, !a->no_io_uring);
		if (rc < 0)
			LOG_WARN("main", "FUSE transport: /dev/fuse (libfuse took no custom I/O: %s)",
				 strerror(-rc));
		fz_bdi_start(&m, mnt);
	}
	fz_notify_start(&m);
	if (*status_fd >= 0) {
		notify_parent(status_fd, 0);
		detach();
	}
	if (tk) {
		fin.a = a;
		fin.m = &m;
		fin.t = tk;
		fin.conf = &conf;
		fin.mo = &mo;
		fin.main_thread = pthread_self();
		if (pthread_create(&fin.thread, NULL, finisher_main, &fin) == 0)
			fin.started = 1;
		else
			LOG_WARN("main", "cannot start the thread that waits for the old process");
	} else {
		rc = fz_upgrade_listen(&m, &conf, pthread_self());
		if (rc < 0)
			LOG_WARN("main", "no control socket, so no --upgrade for %s: %s", mnt,
				 strerror(-rc));
	}

	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		LOG_ERR("main", "out of memory");
		goto out_unmount;
	}
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_idle_threads(cfg, MAX_IDLE_THREADS);
	fuse_loop_cfg_set_max_threads(cfg, MAX_THREADS);
	for (;;) {
		int up;

		rc = fuse_session_loop_mt(se, cfg);
		/* m.upg is the finisher's to set until it ended */
		finisher_stop(&fin);
		up = fz_upgrade_after_loop(&m);
		if (up == FZ_UPG_HANDED) {
			handed = 1;
			break;
		}
		/* libfuse returns the signal that ended the loop: a requested stop, which an
		 * upgrade that failed meanwhile does not cancel */
		if (up == FZ_UPG_RESUME && rc != SIGTERM && rc != SIGINT && rc != SIGHUP) {
			fuse_session_reset(se);
			/* a successor that failed may have bound our locks to its connection */
			if (m.lock_mode == FZ_LOCK_CLUSTER && fz_locks_rebind(&m, err, sizeof(err)) < 0)
				LOG_WARN("main", "%s", err);
			continue;
		}
		break;
	}
	fuse_loop_cfg_destroy(cfg);
	fz_ring_stop(&m);
	/* libfuse returns the signal that ended the loop: a requested stop, not an error
	 * (Fluid and systemd stop us with SIGTERM and expect exit 0). */
	if (handed || rc == SIGTERM || rc == SIGINT || rc == SIGHUP)
		rc = 0;
	if (rc != 0)
		LOG_ERR("main", "FUSE loop ended with %d", rc);
	else
		ret = 0;
	if (!handed)
		LOG_INFO("main", "unmounting %s", mnt);

out_unmount:
	fz_notify_stop(&m); /* no invalidation may reach a session unmounted or handed over */
	finisher_stop(&fin);
	fz_upgrade_stop(&m);
	fz_bdi_stop(&m);
	if (!handed) {
		if (tk)
			unmount_taken(mnt);
		else
			fuse_session_unmount(se);
	}
	goto out_signals;
out_bdi:
	fz_bdi_stop(&m);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fz_ring_stop(&m); /* a failed start may leave it running */
	fuse_session_destroy(se);
	fz_ring_free(&m);
out_args:
	fuse_opt_free_args(&fargs);
	if (handed) {
		/* The successor re-opened every file and holds the locks: closing ours would
		 * send the MDS stale sizes. Exiting drops our connection and its handles. */
		metrics_opts_stop();
		free(m.connect);
		return ret;
	}
out_itable:
	fz_htable_walk(&m, destroy_dir, NULL);
	fz_htable_fini(&m.htab);
	nacre_fs_unmounting(m.fs); /* the closes below do not wait long for a missing MDS */
	fz_file_close_all(&m);
	fz_itable_fini(&m.itab);
out_umount_fs:
	fz_metrics_wb_forget(); /* a last scrape or log record may still come */
	nacre_fs_umount(m.fs);
	free(m.connect);
out:
	metrics_opts_stop();
	if (why[0]) {
		if (tk) {
			fprintf(stderr, "%s --upgrade %s: cannot take over: %s\n", a->prog, mnt, why);
			fz_takeover_ack(tk, -EIO, why);
		} else {
			fprintf(stderr, "%s: %s\n", a->prog, why);
		}
	}
	return ret;
}

/* Forks: the parent waits for the child's verdict on the mount and exits with it, which
 * is what mount(8) waits for. Forking here, before libnacre starts its threads, keeps them
 * alive in the daemon (fuse_daemonize would fork after the mount and lose them). Returns
 * the pipe's write end in the child. */
static int fork_daemon(const char *prog)
{
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		unsigned char status = 1;
		ssize_t n;

		close(pfd[1]);
		do {
			n = read(pfd[0], &status, 1);
		} while (n < 0 && errno == EINTR);
		if (n != 1) {
			/* The child failed before mounting (it printed why) or died. */
			int ws;

			waitpid(pid, &ws, 0);
			exit(1);
		}
		exit(status ? 1 : 0);
	}
	close(pfd[0]);
	return pfd[1];
}

/* nacre-mount --upgrade MOUNTPOINT: checks that MOUNTPOINT is a nacre mount, asks its
 * process for the session and serves it with the old options (those given here override
 * them). Returns the exit code. */
static int upgrade_main(const struct fz_args *cmd)
{
	char addr[NACRE_ADDR_LIST_MAX], fsname[NACRE_FSNAME_MAX + 1], subdir[NACRE_PATH_MAX + 1];
	char dev[64], fstype[64], sock[108], err[1024];
	struct fz_takeover *tk = NULL;
	struct fz_args *a = NULL;
	char *mnt;
	int rc, status_fd = -1, ret = 1, old_lock_mode;

	/* realpath does not need the mount to answer: a hung one is still found */
	mnt = realpath(cmd->mountpoint, NULL);
	if (!mnt) {
		fprintf(stderr, "%s --upgrade: %s: %s\n", cmd->prog, cmd->mountpoint, strerror(errno));
		return 1;
	}
	rc = fz_mount_find(mnt, dev, sizeof(dev), fstype, sizeof(fstype));
	if (rc < 0 || !nacre_fstype(fstype)) {
		if (rc < 0)
			fprintf(stderr, "%s --upgrade: %s is not a mount point, so not a nacre mount\n",
				cmd->prog, mnt);
		else
			fprintf(stderr, "%s --upgrade: %s is not a nacre mount (its file system type "
					"is %s)\n", cmd->prog, mnt, fstype[0] ? fstype : "unknown");
		goto out_free;
	}
	rc = fz_upgrade_socket_path(mnt, cmd->control_socket, sock, sizeof(sock));
	if (rc < 0) {
		fprintf(stderr, "%s --upgrade: %s: no control socket path: %s\n", cmd->prog, mnt,
			strerror(-rc));
		goto out_free;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		fprintf(stderr, "%s: out of memory\n", cmd->prog);
		goto out_free;
	}
	log_init("mount", cmd->debug ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	/* The request is made by the process that will serve: the fd goes to it. */
	if (!cmd->foreground)
		status_fd = fork_daemon(cmd->prog);
	rc = fz_upgrade_request(sock, &tk, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s --upgrade %s: %s\n", cmd->prog, mnt, err);
		goto out_args;
	}
	a->prog = cmd->prog;
	a->attr_timeout = 1.0;
	a->entry_timeout = 1.0;
	a->timeout = 30.0;
	a->recovery_timeout = 300.0;
	a->wb_journal = NACRE_WB_JOURNAL_ASYNC;
	a->spec = fz_takeover_spec(tk);
	a->foreground = cmd->foreground;
	a->fuse_debug = cmd->fuse_debug;
	if (fz_takeover_opts(tk)[0] && fz_take_opts(a, fz_takeover_opts(tk)) < 0) {
		fz_takeover_ack(tk, -EINVAL, "the new process rejected the mount options");
		goto out_tk;
	}
	old_lock_mode = a->lock_mode;
	if (cmd->opts_raw[0] && fz_take_opts(a, cmd->opts_raw) < 0) {
		fz_takeover_ack(tk, -EINVAL, "the new process rejected the mount options");
		goto out_tk;
	}
	/* The kernel keeps what it agreed with the first process at FUSE_INIT: whether lock
	 * calls reach us at all. */
	if (a->lock_mode != old_lock_mode) {
		fprintf(stderr, "%s --upgrade %s: flock, localflock and noflock cannot change in an "
				"upgrade: unmount and mount again to change them\n", cmd->prog, mnt);
		fz_takeover_ack(tk, -EINVAL, "the lock mode cannot change in an upgrade");
		goto out_tk;
	}
	a->debug |= cmd->debug;
	if (!a->control_socket)
		a->control_socket = cmd->control_socket;
	rc = nacre_parse_spec(a->spec, addr, sizeof(addr), fsname, sizeof(fsname), subdir,
			      sizeof(subdir), err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s --upgrade %s: %s\n", cmd->prog, mnt, err);
		fz_takeover_ack(tk, -EINVAL, "the new process rejected the mount spec");
		goto out_tk;
	}
	ret = run(a, mnt, addr, &status_fd, tk);
out_tk:
	fz_takeover_free(tk);
out_args:
	/* a failure before the takeover: the parent exits 1 on the closed pipe */
	if (status_fd >= 0)
		notify_parent(&status_fd, 1);
	free(a);
out_free:
	free(mnt);
	return ret;
}

/* mount(2) flags of the options a remount may change; the kernel applies the set given and
 * clears the others, so mount(8) passes every flag the mount has. */
static const struct {
	const char *name;
	unsigned long flag;
	int clear;
} remount_opts[] = {
	{"ro", MS_RDONLY, 0},           {"rw", MS_RDONLY, 1},
	{"nosuid", MS_NOSUID, 0},       {"suid", MS_NOSUID, 1},
	{"nodev", MS_NODEV, 0},         {"dev", MS_NODEV, 1},
	{"noexec", MS_NOEXEC, 0},       {"exec", MS_NOEXEC, 1},
	{"sync", MS_SYNCHRONOUS, 0},    {"async", MS_SYNCHRONOUS, 1},
	{"dirsync", MS_DIRSYNC, 0},
	{"noatime", MS_NOATIME, 0},     {"atime", MS_NOATIME, 1},
	{"nodiratime", MS_NODIRATIME, 0}, {"diratime", MS_NODIRATIME, 1},
	{"relatime", MS_RELATIME, 0},   {"norelatime", MS_RELATIME, 1},
	{"strictatime", MS_STRICTATIME, 0}, {"nostrictatime", MS_STRICTATIME, 1},
	{"lazytime", MS_LAZYTIME, 0},   {"nolazytime", MS_LAZYTIME, 1},
};

/* -o remount: the kernel changes the flags of the running FUSE mount (FUSE accepts any
 * remount); its process and session stay. Once the superblock is read-only the kernel
 * refuses every modification itself; after remount,rw the process notices at the next one
 * (fz_mount_ro). mount(8) runs this as mount.fuse.nacre, the helper of type fuse.nacre.
 * Returns the exit code. */
static int remount_main(const struct fz_args *a)
{
	unsigned long flags = MS_REMOUNT | (a->bind ? MS_BIND : 0);
	char dev[64], fstype[64];
	char *mnt, *opts, *opt;
	int ret = 1;

	mnt = realpath(a->mountpoint, NULL);
	if (!mnt) {
		fprintf(stderr, "%s: mount point %s: %s\n", a->prog, a->mountpoint, strerror(errno));
		return 1;
	}
	if (fz_mount_find(mnt, dev, sizeof(dev), fstype, sizeof(fstype)) < 0 ||
	    !nacre_fstype(fstype)) {
		fprintf(stderr, "%s: cannot remount %s: it is not a nacre mount\n", a->prog, mnt);
		goto out_free;
	}
	opts = strdup(a->opts_raw);
	if (!opts) {
		fprintf(stderr, "%s: out of memory\n", a->prog);
		goto out_free;
	}
	/* parse_opts checked every option; the others keep the values the mount started with */
	for (opt = opts; opt;) {
		char *comma = strchr(opt, ',');

		if (comma)
			*comma++ = '\0';
		for (size_t i = 0; i < ARRAY_SIZE(remount_opts); i++) {
			if (strcmp(opt, remount_opts[i].name) != 0)
				continue;
			if (remount_opts[i].clear)
				flags &= ~remount_opts[i].flag;
			else
				flags |= remount_opts[i].flag;
		}
		opt = comma;
	}
	free(opts);
	if (a->fake) {
		ret = 0;
		goto out_free;
	}
	if (mount(a->spec ? a->spec : "nacre", mnt, "fuse.nacre", flags, NULL) < 0) {
		int e = errno;

		fprintf(stderr, "%s: cannot remount %s: %s%s\n", a->prog, mnt, strerror(e),
			e == EBUSY && (flags & MS_RDONLY)
			? " (files are open for writing on it: close them first)" : "");
		goto out_free;
	}
	ret = 0;
out_free:
	free(mnt);
	return ret;
}

/* A second nacre mount on the same directory would hide the first, which keeps running
 * unseen: refuse, as mount(8) refuses a busy target. */
static int already_mounted(const struct fz_args *a, const char *mnt)
{
	char dev[32], fstype[64];

	if (fz_mount_find(mnt, dev, sizeof(dev), fstype, sizeof(fstype)) != 0 ||
	    strcmp(fstype, "fuse.nacre") != 0)
		return 0;
	fprintf(stderr, "%s: %s is already a nacre mount (device %s): unmount it first "
		"(umount %s), or give -o overmount to mount over it\n", a->prog, mnt, dev, mnt);
	return 1;
}

int main(int argc, char **argv)
{
	char addr[NACRE_ADDR_LIST_MAX], fsname[NACRE_FSNAME_MAX + 1], subdir[NACRE_PATH_MAX + 1];
	char err[256];
	struct fz_args a;
	struct stat st;
	char *mnt;
	int rc, status_fd = -1, ret;

	if (fz_fluid_wanted(argc, argv))
		return fz_fluid_main(argc, argv);
	memset(&a, 0, sizeof(a));
	a.prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	a.helper = strncmp(a.prog, "mount.", 6) == 0;
	a.attr_timeout = 1.0;
	a.entry_timeout = 1.0;
	a.timeout = 30.0;
	a.recovery_timeout = 300.0;
	a.wb_journal = NACRE_WB_JOURNAL_ASYNC;
	rc = fz_parse_args(&a, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 1;
	if (a.upgrade)
		return upgrade_main(&a);
	if (a.remount)
		return remount_main(&a);
	if (a.bind) {
		fprintf(stderr, "%s: -o bind goes only with remount (mount --bind makes bind "
				"mounts)\n", a.prog);
		return 1;
	}

	rc = nacre_parse_spec(a.spec, addr, sizeof(addr), fsname, sizeof(fsname), subdir,
			      sizeof(subdir), err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", a.prog, err);
		return 1;
	}
	if (stat(a.mountpoint, &st) < 0) {
		fprintf(stderr, "%s: mount point %s: %s%s\n", a.prog, a.mountpoint, strerror(errno),
			errno == ENOTCONN ? " (a dead FUSE mount: run umount on it first)" : "");
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: mount point %s is not a directory\n", a.prog, a.mountpoint);
		return 1;
	}
	mnt = realpath(a.mountpoint, NULL);
	if (!mnt) {
		fprintf(stderr, "%s: mount point %s: %s\n", a.prog, a.mountpoint, strerror(errno));
		return 1;
	}
	if (!a.overmount && already_mounted(&a, mnt)) {
		free(mnt);
		return 1;
	}
	if (a.fake) {
		free(mnt);
		return 0;
	}

	log_init("mount", a.debug ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	if (!a.foreground) {
		openlog("nacre-mount", LOG_PID, LOG_DAEMON);
		log_set_sink(starting_sink, NULL);
		status_fd = fork_daemon(a.prog);
	}
	ret = run(&a, mnt, addr, &status_fd, NULL);
	/* Mount failed in the child: it printed why; the parent exits 1 on the closed pipe. */
	if (status_fd >= 0)
		notify_parent(&status_fd, 1);
	free(mnt);
	return ret;
}
