/* db.h - the MDS metadata store: typed access to the LMDB environment in the data directory.
 *
 * This module is the only one that sees LMDB. Tables (named LMDB databases):
 *   meta      "schema" -> u32 magic, u32 version; "fsname" -> bytes; "next_fid" -> u64 seq,
 *             u32 oid (the next FID to hand out; FIDs are never reused)
 *   inodes    FID (16 bytes big-endian) -> versioned inode record (struct mds_inode)
 *   dentries  parent FID + u64 BE name hash + name -> child FID + u32 type
 *   links     child FID + parent FID + name -> u64 BE order (fid2path, hard links, loop
 *             checks); the order lists a FID's links as they were made, a renamed link last
 *             (empty in MDTs written before it: order 0)
 *   xattrs    FID + name -> value bytes
 *   destroy   u64 BE sequence -> FID + layout (objects to destroy on the OSTs)
 *   targets   u32 BE type + u32 BE index -> addr
 *   hsm_actions, hsm_fids: the HSM coordinator queue (see below)
 *   clients   u64 BE client id -> u16 version, name (every client holding a session:
 *             expected back after a restart, see docs/recovery.md)
 *   replies   u64 BE client id + u64 BE xid -> u16 version, u64 transno, fid, u64 value
 *             (the reply cache: what a change made, written in its own transaction)
 *   keys      key name -> u16 version, u8 role, u8 revoked, u64 gen (the key table:
 *             client and admin keys issued, docs/security.md)
 *   meta "last_transno" -> u64: the transno of the last change committed
 *   nodemap   rule name -> the rule's record (opaque here: nodemap_rule.c encodes it, with
 *             its own version); created on first open when missing, empty on an MDT
 *             formatted before nodemaps existed
 *   changelog u64 BE record index -> the record (opaque here: changelog.c encodes it, with
 *             its own version); changelog_users: user name ("cl1") -> its record (the
 *             last index it cleared); meta "changelog_next" -> u64, the lowest index a new
 *             record may take once records were purged. Created on first open when
 *             missing; empty until a user registers (docs/changelog.md)
 *   fid_grants u64 BE seq -> u16 version, u64 client id, u32 width: the sequences granted
 *             to clients (oids 1..width are the client's to give; db_fid.c)
 *   quota     u8 kind + u32 BE id -> u16 version, u64 kbytes, u64 inodes, u64 bsoft, u64 bhard,
 *             u64 isoft, u64 ihard, i64 btime, i64 itime (docs/quota.md). kind 0..2 (user,
 *             group, project): usage and limits of one id, kept in the same transaction as
 *             every inode change (mds_db_inode_put/_del charge it); kind 0x10 + type, id 0:
 *             the grace periods of the type (bsoft = block grace, isoft = inode grace, in
 *             seconds); kind 0x20 + type, id 0: the default limits of the type. Created on
 *             first open when missing; meta "quota_counted" -> u8 says usage was counted
 *             from the inodes once (an MDT older than quotas is counted at that open)
 * The name hash (63 bits, >= 3) is the readdir cookie; cookies 0..2 are reserved (0 = start,
 * 1 and 2 for "." and ".." in clients). Entries with equal hashes are returned in one batch.
 *
 * Transactions: read-only ones may be used from any thread (MDB_NOTLS) and must be short;
 * write transactions are opened only by the group commit (writer.c), one at a time. Functions return 0 or
 * a negative errno: -ENOENT for a missing key, -ENOSPC when the map is full, -EIO for a
 * corrupt record or LMDB failure (logged).
 */
#ifndef NACRE_MDS_DB_H
#define NACRE_MDS_DB_H

#include <stddef.h>
#include <stdint.h>

#include "mds/acl.h"
#include "common/fid.h"
#include "common/keytab.h"
#include "nacre/nacre_types.h"

#define MDS_DB_SCHEMA_MAGIC 0x4e4d4453u /* "NMDS" */
#define MDS_DB_SCHEMA_VERSION 1u

struct mds_db;
struct mds_txn;

