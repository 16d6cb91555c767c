/* cluster.c - `nacre up` and `nacre down`: a whole cluster (one MDS, N OSTs, a FUSE mount,
 * optionally a copytool) on this machine, with everything under one directory. The options
 * become a one-host cluster config that the bring-up engine (bringup.h) walks with the
 * local runner (bringup_local.h, which describes the files under DIR), so `nacre up` and
 * `nacre cluster up` run one sequence. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bringup_local.h"
#include "cli/cli.h"
#include "cli/local_proc.h"
#include "common/util.h"
#include "nacre/nacre.h"

#define MAX_OSTS 64
/* nacre-mount options of the local mount: the name the local-admin nodemap rule matches */
#define UP_CLIENT_OPTIONS "client_name=nacre-up"

/* What `nacre up` was asked for. */
#define UP_OPT_AZ 0x200 /* + CC_AZ_*: the --metrics-azure-* of the Logs Ingestion API */

struct up_opts {
	char dir[PATH_MAX];
	char mnt[PATH_MAX];
	char fsname[NACRE_FSNAME_MAX + 1];
	int port, osts, oss;
	/* --hsm-*: a copytool for archive 1, and a directory imported from it at creation */
	const char *hsm_backend, *hsm_endpoint, *hsm_credentials, *hsm_import;
	char sec_min[16]; /* --sec-min for the servers, "" = null */
	int quota_off;    /* --quota off for the MDS */
	/* --metrics-addr: the MDS's, then each OSS, the mount and the copytool on the next
	 * ports; --metrics-log: a directory of JSON lines; --metrics-azure*: passed on */
	char metrics_addr[CC_ADDR_MAX];
	char metrics_log[PATH_MAX];
	int metrics_interval;
	char metrics_azure_key_file[PATH_MAX];
	const char *metrics_azure, *metrics_azure_log_type, *metrics_azure_url;
	const char *metrics_azure_ingest[CC_AZ_N]; /* --metrics-azure-dce...: passed on */
	char metrics_azure_secret_file[PATH_MAX];  /* ... its secret file, absolute */
};

/* The k-th metrics address of `nacre up`: the MDS 0, OSS j 1 + j, the mount 1 + noss, the
 * copytool 2 + noss. */
static void up_metrics_addr(const struct up_opts *o, int k, char *out, size_t len)
{
	bu_addr_plus(o->metrics_addr, k, out, len);
}

/* out = v, or a message naming the option if it does not fit. */
static int set(char *out, size_t len, const char *opt, const char *v)
{
	if (str_copy(out, v, len) < len)
		return 0;
	cli_err("%s is too long: %s", opt, v);
	return -1;
}

static int dir_path(char *out, size_t len, const char *dir, const char *name)
{
	if (lp_path_join(out, len, dir, name) == 0)
		return 0;
	cli_err("path too long: %s/%s", dir, name);
	return -1;
}

/* The one-host config of `nacre up`: OSS j listens on PORT+1+j and serves the OSTs dealt
 * to it round-robin, DIR/ost<i>. */
