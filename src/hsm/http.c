/* http.c - a small HTTP client over libcurl for the cloud backends: a pool of easy handles
 * (each keeps its connections alive), timeouts, retries with backoff and jitter, captured
 * response headers, uploads from a buffer and downloads into a callback. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "common/util.h"
#include "hsm/http.h"

#define ERR_BODY_MAX (64 * 1024)
#define BACKOFF_BASE_MS 100
#define BACKOFF_MAX_MS 8000
#define RETRY_AFTER_MAX_S 30

/* ---- header lists ---- */

void hsm_hdrs_init(struct hsm_hdrs *h)
{
	memset(h, 0, sizeof(*h));
}

void hsm_hdrs_fini(struct hsm_hdrs *h)
{
	if (!h)
		return;
	for (int i = 0; i < h->n; i++) {
		free(h->name[i]);
		free(h->value[i]);
	}
	h->n = 0;
}

int hsm_hdrs_set(struct hsm_hdrs *h, const char *name, const char *value)
{
	char *v = strdup(value);
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < h->n; i++) {
		if (strcasecmp(h->name[i], name) == 0) {
			free(h->value[i]);
			h->value[i] = v;
			return 0;
		}
	}
	if (h->n == HSM_HDRS_MAX) {
		free(v);
		h->overflow = 1;
		return -E2BIG;
	}
	h->name[h->n] = strdup(name);
	if (!h->name[h->n]) {
		free(v);
		return -ENOMEM;
	}
	h->value[h->n++] = v;
	return 0;
}

const char *hsm_hdrs_get(const struct hsm_hdrs *h, const char *name)
{
	for (int i = 0; i < h->n; i++)
		if (strcasecmp(h->name[i], name) == 0)
			return h->value[i];
	return NULL;
}

/* ---- transfer progress ---- */

void hsm_xfer_init(struct hsm_xfer *x, hsm_progress_fn fn, void *arg)
{
	x->fn = fn;
	x->arg = arg;
	atomic_init(&x->done, 0);
	atomic_init(&x->canceled, 0);
	pthread_mutex_init(&x->lock, NULL);
	x->reported = 0;
}

void hsm_xfer_fini(struct hsm_xfer *x)
{
	pthread_mutex_destroy(&x->lock);
}

int hsm_xfer_add(struct hsm_xfer *x, uint64_t n)
{
	uint64_t done = atomic_fetch_add(&x->done, n) + n;

	if (atomic_load(&x->canceled))
		return -ECANCELED;
	if (!x->fn)
		return 0;
	pthread_mutex_lock(&x->lock);
	/* Reports from parallel ranges can arrive out of order: only ever report a larger
	 * total, and the current one, so the callback sees a monotonic count. */
	done = atomic_load(&x->done);
	if (done > x->reported || done == 0) {
		x->reported = done;
		if (x->fn(x->arg, done) != 0)
			atomic_store(&x->canceled, 1);
	}
	pthread_mutex_unlock(&x->lock);
	return atomic_load(&x->canceled) ? -ECANCELED : 0;
}

/* ---- client ---- */

struct hsm_http {
	struct hsm_http_opts opts;
	pthread_mutex_t lock; /* protects idle */
	CURL **idle;
	int nidle, cap;
	CURLSH *share; /* DNS cache shared by the handles */
	pthread_mutex_t share_lock;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_global(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_ALL);
}

static void share_lock(CURL *c, curl_lock_data d, curl_lock_access a, void *arg)
{
	struct hsm_http *h = arg;
	(void)c, (void)d, (void)a;
	pthread_mutex_lock(&h->share_lock);
}

static void share_unlock(CURL *c, curl_lock_data d, void *arg)
{
	struct hsm_http *h = arg;
	(void)c, (void)d;
	pthread_mutex_unlock(&h->share_lock);
}

