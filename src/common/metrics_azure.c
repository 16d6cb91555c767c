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

#include <cjson/cJSON.h>
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
#define SECRET_MAX 1024
#define TOKEN_MAX 16384
#define TOKEN_MARGIN_S 300 /* a token is renewed this long before it expires */
#define INGEST_API "2023-01-01"
#define MONITOR_SCOPE "https://monitor.azure.com/.default"

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

int metrics_azure_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 128)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return 0;
	return 1;
}

static int is_url(const char *s)
{
	return s && (strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0);
}

/* The client secret of secret_file (whitespace around it ignored) into out: its length, or
 * -errno with a sentence in err. */
static int secret_load(const char *path, char *out, size_t len, char *err, size_t err_len)
{
	char buf[SECRET_MAX + 2], *p, *e;
	int fd = secret_file_open(path, "Entra ID client secret file", err, err_len);

	if (fd < 0)
		return fd;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0 || (size_t)n > SECRET_MAX) {
		snprintf(err, err_len, "cannot read the client secret file %s: %s", path,
			 n < 0 ? strerror(errno) : "larger than 1 KiB");
		return n < 0 ? -EIO : -EINVAL;
	}
	buf[n] = '\0';
	for (p = buf; isspace((unsigned char)*p); p++) {
	}
	for (e = p + strlen(p); e > p && isspace((unsigned char)e[-1]); e--) {
	}
	*e = '\0';
	if (!*p || (size_t)(e - p) >= len) {
		snprintf(err, err_len, "the client secret file %s is empty: put the application's "
			 "client secret in it, alone", path);
		return -EINVAL;
	}
	memcpy(out, p, (size_t)(e - p) + 1);
	OPENSSL_cleanse(buf, sizeof(buf));
	return (int)(e - p);
}

int metrics_azure_check(const struct metrics_azure_conf *c, char *err, size_t err_len)
{
	int ingest_part = c->dcr || c->stream || c->tenant || c->client_id || c->secret_file ||
			  c->authority;
	if (!c->dce) {
		if (ingest_part) {
			snprintf(err, err_len, "the Logs Ingestion options need --metrics-azure-dce "
				 "URL (the data collection endpoint)");
			return -EINVAL;
		}
		return 0; /* the Data Collector API (metrics_azure_start checks it) or none */
	}
	if (c->workspace || c->key_file || c->log_type) {
		snprintf(err, err_len, "give either --metrics-azure-dce (the Logs Ingestion API) or "
			 "--metrics-azure WORKSPACE (the retired HTTP Data Collector API), not both");
		return -EINVAL;
	}
	const char *missing = !c->dcr ? "--metrics-azure-dcr ID (the rule's immutable ID)"
			      : !c->tenant ? "--metrics-azure-tenant ID (the Entra ID tenant)"
			      : !c->client_id ? "--metrics-azure-client-id ID (the application)"
			      : !c->secret_file ? "--metrics-azure-secret-file FILE (its client "
						  "secret, mode 0600)"
						: NULL;
	if (missing) {
		snprintf(err, err_len, "--metrics-azure-dce needs %s", missing);
		return -EINVAL;
	}
	if (!is_url(c->dce) || (c->authority && !is_url(c->authority))) {
		snprintf(err, err_len, "--metrics-azure-%s '%s': give an http:// or https:// URL",
			 !is_url(c->dce) ? "dce" : "authority", !is_url(c->dce) ? c->dce : c->authority);
		return -EINVAL;
	}
	const char *names[] = {c->dcr, c->stream ? c->stream : METRICS_AZURE_STREAM, c->tenant,
			       c->client_id};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!metrics_azure_name_valid(names[i])) {
			snprintf(err, err_len, "'%s' is no Azure ID or stream name (letters, digits, "
				 "'-', '_' and '.')", names[i]);
			return -EINVAL;
		}
	char secret[SECRET_MAX + 1];
	int rc = secret_load(c->secret_file, secret, sizeof(secret), err, err_len);
	OPENSSL_cleanse(secret, sizeof(secret));
	return rc < 0 ? rc : 0;
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
	/* the Logs Ingestion API (ingest 1) */
	int ingest;
	char client_id[129], secret[SECRET_MAX + 1];
	char *token_url;
	char token[TOKEN_MAX]; /* the sender thread's only */
	time_t token_until;
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

struct text {
	char *p;
	size_t len;
};

static size_t keep(char *p, size_t size, size_t n, void *arg)
{
	struct text *t = arg;
	size_t add = size * n;
	if (t->len + add > TOKEN_MAX * 2)
		return 0;
	char *np = realloc(t->p, t->len + add + 1);
	if (!np)
		return 0;
	memcpy(np + t->len, p, add);
	t->p = np;
	t->len += add;
	t->p[t->len] = '\0';
	return add;
}

/* A token from Entra ID by client credentials into az.token, unless the one held is good
 * for TOKEN_MARGIN_S more. 0, or -1 with why. */
