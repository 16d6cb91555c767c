/* find.c - `nacre find`: lfs find's options, evaluated on the MDS (FIND, through the mount's
 * NACRE_IOC_FIND ioctl on the start directory: nacre_find_ioctl), printed here as lfs find
 * prints them. */
#include "cli/find.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/util.h"
#include "nacre/nacre.h"

struct opts {
	struct nacre_find_req q; /* the predicates; each starting point's request copies it */
	int out;
	const char *fmt;
	const char *paths[64];
	int npaths;
	/* tested here, on the MDS's matches: -path (on the path as printed) and --mdt-index
	 * (nacre has one MDT, index 0: the test is the same for every entry) */
	const char *path_glob;
	int path_icase, path_neg;
	int none; /* --mdt-index without 0 (or ! with 0): nothing matches */
};

/* An option: its long name, its lfs short letter (0 none), whether it takes a value, and
 * the predicate it sets (0 for an action or an option that is not a test). */
struct opt {
	const char *name;
	char short_name;
	int arg;
	uint32_t pred;
};
enum { O_NONE = 0 };
/* options tested here (no MDS predicate bit) or that change nothing */
enum { OPT_PATH = 1u << 27, OPT_MDT_INDEX = 1u << 28, OPT_LAZY = 1u << 29, OPT_BTIME = 1u << 30 };
static const struct opt table[] = {
	{"name", 'n', 1, NACRE_FINDP_NAME},
	{"iname", 0, 1, NACRE_FINDP_NAME},
	{"type", 't', 1, NACRE_FINDP_TYPE},
	{"size", 's', 1, NACRE_FINDP_SIZE},
	{"atime", 'A', 1, NACRE_FINDP_ATIME},
	{"mtime", 'M', 1, NACRE_FINDP_MTIME},
	{"ctime", 'C', 1, NACRE_FINDP_CTIME},
	{"amin", 0, 1, NACRE_FINDP_ATIME},
	{"mmin", 0, 1, NACRE_FINDP_MTIME},
	{"cmin", 0, 1, NACRE_FINDP_CTIME},
	{"newer", 0, 1, NACRE_FINDP_NEWER},
	{"uid", 'u', 1, NACRE_FINDP_UID},
	{"user", 'U', 1, NACRE_FINDP_UID},
	{"gid", 'g', 1, NACRE_FINDP_GID},
	{"group", 'G', 1, NACRE_FINDP_GID},
	{"perm", 0, 1, NACRE_FINDP_PERM},
	{"maxdepth", 'D', 1, NACRE_FINDP_MAXDEPTH},
	{"mindepth", 0, 1, NACRE_FINDP_MINDEPTH},
	{"stripe-count", 'c', 1, NACRE_FINDP_STRIPE_COUNT},
	{"stripe_count", 0, 1, NACRE_FINDP_STRIPE_COUNT},
	{"stripe-size", 'S', 1, NACRE_FINDP_STRIPE_SIZE},
	{"stripe_size", 0, 1, NACRE_FINDP_STRIPE_SIZE},
	{"stripe-index", 'i', 1, NACRE_FINDP_OST},
	{"stripe_index", 0, 1, NACRE_FINDP_OST},
	{"ost", 'O', 1, NACRE_FINDP_OST},
	{"obd", 0, 1, NACRE_FINDP_OST},
	{"pool", 0, 1, NACRE_FINDP_POOL},
	{"layout", 'L', 1, NACRE_FINDP_LAYOUT},
	{"hsm-state", 0, 1, NACRE_FINDP_HSM},
	{"hsm_state", 0, 1, NACRE_FINDP_HSM},
	{"hsm", 0, 1, NACRE_FINDP_HSM},
	{"fid", 0, 1, NACRE_FINDP_FID},
	{"empty", 0, 0, NACRE_FINDP_EMPTY},
	{"links", 0, 1, NACRE_FINDP_LINKS},
	{"blocks", 'b', 1, NACRE_FINDP_BLOCKS},
	{"projid", 0, 1, NACRE_FINDP_PROJID},
	{"newerXY", 0, 1, NACRE_FINDP_NEWER_XY}, /* found by is_newer_xy, not by name */
	{"path", 0, 1, OPT_PATH},
	{"ipath", 0, 1, OPT_PATH},
	{"mdt-index", 'm', 1, OPT_MDT_INDEX},
	{"mdt_index", 0, 1, OPT_MDT_INDEX},
	{"mdt", 0, 1, OPT_MDT_INDEX},
	{"lazy", 'l', 0, OPT_LAZY},
	{"btime", 'B', 1, OPT_BTIME},
	{"Bmin", 0, 1, OPT_BTIME},
	{"print", 'P', 0, O_NONE},
	{"print0", '0', 0, O_NONE},
	{"ls", 0, 0, O_NONE},
	{"printf", 0, 1, O_NONE},
};