static int up_conf(const struct up_opts *o, struct cc_conf *c)
{
	memset(c, 0, sizeof(*c));
	str_copy(c->path, o->dir, sizeof(c->path));
	str_copy(c->fsname, o->fsname, sizeof(c->fsname));
	str_copy(c->run_dir, o->dir, sizeof(c->run_dir));
	str_copy(c->sec_min, o->sec_min, sizeof(c->sec_min));
	c->quota_off = o->quota_off;
	str_copy(c->mds_host, "localhost", sizeof(c->mds_host));
	snprintf(c->mds_listen, sizeof(c->mds_listen), "127.0.0.1:%d", o->port);
	if (dir_path(c->key_file, sizeof(c->key_file), o->dir, "cluster.key") < 0 ||
	    dir_path(c->mds_data, sizeof(c->mds_data), o->dir, "mdt") < 0)
		return -1;
	up_metrics_addr(o, 0, c->mds_metrics_addr, sizeof(c->mds_metrics_addr));
	str_copy(c->metrics_log_dir, o->metrics_log, sizeof(c->metrics_log_dir));
	c->metrics_interval = o->metrics_interval;
	if (o->metrics_azure) {
		str_copy(c->metrics_azure, o->metrics_azure, sizeof(c->metrics_azure));
		str_copy(c->metrics_azure_key_file, o->metrics_azure_key_file,
			 sizeof(c->metrics_azure_key_file));
		if (o->metrics_azure_log_type &&
		    set(c->metrics_azure_log_type, sizeof(c->metrics_azure_log_type),
			"--metrics-azure-log-type", o->metrics_azure_log_type) < 0)
			return -1;
		if (o->metrics_azure_url && set(c->metrics_azure_url, sizeof(c->metrics_azure_url),
						"--metrics-azure-url", o->metrics_azure_url) < 0)
			return -1;
	}
	for (int i = 0; i < CC_AZ_N; i++)
		if (o->metrics_azure_ingest[i] &&
		    set(c->metrics_azure_ingest[i], sizeof(c->metrics_azure_ingest[i]),
			cc_az_names[i], o->metrics_azure_ingest[i]) < 0)
			return -1;
	for (int j = 0; j < o->oss; j++) {
		struct cc_oss *s = &c->oss[c->noss++];

		snprintf(s->name, sizeof(s->name), "%d", j);
		up_metrics_addr(o, 1 + j, s->metrics_addr, sizeof(s->metrics_addr));
		str_copy(s->host, "localhost", sizeof(s->host));
		snprintf(s->listen, sizeof(s->listen), "127.0.0.1:%d", o->port + 1 + j);
		s->ost0 = c->nosts;
		for (int i = j; i < o->osts; i += o->oss) {
			struct cc_ost *t = &c->osts[c->nosts++];
			char name[32];

			snprintf(name, sizeof(name), "ost%d", i);
			t->index = i;
			if (dir_path(t->dir, sizeof(t->dir), o->dir, name) < 0)
				return -1;
			s->nosts++;
		}
	}
	struct cc_client *cl = &c->clients[c->nclients++];

	str_copy(cl->name, "mount", sizeof(cl->name));
	str_copy(cl->host, "localhost", sizeof(cl->host));
	str_copy(cl->mountpoint, o->mnt, sizeof(cl->mountpoint));
	/* the local mount is admin: the nodemap rule local-admin of a new file system matches
	 * this name (docs/security.md, "Nodemaps") */
	str_copy(cl->options, UP_CLIENT_OPTIONS, sizeof(cl->options));
	up_metrics_addr(o, 1 + o->oss, cl->metrics_addr, sizeof(cl->metrics_addr));
	if (!o->hsm_backend)
		return 0;
	up_metrics_addr(o, 2 + o->oss, c->copytool_metrics_addr, sizeof(c->copytool_metrics_addr));
	struct cc_archive *a = &c->archives[c->narchives++];

	a->id = 1;
	str_copy(c->copytools[c->ncopytools++], "localhost", sizeof(c->copytools[0]));
	if (set(a->url, sizeof(a->url), "--hsm-backend", o->hsm_backend) < 0 ||
	    set(a->backend, sizeof(a->backend), "--hsm-backend", o->hsm_backend) < 0 ||
	    (o->hsm_endpoint && set(c->hsm_endpoint, sizeof(c->hsm_endpoint), "--hsm-endpoint",
				    o->hsm_endpoint) < 0) ||
	    (o->hsm_credentials && set(c->hsm_credentials, sizeof(c->hsm_credentials),
				       "--hsm-credentials", o->hsm_credentials) < 0))
		return -1;
	return 0;
}

/* `nacre hsm import` into the new file system, run as a child so its output goes to a
 * log: a large container prints a lot of progress. */
