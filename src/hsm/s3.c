/* s3.c - the S3 backend: s3://bucket[/prefix], path-style URLs against the endpoint.
 *
 * Requests are signed with SigV4 here (OpenSSL HMAC), with x-amz-content-sha256 (the payload
 * hash of control bodies; UNSIGNED-PAYLOAD for data, whose integrity Content-MD5 covers).
 * Small objects are one PutObject, checked against the ETag; bigger ones are a multipart
 * upload with parts in parallel, aborted on failure. Downloads are parallel ranged GETs
 * pinned to the ETag. ListObjectsV2 carries no user metadata, so a listing asks HeadObject
 * for each key, in parallel.
 * A copytool killed mid-upload cannot abort its multipart upload: the parts stay, invisible
 * but billed, until an AbortIncompleteMultipartUpload lifecycle rule on the bucket removes
 * them (the usual S3 practice). There is no cleanup op: it would need
 * ListMultipartUploads, which s3rver, the server the tests run against, does not implement.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "hsm/backend_impl.h"
#include "hsm/http.h"

#define S3_META "x-amz-meta-"
#define S3_MIN_PART (5ull * 1024 * 1024)
#define S3_MAX_PARTS 10000
#define S3_MAX_PUT (5ull * 1024 * 1024 * 1024)
#define S3_URL_MAX (3 * NACRE_PATH_MAX + 2048)
#define UNSIGNED "UNSIGNED-PAYLOAD"
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3 {
	char bucket[64];
	char prefix[NACRE_PATH_MAX + 1];
	char base[512];      /* scheme://host[:port][/path] */
	char host[256];      /* host[:port] as sent in Host */
	char base_path[256]; /* "" or the endpoint's path */
	char akid[256];
	char secret[256];
	char token[4096]; /* AWS_SESSION_TOKEN, or "" */
	char region[64];
	struct hsm_http *http;
	int threads;
	uint64_t part_size;
	uint64_t block_size; /* for ranged downloads */
};

struct qparam {
	const char *name;
	const char *value;
};

/* ---- SigV4 ---- */

struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static void sb_str(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *np = realloc(b->p, cap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

struct hline {
	char *name; /* lowercased */
	const char *value;
};

static int cmp_hline(const void *a, const void *b)
{
	return strcmp(((const struct hline *)a)->name, ((const struct hline *)b)->name);
}

/* Header value for signing: trimmed, inner runs of spaces collapsed to one. */
static void sb_trimmed(struct sbuf *b, const char *v)
{
	char one[2] = { 0, 0 };
	int space = 0;

	while (*v == ' ' || *v == '\t')
		v++;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t') {
			space = 1;
			continue;
		}
		if (space)
			sb_str(b, " ");
		space = 0;
		one[0] = *v;
		sb_str(b, one);
	}
}

int hsm_s3_sign(const char *method, const char *canon_uri, const char *canon_query,
		const struct hsm_hdrs *h, const char *payload_hash, const char *akid,
		const char *secret, const char *region, const char *service,
		const char *amz_date, char *auth, size_t auth_len)
{
	struct hline lines[HSM_HDRS_MAX];
	struct sbuf cr = { 0 }, signed_h = { 0 }, sts = { 0 };
	unsigned char hash[32], k1[32], k2[32], k3[32], k4[32], sig[32];
	char hex[65], day[9], sighex[65], kdate[300];
	int n = 0, rc = 0;

	for (int i = 0; i < h->n; i++) {
		lines[n].name = strdup(h->name[i]);
		if (!lines[n].name) {
			rc = -ENOMEM;
			goto out;
		}
		for (char *p = lines[n].name; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		lines[n++].value = h->value[i];
	}
	qsort(lines, (size_t)n, sizeof(lines[0]), cmp_hline);
	sb_str(&cr, method);
	sb_str(&cr, "\n");
	sb_str(&cr, canon_uri);
	sb_str(&cr, "\n");
	sb_str(&cr, canon_query);
	sb_str(&cr, "\n");
	for (int i = 0; i < n; i++) {
		sb_str(&cr, lines[i].name);
		sb_str(&cr, ":");
		sb_trimmed(&cr, lines[i].value);
		sb_str(&cr, "\n");
		if (i)
			sb_str(&signed_h, ";");
		sb_str(&signed_h, lines[i].name);
	}
	sb_str(&cr, "\n");
	sb_str(&cr, signed_h.p ? signed_h.p : "");
	sb_str(&cr, "\n");
	sb_str(&cr, payload_hash);
	if (cr.oom || signed_h.oom) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = hsm_sha256(cr.p, cr.len, hash)) < 0)
		goto out;
	hsm_hex(hash, 32, hex);
	snprintf(day, sizeof(day), "%.8s", amz_date);
	sb_str(&sts, "AWS4-HMAC-SHA256\n");
	sb_str(&sts, amz_date);
	sb_str(&sts, "\n");
	sb_str(&sts, day);
	sb_str(&sts, "/");
	sb_str(&sts, region);
	sb_str(&sts, "/");
	sb_str(&sts, service);
	sb_str(&sts, "/aws4_request\n");
	sb_str(&sts, hex);
	if (sts.oom) {
		rc = -ENOMEM;
		goto out;
	}
	/* The signing key: HMAC chain over date, region, service, "aws4_request". */
	snprintf(kdate, sizeof(kdate), "AWS4%s", secret);
	if ((rc = hsm_hmac_sha256(kdate, strlen(kdate), day, strlen(day), k1)) < 0 ||
	    (rc = hsm_hmac_sha256(k1, 32, region, strlen(region), k2)) < 0 ||
	    (rc = hsm_hmac_sha256(k2, 32, service, strlen(service), k3)) < 0 ||
	    (rc = hsm_hmac_sha256(k3, 32, "aws4_request", 12, k4)) < 0 ||
	    (rc = hsm_hmac_sha256(k4, 32, sts.p, sts.len, sig)) < 0)
		goto out;
	hsm_hex(sig, 32, sighex);
	if ((size_t)snprintf(auth, auth_len,
			     "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
			     "SignedHeaders=%s, Signature=%s",
			     akid, day, region, service, signed_h.p, sighex) >= auth_len)
		rc = -E2BIG;
