/* bringup.h - the one bring-up engine of `nacre up` and `nacre cluster up|down|status`.
 *
 * The engine walks a cluster config (cluster_conf.h) step by step and decides what each step
 * is: which daemon starts where with which arguments, when a target is formatted, what a
 * mount is given, in which order things start and stop. A runner carries the steps out and
 * reports them:
 *
 *   local  (bringup_local.c)   fork/exec on this host, under `nacre up --dir DIR`
 *   remote (bringup_remote.c)  a shell script per step through the config's remote_shell
 *
 * up:     prepare, MDS (and its standby on the failover host), each OSS (and its
 *         standby), wait until the MDS lists every OST, mount each client (the first sets
 *         the default striping), a copytool per archive on each copytool host; stops at
 *         the first failure (the caller decides what to undo).
 * down:   unmount each client, stop the copytools, the standbys (before their primaries,
 *         which they would take over from), the OSSes, the MDS; goes on past a failure.
 * status: every daemon, the targets as the MDS sees them, every mount.
 *
 * Single-threaded. Messages a person sees are printed by the runner.
 */
#ifndef NACRE_BRINGUP_H
#define NACRE_BRINGUP_H

#include "cli/cluster_conf.h"

#define BU_ARGS_MAX (32 + 2 * CC_OSTS_CAP)
#define BU_SPEC_MAX (2 * CC_ADDR_MAX + NACRE_FSNAME_MAX + 4) /* "MDS[,STANDBY]:/FSNAME" */

enum bu_kind { BU_MDS, BU_OSS, BU_COPYTOOL };

/* One daemon of the config, with everything needed to start, stop or ask about it. */
struct bu_daemon {
	enum bu_kind kind;
	int index;        /* BU_OSS: c->oss[index]; BU_COPYTOOL: c->archives[index] */
	const char *host; /* borrowed from the config */
	const char *prog; /* "nacre-mds", "nacre-oss", "nacre-copytool" */
	char role[64];    /* "mds", "oss-NAME", "copytool-ID"; "-standby" after a standby's */
	int standby;      /* BU_MDS, BU_OSS: the failover partner, started with --standby on
			   * the primary's storage, never formatting it */
	const char *ready; /* what its output shows once it serves */
	/* Arguments after the program, NULL-terminated (heap strings); "--format" is added
	 * last when one of the files in format_unless is missing on the host. */
	char *argv[BU_ARGS_MAX + 1];
	int argc;
	char *format_unless[CC_OSTS_CAP];
	int nformat;
	int skip; /* BU_COPYTOOL: the archive has no copytool backend, nothing to start */
};

/* What a runner does; ctx is the runner's own state (it holds the config). Every function
 * returns 0, or -1 once it printed what failed. */
struct bu_runner {
	/* up, before anything starts: keys, hosts, ports */
	int (*prepare)(void *ctx);
	/* starts d unless it already runs; returns once it serves */
	int (*start)(void *ctx, const struct bu_daemon *d);
	/* d is not started: says why */
	void (*skip)(void *ctx, const struct bu_daemon *d);
	/* waits until the MDS lists every OST of the config as up */
	int (*wait_osts)(void *ctx);
	/* mounts cl: spec and -o options as the engine made them; first sets the default
	 * striping */
	int (*mount)(void *ctx, const struct cc_client *cl, const char *spec, const char *opts,
		     int first);
	int (*unmount)(void *ctx, const struct cc_client *cl);
	int (*stop)(void *ctx, const struct bu_daemon *d);
	/* status: each returns 0 if the item is up, -1 if not (printed either way); NULL
	 * for a runner without status */
	int (*daemon_status)(void *ctx, const struct bu_daemon *d);
	int (*targets_status)(void *ctx);
	int (*mount_status)(void *ctx, const struct cc_client *cl);
};

/* Brings the cluster of c up with runner r. 0, or -1 at the first failed step. */
int bu_up(const struct cc_conf *c, const struct bu_runner *r, void *ctx);
/* Brings it down. 0, or -1 if a step failed (every step is tried). */
int bu_down(const struct cc_conf *c, const struct bu_runner *r, void *ctx);
/* Prints its status. Returns how many items are down, or -1 (out of memory). */
int bu_status(const struct cc_conf *c, const struct bu_runner *r, void *ctx);

/* out = addr ("HOST:PORT") with PORT + k: the k-th of daemons that share a base metrics
 * address. "" when addr is "" or the port would pass 65535. */
void bu_addr_plus(const char *addr, int k, char *out, size_t len);

/* "MDS_LISTEN[,FAILOVER_LISTEN]:/FSNAME": what clients and copytools mount (BU_SPEC_MAX
 * bytes). */
void bu_spec(const struct cc_conf *c, char *out, size_t len);

#endif