static int hsm_import_at_up(struct bu_local *l, const struct up_opts *o)
{
	const struct cc_conf *c = l->c;
	char self[PATH_MAX], dest[PATH_MAX], log[PATH_MAX];
	char *argv[20];
	int a = 0, st;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		cli_err("cannot find the nacre program: %s", strerror(errno));
		return -1;
	}
	self[n] = '\0';
	/* a path inside the new file system ("/" is its root, "data" or "/data" a directory
	 * under it), or one already under the mount point */
	size_t ml = strlen(o->mnt);
	const char *in_fs = o->hsm_import;
	int under_mnt = !strncmp(in_fs, o->mnt, ml) && (in_fs[ml] == '/' || !in_fs[ml]);

	if (under_mnt)
		in_fs += ml;
	while (*in_fs == '/')
		in_fs++;
	int rc = *in_fs ? lp_path_join(dest, sizeof(dest), o->mnt, in_fs) : 0;

	if (!*in_fs && str_copy(dest, o->mnt, sizeof(dest)) >= sizeof(dest))
		rc = -1;
	if (rc < 0) {
		cli_err("--hsm-import: path too long");
		return -1;
	}
	int r = mkdir_p(dest, 0755);

	if (r < 0) {
		cli_err("cannot create %s: %s", dest, strerror(-r));
		return -1;
	}
	lp_path_join(log, sizeof(log), o->dir, "hsm-import.log");
	argv[a++] = self;
	argv[a++] = "hsm";
	argv[a++] = "import";
	argv[a++] = "--archive-id";
	argv[a++] = "1";
	argv[a++] = "--backend";
	argv[a++] = (char *)o->hsm_backend;
	if (c->hsm_endpoint[0]) {
		argv[a++] = "--endpoint";
		argv[a++] = (char *)c->hsm_endpoint;
	}
	if (c->hsm_credentials[0]) {
		argv[a++] = "--credentials";
		argv[a++] = (char *)c->hsm_credentials;
	}
	argv[a++] = dest;
	argv[a] = NULL;
	pid_t pid = lp_spawn(argv, log);

	if (pid < 0 || waitpid(pid, &st, 0) < 0) {
		cli_err("cannot run nacre hsm import: %s", strerror(pid < 0 ? (int)-pid : errno));
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		cli_err("importing %s into %s failed: see %s", o->hsm_backend, dest, log);
		lp_show_log_tail(log);
		return -1;
	}
	bu_local_step(l, "imported %s into %s (released stubs: read to restore; log %s)",
		      o->hsm_backend, dest, log);
	return 0;
}

