/* options.c - nacre-mount's command line: the arguments of each way it is run (nacre-mount,
 * mount.nacre, mount.fuse.nacre, --upgrade), the -o option list with its checks, and the
 * usage text (see options.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobid.h"
#include "common/metrics_opts.h"
#include "common/util.h"
#include "fuse/fz.h"
#include "fuse/options.h"

/* Options mount(8), fstab and systemd add that mean nothing to nacre. */
static const char *const ignored_opts[] = {
	"rw", "defaults", "auto", "noauto", "user", "users", "nouser", "owner", "group",
	"_netdev", "nofail", "allow_other", "silent", "loud", "nosymfollow",
	/* atime variants libfuse 3.14 does not pass on; nacre-mount applies them (atime.c) */
	"diratime", "nodiratime", "relatime", "norelatime", "strictatime", "nostrictatime",
	"lazytime", "nolazytime",
};

/* The kernel's FUSE options, which nacre-mount sets itself: /proc/self/mounts shows them
 * for every nacre mount and mount(8) passes them back at a remount. Ignored, value or not. */
static const char *const fuse_kernel_opts[] = {
	"user_id", "group_id", "default_permissions", "max_read", "blksize", "rootmode", "fd",
};

/* Generic VFS flags the kernel applies to the FUSE mount itself (libfuse knows these). */
static const char *const vfs_opts[] = {
	"suid", "nosuid", "dev", "nodev", "exec", "noexec", "atime", "noatime",
	"sync", "async", "dirsync",
};