/* -newerXY: X and Y each one of a m c B (t for Y: a date) */
static int is_newer_xy(const char *n)
{
	return strncmp(n, "newer", 5) == 0 && n[5] && strchr("amcB", n[5]) && n[6] &&
	       strchr("amcBt", n[6]) && !n[7];
}

static const struct opt *lookup(const char *arg)
{
	if (arg[0] != '-' || !arg[1])
		return NULL;
	const char *n = arg + 1;
	if (n[0] == '-')
		n++;
	if (is_newer_xy(n)) {
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			if (table[i].pred == NACRE_FINDP_NEWER_XY)
				return &table[i];
	}
	else if (n[1] == 0) {
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			if (table[i].short_name == n[0])
				return &table[i];
		return NULL;
	}
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].name, n) == 0)
			return &table[i];
	return NULL;
}

/* [+-]N with an optional unit suffix from units (chars) and mult (their multipliers);
 * without a suffix the unit is def. */
static int parse_cmp(const char *s, const char *units, const uint64_t *mult, uint64_t def,
		     struct nacre_find_cmp *c)
{
	char buf[64];
	c->sign = 0;
	c->unit = def;
	if (*s == '+')
		c->sign = 1, s++;
	else if (*s == '-')
		c->sign = -1, s++;
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n + 1);
	c->unit = def;
	if (units && n > 1 && !(buf[n - 1] >= '0' && buf[n - 1] <= '9')) {
		const char *u = strchr(units, buf[n - 1]);
		if (!u)
			return -1;
		c->unit = mult[u - units];
		buf[n - 1] = 0;
	}
	return cli_parse_u64(buf, &c->value);
}

static int find_parse_size(const char *s, struct nacre_find_cmp *c)
{
	c->up = 1;
	/* lfs's units: bytes without a suffix; c bytes, b 512-byte blocks, k M G T P E base 2
	 * (K too, as lfs) */
	static const uint64_t m[] = {1, 512, 1ull << 10, 1ull << 10, 1ull << 20, 1ull << 30,
				     1ull << 40, 1ull << 50, 1ull << 60};
	return parse_cmp(s, "cbkKMGTPE", m, 1, c);
}

static int find_parse_time(const char *s, int minutes, struct nacre_find_cmp *c)
{
	/* lfs's suffixes: s m h d w y; days (minutes for -Xmin) without one */
	static const uint64_t m[] = {1, 60, 3600, 86400, 604800, 31536000};
	c->up = minutes != 0; /* GNU: -mmin +1 is more than 60 s, -mtime +1 at least 2 days */
	return parse_cmp(s, minutes ? NULL : "smhdwy", m, minutes ? 60 : 86400, c);
}

static int parse_type(const char *s, uint32_t *mask)
{
	*mask = 0;
	for (; *s; s++) {
		uint32_t t;
		switch (*s) {
		case 'f': t = S_IFREG; break;
		case 'd': t = S_IFDIR; break;
		case 'l': t = S_IFLNK; break;
		case 'p': t = S_IFIFO; break;
		case 's': t = S_IFSOCK; break;
		case 'b': t = S_IFBLK; break;
		case 'c': t = S_IFCHR; break;
		default: return -1;
		}
		*mask |= 1u << (t >> 12);
		if (s[1] == ',' && s[2])
			s++;
		else if (s[1])
			return -1;
	}
	return *mask ? 0 : -1;
}

static int parse_user(const char *s, int group, uint32_t *out)
{
	uint64_t v;
	if (cli_parse_u64(s, &v) == 0 && v <= UINT32_MAX) {
		*out = (uint32_t)v;
		return 0;
	}
	if (group) {
		struct group *g = getgrnam(s);
		if (!g)
			return -1;
		*out = g->gr_gid;
	} else {
		struct passwd *p = getpwnam(s);
		if (!p)
			return -1;
		*out = p->pw_uid;
	}
	return 0;
}

