/* bringup_local.c - the local runner: the engine's steps as children of this process (see
 * bringup_local.h). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/bringup_local.h"
#include "cli/cli.h"
#include "cli/local_proc.h"
#include "common/key.h"
#include "common/util.h"
#include "nacre/nacre.h"

#define MDS_WAIT_MS 10000
#define OSS_WAIT_MS 20000
#define OST_WAIT_MS 20000
#define MOUNT_WAIT_MS 15000
#define STOP_WAIT_MS 10000
#define MOUNT_EXIT_MS 5000
#define COPYTOOL_WAIT_MS 15000
#define READY_SCAN_MAX 65536 /* a daemon says it serves within its first lines */

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

void bu_local_step(struct bu_local *l, const char *fmt, ...)
{
	va_list ap;
	double t = cli_now_s();

	printf("[%.1fs] ", t - l->t0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	l->t0 = t;
}

void bu_local_init(struct bu_local *l, const struct cc_conf *c, const char *dir)
{
	memset(l, 0, sizeof(*l));
	l->c = c;
	str_copy(l->dir, dir, sizeof(l->dir));
	l->t0 = cli_now_s();
}

/* ---- the process table and DIR/cluster.pids */

static struct bu_proc *add_proc(struct bu_local *l, const char *role, pid_t pid,
				const char *log)
{
	struct bu_proc *p = &l->procs[l->nprocs++];

	str_copy(p->role, role, sizeof(p->role));
	p->pid = pid;
	p->ours = 1;
	str_copy(p->log, log, sizeof(p->log));
	return p;
}

/* A child of this run may still be between fork and exec: trust it without the cmdline. */
static int proc_alive(const struct bu_proc *p)
{
	if (p->pid <= 0)
		return 0;
	if (p->ours) {
		int st;

		if (waitpid(p->pid, &st, WNOHANG) == p->pid)
			return 0;
		return kill(p->pid, 0) == 0;
	}
	return lp_is_nacre_proc(p->pid);
}

int bu_local_write_pids(const struct bu_local *l)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];

	if (lp_path_join(path, sizeof(path), l->dir, "cluster.pids") < 0)
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");

	if (!f)
		return -errno;
	for (int i = 0; i < l->nprocs; i++)
		fprintf(f, "%s %d\n", l->procs[i].role, (int)l->procs[i].pid);
	fprintf(f, "mountpoint %s\n", l->mnt);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return -errno;
	return 0;
}

int bu_local_read_pids(struct bu_local *l)
{
	char path[PATH_MAX], line[PATH_MAX + 32];

	if (lp_path_join(path, sizeof(path), l->dir, "cluster.pids") < 0)
		return -ENAMETOOLONG;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	l->nprocs = 0;
	l->mnt[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "mountpoint ", 11) == 0) {
			str_copy(l->mnt, line + 11, sizeof(l->mnt));
			continue;
		}
		char *sp = strchr(line, ' ');
		int64_t pid;

		if (!sp || l->nprocs >= BU_LOCAL_PROCS)
			continue;
		*sp = '\0';
		if (parse_i64(sp + 1, 1, INT32_MAX, &pid) < 0)
			continue;
		struct bu_proc *p = &l->procs[l->nprocs++];

		memset(p, 0, sizeof(*p));
		str_copy(p->role, line, sizeof(p->role));
		p->pid = (pid_t)pid;
	}
	fclose(f);
	return 0;
}

static struct bu_proc *find_proc(struct bu_local *l, const char *role)
{
	for (int i = 0; i < l->nprocs; i++)
		if (strcmp(l->procs[i].role, role) == 0)
			return &l->procs[i];
	return NULL;
}

int bu_local_has(const struct bu_local *l, const char *role)
{
	return find_proc((struct bu_local *)l, role) != NULL;
}