out:
	for (int i = 0; i < n; i++)
		free(lines[i].name);
	free(cr.p);
	free(signed_h.p);
	free(sts.p);
	return rc;
}

/* ---- requests ---- */

struct call {
	const char *method;
	const char *key; /* object key, or NULL for the bucket */
	const struct qparam *q;
	int nq;
	struct hsm_hdrs *hdrs;
	const void *body;
	size_t body_len;
	int unsigned_payload; /* data bodies: integrity from Content-MD5 instead */
	hsm_http_sink_fn sink;
	void *sink_arg;
	size_t max_body;
	struct hsm_xfer *xfer;
};

static int cmp_q(const void *a, const void *b)
{
	int c = strcmp(((const struct qparam *)a)->name, ((const struct qparam *)b)->name);
	return c ? c : strcmp(((const struct qparam *)a)->value, ((const struct qparam *)b)->value);
}

static int s3_call(struct s3 *s, const struct call *c, struct hsm_http_resp *resp, char *err,
		   size_t err_len)
{
	char *url = malloc(S3_URL_MAX), *path = malloc(S3_URL_MAX), *query = malloc(S3_URL_MAX);
	char date[32], day[16], hash[65], auth[1024];
	struct qparam sq[8];
	size_t pl, ql = 0;
	int rc;

	if (!url || !path || !query || c->nq > (int)ARRAY_SIZE(sq)) {
		rc = -ENOMEM;
		goto out_free;
	}
	pl = (size_t)snprintf(path, S3_URL_MAX, "%s/%s", s->base_path, s->bucket);
	if (c->key) {
		path[pl++] = '/';
		if (hsm_url_encode(c->key, 1, path + pl, S3_URL_MAX - pl) >= S3_URL_MAX - pl) {
			rc = -ENAMETOOLONG;
			snprintf(err, err_len, "object key too long: %s", c->key);
			goto out_free;
		}
	}
	/* The canonical query is sorted and fully encoded; send it in that same form. */
	if (c->nq) {
		memcpy(sq, c->q, (size_t)c->nq * sizeof(*sq));
		qsort(sq, (size_t)c->nq, sizeof(sq[0]), cmp_q);
	}
	query[0] = '\0';
	for (int i = 0; i < c->nq && ql < S3_URL_MAX; i++) {
		if (i)
			query[ql++] = '&';
		ql += hsm_url_encode(sq[i].name, 0, query + ql, S3_URL_MAX - ql);
		if (ql + 1 < S3_URL_MAX)
			query[ql++] = '=';
		if (ql < S3_URL_MAX)
			ql += hsm_url_encode(sq[i].value, 0, query + ql, S3_URL_MAX - ql);
	}
	if (ql >= S3_URL_MAX ||
	    (size_t)snprintf(url, S3_URL_MAX, "%s%s%s%s", s->base, path + strlen(s->base_path),
			     ql ? "?" : "", query) >= S3_URL_MAX) {
		rc = -ENAMETOOLONG;
		snprintf(err, err_len, "request URL for %s too long", c->key ? c->key : "listing");
		goto out_free;
	}
	if (c->unsigned_payload) {
		str_copy(hash, UNSIGNED, sizeof(hash));
	} else {
		unsigned char h[32];
		if ((rc = hsm_sha256(c->body ? c->body : "", c->body_len, h)) < 0)
			goto out_free;
		hsm_hex(h, 32, hash);
	}
	hsm_amz_date(date, sizeof(date), day, sizeof(day));
	if ((rc = hsm_hdrs_set(c->hdrs, "Host", s->host)) < 0 ||
	    (rc = hsm_hdrs_set(c->hdrs, "x-amz-date", date)) < 0 ||
	    (rc = hsm_hdrs_set(c->hdrs, "x-amz-content-sha256", hash)) < 0 ||
	    (s->token[0] && (rc = hsm_hdrs_set(c->hdrs, "x-amz-security-token", s->token)) < 0))
		goto out_free;
	if ((rc = hsm_s3_sign(c->method, path, query, c->hdrs, hash, s->akid, s->secret,
			      s->region, "s3", date, auth, sizeof(auth))) < 0 ||
	    (rc = hsm_hdrs_set(c->hdrs, "Authorization", auth)) < 0)
		goto out_free;
	struct hsm_http_req req = { .method = c->method, .url = url, .hdrs = c->hdrs,
				    .body = c->body, .body_len = c->body_len, .sink = c->sink,
				    .sink_arg = c->sink_arg, .max_body = c->max_body,
				    .xfer = c->xfer };
	rc = hsm_http_do(s->http, &req, resp, err, err_len);
	if (rc == -EACCES) {
		size_t l = strlen(err);
		snprintf(err + l, err_len > l ? err_len - l : 0,
			 ": bucket '%s' refused access key '%s'; check AWS_ACCESS_KEY_ID, "
			 "AWS_SECRET_ACCESS_KEY and AWS_REGION (environment or credentials file)",
			 s->bucket, s->akid);
	}
out_free:
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory");
	free(url);
	free(path);
	free(query);
	return rc;
}

