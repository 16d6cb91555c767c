/* metrics_azure.c - the Azure Log Analytics sink of the metrics log (see metrics_azure.h). */
#include "common/metrics_azure.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/secret_file.h"
#include "common/strbuf.h"
#include "common/util.h"

#define KEY_FILE_MAX 4096
#define KEY_MAX 512
#define BACKOFF_MIN_S 1
#define BACKOFF_MAX_S 60
#define RETRY_AFTER_MAX_S 300
#define SAY_EVERY_S 60   /* drops and failures are said at most this often */
#define STOP_GRACE_S 2   /* a POST under way at stop, or the last one, gets this long */
#define CONNECT_TIMEOUT_S 10
#define POST_TIMEOUT_S 30

int metrics_azure_workspace_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 64)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-')
			return 0;
	return 1;
}

int metrics_azure_log_type_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 100)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

int metrics_azure_key_load(const char *path, uint8_t *key, size_t len, char *err,
			   size_t err_len)
{
	char buf[KEY_FILE_MAX + 1], *p, *e;
	uint8_t raw[KEY_FILE_MAX];
	int fd = secret_file_open(path, "Log Analytics key file", err, err_len);
	ssize_t n;
	size_t k, pad = 0;
	int out;

	if (fd < 0)
		return fd;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0) {
		snprintf(err, err_len, "cannot read Log Analytics key file %s: %s", path,
			 strerror(errno));
		return -EIO;
	}
	if ((size_t)n > KEY_FILE_MAX) {
		snprintf(err, err_len, "Log Analytics key file %s is larger than %d bytes: it "
			 "should hold only the workspace's base64 key", path, KEY_FILE_MAX);
		return -EINVAL;
	}
	buf[n] = '\0';
	for (p = buf; isspace((unsigned char)*p); p++) {
	}
	for (e = p + strlen(p); e > p && isspace((unsigned char)e[-1]); e--) {
	}
	*e = '\0';
	k = (size_t)(e - p);
	for (size_t i = 0; i < k; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '+' && p[i] != '/' &&
		    !(p[i] == '=' && i + 2 >= k))
			k = 0;
	if (k >= 2 && p[k - 2] == '=' && p[k - 1] != '=')
		k = 0; /* "xx=x" */
	if (k == 0 || k % 4 != 0) {
		snprintf(err, err_len, "Log Analytics key file %s does not hold a base64 key: put "
			 "the workspace's primary or secondary key in it, alone", path);
		return -EINVAL;
	}
	pad = (p[k - 1] == '=') + (p[k - 2] == '=');
	out = EVP_DecodeBlock(raw, (const unsigned char *)p, (int)k);
	if (out < 0 || (size_t)out < pad || (size_t)out - pad > len || (size_t)out == pad) {
		snprintf(err, err_len, "Log Analytics key file %s does not hold a base64 key of at "
			 "most %zu bytes", path, len);
		return -EINVAL;
	}
	memcpy(key, raw, (size_t)out - pad);
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(buf, sizeof(buf));
	return (int)((size_t)out - pad);
}

int metrics_azure_sign(const uint8_t *key, size_t key_len, const char *workspace,
		       size_t content_len, const char *date, char *out, size_t out_len)
{
	char msg[256];
	unsigned char mac[32], sig[48];
	unsigned int mac_len = 0;
	int m = snprintf(msg, sizeof(msg), "POST\n%zu\napplication/json\nx-ms-date:%s\n/api/logs",
			 content_len, date);

	if (m < 0 || (size_t)m >= sizeof(msg))
		return -EINVAL;
	if (!HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg, (size_t)m, mac,
		  &mac_len) || mac_len != sizeof(mac))
		return -EIO;
	EVP_EncodeBlock(sig, mac, sizeof(mac));
	m = snprintf(out, out_len, "SharedKey %s:%s", workspace, (const char *)sig);
	return m < 0 || (size_t)m >= out_len ? -EINVAL : 0;
}

/* ---- the sender */

static struct {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* protected by lock */
	int running;
	char **ring; /* queue_max slots; the oldest at head */
	int head, n;
	uint64_t dropped;
	time_t said_drop;
	/* set at start, read-only after */
	uint8_t key[KEY_MAX];
	size_t key_len;
	char workspace[65];
	char log_type[101];
	char *url;
	int batch, queue_max;
	atomic_int active;
	atomic_long stop_at; /* wall time stop was asked (0 = not yet) */
	struct metric *m_sent, *m_dropped, *m_failures;
} az = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static double queue_len(void *arg)
{
	int n;

	(void)arg;
	pthread_mutex_lock(&az.lock);
	n = az.n;
	pthread_mutex_unlock(&az.lock);
	return n;
}

