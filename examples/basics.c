/* basics.c - a first libnacre program: mount, create a striped file, write it, read it back,
 * look at it, remove it.
 *
 * libnacre is what nacre-mount, the CLI and the MPI-IO driver are built on. A program that
 * links it talks to the servers itself, without FUSE and without a kernel mount: the MDS for
 * names, attributes and layouts, the OSSes for the data.
 *
 *   usage: nacre-example-basics SPEC [KEY_FILE]
 *     SPEC      the file system, as nacre-mount takes it: "host:port:/fsname"
 *     KEY_FILE  the cluster key (default: $NACRE_KEY_FILE)
 *
 * Build against an installed libnacre:
 *   cc -Wall -o basics basics.c -lnacre
 * (the project's build makes it as nacre-example-basics.)
 *
 * Every call returns 0 or a byte count on success and a negative errno (or NACRE_E* code)
 * on failure, as the kernel's own calls do; nacre_strerror() names them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nacre/nacre.h>

#define FILE_BYTES (3u << 20) /* 3 MiB: with 1 MiB stripes, both OSTs hold some */

/* Prints "what: why" and says the program failed; rc is a negative errno. */
static int fail(const char *what, int rc)
{
	fprintf(stderr, "nacre-example-basics: %s: %s\n", what, nacre_strerror(rc));
	return 1;
}

/* The bytes written: a pattern that differs from one MiB to the next, so that a stripe read
 * from the wrong object would not compare equal. */
static void fill(unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 31u + (i >> 20));
}

/* Writes FILE_BYTES to the open file f, closes it and checks what close reported: with
 * write-behind (the default) an OST's error comes back from a later call, the last being
 * nacre_close. */
static int write_file(struct nacre_file *f, const unsigned char *data)
{
	ssize_t n = nacre_pwrite(f, data, FILE_BYTES, 0);
	int rc = nacre_close(f);

	if (n < 0)
		return fail("write", (int)n);
	if (rc < 0)
		return fail("close after the write", rc);
	return 0;
}

/* Opens the file again, reads it whole and compares it with data. */
static int read_back(struct nacre_fs *fs, const struct nacre_fid *fid, const unsigned char *data)
{
	unsigned char *buf = malloc(FILE_BYTES);
	struct nacre_file *f;
	ssize_t n;
	int rc;

	if (!buf)
		return fail("read buffer", -ENOMEM);
	rc = nacre_open(fs, NULL, fid, O_RDONLY, &f);
	if (rc < 0) {
		free(buf);
		return fail("open for reading", rc);
	}
	n = nacre_pread(f, buf, FILE_BYTES, 0);
	nacre_close(f);
	if (n != (ssize_t)FILE_BYTES || memcmp(buf, data, FILE_BYTES) != 0) {
		fprintf(stderr, "nacre-example-basics: read back %zd bytes, %s\n", n,
			n < 0 ? nacre_strerror((int)n) : "not the bytes written");
		free(buf);
		return 1;
	}
	free(buf);
	printf("read back: %u bytes, the same\n", FILE_BYTES);
	return 0;
}

/* What the MDS knows of the file: attributes and the layout it chose. */
static int show(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	char fid_text[NACRE_FID_STR_MAX];
	struct nacre_layout l;
	struct nacre_attr a;
	int rc = nacre_getattr(fs, NULL, fid, &a);

	if (rc < 0)
		return fail("getattr", rc);
	rc = nacre_layout_get(fs, NULL, fid, &l);
	if (rc < 0)
		return fail("layout", rc);
	printf("fid: %s\n", nacre_fid_format(fid, fid_text, sizeof(fid_text)));
	printf("size: %llu\n", (unsigned long long)a.size);
	printf("stripe_count: %d stripe_size: %u osts:", l.stripe_count, l.stripe_size);
	for (uint32_t i = 0; i < l.nosts; i++)
		printf(" %u", l.ost_idx[i]);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct nacre_mount_opts opts = {0};
	struct nacre_layout layout = {
		.pattern = NACRE_PATTERN_RAID0,
		.stripe_size = 1u << 20,
		.stripe_count = 2,   /* two OSTs, or as many as there are if fewer */
		.stripe_offset = -1, /* the MDS picks the first */
	};
	struct nacre_fs *fs;
	struct nacre_file *f;
	struct nacre_attr a;
	struct nacre_fid root;
	unsigned char *data;
	char name[64], err[512];
	int rc, status;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s SPEC [KEY_FILE]   (SPEC: host:port:/fsname)\n", argv[0]);
		return 2;
	}
	opts.key_file = argc == 3 ? argv[2] : NULL;
	/* One connection per server, shared by every thread that uses fs. */
	rc = nacre_fs_mount(argv[1], &opts, &fs, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "nacre-example-basics: cannot mount %s: %s\n", argv[1], err);
		return 1;
	}
	root = nacre_fs_root(fs);
	data = malloc(FILE_BYTES);
	if (!data) {
		nacre_fs_umount(fs);
		return fail("data buffer", -ENOMEM);
	}
	fill(data, FILE_BYTES);

	/* Names are looked up under a directory's FID, not by path. NULL credentials: root. */
	snprintf(name, sizeof(name), "nacre-example-%ld", (long)getpid());
	rc = nacre_create_open(fs, NULL, &root, name, 0644, O_WRONLY | O_EXCL, &layout, &a, &f);
	if (rc < 0) {
		free(data);
		nacre_fs_umount(fs);
		return fail("create", rc);
	}
	printf("created /%s\n", name);
	status = write_file(f, data);
	if (status == 0)
		status = read_back(fs, &a.fid, data);
	if (status == 0)
		status = show(fs, &a.fid);

	/* The MDS removes the name; the objects on the OSTs go in the background. */
	rc = nacre_unlink(fs, NULL, &root, name);
	if (rc < 0)
		status = fail("unlink", rc);
	else
		printf("removed /%s\n", name);
	free(data);
	nacre_fs_umount(fs);
	return status;
}
