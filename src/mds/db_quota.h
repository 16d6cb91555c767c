/* db_quota.h - quota usage in the MDT's store, for db.c (inside the store, as db_raw.h):
 * each inode update is charged in its own transaction. The store's quota interface for the
 * rest of the MDS is in db.h (mds_db_quota_*). */
#ifndef NACRE_MDS_DB_QUOTA_H
#define NACRE_MDS_DB_QUOTA_H

#include "mds/db_raw.h"

/* What an inode record charges: present, owner ids, KiB. */
struct qown {
	int present;
	uint32_t id[MDS_QUOTA_TYPES];
	uint64_t kb;
};
/* The charge of an inode update (old -> new owners and size), checked
 * against the limits unless exempt; what the stored record of fid charges; what ino
 * charges; at open, the first count of usage, or (quotas off) forgetting that it was. */
int db_quota_charge(MDB_txn *t, struct mds_db *db, const struct qown *old,
		    const struct qown *new, int exempt);
int db_qown_stored(MDB_txn *t, MDB_dbi dbi, const struct nacre_fid *fid, struct qown *o);
void db_qown_of(const struct mds_inode *ino, struct qown *o);
int db_quota_count_once(struct mds_db *db, MDB_txn *t);
int db_quota_forget_count(struct mds_db *db, MDB_txn *t);

#endif