static int parse_perm(const char *s, struct nacre_find_req *q)
{
	q->perm_kind = NACRE_FIND_PERM_EXACT;
	if (*s == '-')
		q->perm_kind = NACRE_FIND_PERM_ALL, s++;
	else if (*s == '/')
		q->perm_kind = NACRE_FIND_PERM_ANY, s++;
	char *end;
	if (!*s)
		return -1;
	errno = 0;
	unsigned long v = strtoul(s, &end, 8);
	if (errno || *end || v > 07777)
		return -1;
	q->perm = (uint32_t)v;
	return 0;
}

/* The next comma-separated item of *s (cut in place), or NULL at the end; empty items are
 * skipped. */
static char *next_item(char **s)
{
	while (**s == ',')
		(*s)++;
	if (!**s)
		return NULL;
	char *t = *s, *c = strchr(t, ',');
	if (c) {
		*c = 0;
		*s = c + 1;
	} else {
		*s += strlen(t);
	}
	return t;
}

/* "1,3,fsname-OST0004,5-6" (tag "-OST") into idx (at most max; *n of them) */
static int parse_targets(char *s, const char *tag, uint32_t *idx, uint32_t max, uint32_t *n)
{
	size_t tl = strlen(tag);
	for (char *t = next_item(&s); t; t = next_item(&s)) {
		char *ost = strstr(t, tag);
		uint64_t a, b;
		if (ost) {
			char *end;
			errno = 0;
			unsigned long v = strtoul(ost + tl, &end, 16);
			if (errno || end == ost + tl || (*end && strcmp(end, "_UUID") != 0))
				return -1;
			a = b = v;
		} else {
			char *dash = strchr(t, '-');
			if (dash)
				*dash = 0;
			if (cli_parse_u64(t, &a) || (dash ? cli_parse_u64(dash + 1, &b) : (b = a, 0)) || b < a)
				return -1;
		}
		for (uint64_t i = a; i <= b; i++) {
			if (*n >= max || i > UINT32_MAX)
				return -1;
			idx[(*n)++] = (uint32_t)i;
		}
	}
	return *n ? 0 : -1;
}

/* --mdt-index LIST: nacre's one MDT is index 0, so the test holds for every entry or none */
static int parse_mdt_index(char *s, struct opts *op, int neg)
{
	uint32_t idx[NACRE_FIND_OSTS_MAX], n = 0;
	if (parse_targets(s, "-MDT", idx, NACRE_FIND_OSTS_MAX, &n))
		return -1;
	int has0 = 0;
	for (uint32_t i = 0; i < n; i++)
		has0 |= idx[i] == 0;
	if (has0 == neg)
		op->none = 1;
	return 0;
}

/* -newerXY's reference: Y's time of the file v, or for t the date v (local time:
 * YYYY-MM-DD[ HH:MM[:SS]], with T for the space too, or @SECONDS) */
static int newer_reference(char y, const char *v, struct nacre_time *t)
{
	if (y != 't') {
		struct stat st;
		if (lstat(v, &st) < 0) {
			cli_err("find: cannot stat '%s' for -newer: %s", v, strerror(errno));
			return -1;
		}
		const struct timespec *ts = y == 'a' ? &st.st_atim : y == 'c' ? &st.st_ctim
									      : &st.st_mtim;
		t->sec = ts->tv_sec;
		t->nsec = (uint32_t)ts->tv_nsec;
		return 0;
	}
	uint64_t secs;
	if (v[0] == '@' && cli_parse_u64(v + 1, &secs) == 0 && secs <= INT64_MAX) {
		t->sec = (int64_t)secs;
		t->nsec = 0;
		return 0;
	}
	static const char *const formats[] = {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S",
					       "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct tm tm;
		memset(&tm, 0, sizeof(tm));
		const char *end = strptime(v, formats[i], &tm);
		if (end && !*end) {
			tm.tm_isdst = -1;
			time_t when = mktime(&tm);
			if (when == (time_t)-1)
				break;
			t->sec = when;
			t->nsec = 0;
			return 0;
		}
	}
	cli_err("find: invalid date '%s': give YYYY-MM-DD[ HH:MM[:SS]] (local time) or "
		"@SECONDS", v);
	return -1;
}

