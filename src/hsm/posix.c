/* posix.c - the "posix:/dir" archive backend: a directory tree that mirrors the file system.
 *
 * Object "a/b" is the file DIR/a/b, so the archive is readable with cp and ls. Its metadata
 * lives in a sidecar text file next to it, DIR/a/.b.nacre-meta, one "key=value" per line:
 * owner, group, permissions (octal), modtime (RFC 3339), nacre_fid, size, crc32c (hex) — a
 * sidecar rather than user xattrs because tmpfs and many NFS servers lack them. A file with
 * no sidecar (put there by hand) is described by its own stat. Puts are atomic: data goes to
 * a temporary file in the same directory, is fsynced, re-read and checked against the
 * CRC-32C computed while writing, then renamed into place; the sidecar follows the same way.
 * Gets read the archive file once: the CRC-32C of each range is taken on the way and the
 * ranges' CRCs are combined into the whole file's to check against the sidecar.
 *
 * Temporary files are named NAME.nacre-tmp-HOST-PID-SEQ (HOST: a hash of the hostname), and
 * the data temporary is held under an OFD write lock while it is written. A copytool killed
 * mid-copy leaves its temporaries behind; the cleanup at copytool start removes those nobody
 * holds a lock on whose writer is a dead process of this host, or that were not modified for
 * the grace period (a writer on another host, or a filesystem without locks). So two
 * copytools on one archive never remove each other's live temporaries: a live writer holds
 * its lock, its pid is alive and it keeps its file's mtime fresh.
 * Data moves in 4 MiB ranges on several threads (the backend's `threads`): one stream of
 * reads from nacre cannot keep a disk busy.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/fid.h"
#include "common/util.h"
#include "hsm/backend_impl.h"

#define CHUNK (4u * 1024u * 1024u)
#define META_SUFFIX ".nacre-meta"
#define TMP_MARK ".nacre-tmp-"

struct posix {
	char root[NACRE_PATH_MAX + 1];
	int threads;
	char host[12]; /* in temporary names, says whose pid it is: CRC-32C of the hostname */
};

