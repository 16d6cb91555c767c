/* main.c - nacre-mount (also mount.nacre and mount.fuse.nacre): arguments, mounting,
 * daemonizing, the FUSE loop.
 *
 *   nacre-mount SPEC MOUNTPOINT [-o opt,...] [-f] [-d]
 *   mount.nacre SPEC MOUNTPOINT [-sfnv] [-o opts]       (as mount(8) runs it)
 *   mount.fuse.nacre SPEC MOUNTPOINT -o remount,... -t fuse.nacre
 *                                   (mount -o remount of a mount whose type is fuse.nacre)
 *   nacre-mount --upgrade MOUNTPOINT [-o opt,...] [-f]  (take over a running mount)
 *
 * The file system is contacted first, and the FUSE mount made only once that worked, so a
 * failed mount leaves nothing behind and mount(8) returns only when the mount works.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* syslog.h's priority macros clash with log.h's logging macros; only openlog's flags and
 * syslog() are used here, with log.h's levels (which are syslog's values). */
#include <syslog.h>
#undef LOG_ERR
#undef LOG_INFO
#undef LOG_DEBUG

#include "common/log.h"
#include "common/metrics_opts.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "fuse/fz.h"
#include "fuse/fluid.h"
#include "fuse/fz_metrics.h"

#define MAX_IDLE_THREADS 16
/* libfuse's default is 10; every F_SETLKW waiting on the MDS holds one thread, and the
 * mount must still serve the unlock that ends the wait. */
#define MAX_THREADS 64
#define FUSE_OPTS_MAX 2048

struct args {
	const char *prog;       /* name for messages */
	int helper;             /* run as mount.nacre: -f means "fake" */
	const char *spec;
	const char *mountpoint;
	int foreground;
	int fuse_debug;         /* -d: libfuse traces every request */
	int fake;               /* mount -f: check everything, mount nothing */
	int ro;
	int remount;            /* -o remount: change the flags of the running mount */
	int bind;               /* -o bind with remount: the flags of this mount point only */
	int overmount;          /* -o overmount: mount over a nacre mount already there */
	int nosubtype;          /* -o nosubtype: the kernel shows type fuse, not fuse.nacre */
	int debug;              /* -o debug: our own debug log */
	const char *key_file;   /* points into an -o string kept for the process lifetime */
	const char *sec;        /* sec=FLAVOUR, likewise; NULL: the server's minimum */
	const char *client_name; /* the same; NULL = libnacre's default */
	double attr_timeout;
	double entry_timeout;
	double timeout;
	double recovery_timeout;
	/* data path tunables, as struct nacre_mount_opts (0 = default, -1 = off) */
	unsigned max_rpc_size;
	int max_rpcs_in_flight;
	int max_dirty_mb;
	int readahead_max_mb;
	int lock_mode;          /* flock / localflock / noflock: FZ_LOCK_* */
	int atime_mode;         /* relatime / strictatime / noatime: FZ_ATIME_* */
	int no_jobid;           /* jobid=disable: requests carry no job id */
	int no_io_uring;        /* io_uring=off: serve through /dev/fuse only */
	struct metrics_opts metrics; /* metrics_addr=, metrics_log=, metrics_interval=,
				      * metrics_azure*= */
	char vfs_flags[256];    /* mount flags passed on to the kernel mount (",noexec"...) */
	int upgrade;            /* --upgrade: take over the mount's running process */
	const char *control_socket; /* control_socket=PATH; NULL: /run/nacre/mount-DEV.sock */
	char opts_raw[8192];    /* every -o list as given, for a successor */
};

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
static void atime_opt(struct args *a, const char *opt)
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
		"  -o metrics_azure=WORKSPACE, metrics_azure_key_file=FILE, metrics_azure_log_type=,\n"
		"     metrics_azure_url=, metrics_azure_batch=, metrics_azure_queue=   post them to\n"
		"     Azure Log Analytics (as the daemons' --metrics-azure* options)\n"
		"  -o jobid=procname_uid|disable  the job id requests carry (changelog j=):\n"
		"                    the caller's command name and uid, \"cp.1000\" (the default)\n"
		"  -o io_uring=on|off  FUSE requests through io_uring where the kernel offers it\n"
		"                    (Linux 6.14+, /sys/module/fuse/parameters/enable_uring; the\n"
		"                    default), else /dev/fuse; a mount on io_uring has no --upgrade\n"
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
static int parse_secs(const struct args *a, const char *name, const char *val, double min,
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
static int parse_int(const struct args *a, const char *name, const char *val, long long min,
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
static int parse_opts(struct args *a, char *opts)
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
		} else if (val && strcmp(opt, "jobid") == 0) {
			if (strcmp(val, "procname_uid") && strcmp(val, "disable")) {
				fprintf(stderr, "%s: jobid=%s: use procname_uid (the command name "
						"and uid, the default) or disable\n", a->prog, val);
				return -1;
			}
			a->no_jobid = strcmp(val, "disable") == 0;
		} else if (val && strcmp(opt, "io_uring") == 0) {
			if (strcmp(val, "on") && strcmp(val, "off")) {
				fprintf(stderr, "%s: io_uring=%s: use on (the default: FUSE over "
						"io_uring where the kernel offers it) or off\n", a->prog, val);
				return -1;
			}
			a->no_io_uring = strcmp(val, "off") == 0;
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
				"max_rpcs_in_flight=N, max_dirty_mb=N, readahead_max_mb=N, jobid=, io_uring=, "
				"flock, localflock, noflock, debug, overmount, nosubtype, control_socket=PATH, remount)\n",
				a->prog, opt, val ? "=" : "", val ? val : "");
			return -1;
		}
		opt = comma ? comma + 1 : NULL;
	}
	return 0;
}