/* Drops the oldest record; lock held. */
static void drop_oldest(void)
{
	free(az.ring[az.head]);
	az.ring[az.head] = NULL;
	az.head = (az.head + 1) % az.queue_max;
	az.n--;
	az.dropped++;
	metrics_add(az.m_dropped, 1);
	time_t now = time(NULL);
	if (now - az.said_drop >= SAY_EVERY_S) {
		az.said_drop = now;
		LOG_WARN("metrics", "Log Analytics queue full (%d records): dropped the oldest "
			 "(%llu dropped so far); check that %s takes posts",
			 az.queue_max, (unsigned long long)az.dropped, az.url);
	}
}

int metrics_azure_active(void)
{
	return atomic_load(&az.active);
}

void metrics_azure_push(const char *record)
{
	char *copy;

	if (!atomic_load(&az.active))
		return;
	copy = strdup(record);
	if (!copy)
		return;
	pthread_mutex_lock(&az.lock);
	if (!az.running || !az.ring) { /* stopping: the queue is about to go */
		pthread_mutex_unlock(&az.lock);
		free(copy);
		return;
	}
	if (az.n == az.queue_max)
		drop_oldest();
	az.ring[(az.head + az.n) % az.queue_max] = copy;
	az.n++;
	pthread_cond_signal(&az.cond);
	pthread_mutex_unlock(&az.lock);
}

/* Puts k records taken from the head back in front of what was queued since; the oldest
 * of them go when there is no room. Lock held. */
static void put_back(char **recs, int k)
{
	int i = k - 1;

	for (; i >= 0 && az.n < az.queue_max; i--) {
		az.head = (az.head + az.queue_max - 1) % az.queue_max;
		az.ring[az.head] = recs[i];
		az.n++;
	}
	for (; i >= 0; i--) {
		free(recs[i]);
		az.dropped++;
		metrics_add(az.m_dropped, 1);
	}
}

/* Aborts a POST that outlives stop by STOP_GRACE_S. */
static int xfer_check(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	long at = atomic_load(&az.stop_at);

	(void)arg, (void)dt, (void)dn, (void)ut, (void)un;
	return at && time(NULL) > at + STOP_GRACE_S;
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p, (void)arg;
	return size * n;
}

enum post_result { POST_OK, POST_RETRY, POST_REJECTED };

/* POSTs body. *retry_after gets the service's Retry-After (seconds) or 0; why a sentence. */
static enum post_result post(CURL *h, const char *body, size_t len, long *retry_after,
			     char *why, size_t why_len)
{
	char date[64], auth[256];
	struct curl_slist *hl = NULL, *t;
	struct tm tm;
	time_t now = time(NULL);
	long status = 0;
	curl_off_t ra = -1;
	CURLcode cc;

	*retry_after = 0;
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (metrics_azure_sign(az.key, az.key_len, az.workspace, len, date, auth,
			       sizeof(auth)) < 0) {
		snprintf(why, why_len, "cannot sign the request");
		return POST_REJECTED;
	}
	char lt[160], xd[96], au[300];
	snprintf(lt, sizeof(lt), "Log-Type: %s", az.log_type);
	snprintf(xd, sizeof(xd), "x-ms-date: %s", date);
	snprintf(au, sizeof(au), "Authorization: %s", auth);
	const char *hdrs[] = { "Content-Type: application/json", lt, xd,
			       "time-generated-field: " METRICS_AZURE_TIME_FIELD, au, "Expect:" };
	for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		if (!(t = curl_slist_append(hl, hdrs[i]))) {
			curl_slist_free_all(hl);
			snprintf(why, why_len, "out of memory");
			return POST_RETRY;
		}
		hl = t;
	}
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, az.url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)POST_TIMEOUT_S);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, xfer_check);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	cc = curl_easy_perform(h);
	curl_slist_free_all(hl);
	if (cc != CURLE_OK) {
		snprintf(why, why_len, "%s", curl_easy_strerror(cc));
		return POST_RETRY;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300)
		return POST_OK;
	if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
		*retry_after = ra > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (long)ra;
	snprintf(why, why_len, "HTTP %ld", status);
	if (status >= 500 || status == 429 || status == 408)
		return POST_RETRY;
	return POST_REJECTED;
}

