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
#define CL_LEASE_MADE_MAX 65536 /* inodes whose attributes are known (lease_attr.c) */
#define CL_LEASE_MARGIN_MS 500 /* taken off WIRE_LEASE_MS: clocks run at different rates */

struct cl_lease_dir;
struct cl_made;
struct rpc_recovery;
struct wire_cursor;

struct cl_leases {
	pthread_mutex_t lock;        /* protects everything below */
	struct cl_lease_dir **b;     /* hash by FID, CL_LEASE_BUCKETS; NULL until the first */
	struct cl_lease_dir *oldest; /* in grant order, for giving the oldest back when full */
	struct cl_lease_dir *newest;
	uint32_t n;                  /* leases held */
	uint64_t names;              /* names known, over every lease */
	uint64_t renew_gen;          /* the connection generation the last renewal was on */
	int64_t renew_sent_ms;       /* when the request of the last renewal was sent */
	struct cl_lease_dir *gone;   /* leases of directories removed under a lease, to give
				      * back once the removal reached the MDS */
	struct cl_made **made_b;     /* attributes of inodes made under them (lease_attr.c) */
	uint32_t nmade;              /* atomic reads */
	uint64_t clock;              /* atomic: bumped by each attribute change made here */
	int on;                      /* atomic: NACRE_TUNE_WB */
	/* counters */
	uint64_t granted, refused, recalled, returned, answered, made, made_changes;
};

void cl_lease_init(struct nacre_fs *fs);
/* Frees the table (unmount), giving nothing back: DISCONNECT ended the leases. */
void cl_lease_fini(struct nacre_fs *fs);

/* After cr made directory a->fid in parent: takes its lease, if write-back is on, the MDS
 * grants leases and this mount listens for callbacks; one made in a directory this mount
 * holds is leased along with it (no request), and ends with it. Failures only log. */
void cl_lease_take(struct nacre_fs *fs, const struct nacre_cred *cr,
		   const struct nacre_fid *parent, const struct nacre_attr *a);
/* A lookup of name in parent by cr: -ENOENT when a lease answers that it does not exist,
 * 1 with *out when it names an inode whose attributes are kept here (made under the
 * lease), 0 when the MDS must be asked. */
int cl_lease_lookup(struct nacre_fs *fs, const struct nacre_cred *cr,
		    const struct nacre_fid *parent, const char *name, struct nacre_attr *out);
/* After a change this mount made at the MDS: name now exists in parent (naming a, NULL if
 * not known), or no longer does; a rename moved sname to dname (exchange: swapped them). */
void cl_lease_named(struct nacre_fs *fs, const struct nacre_fid *parent, const char *name,
		    const struct nacre_attr *a);
void cl_lease_unnamed(struct nacre_fs *fs, const struct nacre_fid *parent, const char *name);
void cl_lease_renamed(struct nacre_fs *fs, const struct nacre_fid *sparent, const char *sname,
		      const struct nacre_fid *dparent, const char *dname, int exchange);
/* A change in parent failed, and may have changed it: its lease is given back. */
void cl_lease_doubt(struct nacre_fs *fs, const struct nacre_fid *parent);
/* In the recovery of a restarted MDS that expects this mount back (recover.c): asks back,
 * with the re-opens, every lease held and every directory with changes queued, if their
 * leases were still good when the connection broke; once the MDS gave them all, what is
 * queued is in time again and goes to it before any other client's request. 0, or a
 * transport error (the hook fails). */
int cl_lease_reclaim(struct nacre_fs *fs, struct rpc_recovery *r);
/* The MDS recalled these directories (all: every lease): forgotten, what was queued under
 * them sent, then given back. From the callback thread. */
void cl_lease_recall(struct nacre_fs *fs, const struct nacre_fid *dirs, uint32_t n, int all);
/* Attributes of inodes this mount made under its leases (lease_attr.c). seen: a reply of
 * the MDS told them (asked: the clock when its request went); forget: the inode is
 * reachable another way now (a hard link), or changed in a way not followed here. */
void cl_lease_attr_seen(struct nacre_fs *fs, const struct nacre_attr *a, uint64_t asked);
/* The lease clock, read before a request whose reply is given to cl_lease_attr_seen: a
 * reply to a request asked before an attribute change made here does not undo it. */
uint64_t cl_lease_clock(struct nacre_fs *fs);
void cl_lease_attr_forget(struct nacre_fs *fs, const struct nacre_fid *fid);
/* A setattr (body: its request) by cr of an inode made under a lease that this mount can
 * foretell (root's, or its owner's mode and times; not its size): queued, *out what the MDS
 * will make (as the MDS would answer: an open file's size is raised to what its handles
 * wrote by the caller, as for any reply). 1 (made) or 0 (ask the MDS). */
int cl_lease_setattr(struct nacre_fs *fs, const struct nacre_cred *cr,
		     const struct nacre_fid *fid, const struct nacre_setattr *sa,
		     const struct wire_cursor *body, struct nacre_attr *out);
/* Whether an inode made under a lease, where no default ACL applies, has no xattr (none
 * was set since: that forgets it): 1, or 0 (ask the MDS). */
int cl_lease_xattr_none(struct nacre_fs *fs, const struct nacre_fid *fid);
/* The attributes of an inode made under a lease, as the MDS would answer them: 1 with
 * *out, or 0. */
int cl_lease_getattr(struct nacre_fs *fs, const struct nacre_fid *fid, struct nacre_attr *out);

/* Gives back the leases of the directories whose queued changes the MDS refused (wbq.h)
 * and of those removed under a lease once the removal was sent: before anything is answered
 * from a lease. */
void cl_lease_settle(struct nacre_fs *fs);
/* Gives back the leases of directories removed under a lease (after a flush). */
void cl_lease_put_gone(struct nacre_fs *fs);
/* A NOTIFY_WAIT sent at sent_ms on connection generation gen was answered without a recall
 * of what is held: the leases granted on gen are good until sent_ms + WIRE_LEASE_MS. */
void cl_lease_renewed(struct nacre_fs *fs, uint64_t gen, int64_t sent_ms);

/* A change this mount makes under a lease without asking the MDS (lease_change.c). */
struct cl_lease_change {
	uint16_t opcode;               /* MKDIR, MKNOD, SYMLINK, CREATE (not opening),
					* UNLINK, RMDIR, RENAME */
	const struct nacre_fid *parent;
	const char *name;
	const struct nacre_fid *dparent; /* RENAME's target directory and name */
	const char *dname;
	const struct wire_cursor *body;  /* the change's request body, for the queue */
	struct nacre_attr *attr;         /* a make's: in, fid, mode (type and permission bits,
					  * umask applied), rdev and size; out, all of it */
};
/* Makes ch under parent's lease: when parent (and dparent) are held and good, cr is their
 * owner with write and search permission and the lease knows enough, the change is queued
 * (wbq.h) and the names updated in one hold of the lease lock. Returns 1 (made), 0 (not
 * under a lease: make it at the MDS), or the error the lease answers (-EEXIST, -ENOENT,
 * -EISDIR, -ENOTDIR, -ENOTEMPTY) or -ENOMEM. */
int cl_lease_change(struct nacre_fs *fs, const struct nacre_cred *cr, struct cl_lease_change *ch);

#endif
