/* log.c - line-oriented logging to stderr, a file or a sink callback.
 *
 * A line is formatted completely into a stack buffer and handed out in one write(2), so
 * lines from different threads never interleave. */
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

#define LOG_LINE_MAX 2048
#define LOG_RATE_PER_SEC 10

int log_cur_level = LOG_LVL_INFO;

/* Protects the destination (sink, file) and the daemon name. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_daemon[32] = "nacre";
static void (*log_sink)(int level, const char *line, void *arg);
static void *log_sink_arg;
static int log_fd = -1; /* -1: stderr */

/* Ratelimit state of every call site shares one lock: it is only taken for lines that pass
 * the level check. */
static pthread_mutex_t rl_lock = PTHREAD_MUTEX_INITIALIZER;

void log_init(const char *daemon, enum log_level level)
{
	pthread_mutex_lock(&log_lock);
	str_copy(log_daemon, daemon && *daemon ? daemon : "nacre", sizeof(log_daemon));
	pthread_mutex_unlock(&log_lock);
	log_set_level(level);
}

int log_level_parse(const char *s, enum log_level *out)
{
	static const struct {
		const char *name;
		enum log_level lvl;
	} names[] = {
		{"err", LOG_LVL_ERR},   {"error", LOG_LVL_ERR},  {"warn", LOG_LVL_WARN},
		{"warning", LOG_LVL_WARN}, {"info", LOG_LVL_INFO}, {"debug", LOG_LVL_DEBUG},
	};

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (strcasecmp(s, names[i].name) == 0) {
			*out = names[i].lvl;
			return 0;
		}
	}
	return -EINVAL;
}

void log_set_level(enum log_level level)
{
	/* The LOG_* macros read log_cur_level without a lock; an atomic store keeps that
	 * read well-defined. */
	__atomic_store_n(&log_cur_level, (int)level, __ATOMIC_RELAXED);
}

void log_set_sink(void (*fn)(int level, const char *line, void *arg), void *arg)
{
	pthread_mutex_lock(&log_lock);
	log_sink = fn;
	log_sink_arg = arg;
	pthread_mutex_unlock(&log_lock);
}

int log_open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	int old;

	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&log_lock);
	old = log_fd;
	log_fd = fd;
	pthread_mutex_unlock(&log_lock);
	if (old >= 0)
		close(old);
	return 0;
}

static const char *level_name(int level)
{
	switch (level) {
	case LOG_LVL_ERR:
		return "ERR";
	case LOG_LVL_WARN:
		return "WARN";
	case LOG_LVL_INFO:
		return "INFO";
	case LOG_LVL_DEBUG:
		return "DEBUG";
	default:
		return level < LOG_LVL_ERR ? "CRIT" : "TRACE";
	}
}

/* Advances *pos past n formatted bytes, keeping *pos <= cap - 1 so the line stays NUL-terminated. */
static void line_add(size_t cap, size_t *pos, int n)
{
	if (n < 0)
		return;
	if ((size_t)n >= cap - *pos)
		*pos = cap - 1;
	else
		*pos += (size_t)n;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; /* nowhere left to report it */
		}
		p += w;
		n -= (size_t)w;
	}
}

/* The attribute lets the compiler check the va_list use (log.h declares it without). */
__attribute__((format(printf, 3, 0))) void log_vwrite(int level, const char *subsys,
						      const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX];
	size_t pos = 0;
	struct timespec ts;
	struct tm tm;
	void (*sink)(int, const char *, void *);
	void *sink_arg;
	int fd;

	if (level > __atomic_load_n(&log_cur_level, __ATOMIC_RELAXED))
		return;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	pos = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);

	pthread_mutex_lock(&log_lock);
	line_add(sizeof(line), &pos,
		 snprintf(line + pos, sizeof(line) - pos, ".%03ldZ %s[%ld] %s ",
			  ts.tv_nsec / 1000000L, log_daemon, (long)gettid(), level_name(level)));
	sink = log_sink;
	sink_arg = log_sink_arg;
	fd = log_fd >= 0 ? log_fd : STDERR_FILENO;
	if (subsys && *subsys)
		line_add(sizeof(line), &pos,
			 snprintf(line + pos, sizeof(line) - pos, "%s: ", subsys));
	line_add(sizeof(line), &pos, vsnprintf(line + pos, sizeof(line) - pos, fmt, ap));

	/* One line per call: drop a trailing newline the caller may have added. */
	while (pos > 0 && line[pos - 1] == '\n')
		line[--pos] = '\0';

	if (sink) {
		pthread_mutex_unlock(&log_lock);
		/* Outside the lock, so a sink that logs does not deadlock. */
		sink(level, line, sink_arg);
		return;
	}
	line[pos] = '\n';
	/* Under the lock so log_open_file() cannot close fd while it is in use. */
	write_all(fd, line, pos + 1);
	pthread_mutex_unlock(&log_lock);
}

void log_write(int level, const char *subsys, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(level, subsys, fmt, ap);
	va_end(ap);
}

int log_ratelimit_allow(struct log_ratelimit *rl)
{
	struct timespec ts;
	int suppressed = 0;
	int allow;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_lock(&rl_lock);
	if (rl->window != (long)ts.tv_sec) {
		suppressed = rl->suppressed;
		rl->window = (long)ts.tv_sec;
		rl->count = 0;
		rl->suppressed = 0;
	}
	allow = rl->count < LOG_RATE_PER_SEC;
	if (allow)
		rl->count++;
	else
		rl->suppressed++;
	pthread_mutex_unlock(&rl_lock);

	if (suppressed > 0)
		log_write(LOG_LVL_WARN, "log", "%d similar messages suppressed", suppressed);
	return allow;
}
