/* param.c - `nacre get_param`, `set_param`, `list_param` (lctl's verbs, with Lustre's dotted
 * names), `nacre check servers` and `nacre getname` (lfs's).
 *
 * Where each parameter comes from (docs/params.md has the list):
 * - the mount's own tunables (llite.FS-INSTANCE.*, osc.FS-OSTxxxx-osc-INSTANCE.*): the
 *   virtual xattrs nacre.params and nacre.param.NAME of each mount's root, read and
 *   written there (a set needs root, as lctl's does);
 * - what a client knows of the servers (osc.* and mdc.* active and space, obdfilter.* and
 *   mdt.* space, mdt.*.hsm.actions): nacre.targets and nacre.hsm_list of the first mount
 *   of each file system, read-only;
 * - server counters (obdfilter.*.stats, mdt.*.md_stats): the daemons' metrics endpoints,
 *   only when given with --metrics HOST:PORT or -c CONFIG (the CLI has no other way to
 *   them).
 * Names match patterns as lctl matches them: the dots are path separators, so '*' stays
 * within one component, and -R also takes every name below a matching prefix.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "cli/cli.h"
#include "cli/cluster_conf.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "common/vxattr.h"
#include "nacre/nacre.h"

#define PARAM_MOUNTS_MAX 64
#define PARAM_TARGETS_MAX 1024
#define PARAM_TEXT_MAX (1 << 20)
#define PARAM_EPS_MAX 64

enum prm_src {
	SRC_MOUNT, /* nacre.param.NAME of root */
	SRC_TEXT,  /* value already known (read-only) */
	SRC_HSM,   /* mdt.*.hsm.actions: nacre.hsm_list of root, read when asked */
	SRC_JOBS,  /* mdt.*.job_stats: GET /job_stats of the metrics endpoint ep */
};

struct prm {
	char name[256];
	int rw;
	enum prm_src src;
	char root[PATH_MAX];
	char *value; /* SRC_TEXT: owned */
	char ep[CC_ADDR_MAX]; /* SRC_JOBS: the endpoint, and its page */
	char page[96];
};

struct prm_set {
	struct prm *p;
	int n, cap;
};

struct opts {
	int only_value, only_name, recursive, quiet, classify;
	char eps[PARAM_EPS_MAX][CC_ADDR_MAX];
	int neps;
	char mount[PATH_MAX]; /* --mount: only the mount with this root ("" = every one) */
};

static struct prm *add(struct prm_set *ps, const char *name, int rw, enum prm_src src,
		       const char *root)
{
	if (ps->n == ps->cap) {
		int cap = ps->cap ? ps->cap * 2 : 64;
		struct prm *np = realloc(ps->p, (size_t)cap * sizeof(*np));

		if (!np)
			return NULL;
		ps->p = np;
		ps->cap = cap;
	}
	struct prm *p = &ps->p[ps->n++];

	memset(p, 0, sizeof(*p));
	str_copy(p->name, name, sizeof(p->name));
	p->rw = rw;
	p->src = src;
	str_copy(p->root, root, sizeof(p->root));
	return p;
}

static void add_text(struct prm_set *ps, const char *root, const char *value, const char *fmt,
		     ...) __attribute__((format(printf, 4, 5)));
static void add_text(struct prm_set *ps, const char *root, const char *value, const char *fmt,
		     ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	struct prm *p = add(ps, name, 0, SRC_TEXT, root);

	if (p)
		p->value = strdup(value);
}

static void prm_set_free(struct prm_set *ps)
{
	for (int i = 0; i < ps->n; i++)
		free(ps->p[i].value);
	free(ps->p);
	memset(ps, 0, sizeof(*ps));
}

/* The mount's own parameters, from nacre.params ("NAME MODE" lines). */
static void mount_params(struct prm_set *ps, const char *root, char *buf)
{
	int n = cli_getxattr(root, NACRE_VXATTR_PARAMS, buf, PARAM_TEXT_MAX);

	if (n < 0)
		return;
	for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *sp = strchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		add(ps, line, strcmp(sp + 1, "rw") == 0, SRC_MOUNT, root);
	}
}