int hsm_http_create(const struct hsm_http_opts *opts, struct hsm_http **out)
{
	struct hsm_http *h;

	pthread_once(&curl_once, curl_global);
	if (curl_init_rc != CURLE_OK)
		return -ENOMEM;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->opts = *opts;
	if (h->opts.retries < 0)
		h->opts.retries = 0;
	if (h->opts.connect_timeout <= 0)
		h->opts.connect_timeout = 10;
	if (h->opts.stall_timeout <= 0)
		h->opts.stall_timeout = 60;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->share_lock, NULL);
	h->share = curl_share_init();
	if (h->share) {
		curl_share_setopt(h->share, CURLSHOPT_LOCKFUNC, share_lock);
		curl_share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
		curl_share_setopt(h->share, CURLSHOPT_USERDATA, h);
		curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	}
	*out = h;
	return 0;
}

void hsm_http_destroy(struct hsm_http *h)
{
	if (!h)
		return;
	for (int i = 0; i < h->nidle; i++)
		curl_easy_cleanup(h->idle[i]);
	free(h->idle);
	if (h->share)
		curl_share_cleanup(h->share);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->share_lock);
	free(h);
}

static CURL *handle_get(struct hsm_http *h)
{
	CURL *c = NULL;

	pthread_mutex_lock(&h->lock);
	if (h->nidle > 0)
		c = h->idle[--h->nidle];
	pthread_mutex_unlock(&h->lock);
	if (c) {
		/* Keeps the handle's live connections; clears the options of the last use. */
		curl_easy_reset(c);
		return c;
	}
	return curl_easy_init();
}

static void handle_put(struct hsm_http *h, CURL *c)
{
	pthread_mutex_lock(&h->lock);
	if (h->nidle == h->cap) {
		int cap = h->cap ? h->cap * 2 : 8;
		CURL **n = realloc(h->idle, (size_t)cap * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&h->lock);
			curl_easy_cleanup(c);
			return;
		}
		h->idle = n;
		h->cap = cap;
	}
	h->idle[h->nidle++] = c;
	pthread_mutex_unlock(&h->lock);
}

/* ---- one attempt ---- */

struct attempt {
	const struct hsm_http_req *req;
	struct hsm_http_resp *resp;
	size_t sent;       /* upload position */
	uint64_t received; /* body bytes of this attempt */
	int sink_rc;       /* the sink's failure, which must not be retried */
	int collect_oom;
};

void hsm_http_resp_fini(struct hsm_http_resp *resp)
{
	if (!resp)
		return;
	free(resp->body);
	for (int i = 0; i < resp->nhdr; i++) {
		free(resp->hname[i]);
		free(resp->hvalue[i]);
	}
	free(resp->hname);
	free(resp->hvalue);
	memset(resp, 0, sizeof(*resp));
}

const char *hsm_http_resp_header(const struct hsm_http_resp *resp, const char *name)
{
	for (int i = 0; i < resp->nhdr; i++)
		if (strcasecmp(resp->hname[i], name) == 0)
			return resp->hvalue[i];
	return NULL;
}

static size_t on_read(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct attempt *a = arg;
	size_t left = a->req->body_len - a->sent;
	size_t n = size * nmemb < left ? size * nmemb : left;

	if (n)
		memcpy(buf, (const char *)a->req->body + a->sent, n);
	a->sent += n;
	return n;
}

static int on_seek(void *arg, curl_off_t off, int origin)
{
	struct attempt *a = arg;

	/* curl rewinds the body to resend it (after a redirect or auth): support SEEK_SET. */
	if (origin != SEEK_SET || off < 0 || (uint64_t)off > a->req->body_len)
		return CURL_SEEKFUNC_FAIL;
	a->sent = (size_t)off;
	return CURL_SEEKFUNC_OK;
}

