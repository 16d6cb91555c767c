/* util.h - small helpers shared by every program: safe string copy, number parsing with
 * suffixes, time. Thread-safe. */
#ifndef NACRE_UTIL_H
#define NACRE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "nacre/nacre_types.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Copies src into dst (len bytes), always NUL-terminating. Returns strlen(src) so the caller
 * can detect truncation (>= len). */
size_t str_copy(char *dst, const char *src, size_t len);
/* 1 if s is 1..max bytes of letters, digits and "._-@:" (a key name, common/key.h). */
int str_is_key_name(const char *s, size_t max);
/* Parses a decimal integer (optionally negative) in [min, max]. 0 or -EINVAL/-ERANGE. */
int parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/* Parses a size with optional base-2 suffix K, M, G, T (k/m/g/t too). 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *out);
/* Current time (CLOCK_REALTIME). */
struct nacre_time time_now(void);
/* Checks a file system name: 1..8 of [A-Za-z0-9_-]. 1 if valid. */
int fsname_valid(const char *s);

/* mkdir -p: makes path and its missing parents (0755), path itself with mode. 0 or -errno
 * (-ENAMETOOLONG past PATH_MAX). */
int mkdir_p(const char *path, mode_t mode);

/* *ts = the time ms milliseconds from now on clock (CLOCK_REALTIME for a default
 * pthread_cond_timedwait, CLOCK_MONOTONIC for a condition variable set to it). */
void time_after_ms(struct timespec *ts, clockid_t clock, int64_t ms);

#endif