static void space_params(struct prm_set *ps, const char *root, const char *prefix,
			 const struct nacre_statfs *st)
{
	char v[32];

	snprintf(v, sizeof(v), "%llu", (unsigned long long)st->kb_total);
	add_text(ps, root, v, "%s.kbytestotal", prefix);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)st->kb_free);
	add_text(ps, root, v, "%s.kbytesfree", prefix);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)st->kb_avail);
	add_text(ps, root, v, "%s.kbytesavail", prefix);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)st->files);
	add_text(ps, root, v, "%s.filestotal", prefix);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)st->ffree);
	add_text(ps, root, v, "%s.filesfree", prefix);
}

/* What the mount at root knows of its servers: client device names per target (with
 * this mount's instance), and, when server is set, the server-side names. */
static void target_params(struct prm_set *ps, const char *root, char *buf, int server)
{
	char fsname[64], inst[128];
	struct nacre_target t;
	int n;

	if (cli_getxattr(root, NACRE_VXATTR_FSNAME, fsname, sizeof(fsname)) < 0 ||
	    cli_getxattr(root, NACRE_VXATTR_INSTANCE, inst, sizeof(inst)) < 0)
		return;
	fsname[strcspn(fsname, "\n")] = '\0';
	inst[strcspn(inst, "\n")] = '\0';
	if (strlen(inst) <= strlen(fsname))
		return;
	const char *id = inst + strlen(fsname) + 1; /* inst is "FS-INSTANCE" */

	n = cli_getxattr(root, NACRE_VXATTR_TARGETS, buf, PARAM_TEXT_MAX);
	if (n < 0)
		return;
	for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (vxattr_target_parse(line, &t) < 0)
			continue;
		int ost = t.type == NACRE_TGT_OST;
		char dev[160], prefix[200];

		snprintf(dev, sizeof(dev), "%s-%s%04x", fsname, ost ? "OST" : "MDT", t.index);
		snprintf(prefix, sizeof(prefix), "%s.%s-%s-%s", ost ? "osc" : "mdc", dev,
			 ost ? "osc" : "mdc", id);
		add_text(ps, root, t.up ? "1" : "0", "%s.active", prefix);
		if (t.up)
			space_params(ps, root, prefix, &t.st);
		if (!server)
			continue;
		snprintf(prefix, sizeof(prefix), "%s.%s", ost ? "obdfilter" : "mdt", dev);
		if (t.up)
			space_params(ps, root, prefix, &t.st);
		if (!ost) {
			char name[256];

			snprintf(name, sizeof(name), "mdt.%s.hsm.actions", dev);
			add(ps, name, 0, SRC_HSM, root);
		}
	}
}

/* PREFIX.TARGET.job_stats: the page /job_stats/TARGET of endpoint ep (the MDS answers
 * /job_stats/FS-MDT0000 as /job_stats). */
static void jobs_param(struct prm_set *ps, const char *ep, const char *prefix,
		       const char *target)
{
	char name[256];
	snprintf(name, sizeof(name), "%s.%s.job_stats", prefix, target);
	struct prm *p = add(ps, name, 1, SRC_JOBS, "");
	if (!p)
		return;
	str_copy(p->ep, ep, sizeof(p->ep));
	snprintf(p->page, sizeof(p->page), "/job_stats/%s", target);
}

/* obdfilter.TARGET.stats and .job_stats of every OST, and mdt.TARGET.md_stats and
 * .job_stats of the MDT, that the given metrics endpoints serve. */
static void stats_params(struct prm_set *ps, const struct opts *o)
{
	for (int e = 0; e < o->neps; e++) {
		struct cli_scrape sc = {0};
		char tgts[64][64], mdt[64];

		cli_scrape_fetch(o->eps[e], &sc);
		if (!sc.ok) {
			cli_err("metrics endpoint %s: %s", o->eps[e], sc.err);
			continue;
		}
		if (cli_scrape_mdt(&sc, mdt, sizeof(mdt)) == 0) {
			struct strbuf sb = STRBUF_INIT;

			cli_mdt_stats(&sc, &sb);
			if (strbuf_ok(&sb))
				add_text(ps, "", strbuf_cstr(&sb), "mdt.%s.md_stats", mdt);
			strbuf_fini(&sb);
			jobs_param(ps, o->eps[e], "mdt", mdt);
		}
		int nt = cli_scrape_targets(&sc, tgts, 64);

		for (int i = 0; i < nt; i++) {
			struct strbuf sb = STRBUF_INIT;

			cli_target_stats(&sc, tgts[i], &sb);
			if (strbuf_ok(&sb))
				add_text(ps, "", strbuf_cstr(&sb), "obdfilter.%s.stats", tgts[i]);
			strbuf_fini(&sb);
			jobs_param(ps, o->eps[e], "obdfilter", tgts[i]);
		}
		cli_scrape_free(&sc);
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct prm *)a)->name, ((const struct prm *)b)->name);
}

