/* cluster_conf.c - parses and validates a cluster config file (see cluster_conf.h). inih does
 * the INI syntax; we feed it lines ourselves to know each line's number. */
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cluster_conf.h"
#include "common/util.h"

#define DEFAULT_SHELL "ssh -o BatchMode=yes {host}"
#define DEFAULT_RUN_DIR "/var/lib/nacre/run"

struct parse_state {
	struct cc_conf *c;
	FILE *f;
	int line;        /* number of the line inih is looking at */
	int error;       /* first error recorded */
	char *err;
	size_t err_len;
	char section[64];
	int section_line;
	int header_line; /* line of the last [section] header seen by read_line */
	struct cc_oss *cur_oss;
	struct cc_client *cur_client;
};

static void fail(struct parse_state *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct parse_state *ps, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->error)
		return;
	ps->error = 1;
	n = snprintf(ps->err, ps->err_len, "%s:%d: ", ps->c->path, ps->line);
	if (n < 0 || (size_t)n >= ps->err_len)
		return;
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->err_len - (size_t)n, fmt, ap);
	va_end(ap);
}

/* inih's reader: one line per call, so the call count is the line number. Lines longer
 * than inih's buffer would be split silently, so they are an error here. */
static char *read_line(char *str, int num, void *stream)
{
	struct parse_state *ps = stream;
	char *r = fgets(str, num, ps->f);

	if (!r)
		return NULL;
	ps->line++;
	size_t len = strlen(str);
	const char *t = str + strspn(str, " \t");

	/* A header starts a new section even when its name repeats an earlier one, so
	 * duplicates are seen by enter_section. */
	if (*t == '[') {
		ps->header_line = ps->line;
		ps->section_line = 0;
	}

	if (len == (size_t)num - 1 && str[len - 1] != '\n' && !feof(ps->f)) {
		fail(ps, "line longer than %d characters", num - 2);
		int ch;

		while ((ch = fgetc(ps->f)) != EOF && ch != '\n')
			;
		str[0] = '\0';
	}
	return r;
}

int cc_split_addr(const char *addr, char *host, size_t host_len, int *port)
{
	const char *colon;
	const char *h = addr;
	size_t hl;
	int64_t p;

	if (addr[0] == '[') {
		const char *rb = strchr(addr, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = addr + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - addr);
	}
	if (hl == 0 || hl >= host_len || parse_i64(colon + 1, 1, 65535, &p) < 0)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") != hl)
		return -EINVAL;
	*port = (int)p;
	return 0;
}

/* An address others connect to: host:port, and not a wildcard (it is what gets
 * registered with the MDS and given to clients). */
static int take_addr(struct parse_state *ps, const char *key, const char *v, char *out,
		     size_t len, int wildcard_ok)
{
	char host[CC_HOST_MAX + 1];
	int port;

	if (strlen(v) >= len || cc_split_addr(v, host, sizeof(host), &port) < 0) {
		fail(ps, "%s = %s: not an address: write HOST:PORT, e.g. 10.0.0.1:9400", key, v);
		return -1;
	}
	if (!wildcard_ok && (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)) {
		fail(ps, "%s = %s: give the address clients reach this server at, not a wildcard",
		     key, v);
		return -1;
	}
	str_copy(out, v, len);
	return 0;
}

static int take_str(struct parse_state *ps, const char *key, const char *v, char *out,
		    size_t len)
{
	if (v[0] == '\0') {
		fail(ps, "%s is empty", key);
		return -1;
	}
	if (str_copy(out, v, len) >= len) {
		fail(ps, "%s is too long (at most %zu characters)", key, len - 1);
		return -1;
	}
	return 0;
}

static int take_path(struct parse_state *ps, const char *key, const char *v, char *out,
		     size_t len)
{
	if (take_str(ps, key, v, out, len) < 0)
		return -1;
	if (v[0] != '/') {
		fail(ps, "%s = %s: give an absolute path (it is used on other hosts)", key, v);
		return -1;
	}
	return 0;
}