int bu_local_keep_live(struct bu_local *l)
{
	int n = 0;

	for (int i = 0; i < l->nprocs; i++) {
		struct bu_proc *p = &l->procs[i];
		int live = lp_is_nacre_proc(p->pid);
		int mounted = l->mnt[0] && cli_is_mounted(l->mnt);

		/* a mount process without its mount is on its way out */
		if (live && strcmp(p->role, "mount") == 0 && !mounted) {
			kill(p->pid, SIGTERM);
			live = 0;
		}
		if (live)
			l->procs[n++] = *p;
	}
	l->nprocs = n;
	return n;
}

/* ---- stopping */

static int signal_proc(struct bu_proc *p)
{
	if (p->signalled || p->pid <= 0)
		return 0;
	if (!proc_alive(p)) {
		p->pid = 0;
		return 0;
	}
	kill(p->pid, SIGTERM);
	p->signalled = 1;
	return 1;
}

/* Signals what is not yet (the mount first: it is last in the table), only what this run
 * started if only_ours, waits up to STOP_WAIT_MS for every signalled process, then
 * SIGKILLs the rest. Children of this process are reaped. Returns how many were signalled
 * now. */
static void wait_signalled(struct bu_local *l);

static int terminate(struct bu_local *l, int only_ours)
{
	int stopped = 0;

	for (int i = l->nprocs - 1; i >= 0; i--)
		if (!only_ours || l->procs[i].ours)
			stopped += signal_proc(&l->procs[i]);
	wait_signalled(l);
	return stopped;
}

/* Waits up to STOP_WAIT_MS for every signalled process, then SIGKILLs the rest. */
static void wait_signalled(struct bu_local *l)
{
	for (int waited = 0; waited < STOP_WAIT_MS; waited += 50) {
		int alive = 0;

		for (int i = 0; i < l->nprocs; i++) {
			if (!l->procs[i].signalled)
				continue;
			if (proc_alive(&l->procs[i]))
				alive++;
			else
				l->procs[i].pid = 0;
		}
		if (!alive)
			return;
		sleep_ms(50);
	}
	for (int i = 0; i < l->nprocs; i++) {
		struct bu_proc *p = &l->procs[i];

		if (p->signalled && proc_alive(p)) {
			fprintf(stderr, "nacre: %s (pid %d) did not stop within %d s: killing it\n",
				p->role, (int)p->pid, STOP_WAIT_MS / 1000);
			kill(p->pid, SIGKILL);
			if (p->ours)
				waitpid(p->pid, NULL, 0);
		}
	}
}

void bu_local_wait_stopped(struct bu_local *l)
{
	int n = 0;

	for (int i = 0; i < l->nprocs; i++)
		n += l->procs[i].signalled;
	n += terminate(l, 0);
	bu_local_step(l, "stopped %d process%s", n, n == 1 ? "" : "es");
}

int bu_local_abort(struct bu_local *l)
{
	char pids[PATH_MAX];
	struct bu_proc *m = find_proc(l, "mount");

	if (l->mnt[0] && (!l->restart || (m && m->ours)))
		lp_unmount(l->mnt);
	terminate(l, l->restart);
	if (l->restart) {
		/* what ran before still runs: `nacre down` must find it */
		int n = 0;
		for (int i = 0; i < l->nprocs; i++)
			if (!l->procs[i].ours)
				l->procs[n++] = l->procs[i];
		l->nprocs = n;
		bu_local_write_pids(l);
		fprintf(stderr, "nacre: the cluster in %s could not be restarted (what still ran "
				"runs); logs are kept there\n", l->dir);
		return 1;
	}
	if (lp_path_join(pids, sizeof(pids), l->dir, "cluster.pids") == 0)
		unlink(pids);
	fprintf(stderr, "nacre: the cluster in %s was not started; logs are kept there\n",
		l->dir);
	return 1;
}

static void local_role(const struct bu_daemon *d, char *out, size_t len)
{
	const char *sb = d->standby ? "-standby" : "";

	if (d->kind == BU_MDS)
		snprintf(out, len, "mds%s", sb);
	else if (d->kind == BU_OSS)
		snprintf(out, len, "oss%d%s", d->index, sb);
	else
		snprintf(out, len, "copytool");
}

