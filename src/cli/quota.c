/* quota.c - `nacre quota` and `nacre setquota`: QUOTA requests through the mount's
 * NACRE_IOC_QUOTA ioctl with libnacre's nacre_quota_ioctl (docs/quota.md), printed as lfs
 * quota prints them. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "nacre/nacre.h"
#include "nacre/nacre_vxattr.h"

static const char *const type_name[3] = {"usr", "grp", "prj"};

/* One QUOTA through the mount of path (libnacre's nacre_quota_ioctl). On success rep holds
 * the reply, with its drift (CHECK) or targets (TARGETS) list for the caller to free with
 * nacre_quota_rep_fini; on failure, a message is printed and rep holds no list. */
static int quota_ioctl(const char *verb, const char *path, const struct nacre_quota_req *r,
		       struct nacre_quota_rep *rep)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;
		memset(rep, 0, sizeof(*rep));
		cli_err("%s: cannot open '%s': %s", verb, path, strerror(e));
		return -e;
	}
	int rc = nacre_quota_ioctl(fd, r, rep);
	close(fd);
	if (rc == -EBADMSG) {
		cli_err("%s: a malformed reply from the mount of '%s'", verb, path);
		return -EPROTO;
	}
	if (rc == -ENOTTY)
		cli_err("%s: '%s' is not on a nacre file system (or its mount is too old "
			"for quotas)", verb, path);
	else if (rc == -EPERM && r->op == NACRE_QUOTA_TARGETS)
		cli_err("%s: -v (the usage on each target) of an id not your own needs "
			"root", verb);
	else if (rc == -EPERM)
		cli_err("%s: only root may change quotas or recount them", verb);
	else if (rc == -EOPNOTSUPP)
		cli_err("%s: quotas are off on the MDS of '%s' (nacre-mds --quota off): "
			"start it with --quota on to count usage and enforce limits", verb,
			path);
	else if (rc)
		cli_err("%s: '%s': %s", verb, path, strerror(-rc));
	return rc;
}

/* -u/-g/-p and the id (a number or a name). */
static int parse_type(char opt, int *type)
{
	switch (opt) {
	case 'u': case 'U':
		*type = 0;
		return 0;
	case 'g': case 'G':
		*type = 1;
		return 0;
	case 'p': case 'P':
		*type = 2;
		return 0;
	}
	return -1;
}

static int parse_id(const char *verb, int type, const char *s, uint32_t *id, char *name,
		    size_t name_len)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s && !*end && !errno && v <= UINT32_MAX) {
		*id = (uint32_t)v;
		snprintf(name, name_len, "%s", s);
		if (type == 0) {
			struct passwd *pw = getpwuid(*id);
			if (pw)
				snprintf(name, name_len, "%s", pw->pw_name);
		} else if (type == 1) {
			struct group *gr = getgrgid(*id);
			if (gr)
				snprintf(name, name_len, "%s", gr->gr_name);
		}
		return 0;
	}
	if (type == 0) {
		struct passwd *pw = getpwnam(s);
		if (pw) {
			*id = pw->pw_uid;
			snprintf(name, name_len, "%s", s);
			return 0;
		}
		cli_err("%s: unknown user '%s': give a user name or a numeric uid", verb, s);
	} else if (type == 1) {
		struct group *gr = getgrnam(s);
		if (gr) {
			*id = gr->gr_gid;
			snprintf(name, name_len, "%s", s);
			return 0;
		}
		cli_err("%s: unknown group '%s': give a group name or a numeric gid", verb, s);
	} else {
		cli_err("%s: bad project id '%s': give a number", verb, s);
	}
	return -EINVAL;
}

/* A block limit in KiB: a number with an optional k, M, G, T or P suffix (base 2). */
static int parse_blocks(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno || *s == '-')
		return -EINVAL;
	switch (*end) {
	case '\0': case 'k': case 'K':
		break;
	case 'm': case 'M':
		shift = 10;
		break;
	case 'g': case 'G':
		shift = 20;
		break;
	case 't': case 'T':
		shift = 30;
		break;
	case 'p': case 'P':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1])
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

