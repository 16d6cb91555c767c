/* cluster.c - `nacre up` and `nacre down`: a whole cluster (one MDS, N OSTs, a FUSE mount)
 * on this machine, with everything under one directory:
 *
 *   DIR/cluster.key  DIR/mdt/  DIR/ost<i>/  DIR/mds.log  DIR/oss<j>.log  DIR/mount.log
 *   DIR/cluster.pids ("mds PID", "oss<j> PID", "mount PID", "mountpoint PATH")
 *
 * Daemons are started detached (own session, stdio to their log) from the binaries next to
 * this executable, else from PATH. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/key.h"
#include "common/util.h"
#include "nacre/nacre.h"

#define MAX_OSTS 64
#define MAX_PIDS (MAX_OSTS + 3) /* + mds, mount, copytool */
#define MDS_WAIT_MS 10000
#define OST_WAIT_MS 20000
#define MOUNT_WAIT_MS 15000
#define STOP_WAIT_MS 10000
#define COPYTOOL_WAIT_MS 15000

struct proc {
	char role[16]; /* "mds", "oss3", "mount" */
	pid_t pid;
	int ours; /* our child, started by this run: no need to check its cmdline */
	char log[PATH_MAX];
};

struct cluster {
	char dir[PATH_MAX];
	char mnt[PATH_MAX];
	char key[PATH_MAX];
	char fsname[NACRE_FSNAME_MAX + 1];
	int port, osts, oss;
	struct proc procs[MAX_PIDS];
	int nprocs;
	/* --hsm-*: a copytool for archive 1, and a directory imported from it at creation */
	const char *hsm_backend, *hsm_endpoint, *hsm_credentials, *hsm_import;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* out = a "/" b; -ENAMETOOLONG (out untouched) if it does not fit. */
static int path_join(char *out, size_t len, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la + 1 + lb + 1 > len)
		return -ENAMETOOLONG;
	memmove(out, a, la);
	out[la] = '/';
	memcpy(out + la + 1, b, lb + 1);
	return 0;
}

/* Finds a program next to this executable, else in PATH. */
static int find_program(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');

		if (slash) {
			*slash = '\0';
			if (path_join(out, len, self, name) == 0 && access(out, X_OK) == 0)
				return 0;
		}
	}
	const char *path = getenv("PATH");

	while (path && *path) {
		size_t seg = strcspn(path, ":");
		char dir[PATH_MAX];

		if (seg > 0 && seg < sizeof(dir)) {
			memcpy(dir, path, seg);
			dir[seg] = '\0';
			if (path_join(out, len, dir, name) == 0 && access(out, X_OK) == 0)
				return 0;
		}
		path += seg;
		if (*path == ':')
			path++;
	}
	cli_err("cannot find %s next to nacre (%s) or in PATH: build it (cmake --build build) "
		"or add its directory to PATH",
		name, n > 0 ? self : "?");
	return -ENOENT;
}

/* Starts argv[0] in its own session with stdin from /dev/null and stdout/stderr appended
 * to log. Returns the pid or -errno. */
