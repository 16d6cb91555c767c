/* dio_probe.c - O_DIRECT and Linux AIO patterns for tests/integration/test_odirect.py, which
 * Python cannot issue itself (io_submit through the raw system calls: no libaio needed).
 *
 *   dio-probe cycle FILE SIZE LOOPS READERS
 *       READERS child processes read FILE through the page cache over and over while the
 *       parent, LOOPS times: opens FILE with O_DIRECT, overwrites [0, SIZE) with one AIO
 *       write of the other of two patterns, closes it, then reads [0, SIZE) back once
 *       through the page cache and once with O_DIRECT; each must be the pattern just
 *       written. (The first pattern is put there with O_DIRECT pwrite first.)
 *   dio-probe append FILE BLKSIZE BLOCKS aio|sync SECS
 *       FILE is created empty and opened twice with O_DIRECT. For each block: a thread
 *       reads the block's range with O_DIRECT until it gets bytes, while the main thread
 *       appends the block (one write at the end, AIO or pwrite). What the reader got must
 *       be the written bytes (or zeros); it must get them within SECS seconds.
 * Prints one line saying what went wrong; exit status 0 if nothing did, 1 if a check failed,
 * 2 if the pattern could not be run (bad arguments, a system call failed).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ALIGN 4096

static int die(const char *what)
{
	fprintf(stderr, "dio-probe: %s: %s\n", what, strerror(errno));
	exit(2);
}

static unsigned long num(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "dio-probe: not a number: %s\n", s);
		exit(2);
	}
	return v;
}

static void *aligned(size_t len, int fill)
{
	void *p;

	if (posix_memalign(&p, ALIGN, len))
		die("posix_memalign");
	memset(p, fill, len);
	return p;
}

static int xopen(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd < 0)
		die(path);
	return fd;
}

/* One AIO write of len bytes of buf at off on fd, waited for; returns its result. */
static long aio_write(int fd, const void *buf, size_t len, off_t off)
{
	aio_context_t ctx = 0;
	struct iocb cb;
	struct iocb *cbs[1] = {&cb};
	struct io_event ev;

	if (syscall(SYS_io_setup, 1, &ctx) < 0)
		die("io_setup");
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = len;
	cb.aio_offset = off;
	if (syscall(SYS_io_submit, ctx, 1, cbs) != 1)
		die("io_submit");
	while (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1)
		if (errno != EINTR)
			die("io_getevents");
	syscall(SYS_io_destroy, ctx);
	return (long)ev.res;
}

/* Reads [0, len) of path opened with flags into buf and checks it is all c; prints what
 * differs. Returns 0 if it is. */
static int check_read(unsigned long loop, const char *path, int flags, unsigned char *buf,
		      size_t len, int c)
{
	const char *how = flags & O_DIRECT ? "an O_DIRECT" : "a buffered";
	int fd = xopen(path, O_RDONLY | flags);
	ssize_t n = pread(fd, buf, len, 0);
	size_t i;

	if (n < 0)
		die("pread");
	close(fd);
	if ((size_t)n != len) {
		printf("loop %lu: %s read returned %zd of %zu bytes\n", loop, how, n, len);
		return 1;
	}
	for (i = 0; i < len && buf[i] == (unsigned char)c; i++)
		;
	if (i == len)
		return 0;
	printf("loop %lu: stale data from %s read at %zu: 0x%02x, want 0x%02x\n", loop, how, i,
	       buf[i], c);
	return 1;
}