/* An inode as stored. The symlink target lives inline (NUL-terminated). */
struct mds_inode {
	struct nacre_fid fid;
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint32_t rdev;
	uint64_t size;
	struct nacre_time atime;
	struct nacre_time mtime;
	struct nacre_time ctime;
	uint32_t hsm_state;
	uint32_t archive_id;
	uint64_t nentries;         /* directories: number of entries (no "." / "..") */
	uint8_t has_layout;        /* file: layout is set; directory: default layout is set */
	struct nacre_layout layout;
	char target[NACRE_PATH_MAX + 1]; /* symlinks */
	struct mds_acl acl; /* system.posix_acl_access: count 0 = none (the mode says it all) */
	uint32_t projid;      /* project id (quotas); 0 = none */
	uint8_t proj_inherit; /* directories: new entries take projid (and dirs this flag) */
	uint8_t has_blocks;   /* files: blocks is known (a client reported it) */
	uint64_t blocks;      /* files: 512-byte blocks the objects hold, as last reported at
			       * a close or size update (st_blocks); else estimated from size */
	uint8_t has_btime;    /* btime is known: made by an MDS that keeps it */
	struct nacre_time btime; /* when the inode was made (find --btime) */
};

enum {
	MDS_DB_FORMAT = 1 << 0,    /* create the MDT */
	MDS_DB_QUOTA_OFF = 1 << 1, /* count no usage and enforce no limit (nacre-mds --quota
				    * off); the next open without it recounts (docs/quota.md) */
};
/* Opens (flags without MDS_DB_FORMAT) or creates (with it) the MDT in dir. Formatting needs
 * an empty or missing dir and writes the schema, fsname and the root directory (0755,
 * root:root, no default layout). Opening checks the schema magic and version and that the
 * stored fsname equals fsname (NULL = accept any). On error writes a sentence naming dir and
 * the fix to err. *out is owned by the caller (mds_db_close). */
int mds_db_open(const char *dir, const char *fsname, unsigned flags, struct mds_db **out,
		char *err, size_t err_len);
int mds_db_quota_off(const struct mds_db *db); /* opened with MDS_DB_QUOTA_OFF */
void mds_db_close(struct mds_db *db); /* NULL is fine */
/* Flushes every committed transaction to disk (commits are asynchronous: see db.c).
 * Returns 0 or a negative errno. Thread-safe. */
int mds_db_sync(struct mds_db *db);
/* The fsname recorded at format time; valid while db is open. */
const char *mds_db_fsname(const struct mds_db *db);
/* Number of inodes (for statfs). Thread-safe. */
uint64_t mds_db_inode_count(struct mds_db *db);
/* The room the store has (for the space guard, space.h): map_left is what the map can still
 * grow by; free_bytes, counted only when count_free is set (it walks LMDB's free list), is
 * what pages LMDB freed and will reuse hold. Returns 0 or -EIO. Thread-safe. */
struct mds_db_room {
	uint64_t map_left;
	uint64_t free_bytes;
};
int mds_db_room(struct mds_db *db, int count_free, struct mds_db_room *out);
/* Test hook: overwrites the schema version record. */
int mds_db_set_schema_version(struct mds_db *db, uint32_t version);

/* Transactions. A read txn may be used by one thread at a time, from any thread. */
int mds_txn_begin_read(struct mds_db *db, struct mds_txn **out);
int mds_txn_begin_write(struct mds_db *db, struct mds_txn **out);
/* A nested write txn inside parent; parent must not be used until it ends. */
int mds_txn_begin_nested(struct mds_txn *parent, struct mds_txn **out);
/* Both free txn. commit returns 0 or -errno (the txn is gone either way). NULL is fine. */
int mds_txn_commit(struct mds_txn *txn);
void mds_txn_abort(struct mds_txn *txn);

/* Allocates the next FID (write txn). */
int mds_db_fid_alloc(struct mds_txn *txn, struct nacre_fid *out);
/* Makes sure fid is never handed out again (a replayed create reuses its first FID). */
int mds_db_fid_reserve(struct mds_txn *txn, const struct nacre_fid *fid);
/* Grants client a whole new sequence of width FIDs (oids 1..width), never handed out
 * before nor after (write txn): *seq. *seq not 0 on entry (a replay) asks for that one: 0 if
 * it is client's already or nobody had it (granted now), -EEXIST if it went elsewhere. */
int mds_db_fid_grant(struct mds_txn *txn, uint64_t client, uint32_t width, uint64_t *seq);
/* Who seq was granted to, and its width; -ENOENT if it never was. */
int mds_db_fid_grant_get(struct mds_txn *txn, uint64_t seq, uint64_t *client,
			 uint32_t *width);

/* What the operation running in a (nested) write txn made, for the reply cache: the inode
 * it created or changed, and one value (an append's offset, a create's handle). The writer
 * sets the owner (the request the operation runs for) and reads the note after it. */
