/* main.c - nacre-oss: serves OSTs (directories of stripe objects) and registers them with
 * the MDS. Options per docs/CONTRACTS.md. The rpc server's worker pool is the disk pool:
 * handlers pread/pwrite directly. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/daemon.h"
#include "common/fault.h"
#include "common/cap.h"
#include "common/key.h"
#include "common/log.h"
#include "common/metrics_opts.h"
#include "common/net.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "nacre/nacre_types.h"
#include "oss/dispatch.h"
#include "oss/jobs.h"
#include "oss/oss_metrics.h"
#include "oss/keys.h"
#include "oss/register.h"
#include "oss/target.h"
#include "proto/rpc.h"
#include "proto/sec.h"

#define OSS_MAX_OSTS 64
#define OSS_DEFAULT_WORKERS 16
#define OSS_MAX_WORKERS 1024

struct ost_arg {
	uint32_t index;
	const char *dir;
};

struct opts {
	const char *fsname;
	const char *mds;
	const char *listen;
	const char *failover; /* the partner serving our OSTs when we are gone, or NULL */
	const char *key_file;
	struct daemon_log_opts log;
	int format;
	int standby;
	int workers;
	int direct_io; /* --direct-io: whole-block I/O with O_DIRECT */
	int allow_faults;
	int sec_min; /* WIRE_SEC_*: --sec-min */
	struct ost_arg osts[OSS_MAX_OSTS];
	int nosts;
	struct metrics_opts metrics;
};

static struct rpc_server *g_server; /* set before the handlers are installed */
static int g_log_to_file;            /* log lines go to --log FILE, not stderr */

static void on_signal(int sig)
{
	(void)sig;
	if (g_server)
		rpc_server_stop(g_server);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nacre-oss --fsname NAME --mds HOST[:PORT][,HOST[:PORT]...]\n"
		"                 --listen HOST[:PORT]\n"
		"                 --key-file FILE --ost IDX:DIR [--ost IDX:DIR ...]\n"
		"                 [--format] [--log FILE] [--log-level err|warn|info|debug]\n"
		"                 [--workers N] [--metrics-addr HOST:PORT] [--metrics-log FILE]\n"
		"                 [--failover HOST:PORT] [--standby] [--allow-fault-injection]\n"
		"                 [--sec-min null|integrity|privacy] [--direct-io on|off]\n"
		"Serves object storage targets (OSTs) of the nacre file system NAME.\n"
		"  --fsname NAME     file system name (1-8 of A-Z a-z 0-9 _ -)\n"
		"  --mds HOST:PORT   the MDS to register with (default port %d); its failover\n"
		"                    partners after commas, tried in turn\n"
		"  --listen HOST:PORT address to serve on, registered with the MDS for clients;\n"
		"                    must be a concrete address (port 0 = any free port, default %d)\n"
		"  --key-file FILE   the cluster key (nacre up writes DIR/cluster.key)\n"
		"  --ost IDX:DIR     serve OST index IDX from directory DIR (repeatable)\n"
		"  --format          create an OST in each empty or missing DIR\n"
		"  --failover HOST:PORT  the partner serving these OSTs when this OSS is gone:\n"
		"                    registered with ours, clients try it in turn\n"
		"  --standby         wait until the OSS serving these OSTs (shared storage)\n"
		"                    ends, then take them over\n"
		"  --workers N       I/O worker threads (default %d)\n"
		"  --allow-fault-injection  let `nacre fault set` arm fault points here (tests)\n"
		"  --sec-min FLAVOUR the least wire security a peer gets (default null): a client\n"
		"                    that asks less is refused (docs/security.md)\n"
		"  --direct-io on|off  reads and writes of whole 4 KiB blocks (64 KiB and more)\n"
		"                    bypass the page cache with O_DIRECT, but reads of what it\n"
		"                    holds (default on; off where the file system refuses it)\n"
		METRICS_USAGE,
		NACRE_DEFAULT_PORT_MDS, NACRE_DEFAULT_PORT_OSS, OSS_DEFAULT_WORKERS);
}

/* Startup errors: to stderr (what the operator sees) and to the log file if there is one. */
__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "nacre-oss: %s\n", msg);
	if (g_log_to_file)
		LOG_ERR("main", "%s", msg);
}