/* A unique temporary name next to f: f.nacre-tmp-HOST-PID-SEQ. */
static int tmp_name(const struct posix *p, const char *f, char *out, size_t len)
{
	static unsigned long seq;
	unsigned long n = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
	int w = snprintf(out, len, "%s" TMP_MARK "%s-%d-%lu", f, p->host, (int)getpid(), n);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* Ranges of one transfer shared by its threads; everything under lock. */
struct ranges {
	pthread_mutex_t lock;
	uint64_t next, size, done;
	int rc;
	char *err;
	size_t err_len;
	/* moves [off, off+len) with buf; returns 0 or -errno with a message in err */
	int (*one)(struct ranges *r, uint8_t *buf, uint64_t off, size_t len, char *err,
		   size_t err_len);
	int fd;
	hsm_read_fn rd;
	hsm_write_fn wr;
	void *io_arg;
	uint32_t *crcs; /* CRC-32C of each range as read from the source (put) or archive (get) */
	hsm_progress_fn progress;
	void *progress_arg;
	const char *what;
};

static void *range_worker(void *arg)
{
	struct ranges *r = arg;
	uint8_t *buf = malloc(CHUNK);
	char err[512];
	pthread_mutex_lock(&r->lock);
	if (!buf && !r->rc) {
		r->rc = -ENOMEM;
		snprintf(r->err, r->err_len, "posix: out of memory");
	}
	while (buf && !r->rc && r->next < r->size) {
		uint64_t off = r->next;
		size_t len = r->size - off < CHUNK ? (size_t)(r->size - off) : CHUNK;
		r->next += len;
		pthread_mutex_unlock(&r->lock);
		err[0] = 0;
		int rc = r->one(r, buf, off, len, err, sizeof(err));
		pthread_mutex_lock(&r->lock);
		if (rc && !r->rc) {
			r->rc = rc;
			snprintf(r->err, r->err_len, "%s", err);
		}
		r->done += len;
		/* under the lock: progress stays monotonic */
		if (!r->rc && r->progress && r->progress(r->progress_arg, r->done)) {
			r->rc = -ECANCELED;
			snprintf(r->err, r->err_len, "posix: %s canceled", r->what);
		}
	}
	pthread_mutex_unlock(&r->lock);
	free(buf);
	return NULL;
}

/* Runs r->one over [0, r->size) on up to `threads` threads. */
static int run_ranges(struct ranges *r, int threads)
{
	pthread_t tid[64];
	int n = 0;
	uint64_t chunks = (r->size + CHUNK - 1) / CHUNK;
	if (threads > 64)
		threads = 64;
	if ((uint64_t)threads > chunks)
		threads = chunks ? (int)chunks : 1;
	pthread_mutex_init(&r->lock, NULL);
	for (int i = 1; i < threads; i++)
		if (pthread_create(&tid[n], NULL, range_worker, r) == 0)
			n++;
	range_worker(r); /* this thread works too */
	for (int i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&r->lock);
	return r->rc;
}

static int posix_open(const char *rest, const struct hsm_backend_opts *opts, void **priv,
		      char *err, size_t err_len)
{
	struct stat st;
	if (rest[0] != '/') {
		snprintf(err, err_len, "posix:%s: the archive directory must be an absolute path",
			 rest);
		return -EINVAL;
	}
	if (stat(rest, &st) < 0 || !S_ISDIR(st.st_mode)) {
		int e = errno ? errno : ENOTDIR;
		snprintf(err, err_len, "posix:%s: %s: create the archive directory first", rest,
			 strerror(e));
		return -e;
	}
	struct posix *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (str_copy(p->root, rest, sizeof(p->root)) >= sizeof(p->root)) {
		free(p);
		return -ENAMETOOLONG;
	}
	size_t n = strlen(p->root);
	while (n > 1 && p->root[n - 1] == '/')
		p->root[--n] = 0;
	p->threads = opts->threads > 0 ? opts->threads : 4;
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	/* a hash, not the name: short, and no '-' or '/' in it */
	snprintf(p->host, sizeof(p->host), "%08x", crc32c(0, host, strlen(host)));
	*priv = p;
	return 0;
}

static void posix_close(void *priv)
{
	free(priv);
}

/* DIR/path into out; refuses "..", empty components and sidecar-like names. */
static int full_path(const struct posix *p, const char *path, char *out, size_t len)
{
	while (*path == '/')
		path++;
	if (!*path)
		return -EINVAL;
	for (const char *c = path; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return -EINVAL;
		c += n;
		while (*c == '/')
			c++;
	}
	int w = snprintf(out, len, "%s/%s", p->root, path);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* The sidecar of data file f: same directory, ".<name>.nacre-meta". */
static int meta_path(const char *f, char *out, size_t len)
{
	const char *slash = strrchr(f, '/');
	int w = snprintf(out, len, "%.*s/.%s" META_SUFFIX, (int)(slash - f), f, slash + 1);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* mkdir -p of the directory part of f. */
static int make_parents(char *f)
{
	char *slash = strrchr(f, '/');
	if (!slash || slash == f)
		return 0;
	*slash = 0;
	int rc = 0;
	if (mkdir(f, 0755) < 0 && errno != EEXIST) {
		if (errno == ENOENT && (rc = make_parents(f)) == 0 && mkdir(f, 0755) < 0 &&
		    errno != EEXIST)
			rc = -errno;
		else if (errno != ENOENT)
			rc = -errno;
	}
	*slash = '/';
	return rc;
}

static int fsync_dir_of(const char *f)
{
	char d[NACRE_PATH_MAX + 64];
	str_copy(d, f, sizeof(d));
	char *slash = strrchr(d, '/');
	if (slash && slash != d)
		*slash = 0;
	int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

static int write_all(int fd, const void *buf, size_t n, uint64_t off)
{
	const uint8_t *b = buf;
	while (n > 0) {
		ssize_t w = pwrite(fd, b, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

struct text_arg {
	char *buf;
	size_t len, pos;
};

static int add_line(void *arg, const char *key, const char *value)
{
	struct text_arg *t = arg;
	int n = snprintf(t->buf + t->pos, t->len - t->pos, "%s=%s\n", key, value);
	if (n < 0 || (size_t)n >= t->len - t->pos)
		return -ENAMETOOLONG;
	t->pos += (size_t)n;
	return 0;
}

static int write_meta(const struct posix *p, const char *f, const struct hsm_meta *m,
		      uint64_t size, uint32_t crc)
{
	char mp[NACRE_PATH_MAX + 96], tmp[NACRE_PATH_MAX + 160], text[512];
	char fid[NACRE_FID_STR_MAX] = "";
	int rc = meta_path(f, mp, sizeof(mp));
	if (rc)
		return rc;
	if (m->has_fid)
		fid_format(&m->fid, fid, sizeof(fid));
	struct text_arg ta = {text, sizeof(text), 0};
	rc = hsm_meta_each_key(m, add_line, &ta);
	if (rc)
		return rc;
	int n = snprintf(text + ta.pos, sizeof(text) - ta.pos,
			 "%s%s%ssize=%" PRIu64 "\ncrc32c=%08x\n", fid[0] ? "nacre_fid=" : "", fid,
			 fid[0] ? "\n" : "", size, crc);
	if (n < 0 || (size_t)n >= sizeof(text) - ta.pos)
		return -ENAMETOOLONG;
	n += (int)ta.pos;
	rc = tmp_name(p, mp, tmp, sizeof(tmp));
	if (rc)
		return rc;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, text, (size_t)n, 0);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (!rc && rename(tmp, mp) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* Fills m from the sidecar of f if there is one, and the CRC-32C it records. */
static void read_meta(const char *f, struct hsm_meta *m, uint32_t *crc, int *has_crc)
{
	char mp[NACRE_PATH_MAX + 96], line[256];
	*has_crc = 0;
	if (meta_path(f, mp, sizeof(mp)))
		return;
	FILE *fp = fopen(mp, "re");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\r\n")] = 0;
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = 0;
		const char *k = line, *v = eq + 1;
		char *end;
		if (!strcmp(k, "crc32c")) {
			unsigned long x = strtoul(v, &end, 16);
			if (*v && !*end) {
				*crc = (uint32_t)x;
				*has_crc = 1;
				snprintf(m->checksum, sizeof(m->checksum), "crc32c:%08lx", x);
			}
		} else {
			hsm_meta_apply(m, k, v); /* any style a put wrote */
		}
	}
	fclose(fp);
}

static int stat_file(const char *f, struct hsm_meta *m, uint32_t *crc, int *has_crc)
{
	struct stat st;
	if (stat(f, &st) < 0)
		return -errno;
	memset(m, 0, sizeof(*m));
	/* a file without a sidecar describes itself */
	m->size = (uint64_t)st.st_size;
	m->uid = st.st_uid;
	m->gid = st.st_gid;
	m->mode = st.st_mode & (S_IFMT | 07777);
	m->mtime.sec = st.st_mtim.tv_sec;
	m->mtime.nsec = (uint32_t)st.st_mtim.tv_nsec;
	m->has_owner = 1;
	read_meta(f, m, crc, has_crc);
	return S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ? 0 : -EINVAL;
}

static int put_one(struct ranges *r, uint8_t *buf, uint64_t off, size_t len, char *err,
		   size_t err_len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = r->rd(r->io_arg, buf + got, len - got, off + got);
		if (n <= 0) {
			int rc = n < 0 ? (int)n : -EIO; /* the source ended before its size */
			snprintf(err, err_len, "posix: reading the source at %" PRIu64 ": %s",
				 off + got, strerror(-rc));
			return rc;
		}
		got += (size_t)n;
	}
	r->crcs[off / CHUNK] = crc32c(0, buf, len);
	int rc = write_all(r->fd, buf, len, off);
	if (rc)
		snprintf(err, err_len, "posix: writing the archive copy: %s", strerror(-rc));
	return rc;
}

static int get_one(struct ranges *r, uint8_t *buf, uint64_t off, size_t len, char *err,
		   size_t err_len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = pread(r->fd, buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int rc = n < 0 ? -errno : -EIO;
			snprintf(err, err_len, "posix: reading the archive copy at %" PRIu64 ": %s",
				 off + got, n < 0 ? strerror(-rc) : "shorter than its size");
			return rc;
		}
		got += (size_t)n;
	}
	r->crcs[off / CHUNK] = crc32c(0, buf, len);
	ssize_t w = r->wr(r->io_arg, buf, len, off);
	if (w != (ssize_t)len) {
		int rc = w < 0 ? (int)w : -EIO;
		snprintf(err, err_len, "posix: writing the destination at %" PRIu64 ": %s", off,
			 strerror(-rc));
		return rc;
	}
	return 0;
}

static int posix_put(void *priv, const char *path, uint64_t size, hsm_read_fn rd, void *rd_arg,
		     const struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg,
		     char *err, size_t err_len)
{
	struct posix *p = priv;
	char f[NACRE_PATH_MAX + 64], tmp[NACRE_PATH_MAX + 128];
	uint8_t *buf = NULL;
	uint32_t crc = 0;
	struct ranges rg;
	int fd = -1;
	int rc = full_path(p, path, f, sizeof(f));
	if (!rc)
		rc = make_parents(f);
	if (rc) {
		snprintf(err, err_len, "posix: cannot prepare %s under %s: %s", path, p->root,
			 strerror(-rc));
		return rc;
	}
	memset(&rg, 0, sizeof(rg));
	rc = tmp_name(p, f, tmp, sizeof(tmp));
	if (rc) {
		snprintf(err, err_len, "posix: name too long under %s: %s", p->root, path);
		return rc;
	}
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	buf = malloc(CHUNK);
	if (fd < 0 || !buf) {
		rc = fd < 0 ? -errno : -ENOMEM;
		snprintf(err, err_len, "posix: cannot create %s: %s", tmp, strerror(-rc));
		goto out;
	}
	/* held until the fd closes (or the process dies): tells the cleanup it is live */
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	fcntl(fd, F_OFD_SETLK, &fl);
	rg.size = size;
	rg.err = err;
	rg.err_len = err_len;
	rg.one = put_one;
	rg.fd = fd;
	rg.rd = rd;
	rg.io_arg = rd_arg;
	rg.progress = progress;
	rg.progress_arg = progress_arg;
	rg.what = "archive";
	rg.crcs = malloc(sizeof(*rg.crcs) * (size_t)(size / CHUNK + 1));
	if (!rg.crcs) {
		rc = -ENOMEM;
		goto out;
	}
	rc = run_ranges(&rg, p->threads);
	if (rc)
		goto out;
	if (fsync(fd) < 0) {
		rc = -errno;
		snprintf(err, err_len, "posix: fsync %s: %s", tmp, strerror(-rc));
		goto out;
	}
	/* verify what reached the disk, not what we meant to write: range by range against
	 * what was read from the source, and the whole file's CRC for the sidecar */
	for (uint64_t o = 0; o < size;) {
		size_t want = size - o < CHUNK ? (size_t)(size - o) : CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)o);
		if (n != (ssize_t)want) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		if (crc32c(0, buf, want) != rg.crcs[o / CHUNK]) {
			rc = -EIO;
			break;
		}
		crc = crc32c(crc, buf, want);
		o += want;
	}
	struct stat st;
	if (!rc && (fstat(fd, &st) < 0 || (uint64_t)st.st_size != size))
		rc = -EIO;
	if (rc) {
		snprintf(err, err_len, "posix: verification of %s failed (size or CRC-32C differs)",
			 tmp);
		goto out;
	}
	fchmod(fd, meta ? (meta->mode & 0777) | 0600 : 0600);
	if (rename(tmp, f) < 0) { /* still open: the lock covers the temporary to the end */
		rc = -errno;
		snprintf(err, err_len, "posix: rename to %s: %s", f, strerror(-rc));
		goto out;
	}
	close(fd);
	fd = -1;
	struct hsm_meta none;
	memset(&none, 0, sizeof(none));
	rc = write_meta(p, f, meta ? meta : &none, size, crc);
	if (!rc)
		rc = fsync_dir_of(f);
	if (rc)
		snprintf(err, err_len, "posix: writing the metadata of %s: %s", f, strerror(-rc));
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		unlink(tmp);
	free(rg.crcs);
	free(buf);
	return rc;
}

static int posix_get(void *priv, const char *path, hsm_write_fn wr, void *wr_arg,
		     struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg,
		     char *err, size_t err_len)
{
	struct posix *p = priv;
	char f[NACRE_PATH_MAX + 64];
	struct hsm_meta m;
	uint32_t want_crc = 0, crc = 0;
	int has_crc = 0;
	struct ranges rg;
	memset(&rg, 0, sizeof(rg));
	int rc = full_path(p, path, f, sizeof(f));
	if (!rc)
		rc = stat_file(f, &m, &want_crc, &has_crc);
	if (rc) {
		snprintf(err, err_len, "posix: %s: %s", f, strerror(-rc));
		return rc;
	}
	int fd = open(f, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, err_len, "posix: open %s: %s", f, strerror(-rc));
		return rc;
	}
	/* one pass: each range's CRC-32C is taken as it is read, and they are combined into
	 * the whole file's afterwards. A mismatch fails the restore after the data went to
	 * nacre; that is safe, as the coordinator swaps the file to the restored objects only
	 * when the restore succeeds (and destroys them otherwise). */
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	rg.size = m.size;
	rg.err = err;
	rg.err_len = err_len;
	rg.one = get_one;
	rg.fd = fd;
	rg.wr = wr;
	rg.io_arg = wr_arg;
	rg.progress = progress;
	rg.progress_arg = progress_arg;
	rg.what = "restore";
	rg.crcs = malloc(sizeof(*rg.crcs) * (size_t)(m.size / CHUNK + 1));
	if (!rg.crcs) {
		rc = -ENOMEM;
		snprintf(err, err_len, "posix: out of memory");
		goto out;
	}
	rc = run_ranges(&rg, p->threads);
	if (rc)
		goto out;
	for (uint64_t o = 0; o < m.size; o += CHUNK) {
		uint64_t len = m.size - o < CHUNK ? m.size - o : CHUNK;
		crc = crc32c_combine(crc, rg.crcs[o / CHUNK], len);
	}
	/* every range read in full; a file grown since the stat shows here */
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != m.size || (has_crc && crc != want_crc)) {
		rc = -EIO;
		snprintf(err, err_len, "posix: %s does not match its metadata (size or CRC-32C)", f);
		goto out;
	}
	if (meta)
		*meta = m;
out:
	close(fd);
	free(rg.crcs);
	return rc;
}

static int posix_stat(void *priv, const char *path, struct hsm_meta *meta, char *err,
		      size_t err_len)
{
	struct posix *p = priv;
	char f[NACRE_PATH_MAX + 64];
	uint32_t crc;
	int has_crc;
	int rc = full_path(p, path, f, sizeof(f));
	if (!rc)
		rc = stat_file(f, meta, &crc, &has_crc);
	if (rc && rc != -ENOENT)
		snprintf(err, err_len, "posix: %s: %s", f, strerror(-rc));
	return rc;
}

static int posix_remove(void *priv, const char *path, char *err, size_t err_len)
{
	struct posix *p = priv;
	char f[NACRE_PATH_MAX + 64], mp[NACRE_PATH_MAX + 96];
	int rc = full_path(p, path, f, sizeof(f));
	if (!rc)
		rc = meta_path(f, mp, sizeof(mp));
	if (!rc && unlink(f) < 0 && errno != ENOENT)
		rc = -errno;
	if (!rc && unlink(mp) < 0 && errno != ENOENT)
		rc = -errno;
	if (rc)
		snprintf(err, err_len, "posix: removing %s: %s", path, strerror(-rc));
	return rc;
}

static int is_internal(const char *name)
{
	size_t n = strlen(name), s = strlen(META_SUFFIX);
	return (name[0] == '.' && n > s && strcmp(name + n - s, META_SUFFIX) == 0) ||
	       strstr(name, TMP_MARK) != NULL;
}

/* Lists dir (rel is its path under the root, "" for the root). */
static int walk(struct posix *p, const char *rel, hsm_list_fn fn, void *arg, int depth)
{
	char d[NACRE_PATH_MAX + 64];
	snprintf(d, sizeof(d), "%s%s%s", p->root, rel[0] ? "/" : "", rel);
	if (depth > 256)
		return -ELOOP;
	DIR *dir = opendir(d);
	if (!dir)
		return -errno;
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(dir)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || is_internal(e->d_name))
			continue;
		char r[NACRE_PATH_MAX + 1], f[NACRE_PATH_MAX + 64];
		int w = snprintf(r, sizeof(r), "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
		if (w < 0 || (size_t)w >= sizeof(r))
			continue;
		if (full_path(p, r, f, sizeof(f)))
			continue;
		struct hsm_meta m;
		uint32_t crc;
		int has_crc;
		if (stat_file(f, &m, &crc, &has_crc))
			continue; /* neither file nor directory: not an archive object */
		rc = fn(arg, r, &m);
		if (!rc && S_ISDIR(m.mode))
			rc = walk(p, r, fn, arg, depth + 1);
	}
	closedir(dir);
	return rc;
}