static size_t on_header(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct attempt *a = arg;
	struct hsm_http_resp *r = a->resp;
	size_t n = size * nmemb, nl, vl;
	const char *colon, *v;
	char **nn, **nv;

	if (n >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		/* A new response (after 100 Continue or a redirect): forget the last one's
		 * headers. */
		for (int i = 0; i < r->nhdr; i++) {
			free(r->hname[i]);
			free(r->hvalue[i]);
		}
		r->nhdr = 0;
		/* The status routes the body (sink or error text) before curl reports it. */
		const char *sp = memchr(buf, ' ', n);
		r->status = 0;
		for (size_t i = sp ? (size_t)(sp - buf) + 1 : n;
		     i < n && r->status < 1000 && isdigit((unsigned char)buf[i]);
		     i++)
			r->status = r->status * 10 + (buf[i] - '0');
		return n;
	}
	colon = memchr(buf, ':', n);
	if (!colon || r->nhdr >= 256)
		return n;
	nl = (size_t)(colon - buf);
	v = colon + 1;
	vl = n - nl - 1;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
		vl--;
	nn = realloc(r->hname, (size_t)(r->nhdr + 1) * sizeof(*nn));
	if (!nn)
		return 0;
	r->hname = nn;
	nv = realloc(r->hvalue, (size_t)(r->nhdr + 1) * sizeof(*nv));
	if (!nv)
		return 0;
	r->hvalue = nv;
	r->hname[r->nhdr] = strndup(buf, nl);
	r->hvalue[r->nhdr] = strndup(v, vl);
	if (!r->hname[r->nhdr] || !r->hvalue[r->nhdr]) {
		free(r->hname[r->nhdr]);
		free(r->hvalue[r->nhdr]);
		return 0;
	}
	for (char *p = r->hname[r->nhdr]; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	r->nhdr++;
	return n;
}

static int collect(struct attempt *a, const char *buf, size_t n, size_t cap)
{
	struct hsm_http_resp *r = a->resp;
	char *nb;

	if (r->body_len >= cap)
		return 0;
	if (n > cap - r->body_len)
		n = cap - r->body_len;
	nb = realloc(r->body, r->body_len + n + 1);
	if (!nb) {
		a->collect_oom = 1;
		return -ENOMEM;
	}
	memcpy(nb + r->body_len, buf, n);
	r->body = nb;
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return 0;
}

static size_t on_write(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct attempt *a = arg;
	size_t n = size * nmemb;
	long status = 0;
	int rc;

	if (a->req->xfer && atomic_load(&a->req->xfer->canceled)) {
		a->sink_rc = -ECANCELED;
		return 0;
	}
	/* Only a 2xx body goes to the sink; error bodies are kept for the message. */
	status = a->resp->status;
	if (status < 200 || status > 299) {
		rc = collect(a, buf, n, ERR_BODY_MAX);
	} else if (a->req->sink) {
		rc = a->req->sink(a->req->sink_arg, buf, n, a->received);
		if (rc < 0)
			a->sink_rc = rc;
	} else {
		size_t cap = a->req->max_body ? a->req->max_body : 1024 * 1024;
		if (a->received + n > cap) {
			a->sink_rc = -EFBIG;
			return 0;
		}
		rc = collect(a, buf, n, cap);
	}
	if (rc < 0)
		return 0;
	a->received += n;
	return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct attempt *a = arg;
	(void)dt, (void)dn, (void)ut, (void)un;
	if (a->req->xfer && atomic_load(&a->req->xfer->canceled)) {
		a->sink_rc = -ECANCELED;
		return 1;
	}
	return 0;
}

/* Copies url into out with the values of signature-bearing query parameters hidden, so
 * error messages never carry a SAS signature or a credential. */
static void redact_url(const char *url, char *out, size_t len)
{
	static const char *const secret[] = { "sig=", "x-amz-signature=", "x-amz-credential=",
					      "x-amz-security-token=" };
	const char *q = strchr(url, '?');
	size_t o = 0;

	if (!len)
		return;
	for (const char *p = url; *p && o + 1 < len;) {
		int hidden = 0;
		if (q && p > q && (p[-1] == '?' || p[-1] == '&')) {
			for (size_t i = 0; i < ARRAY_SIZE(secret); i++) {
				size_t k = strlen(secret[i]);
				if (strncasecmp(p, secret[i], k) == 0) {
					int w = snprintf(out + o, len - o, "%.*sREDACTED", (int)k, p);
					o += w > 0 ? ((size_t)w < len - o ? (size_t)w : len - o - 1) : 0;
					p += k;
					while (*p && *p != '&')
						p++;
					hidden = 1;
					break;
				}
			}
		}
		if (!hidden)
			out[o++] = *p++;
	}
	out[o] = '\0';
}

static int status_errno(long status)
{
	if (status == 404)
		return -ENOENT;
	if (status == 401 || status == 403)
		return -EACCES;
	if (status == 409)
		return -EEXIST;
	if (status == 412)
		return -ESTALE;
	if (status == 416)
		return -ERANGE;
	if (status == 408 || status == 504)
		return -ETIMEDOUT;
	if (status >= 500)
		return -EIO;
	return -EINVAL;
}

static int curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static int retryable_curl(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_COULDNT_RESOLVE_HOST:
		return 1;
	default:
		return 0;
	}
}