static pid_t spawn(char *const argv[], const char *log)
{
	int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (lfd < 0)
		return -errno;
	pid_t pid = fork();

	if (pid < 0) {
		int err = errno;

		close(lfd);
		return -err;
	}
	if (pid == 0) {
		int nfd = open("/dev/null", O_RDONLY);

		setsid();
		if (nfd >= 0)
			dup2(nfd, 0);
		dup2(lfd, 1);
		dup2(lfd, 2);
		execv(argv[0], argv);
		dprintf(2, "nacre up: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(lfd);
	return pid;
}

/* Prints the last lines of a log so a failed start explains itself. */
static void show_log_tail(const char *log)
{
	char buf[2048];
	int fd = open(log, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	off_t start = end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, start);

	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	fprintf(stderr, "--- last lines of %s ---\n%s%s", log, buf,
		buf[n - 1] == '\n' ? "" : "\n");
}

/* 1 if our child pid has exited (reaps it and writes its status to *status). */
static int child_exited(pid_t pid, int *status)
{
	return waitpid(pid, status, WNOHANG) == pid;
}

static void describe_exit(const struct proc *p, int status)
{
	if (WIFEXITED(status))
		cli_err("%s exited with status %d: see %s", p->role, WEXITSTATUS(status), p->log);
	else
		cli_err("%s was killed by signal %d: see %s", p->role, WTERMSIG(status), p->log);
	show_log_tail(p->log);
}

/* 1 if pid is alive and runs a nacre program (guards against a reused pid). */
static int is_nacre_proc(pid_t pid);

/* A child of this run may still be between fork and exec: trust it without the cmdline. */
static int proc_alive(const struct proc *p)
{
	if (p->pid <= 0)
		return 0;
	if (p->ours) {
		int st;

		if (waitpid(p->pid, &st, WNOHANG) == p->pid)
			return 0;
		return kill(p->pid, 0) == 0;
	}
	return is_nacre_proc(p->pid);
}

static int is_nacre_proc(pid_t pid)
{
	char path[64], buf[512], state = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	/* A zombie is dead for our purposes (its parent may never reap it). */
	if (fgets(buf, sizeof(buf), f)) {
		char *rp = strrchr(buf, ')');

		if (rp && rp[1] == ' ')
			state = rp[2];
	}
	fclose(f);
	if (state == 'Z' || state == 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *base = strrchr(buf, '/');

	base = base ? base + 1 : buf;
	return strncmp(base, "nacre-", 6) == 0 || strcmp(base, "mount.nacre") == 0;
}

static int write_pids(const struct cluster *c)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];

	if (path_join(path, sizeof(path), c->dir, "cluster.pids") < 0)
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");

	if (!f)
		return -errno;
	for (int i = 0; i < c->nprocs; i++)
		fprintf(f, "%s %d\n", c->procs[i].role, (int)c->procs[i].pid);
	fprintf(f, "mountpoint %s\n", c->mnt);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return -errno;
	return 0;
}

/* Reads DIR/cluster.pids into c. Returns 0, -ENOENT if absent, or -errno. */
static int read_pids(struct cluster *c)
{
	char path[PATH_MAX], line[PATH_MAX + 32];

	if (path_join(path, sizeof(path), c->dir, "cluster.pids") < 0)
		return -ENAMETOOLONG;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	c->nprocs = 0;
	c->mnt[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "mountpoint ", 11) == 0) {
			str_copy(c->mnt, line + 11, sizeof(c->mnt));
			continue;
		}
		char *sp = strchr(line, ' ');
		int64_t pid;

		if (!sp || c->nprocs >= MAX_PIDS)
			continue;
		*sp = '\0';
		if (parse_i64(sp + 1, 1, INT32_MAX, &pid) < 0)
			continue;
		struct proc *p = &c->procs[c->nprocs++];

		str_copy(p->role, line, sizeof(p->role));
		p->pid = (pid_t)pid;
	}
	fclose(f);
	return 0;
}

/* Sends SIGTERM to every live process of c, waits up to STOP_WAIT_MS, then SIGKILLs the
 * rest. Children of this process are reaped. Returns how many were stopped. */
static int stop_procs(struct cluster *c)
{
	int stopped = 0;

	/* The mount first, so nothing is left talking to servers that are going away. */
	for (int i = c->nprocs - 1; i >= 0; i--) {
		if (proc_alive(&c->procs[i])) {
			kill(c->procs[i].pid, SIGTERM);
			stopped++;
		} else {
			c->procs[i].pid = 0;
		}
	}
	for (int waited = 0; waited < STOP_WAIT_MS; waited += 50) {
		int alive = 0;

		for (int i = 0; i < c->nprocs; i++) {
			if (proc_alive(&c->procs[i]))
				alive++;
			else
				c->procs[i].pid = 0;
		}
		if (!alive)
			return stopped;
		sleep_ms(50);
	}
	for (int i = 0; i < c->nprocs; i++) {
		if (proc_alive(&c->procs[i])) {
			fprintf(stderr, "nacre: %s (pid %d) did not stop within %d s: killing it\n",
				c->procs[i].role, (int)c->procs[i].pid, STOP_WAIT_MS / 1000);
			kill(c->procs[i].pid, SIGKILL);
			if (c->procs[i].ours)
				waitpid(c->procs[i].pid, NULL, 0);
		}
	}
	return stopped;
}

