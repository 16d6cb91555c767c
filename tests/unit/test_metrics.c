/* test_metrics.c - the metric registry, its Prometheus text and JSON renderings, and the
 * HTTP endpoint and JSON-lines log as a scraper and a log shipper see them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/metrics.h"
#include "common/metrics_azure.h"
#include "common/net.h"
#include "unit.h"

static void space(void *arg, uint64_t *kb_free, uint64_t *kb_total)
{
	(void)arg;
	*kb_free = 1234;
	*kb_total = 5678;
}

static double answer(void *arg)
{
	(void)arg;
	return 42;
}

static void test_registry(void)
{
	struct metric *c = metrics_counter("nacre_test_ops_total", "op=\"READ\"", "Test ops");
	struct metric *c2 = metrics_counter("nacre_test_ops_total", "op=\"WRITE\"", "Test ops");
	struct metric *h = metrics_histogram("nacre_test_latency_seconds", "", "Test latency");
	char *text;

	CHECK(c && c2 && c != c2);
	CHECK(metrics_counter("nacre_test_ops_total", "op=\"READ\"", NULL) == c);
	metrics_add(c, 3);
	metrics_add(c, 4);
	metrics_add(c2, 1);
	CHECK(metrics_value(c) == 7);
	metrics_observe(h, 0.00001); /* first bucket */
	metrics_observe(h, 0.003);   /* le 0.005 */
	metrics_observe(h, 100);     /* +Inf */
	metrics_gauge_fn("nacre_test_answer", "", "The answer", answer, NULL);
	metrics_set_space_fn(space, NULL);
	metrics_add(metrics_net_sent(), 100);

	text = metrics_render_prometheus();
	CHECK(text != NULL);
	if (!text)
		return;
	CHECK(strstr(text, "# TYPE nacre_test_ops_total counter\n") != NULL);
	CHECK(strstr(text, "nacre_test_ops_total{op=\"READ\"} 7\n") != NULL);
	CHECK(strstr(text, "nacre_test_ops_total{op=\"WRITE\"} 1\n") != NULL);
	/* HELP/TYPE once per name, even with two series */
	CHECK(strstr(strstr(text, "# TYPE nacre_test_ops_total") + 1,
		     "# TYPE nacre_test_ops_total") == NULL);
	CHECK(strstr(text, "nacre_test_latency_seconds_bucket{le=\"5e-05\"} 1\n") != NULL);
	CHECK(strstr(text, "nacre_test_latency_seconds_bucket{le=\"0.005\"} 2\n") != NULL);
	CHECK(strstr(text, "nacre_test_latency_seconds_bucket{le=\"+Inf\"} 3\n") != NULL);
	CHECK(strstr(text, "nacre_test_latency_seconds_count 3\n") != NULL);
	CHECK(strstr(text, "nacre_test_answer 42\n") != NULL);
	CHECK(strstr(text, "nacre_kbytes_free 1234\n") != NULL);
	/* a gauge: no _total suffix (Prometheus keeps that for counters) */
	CHECK(strstr(text, "# TYPE nacre_capacity_kbytes gauge\nnacre_capacity_kbytes 5678\n") !=
	      NULL);
	CHECK(strstr(text, "kbytes_total") == NULL);
	CHECK(strstr(text, "nacre_net_sent_bytes_total 100\n") != NULL);
	free(text);
}

static void test_json(void)
{
	char *line = metrics_render_json("unit");
	cJSON *o = line ? cJSON_Parse(line) : NULL;

	CHECK(o != NULL);
	if (!o) {
		free(line);
		return;
	}
	CHECK(strchr(line, '\n') == NULL);
	CHECK(cJSON_IsString(cJSON_GetObjectItem(o, "hostname")));
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(o, "loadavg")));
	CHECK(cJSON_GetObjectItem(o, "kbytesfree")->valuedouble == 1234);
	CHECK(cJSON_GetObjectItem(o, "bytessend")->valuedouble == 100);
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(o, "bytesrecv")));
	CHECK(cJSON_GetObjectItem(o, "nacre_test_ops_total.READ")->valuedouble == 7);
	/* Log Analytics' time-generated-field: ISO 8601 UTC */
	const char *ts = cJSON_GetStringValue(cJSON_GetObjectItem(o, "timestamp"));
	CHECK(ts && strlen(ts) == 20 && ts[4] == '-' && ts[10] == 'T' && ts[19] == 'Z');
	cJSON_Delete(o);
	free(line);
}