/* An inode limit: a number, or with a k, M, G, T or P suffix (base 2, as lfs). */
static int parse_count(const char *s, uint64_t *out)
{
	size_t n = strlen(s);
	uint64_t v;
	int rc = parse_blocks(s, &v);

	if (rc)
		return rc;
	if (n && (s[n - 1] < '0' || s[n - 1] > '9')) {
		if (v > (UINT64_MAX >> 10))
			return -ERANGE;
		v <<= 10;
	}
	*out = v;
	return 0;
}

/* Grace: seconds, or 1w2d3h4m5s. */
static int parse_grace(const char *s, uint64_t *out)
{
	uint64_t total = 0;
	const char *p = s;

	if (!*s)
		return -EINVAL;
	while (*p) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p || errno || *p == '-')
			return -EINVAL;
		uint64_t mul = 1;
		switch (*end) {
		case '\0':
			if (p != s)
				return -EINVAL; /* a bare number only alone */
			break;
		case 'w': mul = 604800; break;
		case 'd': mul = 86400; break;
		case 'h': mul = 3600; break;
		case 'm': mul = 60; break;
		case 's': mul = 1; break;
		default:
			return -EINVAL;
		}
		total += v * mul;
		p = *end ? end + 1 : end;
	}
	*out = total;
	return 0;
}

/* Seconds as lfs prints a duration: 1w2d3h4m5s, zero units left out ("0s" for none). */
static void sec2str(uint64_t sec, char *buf, size_t len)
{
	static const struct {
		char c;
		uint64_t n;
	} u[] = {{'w', 604800}, {'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		if (sec >= u[i].n) {
			int n = snprintf(buf + off, len - off, "%" PRIu64 "%c", sec / u[i].n, u[i].c);
			if (n < 0 || (size_t)n >= len - off)
				return;
			off += (size_t)n;
			sec %= u[i].n;
		}
	}
	if (!off)
		snprintf(buf, len, "0s");
}

static void kb2str(uint64_t kb, int h, char *buf, size_t len)
{
	if (!h)
		snprintf(buf, len, "%" PRIu64, kb);
	else if (kb >> 40)
		snprintf(buf, len, "%5.4gP", (double)kb / (double)(1ull << 40));
	else if (kb >> 30)
		snprintf(buf, len, "%5.4gT", (double)kb / (double)(1ull << 30));
	else if (kb >> 20)
		snprintf(buf, len, "%5.4gG", (double)kb / (double)(1ull << 20));
	else if (kb >> 10)
		snprintf(buf, len, "%5.4gM", (double)kb / (double)(1ull << 10));
	else
		snprintf(buf, len, "%" PRIu64 "k", kb);
}

/* over: 0 under, 1 at/over hard, 2 in grace, 3 grace ended */
static int over_of(uint64_t use, uint64_t soft, uint64_t hard, int64_t when, int64_t now)
{
	if (hard && use >= hard)
		return 1;
	if (soft && when)
		return when > now ? 2 : 3;
	return 0;
}

static void grace_left(int64_t when, int64_t now, char *buf, size_t len)
{
	if (when <= now)
		snprintf(buf, len, "none");
	else
		sec2str((uint64_t)(when - now), buf, len);
}

static void print_row(const char *fs, const struct nacre_quota_rep *q, int h)
{
	int64_t now = time(NULL);
	char n0[32], n1[32], n2[32], t[40];
	int bo = over_of(q->kbytes, q->bsoft, q->bhard, q->btime, now);
	int io = over_of(q->inodes, q->isoft, q->ihard, q->itime, now);

	if (strlen(fs) > 15)
		printf("%s\n%15s", fs, "");
	else
		printf("%15s", fs);
	kb2str(q->kbytes, h, n0, sizeof(n0));
	kb2str(q->bsoft, h, n1, sizeof(n1));
	kb2str(q->bhard, h, n2, sizeof(n2));
	grace_left(q->btime, now, t, sizeof(t));
	printf(" %7s%c %6s %7s %7s", n0, bo ? '*' : ' ', n1, n2, bo > 1 ? t : "-");
	snprintf(n0, sizeof(n0), "%" PRIu64, q->inodes);
	snprintf(n1, sizeof(n1), "%" PRIu64, q->isoft);
	snprintf(n2, sizeof(n2), "%" PRIu64, q->ihard);
	grace_left(q->itime, now, t, sizeof(t));
	printf(" %7s%c %6s %7s %7s\n", n0, io ? '*' : ' ', n1, n2, io > 1 ? t : "-");
}