/* ---- open/close ---- */

static void s3_close(void *priv)
{
	struct s3 *s = priv;
	if (!s)
		return;
	hsm_http_destroy(s->http);
	free(s);
}

static int s3_open(const char *rest, const struct hsm_backend_opts *opts, void **priv,
		   char *err, size_t err_len)
{
	struct hsm_http_opts ho = { .retries = opts->retries ? opts->retries : 5 };
	char endpoint[512] = "";
	struct s3 *s;
	size_t n;
	int rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	n = strcspn(rest, "/");
	if (n < 3 || n >= sizeof(s->bucket)) {
		snprintf(err, err_len,
			 "s3://%s: bucket names are 3 to 63 characters; use s3://bucket[/prefix]",
			 rest);
		rc = -EINVAL;
		goto out_free;
	}
	memcpy(s->bucket, rest, n);
	rest += n;
	while (*rest == '/')
		rest++;
	if (str_copy(s->prefix, rest, sizeof(s->prefix)) >= sizeof(s->prefix)) {
		snprintf(err, err_len, "s3://%s: prefix too long", s->bucket);
		rc = -ENAMETOOLONG;
		goto out_free;
	}
	for (n = strlen(s->prefix); n && s->prefix[n - 1] == '/'; n--)
		s->prefix[n - 1] = '\0';

	if ((rc = hsm_cred_get(opts->credentials, "AWS_ACCESS_KEY_ID", s->akid, sizeof(s->akid),
			       err, err_len)) < 0 ||
	    (rc = hsm_cred_get(opts->credentials, "AWS_SECRET_ACCESS_KEY", s->secret,
			       sizeof(s->secret), err, err_len)) < 0 ||
	    (rc = hsm_cred_get(opts->credentials, "AWS_SESSION_TOKEN", s->token,
			       sizeof(s->token), err, err_len)) < 0 ||
	    (rc = hsm_cred_get(opts->credentials, "AWS_REGION", s->region, sizeof(s->region),
			       err, err_len)) < 0)
		goto out_free;
	if (!s->region[0] &&
	    (rc = hsm_cred_get(opts->credentials, "AWS_DEFAULT_REGION", s->region,
			       sizeof(s->region), err, err_len)) < 0)
		goto out_free;
	if (!s->region[0])
		str_copy(s->region, "us-east-1", sizeof(s->region));
	if (!s->akid[0] || !s->secret[0]) {
		snprintf(err, err_len,
			 "no credentials for bucket '%s': set AWS_ACCESS_KEY_ID and "
			 "AWS_SECRET_ACCESS_KEY in the environment or the credentials file",
			 s->bucket);
		rc = -EACCES;
		goto out_free;
	}

	if (opts->endpoint && *opts->endpoint)
		str_copy(endpoint, opts->endpoint, sizeof(endpoint));
	else
		snprintf(endpoint, sizeof(endpoint), "https://s3.%s.amazonaws.com", s->region);
	const char *hs = strstr(endpoint, "://");
	if (!hs || !hs[3] || str_copy(s->base, endpoint, sizeof(s->base)) >= sizeof(s->base)) {
		snprintf(err, err_len, "s3 endpoint '%s' is not a URL like http://127.0.0.1:4568",
			 endpoint);
		rc = -EINVAL;
		goto out_free;
	}
	for (n = strlen(s->base); n && s->base[n - 1] == '/'; n--)
		s->base[n - 1] = '\0';
	hs += 3;
	n = strcspn(hs, "/");
	if (n == 0 || n >= sizeof(s->host)) {
		snprintf(err, err_len, "s3 endpoint '%s' has no host", endpoint);
		rc = -EINVAL;
		goto out_free;
	}
	memcpy(s->host, hs, n);
	s->host[n] = '\0';
	str_copy(s->base_path, s->base + (hs - endpoint) + n, sizeof(s->base_path));

	s->threads = opts->threads > 0 ? opts->threads : 4;
	s->block_size = opts->block_size ? opts->block_size : 8ull * 1024 * 1024;
	/* AWS refuses parts under 5 MiB (but the last): never go below. */
	s->part_size = s->block_size < S3_MIN_PART ? S3_MIN_PART : s->block_size;
	rc = hsm_http_create(&ho, &s->http);
	if (rc < 0)
		goto out_free;
	*priv = s;
	return 0;
out_free:
	s3_close(s);
	return rc;
}

