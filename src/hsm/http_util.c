/* http_util.c - helpers of the cloud backends: credentials, encodings, object keys, the AMLFS
 * metadata headers, and running tasks on several threads. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/fid.h"
#include "common/secret_file.h"
#include "common/util.h"
#include "hsm/http.h"

/* ---- credentials ---- */

static void trim(char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r'))
		(*n)--;
}

int hsm_cred_get(const char *file, const char *key, char *buf, size_t len, char *err,
		 size_t err_len)
{
	const char *env;

	if (file && *file) {
		int fd = secret_file_open(file, "credentials file", err, err_len);
		FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
		char line[4096];
		int found = 0;

		if (fd < 0)
			return fd;
		if (!f) {
			int e = errno;
			close(fd);
			snprintf(err, err_len, "cannot read credentials file %s: %s", file,
				 strerror(e));
			return -e;
		}
		while (!found && fgets(line, sizeof(line), f)) {
			char *k = line, *v, *eq;
			size_t kn, vn;
			line[strcspn(line, "\n")] = '\0';
			eq = strchr(line, '=');
			if (line[0] == '#' || !eq)
				continue;
			kn = (size_t)(eq - k);
			trim(&k, &kn);
			/* "export KEY=VALUE" lines, as in a sourced shell file, work too. */
			if (kn > 7 && strncmp(k, "export ", 7) == 0) {
				k += 7;
				kn -= 7;
				trim(&k, &kn);
			}
			if (kn != strlen(key) || strncmp(k, key, kn) != 0)
				continue;
			v = eq + 1;
			vn = strlen(v);
			trim(&v, &vn);
			if (vn >= 2 && (v[0] == '"' || v[0] == '\'') && v[vn - 1] == v[0])
				v++, vn -= 2;
			if (vn >= len) {
				fclose(f);
				snprintf(err, err_len, "%s in %s is too long", key, file);
				return -E2BIG;
			}
			memcpy(buf, v, vn);
			buf[vn] = '\0';
			found = 1;
		}
		fclose(f);
		if (found)
			return 1;
	}
	env = getenv(key);
	if (!env || !*env)
		return 0;
	if (str_copy(buf, env, len) >= len) {
		snprintf(err, err_len, "%s in the environment is too long", key);
		return -E2BIG;
	}
	return 1;
}

/* ---- encodings ---- */

size_t hsm_url_encode(const char *s, int keep_slash, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~' ||
			    (keep_slash && c == '/');
		if (plain) {
			if (o + 1 < len)
				out[o] = (char)c;
			o++;
		} else {
			if (o + 3 < len) {
				out[o] = '%';
				out[o + 1] = hex[c >> 4];
				out[o + 2] = hex[c & 15];
			}
			o += 3;
		}
	}
	if (len)
		out[o < len ? o : len - 1] = '\0';
	return o;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int hsm_base64_encode(const void *in, size_t n, char *out, size_t len)
{
	const unsigned char *p = in;
	size_t o = 0, need = (n + 2) / 3 * 4;

	if (need + 1 > len)
		return -E2BIG;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = b64[(v >> 18) & 63];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = '\0';
	return (int)o;
}

int hsm_base64_decode(const char *in, void *out, size_t len)
{
	unsigned char *o = out;
	uint32_t acc = 0;
	int bits = 0, pad = 0;
	size_t n = 0;

	for (; *in; in++) {
		const char *c;
		if (*in == '=') {
			pad++;
			continue;
		}
		if (pad || !(c = strchr(b64, *in)))
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= len)
				return -E2BIG;
			o[n++] = (unsigned char)(acc >> bits);
		}
	}
	if (pad > 2)
		return -EINVAL;
	return (int)n;
}

void hsm_hex(const void *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = in;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[p[i] >> 4];
		out[2 * i + 1] = hex[p[i] & 15];
	}
	out[2 * n] = '\0';
}

int hsm_md5(const void *in, size_t n, unsigned char out[16])
{
	unsigned int len = 0;
	return EVP_Digest(in, n, out, &len, EVP_md5(), NULL) == 1 && len == 16 ? 0 : -EIO;
}

int hsm_sha256(const void *in, size_t n, unsigned char out[32])
{
	unsigned int len = 0;
	return EVP_Digest(in, n, out, &len, EVP_sha256(), NULL) == 1 && len == 32 ? 0 : -EIO;
}

int hsm_hmac_sha256(const void *key, size_t key_len, const void *in, size_t n,
		    unsigned char out[32])
{
	unsigned int len = 0;
	if (key_len > INT32_MAX)
		return -EINVAL;
	return HMAC(EVP_sha256(), key, (int)key_len, in, n, out, &len) && len == 32 ? 0 : -EIO;
}

