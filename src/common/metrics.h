/* metrics.h - one registry of counters, gauges and histograms per process, rendered as
 * Prometheus text (served over HTTP by metrics_http.c) and as JSON lines (metrics_log.c).
 *
 * Metrics are created once (at start, or lazily on first use) and never freed while the
 * process runs; updates are lock-free atomics, so hot paths pay a few nanoseconds. Names
 * follow Prometheus conventions: nacre_<daemon>_<what>_<unit>[_total]. Thread-safe.
 */
#ifndef NACRE_METRICS_H
#define NACRE_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct metric;

enum metric_kind { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

/* Returns the metric with this name and labels, creating it on first call. labels is the
 * Prometheus label text without braces (`op="MDS_LOOKUP",target="OST0001"`) or "".
 * help is used by the first call for a name. Returns NULL only when out of memory (updates
 * on NULL are no-ops). */
struct metric *metrics_counter(const char *name, const char *labels, const char *help);
/* metrics_counter made on first use and kept in *slot (a static of the caller's), for
 * counters of code that runs in processes that may not want them. Thread-safe. */
struct metric *metrics_counter_once(struct metric **slot, const char *name, const char *help);
struct metric *metrics_gauge(const char *name, const char *labels, const char *help);
/* Latency histogram in seconds with fixed buckets from 50 us to 10 s. */
struct metric *metrics_histogram(const char *name, const char *labels, const char *help);
/* A gauge computed at render time by fn(arg) (free space, load average, queue depth). */
struct metric *metrics_gauge_fn(const char *name, const char *labels, const char *help,
				double (*fn)(void *arg), void *arg);
/* A counter kept elsewhere (e.g. an atomic in a target's stats), read by fn(arg). */
struct metric *metrics_counter_fn(const char *name, const char *labels, const char *help,
				  double (*fn)(void *arg), void *arg);

void metrics_add(struct metric *m, uint64_t v);     /* counters */
void metrics_set(struct metric *m, double v);       /* gauges */
void metrics_observe(struct metric *m, double secs); /* histograms */
double metrics_value(const struct metric *m);       /* counter or gauge value */

/* Process-wide facts every daemon exports: network bytes sent and received (the rpc layer
 * adds to these), and the free/total KiB the daemon reports as kbytesfree/kbytestotal
 * (Prometheus: nacre_kbytes_free, nacre_capacity_kbytes). */
struct metric *metrics_net_sent(void);
struct metric *metrics_net_recv(void);
/* Sets the callback that reports (free KiB, total KiB) for this daemon's storage. */
void metrics_set_space_fn(void (*fn)(void *arg, uint64_t *kb_free, uint64_t *kb_total),
			  void *arg);
void metrics_space(uint64_t *kb_free, uint64_t *kb_total);

/* Walks the registry in creation order (metrics are never removed). */
struct metric *metrics_first(void);
struct metric *metrics_next(const struct metric *m);
const char *metrics_name(const struct metric *m);
const char *metrics_labels(const struct metric *m);
enum metric_kind metrics_kind(const struct metric *m);

/* Renders every metric as Prometheus text exposition format into a malloc'd string
 * (caller frees). Returns NULL when out of memory. */
char *metrics_render_prometheus(void);
/* Renders one JSON object on one line (no newline): hostname, daemon, time (seconds since
 * the epoch), timestamp (ISO 8601 UTC), loadavg,
 * kbytesfree, kbytestotal, bytessend, bytesrecv, and every counter and gauge by name
 * (labels folded into the key). Caller frees. */
char *metrics_render_json(const char *daemon);

/* ---- export (library nacre_metrics_export: daemons and nacre-mount only) ---- */

/* Starts the HTTP endpoint on addr ("host:port", port 0 = ephemeral) serving GET /metrics.
 * Returns 0 and writes the bound port, or -errno with a sentence in err. */
int metrics_http_start(const char *addr, uint16_t *port, char *err, size_t err_len);
void metrics_http_stop(void);
/* Another page of that endpoint, added before it starts (at most 4): GET path[/NAME]
 * answers get(arg, "" or "/NAME")'s malloc'd text (NULL: 404); POST path[/NAME]/clear runs
 * clear(arg, "" or "/NAME") (-1: 404), from a loopback peer only (as lctl set_param runs on
 * the server itself; 403 from elsewhere). */
void metrics_http_page(const char *path, char *(*get)(void *arg, const char *rest),
		       int (*clear)(void *arg, const char *rest), void *arg);
/* Starts a thread making one JSON record every interval seconds: appended as a line to
 * path (NULL: no file), and queued for Log Analytics when metrics_azure runs. */
int metrics_log_start(const char *path, const char *daemon, int interval_s, char *err,
		      size_t err_len);
void metrics_log_stop(void);

#endif
