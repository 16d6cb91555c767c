/* lease_int.h - what lease.c and lease_change.c share: a held directory and the names it
 * knows. Every function here runs with the lease lock (cl_leases.lock) held. */
#ifndef NACRE_CL_LEASE_INT_H
#define NACRE_CL_LEASE_INT_H

#include "client/cl_internal.h"

#define CL_LEASE_BUCKETS 1024

/* A name in a held directory, with what it names when this mount knows it. */
struct cl_name {
	struct cl_name *next;
	uint32_t hash;
	struct nacre_fid fid; /* zero: not known (made by a rename from an unheld directory) */
	uint32_t type;        /* S_IFMT bits; 0: not known */
	char name[];
};

struct cl_lease_dir {
	struct cl_lease_dir *next;          /* hash chain */
	struct cl_lease_dir *older, *newer; /* grant order */
	struct nacre_fid fid;
	struct nacre_fid parent; /* inherited: the lease it came with; it ends with it */
	int inherited;           /* made in a leased directory: the MDS leased it with no GET */
	int makes;               /* this mount may make things in it itself: no default ACL,
				  * and the MDS gave it the ids it was made with */
	uint64_t gen;            /* the connection generation it was granted on */
	int64_t granted_sent_ms; /* when its GET (or its parent's) was sent */
	uint32_t uid, gid, mode; /* the directory's, for who may be answered */
	struct cl_name **names;  /* hash set of the names in it; nb buckets */
	uint32_t nb, count;
};

struct cl_lease_dir *cl_lease_find(struct cl_leases *l, const struct nacre_fid *fid);
/* Whether d may answer now (its connection, and WIRE_LEASE_MS since its last renewal). */
int cl_lease_valid(struct nacre_fs *fs, const struct cl_lease_dir *d);
/* A new lease: allocated with empty names, or NULL. */
struct cl_lease_dir *cl_lease_dir_new(const struct nacre_attr *a);
void cl_lease_dir_free(struct cl_lease_dir *d);
/* Adds d to the table. 0, or -ENOSPC when the table is full (d stays the caller's). */
int cl_lease_insert(struct cl_leases *l, struct cl_lease_dir *d);
/* Takes d out of the table: it is the caller's to give back and free. */
void cl_lease_unlink(struct cl_leases *l, struct cl_lease_dir *d);

/* An inode made under a lease, and what is known of it. */
struct cl_made {
	struct cl_made *next;
	struct nacre_fid parent; /* the held directory it is named in */
	uint64_t changed;        /* the lease clock of the last change foretold here */
	struct nacre_attr attr;  /* as the MDS has them once what is queued is applied: every
				  * reply that tells them since (open, size update, close,
				  * setattr) replaces them */
};

/* The attributes of the inodes made under the leases (lease_attr.c): put replaces, a
 * directory's drop forgets what is named in it (and itself), touched notes a change of
 * its entries (nlink_delta: a subdirectory made or removed). */
struct cl_made *cl_lease_made_find(struct cl_leases *l, const struct nacre_fid *fid);
void cl_lease_made_put(struct cl_leases *l, const struct nacre_fid *parent,
		       const struct nacre_attr *a);
void cl_lease_made_del(struct cl_leases *l, const struct nacre_fid *fid);
void cl_lease_made_drop_dir(struct cl_leases *l, const struct nacre_fid *dir);
void cl_lease_made_fini(struct cl_leases *l);
void cl_lease_dir_touched(struct cl_leases *l, const struct nacre_fid *dir, int nlink_delta);

struct cl_name *cl_lease_name_find(struct cl_lease_dir *d, const char *name);
/* Adds (or updates) name with fid and type (NULL fid: not known). 0 or -ENOSPC (the
 * directory can no longer be known whole: give it back). */
int cl_lease_name_add(struct cl_leases *l, struct cl_lease_dir *d, const char *name,
		      const struct nacre_fid *fid, uint32_t type);
void cl_lease_name_del(struct cl_leases *l, struct cl_lease_dir *d, const char *name);

#endif
