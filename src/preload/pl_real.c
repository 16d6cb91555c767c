/* pl_real.c - the libc functions under the interposed ones, set-up and exit, call counts. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/pl.h"

struct pl_real pl_real;
__thread int pl_inside;
pid_t pl_pid;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int report_on, debug_on;
static int report_fd = 2; /* a copy of stderr: programs close theirs before exit */
static uint64_t counts[PL_C_COUNT], bytes_read, bytes_written; /* atomic */

static void report(void);

static void *next(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		fprintf(stderr, "nacre-preload: libc has no %s\n", name);
		abort();
	}
	return p;
}

static void prefork(void)
{
	pl_inside++;
	pl_fd_prefork();
	pl_inside--;
}

static void postfork_parent(void)
{
	pl_fd_postfork(0);
}

static void postfork_child(void)
{
	pl_pid = getpid();
	pl_fd_postfork(1);
	pl_mounts_forked();
}

static void init_once_fn(void)
{
	pl_inside++;
	pl_pid = getpid();
#define R(name) pl_real.name = next(#name)
	R(openat); R(read); R(write); R(pread); R(pwrite); R(readv); R(writev);
	R(preadv2); R(pwritev2); R(lseek); R(close); R(dup); R(dup2); R(dup3); R(fcntl);
	R(fstat); R(fstatat); R(statx); R(fsync); R(fdatasync); R(ftruncate); R(fallocate);
	R(mmap); R(copy_file_range); R(sendfile); R(splice); R(fdopen); R(close_range);
	R(flock); R(posix_fallocate); R(_exit);
#undef R
	report_on = getenv("NACRE_PRELOAD_REPORT") && atoi(getenv("NACRE_PRELOAD_REPORT")) > 0;
	debug_on = getenv("NACRE_PRELOAD_DEBUG") && atoi(getenv("NACRE_PRELOAD_DEBUG")) > 0;
	if (report_on) {
		int fd = pl_real.fcntl(2, F_DUPFD_CLOEXEC, 100);
		if (fd >= 0)
			report_fd = fd;
	}
	pl_mounts_load();
	pthread_atfork(prefork, postfork_parent, postfork_child);
	pl_inside--;
}

void pl_init(void)
{
	pthread_once(&init_once, init_once_fn);
}

__attribute__((constructor)) static void pl_start(void)
{
	pl_init();
}

void pl_finish(void)
{
	pl_inside++;
	pl_fd_close_all();
	if (report_on)
		report();
	pl_inside--;
}

__attribute__((destructor)) static void pl_stop(void)
{
	pl_finish();
}

void pl_count(enum pl_count c, uint64_t bytes)
{
	__atomic_add_fetch(&counts[c], 1, __ATOMIC_RELAXED);
	if (c == PL_C_READ)
		__atomic_add_fetch(&bytes_read, bytes, __ATOMIC_RELAXED);
	else if (c == PL_C_WRITE)
		__atomic_add_fetch(&bytes_written, bytes, __ATOMIC_RELAXED);
}

static void report(void)
{
	static const char *names[PL_C_COUNT] = {"open", "read", "write", "lseek", "fstat",
						"fsync", "close", "dup", "to-kernel"};
	char line[512];
	uint64_t total = 0;
	int len;

	for (int i = 0; i < PL_C_COUNT; i++)
		if (i != PL_C_KERNEL)
			total += counts[i];
	len = snprintf(line, sizeof(line), "nacre-preload[%ld]: %llu calls intercepted (",
		       (long)getpid(), (unsigned long long)total);
	for (int i = 0; i < PL_C_COUNT && len < (int)sizeof(line); i++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, "%s%s %llu",
				i ? ", " : "", names[i], (unsigned long long)counts[i]);
	if (len < (int)sizeof(line))
		snprintf(line + len, sizeof(line) - (size_t)len,
			 "), %llu bytes read, %llu bytes written through libnacre\n",
			 (unsigned long long)bytes_read, (unsigned long long)bytes_written);
	pl_real.write(report_fd, line, strlen(line));
}

void pl_debug(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int len;

	if (!debug_on)
		return;
	len = snprintf(line, sizeof(line), "nacre-preload[%ld]: ", (long)getpid());
	va_start(ap, fmt);
	vsnprintf(line + len, sizeof(line) - (size_t)len - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	pl_real.write(2, line, strlen(line));
}

int pl_fail(int rc)
{
	errno = nacre_errno_for_app(rc);
	return -1;
}