static void signal_role(struct bu_local *l, const char *role)
{
	for (int i = 0; i < l->nprocs; i++)
		if (strcmp(l->procs[i].role, role) == 0)
			signal_proc(&l->procs[i]);
}

static int stop(void *ctx, const struct bu_daemon *d)
{
	char role[16];

	local_role(d, role, sizeof(role));
	signal_role(ctx, role);
	/* a copytool ends its actions through the MDS: it is gone before the servers go */
	if (d->kind == BU_COPYTOOL)
		wait_signalled(ctx);
	return 0;
}

/* ---- prepare: DIR, ports, key */

/* 0 if nothing listens on 127.0.0.1:port (bind succeeds), else -errno. */
static int port_free(int port)
{
	struct sockaddr_in sa;
	int one = 1, rc = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* The daemons use SO_REUSEADDR too: a port in TIME_WAIT is usable. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int listen_port(const char *addr)
{
	char host[CC_HOST_MAX + 1];
	int port = 0;

	cc_split_addr(addr, host, sizeof(host), &port);
	return port;
}

/* Every listen address of the config that a daemon about to start needs is free. */
static int ports_free(const struct bu_local *l)
{
	const struct cc_conf *c = l->c;
	int first = listen_port(c->mds_listen);
	int last = c->noss ? listen_port(c->oss[c->noss - 1].listen) : first;

	for (int i = -1; i < c->noss; i++) {
		char role[16];

		snprintf(role, sizeof(role), i < 0 ? "mds" : "oss%d", i);
		if (bu_local_has(l, role))
			continue; /* it runs and keeps its port */
		int p = listen_port(i < 0 ? c->mds_listen : c->oss[i].listen);
		int r = port_free(p);

		if (r < 0) {
			cli_err("port %d on 127.0.0.1 is %s: choose another base port with --port "
				"(nacre up uses %d..%d)",
				p, r == -EADDRINUSE ? "already in use" : strerror(-r), first, last);
			return -1;
		}
	}
	return 0;
}

static int prepare(void *ctx)
{
	struct bu_local *l = ctx;
	int r = mkdir_p(l->dir, 0755);

	if (r < 0) {
		cli_err("cannot create %s: %s", l->dir, strerror(-r));
		return -1;
	}
	if (l->c->metrics_log_dir[0] && (r = mkdir_p(l->c->metrics_log_dir, 0755)) < 0) {
		cli_err("cannot create the metrics log directory %s: %s", l->c->metrics_log_dir,
			strerror(-r));
		return -1;
	}
	if (ports_free(l) < 0)
		return -1;
	if (access(l->c->key_file, F_OK) < 0) {
		r = key_generate(l->c->key_file);
		if (r < 0) {
			cli_err("cannot write the cluster key %s: %s", l->c->key_file,
				strerror(-r));
			return -1;
		}
		bu_local_step(l, "generated cluster key %s", l->c->key_file);
	}
	return 0;
}

/* ---- starting daemons */

static void describe_exit(const struct bu_proc *p, int status)
{
	if (WIFEXITED(status))
		cli_err("%s exited with status %d: see %s", p->role, WEXITSTATUS(status), p->log);
	else
		cli_err("%s was killed by signal %d: see %s", p->role, WTERMSIG(status), p->log);
	lp_show_log_tail(p->log);
}

/* 1 if our child has exited: reaps it, says so, forgets its pid. */
static int exited(struct bu_proc *p)
{
	int st;

	if (p->pid <= 0 || waitpid(p->pid, &st, WNOHANG) != p->pid)
		return 0;
	p->pid = 0;
	describe_exit(p, st);
	return 1;
}

static off_t log_size(const char *log)
{
	struct stat st;

	return stat(log, &st) == 0 ? st.st_size : 0;
}

/* 1 once what appears in the log after offset from (logs are appended across starts). */
static int log_has(const char *log, off_t from, const char *what)
{
	static char buf[READY_SCAN_MAX + 1];
	int fd = open(log, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, buf, READY_SCAN_MAX, from);

	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, what) != NULL;
}

