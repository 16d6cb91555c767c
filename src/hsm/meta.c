/* meta.c - the Azure Managed Lustre metadata keys as text: permissions in octal (or
 * "rwxr-xr-x", or AzCopy's decimal st_mode), modtime as RFC 3339 UTC, AMLFS's
 * "2006-01-02 15:04:05 -0700", or a Unix time in s, ms, us or ns (AzCopy writes ns).
 * Writes them in one of three styles (backend.h, HSM_META_*). Shared by every backend. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "common/fid.h"
#include "common/util.h"
#include "hsm/backend.h"

void hsm_meta_format_mode(uint32_t mode, char *buf, size_t len)
{
	snprintf(buf, len, "%04o", mode & 07777);
}

/* "rwxr-xr-x" with s/S in the x slots of user and group and t/T in other's. */
static int parse_symbolic(const char *s, uint32_t *mode)
{
	static const uint32_t bits[9] = {0400, 0200, 0100, 040, 020, 010, 04, 02, 01};
	uint32_t m = 0;

	if (strlen(s) != 9)
		return -EINVAL;
	for (int i = 0; i < 9; i++) {
		char c = s[i], want = "rwxrwxrwx"[i];
		int xslot = i % 3 == 2;

		if (c == '-')
			continue;
		if (c == want) {
			m |= bits[i];
		} else if (xslot && i < 6 && (c == 's' || c == 'S')) {
			m |= i == 2 ? 04000u : 02000u;
			if (c == 's')
				m |= bits[i];
		} else if (xslot && i == 8 && (c == 't' || c == 'T')) {
			m |= 01000u;
			if (c == 't')
				m |= bits[i];
		} else {
			return -EINVAL;
		}
	}
	*mode = m;
	return 0;
}

int hsm_meta_parse_mode(const char *s, uint32_t *mode)
{
	char *end;
	unsigned long v;

	if (!s || !*s)
		return -EINVAL;
	/* AzCopy's posix style: the whole st_mode in decimal (33188 = 0100644); never four
	 * digits or fewer, which are octal permissions */
	if (s[0] >= '1' && s[0] <= '9' && strlen(s) > 4 && strspn(s, "0123456789") == strlen(s)) {
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || *end || v <= 07777 || v > 0177777)
			return -EINVAL;
		*mode = (uint32_t)v & 07777;
		return 0;
	}
	if (s[0] >= '0' && s[0] <= '7') {
		errno = 0;
		v = strtoul(s, &end, 8);
		if (errno || *end || v > 07777)
			return -EINVAL;
		*mode = (uint32_t)v;
		return 0;
	}
	return parse_symbolic(s, mode);
}

void hsm_meta_format_time(const struct nacre_time *t, char *buf, size_t len)
{
	struct tm tm;
	time_t sec = (time_t)t->sec;

	if (!gmtime_r(&sec, &tm)) {
		snprintf(buf, len, "%lld", (long long)t->sec);
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, t->nsec % 1000000000u);
}

/* Reads n decimal digits. */
static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -EINVAL;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

int hsm_meta_parse_time(const char *s, struct nacre_time *t)
{
	struct tm tm;
	const char *p = s;
	int y, mo, d, h, mi, se;

	if (!s || !*s)
		return -EINVAL;
	if (strspn(s, "0123456789") == strlen(s) || (s[0] == '-' && s[1] &&
						       strspn(s + 1, "0123456789") == strlen(s + 1))) {
		char *end;
		errno = 0;
		long long v = strtoll(s, &end, 10);
		if (errno || *end)
			return -EINVAL;
		/* seconds until the year 5138; beyond, the finer units AzCopy and others write */
		long long per_s = 1;
		if (llabs(v) >= 100000000000000000LL)
			per_s = 1000000000;
		else if (llabs(v) >= 100000000000000LL)
			per_s = 1000000;
		else if (llabs(v) >= 100000000000LL)
			per_s = 1000;
		long long sec = v / per_s, frac = v % per_s;
		if (frac < 0) {
			sec--;
			frac += per_s;
		}
		t->sec = sec;
		t->nsec = (uint32_t)(frac * (1000000000LL / per_s));
		return 0;
	}
	if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
	    digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
		return -EINVAL;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
	    digits(&p, 2, &se))
		return -EINVAL;
	uint32_t ns = 0;
	if (*p == '.') {
		int nd = 0;
		p++;
		while (*p >= '0' && *p <= '9') {
			if (nd < 9) {
				ns = ns * 10 + (uint32_t)(*p - '0');
				nd++;
			}
			p++;
		}
		if (nd == 0)
			return -EINVAL;
		while (nd++ < 9)
			ns *= 10;
	}
	long off = 0;
	while (*p == ' ')
		p++;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1, oh, om;
		if (digits(&p, 2, &oh))
			return -EINVAL;
		if (*p == ':')
			p++;
		if (digits(&p, 2, &om))
			return -EINVAL;
		off = sign * (oh * 3600L + om * 60L);
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return -EINVAL;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	t->sec = (int64_t)timegm(&tm) - off;
	t->nsec = ns;
	return 0;
}