/* The atime options, as mount(8) passes them; the last one given wins. */
static void atime_opt(struct fz_args *a, const char *opt)
{
	if (!strcmp(opt, "noatime"))
		a->atime_mode = FZ_ATIME_NONE;
	else if (!strcmp(opt, "relatime") || !strcmp(opt, "nostrictatime") ||
		 (!strcmp(opt, "atime") && a->atime_mode == FZ_ATIME_NONE))
		a->atime_mode = FZ_ATIME_REL;
	else if (!strcmp(opt, "strictatime") || !strcmp(opt, "norelatime"))
		a->atime_mode = FZ_ATIME_STRICT;
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s SPEC MOUNTPOINT [-o opt[,opt...]] [-f] [-d]\n"
		"  SPEC: host[:port]:/fsname[/subdir] or host@tcp[:port]:/fsname[/subdir]\n"
		"  -f                foreground (do not daemonize)\n"
		"  -d                foreground, with a trace of every FUSE request\n"
		"  -o ro             read-only mount\n"
		"  -o remount[,ro|rw,nosuid,nodev,noexec,noatime...]  change a running mount's\n"
		"                    flags (mount -o remount runs mount.fuse.nacre); the session\n"
		"                    stays; other options keep their values (--upgrade -o changes\n"
		"                    them)\n"
		"  -o suid,dev       (as mount.fuse) the default for root through mount.nacre;\n"
		"                    nacre-mount's own default is nosuid,nodev\n"
		"  -o key_file=PATH  cluster key or client key (default $NACRE_KEY_FILE)\n"
		"  -o sec=null|integrity|privacy  wire security: every frame authenticated\n"
		"                    (integrity), also encrypted (privacy); default: the least\n"
		"                    the servers require\n"
		"  -o client_name=NAME  the name the MDS knows this client by (nodemaps match it;\n"
		"                    default $NACRE_CLIENT_NAME, else the hostname)\n"
		"  -o attr_timeout=SECS, entry_timeout=SECS   kernel cache times (default 1.0)\n"
		"  -o relatime|strictatime|noatime   atime on read: when older than mtime, ctime\n"
		"                    or a day (the default), at every open's first read, never\n"
		"  -o timeout=SECS   per-request limit while a server answers (default 30)\n"
		"  -o recovery_timeout=SECS   how long calls wait for a server that is down or\n"
		"                    restarting before they fail with EIO (default 300)\n"
		"  -o max_rpc_size=BYTES       bytes per OST RPC (K/M suffix; default 4M)\n"
		"  -o max_rpcs_in_flight=N     background RPCs per OST (default 8)\n"
		"  -o max_dirty_mb=N           write-behind MiB per client (default 256; 0 = off)\n"
		"  -o readahead_max_mb=N       readahead window MiB per file (default 64; 0 = off)\n"
		"  -o metrics_addr=HOST:PORT   serve Prometheus metrics at http://HOST:PORT/metrics\n"
		"  -o metrics_log=FILE, metrics_interval=SECS   JSON metrics lines every SECS\n"
		"  -o metrics_azure_dce=URL, metrics_azure_dcr=ID, metrics_azure_stream=,\n"
		"     metrics_azure_tenant=ID, metrics_azure_client_id=ID,\n"
		"     metrics_azure_secret_file=FILE, metrics_azure_authority=URL   post them to\n"
		"     Azure Log Analytics' Logs Ingestion API (as the daemons' --metrics-azure-*)\n"
		"  -o metrics_azure=WORKSPACE, metrics_azure_key_file=FILE, metrics_azure_log_type=,\n"
		"     metrics_azure_url=   ... or to its retired HTTP Data Collector API;\n"
		"     metrics_azure_batch=, metrics_azure_queue= for both\n"
		"  -o jobid=procname_uid|disable|VAR  the job id requests carry (changelog j=,\n"
		"                    job_stats): the caller's command name and uid, \"cp.1000\"\n"
		"                    (the default), or the value of the caller's environment\n"
		"                    variable VAR (SLURM_JOB_ID, PBS_JOBID; Lustre's jobid_var),\n"
		"                    the command name and uid for a caller without it\n"
		"  -o io_uring=on|off  FUSE requests through io_uring where the kernel offers it\n"
		"                    (Linux 6.14+, /sys/module/fuse/parameters/enable_uring; the\n"
		"                    default), else /dev/fuse; a mount on io_uring has no --upgrade\n"
		"  -o wb=on|off      metadata write-back (docs/writeback.md): this mount takes a\n"
		"                    lease on each directory it makes and answers lookups in it\n"
		"                    without the MDS until another client looks (default off)\n"
		"  -o wb_journal=async|sync|off  with wb=on, each change is written to a journal\n"
		"                    before it is answered (async, the default: a crash of this\n"
		"                    process loses nothing; sync: also fdatasynced); the next\n"
		"                    mount on this mount point sends what it holds\n"
		"  -o wb_journal_dir=DIR  the journal's directory (default\n"
		"                    /var/lib/nacre/wb/<mount point, escaped>)\n"
		"  -o flock          cluster-wide fcntl and flock locks (the default)\n"
		"  -o localflock     locks seen by this client only;  -o noflock: locks fail ENOSYS\n"
		"  -o debug          debug logging\n"
		"  -o overmount      mount even where a nacre mount is already (hiding it)\n"
		"  -o nosubtype      the kernel shows the mount's type as fuse, not fuse.nacre\n"
		"                    (xfstests' FSTYP=fuse compares it); mount -o remount of it\n"
		"                    then runs mount.fuse, which cannot remount it\n"
		"  -o control_socket=PATH      socket --upgrade talks to (default "
		"/run/nacre/mount-MAJOR:MINOR.sock)\n"
		"   or: %s --upgrade MOUNTPOINT [-o opt,...] [-f]   a new nacre-mount takes over the\n"
		"       running one's session: open files stay open (options default to the old ones)\n"
		"   or: %s --fluid-config [PATH] [--dry-run]   mount from Fluid's config.json\n",
		prog, prog, prog);
}

static int in_list(const char *s, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return 1;
	return 0;
}

/* Parses SECS for option name into *out: a finite number in [min, 1 day]. */
static int parse_secs(const struct fz_args *a, const char *name, const char *val, double min,
		      double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(val, &end);
	if (errno || end == val || *end || !isfinite(d) || d < min || d > 86400.0) {
		fprintf(stderr, "%s: bad value '%s' for option %s: give seconds, e.g. %s=1.5\n",
			a->prog, val, name, name);
		return -1;
	}
	*out = d;
	return 0;
}

