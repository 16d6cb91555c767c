/* lease.h - the write-back leases this mount holds on directories (MDS_LEASE in wire.h;
 * docs/writeback.md, "Leases").
 *
 * A mount with write-back on takes the lease of every directory it makes. While it holds
 * one, nobody else changes the directory, so the mount knows every name in it: the ones it
 * made there itself, kept here. A lookup of any other name is answered ENOENT at once, with
 * no request, which is the LOOKUP every create, untar and build waits for today.
 *
 * A lease is good until WIRE_LEASE_MS after the mount sent the last request the MDS
 * answered without recalling it (the GET, then each NOTIFY_WAIT: notify.c renews them), on
 * the connection it was granted on, and less a margin for clocks. A recall, a new
 * connection, a doubt (a change in the directory that failed in a way that may have
 * changed it) or a full table ends it: it is forgotten here first and given back (PUT)
 * after. Bounded: CL_LEASE_MAX directories and CL_LEASE_NAMES_MAX names in all.
 *
 * One mutex (a leaf); no RPC is made while it is held. Thread-safe.
 */
#ifndef NACRE_CL_LEASE_H
#define NACRE_CL_LEASE_H

#include <pthread.h>
#include <stdint.h>

#include "nacre/nacre.h"

#define CL_LEASE_MAX 4096
#define CL_LEASE_NAMES_MAX 262144
#define CL_LEASE_MARGIN_MS 500 /* taken off WIRE_LEASE_MS: clocks run at different rates */

struct cl_lease_dir;

struct cl_leases {
	pthread_mutex_t lock;        /* protects everything below */
	struct cl_lease_dir **b;     /* hash by FID, CL_LEASE_BUCKETS; NULL until the first */
	struct cl_lease_dir *oldest; /* in grant order, for giving the oldest back when full */
	struct cl_lease_dir *newest;
	uint32_t n;                  /* leases held */
	uint64_t names;              /* names known, over every lease */
	uint64_t renew_gen;          /* the connection generation the last renewal was on */
	int64_t renew_sent_ms;       /* when the request of the last renewal was sent */
	int on;                      /* atomic: NACRE_TUNE_WB */
	/* counters (nacre_fs_wb_stats) */
	uint64_t granted, refused, recalled, returned, answered;
};

void cl_lease_init(struct nacre_fs *fs);
/* Frees the table (unmount), giving nothing back: DISCONNECT ended the leases. */
void cl_lease_fini(struct nacre_fs *fs);

/* After this mount made directory a->fid in parent: takes its lease, if write-back is on,
 * the MDS grants leases and this mount listens for callbacks; one made in a directory this
 * mount holds is leased along with it (no request), and ends with it. Failures only log. */
void cl_lease_take(struct nacre_fs *fs, const struct nacre_fid *parent,
		   const struct nacre_attr *a);
/* A lookup of name in parent by cr: -ENOENT when a lease answers that it does not exist,
 * 0 when the MDS must be asked. */
int cl_lease_lookup(struct nacre_fs *fs, const struct nacre_cred *cr,
		    const struct nacre_fid *parent, const char *name);
/* After a change by this mount: name now exists (exists 1) or not (0) in parent. */
void cl_lease_named(struct nacre_fs *fs, const struct nacre_fid *parent, const char *name,
		    int exists);
/* A change in parent failed, and may have changed it: its lease is given back. */
void cl_lease_doubt(struct nacre_fs *fs, const struct nacre_fid *parent);
/* The MDS recalled these directories (all: every lease): forgotten, then given back. From
 * the callback thread. */
void cl_lease_recall(struct nacre_fs *fs, const struct nacre_fid *dirs, uint32_t n, int all);
/* A NOTIFY_WAIT sent at sent_ms on connection generation gen was answered without a recall
 * of what is held: the leases granted on gen are good until sent_ms + WIRE_LEASE_MS. */
void cl_lease_renewed(struct nacre_fs *fs, uint64_t gen, int64_t sent_ms);

#endif