int hsm_meta_style_parse(const char *s, int *style)
{
	static const char *const names[] = {"amlfs", "rfc3339", "azcopy"};
	for (int i = 0; i < 3; i++) {
		if (s && !strcmp(s, names[i])) {
			*style = i;
			return 0;
		}
	}
	return -EINVAL;
}

/* "2006-01-02 15:04:05[.NNNNNNNNN] +0000" */
static void format_amlfs_time(const struct nacre_time *t, char *buf, size_t len)
{
	struct tm tm;
	time_t sec = (time_t)t->sec;
	char frac[16] = "";

	if (!gmtime_r(&sec, &tm)) {
		snprintf(buf, len, "%lld", (long long)t->sec);
		return;
	}
	if (t->nsec % 1000000000u)
		snprintf(frac, sizeof(frac), ".%09u", t->nsec % 1000000000u);
	snprintf(buf, len, "%04d-%02d-%02d %02d:%02d:%02d%s +0000", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

int hsm_meta_each_key(const struct hsm_meta *meta, hsm_meta_key_fn fn, void *arg)
{
	char uid[16], gid[16], mode[24], mt[64];
	int az = meta->style == HSM_META_AZCOPY;
	int rc;

	snprintf(uid, sizeof(uid), "%u", meta->uid);
	snprintf(gid, sizeof(gid), "%u", meta->gid);
	if (az) {
		uint32_t type = (meta->mode & S_IFMT) ? (meta->mode & S_IFMT) : S_IFREG;
		snprintf(mode, sizeof(mode), "%u", type | (meta->mode & 07777));
		snprintf(mt, sizeof(mt), "%lld",
			 (long long)meta->mtime.sec * 1000000000LL + meta->mtime.nsec % 1000000000u);
	} else {
		hsm_meta_format_mode(meta->mode, mode, sizeof(mode));
		if (meta->style == HSM_META_RFC3339)
			hsm_meta_format_time(&meta->mtime, mt, sizeof(mt));
		else
			format_amlfs_time(&meta->mtime, mt, sizeof(mt));
	}
	if ((rc = fn(arg, az ? "posix_owner" : "owner", uid)) ||
	    (rc = fn(arg, az ? "posix_group" : "group", gid)) ||
	    (rc = fn(arg, "permissions", mode)))
		return rc;
	return fn(arg, "modtime", mt);
}

int hsm_meta_apply(struct hsm_meta *meta, const char *key, const char *value)
{
	int64_t v;

	/* Azure keeps the case a writer used; lemur's older names and AzCopy's posix style
	 * (posix_owner, posix-owner in older releases) are accepted too. */
	if (strcasecmp(key, "owner") == 0 || strcasecmp(key, "uid") == 0 ||
	    strcasecmp(key, "posix_owner") == 0 || strcasecmp(key, "posix-owner") == 0) {
		if (parse_i64(value, 0, UINT32_MAX, &v) == 0) {
			meta->uid = (uint32_t)v;
			meta->has_owner = 1;
		}
	} else if (strcasecmp(key, "group") == 0 || strcasecmp(key, "gid") == 0 ||
		   strcasecmp(key, "posix_group") == 0 || strcasecmp(key, "posix-group") == 0) {
		if (parse_i64(value, 0, UINT32_MAX, &v) == 0) {
			meta->gid = (uint32_t)v;
			meta->has_owner = 1;
		}
	} else if (strcasecmp(key, "permissions") == 0 || strcasecmp(key, "perm") == 0) {
		uint32_t mode;
		if (hsm_meta_parse_mode(value, &mode) == 0) {
			meta->mode = (meta->mode & ~07777u) | (mode & 07777);
			meta->has_owner = 1;
		}
	} else if (strcasecmp(key, "modtime") == 0) {
		struct nacre_time t;
		if (hsm_meta_parse_time(value, &t) == 0)
			meta->mtime = t;
	} else if (strcasecmp(key, "nacre_fid") == 0) {
		if (fid_parse(value, &meta->fid) == 0)
			meta->has_fid = 1;
	} else if (strcasecmp(key, "hdi_isfolder") == 0) {
		if (strcasecmp(value, "true") == 0) {
			meta->mode = (meta->mode & 07777) | S_IFDIR;
			return 1;
		}
	}
	return 0;
}
