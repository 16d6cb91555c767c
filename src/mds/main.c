/* main.c - nacre-mds: options, startup, signals, shutdown. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/daemon.h"
#include "common/fault.h"
#include "common/key.h"
#include "common/log.h"
#include "common/metrics_opts.h"
#include "common/net.h"
#include "common/util.h"
#include "mds/db.h"
#include "mds/destroy.h"
#include "mds/dispatch.h"
#include "mds/fid_grant.h"
#include "mds/hsm.h"
#include "mds/keys.h"
#include "mds/jobs.h"
#include "mds/mds_metrics.h"
#include "mds/probe.h"
#include "mds/lock.h"
#include "mds/lock_rpc.h"
#include "mds/mds.h"
#include "mds/notify.h"
#include "mds/lease.h"
#include "mds/changelog.h"
#include "mds/nodemap.h"
#include "mds/nodemap_serve.h"
#include "mds/ns.h"
#include "proto/wire.h"
#include "mds/open.h"
#include "mds/ost_wait.h"
#include "mds/oss_pool.h"
#include "mds/recovery.h"
#include "mds/serve.h"
#include "mds/session.h"
#include "mds/space.h"
#include "mds/targets.h"
#include "mds/syncer.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"
#include "proto/rpc.h"
#include "proto/sec.h"

struct opts {
	const char *fsname;
	const char *data;
	const char *listen;
	const char *key_file;
	struct daemon_log_opts log;
	int format;
	int workers;
	int lock_evict_ms;
	int evict_ms;
	int recovery_window_ms;
	int sync_interval_ms;
	int cap_lifetime_s;
	uint32_t fid_grant_width;
	int standby;
	int allow_faults;
	int sec_min; /* WIRE_SEC_*: --sec-min */
	uint64_t cl_max_records; /* --changelog-max-records */
	int quota_off;           /* --quota off */
	struct mds_hsm_conf hsm;
	struct metrics_opts metrics;
};

/* Set before signals are enabled; the handler only reads it. */
static struct rpc_server *volatile g_server;

static void on_signal(int sig)
{
	(void)sig;
	if (g_server)
		rpc_server_stop(g_server);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nacre-mds --fsname NAME --data DIR --listen HOST:PORT --key-file FILE\n"
		   "                 [--format] [--log FILE] [--log-level err|warn|info|debug]\n"
		   "                 [--workers N] [--metrics-addr HOST:PORT]\n"
		   "                 [--metrics-log FILE] [--metrics-interval SECS]\n"
		   "                 [--hsm-remove-on-unlink] [--hsm-max-active N]\n"
		   "                 [--hsm-timeout SECS] [--hsm-grace SECS]\n"
		   "                 [--hsm-archive-age SECS] [--hsm-release HIGH:LOW]\n"
		   "                 [--hsm-policy-period SECS] [--hsm-policy-max-files N]\n"
		   "                 [--lock-evict-timeout SECS]\n"
		   "                 [--evict-timeout SECS] [--recovery-window SECS] [--standby]\n"
		   "                 [--sync-interval SECS] [--cap-lifetime SECS]\n"
		   "                 [--allow-fault-injection] [--sec-min null|integrity|privacy]\n"
		   "                 [--changelog-max-records N] [--quota on|off]\n"
		   "                 [--fid-grant-width N]\n"
		   METRICS_USAGE);
}

enum {
	OPT_HSM_RM = 0x1100,
	OPT_HSM_MAX,
	OPT_HSM_TIMEOUT,
	OPT_HSM_GRACE,
	OPT_HSM_AGE,
	OPT_HSM_RELEASE,
	OPT_HSM_PERIOD,
	OPT_HSM_MAXFILES,
	OPT_LOCK_EVICT,
	OPT_EVICT,
	OPT_WINDOW,
	OPT_STANDBY,
	OPT_FAULTS,
	OPT_SYNC,
	OPT_CAP_LIFE,
	OPT_SEC_MIN,
	OPT_CL_MAX,
	OPT_QUOTA,
	OPT_FID_WIDTH,
};