static int wait_ready(struct bu_local *l, struct bu_proc *p, const struct bu_daemon *d,
		      off_t from)
{
	int wait_ms = d->kind == BU_MDS ? MDS_WAIT_MS
		      : d->kind == BU_OSS ? OSS_WAIT_MS
					  : COPYTOOL_WAIT_MS;

	for (int waited = 0; !log_has(p->log, from, d->ready); waited += 100) {
		if (exited(p))
			return -1;
		if (waited >= wait_ms) {
			if (d->kind == BU_MDS)
				cli_err("nacre-mds did not start listening on %s within %d s: see %s",
					l->c->mds_listen, wait_ms / 1000, p->log);
			else
				cli_err("%s did not start within %d s: see %s", d->prog,
					wait_ms / 1000, p->log);
			lp_show_log_tail(p->log);
			return -1;
		}
		sleep_ms(100);
	}
	return 0;
}

static void started(struct bu_local *l, const struct bu_daemon *d, const char *log, int fresh)
{
	const struct cc_conf *c = l->c;

	if (d->kind == BU_MDS) {
		bu_local_step(l, "MDS %s on %s (%s%s)", l->restart ? "restarted" : "up",
			      c->mds_listen, fresh ? "formatted " : "", c->mds_data);
	} else if (d->kind == BU_OSS) {
		const struct cc_oss *o = &c->oss[d->index];

		bu_local_step(l, "OSS %d %s on %s (%d OST%s, log %s)", d->index,
			      l->restart ? "restarted" : "started", o->listen, o->nosts,
			      o->nosts == 1 ? "" : "s", log);
	} else {
		const struct cc_archive *a = &c->archives[d->index];

		bu_local_step(l, "copytool for archive %d on %s%s", a->id, a->backend,
			      l->restart ? " restarted" : "");
	}
}

static int start(void *ctx, const struct bu_daemon *d)
{
	struct bu_local *l = ctx;
	char prog[PATH_MAX], role[16], name[32], log[PATH_MAX];
	char *argv[BU_ARGS_MAX + 5];
	int a = 0, fresh = 0;

	local_role(d, role, sizeof(role));
	struct bu_proc *live = find_proc(l, role);

	if (live) {
		bu_local_step(l, "%s still runs (pid %d)", role, (int)live->pid);
		return 0;
	}
	if (lp_find_program(d->prog, prog, sizeof(prog)) < 0)
		return -1;
	snprintf(name, sizeof(name), "%s.log", role);
	if (lp_path_join(log, sizeof(log), l->dir, name) < 0) {
		cli_err("path too long: %s", l->dir);
		return -1;
	}
	for (int i = 0; i < d->nformat; i++)
		if (access(d->format_unless[i], F_OK) < 0)
			fresh = 1;
	argv[a++] = prog;
	for (int i = 0; i < d->argc; i++)
		argv[a++] = d->argv[i];
	if (fresh)
		argv[a++] = "--format";
	if (d->kind == BU_MDS && l->restart && !bu_local_has(l, "mount")) {
		/* the mount died with it: its session will not come back to recover */
		argv[a++] = "--recovery-window";
		argv[a++] = "5";
	}
	argv[a] = NULL;

	off_t from = log_size(log);
	pid_t pid = lp_spawn(argv, log);

	if (pid < 0) {
		cli_err("cannot start %s: %s", d->prog, strerror((int)-pid));
		return -1;
	}
	if (wait_ready(l, add_proc(l, role, pid, log), d, from) < 0)
		return -1;
	started(l, d, log, fresh);
	return bu_local_write_pids(l) < 0 ? -1 : 0;
}

static void skip(void *ctx, const struct bu_daemon *d)
{
	struct bu_local *l = ctx;
	const struct cc_archive *a = &l->c->archives[d->index];

	bu_local_step(l, "copytool for archive %d: skipped: no copytool backend for %s", a->id,
		      a->url);
}

