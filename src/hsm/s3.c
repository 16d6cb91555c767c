/* s3.c - the S3 backend: s3://bucket[/prefix], path-style URLs against the endpoint.
 *
 * Objects move through the cloud engine (cloud.c); this file holds what is S3's: SigV4
 * signing (OpenSSL HMAC), with x-amz-content-sha256 (the payload hash of control bodies;
 * UNSIGNED-PAYLOAD for data, whose integrity Content-MD5 covers), the URLs, the multipart
 * verbs and the listing.
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

#include "common/strbuf.h"
#include "common/util.h"
#include "hsm/cloud.h"

#define S3_META "x-amz-meta-"
#define S3_MIN_PART (5ull * 1024 * 1024)
#define S3_MAX_PARTS 10000
#define UNSIGNED "UNSIGNED-PAYLOAD"

struct s3 {
	char host[256]; /* host[:port] as sent in Host */
	char akid[256];
	char secret[256];
	char token[4096]; /* AWS_SESSION_TOKEN, or "" */
	char region[64];
};

/* ---- SigV4 ---- */

struct hline {
	char *name; /* lowercased */
	const char *value;
};

static int cmp_hline(const void *a, const void *b)
{
	return strcmp(((const struct hline *)a)->name, ((const struct hline *)b)->name);
}

/* Header value for signing: trimmed, inner runs of spaces collapsed to one. */
static void add_trimmed(struct strbuf *b, const char *v)
{
	int space = 0;

	while (*v == ' ' || *v == '\t')
		v++;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t') {
			space = 1;
			continue;
		}
		if (space)
			strbuf_char(b, ' ');
		space = 0;
		strbuf_char(b, *v);
	}
}

int hsm_s3_sign(const char *method, const char *canon_uri, const char *canon_query,
		const struct hsm_hdrs *h, const char *payload_hash, const char *akid,
		const char *secret, const char *region, const char *service,
		const char *amz_date, char *auth, size_t auth_len)
{
	struct hline lines[HSM_HDRS_MAX];
	struct strbuf cr = STRBUF_INIT, signed_h = STRBUF_INIT, sts = STRBUF_INIT;
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
	strbuf_printf(&cr, "%s\n%s\n%s\n", method, canon_uri, canon_query);
	for (int i = 0; i < n; i++) {
		strbuf_str(&cr, lines[i].name);
		strbuf_str(&cr, ":");
		add_trimmed(&cr, lines[i].value);
		strbuf_str(&cr, "\n");
		if (i)
			strbuf_str(&signed_h, ";");
		strbuf_str(&signed_h, lines[i].name);
	}
	strbuf_printf(&cr, "\n%s\n%s", strbuf_cstr(&signed_h), payload_hash);
	if (!strbuf_ok(&cr) || !strbuf_ok(&signed_h)) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = hsm_sha256(strbuf_cstr(&cr), cr.len, hash)) < 0)
		goto out;
	hsm_hex(hash, 32, hex);
	snprintf(day, sizeof(day), "%.8s", amz_date);
	strbuf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amz_date, day,
		      region, service, hex);
	if (!strbuf_ok(&sts)) {
		rc = -ENOMEM;
		goto out;
	}
	/* The signing key: HMAC chain over date, region, service, "aws4_request". */
	snprintf(kdate, sizeof(kdate), "AWS4%s", secret);
	if ((rc = hsm_hmac_sha256(kdate, strlen(kdate), day, strlen(day), k1)) < 0 ||
	    (rc = hsm_hmac_sha256(k1, 32, region, strlen(region), k2)) < 0 ||
	    (rc = hsm_hmac_sha256(k2, 32, service, strlen(service), k3)) < 0 ||
	    (rc = hsm_hmac_sha256(k3, 32, "aws4_request", 12, k4)) < 0 ||
	    (rc = hsm_hmac_sha256(k4, 32, strbuf_cstr(&sts), sts.len, sig)) < 0)
		goto out;
	hsm_hex(sig, 32, sighex);
	if ((size_t)snprintf(auth, auth_len,
			     "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
			     "SignedHeaders=%s, Signature=%s",
			     akid, day, region, service, strbuf_cstr(&signed_h),
			     sighex) >= auth_len)
		rc = -E2BIG;