/* --hsm-* options; returns 0, 1 if c is not one of them, -1 on a bad value. */
static int parse_hsm_opt(int c, struct mds_hsm_conf *h)
{
	int64_t v;
	switch (c) {
	case OPT_HSM_RM:
		h->remove_on_unlink = 1;
		return 0;
	case OPT_HSM_RELEASE: {
		char *colon = strchr(optarg, ':');
		int64_t lo;
		if (!colon || (*colon = 0, parse_i64(optarg, 1, 100, &v)) ||
		    parse_i64(colon + 1, 0, 99, &lo) || lo >= v) {
			fprintf(stderr, "nacre-mds: --hsm-release: expected HIGH:LOW percents with "
					"LOW < HIGH, e.g. 85:80\n");
			return -1;
		}
		h->release_high = (int)v;
		h->release_low = (int)lo;
		return 0;
	}
	case OPT_HSM_MAX:
	case OPT_HSM_TIMEOUT:
	case OPT_HSM_GRACE:
	case OPT_HSM_AGE:
	case OPT_HSM_PERIOD:
	case OPT_HSM_MAXFILES:
		if (parse_i64(optarg, 1, c == OPT_HSM_MAX ? 4096 : 100000000, &v)) {
			fprintf(stderr, "nacre-mds: bad number '%s' for an --hsm option\n", optarg);
			return -1;
		}
		if (c == OPT_HSM_MAX)
			h->max_active = (uint32_t)v;
		else if (c == OPT_HSM_TIMEOUT)
			h->timeout_s = (int)v;
		else if (c == OPT_HSM_GRACE)
			h->grace_s = (int)v;
		else if (c == OPT_HSM_AGE)
			h->archive_age_s = v;
		else if (c == OPT_HSM_MAXFILES)
			h->policy_max_files = (uint64_t)v;
		else
			h->policy_period_s = (int)v;
		return 0;
	default:
		return 1;
	}
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"fsname", required_argument, NULL, 'f'},  {"data", required_argument, NULL, 'd'},
		{"listen", required_argument, NULL, 'l'},  {"key-file", required_argument, NULL, 'k'},
		{"format", no_argument, NULL, 'F'},        DAEMON_LONGOPTS,
		{"workers", required_argument, NULL, 'w'}, {"help", no_argument, NULL, 'h'},
		METRICS_LONGOPTS,
		{"hsm-remove-on-unlink", no_argument, NULL, OPT_HSM_RM},
		{"hsm-max-active", required_argument, NULL, OPT_HSM_MAX},
		{"hsm-timeout", required_argument, NULL, OPT_HSM_TIMEOUT},
		{"hsm-grace", required_argument, NULL, OPT_HSM_GRACE},
		{"hsm-archive-age", required_argument, NULL, OPT_HSM_AGE},
		{"hsm-release", required_argument, NULL, OPT_HSM_RELEASE},
		{"hsm-policy-period", required_argument, NULL, OPT_HSM_PERIOD},
		{"hsm-policy-max-files", required_argument, NULL, OPT_HSM_MAXFILES},
		{"lock-evict-timeout", required_argument, NULL, OPT_LOCK_EVICT},
		{"evict-timeout", required_argument, NULL, OPT_EVICT},
		{"recovery-window", required_argument, NULL, OPT_WINDOW},
		{"standby", no_argument, NULL, OPT_STANDBY},
		{"allow-fault-injection", no_argument, NULL, OPT_FAULTS},
		{"sync-interval", required_argument, NULL, OPT_SYNC},
		{"cap-lifetime", required_argument, NULL, OPT_CAP_LIFE},
		{"sec-min", required_argument, NULL, OPT_SEC_MIN},
		{"changelog-max-records", required_argument, NULL, OPT_CL_MAX},
		{"quota", required_argument, NULL, OPT_QUOTA},
		{"fid-grant-width", required_argument, NULL, OPT_FID_WIDTH},
		{NULL, 0, NULL, 0}};
	int c;
	int64_t v;
	memset(o, 0, sizeof(*o));
	daemon_log_opts_init(&o->log);
	o->lock_evict_ms = MDS_LOCK_EVICT_MS_DEFAULT;
	o->cl_max_records = MDS_CL_DEFAULT_MAX_RECORDS;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': o->fsname = optarg; break;
		case 'd': o->data = optarg; break;
		case 'l': o->listen = optarg; break;
		case 'k': o->key_file = optarg; break;
		case 'F': o->format = 1; break;
		case 'w':
			if (parse_i64(optarg, 1, 1024, &v)) {
				fprintf(stderr, "nacre-mds: --workers %s: expected a number 1..1024\n",
					optarg);
				return -1;
			}
			o->workers = (int)v;
			break;
		case OPT_LOCK_EVICT:
		case OPT_EVICT:
		case OPT_WINDOW:
		case OPT_SYNC: {
			/* seconds, fractions allowed: tests use short ones */
			const char *name = c == OPT_LOCK_EVICT ? "--lock-evict-timeout"
					   : c == OPT_EVICT    ? "--evict-timeout"
					   : c == OPT_SYNC     ? "--sync-interval"
							       : "--recovery-window";
			char *end;
			double secs = strtod(optarg, &end);
			if (end == optarg || *end || !(secs >= 0.0 && secs <= 86400.0)) {
				fprintf(stderr, "nacre-mds: %s %s: expected seconds 0..86400, e.g. "
						"30 or 1.5\n", name, optarg);
				return -1;
			}
			int ms = (int)(secs * 1000.0);
			if (c == OPT_LOCK_EVICT)
				o->lock_evict_ms = ms;
			else if (c == OPT_EVICT)
				o->evict_ms = ms > 0 ? ms : 1;
			else if (c == OPT_SYNC)
				o->sync_interval_ms = ms > 0 ? ms : 1;
			else
				o->recovery_window_ms = ms > 0 ? ms : 1;
			break;
		}
		case OPT_CAP_LIFE: {
			int64_t life;
			if (parse_i64(optarg, 1, 7 * 86400, &life)) {
				fprintf(stderr, "nacre-mds: --cap-lifetime %s: expected seconds "
						"1..604800 (default 3600)\n", optarg);
				return -1;
			}
			o->cap_lifetime_s = (int)life;
			break;
		}
		case OPT_FID_WIDTH:
			if (parse_i64(optarg, MDS_FID_GRANT_WIDTH_MIN, WIRE_FID_GRANT_WIDTH_MAX, &v)) {
				fprintf(stderr, "nacre-mds: --fid-grant-width %s: expected FIDs per "
						"client sequence, %u..%u (default %u)\n", optarg,
					MDS_FID_GRANT_WIDTH_MIN, WIRE_FID_GRANT_WIDTH_MAX,
					MDS_FID_GRANT_WIDTH_DEFAULT);
				return -1;
			}
			o->fid_grant_width = (uint32_t)v;
			break;
		case OPT_CL_MAX:
			if (parse_i64(optarg, 0, INT64_MAX, &v)) {
				fprintf(stderr, "nacre-mds: --changelog-max-records %s: expected a "
						"number of records (0 = no cap; default %llu)\n",
					optarg, (unsigned long long)MDS_CL_DEFAULT_MAX_RECORDS);
				return -1;
			}
			o->cl_max_records = (uint64_t)v;
			break;
		case OPT_QUOTA:
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "nacre-mds: --quota %s: expected on (count usage and "
						"enforce limits, the default) or off\n", optarg);
				return -1;
			}
			o->quota_off = !strcmp(optarg, "off");
			break;
		case OPT_STANDBY: o->standby = 1; break;
		case OPT_FAULTS: o->allow_faults = 1; break;
		case OPT_SEC_MIN:
			if (sec_flavour_parse(optarg, &o->sec_min)) {
				fprintf(stderr, "nacre-mds: --sec-min %s: expected null, integrity or "
						"privacy\n", optarg);
				return -1;
			}
			break;
		case OPT_HSM_RM:
		case OPT_HSM_MAX:
		case OPT_HSM_TIMEOUT:
		case OPT_HSM_GRACE:
		case OPT_HSM_AGE:
		case OPT_HSM_RELEASE:
		case OPT_HSM_PERIOD:
		case OPT_HSM_MAXFILES:
			if (parse_hsm_opt(c, &o->hsm))
				return -1;
			break;
		case 'h': usage(stdout); exit(0);
		default: {
			char why[256];
			int r = daemon_log_opts_handle(&o->log, c, optarg, why, sizeof(why));
			if (r == 0)
				r = metrics_opts_handle(&o->metrics, c, optarg, why, sizeof(why));
			if (r > 0)
				break;
			if (r < 0)
				fprintf(stderr, "nacre-mds: %s\n", why);
			else
				usage(stderr);
			return -1;
		}
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nacre-mds: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -1;
	}
	const char *missing = !o->fsname ? "--fsname" : !o->data ? "--data"
			      : !o->listen ? "--listen" : !o->key_file ? "--key-file" : NULL;
	if (missing) {
		fprintf(stderr, "nacre-mds: %s is required\n", missing);
		usage(stderr);
		return -1;
	}
	if (!fsname_valid(o->fsname)) {
		fprintf(stderr, "nacre-mds: --fsname '%s' is not valid: use 1..8 of A-Z a-z 0-9 _ -\n",
			o->fsname);
		return -1;
	}
	char why[512];
	if (metrics_opts_check(&o->metrics, why, sizeof(why)) < 0) {
		fprintf(stderr, "nacre-mds: %s\n", why);
		return -1;
	}
	return 0;
}