void hsm_http_date(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	/* RFC 1123 with English names whatever the locale. */
	static const char *const wd[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char *const mo[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	snprintf(buf, len, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tm.tm_wday], tm.tm_mday,
		 mo[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void hsm_amz_date(char *buf, size_t len, char *day, size_t day_len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y%m%dT%H%M%SZ", &tm);
	strftime(day, day_len, "%Y%m%d", &tm);
}

/* ---- object keys ---- */

int hsm_object_key(const char *prefix, const char *path, char *out, size_t len)
{
	const char *p = path;
	size_t n;

	while (*p == '/')
		p++;
	if (!*p)
		return -EINVAL;
	/* No "." or ".." component, no empty one: keys must map back to paths on import. */
	for (const char *c = p; *c;) {
		size_t cl = strcspn(c, "/");
		if (cl == 0 || (cl == 1 && c[0] == '.') || (cl == 2 && c[0] == '.' && c[1] == '.'))
			return -EINVAL;
		c += cl;
		if (*c == '/')
			c++;
	}
	if (prefix && *prefix)
		n = (size_t)snprintf(out, len, "%s/%s", prefix, p);
	else
		n = (size_t)snprintf(out, len, "%s", p);
	return n < len ? 0 : -ENAMETOOLONG;
}

/* ---- metadata ---- */

struct hdr_arg {
	const char *hp;
	struct hsm_hdrs *h;
};

static int add_key(void *arg, const char *key, const char *value)
{
	struct hdr_arg *a = arg;
	char name[64];
	snprintf(name, sizeof(name), "%s%s", a->hp, key);
	return hsm_hdrs_set(a->h, name, value);
}

int hsm_meta_to_headers(const struct hsm_meta *meta, const char *hp, struct hsm_hdrs *h)
{
	char val[96];
	struct hdr_arg ha = {hp, h};
	int rc = hsm_meta_each_key(meta, add_key, &ha);

	if (!rc && meta->has_fid) {
		fid_format(&meta->fid, val, sizeof(val));
		rc = add_key(&ha, "nacre_fid", val);
	}
	if (!rc && S_ISDIR(meta->mode))
		rc = add_key(&ha, "hdi_isfolder", "true");
	return rc;
}

void hsm_meta_from_resp(struct hsm_meta *meta, const struct hsm_http_resp *resp,
			const char *hp)
{
	size_t hl = strlen(hp);
	for (int i = 0; i < resp->nhdr; i++)
		if (strncasecmp(resp->hname[i], hp, hl) == 0)
			hsm_meta_apply(meta, resp->hname[i] + hl, resp->hvalue[i]);
}

/* ---- parallel ranges ---- */

struct pool {
	hsm_task_fn task;
	void *arg;
	size_t n;
	atomic_size_t next;
	atomic_int failed;
	pthread_mutex_t lock; /* protects rc and err */
	int rc;
	char *err;
	size_t err_len;
};

static void *worker(void *arg)
{
	struct pool *p = arg;
	char err[1024];

	while (!atomic_load(&p->failed)) {
		size_t i = atomic_fetch_add(&p->next, 1);
		int rc;
		if (i >= p->n)
			break;
		err[0] = '\0';
		rc = p->task(p->arg, i, err, sizeof(err));
		if (rc < 0) {
			pthread_mutex_lock(&p->lock);
			/* Keep the first real failure, not the cancels it caused elsewhere. */
			if (!p->rc || (p->rc == -ECANCELED && rc != -ECANCELED)) {
				p->rc = rc;
				str_copy(p->err, err, p->err_len);
			}
			pthread_mutex_unlock(&p->lock);
			atomic_store(&p->failed, 1);
		}
	}
	return NULL;
}

int hsm_run_parallel(int threads, size_t n, hsm_task_fn task, void *arg, char *err,
		     size_t err_len)
{
	struct pool p = { .task = task, .arg = arg, .n = n, .err = err, .err_len = err_len };
	pthread_t tid[64];
	int started = 0;

	if (threads < 1)
		threads = 1;
	if (threads > (int)ARRAY_SIZE(tid) + 1)
		threads = (int)ARRAY_SIZE(tid) + 1;
	if ((size_t)threads > n)
		threads = (int)(n ? n : 1);
	atomic_init(&p.next, 0);
	atomic_init(&p.failed, 0);
	pthread_mutex_init(&p.lock, NULL);
	/* The caller's thread works too; fewer helpers than asked is fine if creation fails. */
	for (int i = 0; i < threads - 1; i++) {
		if (pthread_create(&tid[started], NULL, worker, &p) != 0)
			break;
		started++;
	}
	worker(&p);
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&p.lock);
	return p.rc;
}

int hsm_list_page_size(int def, int max)
{
	const char *s = getenv("NACRE_HSM_LIST_PAGE");
	int64_t v;

	if (s && parse_i64(s, 1, max, &v) == 0)
		return (int)v;
	return def;
}
