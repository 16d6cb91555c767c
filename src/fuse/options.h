/* options.h - nacre-mount's command line: its arguments and -o options, parsed into
 * struct fz_args (options.c), for main.c to mount with and for --upgrade to take over with.
 * Single-threaded: parsing happens before the mount starts.
 */
#ifndef NACRE_FZ_OPTIONS_H
#define NACRE_FZ_OPTIONS_H

#include "common/metrics_opts.h"

struct fz_args {
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
	const char *jobid_var;  /* jobid=VAR: the caller's environment variable VAR's value
				 * (NULL: procname_uid) */
	int no_io_uring;        /* io_uring=off: serve through /dev/fuse only */
	int wb;                 /* wb=on: metadata write-back (NACRE_TUNE_WB) */
	int wb_journal;         /* wb_journal=async|sync|off: NACRE_WB_JOURNAL_* (the caller
				 * sets the default, async) */
	const char *wb_journal_dir; /* wb_journal_dir=DIR; NULL: journal.h's default */
	struct metrics_opts metrics; /* metrics_addr=, metrics_log=, metrics_interval=,
				      * metrics_azure*= */
	char vfs_flags[256];    /* mount flags passed on to the kernel mount (",noexec"...) */
	int upgrade;            /* --upgrade: take over the mount's running process */
	const char *control_socket; /* control_socket=PATH; NULL: /run/nacre/mount-DEV.sock */
	char opts_raw[8192];    /* every -o list as given, for a successor */
};

/* Parses the command line argv[1..argc) into a, whose prog and helper the caller set and
 * whose timeouts it filled with their defaults. String options point into copies kept for
 * the process lifetime. Returns 0 to go on, 1 to exit 0 (usage printed for -h), -1 to exit 1
 * (the reason printed on stderr). */
int fz_parse_args(struct fz_args *a, int argc, char **argv);
/* Takes one -o argument s: appends it to a->opts_raw (for a successor), then parses a copy
 * kept for the process lifetime. Returns 0, or -1 with the reason printed on stderr. */
int fz_take_opts(struct fz_args *a, const char *s);

#endif