/* The file system name of a mount source ("" when it is none). */
static void fsname_of(const char *source, char *out, size_t len)
{
	char addr[NACRE_ADDR_LIST_MAX], sub[NACRE_PATH_MAX + 1], why[160];
	if (nacre_parse_spec(source, addr, sizeof(addr), out, len, sub, sizeof(sub), why,
			     sizeof(why)) < 0)
		out[0] = '\0';
}

/* 1 if mount i's file system name is also another cluster's (another source) mounted here,
 * and the working directory is not in mount i: its server-side names (the same dotted names
 * for both) are left out, and the candidates said once. */
static int shared_name(const struct cli_mount *m, int n, int i)
{
	char fs[NACRE_FSNAME_MAX + 1], other[NACRE_FSNAME_MAX + 1];
	struct cli_mount here;
	int shared = 0;

	fsname_of(m[i].source, fs, sizeof(fs));
	for (int j = 0; j < n && fs[0]; j++) {
		fsname_of(m[j].source, other, sizeof(other));
		shared |= strcmp(other, fs) == 0 && strcmp(m[j].source, m[i].source) != 0;
	}
	if (!shared)
		return 0;
	if (cli_mount_of(".", &here) == 0) {
		fsname_of(here.source, other, sizeof(other));
		if (strcmp(other, fs) == 0)
			return strcmp(here.source, m[i].source) != 0; /* the one we are in */
	}
	for (int j = 0; j < i; j++) { /* said once, at the first of them */
		fsname_of(m[j].source, other, sizeof(other));
		if (strcmp(other, fs) == 0)
			return 1;
	}
	fprintf(stderr, "%s: file system name '%s' is mounted from several clusters:", cli_prog,
		fs);
	for (int j = 0; j < n; j++) {
		fsname_of(m[j].source, other, sizeof(other));
		if (strcmp(other, fs) == 0)
			fprintf(stderr, " %s (on %s)", m[j].source, m[j].dir);
	}
	fprintf(stderr, "; its servers' parameters are left out: run in one of the mounts or "
			"give --mount PATH\n");
	return 1;
}

/* Every parameter this machine offers, sorted by name as lctl's glob sorts its paths.
 * 0, or -1 after a message (no mount, no memory). */
static int collect(struct prm_set *ps, const struct opts *o)
{
	struct cli_mount *m = calloc(PARAM_MOUNTS_MAX, sizeof(*m));
	char *buf = malloc(PARAM_TEXT_MAX);
	char seen[PARAM_MOUNTS_MAX][NACRE_PATH_MAX];
	int nseen = 0, n;

	if (!m || !buf) {
		free(m);
		free(buf);
		cli_err("out of memory");
		return -1;
	}
	n = cli_list_mounts(m, PARAM_MOUNTS_MAX);
	for (int i = 0; i < n; i++) {
		int server = 1;

		if (o->mount[0] && strcmp(m[i].dir, o->mount) != 0)
			continue;
		/* The server-side names once per file system (mount source), not per mount. */
		for (int k = 0; k < nseen; k++)
			if (strcmp(seen[k], m[i].source) == 0)
				server = 0;
		if (server && !o->mount[0] && shared_name(m, n, i))
			server = 0; /* said: whose obdfilter.FS-OST0000 would it be? */
		if (server && nseen < PARAM_MOUNTS_MAX)
			str_copy(seen[nseen++], m[i].source, sizeof(seen[0]));
		mount_params(ps, m[i].dir, buf);
		target_params(ps, m[i].dir, buf, server);
	}
	stats_params(ps, o);
	if (ps->n > 1)
		qsort(ps->p, (size_t)ps->n, sizeof(*ps->p), by_name);
	free(m);
	free(buf);
	if (n <= 0 && o->neps == 0) {
		cli_err("no nacre file system is mounted, and no --metrics endpoint given");
		return -1;
	}
	return 0;
}

