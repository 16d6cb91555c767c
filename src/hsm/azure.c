/* azure.c - the Azure Blob backend: azure://account/container[/prefix].
 *
 * REST API 2021-08-06 over http.c. Authorization by SharedKey (HMAC-SHA256 of the
 * canonicalized request with the account key) or by a SAS token appended to the query.
 * Small objects are one Put Blob; bigger ones are blocks uploaded in parallel and committed
 * with Put Block List. Downloads are parallel ranged GETs pinned to the blob's ETag.
 * Directories are empty marker blobs with hdi_isfolder=true, as Azure Managed Lustre writes.
 * A put interrupted between its blocks and the Put Block List (a copytool killed mid-copy)
 * leaves uncommitted blocks only: they are not visible as a blob, the next Put Block List of
 * that blob discards them, and Azure garbage-collects them after seven days. So there is no
 * cleanup op here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/util.h"
#include "hsm/backend_impl.h"
#include "hsm/http.h"

#define AZ_VERSION "2021-08-06"
#define AZ_META "x-ms-meta-"
#define AZ_MAX_BLOCKS 50000
#define AZ_MAX_PUT_BLOB (256ull * 1024 * 1024) /* single-shot limit we allow ourselves */
#define AZ_KEY_MAX 1024
#define AZ_URL_MAX (3 * NACRE_PATH_MAX + 1024)

struct azure {
	char account[64];
	char container[64];
	char prefix[NACRE_PATH_MAX + 1];
	char base[512];      /* scheme://host[:port][/path], no trailing slash */
	char base_path[256]; /* the path part of base ("" or "/devstoreaccount1") */
	unsigned char key[128];
	size_t key_len;  /* 0: no SharedKey, use the SAS token */
	char *sas;       /* without the leading '?' */
	struct hsm_http *http;
	int threads;
	uint64_t block_size;
};

struct qparam {
	const char *name;
	const char *value; /* raw; encoded when the URL is built */
};

/* ---- SharedKey ---- */

struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 512;
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
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static int cmp_hdr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_q(const void *a, const void *b)
{
	return strcasecmp(((const struct qparam *)a)->name, ((const struct qparam *)b)->name);
}

/* The string Azure signs (2015-02-21 and later): the verb, twelve standard headers (an empty
 * Content-Length for an empty body), the x-ms-* headers sorted, then
 * "/account/path" and the query parameters sorted, "\nname:value" each. */