/* ---- helpers ---- */

/* The ETag without quotes, when it is a plain MD5 (single-part, not SSE-KMS). */
static int etag_md5(const struct hsm_http_resp *resp, char out[33])
{
	const char *e = hsm_http_resp_header(resp, "etag");
	const char *sse = hsm_http_resp_header(resp, "x-amz-server-side-encryption");
	size_t n;

	if (!e || (sse && strcmp(sse, "AES256") != 0))
		return 0;
	if (*e == '"')
		e++;
	n = strcspn(e, "\"");
	if (n != 32)
		return 0;
	for (size_t i = 0; i < 32; i++)
		if (!isxdigit((unsigned char)e[i]))
			return 0;
	for (size_t i = 0; i < 32; i++)
		out[i] = (char)tolower((unsigned char)e[i]);
	out[32] = '\0';
	return 1;
}

static int md5_both(const void *buf, size_t len, char b64[32], char hex[33])
{
	unsigned char md[16];
	int rc = hsm_md5(buf, len, md);
	if (rc < 0)
		return rc;
	hsm_hex(md, 16, hex);
	return hsm_base64_encode(md, 16, b64, 32) < 0 ? -EINVAL : 0;
}

static int head_object(struct s3 *s, const char *key, struct hsm_meta *meta,
		       struct hsm_http_resp *resp, char *err, size_t err_len)
{
	struct hsm_hdrs h;
	char md5[33];
	int64_t size;
	int rc;

	hsm_hdrs_init(&h);
	struct call c = { .method = "HEAD", .key = key, .hdrs = &h };
	rc = s3_call(s, &c, resp, err, err_len);
	hsm_hdrs_fini(&h);
	if (rc < 0)
		return rc;
	memset(meta, 0, sizeof(*meta));
	const char *cl = hsm_http_resp_header(resp, "content-length");
	if (!cl || parse_i64(cl, 0, INT64_MAX, &size) < 0) {
		snprintf(err, err_len, "HEAD of object %s: no valid Content-Length", key);
		return -EPROTO;
	}
	meta->size = (uint64_t)size;
	hsm_meta_from_resp(meta, resp, S3_META);
	if (etag_md5(resp, md5))
		snprintf(meta->checksum, sizeof(meta->checksum), "md5:%s", md5);
	return 0;
}

static int key_of(struct s3 *s, const char *path, char *key, size_t len, char *err,
		  size_t err_len)
{
	if (hsm_object_key(s->prefix, path, key, len) < 0) {
		snprintf(err, err_len, "invalid object path '%s'", path);
		return -EINVAL;
	}
	return 0;
}

/* ---- put ---- */

struct mpu {
	struct s3 *s;
	const char *key;
	const char *upload_id;
	char (*etags)[40]; /* per part, quoted */
	struct hsm_xfer *xfer;
};