static int retryable_status(long s)
{
	return s == 408 || s == 429 || (s >= 500 && s <= 599 && s != 501 && s != 505);
}

/* Backoff before attempt n (1-based): base * 2^(n-1), capped, with "equal jitter" (half
 * fixed, half random) so parallel ranges that failed together do not retry together. */
static long backoff_ms(int n, unsigned int *seed)
{
	long ms = BACKOFF_BASE_MS;
	for (int i = 1; i < n && ms < BACKOFF_MAX_MS; i++)
		ms *= 2;
	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	return ms / 2 + (long)(rand_r(seed) % (unsigned int)(ms / 2 + 1));
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* "Code (Message)" from an error reply: XML body <Error><Code>..<Message>.., or the
 * x-ms-error-code header (HEAD replies have no body). */
static void service_error(const struct hsm_http_resp *r, char *out, size_t len)
{
	const char *code = NULL, *msg = NULL;
	struct hsm_xml *x = NULL;

	out[0] = '\0';
	if (r->body_len && hsm_xml_parse(r->body, r->body_len, &x) == 0) {
		int root = hsm_xml_root(x);
		code = hsm_xml_child_text(x, root, "Code");
		msg = hsm_xml_child_text(x, root, "Message");
	}
	if (!code)
		code = hsm_http_resp_header(r, "x-ms-error-code");
	if (code && msg) {
		/* Azure messages carry RequestId and Time on further lines: keep the first. */
		size_t ml = strcspn(msg, "\r\n");
		snprintf(out, len, " %s (%.*s)", code, (int)(ml > 300 ? 300 : ml), msg);
	} else if (code) {
		snprintf(out, len, " %s", code);
	}
	hsm_xml_free(x);
}

static void setup(CURL *c, struct hsm_http *h, const struct hsm_http_req *req,
		  struct attempt *a, struct curl_slist *list)
{
	curl_easy_setopt(c, CURLOPT_URL, req->url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, h->opts.connect_timeout);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->opts.stall_timeout);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, a);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	if (h->share)
		curl_easy_setopt(c, CURLOPT_SHARE, h->share);
	if (strcmp(req->method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else if (strcmp(req->method, "PUT") == 0 || strcmp(req->method, "POST") == 0) {
		/* Upload with a known length from our buffer; the method name is set below so
		 * POST sends no form Content-Type of curl's own. */
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, a);
		curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(c, CURLOPT_SEEKDATA, a);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->body_len);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
	} else if (strcmp(req->method, "GET") != 0) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
	}
}

static long retry_after_ms(const struct hsm_http_resp *r)
{
	const char *v = hsm_http_resp_header(r, "retry-after");
	int64_t s;

	if (!v || parse_i64(v, 0, RETRY_AFTER_MAX_S, &s) < 0)
		return -1;
	return (long)s * 1000;
}

