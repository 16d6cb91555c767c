/* find.h - FIND: one page of a scan of the namespace under a directory, with the
 * predicates of `nacre find` evaluated here (docs/protocol.md, "find").
 *
 * The scan is depth first, in each directory in name-hash order (as readdir). It keeps no
 * state between pages: the cursor is the relative path of the entry the next page starts
 * at, which the next request walks down again. Each page runs in one short read
 * transaction and examines at most a bounded number of entries. Thread-safe.
 */
#ifndef NACRE_MDS_FIND_H
#define NACRE_MDS_FIND_H

#include "mds/mds.h"
#include "proto/wire.h"

/* Runs one page of r and appends the find_rep and its entries to out. A directory the
 * caller may not read and search (perm.h), the start included, is reported in the page as
 * an entry with err -EACCES and not entered. With q.start_entry the starting point is the
 * entry start_name of r->fid. Returns 0, -ENOTDIR / -ENOENT (r->fid or the entry),
 * -EACCES (start_entry in a directory the caller may not search), -EINVAL (max_bytes
 * below one entry), -ENOMEM or -EIO. */
int mds_find(struct mds *m, const struct wire_find_req *r, struct wire_cursor *out);

/* What the predicates read of an inode besides its attributes. */
struct mds_find_more {
	uint32_t projid;
	uint64_t nentries;      /* a directory's */
	struct nacre_time btime; /* its birth time (an older inode's: its ctime) */
};

/* 1 if the entry (attributes, layout, name, depth) passes every predicate of q. Pure. */
int mds_find_match(const struct wire_find_query *q, const struct nacre_attr *a,
		   const struct mds_find_more *more, int has_layout,
		   const struct nacre_layout *l, const char *name, uint32_t depth);

/* The same for the whole request: its query and, when it has one, its find_expr. Pure. */
int mds_find_match_req(const struct wire_find_req *r, const struct nacre_attr *a,
		       const struct mds_find_more *more, int has_layout,
		       const struct nacre_layout *l, const char *name, uint32_t depth);

#endif