static int token_get(CURL *h, char *why, size_t why_len)
{
	time_t now = time(NULL);
	if (az.token[0] && now < az.token_until)
		return 0;
	az.token[0] = '\0';
	char *id = curl_easy_escape(h, az.client_id, 0), *sec = curl_easy_escape(h, az.secret, 0);
	char *form = NULL;
	struct text t = {0};
	long status = 0;
	int rc = -1;
	if (!id || !sec || asprintf(&form, "grant_type=client_credentials&client_id=%s&"
				    "client_secret=%s&scope=%s", id, sec,
				    "https%3A%2F%2Fmonitor.azure.com%2F.default") < 0) {
		form = NULL;
		snprintf(why, why_len, "out of memory");
		goto out;
	}
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, az.token_url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, form);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)POST_TIMEOUT_S);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
	CURLcode cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		snprintf(why, why_len, "token from %s: %s", az.token_url, curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	cJSON *j = t.p ? cJSON_Parse(t.p) : NULL;
	const cJSON *tok = cJSON_GetObjectItemCaseSensitive(j, "access_token");
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(j, "expires_in");
	const cJSON *desc = cJSON_GetObjectItemCaseSensitive(j, "error_description");
	double secs = cJSON_IsNumber(exp) ? exp->valuedouble
		      : cJSON_IsString(exp) ? atof(exp->valuestring) : 0;
	if (status == 200 && cJSON_IsString(tok) && strlen(tok->valuestring) < sizeof(az.token) &&
	    secs > 0) {
		str_copy(az.token, tok->valuestring, sizeof(az.token));
		az.token_until = now + (time_t)(secs > 2 * TOKEN_MARGIN_S ? secs - TOKEN_MARGIN_S
									  : secs / 2);
		rc = 0;
	} else {
		snprintf(why, why_len, "no token from %s (HTTP %ld%s%.160s)", az.token_url, status,
			 cJSON_IsString(desc) ? ": " : "",
			 cJSON_IsString(desc) ? desc->valuestring : "");
	}
	cJSON_Delete(j);
out:
	if (form)
		OPENSSL_cleanse(form, strlen(form));
	free(form);
	curl_free(id);
	if (sec)
		OPENSSL_cleanse(sec, strlen(sec));
	curl_free(sec);
	free(t.p);
	return rc;
}

/* The headers of a POST of len bytes: the Logs Ingestion API's bearer token, or the Data
 * Collector API's signature. NULL with why. */
static struct curl_slist *post_headers(CURL *h, size_t len, char *why, size_t why_len)
{
	struct curl_slist *hl = NULL, *t;
	char lt[160], xd[96], au[TOKEN_MAX + 32];
	const char *hdrs[6];
	size_t n = 0;

	hdrs[n++] = "Content-Type: application/json";
	hdrs[n++] = "Expect:";
	if (az.ingest) {
		if (token_get(h, why, why_len) < 0)
			return NULL;
		snprintf(au, sizeof(au), "Authorization: Bearer %s", az.token);
	} else {
		char date[64], auth[256];
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (metrics_azure_sign(az.key, az.key_len, az.workspace, len, date, auth,
				       sizeof(auth)) < 0) {
			snprintf(why, why_len, "cannot sign the request");
			return NULL;
		}
		snprintf(lt, sizeof(lt), "Log-Type: %s", az.log_type);
		snprintf(xd, sizeof(xd), "x-ms-date: %s", date);
		snprintf(au, sizeof(au), "Authorization: %s", auth);
		hdrs[n++] = lt;
		hdrs[n++] = xd;
		hdrs[n++] = "time-generated-field: " METRICS_AZURE_TIME_FIELD;
	}
	hdrs[n++] = au;
	for (size_t i = 0; i < n; i++) {
		if (!(t = curl_slist_append(hl, hdrs[i]))) {
			curl_slist_free_all(hl);
			snprintf(why, why_len, "out of memory");
			return NULL;
		}
		hl = t;
	}
	OPENSSL_cleanse(au, sizeof(au));
	return hl;
}

/* POSTs body. *retry_after gets the service's Retry-After (seconds) or 0; why a sentence. */
static enum post_result post(CURL *h, const char *body, size_t len, long *retry_after,
			     char *why, size_t why_len)
{
	long status = 0;
	curl_off_t ra = -1;
	CURLcode cc;

	*retry_after = 0;
	struct curl_slist *hl = post_headers(h, len, why, why_len);
	if (!hl)
		return POST_RETRY; /* no token yet, or out of memory: the records wait */
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
	if (status == 401 && az.ingest) {
		az.token[0] = '\0'; /* expired or revoked: the next POST asks for another */
		snprintf(why, why_len, "HTTP 401 (the token was refused; asking for a new one)");
		return POST_RETRY;
	}
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
					 "dropped (check %s)", k, k == 1 ? "" : "s", az.url, why,
					 az.ingest ? "the rule, the stream's columns and that the "
						     "application has the Monitoring Metrics "
						     "Publisher role on the rule"
						   : "the workspace ID, key and Log-Type");
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

