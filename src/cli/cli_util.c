/* cli_util.c - helpers shared by the subcommands: messages, virtual xattrs, mount lookup,
 * stripe size parsing. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/util.h"
#include "nacre/nacre.h"
#include "nacre/nacre_vxattr.h"

const char *cli_prog = "nacre";

void cli_set_prog(const char *argv0)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL;

	base = base ? base + 1 : argv0;
	cli_prog = base && strcmp(base, "lfs") == 0 ? "lfs" : "nacre";
}

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

double cli_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cli_is_help(const char *arg)
{
	return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int cli_getxattr(const char *path, const char *name, char *buf, size_t len)
{
	if (len == 0)
		return -EINVAL;
	ssize_t n = getxattr(path, name, buf, len - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

int cli_mount_key_file(const char *root, char *out, size_t len)
{
	char text[4096];
	if (cli_getxattr(root, NACRE_VXATTR_CONNECT, text, sizeof(text)) < 0)
		return -1;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, "key_file=", 9) == 0 && line[9] &&
		    str_copy(out, line + 9, len) < len)
			return 0;
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

const char *cli_key_file_or(const char *given, const char *mount_key)
{
	const char *env = getenv("NACRE_KEY_FILE");
	if (given && given[0])
		return given;
	if (env && env[0])
		return env;
	return mount_key && mount_key[0] ? mount_key : NULL;
}

int cli_check_nacre(const char *path, char *fid, size_t fid_len)
{
	char buf[NACRE_FID_STR_MAX + 16];
	struct stat st;

	if (lstat(path, &st) < 0) {
		int err = errno;

		cli_err("cannot access %s: %s", path, strerror(err));
		return -err;
	}
	int n = cli_getxattr(path, NACRE_VXATTR_FID, buf, sizeof(buf));

	if (n < 0) {
		/* Another file system has no handler for our names (ENOTSUP) or no such
		 * attribute (ENODATA); both mean "not nacre". */
		if (n == -ENOTSUP || n == -ENODATA)
			cli_err("%s is not on a nacre file system", path);
		else
			cli_err("cannot read the FID of %s: %s", path, strerror(-n));
		return n;
	}
	buf[strcspn(buf, "\n")] = '\0';
	if (fid)
		str_copy(fid, buf, fid_len);
	return 0;
}

/* Directory part of p (absolute, no trailing '/'), in place; "/" stays "/". */
static void parent_dir(char *p)
{
	char *slash = strrchr(p, '/');

	if (!slash || slash == p)
		p[1] = '\0';
	else
		*slash = '\0';
}