static int upload_part(void *ctx, size_t i, const void *buf, size_t len, char *err,
		       size_t err_len)
{
	struct mpu *m = ctx;
	char num[16], b64[32], hex[33], got[33];
	struct qparam q[] = { { "partNumber", num }, { "uploadId", m->upload_id } };
	struct hsm_http_resp resp;
	struct hsm_hdrs h;
	int rc;

	snprintf(num, sizeof(num), "%zu", i + 1);
	hsm_hdrs_init(&h);
	if ((rc = md5_both(buf, len, b64, hex)) < 0 ||
	    (rc = hsm_hdrs_set(&h, "Content-MD5", b64)) < 0)
		goto out;
	struct call c = { .method = "PUT", .key = m->key, .q = q, .nq = 2, .hdrs = &h,
			  .body = buf, .body_len = len, .unsigned_payload = 1, .xfer = m->xfer };
	rc = s3_call(m->s, &c, &resp, err, err_len);
	if (rc == 0) {
		const char *e = hsm_http_resp_header(&resp, "etag");
		if (!e) {
			snprintf(err, err_len, "part %zu of %s: no ETag in the reply", i + 1, m->key);
			rc = -EPROTO;
		} else if (etag_md5(&resp, got) && strcmp(got, hex) != 0) {
			snprintf(err, err_len, "part %zu of %s stored with ETag %s, sent MD5 %s",
				 i + 1, m->key, got, hex);
			rc = -EIO;
		} else {
			snprintf(m->etags[i], sizeof(m->etags[i]), "%s%.36s%s", *e == '"' ? "" : "\"",
				 e, *e == '"' ? "" : "\"");
		}
	}
	hsm_http_resp_fini(&resp);
out:
	hsm_hdrs_fini(&h);
	return rc;
}

static void abort_upload(struct s3 *s, const char *key, const char *upload_id)
{
	struct qparam q[] = { { "uploadId", upload_id } };
	struct hsm_http_resp resp;
	struct hsm_hdrs h;
	char err[256];

	hsm_hdrs_init(&h);
	struct call c = { .method = "DELETE", .key = key, .q = q, .nq = 1, .hdrs = &h };
	/* Best effort: a failed abort leaves parts a bucket lifecycle rule cleans up. */
	s3_call(s, &c, &resp, err, sizeof(err));
	hsm_http_resp_fini(&resp);
	hsm_hdrs_fini(&h);
}

static int multipart(struct s3 *s, const char *key, uint64_t size, hsm_read_fn rd,
		     void *rd_arg, const struct hsm_meta *meta, struct hsm_xfer *xfer, char *err,
		     size_t err_len)
{
	uint64_t ps = s->part_size;
	struct hsm_http_resp resp = { 0 };
	struct hsm_xml *x = NULL;
	struct sbuf body = { 0 };
	char *upload_id = NULL;
	struct hsm_hdrs h;
	size_t nparts;
	int rc;

	if ((size + ps - 1) / ps > S3_MAX_PARTS)
		ps = (size + S3_MAX_PARTS - 1) / S3_MAX_PARTS;
	nparts = (size_t)((size + ps - 1) / ps);
	hsm_hdrs_init(&h);
	if (meta && (rc = hsm_meta_to_headers(meta, S3_META, &h)) < 0)
		goto out;
	struct qparam q0[] = { { "uploads", "" } };
	struct call c0 = { .method = "POST", .key = key, .q = q0, .nq = 1, .hdrs = &h };
	if ((rc = s3_call(s, &c0, &resp, err, err_len)) < 0)
		goto out;
	if (hsm_xml_parse(resp.body ? resp.body : "", resp.body_len, &x) < 0 ||
	    !hsm_xml_child_text(x, hsm_xml_root(x), "UploadId") ||
	    !(upload_id = strdup(hsm_xml_child_text(x, hsm_xml_root(x), "UploadId")))) {
		snprintf(err, err_len, "CreateMultipartUpload of %s: no UploadId in the reply", key);
		rc = -EPROTO;
		goto out;
	}
	hsm_xml_free(x);
	x = NULL;
	hsm_http_resp_fini(&resp);

	struct mpu m = { .s = s, .key = key, .upload_id = upload_id, .xfer = xfer };
	m.etags = calloc(nparts, sizeof(*m.etags));
	if (!m.etags) {
		rc = -ENOMEM;
		goto out_abort;
	}
	rc = hsm_put_parts(s->threads, size, ps, rd, rd_arg, upload_part, &m, xfer, err, err_len);
	if (rc < 0)
		goto out_abort;
	sb_str(&body, "<CompleteMultipartUpload>");
	for (size_t i = 0; i < nparts; i++) {
		char part[96];
		snprintf(part, sizeof(part), "<Part><PartNumber>%zu</PartNumber><ETag>", i + 1);
		sb_str(&body, part);
		/* ETags are hex in quotes: escape the quotes for XML. */
		for (const char *e = m.etags[i]; *e; e++) {
			char one[2] = { *e, 0 };
			sb_str(&body, *e == '"' ? "&quot;" : one);
		}
		sb_str(&body, "</ETag></Part>");
	}
	sb_str(&body, "</CompleteMultipartUpload>");
	if (body.oom) {
		rc = -ENOMEM;
		goto out_abort;
	}
	hsm_hdrs_fini(&h);
	hsm_hdrs_init(&h);
	if ((rc = hsm_hdrs_set(&h, "Content-Type", "application/xml")) < 0)
		goto out_abort;
	struct qparam q1[] = { { "uploadId", upload_id } };
	struct call c1 = { .method = "POST", .key = key, .q = q1, .nq = 1, .hdrs = &h,
			   .body = body.p, .body_len = body.len };
	if ((rc = s3_call(s, &c1, &resp, err, err_len)) < 0)
		goto out_abort;
	/* S3 may answer 200 and put the failure in the body. */
	if (resp.body_len && hsm_xml_parse(resp.body, resp.body_len, &x) == 0 &&
	    strcmp(hsm_xml_name(x, hsm_xml_root(x)), "Error") == 0) {
		const char *code = hsm_xml_child_text(x, hsm_xml_root(x), "Code");
		snprintf(err, err_len, "CompleteMultipartUpload of %s failed: %s", key,
			 code ? code : "unknown error");
		rc = -EIO;
		goto out_abort;
	}
	free(m.etags);
	goto out;
out_abort:
	free(m.etags);
	abort_upload(s, key, upload_id);
out:
	hsm_xml_free(x);
	free(body.p);
	free(upload_id);
	hsm_http_resp_fini(&resp);
	hsm_hdrs_fini(&h);
	return rc;
}

