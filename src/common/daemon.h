/* daemon.h - what the main() of every nacre daemon shares (nacre-mds, nacre-oss,
 * nacre-copytool): the logging options and their start, and the stop signals. Each
 * daemon keeps its own options, usage and start-up in its main.c; the metrics options are
 * metrics_opts.h, the key key.h.
 *
 *   --log FILE         log lines go to FILE instead of stderr
 *   --log-level LEVEL  err, warn, info (default) or debug
 *
 * Called from main() before any thread starts.
 */
#ifndef NACRE_DAEMON_H
#define NACRE_DAEMON_H

#include <getopt.h>
#include <stddef.h>

#include "common/log.h"

#define DAEMON_OPT_LOG 0x4c01
#define DAEMON_OPT_LOG_LEVEL 0x4c02

/* Entries for a getopt_long table. */
#define DAEMON_LONGOPTS                                                                     \
	{ "log", required_argument, NULL, DAEMON_OPT_LOG },                                 \
	{ "log-level", required_argument, NULL, DAEMON_OPT_LOG_LEVEL }

struct daemon_log_opts {
	const char *file; /* NULL: stderr */
	enum log_level level;
};

/* Zeroes o, level info. */
void daemon_log_opts_init(struct daemon_log_opts *o);
/* Handles getopt's result c if it is a logging option: returns 1 (handled), 0 (not ours),
 * or -1 with a sentence in err (bad value). arg is kept: it must outlive o (argv does). */
int daemon_log_opts_handle(struct daemon_log_opts *o, int c, const char *arg, char *err,
			   size_t err_len);
/* Starts logging as daemon (the name on each line) at o's level, to o's file if any.
 * 0 or -errno with a sentence in err. */
int daemon_log_start(const struct daemon_log_opts *o, const char *daemon, char *err,
		     size_t err_len);
/* SIGTERM and SIGINT call on_stop (it must be async-signal-safe); SIGPIPE is ignored. */
void daemon_stop_signals(void (*on_stop)(int));

#endif