static int posix_list(void *priv, hsm_list_fn fn, void *arg, char *err, size_t err_len)
{
	struct posix *p = priv;
	int rc = walk(p, "", fn, arg, 0);
	if (rc < 0)
		snprintf(err, err_len, "posix: listing %s: %s", p->root, strerror(-rc));
	return rc;
}

/* 1 if the temporary dfd/name is stale: see the top of the file. */
static int tmp_stale(const struct posix *p, int dfd, const char *name, time_t now,
		     unsigned grace_s)
{
	const char *mark = NULL;
	for (const char *c = name; (c = strstr(c, TMP_MARK)) != NULL; c++)
		mark = c; /* the last one: the name before it may hold the mark too */
	struct stat st;
	if (!mark || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return 0;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		int held = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
		close(fd);
		if (held)
			return 0; /* its writer is alive, wherever it runs */
	}
	if (now - st.st_mtime >= (time_t)grace_s)
		return 1;
	char host[12];
	int pid, end = 0;
	unsigned long seq;
	if (sscanf(mark + strlen(TMP_MARK), "%8[0-9a-f]-%d-%lu%n", host, &pid, &seq, &end) != 3 ||
	    mark[strlen(TMP_MARK) + (size_t)end] != 0 || strcmp(host, p->host) != 0 || pid <= 0 ||
	    pid == (int)getpid())
		return 0;
	return kill(pid, 0) < 0 && errno == ESRCH;
}

