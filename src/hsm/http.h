/* http.h - what the cloud backends (azure.c, s3.c, and their engine cloud.c) share: a small
 * HTTP client over libcurl with retries, a bounded XML reader for service replies, and helpers
 * (credentials, encodings, parallel tasks, progress and cancel, metadata headers).
 *
 * Nothing here prints: every failure is a negative errno plus a sentence in err that names
 * the URL, the HTTP status and the service's error code.
 */
#ifndef NACRE_HSM_HTTP_H
#define NACRE_HSM_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hsm/backend.h"

/* ---- request headers ---- */

#define HSM_HDRS_MAX 40

/* A request's header list, built by the backend and signed before sending. Names are kept
 * as given; signers lowercase them. Values are copied. */
struct hsm_hdrs {
	int n;
	int overflow; /* set when a header did not fit: hsm_http_do then refuses */
	char *name[HSM_HDRS_MAX];
	char *value[HSM_HDRS_MAX];
};

void hsm_hdrs_init(struct hsm_hdrs *h);
void hsm_hdrs_fini(struct hsm_hdrs *h);
/* Adds (or replaces, matching the name case-insensitively) a header. 0 or -ENOMEM/-E2BIG. */
int hsm_hdrs_set(struct hsm_hdrs *h, const char *name, const char *value);
/* Value of a header or NULL; borrowed until the list changes. */
const char *hsm_hdrs_get(const struct hsm_hdrs *h, const char *name);

/* ---- the client ---- */

struct hsm_http_opts {
	int retries;          /* attempts after the first on 5xx, 429, 408 and transport errors */
	long connect_timeout; /* seconds */
	long stall_timeout;   /* seconds with no byte moved before a transfer is abandoned */
};

struct hsm_http;

/* Progress and cancel state of one transfer (put or get of one object), shared by the
 * threads moving its ranges. */
struct hsm_xfer {
	hsm_progress_fn fn;
	void *arg;
	atomic_uint_fast64_t done;
	atomic_int canceled;
	pthread_mutex_t lock; /* serializes calls to fn so reports stay monotonic */
	uint64_t reported;    /* protected by lock */
};

void hsm_xfer_init(struct hsm_xfer *x, hsm_progress_fn fn, void *arg);
void hsm_xfer_fini(struct hsm_xfer *x);
/* Adds n bytes and reports. Returns 0, or -ECANCELED once the progress callback asked to
 * stop (sticky). Thread-safe. */
int hsm_xfer_add(struct hsm_xfer *x, uint64_t n);

/* Receives a 2xx response body: len bytes at off, where off counts from the start of this
 * attempt's body (a retried request starts again at 0). Returns 0 or -errno to abort. */
typedef int (*hsm_http_sink_fn)(void *arg, const void *data, size_t len, uint64_t off);

struct hsm_http_req {
	const char *method; /* GET, HEAD, PUT, POST, DELETE */
	const char *url;    /* complete, encoded */
	const struct hsm_hdrs *hdrs;
	const void *body;   /* PUT/POST payload; NULL with body_len 0 sends an empty body */
	size_t body_len;
	hsm_http_sink_fn sink; /* 2xx body; NULL collects it into resp->body */
	void *sink_arg;
	size_t max_body;       /* cap of a collected body; 0 = 1 MiB */
	struct hsm_xfer *xfer; /* checked for cancel while bytes move; may be NULL */
};

struct hsm_http_resp {
	long status;
	char *body; /* collected body (always for errors, capped at 64 KiB), NUL-terminated */
	size_t body_len;
	int nhdr;
	char **hname; /* response headers of the final response, names lowercased */
	char **hvalue;
};

/* Creates a client. The pool of curl handles (and so connections) grows to the number of
 * threads using it at once. Thread-safe after creation. 0 or -ENOMEM. */
int hsm_http_create(const struct hsm_http_opts *opts, struct hsm_http **out);
void hsm_http_destroy(struct hsm_http *h); /* NULL is fine */

/* Sends req, retrying with exponential backoff and jitter (honouring Retry-After) on 5xx,
 * 429, 408 and transport errors. Returns 0 on a 2xx answer; otherwise -errno (404 -ENOENT,
 * 401/403 -EACCES, 409/412 -EEXIST/-ESTALE, other 4xx -EINVAL, 5xx -EIO, timeouts
 * -ETIMEDOUT, refused -ECONNREFUSED, cancel -ECANCELED) with err naming the method, the URL
 * (secrets in the query redacted), the status, and the service's error code and message.
 * resp (caller's storage) is filled in both cases; release it with hsm_http_resp_fini. */
int hsm_http_do(struct hsm_http *h, const struct hsm_http_req *req, struct hsm_http_resp *resp,
		char *err, size_t err_len);
void hsm_http_resp_fini(struct hsm_http_resp *resp);
/* A response header's value (name case-insensitive) or NULL; borrowed from resp. */
const char *hsm_http_resp_header(const struct hsm_http_resp *resp, const char *name);

