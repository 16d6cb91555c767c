/* open.h - the in-memory table of open handles, per handle id and per FID (for the orphan
 * rule: an unlinked inode lives while it is open). OPEN, CLOSE and orphans are namespace
 * operations (ns_open.c) over this table.
 * Thread-safe: the table has one mutex, a leaf lock taken inside writer operations too. */
#ifndef NACRE_MDS_OPEN_H
#define NACRE_MDS_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include "mds/mds.h"

int mds_open_table_create(struct mds_open_table **out);
void mds_open_table_destroy(struct mds_open_table *t); /* NULL is fine */
/* Number of open handles on fid. */
int mds_open_count(struct mds_open_table *t, const struct nacre_fid *fid);
/* Open handles of every client (a scan: for metrics, not hot paths). Thread-safe. */
uint64_t mds_open_handles(struct mds_open_table *t);

/* A new handle on fid for owner (session.h: mds_owner_of). *handle in: the id wanted (a
 * handle the client had before an MDS restart), or 0; out: the id given (never 0; another
 * than the one wanted if that one is taken). 0 or -ENOMEM. */
int mds_open_handle_add(struct mds_open_table *t, uint64_t conn_id, const struct nacre_fid *fid,
			uint64_t *handle);
/* Drops a handle (an open or a create that did not complete); an unknown one is ignored. */
void mds_open_handle_drop(struct mds_open_table *t, uint64_t conn_id, uint64_t handle,
			  const struct nacre_fid *fid);
/* Records the object rights (CAP_*) an open granted, for its capability renewals; an
 * unknown handle is ignored. */
void mds_open_handle_set_rights(struct mds_open_table *t, uint64_t owner, uint64_t handle,
				const struct nacre_fid *fid, uint32_t rights);
/* The rights recorded for owner's handle on fid (0 if none were): 0, or -EBADF if owner
 * holds no such handle. */
int mds_open_handle_rights(struct mds_open_table *t, uint64_t owner, uint64_t handle,
			   const struct nacre_fid *fid, uint32_t *rights);
/* Whether owner holds handle on fid. */
int mds_open_handle_known(struct mds_open_table *t, uint64_t owner, uint64_t handle,
			  const struct nacre_fid *fid);
/* Drops a handle without closing it (a resent OPEN's first one: the client never knew it).
 * The inode stays as it is: the same owner has it open by another handle. */
void mds_open_handle_forget(struct mds_open_table *t, uint64_t owner, uint64_t handle);
#define MDS_OPEN_RESTORE 1 /* a copytool's handle on a restore's new objects */
#define MDS_OPEN_WROTE 2   /* a size or an mtime was reported through it */
/* Finds handle of conn_id on fid, notes that it wrote if wrote, and drops it if drop.
 * Returns its MDS_OPEN_* bits, or -EBADF if there is none. */
int mds_open_handle_find(struct mds_open_table *t, uint64_t conn_id, uint64_t handle,
			 const struct nacre_fid *fid, int drop, int wrote);
/* Marks a handle as a copytool's on a restore's new objects (its close changes neither size
 * nor mtime). */
void mds_open_handle_set_restore(struct mds_open_table *t, uint64_t conn_id, uint64_t handle,
				 const struct nacre_fid *fid);
/* Drops every handle of an owner (a connection, or a session evicted). Returns the number
 * of FIDs in *fids, a heap array of the dropped handles' FIDs that the caller frees (short,
 * or NULL, if memory ran out: the handles go all the same). */
size_t mds_open_drop_conn(struct mds_open_table *t, uint64_t conn_id, struct nacre_fid **fids);

#endif