/* Parses an integer option in [min, max] with an optional K/M/G suffix (if suffix). */
static int parse_int(const struct fz_args *a, const char *name, const char *val, long long min,
		     long long max, int suffix, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(val, &end, 10);
	if (suffix && end != val && *end && !end[1]) {
		long long mul = *end == 'K' || *end == 'k' ? 1024LL
				: *end == 'M' || *end == 'm' ? 1024LL * 1024
				: *end == 'G' || *end == 'g' ? 1024LL * 1024 * 1024 : 0;
		if (mul && v <= max / mul) {
			v *= mul;
			end++;
		}
	}
	if (errno || end == val || *end || v < min || v > max) {
		fprintf(stderr, "%s: bad value '%s' for option %s: give a number from %lld to %lld\n",
			a->prog, val, name, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* Parses one comma-separated -o list, in place (opts stays allocated: key_file points in). */
static int parse_opts(struct fz_args *a, char *opts)
{
	char *opt = opts;

	while (opt) {
		char *comma = strchr(opt, ',');
		char *val;

		if (comma)
			*comma = '\0';
		val = strchr(opt, '=');
		if (val)
			*val++ = '\0';
		if (!val)
			atime_opt(a, opt); /* and on: noatime and atime are VFS flags too */
		if (*opt == '\0') {
			/* empty item from ",," */
		} else if (!val && strcmp(opt, "ro") == 0) {
			a->ro = 1;
		} else if (!val && strcmp(opt, "rw") == 0) {
			a->ro = 0;
		} else if (!val && strcmp(opt, "remount") == 0) {
			a->remount = 1;
		} else if (!val && strcmp(opt, "bind") == 0) {
			a->bind = 1;
		} else if (!val && strcmp(opt, "flock") == 0) {
			a->lock_mode = FZ_LOCK_CLUSTER;
		} else if (!val && strcmp(opt, "localflock") == 0) {
			a->lock_mode = FZ_LOCK_LOCAL;
		} else if (!val && strcmp(opt, "noflock") == 0) {
			a->lock_mode = FZ_LOCK_NONE;
		} else if (!val && strcmp(opt, "debug") == 0) {
			a->debug = 1;
		} else if (!val && strcmp(opt, "overmount") == 0) {
			a->overmount = 1;
		} else if (!val && strcmp(opt, "nosubtype") == 0) {
			a->nosubtype = 1;
		} else if (val && strcmp(opt, "key_file") == 0) {
			a->key_file = val;
		} else if (val && strcmp(opt, "sec") == 0) {
			if (strcmp(val, "null") && strcmp(val, "integrity") && strcmp(val, "privacy")) {
				fprintf(stderr, "%s: bad value '%s' for option sec: give null, "
						"integrity or privacy\n", a->prog, val);
				return -1;
			}
			a->sec = val;
		} else if (val && strcmp(opt, "client_name") == 0) {
			if (!val[0] || strlen(val) > 255) {
				fprintf(stderr, "%s: client_name=%s: give 1 to 255 bytes\n", a->prog,
					val);
				return -1;
			}
			a->client_name = val;
		} else if (val && strcmp(opt, "control_socket") == 0) {
			if (val[0] != '/' || strlen(val) >= 108) {
				fprintf(stderr, "%s: control_socket=%s: give an absolute path shorter "
						"than 108 bytes\n", a->prog, val);
				return -1;
			}
			a->control_socket = val;
		} else if (val && (strcmp(opt, "jobid") == 0 || strcmp(opt, "jobid_var") == 0)) {
			if (strcmp(val, "procname_uid") && strcmp(val, "disable") &&
			    !jobid_var_valid(val)) {
				fprintf(stderr, "%s: %s=%s: use procname_uid (the command name "
						"and uid, the default), disable, or the name of an "
						"environment variable such as SLURM_JOB_ID\n", a->prog,
					opt, val);
				return -1;
			}
			a->no_jobid = strcmp(val, "disable") == 0;
			a->jobid_var = a->no_jobid || !strcmp(val, "procname_uid") ? NULL : val;
		} else if (val && strcmp(opt, "io_uring") == 0) {
			if (strcmp(val, "on") && strcmp(val, "off")) {
				fprintf(stderr, "%s: io_uring=%s: use on (the default: FUSE over "
						"io_uring where the kernel offers it) or off\n", a->prog, val);
				return -1;
			}
			a->no_io_uring = strcmp(val, "off") == 0;
		} else if (val && strcmp(opt, "wb") == 0) {
			if (strcmp(val, "on") && strcmp(val, "off")) {
				fprintf(stderr, "%s: wb=%s: use on (metadata write-back: lookups in "
						"directories this mount made answered here) or off (the "
						"default)\n", a->prog, val);
				return -1;
			}
			a->wb = strcmp(val, "on") == 0;
		} else if (val && strcmp(opt, "wb_journal") == 0) {
			if (strcmp(val, "async") && strcmp(val, "sync") && strcmp(val, "off")) {
				fprintf(stderr, "%s: wb_journal=%s: use async (the default: each "
						"write-back change written to the journal before it is "
						"answered), sync (also fdatasynced) or off\n", a->prog, val);
				return -1;
			}
			a->wb_journal = strcmp(val, "async") == 0  ? NACRE_WB_JOURNAL_ASYNC
					: strcmp(val, "sync") == 0 ? NACRE_WB_JOURNAL_SYNC
								   : NACRE_WB_JOURNAL_OFF;
		} else if (val && strcmp(opt, "wb_journal_dir") == 0) {
			if (val[0] != '/') {
				fprintf(stderr, "%s: wb_journal_dir=%s: give an absolute path (a local "
						"directory for this mount's write-back journal)\n",
					a->prog, val);
				return -1;
			}
			a->wb_journal_dir = val;
		} else if (val && strcmp(opt, "attr_timeout") == 0) {
			if (parse_secs(a, opt, val, 0.0, &a->attr_timeout) < 0)
				return -1;
		} else if (val && strcmp(opt, "entry_timeout") == 0) {
			if (parse_secs(a, opt, val, 0.0, &a->entry_timeout) < 0)
				return -1;
		} else if (val && strncmp(opt, "metrics_", 8) == 0) {
			char why[160];
			int r = metrics_opts_handle_kv(&a->metrics, opt, val, why, sizeof(why));

			if (r < 0) {
				fprintf(stderr, "%s: %s\n", a->prog, why);
				return -1;
			}
			if (r == 0) {
				fprintf(stderr, "%s: unknown option -o %s\n", a->prog, opt);
				return -1;
			}
		} else if (val && strcmp(opt, "recovery_timeout") == 0) {
			if (parse_secs(a, opt, val, 0.001, &a->recovery_timeout) < 0)
				return -1;
		} else if (val && strcmp(opt, "timeout") == 0) {
			if (parse_secs(a, opt, val, 0.001, &a->timeout) < 0)
				return -1;
		} else if (val && strcmp(opt, "max_rpc_size") == 0) {
			long long v;
			if (parse_int(a, opt, val, 65536, 16LL * 1024 * 1024, 1, &v) < 0)
				return -1;
			a->max_rpc_size = (unsigned)v;
		} else if (val && strcmp(opt, "max_rpcs_in_flight") == 0) {
			long long v;
			if (parse_int(a, opt, val, 1, 256, 0, &v) < 0)
				return -1;
			a->max_rpcs_in_flight = (int)v;
		} else if (val && strcmp(opt, "max_dirty_mb") == 0) {
			long long v;
			if (parse_int(a, opt, val, 0, 1 << 20, 0, &v) < 0)
				return -1;
			a->max_dirty_mb = v ? (int)v : -1;
		} else if (val && strcmp(opt, "readahead_max_mb") == 0) {
			long long v;
			if (parse_int(a, opt, val, 0, 1 << 16, 0, &v) < 0)
				return -1;
			a->readahead_max_mb = v ? (int)v : -1;
		} else if (!val && in_list(opt, ignored_opts, ARRAY_SIZE(ignored_opts))) {
			/* generic, nothing to do */
		} else if (in_list(opt, fuse_kernel_opts, ARRAY_SIZE(fuse_kernel_opts))) {
			/* what the kernel shows of the running mount, nothing to change */
		} else if (strncmp(opt, "x-", 2) == 0 || strcmp(opt, "comment") == 0) {
			/* fstab annotations for other tools (x-systemd.*) */
		} else if (!val && in_list(opt, vfs_opts, ARRAY_SIZE(vfs_opts))) {
			size_t len = strlen(a->vfs_flags);

			if (len + strlen(opt) + 2 > sizeof(a->vfs_flags)) {
				fprintf(stderr, "%s: too many mount options\n", a->prog);
				return -1;
			}
			snprintf(a->vfs_flags + len, sizeof(a->vfs_flags) - len, ",%s", opt);
		} else {
			fprintf(stderr,
				"%s: unknown mount option '%s%s%s' (known: ro, key_file=PATH, sec=FLAVOUR, "
				"client_name=NAME, attr_timeout=SECS, entry_timeout=SECS, timeout=SECS, recovery_timeout=SECS, "
				"max_rpc_size=BYTES, "
				"max_rpcs_in_flight=N, max_dirty_mb=N, readahead_max_mb=N, jobid=, io_uring=, wb=, "
				"wb_journal=, wb_journal_dir=, "
				"flock, localflock, noflock, debug, overmount, nosubtype, control_socket=PATH, remount)\n",
				a->prog, opt, val ? "=" : "", val ? val : "");
			return -1;
		}
		opt = comma ? comma + 1 : NULL;
	}
	return 0;
}

/* Takes an -o argument: copies it (freed at exit by the OS) and parses it. */
int fz_take_opts(struct fz_args *a, const char *s)
{
	size_t len = strlen(a->opts_raw);
	char *copy = strdup(s);

	if (!copy) {
		fprintf(stderr, "%s: out of memory\n", a->prog);
		return -1;
	}
	/* kept as given, for the process an upgrade starts */
	if (len + strlen(s) + 2 > sizeof(a->opts_raw)) {
		fprintf(stderr, "%s: -o options too long\n", a->prog);
		free(copy);
		return -1;
	}
	snprintf(a->opts_raw + len, sizeof(a->opts_raw) - len, "%s%s", len ? "," : "", s);
	return parse_opts(a, copy);
}

/* Returns 0 to go on, 1 to exit 0 (help), -1 to exit 1. */
int fz_parse_args(struct fz_args *a, int argc, char **argv)
{
	int i, npos = 0;

	for (i = 1; i < argc; i++) {
		const char *s = argv[i];

		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
			usage(stdout, a->prog);
			return 1;
		} else if (strcmp(s, "--upgrade") == 0 && !a->helper) {
			a->upgrade = 1;
		} else if (strcmp(s, "-o") == 0) {
			if (++i >= argc) {
				fprintf(stderr, "%s: -o needs a list of options\n", a->prog);
				return -1;
			}
			if (fz_take_opts(a, argv[i]) < 0)
				return -1;
		} else if (strncmp(s, "-o", 2) == 0) {
			if (fz_take_opts(a, s + 2) < 0)
				return -1;
		} else if (strcmp(s, "-f") == 0) {
			/* mount(8) passes -f for "fake"; for us it is foreground. */
			if (a->helper)
				a->fake = 1;
			else
				a->foreground = 1;
		} else if (strcmp(s, "-d") == 0) {
			a->fuse_debug = 1;
			a->foreground = 1;
			a->debug = 1;
		} else if (a->helper && (strcmp(s, "-s") == 0 || strcmp(s, "-n") == 0 ||
					 strcmp(s, "-v") == 0)) {
			/* sloppy, no mtab, verbose: nothing to do */
		} else if (a->helper && (strcmp(s, "-t") == 0 || strcmp(s, "-N") == 0)) {
			if (++i >= argc) {
				fprintf(stderr, "%s: %s needs a value\n", a->prog, s);
				return -1;
			}
			if (s[1] == 'N') {
				fprintf(stderr, "%s: -N (mount namespace) is not supported\n", a->prog);
				return -1;
			}
		} else if (s[0] == '-' && s[1] != '\0') {
			fprintf(stderr, "%s: unknown argument '%s'\n", a->prog, s);
			usage(stderr, a->prog);
			return -1;
		} else if (npos == 0 && a->upgrade) {
			a->mountpoint = s;
			npos += 2;
		} else if (npos == 0) {
			a->spec = s;
			npos++;
		} else if (npos == 1) {
			a->mountpoint = s;
			npos++;
		} else {
			fprintf(stderr, "%s: unexpected argument '%s'\n", a->prog, s);
			return -1;
		}
	}
	if (a->upgrade && a->spec) {
		if (a->mountpoint) {
			fprintf(stderr, "%s: --upgrade takes only the MOUNTPOINT (the SPEC comes from "
					"the running process)\n", a->prog);
			return -1;
		}
		a->mountpoint = a->spec; /* "MOUNTPOINT --upgrade" */
		a->spec = NULL;
		npos = 2;
	}
	if (a->remount && npos == 1) {
		a->mountpoint = a->spec; /* "-o remount MOUNTPOINT": the SPEC is the mount's */
		a->spec = NULL;
		npos = 2;
	}
	if (npos < 2) {
		fprintf(stderr, "%s: %s\n", a->prog,
			a->upgrade ? "--upgrade needs the MOUNTPOINT of a running nacre mount"
			: npos == 0 ? "missing SPEC and MOUNTPOINT" : "missing MOUNTPOINT");
		usage(stderr, a->prog);
		return -1;
	}
	char why[512];
	if (metrics_opts_check(&a->metrics, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: %s\n", a->prog, why);
		return -1;
	}
	return 0;
}