static int s3_put(void *priv, const char *path, uint64_t size, hsm_read_fn rd, void *rd_arg,
		  const struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg,
		  char *err, size_t err_len)
{
	struct s3 *s = priv;
	char key[NACRE_PATH_MAX + 1], b64[32], hex[33], got[33];
	struct hsm_http_resp resp = { 0 };
	struct hsm_xfer xfer;
	struct hsm_hdrs h;
	char *buf = NULL;
	int rc;

	if ((rc = key_of(s, path, key, sizeof(key), err, err_len)) < 0)
		return rc;
	hsm_xfer_init(&xfer, progress, progress_arg);
	hsm_hdrs_init(&h);
	if (!(meta && S_ISDIR(meta->mode)) && size > s->part_size) {
		rc = multipart(s, key, size, rd, rd_arg, meta, &xfer, err, err_len);
		if (rc < 0)
			goto out;
		/* The multipart ETag is no MD5: verify the size of what was assembled. */
		struct hsm_meta m;
		rc = head_object(s, key, &m, &resp, err, err_len);
		if (rc == 0 && m.size != size) {
			snprintf(err, err_len, "object %s has %llu bytes after upload, expected %llu",
				 key, (unsigned long long)m.size, (unsigned long long)size);
			rc = -EIO;
		}
		goto out;
	}
	size_t len = meta && S_ISDIR(meta->mode) ? 0 : (size_t)size;
	buf = malloc(len ? len : 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	if (len && (rc = hsm_read_full(rd, rd_arg, buf, len, 0)) < 0) {
		snprintf(err, err_len, "reading %s to archive failed: %s", path, strerror(-rc));
		goto out;
	}
	if ((meta && (rc = hsm_meta_to_headers(meta, S3_META, &h)) < 0) ||
	    (rc = md5_both(buf, len, b64, hex)) < 0 ||
	    (rc = hsm_hdrs_set(&h, "Content-MD5", b64)) < 0)
		goto out;
	struct call c = { .method = "PUT", .key = key, .hdrs = &h, .body = buf, .body_len = len,
			  .unsigned_payload = 1, .xfer = &xfer };
	if ((rc = s3_call(s, &c, &resp, err, err_len)) < 0)
		goto out;
	if (etag_md5(&resp, got) && strcmp(got, hex) != 0) {
		snprintf(err, err_len, "object %s stored with ETag %s but its MD5 is %s", key, got,
			 hex);
		rc = -EIO;
		goto out;
	}
	if ((rc = hsm_xfer_add(&xfer, len)) < 0)
		snprintf(err, err_len, "archive of %s canceled", path);
out:
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory archiving %s", path);
	hsm_http_resp_fini(&resp);
	hsm_hdrs_fini(&h);
	hsm_xfer_fini(&xfer);
	free(buf);
	return rc;
}

/* ---- get ---- */

struct s3_get {
	struct s3 *s;
	const char *key;
	const char *etag;
	struct hsm_xfer *xfer;
};

static int get_range(void *ctx, uint64_t off, size_t len, void *buf, char *err, size_t err_len)
{
	struct s3_get *g = ctx;
	struct hsm_buf_sink sink = { .buf = buf, .len = len };
	struct hsm_http_resp resp;
	char range[64];
	struct hsm_hdrs h;
	int rc;

	hsm_hdrs_init(&h);
	snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
		 (unsigned long long)(off + len - 1));
	if ((rc = hsm_hdrs_set(&h, "Range", range)) < 0 ||
	    (g->etag && (rc = hsm_hdrs_set(&h, "If-Match", g->etag)) < 0))
		goto out;
	struct call c = { .method = "GET", .key = g->key, .hdrs = &h, .sink = hsm_buf_sink_fn,
			  .sink_arg = &sink, .xfer = g->xfer };
	rc = s3_call(g->s, &c, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
	if (rc == 0 && sink.got != len) {
		snprintf(err, err_len, "object %s: range %s returned %zu bytes", g->key, range,
			 sink.got);
		rc = -EIO;
	}
out:
	hsm_hdrs_fini(&h);
	return rc;
}

static int s3_get(void *priv, const char *path, hsm_write_fn wr, void *wr_arg,
		  struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg, char *err,
		  size_t err_len)
{
	struct s3 *s = priv;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_http_resp resp = { 0 };
	struct hsm_xfer xfer;
	struct hsm_meta m;
	char *etag = NULL;
	int rc;

	if ((rc = key_of(s, path, key, sizeof(key), err, err_len)) < 0)
		return rc;
	if ((rc = head_object(s, key, &m, &resp, err, err_len)) < 0)
		goto out_resp;
	const char *et = hsm_http_resp_header(&resp, "etag");
	if (et && !(etag = strdup(et))) {
		rc = -ENOMEM;
		goto out_resp;
	}
	hsm_xfer_init(&xfer, progress, progress_arg);
	struct s3_get g = { .s = s, .key = key, .etag = etag, .xfer = &xfer };
	if (S_ISDIR(m.mode)) {
		rc = 0;
	} else if (m.size <= s->block_size && m.checksum[0]) {
		/* One range: check the whole content against the ETag (its MD5). */
		char *buf = malloc(m.size ? m.size : 1), hex[33];
		unsigned char md[16];
		rc = buf ? 0 : -ENOMEM;
		if (!rc && m.size)
			rc = get_range(&g, 0, (size_t)m.size, buf, err, err_len);
		if (!rc && (rc = hsm_md5(buf, (size_t)m.size, md)) == 0) {
			hsm_hex(md, 16, hex);
			if (strcmp(m.checksum + 4, hex) != 0) {
				snprintf(err, err_len, "object %s: content MD5 %s differs from ETag %s",
					 key, hex, m.checksum + 4);
				rc = -EIO;
			}
		}
		for (size_t done = 0; !rc && done < m.size;) {
			ssize_t w = wr(wr_arg, buf + done, (size_t)m.size - done, done);
			if (w <= 0) {
				rc = w < 0 ? (int)w : -EIO;
				snprintf(err, err_len, "writing restored data of %s failed: %s",
					 path, strerror(-rc));
			} else {
				done += (size_t)w;
			}
		}
		if (!rc && (rc = hsm_xfer_add(&xfer, m.size)) < 0)
			snprintf(err, err_len, "restore of %s canceled", path);
		free(buf);
	} else {
		rc = hsm_get_ranges(s->threads, m.size, s->block_size, get_range, &g, wr, wr_arg,
				    &xfer, err, err_len);
	}
	if (rc == 0 && meta)
		*meta = m;
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory restoring %s", path);
	hsm_xfer_fini(&xfer);
out_resp:
	free(etag);
	hsm_http_resp_fini(&resp);
	return rc;
}

static int s3_stat(void *priv, const char *path, struct hsm_meta *meta, char *err,
		   size_t err_len)
{
	struct s3 *s = priv;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_http_resp resp;
	int rc;

	if ((rc = key_of(s, path, key, sizeof(key), err, err_len)) < 0)
		return rc;
	rc = head_object(s, key, meta, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
	return rc;
}

static int s3_remove(void *priv, const char *path, char *err, size_t err_len)
{
	struct s3 *s = priv;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_http_resp resp;
	struct hsm_hdrs h;
	int rc;

	if ((rc = key_of(s, path, key, sizeof(key), err, err_len)) < 0)
		return rc;
	hsm_hdrs_init(&h);
	struct call c = { .method = "DELETE", .key = key, .hdrs = &h };
	rc = s3_call(s, &c, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
	hsm_hdrs_fini(&h);
	/* S3 answers 204 for a missing key; some servers 404 (NoSuchKey, not NoSuchBucket). */
	if (rc == -ENOENT && !strstr(err, "NoSuchBucket"))
		rc = 0;
	return rc;
}

/* ---- list ---- */

struct entry {
	char *key;
	struct hsm_meta meta;
	int gone; /* deleted between the listing and its HEAD */
};

struct heads {
	struct s3 *s;
	struct entry *e;
};

static int head_one(void *arg, size_t i, char *err, size_t err_len)
{
	struct heads *hd = arg;
	struct entry *e = &hd->e[i];
	struct hsm_http_resp resp;
	struct nacre_time mtime = e->meta.mtime;
	int rc = head_object(hd->s, e->key, &e->meta, &resp, err, err_len);

	hsm_http_resp_fini(&resp);
	if (rc == -ENOENT) {
		e->gone = 1;
		return 0;
	}
	if (rc == 0 && e->meta.mtime.sec == 0 && e->meta.mtime.nsec == 0)
		e->meta.mtime = mtime; /* no modtime key: keep LastModified */
	return rc;
}

static int s3_list(void *priv, hsm_list_fn fn, void *arg, char *err, size_t err_len)
{
	struct s3 *s = priv;
	char prefix[NACRE_PATH_MAX + 2], page[16];
	char *token = NULL;
	size_t plen;
	int rc = 0, stop = 0;

	plen = (size_t)snprintf(prefix, sizeof(prefix), "%s%s", s->prefix,
				s->prefix[0] ? "/" : "");
	snprintf(page, sizeof(page), "%d", hsm_list_page_size(1000, 1000));
	do {
		struct qparam q[5] = { { "list-type", "2" }, { "max-keys", page } };
		int nq = 2;
		struct hsm_http_resp resp;
		struct hsm_xml *x = NULL;
		struct entry *ents = NULL;
		size_t ne = 0;
		struct hsm_hdrs h;

		if (plen)
			q[nq++] = (struct qparam){ "prefix", prefix };
		if (token)
			q[nq++] = (struct qparam){ "continuation-token", token };
		hsm_hdrs_init(&h);
		struct call c = { .method = "GET", .q = q, .nq = nq, .hdrs = &h,
				  .max_body = 64u * 1024 * 1024 };
		rc = s3_call(s, &c, &resp, err, err_len);
		hsm_hdrs_fini(&h);
		free(token);
		token = NULL;
		if (rc == 0 && hsm_xml_parse(resp.body ? resp.body : "", resp.body_len, &x) < 0) {
			snprintf(err, err_len, "bucket %s: malformed listing reply", s->bucket);
			rc = -EPROTO;
		}
		hsm_http_resp_fini(&resp);
		if (rc < 0)
			break;
		int root = hsm_xml_root(x);
		size_t cap = 0;
		for (int o = hsm_xml_child(x, root, "Contents"); o >= 0;
		     o = hsm_xml_next(x, o, "Contents"))
			cap++;
		ents = calloc(cap ? cap : 1, sizeof(*ents));
		if (!ents) {
			rc = -ENOMEM;
			hsm_xml_free(x);
			break;
		}
		for (int o = hsm_xml_child(x, root, "Contents"); o >= 0;
		     o = hsm_xml_next(x, o, "Contents")) {
			const char *k = hsm_xml_child_text(x, o, "Key"), *v;
			int64_t size;
			if (!k || strncmp(k, prefix, plen) != 0 || !k[plen])
				continue;
			ents[ne].key = strdup(k);
			if (!ents[ne].key) {
				rc = -ENOMEM;
				break;
			}
			v = hsm_xml_child_text(x, o, "Size");
			if (v && parse_i64(v, 0, INT64_MAX, &size) == 0)
				ents[ne].meta.size = (uint64_t)size;
			v = hsm_xml_child_text(x, o, "LastModified");
			if (v)
				hsm_meta_parse_time(v, &ents[ne].meta.mtime);
			ne++;
		}
		const char *trunc = hsm_xml_child_text(x, root, "IsTruncated");
		const char *next = hsm_xml_child_text(x, root, "NextContinuationToken");
		if (rc == 0 && trunc && strcmp(trunc, "true") == 0 && next && *next &&
		    !(token = strdup(next)))
			rc = -ENOMEM;
		hsm_xml_free(x);
		/* User metadata comes only with HeadObject. */
		struct heads hd = { .s = s, .e = ents };
		if (rc == 0)
			rc = hsm_run_parallel(s->threads, ne, head_one, &hd, err, err_len);
		for (size_t i = 0; i < ne; i++) {
			char *name = ents[i].key + plen;
			size_t nl = strlen(name);
			if (rc == 0 && !stop && !ents[i].gone) {
				/* "dir/" keys, as S3 consoles make them, are directories too. */
				if (nl && name[nl - 1] == '/') {
					name[nl - 1] = '\0';
					ents[i].meta.mode |= S_IFDIR;
				}
				if (*name)
					stop = fn(arg, name, &ents[i].meta);
			}
			free(ents[i].key);
		}
		free(ents);
	} while (rc == 0 && token && !stop);
	free(token);
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory listing bucket %s", s->bucket);
	return rc;
}

const struct hsm_backend_ops hsm_s3_ops = {
	.open = s3_open,
	.close = s3_close,
	.put = s3_put,
	.get = s3_get,
	.stat = s3_stat,
	.remove = s3_remove,
	.list = s3_list,
};
