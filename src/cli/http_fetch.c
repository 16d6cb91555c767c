/* http_fetch.c - one HTTP request to a daemon's metrics endpoint (cli.h: cli_http), with
 * libcurl: its pages (/metrics, /job_stats) and their clear. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define FETCH_TIMEOUT_MS 2000L
#define BODY_MAX (8u << 20)

struct body {
	char *p;
	size_t len;
	int too_big;
};

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t add = size * n;
	if (b->len + add > BODY_MAX) {
		b->too_big = 1;
		return 0; /* curl stops with a write error */
	}
	char *np = realloc(b->p, b->len + add + 1);
	if (!np)
		return 0;
	memcpy(np + b->len, data, add);
	b->p = np;
	b->len += add;
	b->p[b->len] = '\0';
	return add;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

char *cli_http(const char *addr, const char *method, const char *path, char *err,
	       size_t err_len)
{
	struct body b = {0};
	char url[512];
	long code = 0;

	pthread_once(&curl_once, curl_init);
	CURL *h = curl_easy_init();
	if (!h) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	snprintf(url, sizeof(url), "http://%s%s", addr, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, FETCH_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*"); /* the endpoints are the cluster's own */
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	CURLcode rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK) {
		if (b.too_big)
			snprintf(err, err_len, "answer larger than %u bytes", BODY_MAX);
		else if (rc == CURLE_OPERATION_TIMEDOUT)
			snprintf(err, err_len, "no answer within %ld s", FETCH_TIMEOUT_MS / 1000);
		else
			snprintf(err, err_len, "%s", curl_easy_strerror(rc));
		free(b.p);
		return NULL;
	}
	if (code != 200) {
		snprintf(err, err_len, "HTTP error %ld%s", code,
			 code == 403 ? " (only from the server itself)" : "");
		free(b.p);
		return NULL;
	}
	if (!b.p) {
		b.p = calloc(1, 1);
		if (!b.p)
			snprintf(err, err_len, "out of memory");
	}
	return b.p;
}