/* ---- waiting for the OSTs, through libnacre */

/* The config's OSTs that targets tg[0..n) does not list as up: the first, or -1. */
static int first_missing(const struct cc_conf *c, const struct nacre_target *tg, int n)
{
	for (int i = 0; i < c->nosts; i++) {
		int up = 0;

		for (int k = 0; k < n && !up; k++)
			up = tg[k].type == NACRE_TGT_OST && (int)tg[k].index == c->osts[i].index &&
			     tg[k].up;
		if (!up)
			return c->osts[i].index;
	}
	return -1;
}

/* A libnacre connection to the config's MDS, for its target list; NULL with what failed
 * in why. */
static struct nacre_fs *mds_connect(const struct cc_conf *c, int timeout_ms, char *why,
				    size_t len)
{
	char spec[BU_SPEC_MAX], err[512];
	struct nacre_mount_opts mo;
	struct nacre_fs *fs = NULL;

	memset(&mo, 0, sizeof(mo));
	mo.key_file = c->key_file;
	mo.timeout_ms = timeout_ms;
	mo.connect_timeout_ms = timeout_ms;
	mo.recovery_timeout_ms = timeout_ms; /* a silent MDS is an answer here */
	mo.client_name = "nacre-up";
	bu_spec(c, spec, sizeof(spec));
	int r = nacre_fs_mount(spec, &mo, &fs, err, sizeof(err));

	if (r < 0) {
		snprintf(why, len, "cannot connect to the MDS at %s: %s", spec,
			 err[0] ? err : nacre_strerror(r));
		return NULL;
	}
	return fs;
}

int bu_local_answers(struct bu_local *l, char *why, size_t len)
{
	const struct cc_conf *c = l->c;
	int ntg = c->nosts + 8, missing, rc = -1;
	struct nacre_target *tg = calloc((size_t)ntg, sizeof(*tg));
	struct nacre_fs *fs;

	if (!tg) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	fs = mds_connect(c, 3000, why, len);
	if (fs) {
		int n = nacre_targets(fs, tg, ntg);
		if (n < 0)
			snprintf(why, len, "the MDS at %s does not list its targets: %s",
				 c->mds_listen, nacre_strerror(n));
		else if ((missing = first_missing(c, tg, n)) >= 0)
			snprintf(why, len, "the MDS does not see OST%04x up", missing);
		else
			rc = 0;
	}
	nacre_fs_umount(fs);
	free(tg);
	return rc;
}

static int wait_osts(void *ctx)
{
	struct bu_local *l = ctx;
	const struct cc_conf *c = l->c;
	char why[1024];
	struct nacre_fs *fs = NULL;
	int ntg = c->nosts + 8, missing, rc = -1;
	struct nacre_target *tg = calloc((size_t)ntg, sizeof(*tg));

	if (!tg)
		return -1;
	fs = mds_connect(c, 5000, why, sizeof(why));
	if (!fs) {
		cli_err("%s", why);
		goto out;
	}
	for (int waited = 0;; waited += 200) {
		missing = first_missing(c, tg, nacre_targets(fs, tg, ntg));
		if (missing < 0)
			break;
		for (int i = 0; i < l->nprocs; i++)
			if (exited(&l->procs[i]))
				goto out;
		if (waited >= OST_WAIT_MS) {
			char role[16];

			snprintf(role, sizeof(role), "oss%d", (int)(cc_oss_of_ost(c, missing) - c->oss));
			cli_err("OST%04x is not up after %d s: see %s/%s.log", missing,
				OST_WAIT_MS / 1000, l->dir, role);
			for (int i = 0; i < l->nprocs; i++)
				if (strcmp(l->procs[i].role, role) == 0)
					lp_show_log_tail(l->procs[i].log);
			goto out;
		}
		sleep_ms(200);
	}
	bu_local_step(l, "%d OST%s up", c->nosts, c->nosts == 1 ? "" : "s");
	rc = 0;
out:
	nacre_fs_umount(fs);
	free(tg);
	return rc;
}

