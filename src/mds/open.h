/* open.h - OPEN/CLOSE/SIZE_UPDATE, the in-memory table of open handles (per FID and per
 * connection) and orphan handling (an unlinked inode lives while it is open).
 * Thread-safe: the table has one mutex, a leaf lock taken inside writer operations too. */
#ifndef NACRE_MDS_OPEN_H
#define NACRE_MDS_OPEN_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/wire.h"

int mds_open_table_create(struct mds_open_table **out);
void mds_open_table_destroy(struct mds_open_table *t); /* NULL is fine */
/* Number of open handles on fid. */
int mds_open_count(struct mds_open_table *t, const struct nacre_fid *fid);
/* Open handles of every client (a scan: for metrics, not hot paths). Thread-safe. */
uint64_t mds_open_handles(struct mds_open_table *t);

/* OPEN: checks access for the O_ACCMODE of flags (directories: read only), truncates on
 * O_TRUNC (as SETATTR size 0), registers a handle for owner (session.h: mds_owner_of) on
 * connection conn_id (which HSM restores know their agent by). */
int mds_ns_open(struct mds *m, uint64_t conn_id, uint64_t owner, const struct wire_open_req *r,
		struct wire_open_rep *rep);
/* CLOSE (is_close 1) or SIZE_UPDATE: size = max(stored, reported) for regular files,
 * has_mtime sets mtime and ctime. CLOSE drops the handle; the last close of an orphan
 * destroys it. An unknown handle is not an error (the size update still applies). A CLOSE
 * of an inode that no longer exists (destroyed orphan) succeeds with an attr holding only
 * the FID; a SIZE_UPDATE of one fails with -ESTALE. */
int mds_ns_close(struct mds *m, uint64_t conn_id, const struct wire_close_req *r, int is_close,
		 struct nacre_attr *out);
/* A handle on fid for conn_id without the checks of OPEN: for CREATE with
 * WIRE_CREATE_OPEN, inside its writer operation. 0 or -ENOMEM. */
int mds_open_handle_add(struct mds_open_table *t, uint64_t conn_id, const struct nacre_fid *fid,
			uint64_t *handle);
/* Drops a handle added by mds_open_handle_add whose create did not commit. */
void mds_open_handle_drop(struct mds_open_table *t, uint64_t conn_id, uint64_t handle,
			  const struct nacre_fid *fid);
/* Whether owner holds handle on fid. */
int mds_open_handle_known(struct mds_open_table *t, uint64_t owner, uint64_t handle,
			  const struct nacre_fid *fid);
/* Drops a handle without closing it (a resent OPEN's first one: the client never knew it).
 * The inode stays as it is: the same owner has it open by another handle. */
void mds_open_handle_forget(struct mds_open_table *t, uint64_t owner, uint64_t handle);
/* Closes every handle of a connection (or session owner) that went away. */
void mds_open_disconnect(struct mds *m, uint64_t conn_id);
/* At startup: destroys every inode with nlink 0 (left over from open unlinked files). */
int mds_reap_orphans(struct mds *m);

#endif