out:
	for (int i = 0; i < n; i++)
		free(lines[i].name);
	strbuf_fini(&cr);
	strbuf_fini(&signed_h);
	strbuf_fini(&sts);
	return rc;
}

static int s3_credentials(struct cloud *cl, const char *file, char *err, size_t err_len)
{
	struct s3 *s = cl->state;
	int rc;

	if ((rc = hsm_cred_get(file, "AWS_ACCESS_KEY_ID", s->akid, sizeof(s->akid), err,
			       err_len)) < 0 ||
	    (rc = hsm_cred_get(file, "AWS_SECRET_ACCESS_KEY", s->secret, sizeof(s->secret), err,
			       err_len)) < 0 ||
	    (rc = hsm_cred_get(file, "AWS_SESSION_TOKEN", s->token, sizeof(s->token), err,
			       err_len)) < 0 ||
	    (rc = hsm_cred_get(file, "AWS_REGION", s->region, sizeof(s->region), err,
			       err_len)) < 0)
		return rc;
	if (!s->region[0] && (rc = hsm_cred_get(file, "AWS_DEFAULT_REGION", s->region,
						sizeof(s->region), err, err_len)) < 0)
		return rc;
	if (!s->region[0])
		str_copy(s->region, "us-east-1", sizeof(s->region));
	if (!s->akid[0] || !s->secret[0])
		return cloud_no_credentials("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", err,
					    err_len, "bucket '%s'", cl->container);
	return 0;
}

/* ---- requests ---- */