int hsm_http_do(struct hsm_http *h, const struct hsm_http_req *req, struct hsm_http_resp *resp,
		char *err, size_t err_len)
{
	struct curl_slist *list = NULL, *nl;
	char ebuf[CURL_ERROR_SIZE], safe[1024], svc[400];
	unsigned int seed = (unsigned int)time(NULL) ^ (unsigned int)(uintptr_t)req;
	CURLcode cc = CURLE_OK;
	int rc = 0;
	CURL *c;

	memset(resp, 0, sizeof(*resp));
	redact_url(req->url, safe, sizeof(safe));
	if (req->hdrs && req->hdrs->overflow) {
		snprintf(err, err_len, "%s %s: too many request headers", req->method, safe);
		return -E2BIG;
	}
	for (int i = 0; req->hdrs && i < req->hdrs->n; i++) {
		char line[8192];
		if ((size_t)snprintf(line, sizeof(line), "%s: %s", req->hdrs->name[i],
				     req->hdrs->value[i]) >= sizeof(line)) {
			snprintf(err, err_len, "%s %s: header %s too long", req->method, safe,
				 req->hdrs->name[i]);
			rc = -E2BIG;
			goto out_free_list;
		}
		nl = curl_slist_append(list, line);
		if (!nl) {
			rc = -ENOMEM;
			goto out_free_list;
		}
		list = nl;
	}
	/* No "Expect: 100-continue" round trip: our bodies are bounded blocks, and some
	 * servers handle it badly. */
	nl = curl_slist_append(list, "Expect:");
	if (!nl) {
		rc = -ENOMEM;
		goto out_free_list;
	}
	list = nl;
	c = handle_get(h);
	if (!c) {
		rc = -ENOMEM;
		goto out_free_list;
	}
	for (int attempt_no = 0;; attempt_no++) {
		struct attempt a = { .req = req, .resp = resp };
		long wait;

		hsm_http_resp_fini(resp);
		setup(c, h, req, &a, list);
		ebuf[0] = '\0';
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
		cc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
		if (a.sink_rc) {
			rc = a.sink_rc;
			if (rc == -ECANCELED)
				snprintf(err, err_len, "%s %s: canceled", req->method, safe);
			else if (rc == -EFBIG)
				snprintf(err, err_len, "%s %s: reply larger than %zu bytes",
					 req->method, safe, req->max_body ? req->max_body : 1u << 20);
			else
				snprintf(err, err_len, "%s %s: writing the data failed: %s",
					 req->method, safe, strerror(-rc));
			break;
		}
		if (a.collect_oom) {
			rc = -ENOMEM;
			snprintf(err, err_len, "%s %s: out of memory", req->method, safe);
			break;
		}
		if (cc != CURLE_OK) {
			rc = curl_errno(cc);
			snprintf(err, err_len, "%s %s: %s (after %d attempts)", req->method, safe,
				 ebuf[0] ? ebuf : curl_easy_strerror(cc), attempt_no + 1);
			if (!retryable_curl(cc) || attempt_no >= h->opts.retries)
				break;
			wait = backoff_ms(attempt_no + 1, &seed);
		} else if (resp->status >= 200 && resp->status <= 299) {
			rc = 0;
			break;
		} else {
			rc = status_errno(resp->status);
			service_error(resp, svc, sizeof(svc));
			snprintf(err, err_len, "%s %s: HTTP %ld%s", req->method, safe, resp->status,
				 svc);
			if (!retryable_status(resp->status) || attempt_no >= h->opts.retries) {
				if (attempt_no > 0) {
					size_t l = strlen(err);
					snprintf(err + l, err_len > l ? err_len - l : 0,
						 " (after %d attempts)", attempt_no + 1);
				}
				break;
			}
			wait = retry_after_ms(resp);
			if (wait < 0)
				wait = backoff_ms(attempt_no + 1, &seed);
		}
		if (req->xfer && atomic_load(&req->xfer->canceled)) {
			rc = -ECANCELED;
			snprintf(err, err_len, "%s %s: canceled", req->method, safe);
			break;
		}
		sleep_ms(wait);
	}
	if (cc != CURLE_OK && rc != 0 && rc != -ECANCELED) {
		/* A handle whose transfer failed may hold a broken connection: drop it. */
		curl_easy_cleanup(c);
	} else {
		handle_put(h, c);
	}
out_free_list:
	curl_slist_free_all(list);
	return rc;
}
