/* test_metrics.c - the metric registry, its Prometheus text and JSON renderings, and the
 * HTTP endpoint and JSON-lines log as a scraper and a log shipper see them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/metrics.h"
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

int main(void)
{
	test_registry();
	test_json();
	test_http();
	test_log();
	return unit_done();
}