static int take_host(struct parse_state *ps, const char *v, char *out, size_t len)
{
	if (take_str(ps, "host", v, out, len) < 0)
		return -1;
	/* The host is put in a command line: keep it to name characters. */
	if (strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:@[]") !=
	    strlen(v)) {
		fail(ps, "host = %s: use only letters, digits and . - _ : @", v);
		return -1;
	}
	return 0;
}

/* osts = IDX:DIR[,IDX:DIR...]; indexes are unique over the whole file. */
static int take_osts(struct parse_state *ps, struct cc_oss *o, const char *v)
{
	const char *p = v;

	while (*p) {
		size_t seg = strcspn(p, ",");
		char item[PATH_MAX + 16], *colon;
		int64_t idx;

		while (seg > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			seg--;
		}
		if (seg == 0 || seg >= sizeof(item)) {
			fail(ps, "osts = %s: write IDX:DIR[,IDX:DIR...]", v);
			return -1;
		}
		memcpy(item, p, seg);
		item[seg] = '\0';
		while (seg > 0 && (item[seg - 1] == ' ' || item[seg - 1] == '\t'))
			item[--seg] = '\0';
		colon = strchr(item, ':');
		if (!colon) {
			fail(ps, "osts: '%s' is not IDX:DIR", item);
			return -1;
		}
		*colon = '\0';
		if (parse_i64(item, 0, 0xffff, &idx) < 0) {
			fail(ps, "osts: OST index '%s' is not a number from 0 to 65535", item);
			return -1;
		}
		if (colon[1] != '/') {
			fail(ps, "osts: directory '%s' of OST %d must be an absolute path", colon + 1,
			     (int)idx);
			return -1;
		}
		const struct cc_oss *dup = cc_oss_of_ost(ps->c, (int)idx);

		if (dup) {
			fail(ps, "duplicate OST index %d (already in [oss %s])", (int)idx,
			     dup->name);
			return -1;
		}
		if (o->nosts >= CC_MAX_OSTS_PER_OSS) {
			fail(ps, "too many OSTs on one OSS (at most %d)", CC_MAX_OSTS_PER_OSS);
			return -1;
		}
		/* an OSS's OSTs are the tail of c->osts: sections do not interleave */
		struct cc_ost *ost = &ps->c->osts[ps->c->nosts++];

		ost->index = (int)idx;
		str_copy(ost->dir, colon + 1, sizeof(ost->dir));
		o->nosts++;
		p += strcspn(p, ",");
		if (*p == ',')
			p++;
	}
	return 0;
}

static int unknown_key(struct parse_state *ps, const char *name, const char *known)
{
	fail(ps, "unknown key '%s' in [%s] (known: %s)", name, ps->section, known);
	return 0;
}

static int on_cluster(struct parse_state *ps, const char *name, const char *v)
{
	struct cc_conf *c = ps->c;
	int64_t n;
	char err[128];

	if (strcmp(name, "fsname") == 0) {
		if (!fsname_valid(v)) {
			fail(ps, "fsname = %s: use 1 to 8 of A-Z a-z 0-9 _ -", v);
			return 0;
		}
		str_copy(c->fsname, v, sizeof(c->fsname));
	} else if (strcmp(name, "key_file") == 0) {
		take_path(ps, name, v, c->key_file, sizeof(c->key_file));
	} else if (strcmp(name, "stripe_count") == 0) {
		if (parse_i64(v, -1, 2000, &n) < 0 || n == 0)
			fail(ps, "stripe_count = %s: use a number from 1 to 2000, or -1 (every OST)", v);
		else
			c->stripe_count = (int)n;
	} else if (strcmp(name, "stripe_size") == 0) {
		if (cli_parse_stripe_size(v, &c->stripe_size, err, sizeof(err)) < 0)
			fail(ps, "stripe_size = %s: %s", v, err);
	} else if (strcmp(name, "remote_shell") == 0) {
		if (take_str(ps, name, v, c->remote_shell, sizeof(c->remote_shell)) == 0 &&
		    !strstr(v, "{host}"))
			fail(ps, "remote_shell = %s: it must contain {host}, e.g. ssh {host}", v);
	} else if (strcmp(name, "bin_dir") == 0) {
		take_path(ps, name, v, c->bin_dir, sizeof(c->bin_dir));
	} else if (strcmp(name, "run_dir") == 0) {
		take_path(ps, name, v, c->run_dir, sizeof(c->run_dir));
	} else if (strcmp(name, "sec_min") == 0) {
		if (strcmp(v, "null") && strcmp(v, "integrity") && strcmp(v, "privacy"))
			fail(ps, "sec_min = %s: use null, integrity or privacy", v);
		else
			str_copy(c->sec_min, v, sizeof(c->sec_min));
	} else if (strcmp(name, "quota") == 0) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			fail(ps, "quota = %s: use on (count usage, enforce limits) or off", v);
		else
			c->quota_off = strcmp(v, "off") == 0;
	} else {
		return unknown_key(ps, name, "fsname, key_file, stripe_count, stripe_size, "
					     "remote_shell, bin_dir, run_dir, sec_min, quota");
	}
	return 0;
}

