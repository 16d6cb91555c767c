/* metrics_log.c - one JSON line of metrics every N seconds, appended to a file: the form
 * log-analytics agents ingest (hostname, loadavg, kbytesfree, bytessend, bytesrecv, ...);
 * and for the Log Analytics sink (metrics_azure.h), when it runs, one record per target. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/metrics.h"
#include "common/metrics_azure.h"
#include "common/util.h"

/* JSON key for a labelled series: name plus label values, e.g.
 * nacre_oss_write_bytes_total{target="OST0001"} -> nacre_oss_write_bytes_total.OST0001 */
static void json_key(const struct metric *m, char *out, size_t len)
{
	size_t o = str_copy(out, metrics_name(m), len);
	const char *p = metrics_labels(m);

	while (*p && o + 2 < len) {
		const char *q = strchr(p, '"');
		if (!q)
			break;
		const char *e = strchr(q + 1, '"');
		if (!e)
			break;
		out[o++] = '.';
		for (const char *c = q + 1; c < e && o + 1 < len; c++)
			out[o++] = *c;
		out[o] = '\0';
		p = e + 1;
	}
}

/* The host's figures every record starts with: hostname, daemon, time (seconds, with
 * epoch_time), timestamp (ISO 8601 UTC), loadavg, kbytesfree, kbytestotal, bytessend,
 * bytesrecv. NULL when out of memory. */
static cJSON *host_record(const char *daemon, int epoch_time)
{
	cJSON *o = cJSON_CreateObject();
	char host[256] = "", iso[32];
	double load[3] = { 0, 0, 0 };
	time_t now = time(NULL);
	struct tm tm;
	uint64_t kb_free, kb_total;

	if (!o)
		return NULL;
	gethostname(host, sizeof(host) - 1);
	getloadavg(load, 3);
	metrics_space(&kb_free, &kb_total);
	cJSON_AddStringToObject(o, "hostname", host);
	cJSON_AddStringToObject(o, "daemon", daemon ? daemon : "");
	if (epoch_time)
		cJSON_AddNumberToObject(o, "time", (double)now);
	gmtime_r(&now, &tm);
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_AddStringToObject(o, METRICS_AZURE_TIME_FIELD, iso);
	if (!epoch_time)
		cJSON_AddStringToObject(o, "TimeGenerated", iso); /* Log Analytics' column */
	cJSON_AddNumberToObject(o, "loadavg", load[0]);
	cJSON_AddNumberToObject(o, "kbytesfree", (double)kb_free);
	cJSON_AddNumberToObject(o, "kbytestotal", (double)kb_total);
	cJSON_AddNumberToObject(o, "bytessend", metrics_value(metrics_net_sent()));
	cJSON_AddNumberToObject(o, "bytesrecv", metrics_value(metrics_net_recv()));
	return o;
}

char *metrics_render_json(const char *daemon)
{
	cJSON *o = host_record(daemon, 1);
	char key[256];
	char *out;

	if (!o)
		return NULL;
	for (struct metric *m = metrics_first(); m; m = metrics_next(m)) {
		if (metrics_kind(m) == METRIC_HISTOGRAM)
			continue;
		json_key(m, key, sizeof(key));
		if (!cJSON_GetObjectItemCaseSensitive(o, key))
			cJSON_AddNumberToObject(o, key, metrics_value(m));
	}
	out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return out;
}

/* The value of label key in m's labels (`a="x",b="y"`), or "" when it has none. */
static void label_of(const struct metric *m, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);
	out[0] = '\0';
	for (const char *p = metrics_labels(m); p && *p;) {
		const char *q = strchr(p, '"'), *e = q ? strchr(q + 1, '"') : NULL;
		if (!e)
			return;
		if ((size_t)(q - p) == kl + 1 && strncmp(p, key, kl) == 0 && p[kl] == '=') {
			size_t n = (size_t)(e - q - 1) < len - 1 ? (size_t)(e - q - 1) : len - 1;
			memcpy(out, q + 1, n);
			out[n] = '\0';
			return;
		}
		p = e + 1;
		if (*p == ',')
			p++;
	}
}

/* A row's column for m: its name and its labels' values but the target's, joined by '_'
 * (a column name is letters, digits and '_'). */
static void row_key(const struct metric *m, char *out, size_t len)
{
	char full[256];
	json_key(m, full, sizeof(full));
	char target[128];
	label_of(m, "target", target, sizeof(target));
	size_t o = 0, tl = strlen(target);
	for (const char *c = full; *c && o + 1 < len; c++) {
		if (tl && c[0] == '.' && strncmp(c + 1, target, tl) == 0 &&
		    (c[1 + tl] == '.' || !c[1 + tl])) {
			c += tl; /* the target is its own column */
			continue;
		}
		out[o++] = isalnum((unsigned char)*c) || *c == '_' ? *c : '_';
	}
	out[o] = '\0';
}