static int parse_count(const char *opt, const char *s, int min, int max, int *out)
{
	int64_t v;

	if (parse_i64(s, min, max, &v) < 0) {
		cli_err("invalid %s '%s': use a number from %d to %d", opt, s, min, max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static void up_defaults(struct up_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->osts = 4;
	o->port = NACRE_DEFAULT_PORT_MDS;
	str_copy(o->fsname, "nacre", sizeof(o->fsname));
}

/* Applies the options of argv (from argv[1]) to o: the command line, or what DIR/up.options
 * recorded. *dir gets --dir (may stay NULL). Returns 0, or -1 after saying what is wrong. */
static int parse_up(int argc, char **argv, struct up_opts *o, const char **dir)
{
	static const struct option longopts[] = {
		{"dir", required_argument, NULL, 'd'},    {"osts", required_argument, NULL, 'n'},
		{"oss", required_argument, NULL, 's'},    {"mount", required_argument, NULL, 'm'},
		{"fsname", required_argument, NULL, 'f'}, {"port", required_argument, NULL, 'p'},
		{"hsm-backend", required_argument, NULL, 'B'},
		{"hsm-endpoint", required_argument, NULL, 'E'},
		{"hsm-credentials", required_argument, NULL, 'C'},
		{"hsm-import", required_argument, NULL, 'I'},
		{"sec-min", required_argument, NULL, 'S'},
		{"quota", required_argument, NULL, 'Q'},
		{"metrics-addr", required_argument, NULL, 'A'},
		{"metrics-log", required_argument, NULL, 'L'},
		{"metrics-interval", required_argument, NULL, 'T'},
		{"metrics-azure", required_argument, NULL, 'W'},
		{"metrics-azure-key-file", required_argument, NULL, 'K'},
		{"metrics-azure-log-type", required_argument, NULL, 'Y'},
		{"metrics-azure-url", required_argument, NULL, 'U'},
		{"metrics-azure-dce", required_argument, NULL, UP_OPT_AZ + CC_AZ_DCE},
		{"metrics-azure-dcr", required_argument, NULL, UP_OPT_AZ + CC_AZ_DCR},
		{"metrics-azure-stream", required_argument, NULL, UP_OPT_AZ + CC_AZ_STREAM},
		{"metrics-azure-tenant", required_argument, NULL, UP_OPT_AZ + CC_AZ_TENANT},
		{"metrics-azure-client-id", required_argument, NULL, UP_OPT_AZ + CC_AZ_CLIENT_ID},
		{"metrics-azure-secret-file", required_argument, NULL,
		 UP_OPT_AZ + CC_AZ_SECRET_FILE},
		{"metrics-azure-authority", required_argument, NULL, UP_OPT_AZ + CC_AZ_AUTHORITY},
		{NULL, 0, NULL, 0},
	};
	char host[CC_HOST_MAX + 1];
	int mport;
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "d:n:s:m:f:p:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd': *dir = optarg; break;
		case 'B': o->hsm_backend = optarg; break;
		case 'E': o->hsm_endpoint = optarg; break;
		case 'C': o->hsm_credentials = optarg; break;
		case 'I': o->hsm_import = optarg; break;
		case 'W': o->metrics_azure = optarg; break;
		case UP_OPT_AZ + CC_AZ_SECRET_FILE:
			if (lp_absolute(optarg, o->metrics_azure_secret_file, PATH_MAX) < 0) {
				cli_err("path too long: %s", optarg);
				return -1;
			}
			o->metrics_azure_ingest[CC_AZ_SECRET_FILE] = o->metrics_azure_secret_file;
			break;
		case UP_OPT_AZ + CC_AZ_DCE:
		case UP_OPT_AZ + CC_AZ_DCR:
		case UP_OPT_AZ + CC_AZ_STREAM:
		case UP_OPT_AZ + CC_AZ_TENANT:
		case UP_OPT_AZ + CC_AZ_CLIENT_ID:
		case UP_OPT_AZ + CC_AZ_AUTHORITY:
			if (strchr(optarg, ',')) {
				cli_err("--metrics-azure-%s '%s': a value without ','",
					cc_az_names[opt - UP_OPT_AZ], optarg);
				return -1;
			}
			o->metrics_azure_ingest[opt - UP_OPT_AZ] = optarg;
			break;
		case 'Y': o->metrics_azure_log_type = optarg; break;
		case 'U': o->metrics_azure_url = optarg; break;
		case 'A':
			if (cc_split_addr(optarg, host, sizeof(host), &mport) < 0 || mport == 0 ||
			    mport > 65535 - MAX_OSTS - 2 ||
			    set(o->metrics_addr, sizeof(o->metrics_addr), "--metrics-addr", optarg) < 0) {
				cli_err("invalid --metrics-addr '%s': give HOST:PORT with a port from 1 "
					"to %d (the daemons take the next ports)", optarg,
					65535 - MAX_OSTS - 2);
				return -1;
			}
			break;
		case 'L':
		case 'K':
			if (lp_absolute(optarg, opt == 'L' ? o->metrics_log : o->metrics_azure_key_file,
					PATH_MAX) < 0) {
				cli_err("path too long: %s", optarg);
				return -1;
			}
			break;
		case 'T':
			if (parse_count("--metrics-interval", optarg, 1, 86400,
					&o->metrics_interval) < 0)
				return -1;
			break;
		case 'S':
			if (strcmp(optarg, "null") && strcmp(optarg, "integrity") &&
			    strcmp(optarg, "privacy")) {
				cli_err("invalid --sec-min '%s': use null, integrity or privacy",
					optarg);
				return -1;
			}
			str_copy(o->sec_min, optarg, sizeof(o->sec_min));
			break;
		case 'Q':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				cli_err("invalid --quota '%s': use on (count usage and enforce "
					"limits, the default) or off", optarg);
				return -1;
			}
			o->quota_off = strcmp(optarg, "off") == 0;
			break;
		case 'm':
			if (lp_absolute(optarg, o->mnt, sizeof(o->mnt)) < 0) {
				cli_err("path too long: %s", optarg);
				return -1;
			}
			break;
		case 'n':
			if (parse_count("--osts", optarg, 1, MAX_OSTS, &o->osts) < 0)
				return -1;
			break;
		case 's':
			if (parse_count("--oss", optarg, 1, MAX_OSTS, &o->oss) < 0)
				return -1;
			break;
		case 'p':
			if (parse_count("--port", optarg, 1, 65535 - MAX_OSTS - 1, &o->port) < 0)
				return -1;
			break;
		case 'f':
			if (!fsname_valid(optarg)) {
				cli_err("invalid --fsname '%s': use 1 to 8 of A-Z a-z 0-9 _ -",
					optarg);
				return -1;
			}
			str_copy(o->fsname, optarg, sizeof(o->fsname));
			break;
		default:
			cli_err("up: unknown option or missing value '%s'", argv[optind - 1]);
			cli_usage(stderr, "up");
			return -1;
		}
	}
	if (optind < argc) {
		cli_err("up: unexpected argument '%s'", argv[optind]);
		cli_usage(stderr, "up");
		return -1;
	}
	return 0;
}