/* lfs quota -v's lines: the MDT (its files; no blocks are charged there), each OST (the
 * id's objects on it), then the limits granted to targets, none in nacre (the MDS
 * enforces them all: docs/quota.md). */
static void print_targets(const char *root, const struct nacre_quota_rep *q, int h)
{
	const struct nacre_quota_target *t = q->targets;
	char fsname[64] = "nacre", name[96], kb[32], files[32];
	int n = cli_getxattr(root, NACRE_VXATTR_FSNAME, fsname, sizeof(fsname) - 1);

	if (n > 0)
		fsname[strcspn(fsname, "\n")] = '\0';
	snprintf(name, sizeof(name), "%s-MDT0000_UUID", fsname);
	kb2str(0, h, kb, sizeof(kb));
	snprintf(files, sizeof(files), "%" PRIu64, q->inodes);
	printf("%s\n%15s %7s  %6s %7s %7s %7s  %6s %7s %7s\n", name, "", kb, "-", h ? "0k" : "0",
	       "-", files, "-", "0", "-");
	for (uint32_t i = 0; i < q->count; i++) {
		snprintf(name, sizeof(name), "%s-OST%04x_UUID", fsname, t[i].ost_idx);
		kb2str(t[i].kbytes, h, kb, sizeof(kb));
		printf("%s\n%15s %7s  %6s %7s %7s %7s %7s %7s %7s\n", name, "", kb, "-",
		       h ? "0k" : "0", "-", "-", "-", "-", "-");
	}
	printf("Total allocated inode limit: 0, total allocated block limit: %s\n", h ? "0k" : "0");
}

static int show_one(const char *path, int type, const char *idarg, int h, int verbose);

