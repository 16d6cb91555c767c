/* local_proc.c - processes and paths on this host (see local_proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/local_proc.h"
#include "common/util.h"

/* out = a "/" b; -ENAMETOOLONG (out untouched) if it does not fit. */
int lp_path_join(char *out, size_t len, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la + 1 + lb + 1 > len)
		return -ENAMETOOLONG;
	memmove(out, a, la);
	out[la] = '/';
	memcpy(out + la + 1, b, lb + 1);
	return 0;
}

/* Makes dir absolute (it may not exist yet). */
int lp_absolute(const char *in, char *out, size_t len)
{
	char cwd[PATH_MAX];

	if (in[0] == '/') {
		if (str_copy(out, in, len) >= len)
			return -ENAMETOOLONG;
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (lp_path_join(out, len, cwd, in) < 0)
			return -ENAMETOOLONG;
	}
	size_t n = strlen(out);

	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

/* Finds a program next to this executable, in ../sbin from it (installed: nacre in bin,
 * the daemons in sbin, which a user's PATH may lack), else in PATH. */
int lp_find_program(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');

		if (slash) {
			*slash = '\0';
			if (lp_path_join(out, len, self, name) == 0 && access(out, X_OK) == 0)
				return 0;
			char sbin[PATH_MAX];

			if (lp_path_join(sbin, sizeof(sbin), self, "../sbin") == 0 &&
			    lp_path_join(out, len, sbin, name) == 0 && access(out, X_OK) == 0)
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
			if (lp_path_join(out, len, dir, name) == 0 && access(out, X_OK) == 0)
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
pid_t lp_spawn(char *const argv[], const char *log)
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
void lp_show_log_tail(const char *log)
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

int lp_is_nacre_proc(pid_t pid)
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
int lp_unmount(const char *mnt)
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