/* One -newerXY test (name the option as typed, without its dashes); neg from a '!' */
static int add_newer_xy(struct nacre_find_req *q, const char *name, const char *v, int neg)
{
	char x = name[5], y = name[6];
	if (x == 'B' || y == 'B') {
		cli_err("find: -%s: nacre keeps no birth time (use a, m or c)", name);
		return -1;
	}
	if (q->nnewer == NACRE_FIND_NEWER_MAX) {
		cli_err("find: at most %u -newerXY tests", NACRE_FIND_NEWER_MAX);
		return -1;
	}
	struct nacre_find_newer *n = &q->newer_xy[q->nnewer];
	n->which = x == 'a' ? NACRE_FIND_TIME_ATIME
		   : x == 'c' ? NACRE_FIND_TIME_CTIME
			      : NACRE_FIND_TIME_MTIME;
	n->neg = (uint8_t)neg;
	if (newer_reference(y, v, &n->t) < 0)
		return -1;
	q->nnewer++;
	return 0;
}

static int parse_layout(char *s, uint32_t *mask)
{
	*mask = 0;
	for (char *t = next_item(&s); t; t = next_item(&s)) {
		if (strcmp(t, "raid0") == 0)
			*mask |= NACRE_FIND_LAYOUT_RAID0;
		else if (strcmp(t, "released") == 0)
			*mask |= NACRE_FIND_LAYOUT_RELEASED;
		else if (strcmp(t, "mdt") == 0 || strcmp(t, "dom") == 0)
			*mask |= NACRE_FIND_LAYOUT_MDT;
		else
			return -1;
	}
	return *mask ? 0 : -1;
}

static int parse_hsm(char *s, uint32_t *mask)
{
	static const struct {
		const char *n;
		uint32_t bit;
	} st[] = {{"exists", NACRE_HS_EXISTS},	   {"dirty", NACRE_HS_DIRTY},
		  {"released", NACRE_HS_RELEASED}, {"archived", NACRE_HS_ARCHIVED},
		  {"norelease", NACRE_HS_NORELEASE}, {"noarchive", NACRE_HS_NOARCHIVE},
		  {"lost", NACRE_HS_LOST}};
	*mask = 0;
	for (char *t = next_item(&s); t; t = next_item(&s)) {
		size_t i;
		for (i = 0; i < sizeof(st) / sizeof(st[0]); i++)
			if (strcmp(t, st[i].n) == 0)
				break;
		if (i == sizeof(st) / sizeof(st[0]))
			return -1;
		*mask |= st[i].bit;
	}
	return *mask ? 0 : -1;
}

static int bad_value(const struct opt *o, const char *v, const char *what)
{
	cli_err("find: invalid value '%s' for --%s: %s", v, o->name, what);
	return -1;
}

