/* bringup_local.h - the local runner of the bring-up engine (bringup.h): every daemon of
 * the config is a child of this process on this host, under the layout of `nacre up --dir`:
 *
 *   DIR/cluster.key  DIR/mdt/  DIR/ost<i>/  DIR/mds.log  DIR/oss<j>.log  DIR/mount.log
 *   DIR/copytool.log  DIR/cluster.pids ("mds PID", "oss<j> PID", "mount PID",
 *   "copytool PID", "mountpoint PATH")  DIR/up.options (what `nacre up` was given)
 *
 * Daemons are started detached (own session, stdio to their log) from the binaries next to
 * this executable, else from PATH; the mount runs in the foreground (-f) so the pid kept is
 * the mount's. Step lines show the time since the previous one. Stopping signals each
 * process and bu_local_wait_stopped() waits for them all at once.
 *
 * A restart (restart set, the table holding what still runs: bu_local_keep_live) starts
 * only what is missing: a daemon whose role runs is left alone, a dead mount is unmounted
 * and mounted again, and an MDS restarted while the mount is gone too waits only briefly
 * for its clients (their sessions died with them). Single-threaded.
 */
#ifndef NACRE_BRINGUP_LOCAL_H
#define NACRE_BRINGUP_LOCAL_H

#include <limits.h>
#include <sys/types.h>

#include "cli/bringup.h"

#define BU_LOCAL_PROCS (CC_OSS_CAP + 3) /* + mds, mount, copytool */

struct bu_proc {
	char role[16]; /* "mds", "oss3", "mount", "copytool" */
	pid_t pid;     /* 0 once it is known gone */
	int ours;      /* our child, started by this run: no need to check its cmdline */
	int signalled; /* down: sent SIGTERM */
	char log[PATH_MAX];
};

struct bu_local {
	const struct cc_conf *c;
	char dir[PATH_MAX];
	/* the mount point in cluster.pids; this run's is set only once it mounts (undo
	 * unmounts it only then) */
	char mnt[PATH_MAX];
	struct bu_proc procs[BU_LOCAL_PROCS];
	int nprocs;
	double t0; /* time of the previous step line */
	int restart; /* start only what is not in procs (see above) */
};

extern const struct bu_runner bu_local_runner;

/* Sets l up for the cluster of c in dir (absolute). c is borrowed; it may be NULL for
 * bu_local_read_pids() and bu_local_running(). */
void bu_local_init(struct bu_local *l, const struct cc_conf *c, const char *dir);
/* Reads DIR/cluster.pids into l. 0, -ENOENT if absent, or -errno. */
int bu_local_read_pids(struct bu_local *l);
/* Writes DIR/cluster.pids from l. 0 or -errno. */
int bu_local_write_pids(const struct bu_local *l);
/* Keeps in l's table (read from DIR/cluster.pids) only the processes that still run, and
 * the mount only while it is mounted. Returns how many are left. */
int bu_local_keep_live(struct bu_local *l);
/* 1 if role ("mds", "oss3", "mount", "copytool") is in l's table. */
int bu_local_has(const struct bu_local *l, const char *role);
/* 0 if the MDS answers within a few seconds and lists every OST of l's config as up; else
 * -1 with what is wrong in why. */
int bu_local_answers(struct bu_local *l, char *why, size_t len);
/* Prints "[T] what" (T: seconds since the previous line). */
void bu_local_step(struct bu_local *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An up failed: unmounts what this run mounted, stops what it started, removes
 * cluster.pids (a restart: writes it with what still runs) and says the logs are kept.
 * Returns the exit code, 1. */
int bu_local_abort(struct bu_local *l);
/* down: signals what the config did not name, waits up to 10 s for every signalled
 * process (then SIGKILL), prints how many stopped. */
void bu_local_wait_stopped(struct bu_local *l);

#endif