/* ---- XML replies ---- */

/* A parsed XML document: elements with their direct text, entity references decoded.
 * Bounded: depth <= 64, input <= 64 MiB; never trusts a length from the input. */
struct hsm_xml;

/* Parses len bytes. Returns 0, -EPROTO on malformed input or -ENOMEM. */
int hsm_xml_parse(const char *buf, size_t len, struct hsm_xml **out);
void hsm_xml_free(struct hsm_xml *x); /* NULL is fine */
/* Node handles are ints >= 0; -1 means none. The root element is node 0. */
int hsm_xml_root(const struct hsm_xml *x);
/* First child of node with local name (namespace prefix ignored), or any when name is NULL. */
int hsm_xml_child(const struct hsm_xml *x, int node, const char *name);
/* Next sibling after node with local name, or any when name is NULL. */
int hsm_xml_next(const struct hsm_xml *x, int node, const char *name);
/* Local name and decoded text (concatenated direct text) of node; valid until free. */
const char *hsm_xml_name(const struct hsm_xml *x, int node);
const char *hsm_xml_text(const struct hsm_xml *x, int node);
/* Text of the first child named name, or NULL when there is none. */
const char *hsm_xml_child_text(const struct hsm_xml *x, int node, const char *name);

/* ---- helpers ---- */

/* Looks a credential up: the credentials file (KEY=VALUE lines, '#' comments, optional
 * quotes) first, then the environment. Returns 1 found, 0 missing, -errno when the file
 * cannot be read (err says which). Thread-safe. */
int hsm_cred_get(const char *file, const char *key, char *buf, size_t len, char *err,
		 size_t err_len);

/* Percent-encodes s (RFC 3986 unreserved kept; '/' kept when keep_slash). Returns the
 * needed length; output truncated (always NUL-terminated) when it is >= len. */
size_t hsm_url_encode(const char *s, int keep_slash, char *out, size_t len);
/* Base64 (standard alphabet, padded). Returns output length or -E2BIG / -EINVAL. */
int hsm_base64_encode(const void *in, size_t n, char *out, size_t len);
int hsm_base64_decode(const char *in, void *out, size_t len);
void hsm_hex(const void *in, size_t n, char *out); /* out holds 2n+1 */
/* Digests (OpenSSL): MD5 (16 bytes), SHA-256 (32), HMAC-SHA-256 (32). 0 or -EIO. */
int hsm_md5(const void *in, size_t n, unsigned char out[16]);
int hsm_sha256(const void *in, size_t n, unsigned char out[32]);
int hsm_hmac_sha256(const void *key, size_t key_len, const void *in, size_t n,
		    unsigned char out[32]);
/* "Tue, 03 Jan 2023 10:00:00 GMT" and "20230103T100000Z" of now. */
void hsm_http_date(char *buf, size_t len);
void hsm_amz_date(char *buf, size_t len, char *day, size_t day_len);

/* Joins prefix and path into an object key ("prefix/path", or path when prefix is empty).
 * Rejects empty, ".", ".." components and over-long keys with -EINVAL. */
int hsm_object_key(const char *prefix, const char *path, char *out, size_t len);

/* Adds the AMLFS metadata headers of meta ("<hp>owner", group, permissions, modtime,
 * nacre_fid, and hdi_isfolder for directories) to h. hp is "x-ms-meta-" or "x-amz-meta-". */
int hsm_meta_to_headers(const struct hsm_meta *meta, const char *hp, struct hsm_hdrs *h);
/* Fills meta from response headers carrying prefix hp; sets S_IFDIR for folder markers. */
void hsm_meta_from_resp(struct hsm_meta *meta, const struct hsm_http_resp *resp,
			const char *hp);

/* Runs task(arg, i) for i in [0, n) on up to threads threads (the caller's included). Stops
 * handing out tasks after the first failure, whose -errno and err are returned. */
typedef int (*hsm_task_fn)(void *arg, size_t i, char *err, size_t err_len);
int hsm_run_parallel(int threads, size_t n, hsm_task_fn task, void *arg, char *err,
		     size_t err_len);

/* SigV4 (s3.c): the Authorization header of a request all of whose headers h are signed.
 * canon_uri is the encoded path, canon_query the sorted encoded query ("" if none),
 * amz_date "YYYYMMDDTHHMMSSZ". Exposed for AWS's test vectors. 0 or -ENOMEM/-E2BIG. */
int hsm_s3_sign(const char *method, const char *canon_uri, const char *canon_query,
		const struct hsm_hdrs *h, const char *payload_hash, const char *akid,
		const char *secret, const char *region, const char *service,
		const char *amz_date, char *auth, size_t auth_len);

/* Environment knob for tests: page size of listings (NACRE_HSM_LIST_PAGE), else def. */
int hsm_list_page_size(int def, int max);

#endif