/* failover = HOST, failover_listen = HOST:PORT. Returns 1 if name is neither. */
static int on_failover(struct parse_state *ps, struct cc_failover *f, const char *name,
		       const char *v)
{
	if (strcmp(name, "failover") == 0) {
		take_host(ps, v, f->host, sizeof(f->host));
	} else if (strcmp(name, "failover_listen") == 0) {
		if (take_addr(ps, name, v, f->listen, sizeof(f->listen), 0) == 0)
			f->listen_line = ps->line;
	} else {
		return 1;
	}
	return 0;
}

static int on_mds(struct parse_state *ps, const char *name, const char *v)
{
	struct cc_conf *c = ps->c;

	if (on_failover(ps, &c->mds_failover, name, v) == 0)
		return 0;
	if (strcmp(name, "host") == 0)
		take_host(ps, v, c->mds_host, sizeof(c->mds_host));
	else if (strcmp(name, "listen") == 0)
		take_addr(ps, name, v, c->mds_listen, sizeof(c->mds_listen), 0);
	else if (strcmp(name, "data") == 0)
		take_path(ps, name, v, c->mds_data, sizeof(c->mds_data));
	else if (strcmp(name, "metrics_addr") == 0)
		take_addr(ps, name, v, c->mds_metrics_addr, sizeof(c->mds_metrics_addr), 1);
	else
		return unknown_key(ps, name, "host, listen, data, metrics_addr, failover, "
					     "failover_listen");
	return 0;
}

static int on_oss(struct parse_state *ps, const char *name, const char *v)
{
	struct cc_oss *o = ps->cur_oss;

	if (on_failover(ps, &o->failover, name, v) == 0)
		return 0;
	if (strcmp(name, "host") == 0)
		take_host(ps, v, o->host, sizeof(o->host));
	else if (strcmp(name, "listen") == 0)
		take_addr(ps, name, v, o->listen, sizeof(o->listen), 0);
	else if (strcmp(name, "osts") == 0)
		take_osts(ps, o, v);
	else if (strcmp(name, "metrics_addr") == 0)
		take_addr(ps, name, v, o->metrics_addr, sizeof(o->metrics_addr), 1);
	else
		return unknown_key(ps, name, "host, listen, osts, metrics_addr, failover, "
					     "failover_listen");
	return 0;
}

static int on_client(struct parse_state *ps, const char *name, const char *v)
{
	struct cc_client *cl = ps->cur_client;

	if (strcmp(name, "host") == 0)
		take_host(ps, v, cl->host, sizeof(cl->host));
	else if (strcmp(name, "mountpoint") == 0)
		take_path(ps, name, v, cl->mountpoint, sizeof(cl->mountpoint));
	else if (strcmp(name, "options") == 0) {
		if (strpbrk(v, " \t'\"\\"))
			fail(ps, "options = %s: no spaces or quotes in mount options", v);
		else
			take_str(ps, name, v, cl->options, sizeof(cl->options));
	} else if (strcmp(name, "metrics_addr") == 0)
		take_addr(ps, name, v, cl->metrics_addr, sizeof(cl->metrics_addr), 1);
	else if (strcmp(name, "admin") == 0) {
		if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
			cl->admin = 1;
		else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
			cl->admin = 0;
		else
			fail(ps, "admin = %s: give yes (root on this client is root on the file "
				 "system: the local-admin nodemap rule) or no", v);
	} else
		return unknown_key(ps, name, "host, mountpoint, options, metrics_addr, admin");
	return 0;
}

