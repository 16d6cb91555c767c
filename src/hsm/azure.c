/* azure.c - the Azure Blob backend: azure://account/container[/prefix].
 *
 * REST API 2021-08-06, moved by the cloud engine (cloud.c); this file holds what is Azure's:
 * SharedKey authorization (HMAC-SHA256 of the canonicalized request with the account key) or
 * a SAS token appended to the query, the URLs, the block verbs and the listing.
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
#include <time.h>

#include "common/strbuf.h"
#include "common/util.h"
#include "hsm/cloud.h"

#define AZ_VERSION "2021-08-06"
#define AZ_META "x-ms-meta-"
#define AZ_MAX_BLOCKS 50000
#define AZ_MAX_BLOCK (4000ull * 1024 * 1024)
#define AZ_MAX_PUT_BLOB (256ull * 1024 * 1024) /* single-shot limit we allow ourselves */
#define AZ_KEY_MAX 1024

struct azure {
	char account[64];
	unsigned char key[128];
	size_t key_len; /* 0: no SharedKey, use the SAS token */
	char *sas;      /* without the leading '?' */
};

static void az_fini(void *state)
{
	struct azure *az = state;

	free(az->sas);
}

/* ---- SharedKey ---- */

/* What a connection string says (Azure's "Configure Azure Storage connection strings"). */
struct az_conn {
	char key[AZ_KEY_MAX];
	char sas[4096];
	char blob_endpoint[512]; /* BlobEndpoint=, or from EndpointSuffix= and the protocol */
};

/* Copies the value of field name= of the connection string's part p (n bytes) into out;
 * 1 if it was that field. */
static int cs_field(const char *p, size_t n, const char *name, char *out, size_t len)
{
	size_t k = strlen(name);
	if (n <= k || strncmp(p, name, k) != 0 || n - k >= len)
		return 0;
	memcpy(out, p + k, n - k);
	out[n - k] = '\0';
	return 1;
}

/* "DefaultEndpointsProtocol=..;AccountName=..;AccountKey=..;BlobEndpoint=..". */
static void parse_connection_string(const char *cs, const char *account, struct az_conn *c)
{
	char proto[16] = "https", suffix[256] = "";

	for (const char *p = cs; *p;) {
		size_t n = strcspn(p, ";");
		if (!cs_field(p, n, "AccountKey=", c->key, sizeof(c->key)) &&
		    !cs_field(p, n, "SharedAccessSignature=", c->sas, sizeof(c->sas)) &&
		    !cs_field(p, n, "BlobEndpoint=", c->blob_endpoint, sizeof(c->blob_endpoint)) &&
		    !cs_field(p, n, "EndpointSuffix=", suffix, sizeof(suffix)))
			cs_field(p, n, "DefaultEndpointsProtocol=", proto, sizeof(proto));
		p += n;
		if (*p == ';')
			p++;
	}
	/* a sovereign cloud names its suffix (core.chinacloudapi.cn) rather than the URL */
	if (!c->blob_endpoint[0] && suffix[0])
		snprintf(c->blob_endpoint, sizeof(c->blob_endpoint), "%s://%s.blob.%s", proto,
			 account, suffix);
}

/* Credentials: a key, a SAS token, or a connection string holding either (and the blob
 * endpoint it names, into endpoint: "" if none). */
static int az_credentials(struct azure *az, const char *file, char *endpoint,
			  size_t endpoint_len, char *err, size_t err_len)
{
	char key64[AZ_KEY_MAX] = "", sas[4096] = "", cs[4096] = "";
	struct az_conn *c = NULL;
	int rc;

	endpoint[0] = '\0';
	if ((rc = hsm_cred_get(file, "AZURE_STORAGE_KEY", key64, sizeof(key64), err,
			       err_len)) < 0 ||
	    (rc = hsm_cred_get(file, "AZURE_STORAGE_SAS_TOKEN", sas, sizeof(sas), err,
			       err_len)) < 0 ||
	    (rc = hsm_cred_get(file, "AZURE_STORAGE_CONNECTION_STRING", cs, sizeof(cs), err,
			       err_len)) < 0)
		return rc;
	if (cs[0]) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		parse_connection_string(cs, az->account, c);
		if (!key64[0] && !sas[0]) {
			memcpy(key64, c->key, sizeof(key64));
			memcpy(sas, c->sas, sizeof(sas));
		}
		snprintf(endpoint, endpoint_len, "%s", c->blob_endpoint);
		free(c);
	}
	if (key64[0]) {
		rc = hsm_base64_decode(key64, az->key, sizeof(az->key));
		if (rc <= 0) {
			snprintf(err, err_len,
				 "AZURE_STORAGE_KEY for storage account '%s' is not base64 (copy "
				 "key1 or key2 of the account)",
				 az->account);
			return -EINVAL;
		}
		az->key_len = (size_t)rc;
	} else if (sas[0]) {
		az->sas = strdup(sas[0] == '?' ? sas + 1 : sas);
		if (!az->sas)
			return -ENOMEM;
	} else {
		return cloud_no_credentials("AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN", err,
					    err_len, "storage account '%s'", az->account);
	}
	return 0;
}