int cli_quota(int argc, char **argv)
{
	struct nacre_quota_req r;
	struct nacre_quota_rep q;
	int h = 0, t = 0, check = 0, fix = 0, type = -1, dflt = 0, verbose = 0;
	const char *idarg = NULL, *path = NULL;

	memset(&r, 0, sizeof(r));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help")) {
			cli_usage(stdout, "quota");
			return 0;
		} else if (!strcmp(a, "-h")) {
			h = 1;
		} else if (!strcmp(a, "-v")) {
			verbose = 1;
		} else if (!strcmp(a, "-t")) {
			t = 1;
		} else if (!strcmp(a, "--check")) {
			check = 1;
		} else if (!strcmp(a, "--fix")) {
			fix = 1;
		} else if (a[0] == '-' && strchr("ugpUGP", a[1]) && !a[2]) {
			parse_type(a[1], &type);
			dflt = a[1] >= 'A' && a[1] <= 'Z';
			if (!t && !dflt && i + 2 < argc)
				idarg = argv[++i];
		} else if (a[0] == '-') {
			cli_err("quota: unknown option '%s'", a);
			cli_usage(stderr, "quota");
			return 1;
		} else if (!path) {
			path = a;
		} else {
			cli_err("quota: one PATH only ('%s' and '%s')", path, a);
			return 1;
		}
	}
	if (!path) {
		cli_err("quota: give the PATH of a nacre mount");
		cli_usage(stderr, "quota");
		return 1;
	}
	if (check) {
		r.op = NACRE_QUOTA_CHECK;
		r.valid = fix ? NACRE_QUOTA_V_FIX : 0;
		if (quota_ioctl("quota", path, &r, &q))
			return 1;
		const struct nacre_quota_drift *d = q.drift;
		for (uint32_t i = 0; i < q.count; i++)
			printf("%s %u: kbytes %" PRIu64 " counted %" PRIu64 ", files %" PRIu64
			       " counted %" PRIu64 "%s\n",
			       type_name[d[i].type], d[i].id, d[i].kbytes, d[i].count_kbytes,
			       d[i].inodes, d[i].count_inodes, fix ? " (fixed)" : "");
		printf("quota check: %u id%s with drift%s\n", q.count, q.count == 1 ? "" : "s",
		       q.count && fix ? ", fixed" : "");
		int drifted = q.count != 0;
		nacre_quota_rep_fini(&q);
		return drifted && !fix ? 1 : 0;
	}
	int type_given = type >= 0;
	if (type < 0)
		type = 0;
	r.type = (uint32_t)type;
	if (t || dflt) {
		r.op = NACRE_QUOTA_GETDEF;
		if (quota_ioctl("quota", path, &r, &q))
			return 1;
		if (t) {
			char b[40], in[40];
			sec2str(q.bgrace, b, sizeof(b));
			sec2str(q.igrace, in, sizeof(in));
			printf("Block grace time: %s; Inode grace time: %s\n", b, in);
			return 0;
		}
		char root[4096], n1[32], n2[32], g[32];
		if (cli_mount_root(path, root, sizeof(root)))
			snprintf(root, sizeof(root), "%s", path);
		printf("Disk default %s quota:\n", type_name[type]);
		printf("%15s %8s%8s%8s %8s%8s%8s\n", "Filesystem", "bquota", "blimit", "bgrace",
		       "iquota", "ilimit", "igrace");
		if (strlen(root) > 15)
			printf("%s\n%15s", root, "");
		else
			printf("%15s", root);
		kb2str(q.bsoft, h, n1, sizeof(n1));
		kb2str(q.bhard, h, n2, sizeof(n2));
		snprintf(g, sizeof(g), "%" PRIu64, q.bgrace);
		printf(" %6s %7s %7s", n1, n2, g);
		snprintf(n1, sizeof(n1), "%" PRIu64, q.isoft);
		snprintf(n2, sizeof(n2), "%" PRIu64, q.ihard);
		snprintf(g, sizeof(g), "%" PRIu64, q.igrace);
		printf(" %6s %7s %7s\n", n1, n2, g);
		return 0;
	}
	if (type_given)
		return show_one(path, type, idarg, h, verbose);
	/* lfs quota PATH: the caller's user and group */
	int rc = show_one(path, 0, NULL, h, verbose);
	return show_one(path, 1, NULL, h, verbose) || rc;
}

/* The table of one id (idarg NULL: the caller's uid or gid). 0 or 1. */
static int show_one(const char *path, int type, const char *idarg, int h, int verbose)
{
	struct nacre_quota_req r;
	struct nacre_quota_rep q;

	memset(&r, 0, sizeof(r));
	r.type = (uint32_t)type;
	if (type == 2 && !idarg) {
		cli_err("quota: -p needs a project id");
		return 1;
	}
	{
		char name[256];
		if (idarg) {
			if (parse_id("quota", type, idarg, &r.id, name, sizeof(name)))
				return 1;
		} else {
			char idtxt[16];
			r.id = type == 1 ? (uint32_t)getgid() : (uint32_t)getuid();
			snprintf(idtxt, sizeof(idtxt), "%u", r.id);
			parse_id("quota", type, idtxt, &r.id, name, sizeof(name));
		}
		r.op = verbose ? NACRE_QUOTA_TARGETS : NACRE_QUOTA_GET;
		if (quota_ioctl("quota", path, &r, &q))
			return 1;
		printf("Disk quotas for %s %s (%cid %u):\n", type_name[type], name,
		       type_name[type][0], r.id);
	}
	printf("%15s%8s %7s%8s%8s%8s %7s%8s%8s\n", "Filesystem", h ? "used" : "kbytes", "quota",
	       "limit", "grace", "files", "quota", "limit", "grace");
	char root[4096];
	if (cli_mount_root(path, root, sizeof(root)))
		snprintf(root, sizeof(root), "%s", path);
	print_row(root, &q, h);
	if (verbose)
		print_targets(root, &q, h);
	nacre_quota_rep_fini(&q);
	return 0;
}