struct mds_txn_note {
	struct nacre_fid fid;
	uint64_t value;
	int set;
};
void mds_txn_set_owner(struct mds_txn *txn, void *owner);
void *mds_txn_owner(const struct mds_txn *txn);
void mds_txn_note_result(struct mds_txn *txn, const struct nacre_fid *fid, uint64_t value);
const struct mds_txn_note *mds_txn_noted(const struct mds_txn *txn);

/* inodes */
int mds_db_inode_get(struct mds_txn *txn, const struct nacre_fid *fid, struct mds_inode *out);
int mds_db_inode_put(struct mds_txn *txn, const struct mds_inode *ino);
int mds_db_inode_del(struct mds_txn *txn, const struct nacre_fid *fid);
/* Calls fn for every inode; fn returns nonzero to stop (that value is returned). */
int mds_db_inode_iter(struct mds_txn *txn, int (*fn)(void *arg, const struct mds_inode *ino),
		      void *arg);

/* quotas (table quota, docs/quota.md). Types: */
enum { MDS_QUOTA_USR = 0, MDS_QUOTA_GRP = 1, MDS_QUOTA_PRJ = 2, MDS_QUOTA_TYPES = 3 };
#define MDS_QUOTA_KIND_GRACE 0x10   /* + type: the type's grace periods */
#define MDS_QUOTA_KIND_DEFAULT 0x20 /* + type: the type's default limits */
#define MDS_QUOTA_GRACE_DEFAULT 604800 /* one week, as Lustre */
/* One id's usage and limits (limits 0 = none; an id with no limit of its own takes the
 * type's defaults). btime/itime: when the grace of an exceeded soft limit ends (unix
 * seconds), 0 while under it. */
struct mds_quota {
	uint64_t kbytes, inodes;
	uint64_t bsoft, bhard, isoft, ihard;
	int64_t btime, itime;
};
/* -ENOENT if the record is missing (out zeroed). */
int mds_db_quota_get(struct mds_txn *txn, uint32_t kind, uint32_t id, struct mds_quota *out);
int mds_db_quota_put(struct mds_txn *txn, uint32_t kind, uint32_t id, const struct mds_quota *q);
/* The usage an inode is charged: *kbytes (regular files: the size rounded up to 4 KiB, or
 * the measured blocks when more: fallocate past the size) and one inode. Pure. */
void mds_db_quota_usage(const struct mds_inode *ino, uint64_t *kbytes);
/* Calls fn for every usage record (kinds 0..2); fn returns nonzero to stop. */
int mds_db_quota_iter(struct mds_txn *txn,
		      int (*fn)(void *arg, uint32_t kind, uint32_t id, const struct mds_quota *q),
		      void *arg);
/* The effective limits of (type, id) (its own, else the type's defaults) and the type's
 * grace periods, for a reply. */
int mds_db_quota_limits(struct mds_txn *txn, uint32_t type, uint32_t id, struct mds_quota *lim,
			uint64_t *bgrace, uint64_t *igrace, int *is_default);
/* Recounts usage from the inodes (user and group) and compares it with the stored records:
 * calls drift for each id whose stored usage differs (stored: the record, zero if none;
 * kbytes/inodes: the count) and, with fix, writes the count. *ndrift: how many differed. */
int mds_db_quota_recount(struct mds_txn *txn, int fix,
			 void (*drift)(void *arg, uint32_t kind, uint32_t id,
				       const struct mds_quota *stored, uint64_t kbytes,
				       uint64_t inodes),
			 void *arg, uint32_t *ndrift);
/* Charging (done by mds_db_inode_put/_del) refuses with -EDQUOT a new inode, or a bigger
 * file, whose owner, group or project would pass a hard limit, or a soft limit whose grace
 * ended; files owned by uid 0 are never refused. So are the changes of a txn marked
 * exempt: an operation made by root (the caller's uid 0 after nodemap mapping) marks its
 * txn before it writes, as Lustre exempts root's writes. */
void mds_txn_quota_exempt(struct mds_txn *txn);

/* dentries */
uint64_t mds_db_name_hash(const char *name, size_t len);
int mds_db_dentry_get(struct mds_txn *txn, const struct nacre_fid *parent, const char *name,
		      struct nacre_fid *child, uint32_t *type);
int mds_db_dentry_put(struct mds_txn *txn, const struct nacre_fid *parent, const char *name,
		      const struct nacre_fid *child, uint32_t type);