/* Archive URLs name a backend by scheme; the copytool checks the rest. */
static const char *const archive_schemes[] = {"posix://", "file://", "s3://", "azure://",
					       "az://", "http://", "https://"};

/* The copytool's --backend for an archive URL: posix:// and file:// are posix:PATH, az:// is
 * azure://. "" for a scheme the copytool has no backend for (http(s)://). */
static void copytool_backend(const char *url, char *out, size_t len)
{
	int n = -1;

	if (strncmp(url, "posix://", 8) == 0)
		n = snprintf(out, len, "posix:%s", url + 8);
	else if (strncmp(url, "file://", 7) == 0)
		n = snprintf(out, len, "posix:%s", url + 7);
	else if (strncmp(url, "az://", 5) == 0)
		n = snprintf(out, len, "azure://%s", url + 5);
	else if (strncmp(url, "azure://", 8) == 0 || strncmp(url, "s3://", 5) == 0)
		n = snprintf(out, len, "%s", url);
	if (n < 0 || (size_t)n >= len)
		out[0] = '\0';
}

static int on_hsm(struct parse_state *ps, const char *name, const char *v)
{
	struct cc_conf *c = ps->c;

	if (strcmp(name, "archive") == 0) {
		const char *colon = strchr(v, ':');
		char idtxt[16];
		int64_t id;
		int known = 0;

		if (!colon || (size_t)(colon - v) >= sizeof(idtxt)) {
			fail(ps, "archive = %s: write ID:URL, e.g. 1:posix:///archive", v);
			return 0;
		}
		memcpy(idtxt, v, (size_t)(colon - v));
		idtxt[colon - v] = '\0';
		if (parse_i64(idtxt, 1, 32, &id) < 0) {
			fail(ps, "archive = %s: archive ID '%s' must be from 1 to 32", v, idtxt);
			return 0;
		}
		for (size_t i = 0; i < ARRAY_SIZE(archive_schemes); i++)
			if (strncmp(colon + 1, archive_schemes[i], strlen(archive_schemes[i])) == 0)
				known = 1;
		if (!known) {
			fail(ps, "archive %d: unknown backend URL '%s' (use posix://, s3://, azure:// "
				 "or http(s)://)", (int)id, colon + 1);
			return 0;
		}
		for (int i = 0; i < c->narchives; i++)
			if (c->archives[i].id == (int)id) {
				fail(ps, "duplicate archive ID %d", (int)id);
				return 0;
			}
		if (c->narchives >= CC_MAX_ARCHIVES) {
			fail(ps, "too many archives (at most %d)", CC_MAX_ARCHIVES);
			return 0;
		}
		c->archives[c->narchives].id = (int)id;
		if (str_copy(c->archives[c->narchives].url, colon + 1,
			     sizeof(c->archives[0].url)) >= sizeof(c->archives[0].url))
			fail(ps, "archive URL too long");
		copytool_backend(colon + 1, c->archives[c->narchives].backend,
				 sizeof(c->archives[0].backend));
		c->narchives++;
	} else if (strcmp(name, "copytools") == 0) {
		const char *p = v;

		while (*p) {
			size_t seg = strcspn(p, ", \t");
			char host[CC_HOST_MAX + 1];

			if (seg > 0) {
				if (seg >= sizeof(host) || c->ncopytools >= CC_MAX_COPYTOOLS) {
					fail(ps, "copytools: too many hosts or a host name too long");
					return 0;
				}
				memcpy(host, p, seg);
				host[seg] = '\0';
				if (take_host(ps, host, c->copytools[c->ncopytools],
					      sizeof(c->copytools[0])) < 0)
					return 0;
				c->ncopytools++;
			}
			p += seg;
			p += strspn(p, ", \t");
		}
	} else if (strcmp(name, "endpoint") == 0) {
		take_str(ps, name, v, c->hsm_endpoint, sizeof(c->hsm_endpoint));
	} else if (strcmp(name, "credentials") == 0) {
		take_path(ps, name, v, c->hsm_credentials, sizeof(c->hsm_credentials));
	} else if (strcmp(name, "metrics_addr") == 0) {
		take_addr(ps, name, v, c->copytool_metrics_addr, sizeof(c->copytool_metrics_addr),
			  1);
	} else {
		return unknown_key(ps, name, "archive, copytools, endpoint, credentials, "
					     "metrics_addr");
	}
	return 0;
}