int cli_mount_root(const char *path, char *root, size_t len)
{
	char cur[PATH_MAX];
	struct stat st, pst;

	if (!realpath(path, cur))
		return -errno;
	if (stat(cur, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		parent_dir(cur);
	/* Walk up while the parent is on the same device: the last one is the mount point. */
	while (strcmp(cur, "/") != 0) {
		char up[PATH_MAX];

		str_copy(up, cur, sizeof(up));
		parent_dir(up);
		if (stat(up, &pst) < 0 || pst.st_dev != st.st_dev)
			break;
		str_copy(cur, up, sizeof(cur));
	}
	if (str_copy(root, cur, len) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* /proc/self/mounts escapes space, tab, newline and backslash as \ooo. */
static void unescape_mount_field(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Returns the next space-separated field of *p (NUL-terminated in place), or NULL. */
static char *next_field(char **p)
{
	char *s = *p + strspn(*p, " \n");

	if (*s == '\0')
		return NULL;
	char *e = s + strcspn(s, " \n");

	if (*e)
		*e++ = '\0';
	*p = e;
	return s;
}

/* Calls fn for each line of /proc/self/mounts split into source, dir, type. Stops when fn
 * returns non-zero and returns that value; 0 at the end, -errno if unreadable. */
static int each_mount(int (*fn)(char *src, char *dir, const char *type, void *arg), void *arg)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *p = line;
		char *src = next_field(&p);
		char *dir = next_field(&p);
		char *type = next_field(&p);

		if (!src || !dir || !type)
			continue;
		unescape_mount_field(src);
		unescape_mount_field(dir);
		rc = fn(src, dir, type, arg);
		if (rc)
			break;
	}
	free(line);
	fclose(f);
	return rc;
}

struct list_ctx {
	struct cli_mount *out;
	int max;
	int n;
};

static int add_nacre_mount(char *src, char *dir, const char *type, void *arg)
{
	struct list_ctx *c = arg;

	if (strcmp(type, "fuse.nacre") != 0 && strcmp(type, "nacre") != 0)
		return 0;
	if (c->n >= c->max)
		return 1;
	str_copy(c->out[c->n].source, src, sizeof(c->out[c->n].source));
	str_copy(c->out[c->n].dir, dir, sizeof(c->out[c->n].dir));
	c->n++;
	return 0;
}

int cli_list_mounts(struct cli_mount *out, int max)
{
	struct list_ctx c = {out, max, 0};
	int rc = each_mount(add_nacre_mount, &c);

	return rc < 0 ? rc : c.n;
}

static int match_dir(char *src, char *dir, const char *type, void *arg)
{
	(void)src;
	(void)type;
	return strcmp(dir, (const char *)arg) == 0;
}

int cli_is_mounted(const char *dir)
{
	return each_mount(match_dir, (void *)dir) == 1;
}

int cli_each_root(int argc, char **argv, int first, int (*fn)(const char *root, void *arg),
		  void *arg)
{
	int rc = 0;

	if (first < argc) {
		for (int i = first; i < argc; i++) {
			char root[PATH_MAX];

			if (cli_check_nacre(argv[i], NULL, 0) < 0) {
				rc = 1;
				continue;
			}
			int r = cli_mount_root(argv[i], root, sizeof(root));

			if (r < 0) {
				cli_err("cannot find the mount point of %s: %s", argv[i],
					strerror(-r));
				rc = 1;
				continue;
			}
			rc |= fn(root, arg);
		}
		return rc;
	}

	struct cli_mount *m = calloc(CLI_MOUNTS_MAX, sizeof(*m));

	if (!m) {
		cli_err("out of memory");
		return 1;
	}
	int n = cli_list_mounts(m, CLI_MOUNTS_MAX);

	if (n < 0) {
		cli_err("cannot read /proc/self/mounts: %s", strerror(-n));
		rc = 1;
	} else if (n == 0) {
		cli_err("no nacre file system is mounted (mount one with nacre-mount, or start a "
			"test cluster with `nacre up --dir DIR`)");
		rc = 1;
	}
	for (int i = 0; i < n; i++)
		rc |= fn(m[i].dir, arg);
	free(m);
	return rc;
}

int cli_parse_stripe_size(const char *s, uint32_t *out, char *err, size_t err_len)
{
	uint64_t v;
	size_t n = strlen(s);

	if (n == 0 || parse_size(s, &v) < 0) {
		snprintf(err, err_len, "invalid stripe size '%s': use a number with K, M or G", s);
		return -EINVAL;
	}
	/* lfs compatibility: "-S 64" means 64 KiB, a bare number that small is never bytes. */
	if (s[n - 1] >= '0' && s[n - 1] <= '9' && v < 4096)
		v *= 1024;
	if (v == 0 || v % NACRE_STRIPE_SIZE_MIN != 0) {
		snprintf(err, err_len,
			 "invalid stripe size '%s': it must be a multiple of 64K (e.g. 64K, 1M)",
			 s);
		return -EINVAL;
	}
	if (v > UINT32_MAX - (NACRE_STRIPE_SIZE_MIN - 1)) {
		snprintf(err, err_len, "invalid stripe size '%s': it must be below 4G", s);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

int cli_abspath(const char *path, char *out, size_t len)
{
	char buf[PATH_MAX];
	size_t n = 0;

	if (path[0] == '/') {
		buf[0] = '\0';
	} else if (!getcwd(buf, sizeof(buf))) {
		return -errno;
	}
	n = strlen(buf);
	if (n == 1)
		n = 0; /* the working directory is "/" */
	for (const char *p = path; *p;) {
		size_t seg;

		while (*p == '/')
			p++;
		seg = strcspn(p, "/");
		if (seg == 0 || (seg == 1 && p[0] == '.')) {
			p += seg;
			continue;
		}
		if (seg == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && buf[n - 1] != '/')
				n--;
			if (n > 0)
				n--; /* and its '/' */
		} else {
			if (n + 1 + seg >= sizeof(buf))
				return -ENAMETOOLONG;
			buf[n++] = '/';
			memcpy(buf + n, p, seg);
			n += seg;
		}
		p += seg;
	}
	if (n == 0)
		buf[n++] = '/';
	buf[n] = '\0';
	return str_copy(out, buf, len) >= len ? -ENAMETOOLONG : 0;
}

/* 1 if path (absolute, normalized) is dir or below it. */
static int is_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return 1;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int cli_mount_of(const char *path, struct cli_mount *out)
{
	char abs[PATH_MAX];
	struct cli_mount *m = calloc(CLI_MOUNTS_MAX, sizeof(*m));
	int n, best = -1, rc;

	if (!m)
		return -ENOMEM;
	rc = cli_abspath(path, abs, sizeof(abs));
	n = rc < 0 ? rc : cli_list_mounts(m, CLI_MOUNTS_MAX);
	if (n < 0) {
		free(m);
		return n;
	}
	for (int i = 0; i < n; i++)
		if (is_below(abs, m[i].dir) &&
		    (best < 0 || strlen(m[i].dir) > strlen(m[best].dir)))
			best = i;
	if (best >= 0)
		*out = m[best];
	free(m);
	return best >= 0 ? 0 : -ENOENT;
}

/* The candidates of an ambiguous choice, "DIR (SOURCE), ..." into buf. */
static void list_candidates(const struct cli_mount *m, const int *idx, int n, char *buf,
			    size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && at + 1 < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%s (%s)", i ? ", " : "", m[idx[i]].dir,
				 m[idx[i]].source);
		at += w > 0 ? (size_t)w : 0;
	}
}

/* Picks among the mounts idx[0..n) of m: the only one, or the one the working directory
 * is in. Returns its index in m, or -1 if none of them or several. */
static int pick_mount(const struct cli_mount *m, const int *idx, int n)
{
	struct cli_mount here;
	if (n == 1)
		return idx[0];
	if (cli_mount_of(".", &here) < 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (strcmp(m[idx[i]].dir, here.dir) == 0)
			return idx[i];
	return -1;
}

int cli_mount_by_name(const char *verb, const char *fsname, struct cli_mount *out)
{
	struct cli_mount *m = calloc(CLI_MOUNTS_MAX, sizeof(*m));
	int *idx = calloc(CLI_MOUNTS_MAX, sizeof(*idx));
	int n = m && idx ? cli_list_mounts(m, CLI_MOUNTS_MAX) : -ENOMEM, k = 0, rc = -1;
	char addr[NACRE_ADDR_LIST_MAX], fs[NACRE_FSNAME_MAX + 1], sub[NACRE_PATH_MAX + 1];
	char why[256], list[2048];

	char first[NACRE_ADDR_LIST_MAX] = "";
	int same = 1; /* every candidate mounts the same MDS: one file system, no choice */
	for (int i = 0; i < n; i++)
		if (nacre_parse_spec(m[i].source, addr, sizeof(addr), fs, sizeof(fs), sub,
				     sizeof(sub), why, sizeof(why)) == 0 &&
		    strcmp(fs, fsname) == 0) {
			if (!k)
				str_copy(first, addr, sizeof(first));
			same &= strcmp(first, addr) == 0;
			idx[k++] = i;
		}
	int at = k ? pick_mount(m, idx, k) : -1;
	if (at < 0 && k > 1 && same)
		at = idx[0];
	if (at >= 0) {
		*out = m[at];
		rc = 0;
	} else if (k > 1) {
		list_candidates(m, idx, k, list, sizeof(list));
		cli_err("%s: %d mounted file systems are called %s: %s; give a path on the one you "
			"mean, or run it inside it", verb, k, fsname, list);
	} else {
		rc = -ENOENT; /* the caller says what else the word could have been */
	}
	free(idx);
	free(m);
	return rc;
}

int cli_mount_default(const char *verb, struct cli_mount *out)
{
	struct cli_mount *m = calloc(CLI_MOUNTS_MAX, sizeof(*m));
	int *idx = calloc(CLI_MOUNTS_MAX, sizeof(*idx));
	int n = m && idx ? cli_list_mounts(m, CLI_MOUNTS_MAX) : -ENOMEM, rc = -1;
	char list[2048];

	for (int i = 0; i < n; i++)
		idx[i] = i;
	int at = n > 0 ? pick_mount(m, idx, n) : -1;
	if (at >= 0) {
		*out = m[at];
		rc = 0;
	} else if (n > 1) {
		list_candidates(m, idx, n, list, sizeof(list));
		cli_err("%s: %d nacre file systems are mounted: %s; give a path on the one you "
			"mean, or run it inside it", verb, n, list);
	} else {
		cli_err("%s: no nacre file system is mounted: give a path on one", verb);
	}
	free(idx);
	free(m);
	return rc;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1; /* strtoull would take a sign or leading space */
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}
