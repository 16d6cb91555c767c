/* cloud.c - the transfer engine of the cloud backends (see cloud.h): requests, HEAD, single
 * and multipart puts, ranged gets and the checks of each, stat, remove, the listing loop. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "hsm/cloud.h"

#define CLOUD_URL_MAX (3 * NACRE_PATH_MAX + 2048)
#define CLOUD_THREADS 4                    /* parallel ranges when opts say 0 */
#define CLOUD_BLOCK (8ull * 1024 * 1024)   /* block size when opts say 0 */
#define CLOUD_RETRIES 5                    /* retries when opts say 0 */
#define CLOUD_LIST_BODY (64u * 1024 * 1024) /* a listing page's reply at most */
#define CLOUD_WHAT_MAX (NACRE_PATH_MAX + 96) /* "part 12 of blob KEY" */

/* ---- state ---- */

int cloud_create(const struct cloud_service *svc, size_t state_size,
		 const struct hsm_backend_opts *opts, struct cloud **out)
{
	struct hsm_http_opts ho = { .retries = opts->retries ? opts->retries : CLOUD_RETRIES };
	struct cloud *cl;
	int rc;

	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	cl->svc = svc;
	cl->state = calloc(1, state_size ? state_size : 1);
	if (!cl->state) {
		free(cl);
		return -ENOMEM;
	}
	cl->threads = opts->threads > 0 ? opts->threads : CLOUD_THREADS;
	cl->block_size = opts->block_size ? opts->block_size : CLOUD_BLOCK;
	if (svc->max_block && cl->block_size > svc->max_block)
		cl->block_size = svc->max_block;
	cl->part_size = cl->block_size < svc->min_part ? svc->min_part : cl->block_size;
	rc = hsm_http_create(&ho, &cl->http);
	if (rc < 0) {
		cloud_close(cl);
		return rc;
	}
	*out = cl;
	return 0;
}

void cloud_close(void *priv)
{
	struct cloud *cl = priv;

	if (!cl)
		return;
	hsm_http_destroy(cl->http);
	if (cl->svc->state_fini)
		cl->svc->state_fini(cl->state);
	free(cl->state);
	free(cl);
}

int cloud_set_container(struct cloud *cl, const char *head, const char *rest, const char *what,
			const char *hint, char *err, size_t err_len)
{
	size_t n = strcspn(rest, "/");

	if (n < 3 || n >= sizeof(cl->container)) {
		snprintf(err, err_len, "%s%s: %s names are 3 to 63 characters%s", head, rest, what,
			 hint);
		return -EINVAL;
	}
	memcpy(cl->container, rest, n);
	for (rest += n; *rest == '/'; rest++)
		;
	if (str_copy(cl->prefix, rest, sizeof(cl->prefix)) >= sizeof(cl->prefix)) {
		snprintf(err, err_len, "%s%s: prefix too long", head, cl->container);
		return -ENAMETOOLONG;
	}
	for (n = strlen(cl->prefix); n && cl->prefix[n - 1] == '/'; n--)
		cl->prefix[n - 1] = '\0';
	return 0;
}

int cloud_no_credentials(const char *names, char *err, size_t err_len, const char *who_fmt, ...)
{
	char who[160];
	va_list ap;

	va_start(ap, who_fmt);
	vsnprintf(who, sizeof(who), who_fmt, ap);
	va_end(ap);
	snprintf(err, err_len,
		 "no credentials for %s: set %s in the environment or the credentials file", who,
		 names);
	return -EACCES;
}

int cloud_set_base(struct cloud *cl, const char *url)
{
	const char *hs = strstr(url, "://");
	size_t host_at, n;

	if (!hs || !hs[3] || str_copy(cl->base, url, sizeof(cl->base)) >= sizeof(cl->base))
		return -EINVAL;
	host_at = (size_t)(hs - url) + 3;
	for (n = strlen(cl->base); n > host_at && cl->base[n - 1] == '/'; n--)
		cl->base[n - 1] = '\0';
	hs = cl->base + host_at;
	str_copy(cl->base_path, hs + strcspn(hs, "/"), sizeof(cl->base_path));
	return 0;
}

