/* log.h - one logging facility for every daemon and tool.
 *
 * Each line: timestamp, daemon, thread id, level, subsystem, message. The level is checked
 * before arguments are formatted. Peer-triggered warnings use LOG_RATELIMITED so a hostile or
 * broken peer cannot flood the log. libnacre never prints: log_set_sink() redirects lines to a
 * callback (nacre_log_fn). Thread-safe.
 */
#ifndef NACRE_LOG_H
#define NACRE_LOG_H

#include <stdarg.h>

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

/* Names the process in every line ("mds", "oss", "mount") and sets the level. Lines go to
 * stderr unless a sink is set. */
void log_init(const char *daemon, enum log_level level);
/* Parses "err|warn|info|debug"; returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
void log_set_level(enum log_level level);
/* Sends lines to fn instead of stderr (fn NULL = back to stderr). */
void log_set_sink(void (*fn)(int level, const char *line, void *arg), void *arg);
/* Appends lines to a file instead of stderr. Returns 0 or -errno. */
int log_open_file(const char *path);

extern int log_cur_level;

void log_write(int level, const char *subsys, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_vwrite(int level, const char *subsys, const char *fmt, va_list ap);

#define LOG_AT(lvl, subsys, ...)                                                            \
	do {                                                                                \
		if ((lvl) <= log_cur_level)                                                 \
			log_write((lvl), (subsys), __VA_ARGS__);                            \
	} while (0)
#define LOG_ERR(subsys, ...) LOG_AT(LOG_LVL_ERR, subsys, __VA_ARGS__)
#define LOG_WARN(subsys, ...) LOG_AT(LOG_LVL_WARN, subsys, __VA_ARGS__)
#define LOG_INFO(subsys, ...) LOG_AT(LOG_LVL_INFO, subsys, __VA_ARGS__)
#define LOG_DEBUG(subsys, ...) LOG_AT(LOG_LVL_DEBUG, subsys, __VA_ARGS__)

/* At most 10 lines per second per call site; the rest are counted and reported later. */
#define LOG_RATELIMITED(lvl, subsys, ...)                                                   \
	do {                                                                                \
		static struct log_ratelimit rl_;                                            \
		if ((lvl) <= log_cur_level && log_ratelimit_allow(&rl_))                    \
			log_write((lvl), (subsys), __VA_ARGS__);                            \
	} while (0)

struct log_ratelimit {
	long window; /* second of the current window */
	int count;
	int suppressed;
};
int log_ratelimit_allow(struct log_ratelimit *rl);

#endif