const char *const cc_az_names[CC_AZ_N] = {"dce",	  "dcr",	 "stream",   "tenant",
					   "client-id", "secret-file", "authority"};

int cc_az_check(const char *const *v, int workspace_set, char *err, size_t err_len)
{
	int any = 0;
	for (int i = 0; i < CC_AZ_N; i++)
		any |= v[i] && v[i][0];
	if (!any)
		return 0;
	if (workspace_set) {
		snprintf(err, err_len, "give either the Logs Ingestion API's options (azure dce...) "
			 "or a Log Analytics workspace (the retired HTTP Data Collector API), not "
			 "both");
		return -1;
	}
	static const int needed[] = {CC_AZ_DCE, CC_AZ_DCR, CC_AZ_TENANT, CC_AZ_CLIENT_ID,
				     CC_AZ_SECRET_FILE};
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (!v[needed[i]] || !v[needed[i]][0]) {
			snprintf(err, err_len, "the Logs Ingestion API needs azure %s too (dce, dcr, "
				 "tenant, client-id and secret-file go together)",
				 cc_az_names[needed[i]]);
			return -1;
		}
	return 0;
}

/* [metrics] azure_NAME of the Logs Ingestion API: 1 if name is one (taken), else 0. */
static int on_metrics_az(struct parse_state *ps, const char *name, const char *v)
{
	for (int i = 0; i < CC_AZ_N; i++) {
		char key[32];
		snprintf(key, sizeof(key), "azure_%s", cc_az_names[i]);
		for (char *c = key; *c; c++)
			if (*c == '-')
				*c = '_';
		if (strcmp(name, key) != 0)
			continue;
		char *out = ps->c->metrics_azure_ingest[i];
		size_t len = sizeof(ps->c->metrics_azure_ingest[i]);
		if (i == CC_AZ_SECRET_FILE) {
			take_path(ps, name, v, out, len);
		} else if (take_str(ps, name, v, out, len) == 0) {
			if (strchr(v, ','))
				fail(ps, "%s = %s: a value without ','", name, v);
			else if ((i == CC_AZ_DCE || i == CC_AZ_AUTHORITY) &&
				 strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
				fail(ps, "%s = %s: give an http:// or https:// URL", name, v);
		}
		return 1;
	}
	return 0;
}

static int on_metrics(struct parse_state *ps, const char *name, const char *v)
{
	int64_t n;

	if (on_metrics_az(ps, name, v))
		return 0;

	if (strcmp(name, "log_dir") == 0) {
		take_path(ps, name, v, ps->c->metrics_log_dir, sizeof(ps->c->metrics_log_dir));
	} else if (strcmp(name, "interval") == 0) {
		if (parse_i64(v, 1, 86400, &n) < 0)
			fail(ps, "interval = %s: give seconds from 1 to 86400", v);
		else
			ps->c->metrics_interval = (int)n;
	} else if (strcmp(name, "azure_workspace") == 0) {
		if (take_str(ps, name, v, ps->c->metrics_azure, sizeof(ps->c->metrics_azure)) == 0 &&
		    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") !=
			    strlen(v))
			fail(ps, "azure_workspace = %s: give the Log Analytics workspace ID (letters, "
				 "digits and '-')", v);
	} else if (strcmp(name, "azure_key_file") == 0) {
		take_path(ps, name, v, ps->c->metrics_azure_key_file,
			  sizeof(ps->c->metrics_azure_key_file));
	} else if (strcmp(name, "azure_log_type") == 0) {
		if (take_str(ps, name, v, ps->c->metrics_azure_log_type,
			     sizeof(ps->c->metrics_azure_log_type)) == 0 &&
		    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
			    strlen(v))
			fail(ps, "azure_log_type = %s: use letters, digits and '_'", v);
	} else if (strcmp(name, "azure_url") == 0) {
		if (take_str(ps, name, v, ps->c->metrics_azure_url,
			     sizeof(ps->c->metrics_azure_url)) == 0 &&
		    ((strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) || strchr(v, ',')))
			fail(ps, "azure_url = %s: give an http:// or https:// URL without ','", v);
	} else {
		return unknown_key(ps, name, "log_dir, interval, azure_dce, azure_dcr, "
					     "azure_stream, azure_tenant, azure_client_id, "
					     "azure_secret_file, azure_authority, azure_workspace, "
					     "azure_key_file, azure_log_type, azure_url");
	}
	return 0;
}

/* A new [section] starts: check its name and make room for it. */
static void enter_section(struct parse_state *ps, const char *section)
{
	struct cc_conf *c = ps->c;
	const char *sp = strchr(section, ' ');
	char kind[16];
	const char *name = sp ? sp + 1 : "";
	size_t kl = sp ? (size_t)(sp - section) : strlen(section);

	str_copy(ps->section, section, sizeof(ps->section));
	ps->section_line = ps->header_line ? ps->header_line : ps->line;
	ps->line = ps->section_line; /* errors here are about the header */
	ps->cur_oss = NULL;
	ps->cur_client = NULL;
	if (kl >= sizeof(kind)) {
		fail(ps, "unknown section [%s] (known: cluster, mds, oss NAME, client NAME, hsm, "
			 "metrics)", section);
		return;
	}
	memcpy(kind, section, kl);
	kind[kl] = '\0';
	while (*name == ' ')
		name++;
	int named = strcmp(kind, "oss") == 0 || strcmp(kind, "client") == 0;

	if (named) {
		if (!*name || strlen(name) > CC_NAME_MAX ||
		    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
			    strlen(name)) {
			fail(ps, "[%s] needs a name of 1 to %d letters, digits, _ or -, e.g. [%s "
				 "%s1]", section, CC_NAME_MAX, kind, kind);
			return;
		}
	} else if (*name) {
		fail(ps, "[%s] takes no name: write [%s]", section, kind);
		return;
	}
	if (strcmp(kind, "cluster") == 0) {
		c->cluster_line = ps->line;
	} else if (strcmp(kind, "mds") == 0) {
		if (c->mds_line) {
			fail(ps, "a second [mds] section (the first is at line %d)", c->mds_line);
			return;
		}
		c->mds_line = ps->line;
	} else if (strcmp(kind, "oss") == 0) {
		for (int i = 0; i < c->noss; i++)
			if (strcmp(c->oss[i].name, name) == 0) {
				fail(ps, "a second [oss %s] (the first is at line %d)", name,
				     c->oss[i].line);
				return;
			}
		if (c->noss >= CC_MAX_OSS) {
			fail(ps, "too many [oss] sections (at most %d)", CC_MAX_OSS);
			return;
		}
		ps->cur_oss = &c->oss[c->noss++];
		str_copy(ps->cur_oss->name, name, sizeof(ps->cur_oss->name));
		ps->cur_oss->ost0 = c->nosts;
		ps->cur_oss->line = ps->line;
	} else if (strcmp(kind, "client") == 0) {
		for (int i = 0; i < c->nclients; i++)
			if (strcmp(c->clients[i].name, name) == 0) {
				fail(ps, "a second [client %s] (the first is at line %d)", name,
				     c->clients[i].line);
				return;
			}
		if (c->nclients >= CC_MAX_CLIENTS) {
			fail(ps, "too many [client] sections (at most %d)", CC_MAX_CLIENTS);
			return;
		}
		ps->cur_client = &c->clients[c->nclients++];
		str_copy(ps->cur_client->name, name, sizeof(ps->cur_client->name));
		ps->cur_client->line = ps->line;
	} else if (strcmp(kind, "hsm") != 0 && strcmp(kind, "metrics") != 0) {
		fail(ps, "unknown section [%s] (known: cluster, mds, oss NAME, client NAME, hsm, "
			 "metrics)", section);
	}
}

static int on_entry(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *ps = user;

	if (ps->error)
		return 1;
	if (strcmp(section, ps->section) != 0 || ps->section_line == 0) {
		int saved = ps->line;

		enter_section(ps, section);
		ps->line = saved;
	}
	if (ps->error)
		return 1;
	if (section[0] == '\0') {
		fail(ps, "'%s' is outside any section: put it under [cluster] or another section",
		     name);
		return 1;
	}
	if (strcmp(section, "cluster") == 0)
		return on_cluster(ps, name, value), 1;
	if (strcmp(section, "mds") == 0)
		return on_mds(ps, name, value), 1;
	if (strcmp(section, "hsm") == 0)
		return on_hsm(ps, name, value), 1;
	if (strcmp(section, "metrics") == 0)
		return on_metrics(ps, name, value), 1;
	if (ps->cur_oss)
		return on_oss(ps, name, value), 1;
	if (ps->cur_client)
		return on_client(ps, name, value), 1;
	return 1;
}

/* "FILE:LINE: [section] has no KEY" */
static int missing(struct parse_state *ps, int line, const char *section, const char *key,
		   const char *example)
{
	ps->line = line;
	fail(ps, "[%s] has no '%s' (required), e.g. %s = %s", section, key, key, example);
	return -1;
}

/* A failover partner's address: failover_listen, else its host with the primary's port. */
static int check_failover(struct parse_state *ps, int line, const char *section,
			  struct cc_failover *f, const char *listen)
{
	char host[CC_HOST_MAX + 1];
	int port;

	if (!f->host[0]) {
		if (!f->listen[0])
			return 0;
		ps->line = f->listen_line;
		fail(ps, "[%s] has failover_listen but no failover = HOST (the standby's host)",
		     section);
		return -1;
	}
	if (!f->listen[0]) {
		cc_split_addr(listen, host, sizeof(host), &port);
		if (snprintf(f->listen, sizeof(f->listen), "%s:%d", f->host, port) >=
		    (int)sizeof(f->listen)) {
			ps->line = line;
			fail(ps, "[%s]: failover host %s is too long for an address", section,
			     f->host);
			return -1;
		}
	}
	if (strcmp(f->listen, listen) == 0) {
		ps->line = f->listen_line ? f->listen_line : line;
		fail(ps, "[%s]: the standby would listen on %s like the primary: set "
			 "failover_listen = HOST:PORT on the failover host", section, listen);
		return -1;
	}
	return 0;
}

static int check_required(struct parse_state *ps)
{
	struct cc_conf *c = ps->c;
	int last = ps->line;

	if (!c->cluster_line) {
		ps->line = 1;
		fail(ps, "no [cluster] section (it needs at least fsname = NAME)");
		return -1;
	}
	if (!c->fsname[0])
		return missing(ps, c->cluster_line, "cluster", "fsname", "demo");
	if (!c->key_file[0])
		return missing(ps, c->cluster_line, "cluster", "key_file", "/etc/nacre/demo.key");
	if (!c->mds_line) {
		ps->line = last;
		fail(ps, "no [mds] section: every cluster has one MDS");
		return -1;
	}
	if (!c->mds_host[0])
		return missing(ps, c->mds_line, "mds", "host", "mds1");
	if (!c->mds_listen[0])
		return missing(ps, c->mds_line, "mds", "listen", "10.0.0.1:9400");
	if (!c->mds_data[0])
		return missing(ps, c->mds_line, "mds", "data", "/srv/nacre/mdt");
	if (check_failover(ps, c->mds_line, "mds", &c->mds_failover, c->mds_listen) < 0)
		return -1;
	if (c->noss == 0) {
		ps->line = last;
		fail(ps, "no [oss NAME] section: a cluster needs at least one OSS with an OST");
		return -1;
	}
	for (int i = 0; i < c->noss; i++) {
		struct cc_oss *o = &c->oss[i];
		char sec[64];

		snprintf(sec, sizeof(sec), "oss %s", o->name);
		if (!o->host[0])
			return missing(ps, o->line, sec, "host", "oss1");
		if (!o->listen[0])
			return missing(ps, o->line, sec, "listen", "10.0.0.2:9410");
		if (o->nosts == 0)
			return missing(ps, o->line, sec, "osts", "0:/srv/nacre/ost0");
		if (check_failover(ps, o->line, sec, &o->failover, o->listen) < 0)
			return -1;
		for (int j = 0; j < i; j++)
			if (strcmp(c->oss[j].listen, o->listen) == 0) {
				ps->line = o->line;
				fail(ps, "[%s] listens on %s like [oss %s]", sec, o->listen,
				     c->oss[j].name);
				return -1;
			}
	}
	for (int i = 0; i < c->nclients; i++) {
		struct cc_client *cl = &c->clients[i];
		char sec[64];

		snprintf(sec, sizeof(sec), "client %s", cl->name);
		if (!cl->host[0])
			return missing(ps, cl->line, sec, "host", "client1");
		if (!cl->mountpoint[0])
			return missing(ps, cl->line, sec, "mountpoint", "/mnt/nacre");
		if (cl->admin && strstr(cl->options, "client_name=")) {
			ps->line = cl->line;
			fail(ps, "[%s] admin = yes names the client nacre-admin: drop client_name "
				 "from its options", sec);
			return -1;
		}
	}
	if (!!c->metrics_azure[0] != !!c->metrics_azure_key_file[0]) {
		fail(ps, "[metrics] azure_workspace and azure_key_file go together (the key file, "
			 "mode 0600, on every host)");
		return -1;
	}
	if (!c->metrics_azure[0] && (c->metrics_azure_log_type[0] || c->metrics_azure_url[0])) {
		fail(ps, "[metrics] azure_log_type and azure_url need azure_workspace");
		return -1;
	}
	const char *az[CC_AZ_N];
	char why[256];
	for (int i = 0; i < CC_AZ_N; i++)
		az[i] = c->metrics_azure_ingest[i];
	if (cc_az_check(az, c->metrics_azure[0] != 0, why, sizeof(why)) < 0) {
		fail(ps, "[metrics] %s", why);
		return -1;
	}
	if (!c->remote_shell[0])
		str_copy(c->remote_shell, DEFAULT_SHELL, sizeof(c->remote_shell));
	if (!c->run_dir[0])
		str_copy(c->run_dir, DEFAULT_RUN_DIR, sizeof(c->run_dir));
	return 0;
}

int cc_parse(const char *path, struct cc_conf *c, char *err, size_t err_len)
{
	struct parse_state ps;
	int rc;

	memset(c, 0, sizeof(*c));
	memset(&ps, 0, sizeof(ps));
	str_copy(c->path, path, sizeof(c->path));
	ps.c = c;
	ps.err = err;
	ps.err_len = err_len;
	ps.f = fopen(path, "re");
	if (!ps.f) {
		snprintf(err, err_len, "%s: cannot open the cluster config: %s", path,
			 strerror(errno));
		return -1;
	}
	rc = ini_parse_stream(read_line, &ps, on_entry, &ps);
	fclose(ps.f);
	if (ps.error)
		return -1;
	if (rc != 0) {
		/* inih's own syntax errors (a line that is neither [section] nor key = value) */
		ps.line = rc > 0 ? rc : ps.line;
		fail(&ps, "syntax error: expected [section] or key = value (comments start with "
			  "# or ;)");
		return -1;
	}
	return check_required(&ps);
}

void cc_mds_addrs(const struct cc_conf *c, char *out, size_t len)
{
	if (c->mds_failover.host[0])
		snprintf(out, len, "%s,%s", c->mds_listen, c->mds_failover.listen);
	else
		snprintf(out, len, "%s", c->mds_listen);
}

const struct cc_oss *cc_oss_of_ost(const struct cc_conf *c, int ost)
{
	for (int i = 0; i < c->noss; i++)
		for (int k = 0; k < c->oss[i].nosts; k++)
			if (c->osts[c->oss[i].ost0 + k].index == ost)
				return &c->oss[i];
	return NULL;
}