/* Sets the predicate of option o from its value v. */
static int set_pred(struct opts *op, const struct opt *o, const char *v)
{
	struct nacre_find_req *q = &op->q;
	char tmp[4096] = "";
	if (v && str_copy(tmp, v, sizeof(tmp)) >= sizeof(tmp))
		return bad_value(o, v, "too long");
	const char *n = o->name;
	switch (o->pred) {
	case NACRE_FINDP_NAME:
		if (strlen(v) > NACRE_FIND_GLOB_MAX)
			return bad_value(o, v, "a pattern is at most 1024 bytes");
		str_copy(q->name, v, sizeof(q->name));
		q->name_icase = strcmp(n, "iname") == 0;
		return 0;
	case NACRE_FINDP_TYPE:
		return parse_type(v, &q->types) ? bad_value(o, v, "give letters of f d l p s b c") : 0;
	case NACRE_FINDP_SIZE:
		return find_parse_size(v, &q->size)
			       ? bad_value(o, v, "[+-]N with a unit of c b k M G T P E (bytes without)")
			       : 0;
	case NACRE_FINDP_ATIME:
	case NACRE_FINDP_MTIME:
	case NACRE_FINDP_CTIME: {
		struct nacre_find_cmp *c = o->pred == NACRE_FINDP_ATIME	? &q->atime
					  : o->pred == NACRE_FINDP_MTIME ? &q->mtime
									: &q->ctime;
		int minutes = strstr(n, "min") != NULL;
		return find_parse_time(v, minutes, c)
			       ? bad_value(o, v, minutes ? "[+-]N minutes"
							 : "[+-]N days, or a unit of s m h d w y")
			       : 0;
	}
	case NACRE_FINDP_NEWER: {
		struct stat st;
		if (lstat(v, &st) < 0) {
			cli_err("find: cannot stat '%s' for --newer: %s", v, strerror(errno));
			return -1;
		}
		q->newer.sec = st.st_mtim.tv_sec;
		q->newer.nsec = (uint32_t)st.st_mtim.tv_nsec;
		return 0;
	}
	case NACRE_FINDP_UID:
		return parse_user(v, 0, &q->uid) ? bad_value(o, v, "no such user") : 0;
	case NACRE_FINDP_GID:
		return parse_user(v, 1, &q->gid) ? bad_value(o, v, "no such group") : 0;
	case NACRE_FINDP_PERM:
		return parse_perm(v, q) ? bad_value(o, v, "an octal MODE, -MODE or /MODE") : 0;
	case NACRE_FINDP_MAXDEPTH:
	case NACRE_FINDP_MINDEPTH: {
		uint64_t d;
		if (cli_parse_u64(v, &d) || d > 65535)
			return bad_value(o, v, "a number of levels");
		if (o->pred == NACRE_FINDP_MAXDEPTH)
			q->maxdepth = (uint32_t)d;
		else
			q->mindepth = (uint32_t)d;
		return 0;
	}
	case NACRE_FINDP_STRIPE_COUNT: {
		static const uint64_t one[] = {1};
		return parse_cmp(v, NULL, one, 1, &q->stripe_count) ? bad_value(o, v, "[+-]N")
								     : 0;
	}
	case NACRE_FINDP_STRIPE_SIZE: {
		static const uint64_t m[] = {1ull << 10, 1ull << 10, 1ull << 20, 1ull << 30};
		return parse_cmp(v, "kKMG", m, 1, &q->stripe_size)
			       ? bad_value(o, v, "[+-]N with a unit of k M G")
			       : 0;
	}
	case NACRE_FINDP_OST:
		return parse_targets(tmp, "-OST", q->osts, NACRE_FIND_OSTS_MAX, &q->nosts)
			       ? bad_value(o, v, "OST indices or names, comma-separated")
			       : 0;
	case NACRE_FINDP_LINKS: {
		static const uint64_t one[] = {1};
		return parse_cmp(v, NULL, one, 1, &q->links) ? bad_value(o, v, "[+-]N") : 0;
	}
	case NACRE_FINDP_BLOCKS: {
		/* the space used: KiB without a suffix, b 512-byte blocks */
		static const uint64_t m[] = {512,	  1ull << 10, 1ull << 10, 1ull << 20,
					     1ull << 30, 1ull << 40, 1ull << 50, 1ull << 60};
		q->blocks.up = 1;
		return parse_cmp(v, "bkKMGTPE", m, 1024, &q->blocks)
			       ? bad_value(o, v, "[+-]N with a unit of b k M G T P E (KiB without)")
			       : 0;
	}
	case NACRE_FINDP_PROJID: {
		uint64_t id;
		if (cli_parse_u64(v, &id) || id > UINT32_MAX)
			return bad_value(o, v, "a project id");
		q->projid = (uint32_t)id;
		return 0;
	}
	case NACRE_FINDP_POOL:
		if (strlen(v) > NACRE_FIND_POOL_MAX)
			return bad_value(o, v, "a pool name is at most 15 bytes");
		str_copy(q->pool, v, sizeof(q->pool));
		return 0;
	case NACRE_FINDP_LAYOUT:
		return parse_layout(tmp, &q->layouts) ? bad_value(o, v, "raid0, released or mdt")
						      : 0;
	case NACRE_FINDP_HSM:
		return parse_hsm(tmp, &q->hsm)
			       ? bad_value(o, v, "exists, archived, released, dirty, lost, "
						 "noarchive, norelease (comma-separated)")
			       : 0;
	case NACRE_FINDP_FID: {
		const char *f = v;
		return nacre_fid_parse(f, &q->fid) < 0 ? bad_value(o, v, "a FID [0xSEQ:0xOID:0xVER]")
							: 0;
	}
	}
	return 0;
}

