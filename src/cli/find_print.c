/* find_print.c - the output of `nacre find`: paths (-print, -print0), -ls and --printf, as
 * lfs find and GNU find write them. */
#include "cli/find.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "common/util.h"
#include "nacre/nacre.h"

/* The path as find prints it: the starting point, then the relative path. */
static void put_path(FILE *f, const char *start, const struct nacre_find_entry *e)
{
	fputs(start, f);
	if (e->path[0]) {
		size_t n = strlen(start);
		if (n == 0 || start[n - 1] != '/')
			fputc('/', f);
		fputs(e->path, f);
	}
}

static void mode_string(uint32_t mode, char out[11])
{
	static const char types[] = "?pc?d?b?-?l?s???";
	out[0] = types[(mode & S_IFMT) >> 12];
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & S_IXOTH) ? 't' : 'T';
	out[10] = 0;
}

static void user_name(uint32_t uid, char *buf, size_t len)
{
	struct passwd *p = getpwuid(uid);
	if (p)
		str_copy(buf, p->pw_name, len);
	else
		snprintf(buf, len, "%u", uid);
}

static void group_name(uint32_t gid, char *buf, size_t len)
{
	struct group *g = getgrgid(gid);
	if (g)
		str_copy(buf, g->gr_name, len);
	else
		snprintf(buf, len, "%u", gid);
}

/* st_ino as nacre-mount gives it (the FID flattened as Lustre does) */
static uint64_t fid_ino(const struct nacre_fid *fid)
{
	uint64_t ino = (fid->seq << 24) + ((fid->seq >> 24) & 0xffffff0000ULL) + fid->oid;
	return ino ? ino : fid->oid;
}

/* GNU find's %t, %a, %c: "Fri Dec  4 17:02:26.3374409160 2026" */
static void put_time(FILE *f, const struct nacre_time *t)
{
	time_t s = (time_t)t->sec;
	struct tm tm;
	char a[64], b[16];
	localtime_r(&s, &tm);
	strftime(a, sizeof(a), "%a %b %e %H:%M:%S", &tm);
	strftime(b, sizeof(b), "%Y", &tm);
	fprintf(f, "%s.%09u0 %s", a, t->nsec, b);
}

static const char *base_of(const char *start, const struct nacre_find_entry *e, char *buf,
			   size_t len)
{
	const char *p = e->path[0] ? e->path : start;
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		n--;
	size_t b = n;
	while (b > 0 && p[b - 1] != '/')
		b--;
	if (n - b >= len)
		n = b + len - 1;
	memcpy(buf, p + b, n - b);
	buf[n - b] = 0;
	if (!buf[0])
		str_copy(buf, "/", len);
	return buf;
}

static void put_ls(FILE *f, const char *start, const struct nacre_find_entry *e, long long now)
{
	const struct nacre_attr *a = &e->attr;
	char mode[11], user[64], group[64], date[32];
	mode_string(a->mode, mode);
	user_name(a->uid, user, sizeof(user));
	group_name(a->gid, group, sizeof(group));
	time_t mt = (time_t)a->mtime.sec;
	struct tm tm;
	localtime_r(&mt, &tm);
	/* recent: within the past six months (half a Gregorian year), as ls and find */
	int recent = a->mtime.sec > now - 31556952 / 2 && a->mtime.sec <= now;
	strftime(date, sizeof(date), recent ? "%b %e %H:%M" : "%b %e  %Y", &tm);
	fprintf(f, "%9llu %6llu %s %3u %-8s %-8s ", (unsigned long long)fid_ino(&a->fid),
		(unsigned long long)((a->blocks + 1) / 2), mode, a->nlink, user, group);
	if (S_ISCHR(a->mode) || S_ISBLK(a->mode))
		fprintf(f, "%3u, %3u ", major(a->rdev), minor(a->rdev));
	else
		fprintf(f, "%8llu ", (unsigned long long)a->size);
	fprintf(f, "%s ", date);
	put_path(f, start, e);
	if (S_ISLNK(a->mode))
		fprintf(f, " -> %s", e->target);
	fputc('\n', f);
}

static uint32_t depth_of(const struct nacre_find_entry *e)
{
	if (!e->path[0])
		return 0;
	uint32_t d = 1;
	for (const char *p = e->path; *p; p++)
		d += *p == '/';
	return d;
}

static int type_letter(uint32_t mode)
{
	static const char types[] = "?pc?d?b?f?l?s???";
	return types[(mode & S_IFMT) >> 12];
}