/* 1 if name matches pattern as lctl matches a parameter path ('.' separates components;
 * with recursive, a match of any leading components also counts). */
static int matches(const char *pattern, const char *name, int recursive)
{
	char pat[512], nm[512];

	str_copy(pat, pattern, sizeof(pat));
	str_copy(nm, name, sizeof(nm));
	for (char *c = pat; *c; c++)
		if (*c == '.')
			*c = '/';
	for (char *c = nm; *c; c++)
		if (*c == '.')
			*c = '/';
	if (fnmatch(pat, nm, FNM_PATHNAME) == 0)
		return 1;
	if (!recursive)
		return 0;
	for (char *c = strchr(nm, '/'); c; c = strchr(c + 1, '/')) {
		*c = '\0';
		int r = fnmatch(pat, nm, FNM_PATHNAME) == 0;

		*c = '/';
		if (r)
			return 1;
	}
	return 0;
}

/* mdt.*.hsm.actions: one line per queued action, as mdt_hsm_cdt_actions.c prints them
 * (status is whitespace field 13). nacre has no llog: lrh's idx is the cookie. */
static int hsm_actions(const char *root, struct strbuf *out)
{
	char name[64];
	char *buf = malloc(PARAM_TEXT_MAX);
	unsigned long long after = 0;
	int more = 1;

	if (!buf)
		return -ENOMEM;
	while (more) {
		snprintf(name, sizeof(name), NACRE_VXATTR_HSM_LIST "%llu", after);
		int n = cli_getxattr(root, name, buf, PARAM_TEXT_MAX);

		if (n < 0) {
			free(buf);
			return n;
		}
		more = 0;
		for (char *line = buf, *nl; *line; line = nl + 1) {
			struct nacre_hsm_action a;
			char fid[NACRE_FID_STR_MAX];

			nl = strchr(line, '\n');
			if (!nl)
				break;
			*nl = '\0';
			int r = vxattr_hsm_list_parse(line, &a, fid, &more);

			if (r == 0)
				break;
			if (r < 0)
				continue;
			strbuf_printf(out,
				      "lrh=[type=10680000 len=136 idx=1/%llu] fid=%s dfid=%s "
				      "compound/cookie=0x0/0x%llx action=%s archive#=%u flags=0x0 "
				      "extent=0x0-0xffffffffffffffff gid=0x0 datalen=0 status=%s "
				      "data=[]\n",
				      (unsigned long long)a.cookie, fid, fid,
				      (unsigned long long)a.cookie, vxattr_hsm_action_name(a.action),
				      a.archive_id, vxattr_hsm_status_name(a.status));
			after = a.cookie;
		}
	}
	free(buf);
	return 0;
}

/* The value of p into out (the text as read: may end in '\n'). 0 or -errno. */
static int read_value(const struct prm *p, struct strbuf *out)
{
	if (p->src == SRC_TEXT) {
		strbuf_str(out, p->value ? p->value : "");
		return 0;
	}
	if (p->src == SRC_HSM)
		return hsm_actions(p->root, out);
	if (p->src == SRC_JOBS) {
		char err[256];
		char *text = cli_http(p->ep, "GET", p->page, err, sizeof(err));
		if (!text) {
			cli_err("metrics endpoint %s: %s", p->ep, err);
			return -EIO;
		}
		strbuf_str(out, text);
		free(text);
		return 0;
	}

	char xname[300], buf[4096];

	snprintf(xname, sizeof(xname), NACRE_VXATTR_PARAM "%s", p->name);
	int n = cli_getxattr(p->root, xname, buf, sizeof(buf));

	if (n < 0)
		return n;
	strbuf_str(out, buf);
	return 0;
}

/* job_stats=clear, as Lustre's: the endpoint forgets every job (from the server only). */
static int clear_jobs(const struct prm *p, const char *value)
{
	char err[256];
	if (strcmp(value, "clear") != 0)
		return -EINVAL;
	char path[128];
	snprintf(path, sizeof(path), "%s/clear", p->page);
	char *text = cli_http(p->ep, "POST", path, err, sizeof(err));
	if (!text) {
		cli_err("metrics endpoint %s: %s", p->ep, err);
		return -EIO;
	}
	free(text);
	return 0;
}