static int parse_ost(const char *s, struct opts *o)
{
	const char *colon = strchr(s, ':');
	char idx[16];
	int64_t v;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(idx) || !colon[1]) {
		fail("bad --ost \"%s\": expected IDX:DIR, e.g. --ost 0:/data/ost0", s);
		return -EINVAL;
	}
	memcpy(idx, s, (size_t)(colon - s));
	idx[colon - s] = '\0';
	if (parse_i64(idx, 0, 0xffff, &v) != 0) {
		fail("bad OST index \"%s\" in --ost %s: expected 0..65535", idx, s);
		return -EINVAL;
	}
	if (o->nosts == OSS_MAX_OSTS) {
		fail("too many --ost options: one nacre-oss serves at most %d OSTs",
		     OSS_MAX_OSTS);
		return -EINVAL;
	}
	for (int i = 0; i < o->nosts; i++) {
		if (o->osts[i].index == (uint32_t)v) {
			fail("OST index %u is given twice in --ost", (unsigned)v);
			return -EINVAL;
		}
		if (strcmp(o->osts[i].dir, colon + 1) == 0) {
			fail("directory %s is given twice in --ost", colon + 1);
			return -EINVAL;
		}
	}
	o->osts[o->nosts].index = (uint32_t)v;
	o->osts[o->nosts].dir = colon + 1;
	o->nosts++;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	enum { O_FSNAME = 256, O_MDS, O_LISTEN, O_KEY, O_OST, O_FORMAT, O_WORKERS, O_FAULTS,
	       O_HELP, O_STANDBY, O_FAILOVER, O_SEC_MIN, O_DIRECT_IO };
	static const struct option lopts[] = {
		{ "fsname", required_argument, NULL, O_FSNAME },
		{ "mds", required_argument, NULL, O_MDS },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "key-file", required_argument, NULL, O_KEY },
		{ "ost", required_argument, NULL, O_OST },
		{ "format", no_argument, NULL, O_FORMAT },
		{ "standby", no_argument, NULL, O_STANDBY },
		{ "failover", required_argument, NULL, O_FAILOVER },
		DAEMON_LONGOPTS,
		{ "workers", required_argument, NULL, O_WORKERS },
		{ "allow-fault-injection", no_argument, NULL, O_FAULTS },
		{ "help", no_argument, NULL, O_HELP },
		{ "sec-min", required_argument, NULL, O_SEC_MIN },
		{ "direct-io", required_argument, NULL, O_DIRECT_IO },
		METRICS_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	daemon_log_opts_init(&o->log);
	o->workers = OSS_DEFAULT_WORKERS;
	o->direct_io = 1;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case O_FSNAME: o->fsname = optarg; break;
		case O_MDS: o->mds = optarg; break;
		case O_LISTEN: o->listen = optarg; break;
		case O_KEY: o->key_file = optarg; break;
		case O_FORMAT: o->format = 1; break;
		case O_FAULTS: o->allow_faults = 1; break;
		case O_STANDBY: o->standby = 1; break;
		case O_FAILOVER: o->failover = optarg; break;
		case O_SEC_MIN:
			if (sec_flavour_parse(optarg, &o->sec_min)) {
				fail("bad --sec-min \"%s\": expected null, integrity or privacy",
				     optarg);
				return -EINVAL;
			}
			break;
		case O_DIRECT_IO:
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fail("bad --direct-io \"%s\": expected on or off", optarg);
				return -EINVAL;
			}
			o->direct_io = strcmp(optarg, "on") == 0;
			break;
		case O_OST:
			if (parse_ost(optarg, o))
				return -EINVAL;
			break;
		case O_WORKERS:
			if (parse_i64(optarg, 1, OSS_MAX_WORKERS, &v)) {
				fail("bad --workers \"%s\": expected 1..%d", optarg, OSS_MAX_WORKERS);
				return -EINVAL;
			}
			o->workers = (int)v;
			break;
		case O_HELP:
		case 'h':
			usage(stdout);
			exit(0);
		default: {
			char why[256];
			int r = daemon_log_opts_handle(&o->log, c, optarg, why, sizeof(why));
			if (r == 0)
				r = metrics_opts_handle(&o->metrics, c, optarg, why, sizeof(why));
			if (r > 0)
				break;
			if (r < 0)
				fail("%s", why);
			else
				usage(stderr);
			return -EINVAL;
		}
		}
	}
	if (optind < argc) {
		fail("unexpected argument \"%s\" (see --help)", argv[optind]);
		return -EINVAL;
	}
	if (!o->fsname) {
		fail("missing --fsname: name the file system these OSTs belong to");
		return -EINVAL;
	}
	if (!fsname_valid(o->fsname)) {
		fail("bad --fsname \"%s\": 1 to %d characters of A-Z a-z 0-9 _ -", o->fsname,
		     NACRE_FSNAME_MAX);
		return -EINVAL;
	}
	if (!o->mds) {
		fail("missing --mds HOST:PORT: the MDS this OSS registers with");
		return -EINVAL;
	}
	if (!o->listen) {
		fail("missing --listen HOST:PORT: the address clients reach this OSS at");
		return -EINVAL;
	}
	if (!o->key_file) {
		fail("missing --key-file: every nacre process needs the cluster key "
		     "(nacre up writes DIR/cluster.key)");
		return -EINVAL;
	}
	if (o->nosts == 0) {
		fail("no --ost IDX:DIR given: name at least one OST to serve");
		return -EINVAL;
	}
	char why[512];
	if (metrics_opts_check(&o->metrics, why, sizeof(why)) < 0) {
		fail("%s", why);
		return -EINVAL;
	}
	return 0;
}