/* The options with no MDS predicate: a (as typed) is o, with the value v. */
static int here_or_none(struct opts *op, const struct opt *o, const char *a, const char *v,
			int neg)
{
	char tmp[4096];
	switch (o->pred) {
	case OPT_PATH:
		if (op->path_glob) {
			cli_err("find: '%s' given twice (or with -path / -ipath)", a);
			return -1;
		}
		op->path_glob = v;
		op->path_icase = strcmp(o->name, "ipath") == 0;
		op->path_neg = neg;
		return 0;
	case OPT_MDT_INDEX:
		if (str_copy(tmp, v, sizeof(tmp)) >= sizeof(tmp) || parse_mdt_index(tmp, op, neg))
			return bad_value(o, v, "MDT indices or names, comma-separated");
		return 0;
	case OPT_LAZY:
		return 0; /* sizes come from the MDS whether lazy or not: nothing to skip */
	default:
		cli_err("find: '%s': nacre keeps no birth time; test --ctime or --mtime", a);
		return -1;
	}
}

static int parse_args(int argc, char **argv, struct opts *op)
{
	int i = 1, neg = 0, outputs = 0;
	for (; i < argc && argv[i][0] != '-' && strcmp(argv[i], "!") != 0; i++) {
		if (op->npaths == (int)(sizeof(op->paths) / sizeof(op->paths[0]))) {
			cli_err("find: at most 64 starting points");
			return -1;
		}
		op->paths[op->npaths++] = argv[i];
	}
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "!") == 0 || strcmp(a, "--not") == 0 || strcmp(a, "-not") == 0) {
			neg = 1;
			continue;
		}
		const struct opt *o = lookup(a);
		if (!o) {
			if (a[0] != '-' && op->npaths < 64) {
				op->paths[op->npaths++] = a; /* lfs takes paths after options too */
				continue;
			}
			cli_err("find: unknown option '%s' (see nacre find --help)", a);
			return -1;
		}
		if (o->arg && i + 1 >= argc) {
			cli_err("find: option '%s' needs a value", a);
			return -1;
		}
		const char *v = o->arg ? argv[++i] : NULL;
		if (o->pred == O_NONE) {
			if (neg) {
				cli_err("find: '!' cannot negate the action '%s'", a);
				return -1;
			}
			outputs++;
			if (strcmp(o->name, "print") == 0)
				op->out = FIND_OUT_PRINT;
			else if (strcmp(o->name, "print0") == 0)
				op->out = FIND_OUT_PRINT0;
			else if (strcmp(o->name, "ls") == 0)
				op->out = FIND_OUT_LS;
			else {
				char err[160];
				if (cli_find_check_format(v, err, sizeof(err)) < 0) {
					cli_err("find: bad --printf format '%s': %s", v, err);
					return -1;
				}
				op->out = FIND_OUT_PRINTF;
				op->fmt = v;
			}
			continue;
		}
		if (neg && (o->pred == NACRE_FINDP_MAXDEPTH || o->pred == NACRE_FINDP_MINDEPTH ||
			    o->pred == OPT_LAZY)) {
			cli_err("find: '!' cannot negate '%s'", a);
			return -1;
		}
		if (o->pred >= OPT_PATH) {
			if (here_or_none(op, o, a, v, neg) < 0)
				return -1;
			neg = 0;
			continue;
		}
		if (o->pred == NACRE_FINDP_NEWER_XY) {
			if (add_newer_xy(&op->q, a + (a[1] == '-' ? 2 : 1), v, neg) < 0)
				return -1;
			op->q.preds |= o->pred;
			neg = 0;
			continue;
		}
		if (op->q.preds & o->pred) {
			cli_err("find: '%s' given twice (or with an option testing the same thing)",
				a);
			return -1;
		}
		if (set_pred(op, o, v) < 0)
			return -1;
		op->q.preds |= o->pred;
		if (neg)
			op->q.neg |= o->pred;
		neg = 0;
	}
	if (neg) {
		cli_err("find: '!' at the end negates nothing");
		return -1;
	}
	if (outputs > 1) {
		cli_err("find: give one of --print, --print0, -ls, --printf");
		return -1;
	}
	if (op->npaths == 0) {
		cli_err("find: no directory given");
		cli_usage(stderr, "find");
		return -1;
	}
	return 0;
}

/* The basename of a command-line path, as find names the starting point. */
static void start_name(const char *path, char *out, size_t len)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	size_t b = n;
	while (b > 0 && path[b - 1] != '/')
		b--;
	if (n - b >= len)
		n = b + len - 1;
	memcpy(out, path + b, n - b);
	out[n - b] = 0;
	if (!out[0])
		str_copy(out, "/", len);
}

