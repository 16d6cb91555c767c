/* changelog.h - Lustre-style changelogs: a record of every namespace change, written in the
 * change's own transaction, kept until every registered user cleared it (docs/changelog.md).
 *
 * Records are written only while at least one user is registered and only for the types in
 * the mask (Lustre's default: everything but OPEN, ATIME, GETXATTR and NOPEN), so a file
 * system without users pays one atomic load per change. Indexes grow by one per record and
 * are never reused (a change whose transaction fails leaves a gap). A size cap
 * (max_records) evicts the user that holds the oldest records, logged, when the table
 * would pass it.
 *
 * Every change passed to mds_changelog_add or _note, recorded or not, is counted and its
 * inodes fed to the HSM policy's feed (feed.h) when a policy is on.
 *
 * Threading: mds_changelog_add runs inside writer operations (one at a time, writer.h),
 * which also run register, deregister, clear and mask changes, so the index and user
 * state need no lock of their own; readers take atomic snapshots of the counters and read
 * records in read-only transactions. */
#ifndef NACRE_MDS_CHANGELOG_H
#define NACRE_MDS_CHANGELOG_H

#include <stddef.h>
#include <stdint.h>

#include "mds/db.h"
#include "mds/mds.h"
#include "proto/rpc.h"

struct mds_changelog;

#define MDS_CL_DEFAULT_MAX_RECORDS 10000000ull
/* Lustre's CHANGELOG_DEFMASK restricted to the types nacre writes */
#define MDS_CL_ALLMASK ((1ull << NACRE_CL_LAST) - 1)
#define MDS_CL_DEFMASK (MDS_CL_ALLMASK & ~((1ull << NACRE_CL_ATIME) | (1ull << NACRE_CL_OPEN)))

/* Loads users, mask and the last index from m->db. max_records 0 = no cap. Returns 0,
 * -ENOMEM or -EIO; *out is the caller's (mds_changelog_destroy). */
int mds_changelog_create(struct mds *m, uint64_t max_records, struct mds_changelog **out);
void mds_changelog_destroy(struct mds_changelog *cl); /* NULL is fine */

/* 1 if a record of type would be written now (a user is registered and the mask has it).
 * Lets callers skip work for nothing; never blocks. NULL cl: 0. */
int mds_changelog_wants(const struct mds_changelog *cl, uint32_t type);

/* Inside a writer operation: appends r (its index and, when zero, its time are set here;
 * uid/gid and xattr are kept only when the extras ask for them) if wanted; else does
 * nothing. Returns 0 or the db's error, which must fail the operation. NULL cl: 0. */
int mds_changelog_add(struct mds_changelog *cl, struct mds_txn *txn,
		      struct nacre_changelog_rec *r);
/* The caller of a change in r: its uid/gid (an extra, kept when asked for) and its job id
 * (NACRE_CLF_JOBID, when it sent one). */
void mds_changelog_caller(struct nacre_changelog_rec *r, const struct nacre_cred *cr);
/* Helper for the namespace: fills r for type on tfid with pfid/name (either may be
 * NULL) and the caller (mds_changelog_caller), and adds it. */
int mds_changelog_note(struct mds_changelog *cl, struct mds_txn *txn, uint32_t type,
		       uint32_t flags, const struct nacre_fid *tfid, const struct nacre_fid *pfid,
		       const char *name, const struct nacre_cred *cr);

/* An HSM record of event (NACRE_CL_HE_*) on fid: error err (negative errno or 0) and the
 * dirty bit in the flags, as Lustre packs them. */
int mds_changelog_hsm(struct mds_changelog *cl, struct mds_txn *txn, uint32_t event, int err,
		      int dirty, const struct nacre_fid *fid);

/* How many changes went through mds_changelog_add or _note since start, recorded or not
 * (the HSM policy rescans only when it moved). Never blocks. NULL cl: 0. */
uint64_t mds_changelog_changes(const struct mds_changelog *cl);

/* The feed of changed FIDs (feed.h) that the hook fills once enabled: every inode a change
 * passed to mds_changelog_add or _note touched, recorded or not. Owned by cl. */
struct mds_feed *mds_changelog_feed(const struct mds_changelog *cl);

/* A record as stored: u16 version then wire_cl_rec. encode returns the length written to
 * buf (WIRE_CL_REC_MAX + 2 bytes) or -EINVAL; decode returns 0 or -EIO. Pure. */
int mds_changelog_rec_encode(const struct nacre_changelog_rec *r, uint8_t *buf, size_t len);
int mds_changelog_rec_decode(const void *buf, size_t len, struct nacre_changelog_rec *r);

/* CL_REGISTER, CL_DEREGISTER, CL_READ, CL_CLEAR and CL_MASK (admin and server keys). */
int mds_changelog_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);

#endif