static int cycle(const char *path, size_t size, unsigned long loops, unsigned long readers)
{
	static const int pattern[2] = {0x55, 0xaa};
	unsigned char *wbuf[2] = {aligned(size, pattern[0]), aligned(size, pattern[1])};
	unsigned char *rbuf = aligned(size, 0);
	pid_t kids[64], parent = getpid();
	unsigned long i, k;
	int fd, rc = 0;

	if (readers > 64 || size == 0 || size % ALIGN)
		return fprintf(stderr, "dio-probe: cycle: bad SIZE or READERS\n"), 2;
	fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT);
	if (pwrite(fd, wbuf[0], size, 0) != (ssize_t)size)
		die("pwrite");
	close(fd);
	for (k = 0; k < readers; k++) {
		kids[k] = fork();
		if (kids[k] < 0)
			die("fork");
		if (kids[k] == 0) {
			unsigned char *b = malloc(size);

			prctl(PR_SET_PDEATHSIG, SIGKILL); /* whatever way the parent ends */
			if (getppid() != parent)
				_exit(2);
			for (;;) {
				int rfd = open(path, O_RDONLY | O_CLOEXEC);

				if (rfd < 0 || !b || pread(rfd, b, size, 0) < 0)
					_exit(2);
				close(rfd);
			}
		}
	}
	for (i = 1; i <= loops && rc == 0; i++) {
		int p = (int)(i % 2);

		fd = xopen(path, O_RDWR | O_DIRECT);
		long n = aio_write(fd, wbuf[p], size, 0);
		if (n != (long)size) {
			printf("loop %lu: AIO write returned %ld\n", i, n);
			rc = 1;
		}
		close(fd);
		if (rc == 0)
			rc = check_read(i, path, 0, rbuf, size, pattern[p]);
		if (rc == 0)
			rc = check_read(i, path, O_DIRECT, rbuf, size, pattern[p]);
	}
	for (k = 0; k < readers; k++) {
		kill(kids[k], SIGKILL);
		waitpid(kids[k], NULL, 0);
	}
	return rc;
}

struct reader {
	int fd;
	size_t len;
	off_t off;
	unsigned char *buf;
	ssize_t got;
	int err; /* errno of a failed read */
	double deadline;
	atomic_int ready;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *read_block(void *arg)
{
	struct reader *r = arg;

	memset(r->buf, 'b', r->len);
	atomic_store(&r->ready, 1);
	do {
		r->got = pread(r->fd, r->buf, r->len, r->off);
		if (r->got < 0) {
			r->err = errno;
			return NULL;
		}
	} while (r->got == 0 && now() < r->deadline);
	return NULL;
}

static int append(const char *path, size_t blksize, unsigned long blocks, int use_aio,
		  double secs)
{
	int wfd = xopen(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT);
	int rfd = xopen(path, O_RDONLY | O_DIRECT);
	unsigned char *wbuf = aligned(blksize, 'a');
	struct reader r = {.fd = rfd, .len = blksize, .buf = aligned(blksize, 0)};
	unsigned long i;
	pthread_t t;

	if (blksize == 0 || blksize % ALIGN)
		return fprintf(stderr, "dio-probe: append: bad BLKSIZE\n"), 2;
	for (i = 0; i < blocks; i++) {
		r.off = (off_t)(i * blksize);
		r.deadline = now() + secs;
		atomic_store(&r.ready, 0);
		if (pthread_create(&t, NULL, read_block, &r))
			die("pthread_create");
		while (!atomic_load(&r.ready))
			usleep(1);
		long n = use_aio ? aio_write(wfd, wbuf, blksize, r.off)
				 : (long)pwrite(wfd, wbuf, blksize, r.off);
		if (n != (long)blksize) {
			printf("block %lu: write returned %ld (%s)\n", i, n,
			       n < 0 ? strerror(use_aio ? (int)-n : errno) : "short");
			return 1;
		}
		pthread_join(t, NULL);
		if (r.got < 0) {
			printf("block %lu: O_DIRECT read failed: %s\n", i, strerror(r.err));
			return 1;
		}
		if (r.got == 0) {
			printf("block %lu: the reader still saw end of file %.0f s after the "
			       "append\n", i, secs);
			return 1;
		}
		for (ssize_t j = 0; j < r.got; j++) {
			if (r.buf[j] != 'a' && r.buf[j] != 0) {
				printf("block %lu: byte %zd read as 0x%02x\n", i, j, r.buf[j]);
				return 1;
			}
		}
	}
	close(rfd);
	close(wfd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "cycle") == 0)
		return cycle(argv[2], num(argv[3]), num(argv[4]), num(argv[5]));
	if (argc == 7 && strcmp(argv[1], "append") == 0)
		return append(argv[2], num(argv[3]), num(argv[4]), strcmp(argv[5], "aio") == 0,
			      (double)num(argv[6]));
	fprintf(stderr, "usage: dio-probe cycle FILE SIZE LOOPS READERS\n"
			"       dio-probe append FILE BLKSIZE BLOCKS aio|sync SECS\n");
	return 2;
}