/* ---- requests ---- */

int cloud_call(struct cloud *cl, const struct cloud_call *c, struct hsm_http_resp *resp,
	       char *err, size_t err_len)
{
	char *url = malloc(CLOUD_URL_MAX), *path = malloc(CLOUD_URL_MAX);
	size_t pl;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (!url || !path) {
		rc = -ENOMEM;
		goto out_free;
	}
	pl = (size_t)snprintf(path, CLOUD_URL_MAX, "%s/%s", cl->base_path, cl->container);
	if (c->key) {
		path[pl++] = '/';
		size_t room = CLOUD_URL_MAX - pl;
		if (hsm_url_encode(c->key, 1, path + pl, room) >= room) {
			rc = -ENAMETOOLONG;
			snprintf(err, err_len, "%s name too long: %s", cl->svc->noun, c->key);
			goto out_free;
		}
	}
	rc = cl->svc->sign(cl, c, path, url, CLOUD_URL_MAX, err, err_len);
	if (rc < 0)
		goto out_free;
	struct hsm_http_req req = { .method = c->method, .url = url, .hdrs = c->hdrs,
				    .body = c->body, .body_len = c->body_len, .sink = c->sink,
				    .sink_arg = c->sink_arg, .max_body = c->max_body,
				    .xfer = c->xfer };
	rc = hsm_http_do(cl->http, &req, resp, err, err_len);
	if (rc == -EACCES) {
		size_t l = strlen(err);
		cl->svc->access_hint(cl, err + l, err_len > l ? err_len - l : 0);
	}
out_free:
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory");
	free(url);
	free(path);
	return rc;
}

int cloud_head(struct cloud *cl, const char *key, struct hsm_meta *meta,
	       struct hsm_http_resp *resp, char *err, size_t err_len)
{
	struct hsm_hdrs h;
	const char *len;
	char md5[33];
	int64_t size;
	int rc;

	hsm_hdrs_init(&h);
	struct cloud_call c = { .method = "HEAD", .key = key, .hdrs = &h };
	rc = cloud_call(cl, &c, resp, err, err_len);
	hsm_hdrs_fini(&h);
	if (rc < 0)
		return rc;
	memset(meta, 0, sizeof(*meta));
	len = hsm_http_resp_header(resp, "content-length");
	if (!len || parse_i64(len, 0, INT64_MAX, &size) < 0) {
		snprintf(err, err_len, "HEAD of %s %s: no valid Content-Length", cl->svc->noun,
			 key);
		return -EPROTO;
	}
	meta->size = (uint64_t)size;
	hsm_meta_from_resp(meta, resp, cl->svc->meta_prefix);
	if (cl->svc->stored_md5(resp, md5) > 0)
		snprintf(meta->checksum, sizeof(meta->checksum), "md5:%s", md5);
	return 0;
}

int cloud_send_xml(struct cloud *cl, const char *method, const char *key,
		   const struct cloud_qparam *q, int nq, const struct hsm_meta *meta,
		   const struct strbuf *body, struct hsm_xfer *xfer, struct hsm_http_resp *resp,
		   char *err, size_t err_len)
{
	struct hsm_hdrs h;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (!strbuf_ok(body))
		return -ENOMEM;
	hsm_hdrs_init(&h);
	if ((meta && (rc = hsm_meta_to_headers(meta, cl->svc->meta_prefix, &h)) < 0) ||
	    (rc = hsm_hdrs_set(&h, "Content-Type", "application/xml")) < 0)
		goto out;
	struct cloud_call c = { .method = method, .key = key, .q = q, .nq = nq, .hdrs = &h,
				.body = strbuf_cstr(body), .body_len = body->len, .xfer = xfer };
	rc = cloud_call(cl, &c, resp, err, err_len);
out:
	hsm_hdrs_fini(&h);
	return rc;
}

