/* metrics_opts.c - the daemons' shared metrics options (see metrics_opts.h). */
#include <errno.h>
#include <stdio.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/metrics_opts.h"
#include "common/util.h"

int metrics_opts_handle(struct metrics_opts *o, int c, const char *arg, char *err,
			size_t err_len)
{
	int64_t v;

	switch (c) {
	case METRICS_OPT_ADDR:
		o->addr = arg;
		return 1;
	case METRICS_OPT_LOG:
		o->log = arg;
		return 1;
	case METRICS_OPT_INTERVAL:
		if (parse_i64(arg, 1, 86400, &v) < 0) {
			snprintf(err, err_len,
				 "--metrics-interval '%s' is not a number of seconds (1..86400)", arg);
			return -1;
		}
		o->interval_s = (int)v;
		return 1;
	default:
		return 0;
	}
}

int metrics_opts_start(const struct metrics_opts *o, const char *daemon, char *err,
		       size_t err_len)
{
	uint16_t port = 0;
	int rc;

	if (o->addr) {
		rc = metrics_http_start(o->addr, &port, err, err_len);
		if (rc < 0)
			return rc;
		LOG_INFO("metrics", "serving Prometheus metrics on %s (port %u)", o->addr, port);
	}
	if (o->log) {
		rc = metrics_log_start(o->log, daemon, o->interval_s, err, err_len);
		if (rc < 0) {
			metrics_http_stop();
			return rc;
		}
	}
	return 0;
}

void metrics_opts_stop(void)
{
	metrics_log_stop();
	metrics_http_stop();
}