static int cmp_q(const void *a, const void *b)
{
	const struct cloud_qparam *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

/* The canonical query is sorted and fully encoded; the URL carries it in that same form. */
static int s3_sign(struct cloud *cl, const struct cloud_call *c, const char *path, char *url,
		   size_t url_len, char *err, size_t err_len)
{
	struct s3 *s = cl->state;
	char date[32], day[16], hash[65], auth[1024];
	struct cloud_qparam sq[8];
	size_t ql = 0;
	char *query;
	int rc;

	if (c->nq > (int)ARRAY_SIZE(sq) || !(query = malloc(url_len)))
		return -ENOMEM;
	if (c->nq) {
		memcpy(sq, c->q, (size_t)c->nq * sizeof(*sq));
		qsort(sq, (size_t)c->nq, sizeof(sq[0]), cmp_q);
	}
	query[0] = '\0';
	for (int i = 0; i < c->nq && ql < url_len; i++) {
		if (i)
			query[ql++] = '&';
		ql += hsm_url_encode(sq[i].name, 0, query + ql, url_len - ql);
		if (ql + 1 < url_len)
			query[ql++] = '=';
		if (ql < url_len)
			ql += hsm_url_encode(sq[i].value, 0, query + ql, url_len - ql);
	}
	if (ql >= url_len ||
	    (size_t)snprintf(url, url_len, "%s%s%s%s", cl->base, path + strlen(cl->base_path),
			     ql ? "?" : "", query) >= url_len) {
		snprintf(err, err_len, "request URL for %s too long", c->key ? c->key : "listing");
		rc = -ENAMETOOLONG;
		goto out;
	}
	if (c->data) {
		str_copy(hash, UNSIGNED, sizeof(hash));
	} else {
		unsigned char h[32];
		if ((rc = hsm_sha256(c->body ? c->body : "", c->body_len, h)) < 0)
			goto out;
		hsm_hex(h, 32, hash);
	}
	hsm_amz_date(date, sizeof(date), day, sizeof(day));
	if ((rc = hsm_hdrs_set(c->hdrs, "Host", s->host)) < 0 ||
	    (rc = hsm_hdrs_set(c->hdrs, "x-amz-date", date)) < 0 ||
	    (rc = hsm_hdrs_set(c->hdrs, "x-amz-content-sha256", hash)) < 0 ||
	    (s->token[0] && (rc = hsm_hdrs_set(c->hdrs, "x-amz-security-token", s->token)) < 0))
		goto out;
	if ((rc = hsm_s3_sign(c->method, path, query, c->hdrs, hash, s->akid, s->secret,
			      s->region, "s3", date, auth, sizeof(auth))) < 0)
		goto out;
	rc = hsm_hdrs_set(c->hdrs, "Authorization", auth);
out:
	free(query);
	return rc;
}

static void s3_access_hint(struct cloud *cl, char *buf, size_t len)
{
	struct s3 *s = cl->state;

	snprintf(buf, len,
		 ": bucket '%s' refused access key '%s'; check AWS_ACCESS_KEY_ID, "
		 "AWS_SECRET_ACCESS_KEY and AWS_REGION (environment or credentials file)",
		 cl->container, s->akid);
}

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

/* ---- multipart upload ---- */

struct mpu {
	char *upload_id;
	char (*etags)[40]; /* per part, quoted */
};

static void mpu_free(struct mpu *m)
{
	if (!m)
		return;
	free(m->upload_id);
	free(m->etags);
	free(m);
}

/* CreateMultipartUpload, with the metadata: the UploadId. */
static int s3_upload_start(struct cloud *cl, const char *key, const struct hsm_meta *meta,
			   size_t nparts, void **up, char *err, size_t err_len)
{
	static const struct cloud_qparam q[] = { { "uploads", "" } };
	struct mpu *m = calloc(1, sizeof(*m));
	struct hsm_http_resp resp;
	struct hsm_xml *x = NULL;
	const char *id;
	struct hsm_hdrs h;
	int rc;

	if (!m || !(m->etags = calloc(nparts, sizeof(*m->etags)))) {
		mpu_free(m);
		return -ENOMEM;
	}
	hsm_hdrs_init(&h);
	if (meta && (rc = hsm_meta_to_headers(meta, S3_META, &h)) < 0)
		goto out;
	struct cloud_call c = { .method = "POST", .key = key, .q = q, .nq = 1, .hdrs = &h };
	rc = cloud_call(cl, &c, &resp, err, err_len);
	if (rc == 0 &&
	    (hsm_xml_parse(resp.body ? resp.body : "", resp.body_len, &x) < 0 ||
	     !(id = hsm_xml_child_text(x, hsm_xml_root(x), "UploadId")) ||
	     !(m->upload_id = strdup(id)))) {
		snprintf(err, err_len, "CreateMultipartUpload of %s: no UploadId in the reply", key);
		rc = -EPROTO;
	}
	hsm_xml_free(x);
	hsm_http_resp_fini(&resp);
out:
	hsm_hdrs_fini(&h);
	if (rc < 0) {
		mpu_free(m);
		return rc;
	}
	*up = m;
	return 0;
}

static int s3_part_query(void *up, size_t i, struct cloud_qparam q[2], char *scratch,
			 size_t scratch_len)
{
	struct mpu *m = up;

	snprintf(scratch, scratch_len, "%zu", i + 1);
	q[0] = (struct cloud_qparam){ "partNumber", scratch };
	q[1] = (struct cloud_qparam){ "uploadId", m->upload_id };
	return 2;
}

/* Keeps the part's ETag for the completion. */
static int s3_part_done(void *up, const char *key, size_t i, const struct hsm_http_resp *resp,
			char *err, size_t err_len)
{
	struct mpu *m = up;
	const char *e = hsm_http_resp_header(resp, "etag");

	if (!e) {
		snprintf(err, err_len, "part %zu of %s: no ETag in the reply", i + 1, key);
		return -EPROTO;
	}
	snprintf(m->etags[i], sizeof(m->etags[i]), "%s%.36s%s", *e == '"' ? "" : "\"", e,
		 *e == '"' ? "" : "\"");
	return 0;
}

/* CompleteMultipartUpload. S3 may answer 200 and put the failure in the body. */
static int s3_upload_finish(struct cloud *cl, void *up, const char *key, size_t nparts,
			    const struct hsm_meta *meta, struct hsm_xfer *xfer, char *err,
			    size_t err_len)
{
	struct mpu *m = up;
	struct cloud_qparam q[] = { { "uploadId", m->upload_id } };
	struct strbuf body = STRBUF_INIT;
	struct hsm_http_resp resp;
	struct hsm_xml *x = NULL;
	int rc;

	(void)meta; /* it went with CreateMultipartUpload */
	(void)xfer;
	strbuf_str(&body, "<CompleteMultipartUpload>");
	for (size_t i = 0; i < nparts; i++) {
		strbuf_printf(&body, "<Part><PartNumber>%zu</PartNumber><ETag>", i + 1);
		/* ETags are hex in quotes: escape the quotes for XML. */
		for (const char *e = m->etags[i]; *e; e++) {
			if (*e == '"')
				strbuf_str(&body, "&quot;");
			else
				strbuf_char(&body, *e);
		}
		strbuf_str(&body, "</ETag></Part>");
	}
	strbuf_str(&body, "</CompleteMultipartUpload>");
	rc = cloud_send_xml(cl, "POST", key, q, 1, NULL, &body, NULL, &resp, err, err_len);
	if (rc == 0 && resp.body_len && hsm_xml_parse(resp.body, resp.body_len, &x) == 0 &&
	    strcmp(hsm_xml_name(x, hsm_xml_root(x)), "Error") == 0) {
		const char *code = hsm_xml_child_text(x, hsm_xml_root(x), "Code");
		snprintf(err, err_len, "CompleteMultipartUpload of %s failed: %s", key,
			 code ? code : "unknown error");
		rc = -EIO;
	}
	hsm_xml_free(x);
	hsm_http_resp_fini(&resp);
	strbuf_fini(&body);
	return rc;
}

static void s3_upload_end(struct cloud *cl, void *up, const char *key, int abort)
{
	struct mpu *m = up;

	if (abort) {
		struct cloud_qparam q[] = { { "uploadId", m->upload_id } };
		struct hsm_http_resp resp;
		struct hsm_hdrs h;
		char err[256];

		hsm_hdrs_init(&h);
		struct cloud_call c = { .method = "DELETE", .key = key, .q = q, .nq = 1,
					.hdrs = &h };
		/* Best effort: a failed abort leaves parts a bucket lifecycle rule cleans up. */
		cloud_call(cl, &c, &resp, err, sizeof(err));
		hsm_http_resp_fini(&resp);
		hsm_hdrs_fini(&h);
	}
	mpu_free(m);
}

/* ---- list ---- */

struct entry {
	char *key;
	struct hsm_meta meta;
	int gone; /* deleted between the listing and its HEAD */
};

struct heads {
	struct cloud *cl;
	struct entry *e;
};

static int head_one(void *arg, size_t i, char *err, size_t err_len)
{
	struct heads *hd = arg;
	struct entry *e = &hd->e[i];
	struct hsm_http_resp resp;
	struct nacre_time mtime = e->meta.mtime;
	int rc = cloud_head(hd->cl, e->key, &e->meta, &resp, err, err_len);

	hsm_http_resp_fini(&resp);
	if (rc == -ENOENT) {
		e->gone = 1;
		return 0;
	}
	if (rc == 0 && e->meta.mtime.sec == 0 && e->meta.mtime.nsec == 0)
		e->meta.mtime = mtime; /* no modtime key: keep LastModified */
	return rc;
}

/* The keys of one listing page under prefix (plen bytes) into *out (*n of them), with size
 * and LastModified; the continuation token into *token when the listing goes on. 0 or
 * -ENOMEM (what was filled is in *out and *n all the same). */
static int page_entries(const struct hsm_xml *x, const char *prefix, size_t plen,
			struct entry **out, size_t *n, char **token)
{
	int root = hsm_xml_root(x);
	size_t cap = 0;
	struct entry *ents;

	for (int o = hsm_xml_child(x, root, "Contents"); o >= 0;
	     o = hsm_xml_next(x, o, "Contents"))
		cap++;
	ents = calloc(cap ? cap : 1, sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	*out = ents;
	for (int o = hsm_xml_child(x, root, "Contents"); o >= 0;
	     o = hsm_xml_next(x, o, "Contents")) {
		const char *k = hsm_xml_child_text(x, o, "Key"), *v;
		struct entry *e = &ents[*n];
		int64_t size;
		if (!k || strncmp(k, prefix, plen) != 0 || !k[plen])
			continue;
		e->key = strdup(k);
		if (!e->key)
			return -ENOMEM;
		(*n)++;
		v = hsm_xml_child_text(x, o, "Size");
		if (v && parse_i64(v, 0, INT64_MAX, &size) == 0)
			e->meta.size = (uint64_t)size;
		v = hsm_xml_child_text(x, o, "LastModified");
		if (v)
			hsm_meta_parse_time(v, &e->meta.mtime);
	}
	const char *trunc = hsm_xml_child_text(x, root, "IsTruncated");
	const char *next = hsm_xml_child_text(x, root, "NextContinuationToken");
	if (trunc && strcmp(trunc, "true") == 0 && next && *next && !(*token = strdup(next)))
		return -ENOMEM;
	return 0;
}

/* ListObjectsV2, then HeadObject per key. */
static int s3_list_page(struct cloud *cl, const struct hsm_xml *x, const char *prefix,
			size_t plen, hsm_list_fn fn, void *arg, int *stop, char **next,
			char *err, size_t err_len)
{
	struct entry *ents = NULL;
	size_t ne = 0;
	int rc;

	rc = page_entries(x, prefix, plen, &ents, &ne, next);
	/* User metadata comes only with HeadObject. */
	struct heads hd = { .cl = cl, .e = ents };
	if (rc == 0)
		rc = hsm_run_parallel(cl->threads, ne, head_one, &hd, err, err_len);
	for (size_t i = 0; i < ne; i++) {
		char *name = ents[i].key + plen;
		size_t nl = strlen(name);
		if (rc == 0 && !*stop && !ents[i].gone) {
			/* "dir/" keys, as S3 consoles make them, are directories too. */
			if (nl && name[nl - 1] == '/') {
				name[nl - 1] = '\0';
				ents[i].meta.mode |= S_IFDIR;
			}
			if (*name)
				*stop = fn(arg, name, &ents[i].meta);
		}
		free(ents[i].key);
	}
	free(ents);
	return rc;
}

static const struct cloud_service s3_service = {
	.noun = "object", .meta_prefix = S3_META, .range_header = "Range",
	/* S3 answers 204 for a missing key; some servers 404 (NoSuchKey, not NoSuchBucket). */
	.no_container = "NoSuchBucket", .put_name = "PutObject",
	.min_part = S3_MIN_PART, /* AWS refuses parts under 5 MiB (but the last) */
	.max_parts = S3_MAX_PARTS,
	.sign = s3_sign, .access_hint = s3_access_hint, .stored_md5 = etag_md5,
	.upload_start = s3_upload_start, .part_query = s3_part_query,
	.part_done = s3_part_done, .upload_finish = s3_upload_finish, .upload_end = s3_upload_end,
	.list_query = { { "list-type", "2" } }, .list_size = "max-keys",
	.list_marker = "continuation-token", .list_page_max = 1000, .list_page = s3_list_page,
};

/* ---- open ---- */

static int s3_open(const char *rest, const struct hsm_backend_opts *opts, void **priv,
		   char *err, size_t err_len)
{
	char endpoint[512] = "";
	struct cloud *cl;
	struct s3 *s;
	int rc;

	if ((rc = cloud_create(&s3_service, sizeof(*s), opts, &cl)) < 0)
		return rc;
	s = cl->state;
	if ((rc = cloud_set_container(cl, "s3://", rest, "bucket", "; use s3://bucket[/prefix]",
				      err, err_len)) < 0 ||
	    (rc = s3_credentials(cl, opts->credentials, err, err_len)) < 0)
		goto out_close;
	snprintf(cl->name, sizeof(cl->name), "bucket %s", cl->container);
	if (opts->endpoint && *opts->endpoint)
		str_copy(endpoint, opts->endpoint, sizeof(endpoint));
	else
		snprintf(endpoint, sizeof(endpoint), "https://s3.%s.amazonaws.com", s->region);
	if (cloud_set_base(cl, endpoint) < 0) {
		snprintf(err, err_len, "s3 endpoint '%s' is not a URL like http://127.0.0.1:4568",
			 endpoint);
		rc = -EINVAL;
		goto out_close;
	}
	/* Host: what SigV4 signs, the endpoint's host[:port]. */
	const char *host = strstr(cl->base, "://") + 3;
	size_t n = strcspn(host, "/");
	if (n == 0 || n >= sizeof(s->host)) {
		snprintf(err, err_len, "s3 endpoint '%s' has no host", endpoint);
		rc = -EINVAL;
		goto out_close;
	}
	memcpy(s->host, host, n);
	*priv = cl;
	return 0;
out_close:
	cloud_close(cl);
	return rc;
}

const struct hsm_backend_ops hsm_s3_ops = CLOUD_BACKEND_OPS(s3_open);
