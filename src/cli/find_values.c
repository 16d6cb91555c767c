/* find_values.c - the values of `nacre find`'s options: numbers with units and signs, file
 * types, owners, modes, target lists, layouts, HSM states and -newerXY's references. */
#include "cli/find_values.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "common/util.h"

int find_parse_cmp(const char *s, const char *units, const uint64_t *mult, uint64_t def,
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

int find_parse_size(const char *s, struct nacre_find_cmp *c)
{
	c->up = 1;
	/* lfs's units: bytes without a suffix; c bytes, b 512-byte blocks, k M G T P E base 2
	 * (K too, as lfs) */
	static const uint64_t m[] = {1, 512, 1ull << 10, 1ull << 10, 1ull << 20, 1ull << 30,
				     1ull << 40, 1ull << 50, 1ull << 60};
	return find_parse_cmp(s, "cbkKMGTPE", m, 1, c);
}

int find_parse_time(const char *s, int minutes, struct nacre_find_cmp *c)
{
	/* lfs's suffixes: s m h d w y; days (minutes for -Xmin) without one */
	static const uint64_t m[] = {1, 60, 3600, 86400, 604800, 31536000};
	c->up = minutes != 0; /* GNU: -mmin +1 is more than 60 s, -mtime +1 at least 2 days */
	return find_parse_cmp(s, minutes ? NULL : "smhdwy", m, minutes ? 60 : 86400, c);
}

int find_parse_type(const char *s, uint32_t *mask)
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

int find_parse_user(const char *s, int group, uint32_t *out)
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

int find_parse_perm(const char *s, struct nacre_find_req *q)
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

int find_parse_targets(char *s, const char *tag, uint32_t *idx, uint32_t max, uint32_t *n)
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

int find_parse_reference(char y, const char *v, struct nacre_time *t)
{
	if (y != 't') {
		struct statx st;
		if (statx(AT_FDCWD, v, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME,
			  &st) < 0) {
			cli_err("find: cannot stat '%s' for -newer: %s", v, strerror(errno));
			return -1;
		}
		if (y == 'B' && !(st.stx_mask & STATX_BTIME)) {
			cli_err("find: the file system of '%s' does not give its birth time: give "
				"another reference (-newerBt DATE, -newerBm FILE)", v);
			return -1;
		}
		const struct statx_timestamp *ts = y == 'a'   ? &st.stx_atime
						   : y == 'c' ? &st.stx_ctime
						   : y == 'B' ? &st.stx_btime
							      : &st.stx_mtime;
		t->sec = ts->tv_sec;
		t->nsec = ts->tv_nsec;
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

int find_parse_layout(char *s, uint32_t *mask)
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

int find_parse_hsm(char *s, uint32_t *mask)
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