/* DIR/up.options: what the first `nacre up` of DIR was given, one --name=value a line, so
 * that `nacre up --dir DIR` restarts the same cluster. */
static int write_options(const struct up_opts *o)
{
	char path[PATH_MAX];
	FILE *f;

	if (lp_path_join(path, sizeof(path), o->dir, "up.options") < 0 ||
	    !(f = fopen(path, "we")))
		return -1;
	fprintf(f, "--osts=%d\n--oss=%d\n--port=%d\n--fsname=%s\n--mount=%s\n", o->osts, o->oss,
		o->port, o->fsname, o->mnt);
	if (o->hsm_backend)
		fprintf(f, "--hsm-backend=%s\n", o->hsm_backend);
	if (o->hsm_endpoint)
		fprintf(f, "--hsm-endpoint=%s\n", o->hsm_endpoint);
	if (o->hsm_credentials)
		fprintf(f, "--hsm-credentials=%s\n", o->hsm_credentials);
	if (o->sec_min[0])
		fprintf(f, "--sec-min=%s\n", o->sec_min);
	if (o->quota_off)
		fprintf(f, "--quota=off\n");
	if (o->metrics_addr[0])
		fprintf(f, "--metrics-addr=%s\n", o->metrics_addr);
	if (o->metrics_log[0])
		fprintf(f, "--metrics-log=%s\n", o->metrics_log);
	if (o->metrics_interval)
		fprintf(f, "--metrics-interval=%d\n", o->metrics_interval);
	if (o->metrics_azure)
		fprintf(f, "--metrics-azure=%s\n--metrics-azure-key-file=%s\n", o->metrics_azure,
			o->metrics_azure_key_file);
	if (o->metrics_azure_log_type)
		fprintf(f, "--metrics-azure-log-type=%s\n", o->metrics_azure_log_type);
	if (o->metrics_azure_url)
		fprintf(f, "--metrics-azure-url=%s\n", o->metrics_azure_url);
	for (int i = 0; i < CC_AZ_N; i++)
		if (o->metrics_azure_ingest[i])
			fprintf(f, "--metrics-azure-%s=%s\n", cc_az_names[i],
				o->metrics_azure_ingest[i]);
	return fclose(f) == 0 ? 0 : -1;
}

/* Reads DIR/up.options into o (over the defaults; dir is kept). 0, -ENOENT if there is
 * none, -1 after saying what is wrong. The strings stay valid for the process. */
