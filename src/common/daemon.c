/* daemon.c - the part of every daemon's main() that is the same (see daemon.h). */
#include "common/daemon.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

void daemon_log_opts_init(struct daemon_log_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->level = LOG_LVL_INFO;
}

int daemon_log_opts_handle(struct daemon_log_opts *o, int c, const char *arg, char *err,
			   size_t err_len)
{
	switch (c) {
	case DAEMON_OPT_LOG:
		o->file = arg;
		return 1;
	case DAEMON_OPT_LOG_LEVEL:
		if (log_level_parse(arg, &o->level)) {
			snprintf(err, err_len, "--log-level %s: expected err, warn, info or debug",
				 arg);
			return -1;
		}
		return 1;
	default:
		return 0;
	}
}

int daemon_log_start(const struct daemon_log_opts *o, const char *daemon, char *err,
		     size_t err_len)
{
	int rc;

	log_init(daemon, o->level);
	if (o->file && (rc = log_open_file(o->file))) {
		snprintf(err, err_len, "cannot open --log %s: %s", o->file, strerror(-rc));
		return rc;
	}
	return 0;
}

void daemon_stop_signals(void (*on_stop)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}