/* Writes "host:port" (with brackets for IPv6) to out. */
static int join_addr(const char *host, uint16_t port, char *out, size_t len)
{
	int n = strchr(host, ':') ? snprintf(out, len, "[%s]:%u", host, port)
				  : snprintf(out, len, "%s:%u", host, port);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* "a[:port],b[:port]" (--mds, --failover): each address with its port (port when none),
 * joined by ',' into out (at most NACRE_FAILOVER_MAX). 0 or -EINVAL. */
static int parse_addrs(const char *list, uint16_t dflt, char *out, size_t len)
{
	const char *p = list;
	size_t used = 0;
	int n = 0;

	out[0] = '\0';
	while (*p) {
		char one[NACRE_ADDR_MAX + 1], host[256], addr[NACRE_ADDR_MAX + 1];
		size_t seg = strcspn(p, ",");
		uint16_t port;

		if (seg == 0 || seg >= sizeof(one) || ++n > NACRE_FAILOVER_MAX)
			return -EINVAL;
		memcpy(one, p, seg);
		one[seg] = '\0';
		if (net_parse_addr(one, dflt, host, sizeof(host), &port) ||
		    join_addr(host, port, addr, sizeof(addr)))
			return -EINVAL;
		int w = snprintf(out + used, len - used, "%s%s", used ? "," : "", addr);
		if (w < 0 || (size_t)w >= len - used)
			return -EINVAL;
		used += (size_t)w;
		p += seg;
		if (*p == ',' && !*++p)
			return -EINVAL; /* a trailing comma */
	}
	return n ? 0 : -EINVAL;
}

/* --standby: waits until no other process holds the superblock lock of our OSTs (their
 * server ended: the OSTs are on storage this host reaches too). The lock is let go again
 * and taken for good by oss_target_open: of two standbys of one OST the loser exits saying
 * the OST is served. Prints the line a bring-up waits for. */
static void wait_for_osts(const struct opts *o)
{
	int waited = 0;

	for (int i = 0; i < o->nosts; i++) {
		char path[PATH_MAX];
		int fd;

		snprintf(path, sizeof(path), "%s/%s", o->osts[i].dir, OSS_SB_NAME);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* no OST there: oss_target_open says what to do */
		if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
			if (!waited++)
				fprintf(stderr, "nacre-oss: standby: waiting for the OSS "
						"serving %s to end\n", o->osts[i].dir);
			while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
				;
		}
		close(fd);
	}
	fprintf(stderr, waited ? "nacre-oss: standby: taking the OSTs over\n"
			       : "nacre-oss: standby: no OSS serves these OSTs: serving them\n");
}