/* ---- checks ---- */

static int object_key(const struct cloud *cl, const char *path, char *key, size_t len,
		      char *err, size_t err_len)
{
	if (hsm_object_key(cl->prefix, path, key, len) < 0) {
		snprintf(err, err_len, "invalid object path '%s'", path);
		return -EINVAL;
	}
	return 0;
}

/* The MD5 of buf as base64 (for Content-MD5) and as hex (to compare with replies). */
static int md5_of(const void *buf, size_t len, char b64[32], char hex[33])
{
	unsigned char md[16];
	int rc = hsm_md5(buf, len, md);

	if (rc < 0)
		return rc;
	hsm_hex(md, 16, hex);
	return hsm_base64_encode(md, 16, b64, 32) < 0 ? -EINVAL : 0;
}

/* What the reply says was stored must be what we sent (hex MD5): -EIO naming what. */
static int check_stored(const struct cloud *cl, const struct hsm_http_resp *resp,
			const char *hex, const char *what, char *err, size_t err_len)
{
	char got[33];
	int found = cl->svc->stored_md5(resp, got);

	if (found == 0 || (found > 0 && strcmp(got, hex) == 0))
		return 0;
	snprintf(err, err_len, "%s stored with MD5 %s but we sent %s: the copy is corrupt", what,
		 found > 0 ? got : "(unreadable)", hex);
	return -EIO;
}

/* Reads exactly len bytes at off through rd (looping over short reads). 0 or -errno, a
 * short read of the source being -EIO. */
static int read_full(hsm_read_fn rd, void *arg, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = rd(arg, (char *)buf + got, len - got, off + got);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO; /* the source is shorter than the size we were given */
		got += (size_t)n;
	}
	return 0;
}

/* ---- ranges, on several threads ---- */

/* One transfer's ranges: range i covers [i * block, min(size, (i + 1) * block)). */
struct ranges {
	struct cloud *cl;
	const char *key;
	const char *etag; /* get: every range must come from this version */
	void *up;         /* put: the service's upload */
	uint64_t size, block;
	hsm_read_fn rd;
	hsm_write_fn wr;
	void *io_arg;
	struct hsm_xfer *xfer;
};

/* A sink that fills a caller's buffer (bounded: a reply longer than len fails -EPROTO). */
struct buf_sink {
	char *buf;
	size_t len;
	size_t got; /* highest byte written + 1 in the last attempt */
};

static int buf_sink_fn(void *arg, const void *data, size_t len, uint64_t off)
{
	struct buf_sink *s = arg;

	if (off > s->len || len > s->len - off)
		return -EPROTO; /* more bytes than the range we asked for */
	memcpy(s->buf + off, data, len);
	if (off + len > s->got)
		s->got = (size_t)(off + len);
	return 0;
}

static size_t range_len(const struct ranges *r, size_t i)
{
	uint64_t off = (uint64_t)i * r->block;

	return (size_t)(r->size - off < r->block ? r->size - off : r->block);
}

static size_t range_count(const struct ranges *r)
{
	return (size_t)((r->size + r->block - 1) / r->block);
}

/* GETs len bytes at off into buf: exactly len, or -EIO. */
static int get_range(const struct ranges *r, uint64_t off, size_t len, void *buf, char *err,
		     size_t err_len)
{
	struct buf_sink sink = { .buf = buf, .len = len };
	struct hsm_http_resp resp;
	struct hsm_hdrs h;
	char range[64];
	int rc;

	hsm_hdrs_init(&h);
	snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
		 (unsigned long long)(off + len - 1));
	/* If-Match: an object replaced while we read fails (412) instead of mixing versions. */
	if ((rc = hsm_hdrs_set(&h, r->cl->svc->range_header, range)) < 0 ||
	    (r->etag && (rc = hsm_hdrs_set(&h, "If-Match", r->etag)) < 0))
		goto out;
	struct cloud_call c = { .method = "GET", .key = r->key, .hdrs = &h, .sink = buf_sink_fn,
				.sink_arg = &sink, .xfer = r->xfer };
	rc = cloud_call(r->cl, &c, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
	if (rc == 0 && sink.got != len) {
		snprintf(err, err_len, "%s %s: range %s returned %zu bytes", r->cl->svc->noun,
			 r->key, range, sink.got);
		rc = -EIO;
	}
out:
	hsm_hdrs_fini(&h);
	return rc;
}

