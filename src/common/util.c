/* util.c - string copy, number parsing, time, fsname checks. */
#include "common/util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

size_t str_copy(char *dst, const char *src, size_t len)
{
	size_t n = strlen(src);

	if (len > 0) {
		size_t k = n < len - 1 ? n : len - 1;

		memcpy(dst, src, k);
		dst[k] = '\0';
	}
	return n;
}

int parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	/* strtoll would skip leading spaces and accept "+"; we want plain numbers only. */
	if (!s || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	const char *p = s;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		uint32_t d = (uint32_t)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if (*p != '\0' && p[1] != '\0')
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

struct nacre_time time_now(void)
{
	struct timespec ts;
	struct nacre_time t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t.sec = ts.tv_sec;
	t.nsec = (uint32_t)ts.tv_nsec;
	return t;
}

int fsname_valid(const char *s)
{
	size_t n;

	if (!s)
		return 0;
	for (n = 0; s[n]; n++) {
		char ch = s[n];

		if (n >= NACRE_FSNAME_MAX)
			return 0;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
			return 0;
	}
	return n > 0;
}

void time_after_ms(struct timespec *ts, clockid_t clock, int64_t ms)
{
	clock_gettime(clock, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

int str_is_key_name(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || strchr("._-@:", ch)))
			return 0;
	}
	return 1;
}

int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	if (str_copy(buf, path, sizeof(buf)) >= sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}