/* One MDS serves an MDT at a time: the serving process holds flock on the MDT directory
 * (a standby started on shared storage waits for it). Returns the locked fd, -1 with
 * nothing held when the directory does not exist yet (a --format creates it), or -2 after
 * printing why. */
static int lock_mdt(const char *dir, int standby)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? -1 : (fprintf(stderr, "nacre-mds: --data %s: %s\n", dir,
						       strerror(errno)),
					       -2);
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		if (standby) /* the line a bring-up waits for, either way */
			fprintf(stderr, "nacre-mds: standby: no MDS serves %s: serving it\n", dir);
		return fd;
	}
	if (errno != EWOULDBLOCK) {
		fprintf(stderr, "nacre-mds: cannot lock %s: %s\n", dir, strerror(errno));
		close(fd);
		return -2;
	}
	if (!standby) {
		fprintf(stderr, "nacre-mds: another nacre-mds serves the MDT in %s (it holds its "
				"lock); stop it first, or start this one with --standby to take over "
				"when it ends\n", dir);
		close(fd);
		return -2;
	}
	fprintf(stderr, "nacre-mds: standby: waiting for the MDS serving %s to end\n", dir);
	LOG_INFO("mds", "standby: waiting for the lock on %s", dir);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "nacre-mds: cannot lock %s: %s\n", dir, strerror(errno));
			close(fd);
			return -2;
		}
	}
	LOG_INFO("mds", "standby: the MDT in %s is ours now: taking over", dir);
	return fd;
}