/* Takes an -o argument: copies it (freed at exit by the OS) and parses it. */
static int take_opts(struct args *a, const char *s)
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
static int parse_args(struct args *a, int argc, char **argv)
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
			if (take_opts(a, argv[i]) < 0)
				return -1;
		} else if (strncmp(s, "-o", 2) == 0) {
			if (take_opts(a, s + 2) < 0)
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

/* fsname=SPEC inside a libfuse -o list: commas and backslashes need a backslash. */
static int append_escaped(char *buf, size_t len, const char *s)
{
	size_t pos = strlen(buf);

	for (; *s; s++) {
		if (*s == ',' || *s == '\\') {
			if (pos + 1 >= len)
				return -1;
			buf[pos++] = '\\';
		}
		if (pos + 1 >= len)
			return -1;
		buf[pos++] = *s;
	}
	buf[pos] = '\0';
	return 0;
}

static void nacre_log(int level, const char *line, void *arg)
{
	(void)arg;
	LOG_AT(level, "nacre", "%s", line);
}

static void syslog_sink(int level, const char *line, void *arg)
{
	(void)arg;
	syslog(level, "%s", line);
}

/* Until a daemon detaches: everything to syslog, and warnings and errors also to the
 * terminal of whoever mounted (mount(8) prints nothing on success, and xfstests compares
 * what a test prints with what it expects). */
static void starting_sink(int level, const char *line, void *arg)
{
	(void)arg;
	syslog(level, "%s", line);
	if (level <= LOG_LVL_WARN)
		fprintf(stderr, "%s\n", line);
}

/* Tells the waiting parent how the mount went (0 = mounted) and lets it exit. */
static void notify_parent(int *fd, unsigned char status)
{
	ssize_t n;

	if (*fd < 0)
		return;
	do {
		n = write(*fd, &status, 1);
	} while (n < 0 && errno == EINTR);
	close(*fd);
	*fd = -1;
}

/* The daemon's remaining setup once the parent is gone: its own session, no cwd pinned,
 * no terminal, logs to syslog. */
static void detach(void)
{
	int fd;

	if (setsid() < 0)
		LOG_WARN("main", "setsid: %s", strerror(errno));
	if (chdir("/") < 0)
		LOG_WARN("main", "chdir /: %s", strerror(errno));
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	log_set_sink(syslog_sink, NULL);
}

/* Unmounts mnt for a process that received its session from another (libfuse knows no
 * mount point then, so fuse_session_unmount would do nothing). As libfuse: a lazy unmount
 * as root, else fusermount3. */
static void unmount_taken(const char *mnt)
{
	pid_t pid;
	int ws;

	if (umount2(mnt, MNT_DETACH) == 0)
		return;
	if (errno != EPERM) {
		LOG_WARN("main", "cannot unmount %s: %s", mnt, strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-q", "-z", "--", mnt, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		LOG_WARN("main", "cannot unmount %s (fusermount3 failed)", mnt);
}

/* After a takeover: once the old process is gone, its metrics port and control socket are
 * free for this one. Runs beside the FUSE loop, which stops it through stop. */
struct finisher {
	const struct args *a;
	struct fz_mount *m;
	struct fz_takeover *t;
	const struct fz_upgrade_conf *conf;
	pthread_t main_thread;
	pthread_t thread;
	int started;
	int stop; /* atomic */
};

static int finisher_stopped(struct finisher *f)
{
	return __atomic_load_n(&f->stop, __ATOMIC_ACQUIRE);
}

static void *finisher_main(void *arg)
{
	struct finisher *f = arg;
	char err[512];
	int rc = -1;

	/* the old process closes its MDS connection and exits right after our ack */
	for (int waited = 0; waited < 60000 && !finisher_stopped(f); waited += 200)
		fz_takeover_wait_old(f->t, 200);
	if (finisher_stopped(f))
		return NULL;
	/* its port may linger a moment after it exited */
	for (int i = 0; i < 50 && !finisher_stopped(f); i++) {
		err[0] = '\0';
		rc = metrics_opts_start(&f->a->metrics, "mount", err, sizeof(err));
		if (rc == 0)
			break;
		struct timespec ts = {0, 200 * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (rc < 0)
		LOG_ERR("main", "metrics after the upgrade: %s", err);
	if (!finisher_stopped(f)) {
		rc = fz_upgrade_listen(f->m, f->conf, f->main_thread);
		if (rc < 0)
			LOG_WARN("main", "no control socket for a later --upgrade: %s", strerror(-rc));
	}
	return NULL;
}

static void finisher_stop(struct finisher *f)
{
	if (!f->started)
		return;
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
	pthread_join(f->thread, NULL);
	f->started = 0;
}

static int destroy_dir(uint64_t fh, int kind, void *obj, void *arg)
{
	(void)fh;
	(void)arg;
	if (kind == FZ_H_DIR)
		fz_dir_destroy(obj);
	return 0;
}

/* nacre.connect's text: what a program needs to reach the file system as this mount does.
 * Paths are made absolute (the daemon runs from /). NULL when out of memory. */
static char *connect_text(const struct args *a, const struct nacre_mount_opts *mo)
{
	const char *key = mo->key_file ? mo->key_file : getenv("NACRE_KEY_FILE");
	const char *name = mo->client_name ? mo->client_name : getenv("NACRE_CLIENT_NAME");
	char *abs_key = key && key[0] ? realpath(key, NULL) : NULL;
	struct strbuf b = STRBUF_INIT;

	strbuf_printf(&b, "spec=%s\nkey_file=%s\nclient_name=%s\nsec=%s\n", a->spec,
		      abs_key ? abs_key : key ? key : "", name ? name : "",
		      mo->sec ? mo->sec : "");
	strbuf_printf(&b, "timeout_ms=%d\nrecovery_timeout_ms=%d\n", mo->timeout_ms,
		      mo->recovery_timeout_ms);
	free(abs_key);
	return strbuf_take(&b);
}

/* 1 if a mount of type fstype may be a nacre mount: fuse.nacre, or fuse (-o nosubtype). */
static int nacre_fstype(const char *fstype)
{
	return strcmp(fstype, "fuse.nacre") == 0 || strcmp(fstype, "fuse") == 0;
}

/* Notes the device number of the FUSE mount just made (or taken over) on mnt: -o ro follows
 * its superblock's flag (fz_mount_ro). */
static void mount_dev(struct fz_mount *m, const char *mnt)
{
	char fstype[64];

	if (fz_mount_find(mnt, m->kdev, sizeof(m->kdev), fstype, sizeof(fstype)) < 0 ||
	    !nacre_fstype(fstype)) {
		m->kdev[0] = '\0';
		if (m->ro)
			LOG_WARN("main", "%s not found in /proc/self/mountinfo: a remount,rw will "
				 "not lift -o ro", mnt);
	}
}

/* Mounts and serves until unmounted or signalled. *status_fd (or -1) gets 0 once mounted
 * and is then closed (set to -1). With tk, takes over the session of the process behind it
 * instead of mounting (nacre-mount --upgrade). Returns the exit code. */
static int run(const struct args *a, const char *mnt, const char *addr, int *status_fd,
	       struct fz_takeover *tk)
{
	struct nacre_mount_opts mo;
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	struct nacre_fid root;
	struct fz_mount m;
	struct fz_upgrade_conf conf = {a->spec, a->opts_raw, mnt, a->control_socket};
	struct finisher fin;
	char fopts[FUSE_OPTS_MAX];
	char err[512], why[FUSE_OPTS_MAX + 1024];
	int rc, ret = 1, handed = 0;

	memset(&fin, 0, sizeof(fin));
	/* Here, in the process that serves the mount: threads do not survive fork_daemon. */
	fz_metrics_register();
	/* A successor binds the metrics port once its predecessor let go of it. */
	if (!tk && metrics_opts_start(&a->metrics, "mount", err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", a->prog, err);
		return 1;
	}
	memset(&mo, 0, sizeof(mo));
	mo.key_file = a->key_file;
	mo.sec = a->sec;
	mo.client_name = a->client_name;
	mo.timeout_ms = (int)(a->timeout * 1000.0);
	if (mo.timeout_ms < 1)
		mo.timeout_ms = 1;
	mo.recovery_timeout_ms = (int)(a->recovery_timeout * 1000.0);
	if (mo.recovery_timeout_ms < 1)
		mo.recovery_timeout_ms = 1;
	mo.log_fn = nacre_log;
	mo.max_rpc_size = a->max_rpc_size;
	mo.max_rpcs_in_flight = a->max_rpcs_in_flight;
	mo.max_dirty_mb = a->max_dirty_mb;
	mo.readahead_max_mb = a->readahead_max_mb;

	memset(&m, 0, sizeof(m));
	m.kernel_ra_kb = a->readahead_max_mb < 0 ? 0 : FZ_KERNEL_RA_KB;
	m.attr_timeout = a->attr_timeout;
	m.jobid = !a->no_jobid;
	m.entry_timeout = a->entry_timeout;
	m.ro = a->ro;
	m.lock_mode = a->lock_mode;
	m.atime_mode = a->atime_mode;
	err[0] = '\0';
	why[0] = '\0';
	rc = nacre_fs_mount(a->spec, &mo, &m.fs, err, sizeof(err));
	if (rc < 0) {
		/* Name the MDS, unless libnacre's sentence already does. */
		if (err[0] && strstr(err, addr))
			snprintf(why, sizeof(why), "cannot mount %s: %s", a->spec, err);
		else
			snprintf(why, sizeof(why), "cannot mount %s from the MDS at %s: %s", a->spec,
				 addr, err[0] ? err : nacre_strerror(rc));
		goto out;
	}
	root = nacre_fs_root(m.fs);
	m.connect = connect_text(a, &mo);
	if (!m.connect || fz_itable_init(&m.itab, &root) < 0 || fz_htable_init(&m.htab) < 0) {
		snprintf(why, sizeof(why), "out of memory");
		goto out_umount_fs;
	}
	if (tk && fz_takeover_import(&m, tk, err, sizeof(err)) < 0) {
		snprintf(why, sizeof(why), "%s", err);
		goto out_itable;
	}

	/* default_permissions: the kernel checks permissions from the attributes and ACLs we
	 * give it (special files, which it opens without asking us, and every component of a
	 * path it walks from its caches), which the MDS keeps fresh with its invalidations
	 * (notify.c); the MDS checks every request again with the caller's credentials and
	 * decides. */
	snprintf(fopts, sizeof(fopts), "allow_other,default_permissions,%sfsname=",
		 a->nosubtype ? "" : "subtype=nacre,");
	if (append_escaped(fopts, sizeof(fopts), a->spec) < 0 ||
	    strlen(fopts) + strlen(a->vfs_flags) + 16 >= sizeof(fopts)) {
		snprintf(why, sizeof(why), "SPEC too long");
		goto out_itable;
	}
	if (a->ro)
		snprintf(fopts + strlen(fopts), sizeof(fopts) - strlen(fopts), ",ro");
	/* As mount.fuse does for root: a mount made through mount(8) honours setuid bits and
	 * device files unless nosuid or nodev says otherwise (given after these, they win in
	 * libfuse); nacre-mount itself keeps libfuse's default, nosuid,nodev. */
	if (a->helper && geteuid() == 0)
		snprintf(fopts + strlen(fopts), sizeof(fopts) - strlen(fopts), ",dev,suid");
	snprintf(fopts + strlen(fopts), sizeof(fopts) - strlen(fopts), "%s", a->vfs_flags);
	if (fuse_opt_add_arg(&fargs, a->prog) < 0 || fuse_opt_add_arg(&fargs, "-o") < 0 ||
	    fuse_opt_add_arg(&fargs, fopts) < 0 ||
	    (a->fuse_debug && fuse_opt_add_arg(&fargs, "-d") < 0)) {
		snprintf(why, sizeof(why), "out of memory");
		goto out_args;
	}
	se = fuse_session_new(&fargs, &fz_ops, sizeof(fz_ops), &m);
	if (!se) {
		snprintf(why, sizeof(why), "cannot set up the FUSE session (options %s)", fopts);
		goto out_args;
	}
	m.se = se;
	if (fuse_set_signal_handlers(se) < 0) {
		snprintf(why, sizeof(why), "cannot install signal handlers");
		goto out_session;
	}
	if (tk) {
		char dev_fd[32];

		snprintf(dev_fd, sizeof(dev_fd), "/dev/fd/%d", fz_takeover_fd(tk));
		if (fuse_session_mount(se, dev_fd) < 0) {
			snprintf(why, sizeof(why), "libfuse did not take the received /dev/fuse fd");
			goto out_signals;
		}
		mount_dev(&m, mnt);
		/* before the replayed INIT, which tells it the kernel is ready */
		fz_bdi_start(&m, mnt);
		if (fz_takeover_replay_init(&m, tk, err, sizeof(err)) < 0 ||
		    (m.lock_mode == FZ_LOCK_CLUSTER && fz_locks_rebind(&m, err, sizeof(err)) < 0)) {
			snprintf(why, sizeof(why), "%s", err);
			goto out_bdi;
		}
		/* From here the session is ours: the old process exits once it reads this. */
		if (fz_takeover_ack(tk, 0, NULL) < 0) {
			snprintf(why, sizeof(why), "acknowledging: the old process did not confirm "
				 "(it serves on if it still runs)");
			goto out_bdi;
		}
		LOG_INFO("main", "took over %s (%s)%s", mnt, a->spec, a->ro ? " read-only" : "");
	} else {
		if (fuse_session_mount(se, mnt) < 0) {
			snprintf(why, sizeof(why), "cannot mount FUSE on %s (is /dev/fuse there, and "
				 "are you root or is user_allow_other set in /etc/fuse.conf?)", mnt);
			goto out_signals;
		}
		LOG_INFO("main", "mounted %s on %s%s", a->spec, mnt, a->ro ? " read-only" : "");
		mount_dev(&m, mnt);
		rc = fz_ring_setup(&m, mnt, !a->no_io_uring);
		if (rc < 0)
			LOG_WARN("main", "FUSE transport: /dev/fuse (libfuse took no custom I/O: %s)",
				 strerror(-rc));
		fz_bdi_start(&m, mnt);
	}
	fz_notify_start(&m);
	if (*status_fd >= 0) {
		notify_parent(status_fd, 0);
		detach();
	}
	if (tk) {
		fin.a = a;
		fin.m = &m;
		fin.t = tk;
		fin.conf = &conf;
		fin.main_thread = pthread_self();
		if (pthread_create(&fin.thread, NULL, finisher_main, &fin) == 0)
			fin.started = 1;
		else
			LOG_WARN("main", "cannot start the thread that waits for the old process");
	} else {
		rc = fz_upgrade_listen(&m, &conf, pthread_self());
		if (rc < 0)
			LOG_WARN("main", "no control socket, so no --upgrade for %s: %s", mnt,
				 strerror(-rc));
	}

	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		LOG_ERR("main", "out of memory");
		goto out_unmount;
	}
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_idle_threads(cfg, MAX_IDLE_THREADS);
	fuse_loop_cfg_set_max_threads(cfg, MAX_THREADS);
	for (;;) {
		int up;

		rc = fuse_session_loop_mt(se, cfg);
		/* m.upg is the finisher's to set until it ended */
		finisher_stop(&fin);
		up = fz_upgrade_after_loop(&m);
		if (up == FZ_UPG_HANDED) {
			handed = 1;
			break;
		}
		/* libfuse returns the signal that ended the loop: a requested stop, which an
		 * upgrade that failed meanwhile does not cancel */
		if (up == FZ_UPG_RESUME && rc != SIGTERM && rc != SIGINT && rc != SIGHUP) {
			fuse_session_reset(se);
			/* a successor that failed may have bound our locks to its connection */
			if (m.lock_mode == FZ_LOCK_CLUSTER && fz_locks_rebind(&m, err, sizeof(err)) < 0)
				LOG_WARN("main", "%s", err);
			continue;
		}
		break;
	}
	fuse_loop_cfg_destroy(cfg);
	fz_ring_stop(&m);
	/* libfuse returns the signal that ended the loop: a requested stop, not an error
	 * (Fluid and systemd stop us with SIGTERM and expect exit 0). */
	if (handed || rc == SIGTERM || rc == SIGINT || rc == SIGHUP)
		rc = 0;
	if (rc != 0)
		LOG_ERR("main", "FUSE loop ended with %d", rc);
	else
		ret = 0;
	if (!handed)
		LOG_INFO("main", "unmounting %s", mnt);

out_unmount:
	fz_notify_stop(&m); /* no invalidation may reach a session unmounted or handed over */
	finisher_stop(&fin);
	fz_upgrade_stop(&m);
	fz_bdi_stop(&m);
	if (!handed) {
		if (tk)
			unmount_taken(mnt);
		else
			fuse_session_unmount(se);
	}
	goto out_signals;
out_bdi:
	fz_bdi_stop(&m);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fz_ring_stop(&m); /* a failed start may leave it running */
	fuse_session_destroy(se);
	fz_ring_free(&m);
out_args:
	fuse_opt_free_args(&fargs);
	if (handed) {
		/* The successor re-opened every file and holds the locks: closing ours would
		 * send the MDS stale sizes. Exiting drops our connection and its handles. */
		metrics_opts_stop();
		free(m.connect);
		return ret;
	}
out_itable:
	fz_htable_walk(&m, destroy_dir, NULL);
	fz_htable_fini(&m.htab);
	nacre_fs_unmounting(m.fs); /* the closes below do not wait long for a missing MDS */
	fz_file_close_all(&m);
	fz_itable_fini(&m.itab);
out_umount_fs:
	nacre_fs_umount(m.fs);
	free(m.connect);
out:
	metrics_opts_stop();
	if (why[0]) {
		if (tk) {
			fprintf(stderr, "%s --upgrade %s: cannot take over: %s\n", a->prog, mnt, why);
			fz_takeover_ack(tk, -EIO, why);
		} else {
			fprintf(stderr, "%s: %s\n", a->prog, why);
		}
	}
	return ret;
}

/* Forks: the parent waits for the child's verdict on the mount and exits with it, which
 * is what mount(8) waits for. Forking here, before libnacre starts its threads, keeps them
 * alive in the daemon (fuse_daemonize would fork after the mount and lose them). Returns
 * the pipe's write end in the child. */
static int fork_daemon(const char *prog)
{
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		unsigned char status = 1;
		ssize_t n;

		close(pfd[1]);
		do {
			n = read(pfd[0], &status, 1);
		} while (n < 0 && errno == EINTR);
		if (n != 1) {
			/* The child failed before mounting (it printed why) or died. */
			int ws;

			waitpid(pid, &ws, 0);
			exit(1);
		}
		exit(status ? 1 : 0);
	}
	close(pfd[0]);
	return pfd[1];
}

/* nacre-mount --upgrade MOUNTPOINT: checks that MOUNTPOINT is a nacre mount, asks its
 * process for the session and serves it with the old options (those given here override
 * them). Returns the exit code. */
static int upgrade_main(const struct args *cmd)
{
	char addr[NACRE_ADDR_LIST_MAX], fsname[NACRE_FSNAME_MAX + 1], subdir[NACRE_PATH_MAX + 1];
	char dev[64], fstype[64], sock[108], err[1024];
	struct fz_takeover *tk = NULL;
	struct args *a = NULL;
	char *mnt;
	int rc, status_fd = -1, ret = 1, old_lock_mode;

	/* realpath does not need the mount to answer: a hung one is still found */
	mnt = realpath(cmd->mountpoint, NULL);
	if (!mnt) {
		fprintf(stderr, "%s --upgrade: %s: %s\n", cmd->prog, cmd->mountpoint, strerror(errno));
		return 1;
	}
	rc = fz_mount_find(mnt, dev, sizeof(dev), fstype, sizeof(fstype));
	if (rc < 0 || !nacre_fstype(fstype)) {
		if (rc < 0)
			fprintf(stderr, "%s --upgrade: %s is not a mount point, so not a nacre mount\n",
				cmd->prog, mnt);
		else
			fprintf(stderr, "%s --upgrade: %s is not a nacre mount (its file system type "
					"is %s)\n", cmd->prog, mnt, fstype[0] ? fstype : "unknown");
		goto out_free;
	}
	rc = fz_upgrade_socket_path(mnt, cmd->control_socket, sock, sizeof(sock));
	if (rc < 0) {
		fprintf(stderr, "%s --upgrade: %s: no control socket path: %s\n", cmd->prog, mnt,
			strerror(-rc));
		goto out_free;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		fprintf(stderr, "%s: out of memory\n", cmd->prog);
		goto out_free;
	}
	log_init("mount", cmd->debug ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	/* The request is made by the process that will serve: the fd goes to it. */
	if (!cmd->foreground)
		status_fd = fork_daemon(cmd->prog);
	rc = fz_upgrade_request(sock, &tk, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s --upgrade %s: %s\n", cmd->prog, mnt, err);
		goto out_args;
	}
	a->prog = cmd->prog;
	a->attr_timeout = 1.0;
	a->entry_timeout = 1.0;
	a->timeout = 30.0;
	a->recovery_timeout = 300.0;
	a->spec = fz_takeover_spec(tk);
	a->foreground = cmd->foreground;
	a->fuse_debug = cmd->fuse_debug;
	if (fz_takeover_opts(tk)[0] && take_opts(a, fz_takeover_opts(tk)) < 0) {
		fz_takeover_ack(tk, -EINVAL, "the new process rejected the mount options");
		goto out_tk;
	}
	old_lock_mode = a->lock_mode;
	if (cmd->opts_raw[0] && take_opts(a, cmd->opts_raw) < 0) {
		fz_takeover_ack(tk, -EINVAL, "the new process rejected the mount options");
		goto out_tk;
	}
	/* The kernel keeps what it agreed with the first process at FUSE_INIT: whether lock
	 * calls reach us at all. */
	if (a->lock_mode != old_lock_mode) {
		fprintf(stderr, "%s --upgrade %s: flock, localflock and noflock cannot change in an "
				"upgrade: unmount and mount again to change them\n", cmd->prog, mnt);
		fz_takeover_ack(tk, -EINVAL, "the lock mode cannot change in an upgrade");
		goto out_tk;
	}
	a->debug |= cmd->debug;
	if (!a->control_socket)
		a->control_socket = cmd->control_socket;
	rc = nacre_parse_spec(a->spec, addr, sizeof(addr), fsname, sizeof(fsname), subdir,
			      sizeof(subdir), err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s --upgrade %s: %s\n", cmd->prog, mnt, err);
		fz_takeover_ack(tk, -EINVAL, "the new process rejected the mount spec");
		goto out_tk;
	}
	ret = run(a, mnt, addr, &status_fd, tk);
out_tk:
	fz_takeover_free(tk);
out_args:
	/* a failure before the takeover: the parent exits 1 on the closed pipe */
	if (status_fd >= 0)
		notify_parent(&status_fd, 1);
	free(a);
out_free:
	free(mnt);
	return ret;
}

/* mount(2) flags of the options a remount may change; the kernel applies the set given and
 * clears the others, so mount(8) passes every flag the mount has. */
static const struct {
	const char *name;
	unsigned long flag;
	int clear;
} remount_opts[] = {
	{"ro", MS_RDONLY, 0},           {"rw", MS_RDONLY, 1},
	{"nosuid", MS_NOSUID, 0},       {"suid", MS_NOSUID, 1},
	{"nodev", MS_NODEV, 0},         {"dev", MS_NODEV, 1},
	{"noexec", MS_NOEXEC, 0},       {"exec", MS_NOEXEC, 1},
	{"sync", MS_SYNCHRONOUS, 0},    {"async", MS_SYNCHRONOUS, 1},
	{"dirsync", MS_DIRSYNC, 0},
	{"noatime", MS_NOATIME, 0},     {"atime", MS_NOATIME, 1},
	{"nodiratime", MS_NODIRATIME, 0}, {"diratime", MS_NODIRATIME, 1},
	{"relatime", MS_RELATIME, 0},   {"norelatime", MS_RELATIME, 1},
	{"strictatime", MS_STRICTATIME, 0}, {"nostrictatime", MS_STRICTATIME, 1},
	{"lazytime", MS_LAZYTIME, 0},   {"nolazytime", MS_LAZYTIME, 1},
};

/* -o remount: the kernel changes the flags of the running FUSE mount (FUSE accepts any
 * remount); its process and session stay. Once the superblock is read-only the kernel
 * refuses every modification itself; after remount,rw the process notices at the next one
 * (fz_mount_ro). mount(8) runs this as mount.fuse.nacre, the helper of type fuse.nacre.
 * Returns the exit code. */
static int remount_main(const struct args *a)
{
	unsigned long flags = MS_REMOUNT | (a->bind ? MS_BIND : 0);
	char dev[64], fstype[64];
	char *mnt, *opts, *opt;
	int ret = 1;

	mnt = realpath(a->mountpoint, NULL);
	if (!mnt) {
		fprintf(stderr, "%s: mount point %s: %s\n", a->prog, a->mountpoint, strerror(errno));
		return 1;
	}
	if (fz_mount_find(mnt, dev, sizeof(dev), fstype, sizeof(fstype)) < 0 ||
	    !nacre_fstype(fstype)) {
		fprintf(stderr, "%s: cannot remount %s: it is not a nacre mount\n", a->prog, mnt);
		goto out_free;
	}
	opts = strdup(a->opts_raw);
	if (!opts) {
		fprintf(stderr, "%s: out of memory\n", a->prog);
		goto out_free;
	}
	/* parse_opts checked every option; the others keep the values the mount started with */
	for (opt = opts; opt;) {
		char *comma = strchr(opt, ',');

		if (comma)
			*comma++ = '\0';
		for (size_t i = 0; i < ARRAY_SIZE(remount_opts); i++) {
			if (strcmp(opt, remount_opts[i].name) != 0)
				continue;
			if (remount_opts[i].clear)
				flags &= ~remount_opts[i].flag;
			else
				flags |= remount_opts[i].flag;
		}
		opt = comma;
	}
	free(opts);
	if (a->fake) {
		ret = 0;
		goto out_free;
	}
	if (mount(a->spec ? a->spec : "nacre", mnt, "fuse.nacre", flags, NULL) < 0) {
		int e = errno;

		fprintf(stderr, "%s: cannot remount %s: %s%s\n", a->prog, mnt, strerror(e),
			e == EBUSY && (flags & MS_RDONLY)
			? " (files are open for writing on it: close them first)" : "");
		goto out_free;
	}
	ret = 0;
out_free:
	free(mnt);
	return ret;
}

/* A second nacre mount on the same directory would hide the first, which keeps running
 * unseen: refuse, as mount(8) refuses a busy target. */
static int already_mounted(const struct args *a, const char *mnt)
{
	char dev[32], fstype[64];

	if (fz_mount_find(mnt, dev, sizeof(dev), fstype, sizeof(fstype)) != 0 ||
	    strcmp(fstype, "fuse.nacre") != 0)
		return 0;
	fprintf(stderr, "%s: %s is already a nacre mount (device %s): unmount it first "
		"(umount %s), or give -o overmount to mount over it\n", a->prog, mnt, dev, mnt);
	return 1;
}

int main(int argc, char **argv)
{
	char addr[NACRE_ADDR_LIST_MAX], fsname[NACRE_FSNAME_MAX + 1], subdir[NACRE_PATH_MAX + 1];
	char err[256];
	struct args a;
	struct stat st;
	char *mnt;
	int rc, status_fd = -1, ret;

	if (fz_fluid_wanted(argc, argv))
		return fz_fluid_main(argc, argv);
	memset(&a, 0, sizeof(a));
	a.prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	a.helper = strncmp(a.prog, "mount.", 6) == 0;
	a.attr_timeout = 1.0;
	a.entry_timeout = 1.0;
	a.timeout = 30.0;
	a.recovery_timeout = 300.0;
	rc = parse_args(&a, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 1;
	if (a.upgrade)
		return upgrade_main(&a);
	if (a.remount)
		return remount_main(&a);
	if (a.bind) {
		fprintf(stderr, "%s: -o bind goes only with remount (mount --bind makes bind "
				"mounts)\n", a.prog);
		return 1;
	}

	rc = nacre_parse_spec(a.spec, addr, sizeof(addr), fsname, sizeof(fsname), subdir,
			      sizeof(subdir), err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", a.prog, err);
		return 1;
	}
	if (stat(a.mountpoint, &st) < 0) {
		fprintf(stderr, "%s: mount point %s: %s%s\n", a.prog, a.mountpoint, strerror(errno),
			errno == ENOTCONN ? " (a dead FUSE mount: run umount on it first)" : "");
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: mount point %s is not a directory\n", a.prog, a.mountpoint);
		return 1;
	}
	mnt = realpath(a.mountpoint, NULL);
	if (!mnt) {
		fprintf(stderr, "%s: mount point %s: %s\n", a.prog, a.mountpoint, strerror(errno));
		return 1;
	}
	if (!a.overmount && already_mounted(&a, mnt)) {
		free(mnt);
		return 1;
	}
	if (a.fake) {
		free(mnt);
		return 0;
	}

	log_init("mount", a.debug ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	if (!a.foreground) {
		openlog("nacre-mount", LOG_PID, LOG_DAEMON);
		log_set_sink(starting_sink, NULL);
		status_fd = fork_daemon(a.prog);
	}
	ret = run(&a, mnt, addr, &status_fd, NULL);
	/* Mount failed in the child: it printed why; the parent exits 1 on the closed pipe. */
	if (status_fd >= 0)
		notify_parent(&status_fd, 1);
	free(mnt);
	return ret;
}