/* "[r1,r2,...]" of recs. NULL when out of memory. */
static char *join(char **recs, int k, size_t *len)
{
	struct strbuf b = STRBUF_INIT;
	char *s;

	strbuf_char(&b, '[');
	for (int i = 0; i < k; i++) {
		if (i)
			strbuf_char(&b, ',');
		strbuf_str(&b, recs[i]);
	}
	strbuf_char(&b, ']');
	*len = b.len;
	s = strbuf_take(&b);
	return s;
}

static void *sender_main(void *arg)
{
	CURL *h = curl_easy_init();
	char **recs = calloc((size_t)az.batch > 100 ? (size_t)az.batch : 100, sizeof(*recs));
	int take_max = az.batch > 100 ? az.batch : 100;
	int backoff = 0, healthy = 1;
	time_t next = 0, said_fail = 0;
	char why[256];

	(void)arg;
	if (!h || !recs) {
		LOG_ERR("metrics", "Log Analytics sender: out of memory; no records will be posted");
		free(recs);
		if (h)
			curl_easy_cleanup(h);
		return NULL;
	}
	pthread_mutex_lock(&az.lock);
	for (;;) {
		int last = !az.running;
		time_t now = time(NULL);

		/* wait for a batch (or stop), and for the end of a backoff */
		if (!last && (az.n < az.batch || now < next)) {
			struct timespec ts;

			if (az.n >= az.batch) {
				ts.tv_sec = next;
				ts.tv_nsec = 0;
				pthread_cond_timedwait(&az.cond, &az.lock, &ts);
			} else {
				pthread_cond_wait(&az.cond, &az.lock);
			}
			continue;
		}
		if (last && (!healthy || az.n == 0))
			break;
		int k = az.n < take_max ? az.n : take_max;
		for (int i = 0; i < k; i++) {
			recs[i] = az.ring[az.head];
			az.ring[az.head] = NULL;
			az.head = (az.head + 1) % az.queue_max;
		}
		az.n -= k;
		pthread_mutex_unlock(&az.lock);

		size_t len = 0;
		char *body = join(recs, k, &len);
		long retry_after = 0;
		enum post_result r = body ? post(h, body, len, &retry_after, why, sizeof(why))
					  : POST_RETRY;
		free(body);
		if (!body)
			str_copy(why, "out of memory", sizeof(why));

		pthread_mutex_lock(&az.lock);
		now = time(NULL);
		if (r == POST_OK) {
			metrics_add(az.m_sent, (uint64_t)k);
			for (int i = 0; i < k; i++)
				free(recs[i]);
			if (!healthy)
				LOG_INFO("metrics", "Log Analytics takes posts again (%s)", az.url);
			healthy = 1;
			backoff = 0;
			next = 0;
			continue;
		}
		metrics_add(az.m_failures, 1);
		healthy = 0;
		if (r == POST_REJECTED) {
			for (int i = 0; i < k; i++)
				free(recs[i]);
			az.dropped += (uint64_t)k;
			metrics_add(az.m_dropped, (uint64_t)k);
			if (now - said_fail >= SAY_EVERY_S) {
				said_fail = now;
				LOG_WARN("metrics", "Log Analytics refused %d record%s at %s: %s; "
					 "dropped (check the workspace ID, key and Log-Type)",
					 k, k == 1 ? "" : "s", az.url, why);
			}
			backoff = 0;
			next = 0;
			healthy = 1; /* the service answers: only these records were bad */
			continue;
		}
		put_back(recs, k);
		backoff = backoff ? backoff * 2 : BACKOFF_MIN_S;
		if (backoff > BACKOFF_MAX_S)
			backoff = BACKOFF_MAX_S;
		int wait = retry_after > backoff ? (int)retry_after : backoff;
		next = now + wait;
		if (now - said_fail >= SAY_EVERY_S) {
			said_fail = now;
			LOG_WARN("metrics", "posting %d record%s to Log Analytics at %s failed: %s; "
				 "retrying in %d s (%d queued)",
				 k, k == 1 ? "" : "s", az.url, why, wait, az.n);
		}
	}
	pthread_mutex_unlock(&az.lock);
	free(recs);
	curl_easy_cleanup(h);
	return NULL;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_global(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_ALL);
}