/* -path: the glob against the entry's path as printed (PATH/REL; '/' is not special) */
static int path_matches(const struct opts *op, const char *path, const char *rel)
{
	char full[2 * PATH_MAX + 2];
	size_t n = strlen(path);
	snprintf(full, sizeof(full), "%s%s%s", path, !*rel || (n && path[n - 1] == '/') ? "" : "/",
		 rel);
	return fnmatch(op->path_glob, full, op->path_icase ? FNM_CASEFOLD : 0) == 0;
}

/* Prints one page's entries; 1 if one of them reported an error. */
static int print_page(const char *path, struct opts *op, const struct nacre_find_page *page,
		      long long now)
{
	int rc = 0;

	for (uint32_t i = 0; i < page->count; i++) {
		const struct nacre_find_entry *e = &page->entries[i];
		if (e->err) {
			fflush(stdout);
			if (e->path[0])
				cli_err("find: '%s%s%s': %s", path,
					path[strlen(path) - 1] == '/' ? "" : "/", e->path,
					strerror(-e->err));
			else
				cli_err("find: '%s': %s", path, strerror(-e->err));
			rc = 1;
			continue;
		}
		if (op->path_glob && path_matches(op, path, e->path) == op->path_neg)
			continue;
		cli_find_print(stdout, op->out, op->fmt, path, e, now);
	}
	return rc;
}

static int find_one(const char *path, struct opts *op)
{
	struct nacre_find_req *r = malloc(sizeof(*r));
	int rc = 0, fd;
	long long now = (long long)time(NULL);

	if (!r)
		return 1;
	*r = op->q;
	start_name(path, r->start_name, sizeof(r->start_name));
	struct stat st;
	if (lstat(path, &st) < 0) {
		cli_err("find: '%s': %s", path, strerror(errno));
		free(r);
		return 1;
	}
	if (op->none) { /* no entry is on an MDT of that list */
		free(r);
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		/* a file or a symlink (not followed, as find -P): its directory is asked about
		 * the entry */
		char dir[PATH_MAX];
		size_t n = str_copy(dir, path, sizeof(dir));
		while (n > 0 && dir[n - 1] != '/')
			n--;
		while (n > 1 && dir[n - 1] == '/')
			n--;
		if (n == 0)
			str_copy(dir, ".", sizeof(dir));
		else
			dir[n] = 0;
		r->start_entry = 1;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0) {
		cli_err("find: '%s': %s", path, strerror(errno));
		free(r);
		return 1;
	}
	r->max_bytes = 0; /* the most the mount's ioctl carries */
	memset(&r->cursor, 0, sizeof(r->cursor));
	for (;;) {
		struct nacre_find_page *page;
		int err = nacre_find_ioctl(fd, r, &page);
		if (page)
			rc |= print_page(path, op, page, now);
		if (err == -EMSGSIZE) {
			cli_err("find: the query does not fit in one request (shorten the pattern)");
		} else if (err == -EBADMSG) {
			cli_err("find: a malformed reply from the mount of '%s'", path);
		} else if (err == -ENOTTY) {
			cli_err("find: '%s' is not on a nacre file system (or its mount "
				"is too old for find)", path);
		} else if (err < 0) {
			cli_err("find: '%s': %s", path, strerror(-err));
		}
		if (err < 0 || page->eof) {
			nacre_find_page_free(page);
			rc |= err < 0;
			break;
		}
		r->cursor = page->next;
		nacre_find_page_free(page);
	}
	close(fd);
	free(r);
	return rc;
}

int cli_find(int argc, char **argv)
{
	struct opts *op = calloc(1, sizeof(*op));
	int rc = 0;

	if (!op) {
		rc = 1;
		goto out;
	}
	if (argc == 2 && cli_is_help(argv[1])) {
		cli_usage(stdout, "find");
		goto out;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	op->q.version = NACRE_FIND_VERSION;
	op->q.now.sec = ts.tv_sec;
	op->q.now.nsec = (uint32_t)ts.tv_nsec;
	if (parse_args(argc, argv, op) < 0) {
		rc = 1;
		goto out;
	}
	for (int i = 0; i < op->npaths; i++)
		rc |= find_one(op->paths[i], op);
	if (fflush(stdout) != 0)
		rc = 1;
out:
	free(op);
	return rc;
}