static int ingest_setup(const struct metrics_azure_conf *c, char *err, size_t err_len);
static int collector_setup(const struct metrics_azure_conf *c, char *err, size_t err_len);
static int sender_start(const struct metrics_azure_conf *c, char *err, size_t err_len);

int metrics_azure_start(const struct metrics_azure_conf *c, char *err, size_t err_len)
{
	int rc;

	if (atomic_load(&az.active)) {
		snprintf(err, err_len, "the Log Analytics sink is already running");
		return -EBUSY;
	}
	if ((rc = metrics_azure_check(c, err, err_len)) < 0)
		return rc;
	pthread_once(&curl_once, curl_global);
	if (curl_init_rc != CURLE_OK) {
		snprintf(err, err_len, "cannot initialize libcurl for Log Analytics");
		return -EIO;
	}
	if (c->dce)
		rc = ingest_setup(c, err, err_len);
	else
		rc = collector_setup(c, err, err_len);
	if (rc < 0)
		return rc;
	return sender_start(c, err, err_len);
}

/* The Logs Ingestion API: the secret, the token's and the stream's URLs. */
static int ingest_setup(const struct metrics_azure_conf *c, char *err, size_t err_len)
{
	const char *auth = c->authority ? c->authority : METRICS_AZURE_AUTHORITY;
	int al = (int)strlen(auth), dl = (int)strlen(c->dce);
	int rc = secret_load(c->secret_file, az.secret, sizeof(az.secret), err, err_len);

	if (rc < 0)
		return rc;
	while (al > 0 && auth[al - 1] == '/')
		al--;
	while (dl > 0 && c->dce[dl - 1] == '/')
		dl--;
	az.ingest = 1;
	az.token[0] = '\0';
	str_copy(az.client_id, c->client_id, sizeof(az.client_id));
	str_copy(az.log_type, c->stream ? c->stream : METRICS_AZURE_STREAM, sizeof(az.log_type));
	az.workspace[0] = '\0';
	if (asprintf(&az.token_url, "%.*s/%s/oauth2/v2.0/token", al, auth, c->tenant) < 0)
		az.token_url = NULL;
	if (asprintf(&az.url, "%.*s/dataCollectionRules/%s/streams/%s?api-version=" INGEST_API,
		     dl, c->dce, c->dcr, az.log_type) < 0)
		az.url = NULL;
	if (!az.token_url || !az.url) {
		free(az.token_url);
		free(az.url);
		az.token_url = az.url = NULL;
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The HTTP Data Collector API: the workspace, its key and the URL. */
static int collector_setup(const struct metrics_azure_conf *c, char *err, size_t err_len)
{
	const char *lt = c->log_type ? c->log_type : METRICS_AZURE_LOG_TYPE;
	int rc;

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
	az.ingest = 0;
	str_copy(az.workspace, c->workspace, sizeof(az.workspace));
	str_copy(az.log_type, lt, sizeof(az.log_type));
	if (c->url)
		az.url = strdup(c->url);
	else if (asprintf(&az.url, "https://%s.ods.opinsights.azure.com/api/logs?"
			  "api-version=2016-04-01", c->workspace) < 0)
		az.url = NULL;
	if (!az.url) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The queue, the sink's metrics and the sender thread. */
static int sender_start(const struct metrics_azure_conf *c, char *err, size_t err_len)
{
	az.batch = c->batch > 0 ? c->batch : 1;
	az.queue_max = c->queue_max > 0 ? c->queue_max : 1000;
	if (az.queue_max < az.batch)
		az.queue_max = az.batch;
	az.ring = calloc((size_t)az.queue_max, sizeof(*az.ring));
	if (!az.ring) {
		free(az.url);
		free(az.token_url);
		az.url = az.token_url = NULL;
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
		free(az.token_url);
		free(az.ring);
		az.url = az.token_url = NULL;
		az.ring = NULL;
		snprintf(err, err_len, "cannot start the Log Analytics sender thread");
		return -EAGAIN;
	}
	if (az.ingest)
		LOG_INFO("metrics", "posting metrics to Log Analytics (Logs Ingestion API, stream "
			 "%s) at %s", az.log_type, az.url);
	else
		LOG_INFO("metrics", "posting metrics to Log Analytics workspace %s (Log-Type %s, "
			 "the retired HTTP Data Collector API) at %s", az.workspace, az.log_type,
			 az.url);
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
	free(az.token_url);
	az.url = az.token_url = NULL;
	pthread_mutex_unlock(&az.lock);
	OPENSSL_cleanse(az.key, sizeof(az.key));
	OPENSSL_cleanse(az.secret, sizeof(az.secret));
	OPENSSL_cleanse(az.token, sizeof(az.token));
}