/* Prints one parameter as lctl does: NAME=VALUE, or NAME= and the lines of a value of
 * several lines or of 80 characters with the name; -n the value alone, -N the name. */
static void show(const struct prm *p, const char *value, const struct opts *o)
{
	size_t len = strlen(value);
	const char *nl = memchr(value, '\n', len);
	/* lctl puts the value on its own lines when it has several or is long */
	int multi = (nl && (size_t)(nl - value) + 1 < len) || strlen(p->name) + len >= 80;

	if (o->only_name) {
		printf("%s%s\n", p->name, o->classify && p->rw ? "=" : "");
		return;
	}
	if (!o->only_value)
		printf("%s=%s", p->name, multi ? "\n" : "");
	fputs(value, stdout);
	if (len == 0 || value[len - 1] != '\n')
		putchar('\n');
}

static void usage_error(const char *verb, const char *arg)
{
	cli_err("%s: unknown option '%s'", verb, arg);
	cli_usage(stderr, verb);
}

/* Options shared by the three param verbs; returns the index of the first operand, -1
 * after a message, -2 after printing the usage (-h). */
static int parse_opts(int argc, char **argv, struct opts *o, const char *allowed)
{
	int i = 1;

	if (argc > 1 && cli_is_help(argv[1])) {
		cli_usage(stdout, argv[0]);
		return -2;
	}
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (strcmp(argv[i], "--") == 0)
			return i + 1;
		if (strcmp(argv[i], "--mount") == 0 && i + 1 < argc) {
			if (cli_check_nacre(argv[++i], NULL, 0) < 0 ||
			    cli_mount_root(argv[i], o->mount, sizeof(o->mount)) < 0) {
				cli_err("--mount %s: not on a nacre mount", argv[i]);
				return -1;
			}
			continue;
		}
		if ((strcmp(argv[i], "--metrics") == 0 || strcmp(argv[i], "-c") == 0) &&
		    i + 1 < argc) {
			if (argv[i][1] == 'c') {
				static struct cc_conf c;
				char err[1024];

				if (cc_parse(argv[++i], &c, err, sizeof(err)) < 0) {
					cli_err("%s", err);
					return -1;
				}
				if (c.mds_metrics_addr[0])
					str_copy(o->eps[o->neps++], c.mds_metrics_addr,
						 CC_ADDR_MAX);
				for (int k = 0; k < c.noss && o->neps < PARAM_EPS_MAX; k++)
					if (c.oss[k].metrics_addr[0])
						str_copy(o->eps[o->neps++], c.oss[k].metrics_addr,
							 CC_ADDR_MAX);
			} else if (o->neps < PARAM_EPS_MAX) {
				str_copy(o->eps[o->neps++], argv[++i], CC_ADDR_MAX);
			}
			continue;
		}
		for (const char *f = argv[i] + 1; *f; f++) {
			if (*f == 'P' && strchr(allowed, 'n') && !strchr(allowed, 'N')) {
				cli_err("set_param -P: nacre keeps no configuration log; a value "
					"set lasts until unmount (make it permanent with the mount "
					"option: -o max_rpcs_in_flight=N, -o readahead_max_mb=N)");
				return -1;
			}
			if (!strchr(allowed, *f)) {
				usage_error(argv[0], argv[i]);
				return -1;
			}
			if (*f == 'n')
				o->only_value = o->quiet = 1;
			else if (*f == 'N')
				o->only_name = 1;
			else if (*f == 'R')
				o->recursive = 1;
			else if (*f == 'F')
				o->classify = 1;
		}
	}
	return i;
}