int metrics_azure_start(const struct metrics_azure_conf *c, char *err, size_t err_len)
{
	const char *lt = c->log_type ? c->log_type : METRICS_AZURE_LOG_TYPE;
	int rc;

	if (atomic_load(&az.active)) {
		snprintf(err, err_len, "the Log Analytics sink is already running");
		return -EBUSY;
	}
	if (!c->workspace || !metrics_azure_workspace_valid(c->workspace)) {
		snprintf(err, err_len, "--metrics-azure '%s' is no workspace ID: give the "
			 "workspace's ID (letters, digits and '-')", c->workspace ? c->workspace : "");
		return -EINVAL;
	}
	if (!c->key_file) {
		snprintf(err, err_len, "--metrics-azure needs --metrics-azure-key-file FILE (the "
			 "workspace's shared key, base64, in a file of mode 0600)");
		return -EINVAL;
	}
	if (!metrics_azure_log_type_valid(lt)) {
		snprintf(err, err_len, "--metrics-azure-log-type '%s': use 1 to 100 letters, "
			 "digits or '_'", lt);
		return -EINVAL;
	}
	rc = metrics_azure_key_load(c->key_file, az.key, sizeof(az.key), err, err_len);
	if (rc < 0)
		return rc;
	az.key_len = (size_t)rc;
	pthread_once(&curl_once, curl_global);
	if (curl_init_rc != CURLE_OK) {
		snprintf(err, err_len, "cannot initialize libcurl for Log Analytics");
		return -EIO;
	}
	str_copy(az.workspace, c->workspace, sizeof(az.workspace));
	str_copy(az.log_type, lt, sizeof(az.log_type));
	if (c->url)
		az.url = strdup(c->url);
	else if (asprintf(&az.url, "https://%s.ods.opinsights.azure.com/api/logs?"
			  "api-version=2016-04-01", c->workspace) < 0)
		az.url = NULL;
	az.batch = c->batch > 0 ? c->batch : 1;
	az.queue_max = c->queue_max > 0 ? c->queue_max : 1000;
	if (az.queue_max < az.batch)
		az.queue_max = az.batch;
	az.ring = calloc((size_t)az.queue_max, sizeof(*az.ring));
	if (!az.url || !az.ring) {
		free(az.url);
		free(az.ring);
		az.url = NULL;
		az.ring = NULL;
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	az.head = az.n = 0;
	az.dropped = 0;
	az.said_drop = 0;
	atomic_store(&az.stop_at, 0);
	az.m_sent = metrics_counter("nacre_azure_log_records_sent_total", "",
				    "Metrics records Log Analytics took");
	az.m_dropped = metrics_counter("nacre_azure_log_records_dropped_total", "",
				       "Metrics records dropped (queue full or refused)");
	az.m_failures = metrics_counter("nacre_azure_log_post_failures_total", "",
					"Failed POSTs to Log Analytics");
	metrics_gauge_fn("nacre_azure_log_queue_records", "",
			 "Metrics records waiting for Log Analytics", queue_len, NULL);
	az.running = 1;
	atomic_store(&az.active, 1);
	if (pthread_create(&az.thread, NULL, sender_main, NULL) != 0) {
		atomic_store(&az.active, 0);
		az.running = 0;
		free(az.url);
		free(az.ring);
		az.url = NULL;
		az.ring = NULL;
		snprintf(err, err_len, "cannot start the Log Analytics sender thread");
		return -EAGAIN;
	}
	LOG_INFO("metrics", "posting metrics to Log Analytics workspace %s (Log-Type %s) at %s",
		 az.workspace, az.log_type, az.url);
	return 0;
}

void metrics_azure_stop(void)
{
	if (!atomic_load(&az.active))
		return;
	atomic_store(&az.stop_at, (long)time(NULL));
	pthread_mutex_lock(&az.lock);
	az.running = 0;
	pthread_cond_signal(&az.cond);
	pthread_mutex_unlock(&az.lock);
	pthread_join(az.thread, NULL);
	atomic_store(&az.active, 0);
	pthread_mutex_lock(&az.lock);
	for (int i = 0; i < az.n; i++)
		free(az.ring[(az.head + i) % az.queue_max]);
	free(az.ring);
	az.ring = NULL;
	az.n = 0;
	free(az.url);
	az.url = NULL;
	pthread_mutex_unlock(&az.lock);
	OPENSSL_cleanse(az.key, sizeof(az.key));
}