/* A row's start: the host's figures, and the file system and target it is of. */
static cJSON *row_base(const char *daemon, const char *target)
{
	cJSON *o = host_record(daemon, 0);
	char fsname[128];

	if (!o)
		return NULL;
	str_copy(fsname, target, sizeof(fsname));
	char *dash = strrchr(fsname, '-'); /* FS-OST0000, FS-MDT0000 */
	if (dash)
		*dash = '\0';
	else
		fsname[0] = '\0';
	cJSON_AddStringToObject(o, "fsname", fsname);
	cJSON_AddStringToObject(o, "target", target);
	return o;
}

#define ROW_TARGETS_MAX 256

/* Log Analytics' records: one per target the process serves (the values of its metrics'
 * target labels), each with row_base, the unlabelled metrics and that target's own; one
 * with target "" when it serves none. Each goes to the sink as it is made. */
static void push_rows(const char *daemon)
{
	static char targets[ROW_TARGETS_MAX][128];
	int nt = 0;
	char t[128], key[256];

	for (struct metric *m = metrics_first(); m; m = metrics_next(m)) {
		label_of(m, "target", t, sizeof(t));
		int seen = !t[0];
		for (int i = 0; i < nt && !seen; i++)
			seen = strcmp(targets[i], t) == 0;
		if (!seen && nt < ROW_TARGETS_MAX)
			str_copy(targets[nt++], t, sizeof(targets[0]));
	}
	for (int i = 0; i < (nt ? nt : 1); i++) {
		const char *target = nt ? targets[i] : "";
		cJSON *o = row_base(daemon, target);
		if (!o)
			return;
		for (struct metric *m = metrics_first(); m; m = metrics_next(m)) {
			if (metrics_kind(m) == METRIC_HISTOGRAM)
				continue;
			label_of(m, "target", t, sizeof(t));
			if (t[0] && strcmp(t, target) != 0)
				continue; /* another target's */
			row_key(m, key, sizeof(key));
			if (!cJSON_GetObjectItemCaseSensitive(o, key))
				cJSON_AddNumberToObject(o, key, metrics_value(m));
		}
		char *rec = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		if (rec)
			metrics_azure_push(rec);
		free(rec);
	}
}

static pthread_t log_thread;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t log_cond = PTHREAD_COND_INITIALIZER;
static int log_running; /* protected by log_lock */
static int log_fd = -1; /* owned by the thread while running; -1: no file (Log Analytics
			 * only) */
static int log_interval_s;
static char log_daemon[32];

static void write_line(void)
{
	char *line = metrics_render_json(log_daemon);
	size_t n;

	if (metrics_azure_active())
		push_rows(log_daemon);
	if (!line)
		return;
	n = strlen(line);
	line[n] = '\n'; /* the terminating NUL becomes the newline: one write per line */
	if (log_fd >= 0 && write(log_fd, line, n + 1) < 0) {
		/* a full disk loses a metrics line, nothing else */
	}
	free(line);
}

static void *log_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&log_lock);
	while (log_running) {
		struct timespec ts;

		pthread_mutex_unlock(&log_lock);
		write_line();
		pthread_mutex_lock(&log_lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += log_interval_s;
		while (log_running &&
		       pthread_cond_timedwait(&log_cond, &log_lock, &ts) != ETIMEDOUT) {
		}
	}
	pthread_mutex_unlock(&log_lock);
	write_line(); /* a last line at stop, so short runs are recorded too */
	return NULL;
}

int metrics_log_start(const char *path, const char *daemon, int interval_s, char *err,
		      size_t err_len)
{
	log_fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
	if (path && log_fd < 0) {
		int rc = -errno;
		snprintf(err, err_len, "cannot open metrics log %s: %s", path, strerror(errno));
		return rc;
	}
	log_interval_s = interval_s > 0 ? interval_s : 60;
	str_copy(log_daemon, daemon, sizeof(log_daemon));
	log_running = 1;
	if (pthread_create(&log_thread, NULL, log_main, NULL) != 0) {
		log_running = 0;
		if (log_fd >= 0)
			close(log_fd);
		log_fd = -1;
		snprintf(err, err_len, "cannot start the metrics log thread");
		return -EAGAIN;
	}
	return 0;
}

void metrics_log_stop(void)
{
	pthread_mutex_lock(&log_lock);
	if (!log_running) {
		pthread_mutex_unlock(&log_lock);
		return;
	}
	log_running = 0;
	pthread_cond_signal(&log_cond);
	pthread_mutex_unlock(&log_lock);
	pthread_join(log_thread, NULL);
	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
}