static int get_or_list(int argc, char **argv, int list)
{
	static struct opts o;
	struct prm_set ps = {0};
	int first, rc = 0;

	memset(&o, 0, sizeof(o));
	first = parse_opts(argc, argv, &o, list ? "RF" : "nNRF");
	if (first < 0)
		return first == -2 ? 0 : 1;
	if (list)
		o.only_name = 1;
	if (first >= argc) {
		cli_err("%s: give a parameter name or pattern (e.g. 'osc.*.max_rpcs_in_flight')",
			argv[0]);
		cli_usage(stderr, argv[0]);
		return 1;
	}
	if (collect(&ps, &o) < 0)
		return 1;
	for (int a = first; a < argc; a++) {
		int found = 0;

		for (int i = 0; i < ps.n; i++) {
			struct strbuf sb = STRBUF_INIT;
			int r = 0;

			if (!matches(argv[a], ps.p[i].name, o.recursive))
				continue;
			found = 1;
			if (!o.only_name)
				r = read_value(&ps.p[i], &sb);
			if (r < 0) {
				fprintf(stderr, "error: %s: read '%s': %s\n", argv[0], ps.p[i].name,
					strerror(-r));
				if (rc == 0)
					rc = -r;
			} else {
				show(&ps.p[i], strbuf_cstr(&sb), &o);
			}
			strbuf_fini(&sb);
		}
		if (!found) {
			fprintf(stderr, "error: %s: param_path '%s': %s\n", argv[0], argv[a],
				strerror(ENOENT));
			if (rc == 0)
				rc = ENOENT;
		}
	}
	if (rc == ENOENT)
		cli_err("`nacre list_param -R '*'` lists the parameters there are (server "
			"counters need --metrics HOST:PORT)");
	prm_set_free(&ps);
	return rc;
}

int cli_get_param(int argc, char **argv)
{
	return get_or_list(argc, argv, 0);
}

int cli_list_param(int argc, char **argv)
{
	return get_or_list(argc, argv, 1);
}

int cli_set_param(int argc, char **argv)
{
	static struct opts o;
	struct prm_set ps = {0};
	int first, rc = 0;

	memset(&o, 0, sizeof(o));
	first = parse_opts(argc, argv, &o, "n");
	if (first < 0)
		return first == -2 ? 0 : 1;
	if (first >= argc) {
		cli_err("set_param: give NAME=VALUE (e.g. 'osc.*.max_rpcs_in_flight=16')");
		cli_usage(stderr, "set_param");
		return 1;
	}
	if (collect(&ps, &o) < 0)
		return 1;
	for (int a = first; a < argc; a++) {
		char pattern[512];
		const char *eq = strchr(argv[a], '=');
		int found = 0;

		if (!eq || eq == argv[a]) {
			fprintf(stderr, "error: set_param: %s: no value given (use NAME=VALUE)\n",
				argv[a]);
			if (rc == 0)
				rc = EINVAL;
			continue;
		}
		snprintf(pattern, sizeof(pattern), "%.*s", (int)(eq - argv[a]), argv[a]);
		const char *value = eq + 1;

		for (int i = 0; i < ps.n; i++) {
			const struct prm *p = &ps.p[i];
			int r;

			if (!matches(pattern, p->name, 0))
				continue;
			found = 1;
			if (!p->rw) {
				r = -EACCES;
			} else if (p->src == SRC_JOBS) {
				r = clear_jobs(p, value);
			} else {
				char xname[300];

				snprintf(xname, sizeof(xname), NACRE_VXATTR_PARAM "%s", p->name);
				r = setxattr(p->root, xname, value, strlen(value), 0) < 0 ? -errno
											  : 0;
			}
			if (r < 0) {
				fprintf(stderr, "error: set_param: setting %s=%s: %s%s\n", p->name,
					value, strerror(-r),
					r == -EACCES && !p->rw ? " (a read-only parameter)"
					: r == -EACCES		 ? " (set_param needs root)"
					: r == -ERANGE || r == -EINVAL
						? " (see `nacre set_param --help` for the ranges)"
						: "");
				if (rc == 0)
					rc = -r;
				continue;
			}
			if (!o.quiet)
				printf("%s=%s\n", p->name, value);
		}
		if (!found) {
			fprintf(stderr, "error: set_param: param_path '%s': %s\n", pattern,
				strerror(ENOENT));
			if (rc == 0)
				rc = ENOENT;
		}
	}
	prm_set_free(&ps);
	return rc;
}

/* ---- lfs check, lfs getname ---- */