/* Appends ",PARTNER" to the address registered for our OSTs: clients reach the OSTs at
 * either, in turn (as they reach an MDS and its failover partners). 1 if it fits. */
static int add_failover(char *addr, size_t len, const char *partner)
{
	size_t n = strlen(addr);
	int w = snprintf(addr + n, len - n, ",%s", partner);

	if (w < 0 || (size_t)w >= len - n) {
		addr[n] = '\0';
		return 0;
	}
	return 1;
}

static int wildcard_host(const char *h)
{
	return !h[0] || !strcmp(h, "0.0.0.0") || !strcmp(h, "::") || !strcmp(h, "*");
}

int main(int argc, char **argv)
{
	struct opts o;
	struct nacre_key key;
	struct oss_target *targets[OSS_MAX_OSTS];
	int ntargets = 0, rc, status = 1;
	char err[1024], host[256], listen_addr[NACRE_ADDR_MAX + 1], mds_addr[NACRE_ADDR_LIST_MAX];
	char reg_addr[NACRE_ADDR_MAX + 1];
	uint16_t port;
	struct rpc_server *srv = NULL;
	struct oss_register *reg = NULL;
	struct cap_key ctx_capkey = {0};
	struct oss_keys keys = {0};

	if (parse_opts(argc, argv, &o))
		return 1;
	if (daemon_log_start(&o.log, "oss", err, sizeof(err))) {
		fail("%s", err);
		return 1;
	}
	g_log_to_file = o.log.file != NULL;

	if (net_parse_addr(o.listen, NACRE_DEFAULT_PORT_OSS, host, sizeof(host), &port) ||
	    join_addr(host, port, listen_addr, sizeof(listen_addr))) {
		fail("bad --listen \"%s\": expected HOST:PORT", o.listen);
		return 1;
	}
	if (wildcard_host(host)) {
		fail("--listen %s is not an address clients can reach: nacre-oss registers it "
		     "with the MDS, so listen on a concrete host name or IP (e.g. --listen "
		     "10.0.0.5:%u)", o.listen, port);
		return 1;
	}
	if (parse_addrs(o.mds, NACRE_DEFAULT_PORT_MDS, mds_addr, sizeof(mds_addr))) {
		fail("bad --mds \"%s\": expected HOST:PORT, or up to %d of them joined by ',' "
		     "(an MDS and its failover partners)", o.mds, NACRE_FAILOVER_MAX);
		return 1;
	}
	char partner[NACRE_ADDR_LIST_MAX];
	if (o.failover &&
	    (parse_addrs(o.failover, NACRE_DEFAULT_PORT_OSS, partner, sizeof(partner)) ||
	     strchr(partner, ','))) {
		fail("bad --failover \"%s\": expected the HOST:PORT the partner OSS listens on",
		     o.failover);
		return 1;
	}
	if (o.failover)
		o.failover = partner;
	if ((rc = key_load(o.key_file, &key, err, sizeof(err))) != 0) {
		fail("%s: check --key-file", err);
		return 1;
	}
	if (fault_init_env(wire_opcode_by_name, err, sizeof(err))) {
		fail("NACRE_FAULT: %s", err);
		return 1;
	}

	if (o.standby)
		wait_for_osts(&o);
	for (int i = 0; i < o.nosts; i++) {
		rc = oss_target_open(o.osts[i].dir, o.fsname, o.osts[i].index, o.format,
				     &targets[ntargets], err, sizeof(err));
		if (rc) {
			fail("%s", err);
			goto out_close;
		}
		atomic_store(&targets[ntargets]->direct_io, o.direct_io);
		ntargets++;
	}

	struct oss_ctx ctx = { .targets = targets, .ntargets = ntargets };
	const char *nb = getenv("NACRE_OSS_NO_DESTROY_BATCH");
	ctx.no_destroy_batch = nb && !strcmp(nb, "1");
	const char *ns = getenv("NACRE_OSS_NO_SPACE_OPS");
	ctx.no_space_ops = ns && !strcmp(ns, "1");
	if (cap_key_derive(&key, &ctx_capkey)) {
		fail("cannot derive the capability key from --key-file %s (OpenSSL has no HKDF?)",
		     o.key_file);
		goto out_close;
	}
	ctx.capkey = ctx_capkey; /* shares its digest states, freed at the end */
	if (oss_keys_init(&keys, &ctx)) {
		fail("out of memory");
		goto out_close;
	}
	char server_name[NACRE_NAME_MAX + 1];
	snprintf(server_name, sizeof(server_name), "oss@%s", listen_addr);
	struct rpc_server_conf sc = {
		.listen_addr = listen_addr,
		.fsname = o.fsname,
		.server_name = server_name,
		.key = &key,
		.nworkers = o.workers,
		.handler = oss_keys_serve,
		.allow_fault_set = o.allow_faults,
		.sec_min = o.sec_min,
		.key_check = oss_keys_check,
		.arg = &keys,
	};
	rc = rpc_server_create(&sc, &srv, err, sizeof(err));
	if (rc) {
		fail("%s (--listen %s)", err, o.listen);
		goto out_close;
	}
	/* Port 0 means "any": register the port actually bound. */
	if (join_addr(host, rpc_server_port(srv), reg_addr, sizeof(reg_addr)) ||
	    (o.failover && !add_failover(reg_addr, sizeof(reg_addr), o.failover))) {
		fail("--listen %s%s%s is too long for a registered address (max %d bytes)",
		     o.listen, o.failover ? " with --failover " : "", o.failover ? o.failover : "",
		     NACRE_ADDR_MAX);
		goto out_close;
	}

	g_server = srv;
	keys.server = srv;
	daemon_stop_signals(on_signal);

	struct oss_register_conf rc_conf = {
		.mds_addr = mds_addr,
		.fsname = o.fsname,
		.addr = reg_addr,
		.key = &key,
		.keys = &keys,
		.targets = targets,
		.ntargets = ntargets,
	};
	rc = oss_register_create(&rc_conf, &reg);
	if (rc) {
		fail("cannot set up the connection to MDS %s: %s", mds_addr, nacre_strerror(rc));
		goto out_close;
	}
	/* The first attempt decides whether the MDS refuses us outright (wrong key or file
	 * system): then exit. An unreachable MDS is normal at cluster start: keep trying. */
	rc = oss_register_first(reg, err, sizeof(err));
	if (rc) {
		fail("%s", err);
		goto out_close;
	}
	rc = oss_register_start(reg);
	if (rc) {
		fail("cannot start the registration thread: %s", strerror(-rc));
		goto out_close;
	}
	oss_metrics_register(targets, ntargets);
	if ((rc = oss_jobs_create(targets, ntargets))) {
		fail("cannot start: %s", strerror(-rc));
		goto out_close;
	}
	rc = metrics_opts_start(&o.metrics, "oss", err, sizeof(err));
	if (rc) {
		fail("%s", err);
		goto out_close;
	}

	char names[OSS_MAX_OSTS * 9 + 1] = "";
	size_t pos = 0;
	for (int i = 0; i < ntargets && pos < sizeof(names); i++)
		pos += (size_t)snprintf(names + pos, sizeof(names) - pos, "%s%s", i ? "," : "",
					targets[i]->name);
	fprintf(stderr, "nacre-oss: serving %s %s on %s\n", o.fsname, names, reg_addr);
	LOG_INFO("main", "serving %s %s on %s, MDS %s, %d workers", o.fsname, names, reg_addr,
		 mds_addr, o.workers);

	rc = rpc_server_run(srv);
	if (rc)
		LOG_ERR("main", "server loop failed: %s", nacre_strerror(rc));
	else
		LOG_INFO("main", "stopping");
	status = rc ? 1 : 0;

out_close:
	metrics_opts_stop();
	oss_register_destroy(reg);
	g_server = NULL;
	rpc_server_destroy(srv);
	oss_keys_fini(&keys);
	oss_jobs_destroy(targets, ntargets);
	for (int i = 0; i < ntargets; i++)
		oss_target_close(targets[i]);
	cap_key_fini(&ctx_capkey);
	memset(&key, 0, sizeof(key));
	return status;
}
