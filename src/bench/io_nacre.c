/* io_nacre.c - the NACRE back end: libnacre directly, no FUSE and no kernel page cache.
 * Paths are relative to the file system root. Each rank mounts its own nacre_fs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "common/util.h"
#include "nacre/nacre.h"

static struct nacre_fs *g_fs;
static struct nacre_cred g_cred;
/* The last parent directory resolved: mdtest-style runs hit one directory thousands of
 * times, and a full path walk per call would measure lookups instead of the operation. */
static char g_dir_path[BENCH_PATH_MAX];
static struct nacre_fid g_dir_fid;
static int g_dir_valid;

static int nc_init(const struct bench_opts *o)
{
	struct nacre_mount_opts mo;
	char err[512] = "";
	int rc;

	if (!o->mds_spec) {
		bench_err("-a NACRE needs the file system: --mds HOST:PORT:/FSNAME or $NACRE_SPEC");
		return -EINVAL;
	}
	memset(&mo, 0, sizeof(mo));
	mo.key_file = o->key_file;
	/* $NACRE_CLIENT_NAME first: nodemaps match the name (an admin node runs as its rule) */
	mo.client_name = getenv("NACRE_CLIENT_NAME");
	if (!mo.client_name || !mo.client_name[0])
		mo.client_name = BENCH_NAME;
	rc = nacre_fs_mount(o->mds_spec, &mo, &g_fs, err, sizeof(err));
	if (rc < 0) {
		bench_err("cannot mount %s: %s", o->mds_spec, err[0] ? err : nacre_strerror(rc));
		return rc;
	}
	g_cred.uid = (uint32_t)getuid();
	g_cred.gid = (uint32_t)getgid();
	return 0;
}

static void nc_fini(void)
{
	nacre_fs_umount(g_fs);
	g_fs = NULL;
}

/* Splits path into its parent's FID (resolved, cached) and the last component. */
static int parent_of(const char *path, struct nacre_fid *dir, const char **name)
{
	const char *slash = strrchr(path, '/');
	char dpath[BENCH_PATH_MAX];
	struct nacre_attr a;
	size_t dlen;
	int rc;

	if (!slash) {
		*dir = nacre_fs_root(g_fs);
		*name = path;
		return 0;
	}
	dlen = (size_t)(slash - path);
	if (dlen >= sizeof(dpath))
		return -ENAMETOOLONG;
	memcpy(dpath, path, dlen);
	dpath[dlen] = '\0';
	*name = slash + 1;
	if (g_dir_valid && strcmp(dpath, g_dir_path) == 0) {
		*dir = g_dir_fid;
		return 0;
	}
	rc = nacre_resolve(g_fs, &g_cred, dpath, &a);
	if (rc < 0)
		return rc;
	if (!S_ISDIR(a.mode))
		return -ENOTDIR;
	str_copy(g_dir_path, dpath, sizeof(g_dir_path));
	g_dir_fid = a.fid;
	g_dir_valid = 1;
	*dir = a.fid;
	return 0;
}

static int nc_open(const char *path, int flags, int shared, void **h)
{
	struct nacre_fid dir;
	struct nacre_attr a;
	const char *name;
	int oflags, rc;

	(void)shared;
	rc = parent_of(path, &dir, &name);
	if (rc < 0)
		return rc;
	if ((flags & BENCH_O_READ) && (flags & BENCH_O_WRITE))
		oflags = O_RDWR;
	else
		oflags = (flags & BENCH_O_WRITE) ? O_WRONLY : O_RDONLY;
	if (flags & BENCH_O_CREATE) /* one MDS round trip, as open(O_CREAT) on a mount */
		return nacre_create_open(g_fs, &g_cred, &dir, name, 0644, oflags, NULL, NULL,
					 (struct nacre_file **)h);
	rc = nacre_lookup(g_fs, &g_cred, &dir, name, &a);
	if (rc < 0)
		return rc;
	return nacre_open(g_fs, &g_cred, &a.fid, oflags, (struct nacre_file **)h);
}

static ssize_t nc_pwrite(void *h, const void *buf, size_t len, uint64_t off)
{
	return nacre_pwrite(h, buf, len, off);
}

static ssize_t nc_pread(void *h, void *buf, size_t len, uint64_t off)
{
	return nacre_pread(h, buf, len, off);
}

static int nc_fsync(void *h)
{
	return nacre_fsync(h, 0);
}

static int nc_close(void *h)
{
	return nacre_close(h);
}

static int nc_remove(const char *path)
{
	struct nacre_fid dir;
	const char *name;
	int rc = parent_of(path, &dir, &name);

	return rc < 0 ? rc : nacre_unlink(g_fs, &g_cred, &dir, name);
}

static int nc_mkdir(const char *path)
{
	struct nacre_fid dir;
	struct nacre_attr a;
	const char *name;
	int rc = parent_of(path, &dir, &name);

	return rc < 0 ? rc : nacre_mkdir(g_fs, &g_cred, &dir, name, 0755, &a);
}

static int nc_rmdir(const char *path)
{
	struct nacre_fid dir;
	const char *name;
	int rc = parent_of(path, &dir, &name);

	if (rc < 0)
		return rc;
	g_dir_valid = 0; /* it may be the cached parent of later calls */
	return nacre_rmdir(g_fs, &g_cred, &dir, name);
}

static int nc_stat(const char *path, uint64_t *size)
{
	struct nacre_fid dir;
	struct nacre_attr a;
	const char *name;
	int rc = parent_of(path, &dir, &name);

	if (rc < 0)
		return rc;
	rc = nacre_lookup(g_fs, &g_cred, &dir, name, &a);
	if (rc < 0)
		return rc;
	*size = a.size;
	return 0;
}

static int nc_statfs(const char *path, struct bench_fsinfo *out)
{
	struct nacre_statfs st;
	int rc;

	(void)path;
	rc = nacre_statfs(g_fs, &st);
	if (rc < 0)
		return rc;
	out->bytes_total = st.kb_total * 1024;
	out->bytes_free = st.kb_free * 1024;
	out->files_total = st.files;
	out->files_free = st.ffree;
	return 0;
}

const struct bench_io bench_io_nacre = {
	.name = "NACRE",
	.init = nc_init,
	.fini = nc_fini,
	.open = nc_open,
	.pwrite = nc_pwrite,
	.pread = nc_pread,
	.fsync = nc_fsync,
	.close = nc_close,
	.remove = nc_remove,
	.mkdir = nc_mkdir,
	.rmdir = nc_rmdir,
	.stat = nc_stat,
	.statfs = nc_statfs,
};