int mds_db_dentry_del(struct mds_txn *txn, const struct nacre_fid *parent, const char *name);
/* Calls fn for each entry of parent whose hash is >= start, in hash order. d->cookie is the
 * entry's hash. fn returns nonzero to stop; that value is returned. */
int mds_db_dentry_iter(struct mds_txn *txn, const struct nacre_fid *parent, uint64_t start,
		       int (*fn)(void *arg, const struct nacre_dirent *d), void *arg);

/* links (reverse entries) */
int mds_db_link_put(struct mds_txn *txn, const struct nacre_fid *child,
		    const struct nacre_fid *parent, const char *name);
int mds_db_link_del(struct mds_txn *txn, const struct nacre_fid *child,
		    const struct nacre_fid *parent, const char *name);
/* The first (parent, name) naming child, in key order (not link order); name has
 * NACRE_NAME_MAX + 1 bytes. -ENOENT if none. */
int mds_db_link_first(struct mds_txn *txn, const struct nacre_fid *child,
		      struct nacre_fid *parent, char *name);
/* Calls fn for each link of child in link order (the order they were made; a link put
 * again by a rename comes last), from the link numbered start (0 = the first). index is
 * the link's number. fn must not write in txn; it returns nonzero to stop, and that value
 * is returned. 0 when every link was passed (none: 0 too), -ENOMEM, -EIO. */
int mds_db_link_iter(struct mds_txn *txn, const struct nacre_fid *child, uint32_t start,
		     int (*fn)(void *arg, uint32_t index, const struct nacre_fid *parent,
			       const char *name),
		     void *arg);

/* xattrs. get copies up to size bytes to value (size 0: none) and returns the full length. */
int mds_db_xattr_get(struct mds_txn *txn, const struct nacre_fid *fid, const char *name,
		     void *value, size_t size);
int mds_db_xattr_put(struct mds_txn *txn, const struct nacre_fid *fid, const char *name,
		     const void *value, size_t len);
int mds_db_xattr_del(struct mds_txn *txn, const struct nacre_fid *fid, const char *name);
/* Calls fn(name) for each xattr of fid; fn returns nonzero to stop. */
int mds_db_xattr_iter(struct mds_txn *txn, const struct nacre_fid *fid,
		      int (*fn)(void *arg, const char *name), void *arg);
int mds_db_xattr_del_all(struct mds_txn *txn, const struct nacre_fid *fid);

/* destroy log */
int mds_db_destroy_add(struct mds_txn *txn, const struct nacre_fid *fid,
		       const struct nacre_layout *l);
/* The first record with sequence >= from. -ENOENT if none. */
int mds_db_destroy_next(struct mds_txn *txn, uint64_t from, uint64_t *seq,
			struct nacre_fid *fid, struct nacre_layout *l);
int mds_db_destroy_del(struct mds_txn *txn, uint64_t seq);

/* targets registry */
int mds_db_target_put(struct mds_txn *txn, uint32_t type, uint32_t index, const char *addr);
int mds_db_target_iter(struct mds_txn *txn,
		       int (*fn)(void *arg, uint32_t type, uint32_t index, const char *addr),
		       void *arg);

/* HSM action queue (tables hsm_actions and hsm_fids, created on first open when missing: an
 * MDT formatted before HSM existed just gains them). hsm_actions: u64 BE cookie -> record;
 * hsm_fids: FID -> u64 cookie of the file's active (WAITING or STARTED) action. */
struct mds_hsm_rec {
	struct nacre_hsm_action a;   /* cookie, action, status, fid, archive id, progress, path */
	uint64_t start_size;         /* ARCHIVE: size and mtime when STARTED (the data version) */
	struct nacre_time start_mtime;
	uint8_t has_layout;          /* RESTORE: the new objects' layout, chosen when STARTED */
	struct nacre_layout layout;
};
int mds_db_hsm_put(struct mds_txn *txn, const struct mds_hsm_rec *r);
int mds_db_hsm_get(struct mds_txn *txn, uint64_t cookie, struct mds_hsm_rec *out);
int mds_db_hsm_del(struct mds_txn *txn, uint64_t cookie);
/* The first record with cookie >= from; -ENOENT if none. Corrupt records are skipped. */
int mds_db_hsm_next(struct mds_txn *txn, uint64_t from, struct mds_hsm_rec *out);
/* The highest cookie in the table (0 if empty). */
int mds_db_hsm_last(struct mds_txn *txn, uint64_t *cookie);
int mds_db_hsm_fid_get(struct mds_txn *txn, const struct nacre_fid *fid, uint64_t *cookie);
int mds_db_hsm_fid_put(struct mds_txn *txn, const struct nacre_fid *fid, uint64_t cookie);
int mds_db_hsm_fid_del(struct mds_txn *txn, const struct nacre_fid *fid);