int main(int argc, char **argv)
{
	struct opts o;
	char err[512];
	struct mds m;
	struct nacre_key key;
	struct rpc_server *srv = NULL;
	struct mds_syncer *syncer = NULL;
	struct mds_probe *probe = NULL;
	struct mds_lock_reaper *lock_reaper = NULL;
	int rc, status = 1;

	if (parse_opts(argc, argv, &o))
		return 1;
	if (daemon_log_start(&o.log, "mds", err, sizeof(err))) {
		fprintf(stderr, "nacre-mds: %s\n", err);
		return 1;
	}
	if (key_load(o.key_file, &key, err, sizeof(err))) {
		fprintf(stderr, "nacre-mds: --key-file: %s\n", err);
		return 1;
	}
	if (key.role != KEY_ROLE_SERVER) {
		fprintf(stderr, "nacre-mds: --key-file %s is the %s key %s; the MDS needs the "
			"cluster key (nacre up writes DIR/cluster.key)\n", o.key_file,
			key_role_name(key.role), key.name);
		return 1;
	}
	if (fault_init_env(wire_opcode_by_name, err, sizeof(err))) {
		fprintf(stderr, "nacre-mds: NACRE_FAULT: %s\n", err);
		return 1;
	}
	int mdt_lock = lock_mdt(o.data, o.standby);
	if (mdt_lock == -2)
		return 1;

	memset(&m, 0, sizeof(m));
	/* bind first: a busy port must not leave a freshly formatted MDT behind */
	char server_name[32];
	snprintf(server_name, sizeof(server_name), "%s-MDT0000", o.fsname);
	struct rpc_server_conf conf = {.listen_addr = o.listen,
				       .fsname = o.fsname,
				       .server_name = server_name,
				       .key = &key,
				       .nworkers = o.workers,
				       .handler = mds_serve,
				       .on_disconnect = mds_on_disconnect,
				       .runs_inline = mds_runs_inline,
				       .on_connect = mds_serve_connect,
				       .on_close = mds_serve_close,
				       .last_committed = mds_serve_last_committed,
				       .allow_fault_set = o.allow_faults,
				       .sec_min = o.sec_min,
				       .sec_min_for = mds_nodemap_sec_min_for,
				       .key_check = mds_keys_check,
				       .arg = &m};
	if (rpc_server_create(&conf, &srv, err, sizeof(err))) {
		fprintf(stderr, "nacre-mds: --listen: %s\n", err);
		return 1;
	}

	str_copy(m.fsname, o.fsname, sizeof(m.fsname));
	m.data_dir = o.data;
	m.cap_lifetime_s = (uint32_t)o.cap_lifetime_s;
	m.fid_grant_width = o.fid_grant_width;
	m.sec_min = o.sec_min;
	if (cap_key_derive(&key, &m.capkey)) {
		fprintf(stderr, "nacre-mds: cannot derive the capability key from --key-file %s\n",
			o.key_file);
		rpc_server_destroy(srv);
		return 1;
	}
	if (mds_db_open(o.data, o.fsname, (o.format ? MDS_DB_FORMAT : 0) |
			(o.quota_off ? MDS_DB_QUOTA_OFF : 0), &m.db, err, sizeof(err))) {
		fprintf(stderr, "nacre-mds: --data: %s\n", err);
		rpc_server_destroy(srv);
		return 1;
	}
	if (mdt_lock == -1 && (mdt_lock = lock_mdt(o.data, 0)) < 0) {
		rpc_server_destroy(srv);
		mds_db_close(m.db);
		return 1;
	}
	if ((rc = mds_space_create(m.db, o.data, &m.space)) ||
	    (rc = mds_writer_create(m.db, &m.writer)) || (rc = mds_targets_create(&m.targets)) ||
	    (rc = mds_open_table_create(&m.open)) ||
	    (rc = mds_locks_create(o.lock_evict_ms, mds_lock_answer, NULL, &m.locks)) ||
	    (rc = mds_notify_create(&m.notify)) || (rc = mds_leases_create(&m, &m.leases)) ||
	    (rc = mds_oss_pool_create(o.fsname, &key, &m.oss)) ||
	    (rc = mds_keys_create(&m, &m.keys)) ||
	    (rc = mds_changelog_create(&m, o.cl_max_records, &m.changelog))) {
		fprintf(stderr, "nacre-mds: cannot start: %s\n", nacre_strerror(rc));
		goto out;
	}
	mds_writer_set_space(m.writer, m.space);
	/* a new file system squashes root except for its admin clients (docs/security.md) */
	if ((rc = nodemap_create(&m, &m.nodemap)) == 0 && o.format)
		nodemap_format_defaults(m.nodemap); /* a failure is logged, and not fatal: the
						     * namespace is formatted, rules can follow */
	if (rc) {
		fprintf(stderr, "nacre-mds: cannot load the nodemap rules from %s: %s\n", o.data,
			nacre_strerror(rc));
		goto out;
	}
	if ((rc = mds_targets_load(&m)) || (rc = mds_ost_wait_create(&m, 0, &m.ost_wait))) {
		fprintf(stderr, "nacre-mds: cannot load the target registry from %s: %s\n", o.data,
			nacre_strerror(rc));
		goto out;
	}
	if ((rc = mds_writer_sync(m.writer)) || (rc = mds_sessions_create(&m, o.evict_ms, &m.sessions)) ||
	    (rc = mds_recovery_create(&m, o.recovery_window_ms, &m.recovery))) {
		fprintf(stderr, "nacre-mds: cannot load the client sessions from %s: %s\n", o.data,
			nacre_strerror(rc));
		goto out;
	}
	/* Unlinked files still open when the MDS stopped live until recovery ends: their
	 * clients re-open them. With no client to wait for they go now. */
	if (!mds_recovery_active(m.recovery) && (rc = mds_ns_reap_orphans(&m)))
		LOG_WARN("mds", "orphan cleanup failed: %s", nacre_strerror(rc));
	if ((rc = mds_syncer_start(m.writer, o.sync_interval_ms, &syncer))) {
		fprintf(stderr, "nacre-mds: cannot start the metadata sync thread: %s\n",
			nacre_strerror(rc));
		goto out;
	}
	if ((rc = mds_lock_reaper_start(m.locks, &lock_reaper))) {
		fprintf(stderr, "nacre-mds: cannot start the lock eviction thread: %s\n",
			nacre_strerror(rc));
		goto out;
	}
	if ((rc = mds_destroyer_start(&m, &m.destroyer))) {
		fprintf(stderr, "nacre-mds: cannot start the destroy thread: %s\n",
			nacre_strerror(rc));
		goto out;
	}
	if ((rc = mds_probe_start(&m, &probe))) {
		fprintf(stderr, "nacre-mds: cannot start the OSS probe thread: %s\n",
			nacre_strerror(rc));
		goto out;
	}
	if ((rc = mds_hsm_start(&m, &o.hsm, &m.hsm))) {
		fprintf(stderr, "nacre-mds: cannot start the HSM coordinator: %s\n",
			nacre_strerror(rc));
		goto out;
	}

	mds_metrics_register(&m);
	if ((rc = mds_jobs_create(&m, MDS_JOBS_MAX, MDS_JOB_CLEANUP_S))) {
		fprintf(stderr, "nacre-mds: cannot start: %s\n", nacre_strerror(rc));
		goto out;
	}
	if ((rc = metrics_opts_start(&o.metrics, "mds", err, sizeof(err)))) {
		fprintf(stderr, "nacre-mds: %s\n", err);
		goto out;
	}

	g_server = srv;
	m.server = srv;
	daemon_stop_signals(on_signal);

	char host[256];
	uint16_t port = 0;
	if (net_parse_addr(o.listen, NACRE_DEFAULT_PORT_MDS, host, sizeof(host), &port))
		str_copy(host, o.listen, sizeof(host));
	int alen = snprintf(m.addr, sizeof(m.addr), "%s:%u", host, rpc_server_port(srv));
	if (alen < 0 || (size_t)alen >= sizeof(m.addr))
		m.addr[0] = 0; /* too long to report; TARGETS shows no MDT address */
	fprintf(stderr, "nacre-mds: serving %s on %s:%u\n", o.fsname, host, rpc_server_port(srv));
	LOG_INFO("mds", "serving %s on %s:%u from %s", o.fsname, host, rpc_server_port(srv),
		 o.data);
	rc = rpc_server_run(srv);
	if (rc)
		LOG_ERR("mds", "server loop failed: %s", nacre_strerror(rc));
	else
		status = 0;
	LOG_INFO("mds", "stopping");

out:
	g_server = NULL;
	metrics_opts_stop();
	rpc_server_destroy(srv);
	mds_recovery_destroy(m.recovery);
	mds_ost_wait_destroy(m.ost_wait);
	mds_leases_stop(m.leases); /* its timer evicts sessions */
	mds_sessions_destroy(m.sessions); /* which drop their leases */
	mds_leases_destroy(m.leases);
	nodemap_destroy(m.nodemap);
	mds_hsm_stop(m.hsm);
	mds_destroyer_stop(m.destroyer);
	mds_probe_stop(probe); /* before the pool it pings through */
	mds_syncer_stop(syncer); /* it syncs through the writer */
	mds_writer_destroy(m.writer);
	mds_oss_pool_destroy(m.oss);
	mds_open_table_destroy(m.open);
	mds_lock_reaper_stop(lock_reaper);
	mds_locks_destroy(m.locks);
	mds_notify_destroy(m.notify);
	mds_targets_destroy(m.targets);
	mds_space_destroy(m.space);
	mds_keys_destroy(m.keys);
	mds_changelog_destroy(m.changelog);
	mds_jobs_destroy(&m);
	mds_db_close(m.db);
	cap_key_fini(&m.capkey);
	if (mdt_lock >= 0)
		close(mdt_lock);
	return status;
}