/* ---- the mount */

static int mount_client(void *ctx, const struct cc_client *cl, const char *spec,
			const char *opts, int first)
{
	struct bu_local *l = ctx;
	char prog[PATH_MAX], log[PATH_MAX];
	char *argv[8];

	(void)first; /* nacre up sets no default striping */
	str_copy(l->mnt, cl->mountpoint, sizeof(l->mnt));
	struct bu_proc *live = find_proc(l, "mount");

	if (live) {
		bu_local_step(l, "mount on %s still runs (pid %d)", l->mnt, (int)live->pid);
		return 0;
	}
	if (l->restart && cli_is_mounted(l->mnt)) {
		/* its process is gone: what is left answers nothing */
		int r = lp_unmount(l->mnt);
		if (r < 0) {
			cli_err("cannot unmount the dead mount %s: %s", l->mnt, strerror(-r));
			goto fail;
		}
	}
	if (lp_find_program("nacre-mount", prog, sizeof(prog)) < 0)
		goto fail;
	int r = mkdir_p(l->mnt, 0755);

	if (r < 0) {
		cli_err("cannot create the mount point %s: %s", l->mnt, strerror(-r));
		goto fail;
	}
	if (cli_is_mounted(l->mnt)) {
		cli_err("%s is already a mount point: unmount it or choose another with --mount",
			l->mnt);
		goto fail;
	}
	lp_path_join(log, sizeof(log), l->dir, "mount.log");
	argv[0] = prog;
	argv[1] = (char *)spec;
	argv[2] = l->mnt;
	argv[3] = "-o";
	argv[4] = (char *)opts;
	argv[5] = "-f"; /* foreground, so the pid we record is the mount's */
	argv[6] = NULL;

	pid_t pid = lp_spawn(argv, log);

	if (pid < 0) {
		cli_err("cannot start nacre-mount: %s", strerror((int)-pid));
		goto fail;
	}
	struct bu_proc *p = add_proc(l, "mount", pid, log);

	for (int waited = 0; !cli_is_mounted(l->mnt); waited += 100) {
		if (exited(p))
			goto fail;
		if (waited >= MOUNT_WAIT_MS) {
			cli_err("%s is not mounted after %d s: see %s", l->mnt, MOUNT_WAIT_MS / 1000,
				log);
			lp_show_log_tail(log);
			goto fail;
		}
		sleep_ms(100);
	}
	bu_local_step(l, "%s %s on %s", l->restart ? "mounted again" : "mounted", spec, l->mnt);
	return 0;
fail:
	/* The mount point is only ours to unmount once something is mounted there. */
	if (!cli_is_mounted(l->mnt))
		l->mnt[0] = '\0';
	return -1;
}

static int unmount_client(void *ctx, const struct cc_client *cl)
{
	struct bu_local *l = ctx;
	int rc = 0;

	if (cli_is_mounted(cl->mountpoint)) {
		int r = lp_unmount(cl->mountpoint);

		if (r < 0) {
			cli_err("cannot unmount %s: %s (close files open there and retry)",
				cl->mountpoint, strerror(-r));
			rc = -1;
		} else {
			bu_local_step(l, "unmounted %s", cl->mountpoint);
		}
	}
	/* Unmounted, nacre-mount ends by itself once it told the MDS it is leaving (else a
	 * restarted MDS would wait for it to recover): a signal now could cut that short. */
	struct bu_proc *p = find_proc(l, "mount");
	for (int waited = 0; rc == 0 && p && proc_alive(p) && waited < MOUNT_EXIT_MS; waited += 50)
		sleep_ms(50);
	signal_role(l, "mount");
	return rc;
}

const struct bu_runner bu_local_runner = {
	.prepare = prepare,
	.start = start,
	.skip = skip,
	.wait_osts = wait_osts,
	.mount = mount_client,
	.unmount = unmount_client,
	.stop = stop,
};
