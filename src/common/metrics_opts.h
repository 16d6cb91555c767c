/* metrics_opts.h - the metrics options every daemon takes, parsed and acted on in one place:
 *   --metrics-addr HOST:PORT   Prometheus text at http://HOST:PORT/metrics
 *   --metrics-log FILE         one JSON line per interval appended to FILE
 *   --metrics-interval SECS    interval of those lines (default 60)
 * Part of nacre_metrics_export. */
#ifndef NACRE_METRICS_OPTS_H
#define NACRE_METRICS_OPTS_H

#include <getopt.h>
#include <stddef.h>

#define METRICS_OPT_ADDR 0x4d01
#define METRICS_OPT_LOG 0x4d02
#define METRICS_OPT_INTERVAL 0x4d03

/* Entries for a getopt_long table. */
#define METRICS_LONGOPTS                                                                    \
	{ "metrics-addr", required_argument, NULL, METRICS_OPT_ADDR },                      \
	{ "metrics-log", required_argument, NULL, METRICS_OPT_LOG },                        \
	{ "metrics-interval", required_argument, NULL, METRICS_OPT_INTERVAL }

#define METRICS_USAGE                                                                       \
	"  --metrics-addr HOST:PORT  serve Prometheus metrics at http://HOST:PORT/metrics\n"  \
	"  --metrics-log FILE        append one JSON line of metrics per interval to FILE\n"  \
	"  --metrics-interval SECS   interval of --metrics-log lines (default 60)\n"

struct metrics_opts {
	const char *addr;
	const char *log;
	int interval_s;
};

/* Handles getopt's result c if it is a metrics option: returns 1 (handled), 0 (not ours),
 * or -1 with a sentence in err (bad value). */
int metrics_opts_handle(struct metrics_opts *o, int c, const char *arg, char *err,
			size_t err_len);
/* Starts what the options ask for. Returns 0 or -errno with a sentence in err. */
int metrics_opts_start(const struct metrics_opts *o, const char *daemon, char *err,
		       size_t err_len);
void metrics_opts_stop(void);

#endif
