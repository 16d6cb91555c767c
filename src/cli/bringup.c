/* bringup.c - the bring-up engine: what each step of up, down and status is (see bringup.h). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bringup.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/util.h"

#define NDAEMONS_MAX (2 + 2 * CC_OSS_CAP + CC_MAX_COPYTOOLS * CC_MAX_ARCHIVES)

struct daemons {
	struct bu_daemon *d;
	int n;
	int failed; /* out of memory while building them */
};

/* v[(*n)++] = s (a heap string, or NULL when it could not be made), if there is room. */
static void push(struct daemons *ds, char **v, int *n, int max, char *s)
{
	if (!s || *n >= max) {
		free(s);
		ds->failed = 1;
		return;
	}
	v[(*n)++] = s;
}

static void arg(struct daemons *ds, struct bu_daemon *d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void arg(struct daemons *ds, struct bu_daemon *d, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	push(ds, d->argv, &d->argc, BU_ARGS_MAX, s);
}

/* An option and its value. */
static void opt(struct daemons *ds, struct bu_daemon *d, const char *name, const char *value)
{
	arg(ds, d, "%s", name);
	arg(ds, d, "%s", value);
}

/* --format is added when dir/file is missing. */
static void format_unless(struct daemons *ds, struct bu_daemon *d, const char *dir,
			  const char *file)
{
	char *s = NULL;

	if (asprintf(&s, "%s/%s", dir, file) < 0)
		s = NULL;
	push(ds, d->format_unless, &d->nformat, CC_OSTS_CAP, s);
}

static struct bu_daemon *add(struct daemons *ds, enum bu_kind kind, int index, const char *host,
			     const char *prog, const char *ready)
{
	struct bu_daemon *d = &ds->d[ds->n++];

	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->index = index;
	d->host = host;
	d->prog = prog;
	d->ready = ready;
	return d;
}

/* The metrics options of a daemon, a copytool or (-o, as NAME=VALUE) a mount: its
 * Prometheus address, its JSON log LOG_DIR/FSNAME-ROLE.jsonl, the Log Analytics sink. */
static void metrics_args(struct daemons *ds, struct bu_daemon *d, const struct cc_conf *c,
			 const char *addr)
{
	if (addr[0]) {
		opt(ds, d, "--metrics-addr", addr);
	}
	if (c->metrics_log_dir[0]) {
		arg(ds, d, "--metrics-log");
		arg(ds, d, "%s/%s-%s.jsonl", c->metrics_log_dir, c->fsname, d->role);
	}
	if (c->metrics_interval &&
	    (c->metrics_log_dir[0] || c->metrics_azure[0] || c->metrics_azure_ingest[CC_AZ_DCE][0])) {
		arg(ds, d, "--metrics-interval");
		arg(ds, d, "%d", c->metrics_interval);
	}
	for (int i = 0; i < CC_AZ_N; i++)
		if (c->metrics_azure_ingest[i][0]) {
			arg(ds, d, "--metrics-azure-%s", cc_az_names[i]);
			arg(ds, d, "%s", c->metrics_azure_ingest[i]);
		}
	if (c->metrics_azure[0]) {
		opt(ds, d, "--metrics-azure", c->metrics_azure);
		opt(ds, d, "--metrics-azure-key-file", c->metrics_azure_key_file);
		if (c->metrics_azure_log_type[0])
			opt(ds, d, "--metrics-azure-log-type", c->metrics_azure_log_type);
		if (c->metrics_azure_url[0])
			opt(ds, d, "--metrics-azure-url", c->metrics_azure_url);
	}
}

void bu_addr_plus(const char *addr, int k, char *out, size_t len)
{
	const char *colon = strrchr(addr, ':');
	int64_t port;

	out[0] = '\0';
	if (!addr[0] || !colon || parse_i64(colon + 1, 1, 65535, &port) < 0 || port + k > 65535)
		return;
	snprintf(out, len, "%.*s:%d", (int)(colon - addr), addr, (int)port + k);
}

static void add_mds(struct daemons *ds, const struct cc_conf *c, int standby)
{
	const struct cc_failover *f = &c->mds_failover;
	struct bu_daemon *d = add(ds, BU_MDS, 0, standby ? f->host : c->mds_host, "nacre-mds",
				  standby ? "nacre-mds: standby" : "nacre-mds: serving");

	d->standby = standby;
	snprintf(d->role, sizeof(d->role), standby ? "mds-standby" : "mds");
	opt(ds, d, "--fsname", c->fsname);
	opt(ds, d, "--data", c->mds_data);
	opt(ds, d, "--listen", standby ? f->listen : c->mds_listen);
	opt(ds, d, "--key-file", c->key_file);
	if (c->sec_min[0])
		opt(ds, d, "--sec-min", c->sec_min);
	if (c->quota_off)
		opt(ds, d, "--quota", "off");
	if (standby) {
		arg(ds, d, "--standby"); /* waits for the primary's lock on the MDT */
		return;
	}
	metrics_args(ds, d, c, c->mds_metrics_addr);
	/* Only a directory without an MDT is formatted; the MDS checks the fsname of one. */
	format_unless(ds, d, c->mds_data, "data.mdb");
}

static void add_oss(struct daemons *ds, const struct cc_conf *c, int j, int standby)
{
	const struct cc_oss *o = &c->oss[j];
	struct bu_daemon *d = add(ds, BU_OSS, j, standby ? o->failover.host : o->host, "nacre-oss",
				  standby ? "nacre-oss: standby" : "nacre-oss: serving");
	char mds[2 * CC_ADDR_MAX];

	d->standby = standby;
	snprintf(d->role, sizeof(d->role), "oss-%s%s", o->name, standby ? "-standby" : "");
	cc_mds_addrs(c, mds, sizeof(mds));
	opt(ds, d, "--fsname", c->fsname);
	opt(ds, d, "--mds", mds);
	opt(ds, d, "--listen", standby ? o->failover.listen : o->listen);
	opt(ds, d, "--key-file", c->key_file);
	if (c->sec_min[0])
		opt(ds, d, "--sec-min", c->sec_min);
	for (int k = 0; k < o->nosts; k++) {
		const struct cc_ost *ost = &c->osts[o->ost0 + k];

		arg(ds, d, "--ost");
		arg(ds, d, "%d:%s", ost->index, ost->dir);
		/* --format creates only missing superblocks; existing ones are checked. */
		if (!standby)
			format_unless(ds, d, ost->dir, "nacre-ost.sb");
	}
	/* the OSTs are registered at both addresses: clients try the partner in turn */
	if (o->failover.host[0])
		opt(ds, d, "--failover", standby ? o->listen : o->failover.listen);
	if (standby)
		arg(ds, d, "--standby"); /* waits until the primary's OSTs are free */
	else
		metrics_args(ds, d, c, o->metrics_addr);
}

static void add_copytool(struct daemons *ds, const struct cc_conf *c, int host, int k)
{
	const struct cc_archive *a = &c->archives[k];
	struct bu_daemon *d = add(ds, BU_COPYTOOL, k, c->copytools[host], "nacre-copytool",
				  "serving archive");
	char spec[BU_SPEC_MAX];

	snprintf(d->role, sizeof(d->role), "copytool-%d", a->id);
	d->skip = !a->backend[0];
	bu_spec(c, spec, sizeof(spec));
	opt(ds, d, "--mds", spec);
	opt(ds, d, "--key-file", c->key_file);
	arg(ds, d, "--archive-id");
	arg(ds, d, "%d", a->id);
	opt(ds, d, "--backend", a->backend);
	if (c->hsm_endpoint[0]) {
		opt(ds, d, "--endpoint", c->hsm_endpoint);
	}
	if (c->hsm_credentials[0]) {
		opt(ds, d, "--credentials", c->hsm_credentials);
	}
	char maddr[CC_ADDR_MAX + 8];
	bu_addr_plus(c->copytool_metrics_addr, k, maddr, sizeof(maddr));
	metrics_args(ds, d, c, maddr);
}

static void daemons_free(struct daemons *ds)
{
	for (int i = 0; i < ds->n; i++) {
		for (int k = 0; k < ds->d[i].argc; k++)
			free(ds->d[i].argv[k]);
		for (int k = 0; k < ds->d[i].nformat; k++)
			free(ds->d[i].format_unless[k]);
	}
	free(ds->d);
	ds->d = NULL;
}

/* Every daemon in start order: the MDS and its standby, each OSS and its standby, then each
 * copytool host's archives. */
static int daemons_build(const struct cc_conf *c, struct daemons *ds)
{
	memset(ds, 0, sizeof(*ds));
	ds->d = calloc(NDAEMONS_MAX, sizeof(*ds->d));
	if (!ds->d) {
		cli_err("out of memory");
		return -1;
	}
	add_mds(ds, c, 0);
	if (c->mds_failover.host[0])
		add_mds(ds, c, 1);
	for (int j = 0; j < c->noss; j++) {
		add_oss(ds, c, j, 0);
		if (c->oss[j].failover.host[0])
			add_oss(ds, c, j, 1);
	}
	for (int i = 0; i < c->ncopytools; i++)
		for (int k = 0; k < c->narchives; k++)
			add_copytool(ds, c, i, k);
	if (ds->failed) {
		daemons_free(ds);
		cli_err("out of memory");
		return -1;
	}
	return 0;
}

void bu_spec(const struct cc_conf *c, char *out, size_t len)
{
	char addrs[2 * CC_ADDR_MAX];

	cc_mds_addrs(c, addrs, sizeof(addrs));
	snprintf(out, len, "%s:/%s", addrs, c->fsname);
}

/* nacre-mount's -o: the key, the client's options, its metrics address, log
 * (LOG_DIR/FSNAME-client-NAME.jsonl) and Log Analytics sink. */
static void mount_opts(const struct cc_conf *c, const struct cc_client *cl, char *out,
		       size_t len)
{
	struct strbuf b = STRBUF_INIT;

	strbuf_printf(&b, "key_file=%s%s%s", c->key_file, cl->options[0] ? "," : "",
		      cl->options);
	if (cl->admin) /* the local-admin nodemap rule matches this name */
		strbuf_str(&b, ",client_name=nacre-admin");
	if (cl->metrics_addr[0])
		strbuf_printf(&b, ",metrics_addr=%s", cl->metrics_addr);
	if (c->metrics_log_dir[0])
		strbuf_printf(&b, ",metrics_log=%s/%s-client-%s.jsonl", c->metrics_log_dir,
			      c->fsname, cl->name);
	if (c->metrics_interval &&
	    (c->metrics_log_dir[0] || c->metrics_azure[0] || c->metrics_azure_ingest[CC_AZ_DCE][0]))
		strbuf_printf(&b, ",metrics_interval=%d", c->metrics_interval);
	for (int i = 0; i < CC_AZ_N; i++)
		if (c->metrics_azure_ingest[i][0]) {
			strbuf_str(&b, ",metrics_azure_");
			for (const char *n = cc_az_names[i]; *n; n++)
				strbuf_char(&b, *n == '-' ? '_' : *n);
			strbuf_printf(&b, "=%s", c->metrics_azure_ingest[i]);
		}
	if (c->metrics_azure[0]) {
		strbuf_printf(&b, ",metrics_azure=%s,metrics_azure_key_file=%s", c->metrics_azure,
			      c->metrics_azure_key_file);
		if (c->metrics_azure_log_type[0])
			strbuf_printf(&b, ",metrics_azure_log_type=%s", c->metrics_azure_log_type);
		if (c->metrics_azure_url[0])
			strbuf_printf(&b, ",metrics_azure_url=%s", c->metrics_azure_url);
	}
	str_copy(out, strbuf_cstr(&b), len);
	strbuf_fini(&b);
}

/* The servers (MDS, OSSes and their standbys) come before the mounts, the copytools after. */
static int is_server(const struct bu_daemon *d)
{
	return d->kind != BU_COPYTOOL;
}

int bu_up(const struct cc_conf *c, const struct bu_runner *r, void *ctx)
{
	char spec[BU_SPEC_MAX], opts[4 * PATH_MAX + 2048];
	struct daemons ds;
	int rc = -1;

	if (daemons_build(c, &ds) < 0)
		return -1;
	if (r->prepare(ctx) < 0)
		goto out;
	for (int i = 0; i < ds.n; i++)
		if (is_server(&ds.d[i]) && r->start(ctx, &ds.d[i]) < 0)
			goto out;
	if (r->wait_osts(ctx) < 0)
		goto out;
	bu_spec(c, spec, sizeof(spec));
	for (int i = 0; i < c->nclients; i++) {
		mount_opts(c, &c->clients[i], opts, sizeof(opts));
		if (r->mount(ctx, &c->clients[i], spec, opts, i == 0) < 0)
			goto out;
	}
	for (int i = 0; i < ds.n; i++) {
		if (is_server(&ds.d[i]))
			continue;
		if (ds.d[i].skip)
			r->skip(ctx, &ds.d[i]);
		else if (r->start(ctx, &ds.d[i]) < 0)
			goto out;
	}
	rc = 0;
out:
	daemons_free(&ds);
	return rc;
}

/* Stops every daemon of kind (standbys or not) from the last to the first. */
static int stop_kind(const struct bu_runner *r, void *ctx, const struct daemons *ds,
		     enum bu_kind kind, int standby)
{
	int rc = 0;

	for (int i = ds->n - 1; i >= 0; i--)
		if (ds->d[i].kind == kind && ds->d[i].standby == standby &&
		    r->stop(ctx, &ds->d[i]) < 0)
			rc = -1;
	return rc;
}

int bu_down(const struct cc_conf *c, const struct bu_runner *r, void *ctx)
{
	struct daemons ds;
	int rc = 0;

	if (daemons_build(c, &ds) < 0)
		return -1;
	/* Clients first, then copytools, OSSes, the MDS last: nothing is left talking to a
	 * server that is gone. A standby goes before its primary, or it would take over. */
	for (int i = 0; i < c->nclients; i++)
		if (r->unmount(ctx, &c->clients[i]) < 0)
			rc = -1;
	static const struct {
		enum bu_kind kind;
		int standby;
	} order[] = {{BU_COPYTOOL, 0}, {BU_OSS, 1}, {BU_OSS, 0}, {BU_MDS, 1}, {BU_MDS, 0}};
	for (size_t k = 0; k < ARRAY_SIZE(order); k++)
		if (stop_kind(r, ctx, &ds, order[k].kind, order[k].standby) < 0)
			rc = -1;
	daemons_free(&ds);
	return rc;
}

int bu_status(const struct cc_conf *c, const struct bu_runner *r, void *ctx)
{
	struct daemons ds;
	int down = 0;

	if (daemons_build(c, &ds) < 0)
		return -1;
	printf("daemons:\n");
	for (int i = 0; i < ds.n; i++)
		if (r->daemon_status(ctx, &ds.d[i]) < 0)
			down++;
	printf("targets (as the MDS sees them):\n");
	if (r->targets_status(ctx) < 0)
		down++;
	printf("mounts:\n");
	for (int i = 0; i < c->nclients; i++)
		if (r->mount_status(ctx, &c->clients[i]) < 0)
			down++;
	daemons_free(&ds);
	return down;
}