/* Sessions and the reply cache (tables clients and replies, created on first open when
 * missing). transno: 0 on an MDT that never recorded one. */
struct mds_reply_rec {
	uint64_t transno;
	struct nacre_fid fid; /* the noted inode, zero if none */
	uint64_t value;
};
int mds_db_transno_get(struct mds_txn *txn, uint64_t *out);
int mds_db_transno_put(struct mds_txn *txn, uint64_t transno);
int mds_db_client_put(struct mds_txn *txn, uint64_t client, const char *name);
/* Removes the client and every reply of it. A missing client is fine. */
int mds_db_client_del(struct mds_txn *txn, uint64_t client);
int mds_db_client_iter(struct mds_txn *txn,
		       int (*fn)(void *arg, uint64_t client, const char *name), void *arg);
int mds_db_reply_put(struct mds_txn *txn, uint64_t client, uint64_t xid,
		     const struct mds_reply_rec *r);
/* -ENOENT when the xid has no record. */
int mds_db_reply_get(struct mds_txn *txn, uint64_t client, uint64_t xid,
		     struct mds_reply_rec *out);
/* Forgets the client's replies below xid below (the client acknowledged them). */
int mds_db_reply_trim(struct mds_txn *txn, uint64_t client, uint64_t below);
/* Records in the reply cache (metrics, tests). Thread-safe. */
uint64_t mds_db_reply_count(struct mds_db *db);

/* Nodemap rules (table nodemap). The record is the caller's bytes (at most 64 KiB). get
 * copies up to size bytes and returns the record's length, -ENOENT if name has none. iter
 * calls fn for every rule in name order; fn returns nonzero to stop (that value is
 * returned). The record pointer is valid only during the call. */
int mds_db_nodemap_put(struct mds_txn *txn, const char *name, const void *rec, size_t len);
int mds_db_nodemap_del(struct mds_txn *txn, const char *name);
int mds_db_nodemap_iter(struct mds_txn *txn,
			int (*fn)(void *arg, const char *name, const void *rec, size_t len),
			void *arg);

/* Changelog (tables changelog and changelog_users; records and user records are the
 * caller's bytes). put: 0, -EINVAL for an empty or oversized record. iter calls fn for each
 * record with index >= from in index order until fn returns nonzero (that value is
 * returned); rec is valid only during the call. bounds: the first and last index present
 * (both 0 when empty). purge deletes every record with index <= upto (*deleted may be
 * NULL). next_get: 0 when never stored. The user functions are as the nodemap ones. */
int mds_db_cl_put(struct mds_txn *txn, uint64_t index, const void *rec, size_t len);
int mds_db_cl_iter(struct mds_txn *txn, uint64_t from,
		   int (*fn)(void *arg, uint64_t index, const void *rec, size_t len), void *arg);
int mds_db_cl_bounds(struct mds_txn *txn, uint64_t *first, uint64_t *last);
int mds_db_cl_purge(struct mds_txn *txn, uint64_t upto, uint64_t *deleted);
int mds_db_cl_next_get(struct mds_txn *txn, uint64_t *out);
int mds_db_cl_next_put(struct mds_txn *txn, uint64_t next);
int mds_db_cl_user_put(struct mds_txn *txn, const char *name, const void *rec, size_t len);
int mds_db_cl_user_del(struct mds_txn *txn, const char *name);
int mds_db_cl_user_iter(struct mds_txn *txn,
			int (*fn)(void *arg, const char *name, const void *rec, size_t len),
			void *arg);

/* FID keys, shared with tests. */
/* The key table. get: 0, -ENOENT or -EIO. iter: every entry in name order until fn returns
 * nonzero (that value is returned). */
int mds_db_key_put(struct mds_txn *txn, const struct keytab_entry *e);
int mds_db_key_get(struct mds_txn *txn, const char *name, struct keytab_entry *out);
int mds_db_key_iter(struct mds_txn *txn, int (*fn)(void *arg, const struct keytab_entry *e),
		    void *arg);

#endif