static char *string_to_sign(const char *account, const char *method, const char *path,
			    const struct qparam *q, int nq, const struct hsm_hdrs *h,
			    size_t body_len)
{
	static const char *const std[] = { "Content-Encoding", "Content-Language",
					   "Content-Length",   "Content-MD5",
					   "Content-Type",     "Date",
					   "If-Modified-Since", "If-Match",
					   "If-None-Match",    "If-Unmodified-Since",
					   "Range" };
	char *xms[HSM_HDRS_MAX];
	struct qparam sq[16];
	struct sbuf b = { 0 };
	int nx = 0;

	sb_str(&b, method);
	sb_str(&b, "\n");
	for (size_t i = 0; i < ARRAY_SIZE(std); i++) {
		const char *v = hsm_hdrs_get(h, std[i]);
		char num[32];
		if (i == 2) {
			snprintf(num, sizeof(num), "%zu", body_len);
			v = body_len ? num : "";
		}
		sb_str(&b, v ? v : "");
		sb_str(&b, "\n");
	}
	for (int i = 0; i < h->n; i++) {
		if (strncasecmp(h->name[i], "x-ms-", 5) != 0)
			continue;
		size_t nl = strlen(h->name[i]), vl = strlen(h->value[i]);
		char *line = malloc(nl + vl + 2);
		if (!line) {
			b.oom = 1;
			break;
		}
		for (size_t k = 0; k < nl; k++)
			line[k] = (char)((h->name[i][k] >= 'A' && h->name[i][k] <= 'Z')
						 ? h->name[i][k] + 32
						 : h->name[i][k]);
		line[nl] = ':';
		memcpy(line + nl + 1, h->value[i], vl + 1);
		xms[nx++] = line;
	}
	qsort(xms, (size_t)nx, sizeof(xms[0]), cmp_hdr);
	for (int i = 0; i < nx; i++) {
		sb_str(&b, xms[i]);
		sb_str(&b, "\n");
		free(xms[i]);
	}
	sb_str(&b, "/");
	sb_str(&b, account);
	sb_str(&b, path);
	if (nq > (int)ARRAY_SIZE(sq))
		b.oom = 1;
	else if (nq > 0) {
		memcpy(sq, q, (size_t)nq * sizeof(*q));
		qsort(sq, (size_t)nq, sizeof(sq[0]), cmp_q);
		for (int i = 0; i < nq; i++) {
			sb_str(&b, "\n");
			for (const char *c = sq[i].name; *c; c++) {
				char lc = (char)((*c >= 'A' && *c <= 'Z') ? *c + 32 : *c);
				sb_add(&b, &lc, 1);
			}
			sb_str(&b, ":");
			sb_str(&b, sq[i].value);
		}
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* ---- requests ---- */

struct call {
	const char *method;
	const char *key;    /* blob key, or NULL for the container */
	const struct qparam *q;
	int nq;
	struct hsm_hdrs *hdrs;
	const void *body;
	size_t body_len;
	hsm_http_sink_fn sink;
	void *sink_arg;
	size_t max_body;
	struct hsm_xfer *xfer;
};

static int az_call(struct azure *az, const struct call *c, struct hsm_http_resp *resp,
		   char *err, size_t err_len)
{
	char *url = malloc(AZ_URL_MAX), *path = malloc(AZ_URL_MAX), date[64];
	size_t pl;
	int rc;

	if (!url || !path) {
		rc = -ENOMEM;
		goto out_free;
	}
	pl = (size_t)snprintf(path, AZ_URL_MAX, "%s/%s", az->base_path, az->container);
	if (c->key) {
		path[pl++] = '/';
		if (hsm_url_encode(c->key, 1, path + pl, AZ_URL_MAX - pl) >= AZ_URL_MAX - pl) {
			rc = -ENAMETOOLONG;
			snprintf(err, err_len, "blob name too long: %s", c->key);
			goto out_free;
		}
	}
	/* The URL: base (which may carry a path, as Azurite's does) + container/blob + query. */
	size_t ul = (size_t)snprintf(url, AZ_URL_MAX, "%s%s", az->base,
				     path + strlen(az->base_path));
	for (int i = 0; i < c->nq && ul < AZ_URL_MAX; i++) {
		ul += (size_t)snprintf(url + ul, AZ_URL_MAX - ul, "%c%s=", i ? '&' : '?',
				       c->q[i].name);
		if (ul < AZ_URL_MAX)
			ul += hsm_url_encode(c->q[i].value, 0, url + ul, AZ_URL_MAX - ul);
	}
	if (az->sas && ul < AZ_URL_MAX)
		ul += (size_t)snprintf(url + ul, AZ_URL_MAX - ul, "%c%s", c->nq ? '&' : '?',
				       az->sas);
	if (ul >= AZ_URL_MAX) {
		rc = -ENAMETOOLONG;
		snprintf(err, err_len, "request URL for %s too long", c->key ? c->key : "listing");
		goto out_free;
	}
	hsm_http_date(date, sizeof(date));
	if ((rc = hsm_hdrs_set(c->hdrs, "x-ms-date", date)) < 0 ||
	    (rc = hsm_hdrs_set(c->hdrs, "x-ms-version", AZ_VERSION)) < 0)
		goto out_free;
	if (az->key_len) {
		unsigned char mac[32];
		char sig[64], auth[256];
		char *sts = string_to_sign(az->account, c->method, path, c->q, c->nq, c->hdrs,
					   c->body_len);
		if (!sts) {
			rc = -ENOMEM;
			goto out_free;
		}
		rc = hsm_hmac_sha256(az->key, az->key_len, sts, strlen(sts), mac);
		free(sts);
		if (rc < 0)
			goto out_free;
		hsm_base64_encode(mac, sizeof(mac), sig, sizeof(sig));
		snprintf(auth, sizeof(auth), "SharedKey %s:%s", az->account, sig);
		if ((rc = hsm_hdrs_set(c->hdrs, "Authorization", auth)) < 0)
			goto out_free;
	}
	struct hsm_http_req req = { .method = c->method, .url = url, .hdrs = c->hdrs,
				    .body = c->body, .body_len = c->body_len, .sink = c->sink,
				    .sink_arg = c->sink_arg, .max_body = c->max_body,
				    .xfer = c->xfer };
	rc = hsm_http_do(az->http, &req, resp, err, err_len);
	if (rc == -EACCES) {
		size_t l = strlen(err);
		snprintf(err + l, err_len > l ? err_len - l : 0,
			 ": storage account '%s' refused the %s; check AZURE_STORAGE_KEY or "
			 "AZURE_STORAGE_SAS_TOKEN (environment or credentials file)",
			 az->account, az->key_len ? "shared key" : "SAS token");
	}
out_free:
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory");
	free(url);
	free(path);
	return rc;
}

/* ---- open/close ---- */

static int parse_connection_string(const char *cs, char *key, size_t klen, char *sas,
				   size_t slen)
{
	int found = 0;
	/* "DefaultEndpointsProtocol=..;AccountName=..;AccountKey=..;BlobEndpoint=..". */
	for (const char *p = cs; *p;) {
		size_t n = strcspn(p, ";");
		if (n > 11 && strncmp(p, "AccountKey=", 11) == 0 && n - 11 < klen) {
			memcpy(key, p + 11, n - 11);
			key[n - 11] = '\0';
			found = 1;
		} else if (n > 22 && strncmp(p, "SharedAccessSignature=", 22) == 0 &&
			   n - 22 < slen) {
			memcpy(sas, p + 22, n - 22);
			sas[n - 22] = '\0';
			found = 1;
		}
		p += n;
		if (*p == ';')
			p++;
	}
	return found;
}

static void az_close(void *priv)
{
	struct azure *az = priv;
	if (!az)
		return;
	hsm_http_destroy(az->http);
	free(az->sas);
	free(az);
}

static int az_open(const char *rest, const struct hsm_backend_opts *opts, void **priv,
		   char *err, size_t err_len)
{
	char key64[AZ_KEY_MAX] = "", sas[4096] = "", cs[4096] = "";
	struct hsm_http_opts ho = { .retries = opts->retries ? opts->retries : 5 };
	struct azure *az;
	size_t n;
	int rc;

	az = calloc(1, sizeof(*az));
	if (!az)
		return -ENOMEM;
	n = strcspn(rest, "/");
	if (n == 0 || n >= sizeof(az->account) || rest[n] != '/') {
		snprintf(err, err_len,
			 "azure://%s: expected azure://account/container[/prefix]", rest);
		rc = -EINVAL;
		goto out_free;
	}
	memcpy(az->account, rest, n);
	rest += n + 1;
	n = strcspn(rest, "/");
	if (n < 3 || n >= sizeof(az->container)) {
		snprintf(err, err_len,
			 "azure://%s/%s: container names are 3 to 63 characters (lowercase "
			 "letters, digits, '-')",
			 az->account, rest);
		rc = -EINVAL;
		goto out_free;
	}
	memcpy(az->container, rest, n);
	rest += n;
	while (*rest == '/')
		rest++;
	if (str_copy(az->prefix, rest, sizeof(az->prefix)) >= sizeof(az->prefix)) {
		snprintf(err, err_len, "azure://%s/%s: prefix too long", az->account,
			 az->container);
		rc = -ENAMETOOLONG;
		goto out_free;
	}
	for (n = strlen(az->prefix); n && az->prefix[n - 1] == '/'; n--)
		az->prefix[n - 1] = '\0';

	if (opts->endpoint && *opts->endpoint) {
		const char *s = strstr(opts->endpoint, "://"), *slash;
		if (!s || str_copy(az->base, opts->endpoint, sizeof(az->base)) >= sizeof(az->base)) {
			snprintf(err, err_len,
				 "azure endpoint '%s' is not a URL like "
				 "http://127.0.0.1:10000/devstoreaccount1",
				 opts->endpoint);
			rc = -EINVAL;
			goto out_free;
		}
		for (n = strlen(az->base); n && az->base[n - 1] == '/'; n--)
			az->base[n - 1] = '\0';
		slash = strchr(az->base + (s - opts->endpoint) + 3, '/');
		str_copy(az->base_path, slash ? slash : "", sizeof(az->base_path));
	} else {
		snprintf(az->base, sizeof(az->base), "https://%s.blob.core.windows.net", az->account);
	}

	/* Credentials: a key, a SAS token, or a connection string holding either. */
	if ((rc = hsm_cred_get(opts->credentials, "AZURE_STORAGE_KEY", key64, sizeof(key64), err,
			       err_len)) < 0 ||
	    (rc = hsm_cred_get(opts->credentials, "AZURE_STORAGE_SAS_TOKEN", sas, sizeof(sas),
			       err, err_len)) < 0 ||
	    (rc = hsm_cred_get(opts->credentials, "AZURE_STORAGE_CONNECTION_STRING", cs,
			       sizeof(cs), err, err_len)) < 0)
		goto out_free;
	if (!key64[0] && !sas[0] && cs[0])
		parse_connection_string(cs, key64, sizeof(key64), sas, sizeof(sas));
	if (key64[0]) {
		rc = hsm_base64_decode(key64, az->key, sizeof(az->key));
		if (rc <= 0) {
			snprintf(err, err_len,
				 "AZURE_STORAGE_KEY for storage account '%s' is not base64 (copy "
				 "key1 or key2 of the account)",
				 az->account);
			rc = -EINVAL;
			goto out_free;
		}
		az->key_len = (size_t)rc;
	} else if (sas[0]) {
		az->sas = strdup(sas[0] == '?' ? sas + 1 : sas);
		if (!az->sas) {
			rc = -ENOMEM;
			goto out_free;
		}
	} else {
		snprintf(err, err_len,
			 "no credentials for storage account '%s': set AZURE_STORAGE_KEY or "
			 "AZURE_STORAGE_SAS_TOKEN in the environment or the credentials file",
			 az->account);
		rc = -EACCES;
		goto out_free;
	}
	az->threads = opts->threads > 0 ? opts->threads : 4;
	az->block_size = opts->block_size ? opts->block_size : 8ull * 1024 * 1024;
	if (az->block_size > 4000ull * 1024 * 1024)
		az->block_size = 4000ull * 1024 * 1024;
	rc = hsm_http_create(&ho, &az->http);
	if (rc < 0)
		goto out_free;
	*priv = az;
	return 0;
out_free:
	az_close(az);
	return rc;
}

/* ---- put ---- */

struct az_put {
	struct azure *az;
	const char *key;
	struct hsm_xfer *xfer;
};

static void block_id(size_t i, char *out, size_t len)
{
	char raw[32];
	/* Same length for every block of a blob, as the service requires. */
	snprintf(raw, sizeof(raw), "nacre-%010zu", i);
	hsm_base64_encode(raw, strlen(raw), out, len);
}

static int md5_b64(const void *buf, size_t len, char *out, size_t out_len)
{
	unsigned char md[16];
	int rc = hsm_md5(buf, len, md);
	if (rc < 0)
		return rc;
	return hsm_base64_encode(md, sizeof(md), out, out_len) < 0 ? -EINVAL : 0;
}

static int put_block(void *ctx, size_t i, const void *buf, size_t len, char *err,
		     size_t err_len)
{
	struct az_put *p = ctx;
	char id[64], md5[32];
	struct qparam q[] = { { "comp", "block" }, { "blockid", id } };
	struct hsm_http_resp resp;
	struct hsm_hdrs h;
	int rc;

	block_id(i, id, sizeof(id));
	hsm_hdrs_init(&h);
	/* The service checks each block against its MD5. */
	if ((rc = md5_b64(buf, len, md5, sizeof(md5))) < 0 ||
	    (rc = hsm_hdrs_set(&h, "Content-MD5", md5)) < 0)
		goto out;
	struct call c = { .method = "PUT", .key = p->key, .q = q, .nq = 2, .hdrs = &h,
			  .body = buf, .body_len = len, .xfer = p->xfer };
	rc = az_call(p->az, &c, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
out:
	hsm_hdrs_fini(&h);
	return rc;
}

static int az_stat(void *priv, const char *path, struct hsm_meta *meta, char *err,
		   size_t err_len);

static int head_blob(struct azure *az, const char *key, struct hsm_meta *meta,
		     struct hsm_http_resp *resp, char *err, size_t err_len)
{
	struct hsm_hdrs h;
	int rc;

	hsm_hdrs_init(&h);
	struct call c = { .method = "HEAD", .key = key, .hdrs = &h };
	rc = az_call(az, &c, resp, err, err_len);
	hsm_hdrs_fini(&h);
	if (rc < 0)
		return rc;
	memset(meta, 0, sizeof(*meta));
	const char *cl = hsm_http_resp_header(resp, "content-length");
	int64_t size;
	if (!cl || parse_i64(cl, 0, INT64_MAX, &size) < 0) {
		snprintf(err, err_len, "HEAD of blob %s: no valid Content-Length", key);
		return -EPROTO;
	}
	meta->size = (uint64_t)size;
	hsm_meta_from_resp(meta, resp, AZ_META);
	const char *md5 = hsm_http_resp_header(resp, "content-md5");
	unsigned char raw[16];
	if (md5 && hsm_base64_decode(md5, raw, sizeof(raw)) == 16) {
		char hex[33];
		hsm_hex(raw, 16, hex);
		snprintf(meta->checksum, sizeof(meta->checksum), "md5:%s", hex);
	}
	return 0;
}

static int az_put(void *priv, const char *path, uint64_t size, hsm_read_fn rd, void *rd_arg,
		  const struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg,
		  char *err, size_t err_len)
{
	struct azure *az = priv;
	char key[NACRE_PATH_MAX + 1], md5[32];
	struct hsm_http_resp resp = { 0 };
	struct hsm_xfer xfer;
	struct hsm_hdrs h;
	char *buf = NULL;
	int rc;

	if (hsm_object_key(az->prefix, path, key, sizeof(key)) < 0) {
		snprintf(err, err_len, "invalid object path '%s'", path);
		return -EINVAL;
	}
	hsm_xfer_init(&xfer, progress, progress_arg);
	hsm_hdrs_init(&h);
	if (meta && (rc = hsm_meta_to_headers(meta, AZ_META, &h)) < 0)
		goto out;
	if ((rc = hsm_hdrs_set(&h, "x-ms-blob-type", "BlockBlob")) < 0)
		goto out;
	if ((meta && S_ISDIR(meta->mode)) || size <= az->block_size) {
		/* One Put Blob: directory markers and objects that fit in one block. */
		size_t len = meta && S_ISDIR(meta->mode) ? 0 : (size_t)size;
		if (size > AZ_MAX_PUT_BLOB) {
			rc = -EFBIG;
			goto out;
		}
		buf = malloc(len ? len : 1);
		if (!buf) {
			rc = -ENOMEM;
			goto out;
		}
		if (len && (rc = hsm_read_full(rd, rd_arg, buf, len, 0)) < 0) {
			snprintf(err, err_len, "reading %s to archive failed: %s", path,
				 strerror(-rc));
			goto out;
		}
		if ((rc = md5_b64(buf, len, md5, sizeof(md5))) < 0 ||
		    (rc = hsm_hdrs_set(&h, "Content-MD5", md5)) < 0)
			goto out;
		struct call c = { .method = "PUT", .key = key, .hdrs = &h, .body = buf,
				  .body_len = len, .xfer = &xfer };
		rc = az_call(az, &c, &resp, err, err_len);
		if (rc < 0)
			goto out;
		const char *got = hsm_http_resp_header(&resp, "content-md5");
		if (got && strcmp(got, md5) != 0) {
			snprintf(err, err_len,
				 "blob %s stored with Content-MD5 %s but we sent %s: the copy is "
				 "corrupt",
				 key, got, md5);
			rc = -EIO;
			goto out;
		}
		rc = hsm_xfer_add(&xfer, len);
		if (rc < 0)
			snprintf(err, err_len, "archive of %s canceled", path);
		goto out;
	}

	/* Blocks in parallel, then commit the list with the metadata. */
	uint64_t bs = az->block_size;
	if ((size + bs - 1) / bs > AZ_MAX_BLOCKS)
		bs = (size + AZ_MAX_BLOCKS - 1) / AZ_MAX_BLOCKS;
	size_t nblocks = (size_t)((size + bs - 1) / bs);
	struct az_put p = { .az = az, .key = key, .xfer = &xfer };
	rc = hsm_put_parts(az->threads, size, bs, rd, rd_arg, put_block, &p, &xfer, err, err_len);
	if (rc < 0)
		goto out;
	struct sbuf list = { 0 };
	sb_str(&list, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
	for (size_t i = 0; i < nblocks; i++) {
		char id[64];
		block_id(i, id, sizeof(id));
		sb_str(&list, "<Latest>");
		sb_str(&list, id);
		sb_str(&list, "</Latest>");
	}
	sb_str(&list, "</BlockList>");
	if (list.oom) {
		free(list.p);
		rc = -ENOMEM;
		goto out;
	}
	/* x-ms-blob-type belongs to Put Blob only. */
	hsm_hdrs_fini(&h);
	hsm_hdrs_init(&h);
	if ((meta && (rc = hsm_meta_to_headers(meta, AZ_META, &h)) < 0) ||
	    (rc = hsm_hdrs_set(&h, "Content-Type", "application/xml")) < 0) {
		free(list.p);
		goto out;
	}
	struct qparam q[] = { { "comp", "blocklist" } };
	struct call c = { .method = "PUT", .key = key, .q = q, .nq = 1, .hdrs = &h,
			  .body = list.p, .body_len = list.len, .xfer = &xfer };
	rc = az_call(az, &c, &resp, err, err_len);
	free(list.p);
	if (rc < 0)
		goto out;
	/* Verify what was committed: the size must be ours (each block's MD5 was checked). */
	struct hsm_meta got;
	hsm_http_resp_fini(&resp);
	rc = head_blob(az, key, &got, &resp, err, err_len);
	if (rc == 0 && got.size != size) {
		snprintf(err, err_len, "blob %s has %llu bytes after commit, expected %llu", key,
			 (unsigned long long)got.size, (unsigned long long)size);
		rc = -EIO;
	}
out:
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory archiving %s", path);
	if (rc == -EFBIG)
		snprintf(err, err_len, "%s: too big for one Put Blob", path);
	hsm_http_resp_fini(&resp);
	hsm_hdrs_fini(&h);
	hsm_xfer_fini(&xfer);
	free(buf);
	return rc;
}

/* ---- get ---- */

struct az_get {
	struct azure *az;
	const char *key;
	const char *etag;
	struct hsm_xfer *xfer;
};

static int get_range(void *ctx, uint64_t off, size_t len, void *buf, char *err, size_t err_len)
{
	struct az_get *g = ctx;
	struct hsm_buf_sink sink = { .buf = buf, .len = len };
	struct hsm_http_resp resp;
	char range[64];
	struct hsm_hdrs h;
	int rc;

	hsm_hdrs_init(&h);
	snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
		 (unsigned long long)(off + len - 1));
	/* If-Match: a blob replaced while we read fails (412) instead of mixing versions. */
	if ((rc = hsm_hdrs_set(&h, "x-ms-range", range)) < 0 ||
	    (g->etag && (rc = hsm_hdrs_set(&h, "If-Match", g->etag)) < 0))
		goto out;
	struct call c = { .method = "GET", .key = g->key, .hdrs = &h, .sink = hsm_buf_sink_fn,
			  .sink_arg = &sink, .xfer = g->xfer };
	rc = az_call(g->az, &c, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
	if (rc == 0 && sink.got != len) {
		snprintf(err, err_len, "blob %s: range %s returned %zu bytes", g->key, range,
			 sink.got);
		rc = -EIO;
	}
out:
	hsm_hdrs_fini(&h);
	return rc;
}

static int az_get(void *priv, const char *path, hsm_write_fn wr, void *wr_arg,
		  struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg, char *err,
		  size_t err_len)
{
	struct azure *az = priv;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_http_resp resp = { 0 };
	struct hsm_meta m;
	struct hsm_xfer xfer;
	int rc;

	if (hsm_object_key(az->prefix, path, key, sizeof(key)) < 0) {
		snprintf(err, err_len, "invalid object path '%s'", path);
		return -EINVAL;
	}
	rc = head_blob(az, key, &m, &resp, err, err_len);
	if (rc < 0)
		goto out_resp;
	const char *et = hsm_http_resp_header(&resp, "etag");
	char *etag = et ? strdup(et) : NULL;
	hsm_xfer_init(&xfer, progress, progress_arg);
	struct az_get g = { .az = az, .key = key, .etag = etag, .xfer = &xfer };
	if (S_ISDIR(m.mode)) {
		rc = 0;
	} else if (m.size <= az->block_size && m.checksum[0]) {
		/* One range: check the whole content against the stored MD5. */
		char *buf = malloc(m.size ? m.size : 1);
		unsigned char md[16];
		char hex[33];
		rc = buf ? 0 : -ENOMEM;
		if (!rc && m.size)
			rc = get_range(&g, 0, (size_t)m.size, buf, err, err_len);
		if (!rc && (rc = hsm_md5(buf, (size_t)m.size, md)) == 0) {
			hsm_hex(md, 16, hex);
			if (strcmp(m.checksum + 4, hex) != 0) {
				snprintf(err, err_len,
					 "blob %s: content MD5 %s differs from the stored %s", key,
					 hex, m.checksum + 4);
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
		rc = hsm_get_ranges(az->threads, m.size, az->block_size, get_range, &g, wr, wr_arg,
				    &xfer, err, err_len);
	}
	if (rc == 0 && meta)
		*meta = m;
	if (rc == -ENOMEM && err_len && !err[0])
		snprintf(err, err_len, "out of memory restoring %s", path);
	hsm_xfer_fini(&xfer);
	free(etag);
out_resp:
	hsm_http_resp_fini(&resp);
	return rc;
}

static int az_stat(void *priv, const char *path, struct hsm_meta *meta, char *err,
		   size_t err_len)
{
	struct azure *az = priv;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_http_resp resp;
	int rc;

	if (hsm_object_key(az->prefix, path, key, sizeof(key)) < 0) {
		snprintf(err, err_len, "invalid object path '%s'", path);
		return -EINVAL;
	}
	rc = head_blob(az, key, meta, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
	return rc;
}

static int az_remove(void *priv, const char *path, char *err, size_t err_len)
{
	struct azure *az = priv;
	char key[NACRE_PATH_MAX + 1];
	struct hsm_http_resp resp;
	struct hsm_hdrs h;
	int rc;

	if (hsm_object_key(az->prefix, path, key, sizeof(key)) < 0) {
		snprintf(err, err_len, "invalid object path '%s'", path);
		return -EINVAL;
	}
	hsm_hdrs_init(&h);
	/* A blob with snapshots cannot be deleted alone. */
	rc = hsm_hdrs_set(&h, "x-ms-delete-snapshots", "include");
	if (rc == 0) {
		struct call c = { .method = "DELETE", .key = key, .hdrs = &h };
		rc = az_call(az, &c, &resp, err, err_len);
		hsm_http_resp_fini(&resp);
	}
	hsm_hdrs_fini(&h);
	if (rc == -ENOENT && !strstr(err, "ContainerNotFound"))
		rc = 0;
	return rc;
}

/* ---- list ---- */

/* "Tue, 03 Jan 2023 10:00:00 GMT" to Unix seconds, without the locale. */
static int parse_http_date(const char *s, struct nacre_time *t)
{
	static const char mo[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	char mon[4];
	int d, y, H, M, S;
	struct tm tm = { 0 };

	if (sscanf(s, "%*3s, %d %3s %d %d:%d:%d GMT", &d, mon, &y, &H, &M, &S) != 6)
		return -EINVAL;
	const char *f = strstr(mo, mon);
	if (!f || (f - mo) % 3)
		return -EINVAL;
	tm.tm_mday = d;
	tm.tm_mon = (int)((f - mo) / 3);
	tm.tm_year = y - 1900;
	tm.tm_hour = H;
	tm.tm_min = M;
	tm.tm_sec = S;
	t->sec = (int64_t)timegm(&tm);
	t->nsec = 0;
	return 0;
}

static int az_list(void *priv, hsm_list_fn fn, void *arg, char *err, size_t err_len)
{
	struct azure *az = priv;
	char prefix[NACRE_PATH_MAX + 2], page[16];
	char *marker = NULL;
	size_t plen;
	int rc = 0, stop = 0;

	plen = (size_t)snprintf(prefix, sizeof(prefix), "%s%s", az->prefix,
				az->prefix[0] ? "/" : "");
	snprintf(page, sizeof(page), "%d", hsm_list_page_size(1000, 5000));
	do {
		struct qparam q[7] = { { "restype", "container" }, { "comp", "list" },
				       { "include", "metadata" }, { "maxresults", page } };
		int nq = 4;
		struct hsm_http_resp resp;
		struct hsm_xml *x = NULL;
		struct hsm_hdrs h;

		if (plen)
			q[nq++] = (struct qparam){ "prefix", prefix };
		if (marker)
			q[nq++] = (struct qparam){ "marker", marker };
		hsm_hdrs_init(&h);
		struct call c = { .method = "GET", .q = q, .nq = nq, .hdrs = &h,
				  .max_body = 64u * 1024 * 1024 };
		rc = az_call(az, &c, &resp, err, err_len);
		hsm_hdrs_fini(&h);
		free(marker);
		marker = NULL;
		if (rc == 0 && hsm_xml_parse(resp.body ? resp.body : "", resp.body_len, &x) < 0) {
			snprintf(err, err_len, "container %s of account %s: malformed listing reply",
				 az->container, az->account);
			rc = -EPROTO;
		}
		hsm_http_resp_fini(&resp);
		if (rc < 0)
			break;
		int root = hsm_xml_root(x);
		int blobs = hsm_xml_child(x, root, "Blobs");
		for (int b = hsm_xml_child(x, blobs, "Blob"); b >= 0 && !stop;
		     b = hsm_xml_next(x, b, "Blob")) {
			const char *name = hsm_xml_child_text(x, b, "Name");
			int props = hsm_xml_child(x, b, "Properties");
			int md = hsm_xml_child(x, b, "Metadata");
			struct hsm_meta m = { 0 };
			const char *v;
			int64_t size;

			if (!name || strncmp(name, prefix, plen) != 0 || !name[plen])
				continue;
			v = hsm_xml_child_text(x, props, "Content-Length");
			if (v && parse_i64(v, 0, INT64_MAX, &size) == 0)
				m.size = (uint64_t)size;
			v = hsm_xml_child_text(x, props, "Last-Modified");
			if (v)
				parse_http_date(v, &m.mtime);
			v = hsm_xml_child_text(x, props, "Content-MD5");
			unsigned char raw[16];
			if (v && hsm_base64_decode(v, raw, sizeof(raw)) == 16) {
				char hex[33];
				hsm_hex(raw, 16, hex);
				snprintf(m.checksum, sizeof(m.checksum), "md5:%s", hex);
			}
			for (int k = hsm_xml_child(x, md, NULL); k >= 0; k = hsm_xml_next(x, k, NULL))
				hsm_meta_apply(&m, hsm_xml_name(x, k), hsm_xml_text(x, k));
			stop = fn(arg, name + plen, &m);
		}
		const char *next = hsm_xml_child_text(x, root, "NextMarker");
		if (next && *next && !stop) {
			marker = strdup(next);
			if (!marker)
				rc = -ENOMEM;
		}
		hsm_xml_free(x);
	} while (marker);
	free(marker);
	return rc;
}

const struct hsm_backend_ops hsm_azure_ops = {
	.open = az_open,
	.close = az_close,
	.put = az_put,
	.get = az_get,
	.stat = az_stat,
	.remove = az_remove,
	.list = az_list,
};