/* PUTs part i (buf, len) of the upload, with its MD5 for the service to check. */
static int put_part(const struct ranges *r, size_t i, const void *buf, size_t len, char *err,
		    size_t err_len)
{
	const struct cloud_service *svc = r->cl->svc;
	char scratch[96], b64[32], hex[33], what[CLOUD_WHAT_MAX];
	struct cloud_qparam q[2];
	struct hsm_http_resp resp;
	struct hsm_hdrs h;
	int rc;

	hsm_hdrs_init(&h);
	if ((rc = md5_of(buf, len, b64, hex)) < 0 ||
	    (rc = hsm_hdrs_set(&h, "Content-MD5", b64)) < 0)
		goto out;
	int nq = svc->part_query(r->up, i, q, scratch, sizeof(scratch));
	struct cloud_call c = { .method = "PUT", .key = r->key, .q = q, .nq = nq, .hdrs = &h,
				.body = buf, .body_len = len, .data = 1, .xfer = r->xfer };
	rc = cloud_call(r->cl, &c, &resp, err, err_len);
	if (rc == 0) {
		snprintf(what, sizeof(what), "part %zu of %s %s", i + 1, svc->noun, r->key);
		rc = check_stored(r->cl, &resp, hex, what, err, err_len);
	}
	if (rc == 0 && svc->part_done)
		rc = svc->part_done(r->up, r->key, i, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
out:
	hsm_hdrs_fini(&h);
	return rc;
}

/* Range i of a get: fetched, then written where it belongs (positional writes of disjoint
 * ranges: the destination may be written in any order). */
static int get_into(const struct ranges *r, uint64_t off, char *buf, size_t len, char *err,
		    size_t err_len)
{
	ssize_t w;
	int rc = get_range(r, off, len, buf, err, err_len);

	for (size_t done = 0; rc == 0 && done < len; done += (size_t)w) {
		w = r->wr(r->io_arg, buf + done, len - done, off + done);
		if (w <= 0) {
			rc = w < 0 ? (int)w : -EIO;
			snprintf(err, err_len, "writing %zu bytes at offset %llu failed: %s",
				 len - done, (unsigned long long)(off + done), strerror(-rc));
		}
	}
	return rc;
}

/* Range i of a put: read from the source, then stored as part i. */
static int put_from(const struct ranges *r, size_t i, uint64_t off, char *buf, size_t len,
		    char *err, size_t err_len)
{
	int rc = read_full(r->rd, r->io_arg, buf, len, off);

	if (rc < 0) {
		snprintf(err, err_len, "reading %zu bytes at offset %llu of the source failed: %s",
			 len, (unsigned long long)off, strerror(-rc));
		return rc;
	}
	return put_part(r, i, buf, len, err, err_len);
}

/* One task of hsm_run_parallel: moves range i one way or the other (rd set: a put). */
static int move_one(void *arg, size_t i, char *err, size_t err_len)
{
	struct ranges *r = arg;
	uint64_t off = (uint64_t)i * r->block;
	size_t len = range_len(r, i);
	char *buf;
	int rc;

	if (atomic_load(&r->xfer->canceled)) {
		snprintf(err, err_len, "canceled");
		return -ECANCELED;
	}
	buf = malloc(len ? len : 1);
	if (!buf) {
		snprintf(err, err_len, "out of memory for a %zu-byte %s", len,
			 r->rd ? "block" : "range");
		return -ENOMEM;
	}
	rc = r->rd ? put_from(r, i, off, buf, len, err, err_len)
		   : get_into(r, off, buf, len, err, err_len);
	if (rc == 0 && (rc = hsm_xfer_add(r->xfer, len)) < 0)
		snprintf(err, err_len, "canceled");
	free(buf);
	return rc;
}

/* ---- put ---- */

/* Directory markers and objects up to a part: one request, checked against its MD5. */
static int put_single(struct cloud *cl, const char *path, const char *key, uint64_t size,
		      hsm_read_fn rd, void *rd_arg, const struct hsm_meta *meta,
		      struct hsm_xfer *xfer, char *err, size_t err_len)
{
	const struct cloud_service *svc = cl->svc;
	size_t len = meta && S_ISDIR(meta->mode) ? 0 : (size_t)size;
	char b64[32], hex[33], what[CLOUD_WHAT_MAX];
	struct hsm_http_resp resp = { 0 };
	struct hsm_hdrs h;
	char *buf;
	int rc;

	if (svc->max_put && size > svc->max_put) {
		snprintf(err, err_len, "%s: too big for one %s", path, svc->put_name);
		return -EFBIG;
	}
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	hsm_hdrs_init(&h);
	if (len && (rc = read_full(rd, rd_arg, buf, len, 0)) < 0) {
		snprintf(err, err_len, "reading %s to archive failed: %s", path, strerror(-rc));
		goto out;
	}
	if ((meta && (rc = hsm_meta_to_headers(meta, svc->meta_prefix, &h)) < 0) ||
	    (svc->put_hdr.name &&
	     (rc = hsm_hdrs_set(&h, svc->put_hdr.name, svc->put_hdr.value)) < 0) ||
	    (rc = md5_of(buf, len, b64, hex)) < 0 ||
	    (rc = hsm_hdrs_set(&h, "Content-MD5", b64)) < 0)
		goto out;
	struct cloud_call c = { .method = "PUT", .key = key, .hdrs = &h, .body = buf,
				.body_len = len, .data = 1, .xfer = xfer };
	if ((rc = cloud_call(cl, &c, &resp, err, err_len)) < 0)
		goto out;
	snprintf(what, sizeof(what), "%s %s", svc->noun, key);
	if ((rc = check_stored(cl, &resp, hex, what, err, err_len)) < 0)
		goto out;
	if ((rc = hsm_xfer_add(xfer, len)) < 0)
		snprintf(err, err_len, "archive of %s canceled", path);
out:
	hsm_http_resp_fini(&resp);
	hsm_hdrs_fini(&h);
	free(buf);
	return rc;
}

/* Parts in parallel, then the service's commit; the assembled size is checked after. */
static int put_multipart(struct cloud *cl, const char *key, uint64_t size, hsm_read_fn rd,
			 void *rd_arg, const struct hsm_meta *meta, struct hsm_xfer *xfer,
			 char *err, size_t err_len)
{
	const struct cloud_service *svc = cl->svc;
	struct ranges r = { .cl = cl, .key = key, .size = size, .block = cl->part_size,
			    .rd = rd, .io_arg = rd_arg, .xfer = xfer };
	struct hsm_http_resp resp;
	struct hsm_meta got;
	size_t nparts;
	int rc;

	if (range_count(&r) > svc->max_parts)
		r.block = (size + svc->max_parts - 1) / svc->max_parts;
	nparts = range_count(&r);
	if (svc->upload_start &&
	    (rc = svc->upload_start(cl, key, meta, nparts, &r.up, err, err_len)) < 0)
		return rc;
	rc = hsm_run_parallel(cl->threads, nparts, move_one, &r, err, err_len);
	if (rc == 0)
		rc = svc->upload_finish(cl, r.up, key, nparts, meta, xfer, err, err_len);
	if (svc->upload_end)
		svc->upload_end(cl, r.up, key, rc < 0);
	if (rc < 0)
		return rc;
	/* A multipart ETag is no MD5 (each part's was checked): verify the size. */
	rc = cloud_head(cl, key, &got, &resp, err, err_len);
	if (rc == 0 && got.size != size) {
		snprintf(err, err_len, "%s %s has %llu bytes after upload, expected %llu",
			 svc->noun, key, (unsigned long long)got.size, (unsigned long long)size);
		rc = -EIO;
	}
	hsm_http_resp_fini(&resp);
	return rc;
}

int cloud_put(void *priv, const char *path, uint64_t size, hsm_read_fn rd, void *rd_arg,
	      const struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg,
	      char *err, size_t err_len)
{
	struct cloud *cl = priv;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_xfer xfer;
	int rc;

	if ((rc = object_key(cl, path, key, sizeof(key), err, err_len)) < 0)
		return rc;
	hsm_xfer_init(&xfer, progress, progress_arg);
	if (!(meta && S_ISDIR(meta->mode)) && size > cl->part_size)
		rc = put_multipart(cl, key, size, rd, rd_arg, meta, &xfer, err, err_len);
	else
		rc = put_single(cl, path, key, size, rd, rd_arg, meta, &xfer, err, err_len);
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory archiving %s", path);
	hsm_xfer_fini(&xfer);
	return rc;
}

/* ---- get ---- */

/* A small object in one range, checked whole against its stored MD5 (hex) before any byte
 * is written. */
static int get_whole(const struct ranges *r, const char *path, const char *md5, char *err,
		     size_t err_len)
{
	size_t size = (size_t)r->size;
	char *buf = malloc(size ? size : 1), hex[33];
	unsigned char md[16];
	int rc = buf ? 0 : -ENOMEM;

	if (!rc && size)
		rc = get_range(r, 0, size, buf, err, err_len);
	if (!rc && (rc = hsm_md5(buf, size, md)) == 0) {
		hsm_hex(md, 16, hex);
		if (strcmp(md5, hex) != 0) {
			snprintf(err, err_len, "%s %s: content MD5 %s differs from the stored %s",
				 r->cl->svc->noun, r->key, hex, md5);
			rc = -EIO;
		}
	}
	for (size_t done = 0; !rc && done < size;) {
		ssize_t w = r->wr(r->io_arg, buf + done, size - done, done);
		if (w <= 0) {
			rc = w < 0 ? (int)w : -EIO;
			snprintf(err, err_len, "writing restored data of %s failed: %s", path,
				 strerror(-rc));
		} else {
			done += (size_t)w;
		}
	}
	if (!rc && (rc = hsm_xfer_add(r->xfer, size)) < 0)
		snprintf(err, err_len, "restore of %s canceled", path);
	free(buf);
	return rc;
}

int cloud_get(void *priv, const char *path, hsm_write_fn wr, void *wr_arg,
	      struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg, char *err,
	      size_t err_len)
{
	struct cloud *cl = priv;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_http_resp resp;
	struct hsm_xfer xfer;
	struct hsm_meta m;
	char *etag = NULL;
	int rc;

	if ((rc = object_key(cl, path, key, sizeof(key), err, err_len)) < 0)
		return rc;
	if ((rc = cloud_head(cl, key, &m, &resp, err, err_len)) < 0)
		goto out_resp;
	const char *et = hsm_http_resp_header(&resp, "etag");
	if (et && !(etag = strdup(et))) {
		rc = -ENOMEM;
		goto out_resp;
	}
	hsm_xfer_init(&xfer, progress, progress_arg);
	struct ranges r = { .cl = cl, .key = key, .etag = etag, .size = m.size,
			    .block = cl->block_size, .wr = wr, .io_arg = wr_arg, .xfer = &xfer };
	if (S_ISDIR(m.mode))
		rc = 0;
	else if (m.size <= cl->block_size && m.checksum[0])
		rc = get_whole(&r, path, m.checksum + 4, err, err_len);
	else if (m.size)
		rc = hsm_run_parallel(cl->threads, range_count(&r), move_one, &r, err, err_len);
	if (rc == 0 && meta)
		*meta = m;
	hsm_xfer_fini(&xfer);
out_resp:
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory restoring %s", path);
	free(etag);
	hsm_http_resp_fini(&resp);
	return rc;
}

/* ---- stat, remove ---- */

int cloud_stat(void *priv, const char *path, struct hsm_meta *meta, char *err,
	       size_t err_len)
{
	struct cloud *cl = priv;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_http_resp resp;
	int rc;

	if ((rc = object_key(cl, path, key, sizeof(key), err, err_len)) < 0)
		return rc;
	rc = cloud_head(cl, key, meta, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
	return rc;
}

int cloud_remove(void *priv, const char *path, char *err, size_t err_len)
{
	struct cloud *cl = priv;
	const struct cloud_hdr *extra = &cl->svc->remove_hdr;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_http_resp resp;
	struct hsm_hdrs h;
	int rc;

	if ((rc = object_key(cl, path, key, sizeof(key), err, err_len)) < 0)
		return rc;
	hsm_hdrs_init(&h);
	if (!extra->name || (rc = hsm_hdrs_set(&h, extra->name, extra->value)) == 0) {
		struct cloud_call c = { .method = "DELETE", .key = key, .hdrs = &h };
		rc = cloud_call(cl, &c, &resp, err, err_len);
		hsm_http_resp_fini(&resp);
	}
	hsm_hdrs_fini(&h);
	/* A missing object is success (some servers answer 404 for it), a missing container
	 * is not. */
	if (rc == -ENOENT && !strstr(err, cl->svc->no_container))
		rc = 0;
	return rc;
}

/* ---- list ---- */

/* GETs one listing page of the container with query q and parses it into *x. */
static int list_page(struct cloud *cl, const struct cloud_qparam *q, int nq, struct hsm_xml **x,
		     char *err, size_t err_len)
{
	struct hsm_http_resp resp;
	struct hsm_hdrs h;
	int rc;

	*x = NULL;
	hsm_hdrs_init(&h);
	struct cloud_call c = { .method = "GET", .q = q, .nq = nq, .hdrs = &h,
				.max_body = CLOUD_LIST_BODY };
	rc = cloud_call(cl, &c, &resp, err, err_len);
	hsm_hdrs_fini(&h);
	if (rc == 0 && hsm_xml_parse(resp.body ? resp.body : "", resp.body_len, x) < 0) {
		snprintf(err, err_len, "%s: malformed listing reply", cl->name);
		rc = -EPROTO;
	}
	hsm_http_resp_fini(&resp);
	return rc;
}

int cloud_list(void *priv, hsm_list_fn fn, void *arg, char *err, size_t err_len)
{
	struct cloud *cl = priv;
	const struct cloud_service *svc = cl->svc;
	char prefix[NACRE_PATH_MAX + 2], page[16];
	char *marker = NULL;
	size_t plen;
	int rc, stop = 0;

	plen = (size_t)snprintf(prefix, sizeof(prefix), "%s%s", cl->prefix,
				cl->prefix[0] ? "/" : "");
	snprintf(page, sizeof(page), "%d", hsm_list_page_size(1000, svc->list_page_max));
	do {
		struct cloud_qparam q[ARRAY_SIZE(svc->list_query) + 3];
		struct hsm_xml *x;
		char *next = NULL;
		int nq = 0;

		while (svc->list_query[nq].name) {
			q[nq] = svc->list_query[nq];
			nq++;
		}
		q[nq++] = (struct cloud_qparam){ svc->list_size, page };
		if (plen)
			q[nq++] = (struct cloud_qparam){ "prefix", prefix };
		if (marker)
			q[nq++] = (struct cloud_qparam){ svc->list_marker, marker };

		rc = list_page(cl, q, nq, &x, err, err_len);
		free(marker);
		marker = NULL;
		if (rc < 0)
			break;
		rc = svc->list_page(cl, x, prefix, plen, fn, arg, &stop, &next, err, err_len);
		hsm_xml_free(x);
		marker = next;
	} while (rc == 0 && marker && !stop);
	free(marker);
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory listing %s", cl->name);
	return rc;
}
