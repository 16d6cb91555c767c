/* db_raw.h - inside the MDT's LMDB store: the handles, a transaction, error mapping, keys and
 * the inode record, shared by the files of the store (db.c: the tables; db_quota.c: quota
 * usage and limits). Nothing outside src/mds/db*.c includes it; the store's interface is
 * db.h. */
#ifndef NACRE_MDS_DB_RAW_H
#define NACRE_MDS_DB_RAW_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#include "mds/db.h"

#define INODE_REC_VERSION 1
#define INODE_REC_VERSION_ACL 2 /* version 1 + the access ACL; written only with an ACL */
#define INODE_REC_VERSION_PRJ 3 /* version 2 (an ACL count that may be 0) + u32 projid, u8
				 * inherit flag; written only with a project id or the flag */
#define INODE_REC_VERSION_BLOCKS 4 /* version 3 + u64 blocks; written only for a file
				    * whose objects' allocated blocks a client reported */
#define INODE_REC_VERSION_BTIME 5 /* version 3 + u8 has blocks [+ u64 blocks] + the birth
				   * time (i64 s, u32 ns); every inode made since */
#define MAPSIZE (8ull << 30)

struct mds_db {
	MDB_env *env; /* LMDB is thread-safe; the handles below are set once at open */
	MDB_dbi meta, inodes, dentries, links, xattrs, destroy, targets;
	MDB_dbi hsm, hsm_fids; /* optional tables: created when missing */
	MDB_dbi clients, replies; /* optional too (recovery) */
	MDB_dbi keys;             /* optional too (the key table) */
	MDB_dbi nodemap;          /* optional too (nodemaps) */
	MDB_dbi changelog, changelog_users; /* optional too (changelogs) */
	MDB_dbi quota;            /* optional too (quotas) */
	MDB_dbi fid_grants;       /* optional too (FID grants, db_fid.c) */
	int quota_off;            /* MDS_DB_QUOTA_OFF: no charging, no limits */
	char fsname[NACRE_FSNAME_MAX + 1];
	char dir[512];
};

struct mds_txn {
	MDB_txn *t;
	struct mds_db *db;
	void *owner;              /* the writer's: the request an operation runs for */
	int quota_exempt;         /* changes made by root: charged, never refused */
	struct mds_txn_note note; /* what the operation noted for the reply cache */
};

/* An LMDB return code as a negative errno (0 stays 0); a full map or a failing disk is
 * logged (rate-limited) with what was being done. */
int db_map_err(int rc, const char *what);
/* mdb_put with flags 0: an LMDB return code. */
int db_put_raw(MDB_txn *t, MDB_dbi dbi, const void *k, size_t kl, const void *v, size_t vl);
void db_key_to_fid(const uint8_t *k, struct nacre_fid *fid);
/* The inode record: decoded into ino (not its fid) or -NACRE_EFORMAT / -EIO; written under
 * its FID's key (an LMDB return code). */
int db_decode_inode(const void *buf, size_t len, struct mds_inode *ino);
int db_put_inode_raw(MDB_txn *t, MDB_dbi dbi, const struct mds_inode *ino);

/* Big-endian keys sort as numbers. */
static inline void be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static inline void be32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static inline uint64_t rd_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline uint32_t rd_be32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v = (v << 8) | p[i];
	return v;
}


#endif