int cli_setquota(int argc, char **argv)
{
	struct nacre_quota_req r;
	struct nacre_quota_rep q;
	int type = -1, t = 0, dflt = 0;
	const char *idarg = NULL, *path = NULL;
	char name[256];

	memset(&r, 0, sizeof(r));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			cli_usage(stdout, "setquota");
			return 0;
		}
		if (!strcmp(a, "-t")) {
			t = 1;
			continue;
		}
		if (a[0] == '-' && a[1] && !a[2] && strchr("ugpUGP", a[1])) {
			parse_type(a[1], &type);
			dflt = a[1] >= 'A' && a[1] <= 'Z';
			if (!t && !dflt) {
				if (i + 1 >= argc) {
					cli_err("setquota: %s needs a user, group or project id", a);
					return 1;
				}
				idarg = argv[++i];
			}
			continue;
		}
		if (a[0] == '-' && a[1] && !a[2] && strchr("bBiI", a[1])) {
			if (i + 1 >= argc) {
				cli_err("setquota: %s needs a value", a);
				return 1;
			}
			const char *v = argv[++i];
			int rc;
			if (t) {
				rc = parse_grace(v, a[1] == 'b' ? &r.bgrace : &r.igrace);
				if (rc || (a[1] != 'b' && a[1] != 'i')) {
					cli_err("setquota: bad grace time '%s' for %s: give seconds or "
						"a time like 1w2d3h4m5s", v, a);
					return 1;
				}
				r.valid |= a[1] == 'b' ? NACRE_QUOTA_V_BGRACE
						     : NACRE_QUOTA_V_IGRACE;
				continue;
			}
			switch (a[1]) {
			case 'b':
				rc = parse_blocks(v, &r.bsoft);
				r.valid |= NACRE_QUOTA_V_BSOFT;
				break;
			case 'B':
				rc = parse_blocks(v, &r.bhard);
				r.valid |= NACRE_QUOTA_V_BHARD;
				break;
			case 'i':
				rc = parse_count(v, &r.isoft);
				r.valid |= NACRE_QUOTA_V_ISOFT;
				break;
			default:
				rc = parse_count(v, &r.ihard);
				r.valid |= NACRE_QUOTA_V_IHARD;
				break;
			}
			if (rc) {
				cli_err("setquota: bad limit '%s' for %s: give a number with an "
					"optional k, M, G, T or P suffix", v, a);
				return 1;
			}
			continue;
		}
		if (a[0] == '-') {
			cli_err("setquota: unknown option '%s'", a);
			cli_usage(stderr, "setquota");
			return 1;
		}
		if (path) {
			cli_err("setquota: one PATH only ('%s' and '%s')", path, a);
			return 1;
		}
		path = a;
	}
	if (type < 0 || !path || !r.valid) {
		cli_err("setquota: give -u|-g|-p ID (or -U|-G|-P, or -t with a type), limits and "
			"the PATH of a nacre mount");
		cli_usage(stderr, "setquota");
		return 1;
	}
	r.type = (uint32_t)type;
	if (!t && r.bsoft && r.bhard && r.bsoft > r.bhard) {
		cli_err("setquota: block soft limit %" PRIu64 " is above the hard limit %" PRIu64,
			r.bsoft, r.bhard);
		return 1;
	}
	if (!t && r.isoft && r.ihard && r.isoft > r.ihard) {
		cli_err("setquota: inode soft limit %" PRIu64 " is above the hard limit %" PRIu64,
			r.isoft, r.ihard);
		return 1;
	}
	if (t) {
		r.op = NACRE_QUOTA_GRACE;
	} else if (dflt) {
		r.op = NACRE_QUOTA_DEFAULT;
	} else {
		r.op = NACRE_QUOTA_SET;
		if (parse_id("setquota", type, idarg, &r.id, name, sizeof(name)))
			return 1;
	}
	if (quota_ioctl("setquota", path, &r, &q))
		return 1;
	nacre_quota_rep_fini(&q);
	return 0;
}