static int cmp_hdr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_q(const void *a, const void *b)
{
	return strcasecmp(((const struct cloud_qparam *)a)->name,
			  ((const struct cloud_qparam *)b)->name);
}

/* The string Azure signs (2015-02-21 and later): the verb, twelve standard headers (an empty
 * Content-Length for an empty body), the x-ms-* headers sorted, then
 * "/account/path" and the query parameters sorted, "\nname:value" each. */
static char *string_to_sign(const char *account, const char *method, const char *path,
			    const struct cloud_qparam *q, int nq, const struct hsm_hdrs *h,
			    size_t body_len)
{
	static const char *const std[] = { "Content-Encoding", "Content-Language",
					   "Content-Length",   "Content-MD5",
					   "Content-Type",     "Date",
					   "If-Modified-Since", "If-Match",
					   "If-None-Match",    "If-Unmodified-Since",
					   "Range" };
	char *xms[HSM_HDRS_MAX];
	struct cloud_qparam sq[16];
	struct strbuf b = STRBUF_INIT;
	int nx = 0, oom = 0;

	strbuf_str(&b, method);
	strbuf_str(&b, "\n");
	for (size_t i = 0; i < ARRAY_SIZE(std); i++) {
		const char *v = hsm_hdrs_get(h, std[i]);
		char num[32];
		if (i == 2) {
			snprintf(num, sizeof(num), "%zu", body_len);
			v = body_len ? num : "";
		}
		strbuf_str(&b, v ? v : "");
		strbuf_str(&b, "\n");
	}
	for (int i = 0; i < h->n; i++) {
		if (strncasecmp(h->name[i], "x-ms-", 5) != 0)
			continue;
		size_t nl = strlen(h->name[i]), vl = strlen(h->value[i]);
		char *line = malloc(nl + vl + 2);
		if (!line) {
			oom = 1;
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
		strbuf_str(&b, xms[i]);
		strbuf_str(&b, "\n");
		free(xms[i]);
	}
	strbuf_str(&b, "/");
	strbuf_str(&b, account);
	strbuf_str(&b, path);
	if (nq > (int)ARRAY_SIZE(sq))
		oom = 1;
	else if (nq > 0) {
		memcpy(sq, q, (size_t)nq * sizeof(*q));
		qsort(sq, (size_t)nq, sizeof(sq[0]), cmp_q);
		for (int i = 0; i < nq; i++) {
			strbuf_str(&b, "\n");
			for (const char *c = sq[i].name; *c; c++)
				strbuf_char(&b, (char)((*c >= 'A' && *c <= 'Z') ? *c + 32 : *c));
			strbuf_str(&b, ":");
			strbuf_str(&b, sq[i].value);
		}
	}
	if (oom) {
		strbuf_fini(&b);
		return NULL;
	}
	return strbuf_take(&b);
}

/* The URL: base (which may carry a path, as Azurite's does) + container/blob + the query in
 * the order given + the SAS token; then the date, the version and the SharedKey. */
static int az_sign(struct cloud *cl, const struct cloud_call *c, const char *path, char *url,
		   size_t url_len, char *err, size_t err_len)
{
	struct azure *az = cl->state;
	char date[64];
	int rc;

	size_t ul = (size_t)snprintf(url, url_len, "%s%s", cl->base, path + strlen(cl->base_path));
	for (int i = 0; i < c->nq && ul < url_len; i++) {
		ul += (size_t)snprintf(url + ul, url_len - ul, "%c%s=", i ? '&' : '?',
				       c->q[i].name);
		if (ul < url_len)
			ul += hsm_url_encode(c->q[i].value, 0, url + ul, url_len - ul);
	}
	if (az->sas && ul < url_len)
		ul += (size_t)snprintf(url + ul, url_len - ul, "%c%s", c->nq ? '&' : '?', az->sas);
	if (ul >= url_len) {
		snprintf(err, err_len, "request URL for %s too long", c->key ? c->key : "listing");
		return -ENAMETOOLONG;
	}
	hsm_http_date(date, sizeof(date));
	if ((rc = hsm_hdrs_set(c->hdrs, "x-ms-date", date)) < 0 ||
	    (rc = hsm_hdrs_set(c->hdrs, "x-ms-version", AZ_VERSION)) < 0)
		return rc;
	if (!az->key_len)
		return 0;
	unsigned char mac[32];
	char sig[64], auth[256];
	char *sts = string_to_sign(az->account, c->method, path, c->q, c->nq, c->hdrs,
				   c->body_len);
	if (!sts)
		return -ENOMEM;
	rc = hsm_hmac_sha256(az->key, az->key_len, sts, strlen(sts), mac);
	free(sts);
	if (rc < 0)
		return rc;
	hsm_base64_encode(mac, sizeof(mac), sig, sizeof(sig));
	snprintf(auth, sizeof(auth), "SharedKey %s:%s", az->account, sig);
	return hsm_hdrs_set(c->hdrs, "Authorization", auth);
}

static void az_access_hint(struct cloud *cl, char *buf, size_t len)
{
	struct azure *az = cl->state;

	snprintf(buf, len,
		 ": storage account '%s' refused the %s; check AZURE_STORAGE_KEY or "
		 "AZURE_STORAGE_SAS_TOKEN (environment or credentials file)",
		 az->account, az->key_len ? "shared key" : "SAS token");
}

/* Content-MD5 (base64) of a reply, as hex. */
static int az_stored_md5(const struct hsm_http_resp *resp, char hex[33])
{
	const char *md5 = hsm_http_resp_header(resp, "content-md5");
	unsigned char raw[16];

	if (!md5)
		return 0;
	if (hsm_base64_decode(md5, raw, sizeof(raw)) != 16)
		return -1;
	hsm_hex(raw, 16, hex);
	return 1;
}

/* ---- blocks ---- */

static void block_id(size_t i, char *out, size_t len)
{
	char raw[32];
	/* Same length for every block of a blob, as the service requires. */
	snprintf(raw, sizeof(raw), "nacre-%010zu", i);
	hsm_base64_encode(raw, strlen(raw), out, len);
}

static int az_part_query(void *up, size_t i, struct cloud_qparam q[2], char *scratch,
			 size_t scratch_len)
{
	(void)up;
	block_id(i, scratch, scratch_len);
	q[0] = (struct cloud_qparam){ "comp", "block" };
	q[1] = (struct cloud_qparam){ "blockid", scratch };
	return 2;
}

/* Put Block List: commits the blocks with the metadata (x-ms-blob-type belongs to Put Blob
 * only). */
static int az_commit(struct cloud *cl, void *up, const char *key, size_t nblocks,
		     const struct hsm_meta *meta, struct hsm_xfer *xfer, char *err,
		     size_t err_len)
{
	static const struct cloud_qparam q[] = { { "comp", "blocklist" } };
	struct strbuf list = STRBUF_INIT;
	struct hsm_http_resp resp;
	int rc;

	(void)up;
	strbuf_str(&list, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
	for (size_t i = 0; i < nblocks; i++) {
		char id[64];
		block_id(i, id, sizeof(id));
		strbuf_printf(&list, "<Latest>%s</Latest>", id);
	}
	strbuf_str(&list, "</BlockList>");
	rc = cloud_send_xml(cl, "PUT", key, q, 1, meta, &list, xfer, &resp, err, err_len);
	hsm_http_resp_fini(&resp);
	strbuf_fini(&list);
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

/* One <Blob> of a listing: its properties and metadata. */
static void blob_meta(const struct hsm_xml *x, int b, struct hsm_meta *m)
{
	int props = hsm_xml_child(x, b, "Properties");
	int md = hsm_xml_child(x, b, "Metadata");
	const char *v;
	int64_t size;

	v = hsm_xml_child_text(x, props, "Content-Length");
	if (v && parse_i64(v, 0, INT64_MAX, &size) == 0)
		m->size = (uint64_t)size;
	v = hsm_xml_child_text(x, props, "Last-Modified");
	if (v)
		parse_http_date(v, &m->mtime);
	v = hsm_xml_child_text(x, props, "Content-MD5");
	unsigned char raw[16];
	if (v && hsm_base64_decode(v, raw, sizeof(raw)) == 16) {
		char hex[33];
		hsm_hex(raw, 16, hex);
		snprintf(m->checksum, sizeof(m->checksum), "md5:%s", hex);
	}
	for (int k = hsm_xml_child(x, md, NULL); k >= 0; k = hsm_xml_next(x, k, NULL))
		hsm_meta_apply(m, hsm_xml_name(x, k), hsm_xml_text(x, k));
}

/* List Blobs, with the metadata: nothing more to ask per blob. */
static int az_list_page(struct cloud *cl, const struct hsm_xml *x, const char *prefix,
			size_t plen, hsm_list_fn fn, void *arg, int *stop, char **next,
			char *err, size_t err_len)
{
	int root = hsm_xml_root(x);
	int blobs = hsm_xml_child(x, root, "Blobs");

	(void)cl;
	(void)err;
	(void)err_len;
	for (int b = hsm_xml_child(x, blobs, "Blob"); b >= 0 && !*stop;
	     b = hsm_xml_next(x, b, "Blob")) {
		const char *name = hsm_xml_child_text(x, b, "Name");
		struct hsm_meta m = { 0 };

		if (!name || strncmp(name, prefix, plen) != 0 || !name[plen])
			continue;
		blob_meta(x, b, &m);
		*stop = fn(arg, name + plen, &m);
	}
	const char *marker = hsm_xml_child_text(x, root, "NextMarker");
	if (marker && *marker && !(*next = strdup(marker)))
		return -ENOMEM;
	return 0;
}

static const struct cloud_service azure_service = {
	.noun = "blob", .meta_prefix = AZ_META, .range_header = "x-ms-range",
	.no_container = "ContainerNotFound",
	.put_hdr = { "x-ms-blob-type", "BlockBlob" }, .put_name = "Put Blob",
	/* A blob with snapshots cannot be deleted alone. */
	.remove_hdr = { "x-ms-delete-snapshots", "include" },
	.max_put = AZ_MAX_PUT_BLOB, .max_block = AZ_MAX_BLOCK, .max_parts = AZ_MAX_BLOCKS,
	.sign = az_sign, .access_hint = az_access_hint, .stored_md5 = az_stored_md5,
	/* no upload to start or abort: uncommitted blocks expire by themselves */
	.part_query = az_part_query, .upload_finish = az_commit,
	.list_query = { { "restype", "container" }, { "comp", "list" }, { "include", "metadata" } },
	.list_size = "maxresults", .list_marker = "marker", .list_page_max = 5000,
	.list_page = az_list_page,
	.state_fini = az_fini,
};

/* ---- open/close ---- */

static int az_open(const char *rest, const struct hsm_backend_opts *opts, void **priv,
		   char *err, size_t err_len)
{
	char head[80], cs_endpoint[512];
	struct cloud *cl;
	struct azure *az;
	size_t n = strcspn(rest, "/");
	int rc;

	if (n == 0 || n >= sizeof(az->account) || rest[n] != '/') {
		snprintf(err, err_len,
			 "azure://%s: expected azure://account/container[/prefix]", rest);
		return -EINVAL;
	}
	if ((rc = cloud_create(&azure_service, sizeof(*az), opts, &cl)) < 0)
		return rc;
	az = cl->state;
	memcpy(az->account, rest, n);
	snprintf(head, sizeof(head), "azure://%s/", az->account);
	if ((rc = cloud_set_container(cl, head, rest + n + 1, "container",
				      " (lowercase letters, digits, '-')", err, err_len)) < 0)
		goto out_close;
	snprintf(cl->name, sizeof(cl->name), "container %s of account %s", cl->container,
		 az->account);
	if ((rc = az_credentials(az, opts->credentials, cs_endpoint, sizeof(cs_endpoint), err,
				 err_len)) < 0)
		goto out_close;
	/* --hsm-endpoint, else the connection string's, else the public one */
	const char *endpoint = opts->endpoint && *opts->endpoint ? opts->endpoint : cs_endpoint;
	if (!*endpoint) {
		snprintf(cl->base, sizeof(cl->base), "https://%s.blob.core.windows.net", az->account);
	} else if (cloud_set_base(cl, endpoint) < 0) {
		snprintf(err, err_len,
			 "azure endpoint '%s'%s is not a URL like "
			 "http://127.0.0.1:10000/devstoreaccount1",
			 endpoint, endpoint == cs_endpoint ? " (the connection string's)" : "");
		rc = -EINVAL;
		goto out_close;
	}
	*priv = cl;
	return 0;
out_close:
	cloud_close(cl);
	return rc;
}

const struct hsm_backend_ops hsm_azure_ops = CLOUD_BACKEND_OPS(az_open);