static int read_options(const char *dir, struct up_opts *o)
{
	static char lines[32][PATH_MAX + 32];
	char path[PATH_MAX], *argv[34];
	int argc = 0;
	const char *ignored = NULL;
	FILE *f;

	if (lp_path_join(path, sizeof(path), dir, "up.options") < 0)
		return -1;
	if (!(f = fopen(path, "re"))) {
		if (errno == ENOENT)
			return -ENOENT;
		cli_err("up: cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	argv[argc++] = "up";
	while (argc < 33 && fgets(lines[argc - 1], sizeof(lines[0]), f)) {
		lines[argc - 1][strcspn(lines[argc - 1], "\n")] = '\0';
		argv[argc] = lines[argc - 1];
		argc++;
	}
	fclose(f);
	argv[argc] = NULL;
	up_defaults(o);
	str_copy(o->dir, dir, sizeof(o->dir));
	if (parse_up(argc, argv, o, &ignored) < 0) {
		cli_err("%s is damaged: remove it and run nacre up with the options you want",
			path);
		return -1;
	}
	return 0;
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_az(const struct up_opts *a, const struct up_opts *b)
{
	for (int i = 0; i < CC_AZ_N; i++)
		if (!same_str(a->metrics_azure_ingest[i], b->metrics_azure_ingest[i]))
			return 0;
	return 1;
}

/* Whether two option sets make the same cluster (--hsm-import only matters at creation). */
static int same_cluster(const struct up_opts *a, const struct up_opts *b)
{
	return a->osts == b->osts && a->oss == b->oss && a->port == b->port &&
	       strcmp(a->fsname, b->fsname) == 0 && strcmp(a->mnt, b->mnt) == 0 &&
	       same_str(a->hsm_backend, b->hsm_backend) &&
	       same_str(a->hsm_endpoint, b->hsm_endpoint) &&
	       same_str(a->hsm_credentials, b->hsm_credentials) &&
	       strcmp(a->sec_min, b->sec_min) == 0 && a->quota_off == b->quota_off &&
	       strcmp(a->metrics_addr, b->metrics_addr) == 0 &&
	       strcmp(a->metrics_log, b->metrics_log) == 0 &&
	       a->metrics_interval == b->metrics_interval &&
	       same_str(a->metrics_azure, b->metrics_azure) &&
	       strcmp(a->metrics_azure_key_file, b->metrics_azure_key_file) == 0 &&
	       same_str(a->metrics_azure_log_type, b->metrics_azure_log_type) &&
	       same_str(a->metrics_azure_url, b->metrics_azure_url) && same_az(a, b);
}

/* --oss defaults to one per OST; the mount point to DIR/mnt. */
static int up_finish_opts(struct up_opts *o)
{
	if (!o->oss)
		o->oss = o->osts;
	if (o->oss > o->osts) {
		cli_err("--oss %d is more than --osts %d: every OSS needs at least one OST", o->oss,
			o->osts);
		return -1;
	}
	if (!o->mnt[0] && lp_path_join(o->mnt, sizeof(o->mnt), o->dir, "mnt") < 0) {
		cli_err("path too long: %s", o->dir);
		return -1;
	}
	return 0;
}

/* The roles the cluster of o runs, in start order, that l's table does not hold, joined by
 * ", " into out. Returns how many. */
static int missing_roles(const struct up_opts *o, const struct bu_local *l, char *out,
			 size_t len)
{
	int n = 0;
	size_t used = 0;

	out[0] = '\0';
	for (int j = -1; j <= o->oss + 1; j++) {
		char role[16];

		if (j < 0)
			snprintf(role, sizeof(role), "mds");
		else if (j < o->oss)
			snprintf(role, sizeof(role), "oss%d", j);
		else if (j == o->oss)
			snprintf(role, sizeof(role), "mount");
		else if (o->hsm_backend)
			snprintf(role, sizeof(role), "copytool");
		else
			continue;
		if (bu_local_has(l, role))
			continue;
		int w = snprintf(out + used, len - used, "%s%s", n ? ", " : "", role);
		if (w > 0 && (size_t)w < len - used)
			used += (size_t)w;
		n++;
	}
	return n;
}

/* Where the metrics are: each daemon's Prometheus address, the JSON logs, Log Analytics. */
static void print_metrics(const struct up_opts *o, const struct cc_conf *c)
{
	if (o->metrics_addr[0]) {
		printf("metrics: mds %s", c->mds_metrics_addr);
		for (int j = 0; j < c->noss; j++)
			printf(", oss%d %s", j, c->oss[j].metrics_addr);
		printf(", mount %s", c->clients[0].metrics_addr);
		if (c->narchives)
			printf(", copytool %s", c->copytool_metrics_addr);
		printf(" (http://HOST:PORT/metrics)\n");
	}
	if (o->metrics_log[0])
		printf("metrics logs: %s/%s-*.jsonl\n", o->metrics_log, o->fsname);
	if (o->metrics_azure)
		printf("metrics to Log Analytics workspace %s\n", o->metrics_azure);
	if (o->metrics_azure_ingest[CC_AZ_DCE])
		printf("metrics to Log Analytics (Logs Ingestion API) at %s, rule %s\n",
		       o->metrics_azure_ingest[CC_AZ_DCE], o->metrics_azure_ingest[CC_AZ_DCR]);
}

/* `nacre up` on a directory with a cluster.pids (asked: the options recorded there, then the
 * command line's): exits 1 if everything runs, or if asked changes the cluster; else starts
 * what does not run. */
static int up_again(const struct up_opts *asked, struct bu_local *l)
{
	static struct up_opts o;
	static struct cc_conf c;
	char missing[256], why[1024];
	int r = read_options(asked->dir, &o);

	if (r == -ENOENT)
		o = *asked; /* brought up before options were recorded: trust the command line */
	else if (r < 0 || up_finish_opts(&o) < 0)
		return 1;
	if (!same_cluster(asked, &o)) {
		cli_err("the cluster in %s runs with other options (see %s/up.options): run "
			"`nacre up --dir %s` alone to restart what is not running, or `nacre down "
			"--dir %s` first to change them",
			o.dir, o.dir, o.dir, o.dir);
		return 1;
	}
	if (up_conf(&o, &c) < 0)
		return 1;
	l->c = &c;
	bu_local_keep_live(l);
	if (missing_roles(&o, l, missing, sizeof(missing)) == 0) {
		if (bu_local_answers(l, why, sizeof(why)) == 0)
			cli_err("a cluster is already running in %s (mounted on %s): stop it with "
				"`nacre down --dir %s`",
				o.dir, o.mnt, o.dir);
		else
			cli_err("the cluster in %s runs but does not answer: %s; stop it with "
				"`nacre down --dir %s` and start it again",
				o.dir, why, o.dir);
		return 1;
	}
	printf("restarting what is not running in %s: %s\n", o.dir, missing);
	l->restart = 1;
	if (bu_up(&c, &bu_local_runner, l) < 0)
		return bu_local_abort(l);
	if (bu_local_write_pids(l) < 0) {
		cli_err("cannot write %s/cluster.pids: %s", o.dir, strerror(errno));
		return 1;
	}
	printf("nacre is up again in %s (restarted %s), mounted on %s\n", o.dir, missing, o.mnt);
	print_metrics(&o, &c);
	printf("stop it with: nacre down --dir %s\n", o.dir);
	return 0;
}

int cli_up(int argc, char **argv)
{
	static struct up_opts o;
	static struct cc_conf c;
	static struct bu_local l;
	const char *dir = NULL;
	char abs[PATH_MAX];

	up_defaults(&o);
	if (parse_up(argc, argv, &o, &dir) < 0)
		return 1;
	if (!dir) {
		cli_err("up: --dir DIR is required");
		cli_usage(stderr, "up");
		return 1;
	}
	if (lp_absolute(dir, abs, sizeof(abs)) < 0) {
		cli_err("path too long: %s", dir);
		return 1;
	}
	struct stat st;
	if (stat(abs, &st) == 0 && !S_ISDIR(st.st_mode)) {
		cli_err("up: --dir %s is not a directory: give a directory (it is made if missing)",
			abs);
		return 1;
	}
	/* a directory remembers its cluster: what was recorded, then what is asked now */
	int r = read_options(abs, &o);
	if (r == -ENOENT) {
		up_defaults(&o);
		str_copy(o.dir, abs, sizeof(o.dir));
	} else if (r < 0) {
		return 1;
	}
	if (parse_up(argc, argv, &o, &dir) < 0)
		return 1;
	if (!o.hsm_backend && (o.hsm_import || o.hsm_endpoint || o.hsm_credentials)) {
		cli_err("up: --hsm-import, --hsm-endpoint and --hsm-credentials need "
			"--hsm-backend");
		return 1;
	}
	if (!!o.metrics_azure != !!o.metrics_azure_key_file[0] ||
	    (!o.metrics_azure && (o.metrics_azure_log_type || o.metrics_azure_url))) {
		cli_err("up: --metrics-azure WORKSPACE needs --metrics-azure-key-file FILE, and "
			"--metrics-azure-log-type and --metrics-azure-url need --metrics-azure");
		return 1;
	}
	char why[256];
	if (cc_az_check(o.metrics_azure_ingest, o.metrics_azure != NULL, why, sizeof(why)) < 0) {
		cli_err("up: %s (--metrics-azure-NAME)", why);
		return 1;
	}
	if (up_finish_opts(&o) < 0)
		return 1;

	bu_local_init(&l, NULL, o.dir);
	r = bu_local_read_pids(&l);
	if (r == 0)
		return up_again(&o, &l);
	if (r != -ENOENT) {
		cli_err("cannot read %s/cluster.pids: %s", o.dir, strerror(-r));
		return 1;
	}
	if (up_conf(&o, &c) < 0)
		return 1;
	bu_local_init(&l, &c, o.dir);
	if (bu_up(&c, &bu_local_runner, &l) < 0)
		return bu_local_abort(&l);
	if (o.hsm_import && hsm_import_at_up(&l, &o) < 0)
		return bu_local_abort(&l);
	if (bu_local_write_pids(&l) < 0 || write_options(&o) < 0) {
		cli_err("cannot write %s/cluster.pids or up.options: %s", o.dir, strerror(errno));
		return bu_local_abort(&l);
	}
	printf("nacre is up: %d OST%s, mounted on %s\n", o.osts, o.osts == 1 ? "" : "s", o.mnt);
	print_metrics(&o, &c);
	printf("stop it with: nacre down --dir %s\n", o.dir);
	return 0;
}

/* The config of a running `nacre up`, from DIR/cluster.pids: what down walks. */
static void down_conf(const struct bu_local *l, struct cc_conf *c)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < l->nprocs; i++) {
		const char *role = l->procs[i].role;
		int64_t j;

		if (strncmp(role, "oss", 3) == 0 && parse_i64(role + 3, 0, CC_OSS_CAP - 1, &j) == 0 &&
		    j >= c->noss)
			c->noss = (int)j + 1;
		if (strcmp(role, "copytool") == 0) {
			c->ncopytools = c->narchives = 1;
			c->archives[0].id = 1;
		}
	}
	if (l->mnt[0]) {
		c->nclients = 1;
		str_copy(c->clients[0].mountpoint, l->mnt, sizeof(c->clients[0].mountpoint));
		str_copy(c->clients[0].options, UP_CLIENT_OPTIONS, sizeof(c->clients[0].options));
	}
}

int cli_down(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dir", required_argument, NULL, 'd'},
		{NULL, 0, NULL, 0},
	};
	static struct cc_conf c;
	static struct bu_local l;
	char abs[PATH_MAX];
	const char *dir = NULL;
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "d:", longopts, NULL)) != -1) {
		if (opt == 'd') {
			dir = optarg;
			continue;
		}
		cli_err("down: unknown option or missing value '%s'", argv[optind - 1]);
		cli_usage(stderr, "down");
		return 1;
	}
	if (!dir) {
		cli_err("down: --dir DIR is required (the directory given to `nacre up`)");
		cli_usage(stderr, "down");
		return 1;
	}
	if (lp_absolute(dir, abs, sizeof(abs)) < 0) {
		cli_err("path too long: %s", dir);
		return 1;
	}
	bu_local_init(&l, &c, abs);
	int r = bu_local_read_pids(&l);

	if (r == -ENOENT) {
		printf("no cluster is running in %s\n", abs);
		return 0;
	}
	if (r < 0) {
		cli_err("cannot read %s/cluster.pids: %s", abs, strerror(-r));
		return 1;
	}
	down_conf(&l, &c);
	int rc = bu_down(&c, &bu_local_runner, &l) < 0;

	bu_local_wait_stopped(&l);

	char path[PATH_MAX];

	if (rc == 0 && lp_path_join(path, sizeof(path), abs, "cluster.pids") == 0)
		unlink(path);
	return rc;
}