static int check_mount(const char *root, int want_mdt, int want_ost)
{
	char fsname[64], inst[128];
	struct nacre_target *t = calloc(PARAM_TARGETS_MAX, sizeof(*t));
	char *buf = malloc(PARAM_TEXT_MAX);
	int nt = 0, down = 0, n;

	if (!t || !buf) {
		free(t);
		free(buf);
		cli_err("out of memory");
		return 1;
	}
	if (cli_getxattr(root, NACRE_VXATTR_FSNAME, fsname, sizeof(fsname)) < 0 ||
	    cli_getxattr(root, NACRE_VXATTR_INSTANCE, inst, sizeof(inst)) < 0 ||
	    (n = cli_getxattr(root, NACRE_VXATTR_TARGETS, buf, PARAM_TEXT_MAX)) < 0) {
		cli_err("check: cannot read the targets of %s (is the MDS reachable?)", root);
		free(t);
		free(buf);
		return 1;
	}
	fsname[strcspn(fsname, "\n")] = '\0';
	inst[strcspn(inst, "\n")] = '\0';
	const char *id = strlen(inst) > strlen(fsname) ? inst + strlen(fsname) + 1 : inst;

	for (char *line = buf, *nl; line && *line && nt < PARAM_TARGETS_MAX;
	     line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (vxattr_target_parse(line, &t[nt]) == 0)
			nt++;
	}
	/* MDCs first, then OSCs, each in index order as the registry gives them. */
	for (int pass = 0; pass < 2; pass++) {
		uint32_t type = pass == 0 ? NACRE_TGT_MDT : NACRE_TGT_OST;

		if ((pass == 0 && !want_mdt) || (pass == 1 && !want_ost))
			continue;
		for (int i = 0; i < nt; i++) {
			if (t[i].type != type)
				continue;
			printf("%s-%s%04x-%s-%s %s.\n", fsname, pass ? "OST" : "MDT", t[i].index,
			       pass ? "osc" : "mdc", id, t[i].up ? "active" : "inactive");
			down += !t[i].up;
		}
	}
	free(t);
	free(buf);
	return down ? 1 : 0;
}

struct check_arg {
	int mdt, ost;
};

static int check_one(const char *root, void *arg)
{
	const struct check_arg *c = arg;

	return check_mount(root, c->mdt, c->ost);
}

int cli_check(int argc, char **argv)
{
	struct check_arg c = {0, 0};

	if (argc < 2 || cli_is_help(argv[1])) {
		cli_usage(argc < 2 ? stderr : stdout, "check");
		return argc < 2;
	}
	if (strcmp(argv[1], "servers") == 0 || strcmp(argv[1], "all") == 0)
		c.mdt = c.ost = 1;
	else if (strcmp(argv[1], "osts") == 0)
		c.ost = 1;
	else if (strcmp(argv[1], "mdts") == 0 || strcmp(argv[1], "mds") == 0)
		c.mdt = 1;
	else {
		cli_err("check: '%s' is not one of servers, all, osts, mdts", argv[1]);
		cli_usage(stderr, "check");
		return 1;
	}
	return cli_each_root(argc, argv, 2, check_one, &c);
}

static int getname_one(const char *root, void *arg)
{
	int what = *(int *)arg; /* 0 both, 'n' fsname, 'i' instance */
	char inst[128], fsname[64];

	if (cli_getxattr(root, NACRE_VXATTR_INSTANCE, inst, sizeof(inst)) < 0 ||
	    cli_getxattr(root, NACRE_VXATTR_FSNAME, fsname, sizeof(fsname)) < 0) {
		cli_err("getname: %s does not answer as a nacre mount", root);
		return 1;
	}
	inst[strcspn(inst, "\n")] = '\0';
	fsname[strcspn(fsname, "\n")] = '\0';
	if (what == 'n')
		printf("%s\n", fsname);
	else if (what == 'i')
		printf("%s\n", strlen(inst) > strlen(fsname) ? inst + strlen(fsname) + 1 : inst);
	else
		printf("%s %s\n", inst, root);
	return 0;
}

int cli_getname(int argc, char **argv)
{
	int what = 0, i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "--fsname") == 0)
			what = 'n';
		else if (strcmp(argv[i], "-i") == 0 || strcmp(argv[i], "--instance") == 0)
			what = 'i';
		else {
			usage_error("getname", argv[i]);
			return 1;
		}
	}
	return cli_each_root(argc, argv, i, getname_one, &what);
}
