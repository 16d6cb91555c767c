/* fhandle.c - file handles for test_handles.py (Python's os module has no
 * name_to_handle_at). Built by the test with the system's cc.
 *
 *   fhandle encode [-c] PATH
 *       prints "TYPE HEX" of PATH's handle (-c: a connectable one, AT_HANDLE_CONNECTABLE)
 *   fhandle open MOUNTDIR TYPE HEX
 *       opens the handle read-only on the mount of MOUNTDIR; prints the path the kernel
 *       gives the open file (/proc/self/fd), a newline, and for a regular file its bytes
 *
 * Exit status: 0, or the errno of the failed call (ESTALE: 116).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AT_HANDLE_CONNECTABLE
#define AT_HANDLE_CONNECTABLE 0x002
#endif

static int fail(const char *what)
{
	int e = errno;

	fprintf(stderr, "fhandle: %s: %s\n", what, strerror(e));
	return e ? e : 1;
}

static int encode(const char *path, int flags)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;
	int mount_id;

	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, flags) < 0)
		return fail("name_to_handle_at");
	printf("%d ", h.fh.handle_type);
	for (unsigned i = 0; i < h.fh.handle_bytes; i++)
		printf("%02x", (unsigned char)h.fh.f_handle[i]);
	printf("\n");
	return 0;
}

static int open_handle(const char *mnt, const char *type, const char *hex)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;
	size_t n = strlen(hex) / 2;
	char proc[64], path[4096], data[65536];
	struct stat st;
	ssize_t len;
	int mfd, fd;

	if (n > MAX_HANDLE_SZ || strlen(hex) % 2) {
		fprintf(stderr, "fhandle: bad handle\n");
		return EINVAL;
	}
	h.fh.handle_type = (int)strtol(type, NULL, 10);
	h.fh.handle_bytes = (unsigned)n;
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return EINVAL;
		h.fh.f_handle[i] = (unsigned char)v;
	}
	mfd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (mfd < 0)
		return fail(mnt);
	fd = open_by_handle_at(mfd, &h.fh, O_RDONLY);
	if (fd < 0)
		return fail("open_by_handle_at");
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	len = readlink(proc, path, sizeof(path) - 1);
	if (len < 0)
		return fail("readlink");
	path[len] = '\0';
	printf("%s\n", path);
	if (fstat(fd, &st) < 0)
		return fail("fstat");
	while (S_ISREG(st.st_mode) && (len = read(fd, data, sizeof(data))) > 0)
		fwrite(data, 1, (size_t)len, stdout);
	if (len < 0)
		return fail("read");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "encode") == 0)
		return encode(argv[2], 0);
	if (argc == 4 && strcmp(argv[1], "encode") == 0 && strcmp(argv[2], "-c") == 0)
		return encode(argv[3], AT_HANDLE_CONNECTABLE);
	if (argc == 5 && strcmp(argv[1], "open") == 0)
		return open_handle(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: fhandle encode [-c] PATH | fhandle open MOUNTDIR TYPE HEX\n");
	return 2;
}