static void test_http(void)
{
	char err[256], addr[64], req[] = "GET /metrics HTTP/1.0\r\n\r\n", buf[65536];
	struct iovec v = { req, sizeof(req) - 1 };
	uint16_t port = 0;
	size_t got = 0;
	int fd;

	CHECK(metrics_http_start("127.0.0.1:0", &port, err, sizeof(err)) == 0);
	CHECK(port != 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	fd = net_connect(addr, 2000);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	net_writev_full(fd, &v, 1);
	for (;;) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	CHECK(strncmp(buf, "HTTP/1.", 7) == 0 && strstr(buf, " 200 ") != NULL);
	CHECK(strstr(buf, "nacre_test_ops_total{op=\"READ\"} 7") != NULL);
	metrics_http_stop();
}

static void test_log(void)
{
	char path[] = "/tmp/nacre-metrics-XXXXXX", err[256], line[8192];
	int fd = mkstemp(path);
	FILE *f;
	int lines = 0, ok = 1;

	close(fd);
	CHECK(metrics_log_start(path, "unit", 1, err, sizeof(err)) == 0);
	usleep(1500 * 1000);
	metrics_log_stop();
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		cJSON *o = cJSON_Parse(line);
		if (!o || !cJSON_GetObjectItem(o, "kbytesfree"))
			ok = 0;
		cJSON_Delete(o);
		lines++;
	}
	if (f)
		fclose(f);
	unlink(path);
	CHECK(ok);
	CHECK(lines >= 2); /* one at start, one per interval, one at stop */
}

/* The SharedKey signature against a vector computed apart (Python's hmac and base64):
 * key bytes 0..63, 123 bytes of body, the date below. */
static void test_azure_sign(void)
{
	uint8_t key[64];
	char out[256];

	for (int i = 0; i < 64; i++)
		key[i] = (uint8_t)i;
	CHECK(metrics_azure_sign(key, sizeof(key), "ws-1", 123, "Mon, 04 Dec 2026 16:00:00 GMT",
				 out, sizeof(out)) == 0);
	CHECK(strcmp(out, "SharedKey ws-1:o73HODM8Bv8iWJSMOQKbpJDnRS7IRNGDa/fZNiKwnKU=") == 0);
	CHECK(metrics_azure_sign(key, sizeof(key), "ws-1", 123, "x", out, 20) == -EINVAL);
	CHECK(metrics_azure_workspace_valid("0123abcd-ef00-1111-2222-333344445555"));
	CHECK(!metrics_azure_workspace_valid("evil.com/x"));
	CHECK(!metrics_azure_workspace_valid(""));
	CHECK(metrics_azure_log_type_valid("NacreMetrics_2"));
	CHECK(!metrics_azure_log_type_valid("Nacre-Metrics"));
}

static int write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	return chmod(path, mode);
}

static void test_azure_key(void)
{
	char path[] = "/tmp/nacre-azkey-XXXXXX", err[256];
	uint8_t key[512];
	int fd = mkstemp(path), n;

	close(fd);
	CHECK(write_file(path, "  AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4v"
			       "MDEyMzQ1Njc4OTo7PD0+Pw==\n", 0600) == 0);
	n = metrics_azure_key_load(path, key, sizeof(key), err, sizeof(err));
	CHECK(n == 64);
	CHECK(n == 64 && key[0] == 0 && key[63] == 63);
	chmod(path, 0640); /* the group may read it: refused, as every key file */
	CHECK(metrics_azure_key_load(path, key, sizeof(key), err, sizeof(err)) == -EACCES);
	CHECK(strstr(err, "chmod 600") != NULL);
	CHECK(write_file(path, "not base64!\n", 0600) == 0);
	CHECK(metrics_azure_key_load(path, key, sizeof(key), err, sizeof(err)) == -EINVAL);
	CHECK(write_file(path, "AAEC\n", 0600) == 0);
	CHECK(metrics_azure_key_load(path, key, sizeof(key), err, sizeof(err)) == 3);
	unlink(path);
}

static double value_of(const char *name)
{
	for (struct metric *m = metrics_first(); m; m = metrics_next(m))
		if (strcmp(metrics_name(m), name) == 0)
			return metrics_value(m);
	return -1;
}

/* An endpoint that refuses connections: pushes never wait, the queue keeps the newest
 * queue_max records and counts the rest, and stop returns at once. */
static void test_azure_queue(void)
{
	char path[] = "/tmp/nacre-azkey-XXXXXX", err[256];
	struct metrics_azure_conf c = { .workspace = "ws", .key_file = path,
					.url = "http://127.0.0.1:1/api/logs", .queue_max = 3 };
	struct timespec t0, t1;
	int fd = mkstemp(path);

	close(fd);
	CHECK(write_file(path, "AAECAwQF\n", 0600) == 0);
	CHECK(metrics_azure_start(&c, err, sizeof(err)) == 0);
	CHECK(metrics_azure_active());
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 10; i++)
		metrics_azure_push("{\"n\":1}");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 1);
	usleep(200 * 1000);
	CHECK(value_of("nacre_azure_log_queue_records") <= 3);
	CHECK(value_of("nacre_azure_log_records_dropped_total") >= 6);
	CHECK(value_of("nacre_azure_log_records_sent_total") == 0);
	CHECK(value_of("nacre_azure_log_post_failures_total") >= 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	metrics_azure_stop();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec < 2);
	CHECK(!metrics_azure_active());
	c.workspace = "bad/ws";
	CHECK(metrics_azure_start(&c, err, sizeof(err)) == -EINVAL);
	unlink(path);
}

int main(void)
{
	test_registry();
	test_json();
	test_http();
	test_log();
	test_azure_sign();
	test_azure_key();
	test_azure_queue();
	return unit_done();
}