static int run_wait(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int nfd = open("/dev/null", O_WRONLY);

		if (nfd >= 0) {
			dup2(nfd, 1);
			dup2(nfd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Unmounts mnt: fusermount3 -u, then a lazy unmount if it is busy. */
static int unmount(const char *mnt)
{
	char *u[] = {"fusermount3", "-u", (char *)mnt, NULL};
	char *z[] = {"fusermount3", "-u", "-z", (char *)mnt, NULL};

	if (!cli_is_mounted(mnt))
		return 0;
	if (run_wait(u) == 0 || !cli_is_mounted(mnt))
		return 0;
	if (umount2(mnt, 0) == 0)
		return 0;
	if (run_wait(z) == 0 || !cli_is_mounted(mnt))
		return 0;
	if (umount2(mnt, MNT_DETACH) == 0)
		return 0;
	return -errno;
}

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

static int tcp_connects(int port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ok;

	if (fd < 0)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

static int dir_is_empty_or_missing(const char *path)
{
	char probe[PATH_MAX];
	struct stat st;

	if (stat(path, &st) < 0)
		return 1;
	/* An MDT directory holds an LMDB environment once formatted. */
	if (path_join(probe, sizeof(probe), path, "data.mdb") == 0 && access(probe, F_OK) == 0)
		return 0;
	return rmdir(path) == 0 || errno == ENOENT;
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	if (str_copy(tmp, path, sizeof(tmp)) >= sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static void step(double *t0, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void step(double *t0, const char *fmt, ...)
{
	va_list ap;
	double t = now_s();

	printf("[%.1fs] ", t - *t0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	*t0 = t;
}

static struct proc *add_proc(struct cluster *c, const char *role, pid_t pid, const char *log)
{
	struct proc *p = &c->procs[c->nprocs++];

	str_copy(p->role, role, sizeof(p->role));
	p->pid = pid;
	p->ours = 1;
	str_copy(p->log, log, sizeof(p->log));
	return p;
}

/* A start failed: stop what this run started, keep the logs. */
static int up_fail(struct cluster *c)
{
	char pids[PATH_MAX];

	if (c->mnt[0])
		unmount(c->mnt);
	stop_procs(c);
	if (path_join(pids, sizeof(pids), c->dir, "cluster.pids") == 0)
		unlink(pids);
	fprintf(stderr, "nacre: the cluster in %s was not started; logs are kept there\n",
		c->dir);
	return 1;
}

static int start_mds(struct cluster *c, double *t0)
{
	char prog[PATH_MAX], data[PATH_MAX], log[PATH_MAX], listen_addr[32];
	char *argv[16];
	int a = 0;

	if (find_program("nacre-mds", prog, sizeof(prog)) < 0)
		return -1;
	path_join(data, sizeof(data), c->dir, "mdt");
	path_join(log, sizeof(log), c->dir, "mds.log");
	snprintf(listen_addr, sizeof(listen_addr), "127.0.0.1:%d", c->port);
	int fresh = dir_is_empty_or_missing(data);

	argv[a++] = prog;
	argv[a++] = "--fsname";
	argv[a++] = c->fsname;
	argv[a++] = "--data";
	argv[a++] = data;
	argv[a++] = "--listen";
	argv[a++] = listen_addr;
	argv[a++] = "--key-file";
	argv[a++] = c->key;
	if (fresh)
		argv[a++] = "--format";
	argv[a] = NULL;

	pid_t pid = spawn(argv, log);

	if (pid < 0) {
		cli_err("cannot start nacre-mds: %s", strerror((int)-pid));
		return -1;
	}
	struct proc *p = add_proc(c, "mds", pid, log);

	for (int waited = 0;; waited += 100) {
		int st;

		if (child_exited(pid, &st)) {
			p->pid = 0;
			describe_exit(p, st);
			return -1;
		}
		/* The log is appended across restarts, so only a listening port proves this
		 * MDS is ready. */
		if (tcp_connects(c->port))
			break;
		if (waited >= MDS_WAIT_MS) {
			cli_err("nacre-mds did not start listening on %s within %d s: see %s",
				listen_addr, MDS_WAIT_MS / 1000, log);
			show_log_tail(log);
			return -1;
		}
		sleep_ms(100);
	}
	step(t0, "MDS up on %s (%s%s)", listen_addr, fresh ? "formatted " : "", data);
	return 0;
}

static int start_osses(struct cluster *c, double *t0)
{
	char prog[PATH_MAX], mds_addr[32];

	if (find_program("nacre-oss", prog, sizeof(prog)) < 0)
		return -1;
	snprintf(mds_addr, sizeof(mds_addr), "127.0.0.1:%d", c->port);
	for (int j = 0; j < c->oss; j++) {
		char role[16], log[PATH_MAX], listen_addr[32], logname[32];
		char ostarg[MAX_OSTS][PATH_MAX + 16];
		char *argv[16 + 3 * MAX_OSTS];
		int a = 0, fresh = 0, nost = 0;

		snprintf(role, sizeof(role), "oss%d", j);
		snprintf(logname, sizeof(logname), "oss%d.log", j);
		path_join(log, sizeof(log), c->dir, logname);
		snprintf(listen_addr, sizeof(listen_addr), "127.0.0.1:%d", c->port + 1 + j);
		argv[a++] = prog;
		argv[a++] = "--fsname";
		argv[a++] = c->fsname;
		argv[a++] = "--mds";
		argv[a++] = mds_addr;
		argv[a++] = "--listen";
		argv[a++] = listen_addr;
		argv[a++] = "--key-file";
		argv[a++] = c->key;
		/* OSTs are dealt round-robin over the OSS processes. */
		for (int i = j; i < c->osts; i += c->oss) {
			char name[32], d[PATH_MAX], sb[PATH_MAX];

			snprintf(name, sizeof(name), "ost%d", i);
			path_join(d, sizeof(d), c->dir, name);
			path_join(sb, sizeof(sb), d, "nacre-ost.sb");
			if (access(sb, F_OK) < 0)
				fresh = 1;
			snprintf(ostarg[nost], sizeof(ostarg[nost]), "%d:%s", i, d);
			argv[a++] = "--ost";
			argv[a++] = ostarg[nost++];
		}
		/* --format only creates missing superblocks; existing ones are checked. */
		if (fresh)
			argv[a++] = "--format";
		argv[a] = NULL;

		pid_t pid = spawn(argv, log);

		if (pid < 0) {
			cli_err("cannot start nacre-oss: %s", strerror((int)-pid));
			return -1;
		}
		add_proc(c, role, pid, log);
		step(t0, "OSS %d started on %s (%d OST%s, log %s)", j, listen_addr, nost,
		     nost == 1 ? "" : "s", log);
	}
	return 0;
}

static int oss_of(const struct cluster *c, int ost)
{
	return ost % c->oss;
}

/* Waits until the MDS reports every OST up, asking it through libnacre. */
static int wait_osts(struct cluster *c, double *t0)
{
	char spec[64], err[512];
	struct nacre_mount_opts mo;
	struct nacre_fs *fs = NULL;
	struct nacre_target *tg = calloc(MAX_OSTS + 8, sizeof(*tg));
	int missing = 0, rc = -1;

	if (!tg)
		return -1;
	memset(&mo, 0, sizeof(mo));
	mo.key_file = c->key;
	mo.timeout_ms = 5000;
	mo.connect_timeout_ms = 5000;
	mo.client_name = "nacre-up";
	snprintf(spec, sizeof(spec), "127.0.0.1:%d:/%s", c->port, c->fsname);
	int r = nacre_fs_mount(spec, &mo, &fs, err, sizeof(err));

	if (r < 0) {
		cli_err("cannot connect to the MDS at %s: %s", spec, err[0] ? err : nacre_strerror(r));
		goto out;
	}
	for (int waited = 0;; waited += 200) {
		int up[MAX_OSTS] = {0};
		int n = nacre_targets(fs, tg, MAX_OSTS + 8);

		for (int i = 0; i < n; i++)
			if (tg[i].type == NACRE_TGT_OST && tg[i].index < MAX_OSTS && tg[i].up)
				up[tg[i].index] = 1;
		missing = -1;
		for (int i = 0; i < c->osts; i++) {
			if (!up[i]) {
				missing = i;
				break;
			}
		}
		if (missing < 0)
			break;
		for (int i = 0; i < c->nprocs; i++) {
			int st;

			if (c->procs[i].pid > 0 && child_exited(c->procs[i].pid, &st)) {
				struct proc *p = &c->procs[i];

				p->pid = 0;
				describe_exit(p, st);
				goto out;
			}
		}
		if (waited >= OST_WAIT_MS) {
			char role[16];

			snprintf(role, sizeof(role), "oss%d", oss_of(c, missing));
			cli_err("OST%04x is not up after %d s: see %s/%s.log", missing,
				OST_WAIT_MS / 1000, c->dir, role);
			for (int i = 0; i < c->nprocs; i++)
				if (strcmp(c->procs[i].role, role) == 0)
					show_log_tail(c->procs[i].log);
			goto out;
		}
		sleep_ms(200);
	}
	step(t0, "%d OST%s up", c->osts, c->osts == 1 ? "" : "s");
	rc = 0;
out:
	nacre_fs_umount(fs);
	free(tg);
	return rc;
}

static int start_mount(struct cluster *c, double *t0)
{
	char prog[PATH_MAX], log[PATH_MAX], spec[64], opts[PATH_MAX + 16];
	char *argv[8];

	if (find_program("nacre-mount", prog, sizeof(prog)) < 0)
		return -1;
	int r = mkdir_p(c->mnt);

	if (r < 0) {
		cli_err("cannot create the mount point %s: %s", c->mnt, strerror(-r));
		return -1;
	}
	if (cli_is_mounted(c->mnt)) {
		cli_err("%s is already a mount point: unmount it or choose another with --mount",
			c->mnt);
		return -1;
	}
	path_join(log, sizeof(log), c->dir, "mount.log");
	snprintf(spec, sizeof(spec), "127.0.0.1:%d:/%s", c->port, c->fsname);
	snprintf(opts, sizeof(opts), "key_file=%s", c->key);
	argv[0] = prog;
	argv[1] = spec;
	argv[2] = c->mnt;
	argv[3] = "-o";
	argv[4] = opts;
	argv[5] = "-f"; /* foreground, so the pid we record is the mount's */
	argv[6] = NULL;

	pid_t pid = spawn(argv, log);

	if (pid < 0) {
		cli_err("cannot start nacre-mount: %s", strerror((int)-pid));
		return -1;
	}
	struct proc *p = add_proc(c, "mount", pid, log);

	for (int waited = 0; !cli_is_mounted(c->mnt); waited += 100) {
		int st;

		if (child_exited(pid, &st)) {
			p->pid = 0;
			describe_exit(p, st);
			return -1;
		}
		if (waited >= MOUNT_WAIT_MS) {
			cli_err("%s is not mounted after %d s: see %s", c->mnt,
				MOUNT_WAIT_MS / 1000, log);
			show_log_tail(log);
			return -1;
		}
		sleep_ms(100);
	}
	step(t0, "mounted %s on %s", spec, c->mnt);
	return 0;
}

/* 1 once the log holds the copytool's "serving archive" line. */
static int log_has(const char *log, const char *what)
{
	char buf[8192];
	int fd = open(log, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, what) != NULL;
}

/* Appends the backend options the copytool and `nacre hsm import` share. */
static int backend_args(const struct cluster *c, char **argv, int a)
{
	argv[a++] = "--backend";
	argv[a++] = (char *)c->hsm_backend;
	if (c->hsm_endpoint) {
		argv[a++] = "--endpoint";
		argv[a++] = (char *)c->hsm_endpoint;
	}
	if (c->hsm_credentials) {
		argv[a++] = "--credentials";
		argv[a++] = (char *)c->hsm_credentials;
	}
	return a;
}

static int start_copytool(struct cluster *c, double *t0)
{
	char prog[PATH_MAX], log[PATH_MAX], spec[64];
	char *argv[20];
	int a = 0;

	if (find_program("nacre-copytool", prog, sizeof(prog)) < 0)
		return -1;
	path_join(log, sizeof(log), c->dir, "copytool.log");
	snprintf(spec, sizeof(spec), "127.0.0.1:%d:/%s", c->port, c->fsname);
	argv[a++] = prog;
	argv[a++] = "--mds";
	argv[a++] = spec;
	argv[a++] = "--key-file";
	argv[a++] = c->key;
	argv[a++] = "--archive-id";
	argv[a++] = "1";
	a = backend_args(c, argv, a);
	argv[a] = NULL;

	/* the log is appended to: only this start's line counts */
	unlink(log);
	pid_t pid = spawn(argv, log);

	if (pid < 0) {
		cli_err("cannot start nacre-copytool: %s", strerror((int)-pid));
		return -1;
	}
	struct proc *p = add_proc(c, "copytool", pid, log);

	for (int waited = 0; !log_has(log, "serving archive"); waited += 100) {
		int st;

		if (child_exited(pid, &st)) {
			p->pid = 0;
			describe_exit(p, st);
			return -1;
		}
		if (waited >= COPYTOOL_WAIT_MS) {
			cli_err("nacre-copytool did not start within %d s: see %s",
				COPYTOOL_WAIT_MS / 1000, log);
			show_log_tail(log);
			return -1;
		}
		sleep_ms(100);
	}
	step(t0, "copytool for archive 1 on %s", c->hsm_backend);
	return 0;
}

/* `nacre hsm import` into the new file system, run as a child so its output goes to a
 * log: a large container prints a lot of progress. */
static int hsm_import_at_up(struct cluster *c, double *t0)
{
	char self[PATH_MAX], dest[PATH_MAX], log[PATH_MAX];
	char *argv[20];
	int a = 0, st;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		cli_err("cannot find the nacre program: %s", strerror(errno));
		return -1;
	}
	self[n] = '\0';
	if (c->hsm_import[0] == '/') {
		if (str_copy(dest, c->hsm_import, sizeof(dest)) >= sizeof(dest)) {
			cli_err("--hsm-import: path too long");
			return -1;
		}
	} else if (path_join(dest, sizeof(dest), c->mnt, c->hsm_import) < 0) {
		cli_err("--hsm-import: path too long");
		return -1;
	}
	int r = mkdir_p(dest);

	if (r < 0) {
		cli_err("cannot create %s: %s", dest, strerror(-r));
		return -1;
	}
	path_join(log, sizeof(log), c->dir, "hsm-import.log");
	argv[a++] = self;
	argv[a++] = "hsm";
	argv[a++] = "import";
	argv[a++] = "--archive-id";
	argv[a++] = "1";
	a = backend_args(c, argv, a);
	argv[a++] = dest;
	argv[a] = NULL;
	pid_t pid = spawn(argv, log);

	if (pid < 0 || waitpid(pid, &st, 0) < 0) {
		cli_err("cannot run nacre hsm import: %s", strerror(pid < 0 ? (int)-pid : errno));
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		cli_err("importing %s into %s failed: see %s", c->hsm_backend, dest, log);
		show_log_tail(log);
		return -1;
	}
	step(t0, "imported %s into %s (released stubs: read to restore; log %s)",
	     c->hsm_backend, dest, log);
	return 0;
}

static int parse_count(const char *opt, const char *s, int min, int max, int *out)
{
	int64_t v;

	if (parse_i64(s, min, max, &v) < 0) {
		cli_err("invalid %s '%s': use a number from %d to %d", opt, s, min, max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* Makes dir absolute (it may not exist yet). */
static int absolute(const char *in, char *out, size_t len)
{
	char cwd[PATH_MAX];

	if (in[0] == '/') {
		if (str_copy(out, in, len) >= len)
			return -ENAMETOOLONG;
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (path_join(out, len, cwd, in) < 0)
			return -ENAMETOOLONG;
	}
	size_t n = strlen(out);

	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

/* 1 if the cluster recorded in c->dir still has a live process. */
static int cluster_running(struct cluster *old)
{
	if (read_pids(old) < 0)
		return 0;
	for (int i = 0; i < old->nprocs; i++)
		if (is_nacre_proc(old->procs[i].pid))
			return 1;
	return 0;
}

int cli_up(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dir", required_argument, NULL, 'd'},    {"osts", required_argument, NULL, 'n'},
		{"oss", required_argument, NULL, 's'},    {"mount", required_argument, NULL, 'm'},
		{"fsname", required_argument, NULL, 'f'}, {"port", required_argument, NULL, 'p'},
		{"hsm-backend", required_argument, NULL, 'B'},
		{"hsm-endpoint", required_argument, NULL, 'E'},
		{"hsm-credentials", required_argument, NULL, 'C'},
		{"hsm-import", required_argument, NULL, 'I'},
		{NULL, 0, NULL, 0},
	};
	static struct cluster c, old;
	const char *dir = NULL, *mnt = NULL;
	int opt, oss = 0;

	memset(&c, 0, sizeof(c));
	c.osts = 4;
	c.port = NACRE_DEFAULT_PORT_MDS;
	str_copy(c.fsname, "nacre", sizeof(c.fsname));
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "d:n:s:m:f:p:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'm': mnt = optarg; break;
		case 'B': c.hsm_backend = optarg; break;
		case 'E': c.hsm_endpoint = optarg; break;
		case 'C': c.hsm_credentials = optarg; break;
		case 'I': c.hsm_import = optarg; break;
		case 'n':
			if (parse_count("--osts", optarg, 1, MAX_OSTS, &c.osts) < 0)
				return 1;
			break;
		case 's':
			if (parse_count("--oss", optarg, 1, MAX_OSTS, &oss) < 0)
				return 1;
			break;
		case 'p':
			if (parse_count("--port", optarg, 1, 65535 - MAX_OSTS - 1, &c.port) < 0)
				return 1;
			break;
		case 'f':
			if (!fsname_valid(optarg)) {
				cli_err("invalid --fsname '%s': use 1 to 8 of A-Z a-z 0-9 _ -",
					optarg);
				return 1;
			}
			str_copy(c.fsname, optarg, sizeof(c.fsname));
			break;
		default:
			cli_err("up: unknown option or missing value '%s'", argv[optind - 1]);
			cli_usage(stderr, "up");
			return 1;
		}
	}
	if (!dir || optind < argc) {
		cli_err(dir ? "up: unexpected argument '%s'" : "up: --dir DIR is required%s",
			dir ? argv[optind] : "");
		cli_usage(stderr, "up");
		return 1;
	}
	if (!c.hsm_backend && (c.hsm_import || c.hsm_endpoint || c.hsm_credentials)) {
		cli_err("up: --hsm-import, --hsm-endpoint and --hsm-credentials need --hsm-backend");
		return 1;
	}
	c.oss = oss ? oss : c.osts;
	if (c.oss > c.osts) {
		cli_err("--oss %d is more than --osts %d: every OSS needs at least one OST", c.oss,
			c.osts);
		return 1;
	}
	if (absolute(dir, c.dir, sizeof(c.dir)) < 0 ||
	    (mnt ? absolute(mnt, c.mnt, sizeof(c.mnt)) < 0
		 : path_join(c.mnt, sizeof(c.mnt), c.dir, "mnt") < 0)) {
		cli_err("path too long: %s", mnt ? mnt : dir);
		return 1;
	}

	memcpy(old.dir, c.dir, sizeof(old.dir));
	if (cluster_running(&old)) {
		printf("a cluster is already running in %s (mounted on %s): stop it with `nacre "
		       "down --dir %s`\n",
		       c.dir, old.mnt[0] ? old.mnt : "?", c.dir);
		return 0;
	}

	double t0 = now_s();
	int r = mkdir_p(c.dir);

	if (r < 0) {
		cli_err("cannot create %s: %s", c.dir, strerror(-r));
		return 1;
	}
	for (int p = c.port; p <= c.port + c.oss; p++) {
		r = port_free(p);
		if (r < 0) {
			cli_err("port %d on 127.0.0.1 is %s: choose another base port with --port "
				"(nacre up uses %d..%d)",
				p, r == -EADDRINUSE ? "already in use" : strerror(-r), c.port,
				c.port + c.oss);
			return 1;
		}
	}
	path_join(c.key, sizeof(c.key), c.dir, "cluster.key");
	if (access(c.key, F_OK) < 0) {
		r = key_generate(c.key);
		if (r < 0) {
			cli_err("cannot write the cluster key %s: %s", c.key, strerror(-r));
			return 1;
		}
		step(&t0, "generated cluster key %s", c.key);
	}

	char mnt_saved[PATH_MAX];

	/* The mount point is only ours to unmount once we mounted it. */
	str_copy(mnt_saved, c.mnt, sizeof(mnt_saved));
	c.mnt[0] = '\0';
	if (start_mds(&c, &t0) < 0 || write_pids(&c) < 0)
		return up_fail(&c);
	if (start_osses(&c, &t0) < 0 || write_pids(&c) < 0)
		return up_fail(&c);
	if (wait_osts(&c, &t0) < 0)
		return up_fail(&c);
	str_copy(c.mnt, mnt_saved, sizeof(c.mnt));
	if (start_mount(&c, &t0) < 0) {
		if (cli_is_mounted(c.mnt) == 0)
			c.mnt[0] = '\0';
		return up_fail(&c);
	}
	if (c.hsm_backend && (start_copytool(&c, &t0) < 0 || write_pids(&c) < 0 ||
			      (c.hsm_import && hsm_import_at_up(&c, &t0) < 0)))
		return up_fail(&c);
	if (write_pids(&c) < 0) {
		cli_err("cannot write %s/cluster.pids: %s", c.dir, strerror(errno));
		return up_fail(&c);
	}
	printf("nacre is up: %d OST%s, mounted on %s\n", c.osts, c.osts == 1 ? "" : "s", c.mnt);
	printf("stop it with: nacre down --dir %s\n", c.dir);
	return 0;
}

int cli_down(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dir", required_argument, NULL, 'd'},
		{NULL, 0, NULL, 0},
	};
	static struct cluster c;
	const char *dir = NULL;
	int opt;

	memset(&c, 0, sizeof(c));
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "d:", longopts, NULL)) != -1) {
		if (opt == 'd') {
			dir = optarg;
			continue;
		}
		cli_err("down: unknown option or missing value '%s'", argv[optind - 1]);
		cli_usage(stderr, "down");
		return 1;
	}
	if (!dir) {
		cli_err("down: --dir DIR is required (the directory given to `nacre up`)");
		cli_usage(stderr, "down");
		return 1;
	}
	if (absolute(dir, c.dir, sizeof(c.dir)) < 0) {
		cli_err("path too long: %s", dir);
		return 1;
	}
	int r = read_pids(&c);

	if (r == -ENOENT) {
		printf("no cluster is running in %s\n", c.dir);
		return 0;
	}
	if (r < 0) {
		cli_err("cannot read %s/cluster.pids: %s", c.dir, strerror(-r));
		return 1;
	}

	double t0 = now_s();
	int rc = 0;

	if (c.mnt[0] && cli_is_mounted(c.mnt)) {
		r = unmount(c.mnt);
		if (r < 0) {
			cli_err("cannot unmount %s: %s (close files open there and retry)", c.mnt,
				strerror(-r));
			rc = 1;
		} else {
			step(&t0, "unmounted %s", c.mnt);
		}
	}
	int n = stop_procs(&c);

	step(&t0, "stopped %d process%s", n, n == 1 ? "" : "es");

	char path[PATH_MAX];

	if (rc == 0 && path_join(path, sizeof(path), c.dir, "cluster.pids") == 0)
		unlink(path);
	return rc;
}