/* Removes stale temporaries under dfd (which it closes). Returns the count removed. */
static int clean_dir(const struct posix *p, int dfd, time_t now, unsigned grace_s, int depth)
{
	DIR *dir = fdopendir(dfd);
	int removed = 0;
	if (!dir) {
		close(dfd);
		return 0;
	}
	struct dirent *e;
	while ((e = readdir(dir)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (strstr(e->d_name, TMP_MARK)) {
			if (tmp_stale(p, dirfd(dir), e->d_name, now, grace_s) &&
			    unlinkat(dirfd(dir), e->d_name, 0) == 0)
				removed++;
			continue;
		}
		if (depth >= 256 || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		int sub = openat(dirfd(dir), e->d_name,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			removed += clean_dir(p, sub, now, grace_s, depth + 1);
	}
	closedir(dir);
	return removed;
}

static int posix_cleanup(void *priv, unsigned grace_s, char *err, size_t err_len)
{
	struct posix *p = priv;
	int dfd = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int rc = -errno;
		snprintf(err, err_len, "posix: cleaning %s: %s", p->root, strerror(-rc));
		return rc;
	}
	return clean_dir(p, dfd, time(NULL), grace_s, 0);
}

const struct hsm_backend_ops hsm_posix_ops = {
	.open = posix_open,
	.close = posix_close,
	.put = posix_put,
	.get = posix_get,
	.stat = posix_stat,
	.remove = posix_remove,
	.list = posix_list,
	.cleanup = posix_cleanup,
};