/* One directive at fmt (after '%'); returns the bytes it took, 0 if unknown. With f NULL
 * it only checks. */
static size_t directive(FILE *f, const char *fmt, const char *start,
			const struct nacre_find_entry *e)
{
	const struct nacre_attr *a = e ? &e->attr : NULL;
	char buf[NACRE_NAME_MAX + 64];
	if (fmt[0] == 'L') {
		if (!strchr("FcSip", fmt[1]) || !fmt[1])
			return 0;
		if (!f)
			return 2;
		switch (fmt[1]) {
		case 'F':
			fputs(nacre_fid_format(&a->fid, buf, sizeof(buf)), f);
			break;
		case 'c':
			if (e->has_layout)
				fprintf(f, "%d", e->layout.stripe_count);
			break;
		case 'S':
			if (e->has_layout)
				fprintf(f, "%u", e->layout.stripe_size);
			break;
		case 'i':
			if (e->has_layout)
				fprintf(f, "%d", e->layout.nosts ? (int)e->layout.ost_idx[0]
								 : e->layout.stripe_offset);
			break;
		case 'p':
			break; /* nacre has no OST pools */
		}
		return 2;
	}
	if (!fmt[0] || !strchr("pfsuUgGmMtacnilyd%", fmt[0]))
		return 0;
	if (!f)
		return 1;
	switch (fmt[0]) {
	case 'p':
		put_path(f, start, e);
		break;
	case 'f':
		fputs(base_of(start, e, buf, sizeof(buf)), f);
		break;
	case 's':
		fprintf(f, "%llu", (unsigned long long)a->size);
		break;
	case 'u':
		user_name(a->uid, buf, sizeof(buf));
		fputs(buf, f);
		break;
	case 'U':
		fprintf(f, "%u", a->uid);
		break;
	case 'g':
		group_name(a->gid, buf, sizeof(buf));
		fputs(buf, f);
		break;
	case 'G':
		fprintf(f, "%u", a->gid);
		break;
	case 'm':
		fprintf(f, "%o", a->mode & 07777);
		break;
	case 'M':
		mode_string(a->mode, buf);
		fputs(buf, f);
		break;
	case 't':
		put_time(f, &a->mtime);
		break;
	case 'a':
		put_time(f, &a->atime);
		break;
	case 'c':
		put_time(f, &a->ctime);
		break;
	case 'n':
		fprintf(f, "%u", a->nlink);
		break;
	case 'i':
		fprintf(f, "%llu", (unsigned long long)fid_ino(&a->fid));
		break;
	case 'l':
		if (S_ISLNK(a->mode))
			fputs(e->target, f);
		break;
	case 'y':
		fputc(type_letter(a->mode), f);
		break;
	case 'd':
		fprintf(f, "%u", depth_of(e));
		break;
	case '%':
		fputc('%', f);
		break;
	}
	return 1;
}

static int escape(char c)
{
	switch (c) {
	case 'n': return '\n';
	case 't': return '\t';
	case '\\': return '\\';
	case '0': return '\0';
	case 'a': return '\a';
	case 'b': return '\b';
	case 'f': return '\f';
	case 'r': return '\r';
	case 'v': return '\v';
	default: return -1;
	}
}

int cli_find_check_format(const char *fmt, char *err, size_t len)
{
	for (const char *p = fmt; *p; p++) {
		if (*p == '\\') {
			if (escape(p[1]) < 0) {
				snprintf(err, len, "unknown escape '\\%c'", p[1] ? p[1] : ' ');
				return -EINVAL;
			}
			p++;
		} else if (*p == '%') {
			size_t n = directive(NULL, p + 1, NULL, NULL);
			if (!n) {
				snprintf(err, len, "unknown directive '%%%.2s' (see nacre find --help)",
					 p + 1);
				return -EINVAL;
			}
			p += n;
		}
	}
	return 0;
}

void cli_find_print(FILE *f, int out, const char *fmt, const char *start,
		    const struct nacre_find_entry *e, long long now)
{
	switch (out) {
	case FIND_OUT_PRINT0:
		put_path(f, start, e);
		fputc('\0', f);
		return;
	case FIND_OUT_LS:
		put_ls(f, start, e, now);
		return;
	case FIND_OUT_PRINTF:
		for (const char *p = fmt; *p; p++) {
			if (*p == '\\') {
				fputc(escape(p[1]), f);
				p++;
			} else if (*p == '%') {
				p += directive(f, p + 1, start, e);
			} else {
				fputc(*p, f);
			}
		}
		return;
	default:
		put_path(f, start, e);
		fputc('\n', f);
	}
}
