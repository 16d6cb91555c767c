/* db.c - the LMDB store of the MDS: open and format, transactions and the tables (quotas
 * are in db_quota.c, FIDs and their grants in db_fid.c; what they share in db_raw.h). Only the store's files include lmdb.h. */
#include "mds/db.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "mds/db_quota.h"
#include "nacre/nacre_errno.h"
#include "common/util.h"
#include "proto/cursor.h"
#include "proto/wire.h"

#define DESTROY_REC_VERSION 1
#define HSM_REC_VERSION 1
#define CLIENT_REC_VERSION 1
#define REPLY_REC_VERSION 1
#define KEY_REC_VERSION 1

/* ---------------- keys ---------------- */

/* FNV-1a with a final mix, folded to 63 bits; 0..2 are reserved cookies. On-disk format:
 * never change it without a schema version bump. */
uint64_t mds_db_name_hash(const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h &= 0x7fffffffffffffffull;
	if (h < 3)
		h += 3;
	return h;
}

/* ---------------- open / format ---------------- */

static int dir_state(const char *dir, int *has_db, int *empty)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	*has_db = 0;
	*empty = 1;
	while ((e = readdir(d)) != NULL) {
		/* a freshly made file system's lost+found does not make it used */
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, "lost+found"))
			continue;
		*empty = 0;
		if (!strcmp(e->d_name, "data.mdb"))
			*has_db = 1;
	}
	closedir(d);
	return 0;
}

static int open_dbis(struct mds_db *db, MDB_txn *t, unsigned flags)
{
	struct {
		const char *name;
		MDB_dbi *dbi;
	} tab[] = {{"meta", &db->meta},       {"inodes", &db->inodes}, {"dentries", &db->dentries},
		   {"links", &db->links},     {"xattrs", &db->xattrs}, {"destroy", &db->destroy},
		   {"targets", &db->targets}};
	for (size_t i = 0; i < ARRAY_SIZE(tab); i++) {
		int rc = mdb_dbi_open(t, tab[i].name, flags, tab[i].dbi);
		if (rc)
			return rc;
	}
	/* added with HSM: an older MDT simply gains them, no schema bump needed */
	int rc = mdb_dbi_open(t, "hsm_actions", MDB_CREATE, &db->hsm);
	if (!rc)
		rc = mdb_dbi_open(t, "hsm_fids", MDB_CREATE, &db->hsm_fids);
	/* added with recovery, the same way */
	if (!rc)
		rc = mdb_dbi_open(t, "clients", MDB_CREATE, &db->clients);
	if (!rc)
		rc = mdb_dbi_open(t, "replies", MDB_CREATE, &db->replies);
	/* added with the key table, the same way */
	if (!rc)
		rc = mdb_dbi_open(t, "keys", MDB_CREATE, &db->keys);
	/* added with nodemaps, the same way: an older MDT has no rules (docs/security.md) */
	if (!rc)
		rc = mdb_dbi_open(t, "nodemap", MDB_CREATE, &db->nodemap);
	/* added with changelogs, the same way: an older MDT has no users and no records */
	if (!rc)
		rc = mdb_dbi_open(t, "changelog", MDB_CREATE, &db->changelog);
	if (!rc)
		rc = mdb_dbi_open(t, "changelog_users", MDB_CREATE, &db->changelog_users);
	/* added with quotas, the same way: usage is counted at the first open (docs/quota.md) */
	if (!rc)
		rc = mdb_dbi_open(t, "quota", MDB_CREATE, &db->quota);
	/* added with FID grants, the same way: an older MDT granted none */
	if (!rc)
		rc = mdb_dbi_open(t, "fid_grants", MDB_CREATE, &db->fid_grants);
	return rc;
}

static int format_tables(struct mds_db *db, MDB_txn *t, const char *fsname)
{
	uint8_t schema[8];
	be32(schema, MDS_DB_SCHEMA_MAGIC);
	be32(schema + 4, MDS_DB_SCHEMA_VERSION);
	int rc = db_put_raw(t, db->meta, "schema", 6, schema, sizeof(schema));
	if (!rc)
		rc = db_put_raw(t, db->meta, "fsname", 6, fsname, strlen(fsname));
	uint8_t next[12];
	be64(next, NACRE_FIRST_SEQ);
	be32(next + 8, 1);
	if (!rc)
		rc = db_put_raw(t, db->meta, "next_fid", 8, next, sizeof(next));
	if (rc)
		return rc;

	struct mds_inode *root = calloc(1, sizeof(*root));
	if (!root)
		return ENOMEM;
	root->fid.seq = NACRE_ROOT_SEQ;
	root->fid.oid = NACRE_ROOT_OID;
	root->mode = S_IFDIR | 0755;
	root->nlink = 2;
	root->atime = root->mtime = root->ctime = root->btime = time_now();
	root->has_btime = 1;
	rc = db_put_inode_raw(t, db->inodes, root);
	free(root);
	return rc;
}

static int check_schema(struct mds_db *db, MDB_txn *t, const char *fsname, char *err,
			size_t err_len)
{
	MDB_val k = {6, "schema"}, v;
	int rc = mdb_get(t, db->meta, &k, &v);
	if (rc || v.mv_size != 8 || rd_be32(v.mv_data) != MDS_DB_SCHEMA_MAGIC) {
		snprintf(err, err_len,
			 "%s holds an LMDB environment that is not a nacre MDT (no schema record): "
			 "point --data at a nacre MDT directory",
			 db->dir);
		return -NACRE_EBADMAGIC;
	}
	uint32_t ver = rd_be32((const uint8_t *)v.mv_data + 4);
	if (ver != MDS_DB_SCHEMA_VERSION) {
		snprintf(err, err_len,
			 "%s has metadata schema version %u, this nacre-mds knows only version %u: "
			 "run a nacre-mds that matches the data",
			 db->dir, ver, MDS_DB_SCHEMA_VERSION);
		return -NACRE_EFORMAT;
	}
	MDB_val fk = {6, "fsname"};
	rc = mdb_get(t, db->meta, &fk, &v);
	if (rc || v.mv_size == 0 || v.mv_size > NACRE_FSNAME_MAX) {
		snprintf(err, err_len, "%s has no valid fsname record: the MDT is damaged", db->dir);
		return -NACRE_EFORMAT;
	}
	memcpy(db->fsname, v.mv_data, v.mv_size);
	db->fsname[v.mv_size] = 0;
	if (fsname && strcmp(fsname, db->fsname)) {
		snprintf(err, err_len,
			 "%s holds file system '%s', not '%s': use --fsname %s or another --data",
			 db->dir, db->fsname, fsname, db->fsname);
		return -NACRE_EFSNAME;
	}
	return 0;
}

int mds_db_open(const char *dir, const char *fsname, unsigned flags, struct mds_db **out,
		char *err, size_t err_len)
{
	int has_db = 0, empty = 1, rc;
	int format = (flags & MDS_DB_FORMAT) != 0;
	*out = NULL;
	if (format) {
		if (mkdir(dir, 0700) && errno != EEXIST) {
			rc = -errno;
			snprintf(err, err_len, "cannot create data directory %s: %s", dir,
				 strerror(-rc));
			return rc;
		}
	}
	rc = dir_state(dir, &has_db, &empty);
	if (rc) {
		if (rc == -ENOENT && !format)
			snprintf(err, err_len,
				 "no nacre MDT in %s: run with --format to create one", dir);
		else
			snprintf(err, err_len, "cannot read data directory %s: %s", dir,
				 strerror(-rc));
		return rc;
	}
	if (format && !empty) {
		snprintf(err, err_len,
			 "%s is not empty%s: --format needs an empty or missing directory", dir,
			 has_db ? " (it already holds an MDT; drop --format to use it)" : "");
		return -EEXIST;
	}
	if (!format && !has_db) {
		snprintf(err, err_len, "no nacre MDT in %s: run with --format to create one", dir);
		return -ENOENT;
	}

	struct mds_db *db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	str_copy(db->dir, dir, sizeof(db->dir));
	MDB_txn *t = NULL;
	const char *step = "mdb_env_create";
	rc = mdb_env_create(&db->env);
	if (!rc) {
		step = "mdb_env_set_mapsize";
		rc = mdb_env_set_mapsize(db->env, MAPSIZE);
	}
	if (!rc) {
		step = "mdb_env_set_maxdbs";
		rc = mdb_env_set_maxdbs(db->env, 32);
	}
	if (!rc) {
		step = "mdb_env_open";
		/* NOSYNC: a commit reaches the page cache at once (a killed MDS loses
		 * nothing) and the disk within the syncer's interval or at the next fsync
		 * (mds_db_sync), so metadata rates are not bound by one disk flush per
		 * batch. LMDB stays consistent: only the last interval can be lost in a
		 * power failure, as with a journal's commit interval. */
		rc = mdb_env_open(db->env, dir, MDB_NOTLS | MDB_NOSYNC, 0600);
	}
	if (!rc) {
		step = "mdb_txn_begin";
		rc = mdb_txn_begin(db->env, NULL, 0, &t);
	}
	if (!rc) {
		step = "opening tables";
		rc = open_dbis(db, t, format ? MDB_CREATE : 0);
		if (rc == MDB_NOTFOUND) {
			snprintf(err, err_len,
				 "%s holds an LMDB environment without nacre tables: point --data "
				 "at a nacre MDT directory",
				 dir);
			rc = -NACRE_EBADMAGIC;
			goto out_abort;
		}
	}
	if (!rc && format) {
		step = "formatting";
		rc = format_tables(db, t, fsname);
	}
	if (rc) {
		snprintf(err, err_len, "cannot open metadata store in %s (%s): %s", dir, step,
			 mdb_strerror(rc));
		rc = rc > 0 && rc < 4096 ? -rc : -EIO;
		goto out_abort;
	}
	rc = check_schema(db, t, fsname, err, err_len);
	if (rc)
		goto out_abort;
	db->quota_off = (flags & MDS_DB_QUOTA_OFF) != 0;
	rc = db->quota_off ? db_quota_forget_count(db, t) : db_quota_count_once(db, t);
	if (rc) {
		snprintf(err, err_len, "cannot count quota usage in %s: %s", dir, strerror(-rc));
		goto out_abort;
	}
	rc = mdb_txn_commit(t);
	t = NULL;
	if (rc) {
		snprintf(err, err_len, "cannot commit to metadata store in %s: %s", dir,
			 mdb_strerror(rc));
		rc = -EIO;
		goto out_close;
	}
	*out = db;
	return 0;

out_abort:
	if (t)
		mdb_txn_abort(t);
out_close:
	if (db->env)
		mdb_env_close(db->env);
	free(db);
	return rc;
}

void mds_db_close(struct mds_db *db)
{
	if (!db)
		return;
	mdb_env_close(db->env);
	free(db);
}

const char *mds_db_fsname(const struct mds_db *db)
{
	return db->fsname;
}

uint64_t mds_db_inode_count(struct mds_db *db)
{
	MDB_txn *t;
	MDB_stat st;
	if (mdb_txn_begin(db->env, NULL, MDB_RDONLY, &t))
		return 0;
	int rc = mdb_stat(t, db->inodes, &st);
	mdb_txn_abort(t);
	return rc ? 0 : st.ms_entries;
}

int mds_db_room(struct mds_db *db, int count_free, struct mds_db_room *out)
{
	MDB_envinfo info;
	MDB_stat st;
	MDB_txn *t;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t pages = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = mdb_env_info(db->env, &info)) || (rc = mdb_env_stat(db->env, &st)))
		return db_map_err(rc, "env info");
	uint64_t used = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
	out->map_left = info.me_mapsize > used ? info.me_mapsize - used : 0;
	if (!count_free)
		return 0;
	if ((rc = mdb_txn_begin(db->env, NULL, MDB_RDONLY, &t)))
		return db_map_err(rc, "txn begin");
	/* the free list is table 0: txnid -> page list, whose first word is its length
	 * (how mdb_stat -f counts free pages) */
	rc = mdb_cursor_open(t, 0, &cur);
	if (!rc) {
		while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
			size_t n;
			if (v.mv_size < sizeof(n))
				continue;
			memcpy(&n, v.mv_data, sizeof(n));
			pages += n;
		}
		mdb_cursor_close(cur);
	}
	mdb_txn_abort(t);
	out->free_bytes = pages * st.ms_psize;
	return db_map_err(rc, "free list");
}

int mds_db_set_schema_version(struct mds_db *db, uint32_t version)
{
	MDB_txn *t;
	uint8_t schema[8];
	be32(schema, MDS_DB_SCHEMA_MAGIC);
	be32(schema + 4, version);
	int rc = mdb_txn_begin(db->env, NULL, 0, &t);
	if (rc)
		return db_map_err(rc, "txn begin");
	rc = db_put_raw(t, db->meta, "schema", 6, schema, sizeof(schema));
	if (rc) {
		mdb_txn_abort(t);
		return db_map_err(rc, "schema put");
	}
	return db_map_err(mdb_txn_commit(t), "commit");
}

/* ---------------- transactions ---------------- */

static int txn_begin(struct mds_db *db, MDB_txn *parent, unsigned flags, struct mds_txn **out)
{
	struct mds_txn *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	int rc = mdb_txn_begin(db->env, parent, flags, &x->t);
	if (rc) {
		free(x);
		return db_map_err(rc, "txn begin");
	}
	x->db = db;
	*out = x;
	return 0;
}

int mds_txn_begin_read(struct mds_db *db, struct mds_txn **out)
{
	return txn_begin(db, NULL, MDB_RDONLY, out);
}

int mds_txn_begin_write(struct mds_db *db, struct mds_txn **out)
{
	return txn_begin(db, NULL, 0, out);
}

int mds_txn_begin_nested(struct mds_txn *parent, struct mds_txn **out)
{
	return txn_begin(parent->db, parent->t, 0, out);
}

int mds_db_sync(struct mds_db *db)
{
	return db_map_err(mdb_env_sync(db->env, 1), "sync");
}

int mds_txn_commit(struct mds_txn *txn)
{
	if (!txn)
		return 0;
	int rc = mdb_txn_commit(txn->t);
	free(txn);
	return db_map_err(rc, "commit");
}

void mds_txn_abort(struct mds_txn *txn)
{
	if (!txn)
		return;
	mdb_txn_abort(txn->t);
	free(txn);
}

void mds_txn_quota_exempt(struct mds_txn *txn)
{
	txn->quota_exempt = 1;
}

void mds_txn_set_owner(struct mds_txn *txn, void *owner)
{
	txn->owner = owner;
}

void *mds_txn_owner(const struct mds_txn *txn)
{
	return txn->owner;
}

void mds_txn_note_result(struct mds_txn *txn, const struct nacre_fid *fid, uint64_t value)
{
	if (fid)
		txn->note.fid = *fid;
	txn->note.value = value;
	txn->note.set = 1;
}

const struct mds_txn_note *mds_txn_noted(const struct mds_txn *txn)
{
	return &txn->note;
}

/* ---------------- inodes ---------------- */

int mds_db_inode_get(struct mds_txn *txn, const struct nacre_fid *fid, struct mds_inode *out)
{
	uint8_t kb[16];
	fid_to_key(fid, kb);
	MDB_val k = {16, kb}, v;
	int rc = mdb_get(txn->t, txn->db->inodes, &k, &v);
	if (rc)
		return db_map_err(rc, "inode get");
	rc = db_decode_inode(v.mv_data, v.mv_size, out);
	if (rc) {
		char fs[NACRE_FID_STR_MAX];
		LOG_ERR("db", "corrupt inode record for %s (%zu bytes)",
			fid_format(fid, fs, sizeof(fs)), v.mv_size);
		return -EIO;
	}
	out->fid = *fid;
	return 0;
}

int mds_db_quota_off(const struct mds_db *db)
{
	return db->quota_off;
}

int mds_db_inode_put(struct mds_txn *txn, const struct mds_inode *ino)
{
	struct qown old, new;
	int rc;

	if (txn->db->quota_off)
		return db_map_err(db_put_inode_raw(txn->t, txn->db->inodes, ino), "inode put");
	rc = db_qown_stored(txn->t, txn->db->inodes, &ino->fid, &old);
	if (rc)
		return rc;
	db_qown_of(ino, &new);
	rc = db_quota_charge(txn->t, txn->db, &old, &new, txn->quota_exempt);
	if (rc)
		return rc;
	return db_map_err(db_put_inode_raw(txn->t, txn->db->inodes, ino), "inode put");
}

int mds_db_inode_del(struct mds_txn *txn, const struct nacre_fid *fid)
{
	uint8_t kb[16];
	struct qown old, none;
	int rc = 0;

	if (!txn->db->quota_off) {
		rc = db_qown_stored(txn->t, txn->db->inodes, fid, &old);
		if (rc)
			return rc;
		memset(&none, 0, sizeof(none));
		rc = db_quota_charge(txn->t, txn->db, &old, &none, 1);
	}
	if (rc)
		return rc;
	fid_to_key(fid, kb);
	MDB_val k = {16, kb};
	return db_map_err(mdb_del(txn->t, txn->db->inodes, &k, NULL), "inode del");
}

int mds_db_inode_iter(struct mds_txn *txn, int (*fn)(void *arg, const struct mds_inode *ino),
		      void *arg)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->t, txn->db->inodes, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	struct mds_inode *ino = malloc(sizeof(*ino));
	if (!ino) {
		mdb_cursor_close(cur);
		return -ENOMEM;
	}
	MDB_val k, v;
	int ret = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 16 || db_decode_inode(v.mv_data, v.mv_size, ino)) {
			LOG_ERR("db", "skipping a corrupt inode record");
			continue;
		}
		fid_from_key(k.mv_data, &ino->fid);
		ret = fn(arg, ino);
		if (ret)
			break;
	}
	if (rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "inode iter");
	free(ino);
	mdb_cursor_close(cur);
	return ret;
}

/* ---------------- dentries ---------------- */

static size_t dentry_key(uint8_t *k, const struct nacre_fid *parent, const char *name)
{
	size_t n = strlen(name);
	fid_to_key(parent, k);
	be64(k + 16, mds_db_name_hash(name, n));
	memcpy(k + 24, name, n);
	return 24 + n;
}

int mds_db_dentry_get(struct mds_txn *txn, const struct nacre_fid *parent, const char *name,
		      struct nacre_fid *child, uint32_t *type)
{
	uint8_t kb[24 + NACRE_NAME_MAX];
	if (strlen(name) > NACRE_NAME_MAX)
		return -ENAMETOOLONG;
	MDB_val k = {dentry_key(kb, parent, name), kb}, v;
	int rc = mdb_get(txn->t, txn->db->dentries, &k, &v);
	if (rc)
		return db_map_err(rc, "dentry get");
	if (v.mv_size != 20)
		return -EIO;
	fid_from_key(v.mv_data, child);
	if (type)
		*type = rd_be32((const uint8_t *)v.mv_data + 16);
	return 0;
}

int mds_db_dentry_put(struct mds_txn *txn, const struct nacre_fid *parent, const char *name,
		      const struct nacre_fid *child, uint32_t type)
{
	uint8_t kb[24 + NACRE_NAME_MAX], vb[20];
	if (strlen(name) > NACRE_NAME_MAX)
		return -ENAMETOOLONG;
	size_t kl = dentry_key(kb, parent, name);
	fid_to_key(child, vb);
	be32(vb + 16, type);
	return db_map_err(db_put_raw(txn->t, txn->db->dentries, kb, kl, vb, 20), "dentry put");
}

int mds_db_dentry_del(struct mds_txn *txn, const struct nacre_fid *parent, const char *name)
{
	uint8_t kb[24 + NACRE_NAME_MAX];
	if (strlen(name) > NACRE_NAME_MAX)
		return -ENAMETOOLONG;
	MDB_val k = {dentry_key(kb, parent, name), kb};
	return db_map_err(mdb_del(txn->t, txn->db->dentries, &k, NULL), "dentry del");
}

int mds_db_dentry_iter(struct mds_txn *txn, const struct nacre_fid *parent, uint64_t start,
		       int (*fn)(void *arg, const struct nacre_dirent *d), void *arg)
{
	uint8_t kb[24];
	fid_to_key(parent, kb);
	be64(kb + 16, start);
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->t, txn->db->dentries, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	struct nacre_dirent *d = malloc(sizeof(*d));
	if (!d) {
		mdb_cursor_close(cur);
		return -ENOMEM;
	}
	MDB_val k = {24, kb}, v;
	int ret = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 25 || memcmp(k.mv_data, kb, 16))
			break; /* past this directory */
		size_t nl = k.mv_size - 24;
		if (nl > NACRE_NAME_MAX || v.mv_size != 20) {
			LOG_ERR("db", "skipping a corrupt directory entry");
			continue;
		}
		d->cookie = rd_be64((const uint8_t *)k.mv_data + 16);
		memcpy(d->name, (const uint8_t *)k.mv_data + 24, nl);
		d->name[nl] = 0;
		fid_from_key(v.mv_data, &d->fid);
		d->type = rd_be32((const uint8_t *)v.mv_data + 16);
		ret = fn(arg, d);
		if (ret)
			break;
	}
	if (rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "dentry iter");
	free(d);
	mdb_cursor_close(cur);
	return ret;
}

/* ---------------- links ---------------- */

static size_t link_key(uint8_t *k, const struct nacre_fid *child, const struct nacre_fid *parent,
		       const char *name)
{
	size_t n = strlen(name);
	fid_to_key(child, k);
	fid_to_key(parent, k + 16);
	memcpy(k + 32, name, n);
	return 32 + n;
}

/* A link's value is its order: u64 big-endian, one more than the highest of the child's
 * other links, so the links list in the order they were made and a renamed link (deleted,
 * put again) comes last. A link written before orders existed has an empty value: order 0,
 * before the others, in key order among themselves. */
static uint64_t link_order(const MDB_val *v)
{
	uint64_t o = 0;

	if (v->mv_size == 8)
		for (int i = 0; i < 8; i++)
			o = o << 8 | ((const uint8_t *)v->mv_data)[i];
	return o;
}

/* The highest order among child's links (0 if none), into *out. */
static int link_order_max(struct mds_txn *txn, const struct nacre_fid *child, uint64_t *out)
{
	uint8_t kb[16];
	MDB_cursor *cur;
	MDB_val k = {16, kb}, v;
	int rc;

	*out = 0;
	fid_to_key(child, kb);
	rc = mdb_cursor_open(txn->t, txn->db->links, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 16 || memcmp(k.mv_data, kb, 16))
			break;
		uint64_t o = link_order(&v);
		if (o > *out)
			*out = o;
	}
	mdb_cursor_close(cur);
	return rc && rc != MDB_NOTFOUND ? db_map_err(rc, "link order") : 0;
}

int mds_db_link_put(struct mds_txn *txn, const struct nacre_fid *child,
		    const struct nacre_fid *parent, const char *name)
{
	uint8_t kb[32 + NACRE_NAME_MAX], vb[8];
	uint64_t order;
	if (strlen(name) > NACRE_NAME_MAX)
		return -ENAMETOOLONG;
	size_t kl = link_key(kb, child, parent, name);
	int rc = link_order_max(txn, child, &order);
	if (rc)
		return rc;
	order++;
	for (int i = 7; i >= 0; i--, order >>= 8)
		vb[i] = (uint8_t)order;
	return db_map_err(db_put_raw(txn->t, txn->db->links, kb, kl, vb, sizeof(vb)), "link put");
}

int mds_db_link_del(struct mds_txn *txn, const struct nacre_fid *child,
		    const struct nacre_fid *parent, const char *name)
{
	uint8_t kb[32 + NACRE_NAME_MAX];
	if (strlen(name) > NACRE_NAME_MAX)
		return -ENAMETOOLONG;
	MDB_val k = {link_key(kb, child, parent, name), kb};
	return db_map_err(mdb_del(txn->t, txn->db->links, &k, NULL), "link del");
}

int mds_db_link_first(struct mds_txn *txn, const struct nacre_fid *child,
		      struct nacre_fid *parent, char *name)
{
	uint8_t kb[16];
	fid_to_key(child, kb);
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->t, txn->db->links, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	MDB_val k = {16, kb}, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	int ret;
	if (rc)
		ret = db_map_err(rc, "link get");
	else if (k.mv_size <= 32 || k.mv_size > 32 + NACRE_NAME_MAX || memcmp(k.mv_data, kb, 16))
		ret = -ENOENT;
	else {
		fid_from_key((const uint8_t *)k.mv_data + 16, parent);
		memcpy(name, (const uint8_t *)k.mv_data + 32, k.mv_size - 32);
		name[k.mv_size - 32] = 0;
		ret = 0;
	}
	mdb_cursor_close(cur);
	return ret;
}

struct link_ref {
	uint64_t order;
	uint32_t seq; /* key order, for equal orders */
	const uint8_t *key; /* into the transaction's pages: valid until it writes or ends */
	size_t klen;
};

static int link_ref_cmp(const void *a, const void *b)
{
	const struct link_ref *x = a, *y = b;

	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int mds_db_link_iter(struct mds_txn *txn, const struct nacre_fid *child, uint32_t start,
		     int (*fn)(void *arg, uint32_t index, const struct nacre_fid *parent,
			       const char *name),
		     void *arg)
{
	uint8_t kb[16];
	struct link_ref *refs = NULL;
	size_t n = 0, cap = 0;
	MDB_cursor *cur;
	MDB_val k = {16, kb}, v;
	int rc, ret = 0;

	fid_to_key(child, kb);
	rc = mdb_cursor_open(txn->t, txn->db->links, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 16 || memcmp(k.mv_data, kb, 16))
			break;
		if (k.mv_size <= 32 || k.mv_size > 32 + NACRE_NAME_MAX) {
			ret = db_map_err(MDB_CORRUPTED, "link key");
			break;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct link_ref *r = realloc(refs, ncap * sizeof(*r));
			if (!r) {
				ret = -ENOMEM;
				break;
			}
			refs = r;
			cap = ncap;
		}
		refs[n] = (struct link_ref){link_order(&v), (uint32_t)n, k.mv_data, k.mv_size};
		n++;
	}
	if (!ret && rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "link iter");
	mdb_cursor_close(cur);
	if (!ret && n > 1)
		qsort(refs, n, sizeof(*refs), link_ref_cmp);
	char name[NACRE_NAME_MAX + 1];
	for (size_t i = start; !ret && i < n; i++) {
		struct nacre_fid parent;

		fid_from_key(refs[i].key + 16, &parent);
		memcpy(name, refs[i].key + 32, refs[i].klen - 32);
		name[refs[i].klen - 32] = 0;
		ret = fn(arg, (uint32_t)i, &parent, name);
	}
	free(refs);
	return ret;
}

/* ---------------- xattrs ---------------- */

static size_t xattr_key(uint8_t *k, const struct nacre_fid *fid, const char *name)
{
	size_t n = strlen(name);
	fid_to_key(fid, k);
	memcpy(k + 16, name, n);
	return 16 + n;
}

int mds_db_xattr_get(struct mds_txn *txn, const struct nacre_fid *fid, const char *name,
		     void *value, size_t size)
{
	uint8_t kb[16 + NACRE_NAME_MAX];
	if (strlen(name) > NACRE_NAME_MAX)
		return -ERANGE;
	MDB_val k = {xattr_key(kb, fid, name), kb}, v;
	int rc = mdb_get(txn->t, txn->db->xattrs, &k, &v);
	if (rc)
		return rc == MDB_NOTFOUND ? -ENODATA : db_map_err(rc, "xattr get");
	if (size)
		memcpy(value, v.mv_data, v.mv_size < size ? v.mv_size : size);
	return (int)v.mv_size;
}

int mds_db_xattr_put(struct mds_txn *txn, const struct nacre_fid *fid, const char *name,
		     const void *value, size_t len)
{
	uint8_t kb[16 + NACRE_NAME_MAX];
	if (strlen(name) > NACRE_NAME_MAX)
		return -ERANGE;
	size_t kl = xattr_key(kb, fid, name);
	return db_map_err(db_put_raw(txn->t, txn->db->xattrs, kb, kl, len ? value : "", len),
		       "xattr put");
}

int mds_db_xattr_del(struct mds_txn *txn, const struct nacre_fid *fid, const char *name)
{
	uint8_t kb[16 + NACRE_NAME_MAX];
	if (strlen(name) > NACRE_NAME_MAX)
		return -ERANGE;
	MDB_val k = {xattr_key(kb, fid, name), kb};
	int rc = mdb_del(txn->t, txn->db->xattrs, &k, NULL);
	return rc == MDB_NOTFOUND ? -ENODATA : db_map_err(rc, "xattr del");
}

/* Walks the xattrs of fid; del = 1 deletes each one instead of calling fn. */
static int xattr_walk(struct mds_txn *txn, const struct nacre_fid *fid, int del,
		      int (*fn)(void *arg, const char *name), void *arg)
{
	uint8_t kb[16];
	char name[NACRE_NAME_MAX + 1];
	fid_to_key(fid, kb);
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->t, txn->db->xattrs, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	MDB_val k = {16, kb}, v;
	int ret = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size <= 16 || memcmp(k.mv_data, kb, 16))
			break;
		if (del) {
			rc = mdb_cursor_del(cur, 0);
			if (rc)
				break;
			continue;
		}
		size_t nl = k.mv_size - 16;
		if (nl > NACRE_NAME_MAX)
			continue;
		memcpy(name, (const uint8_t *)k.mv_data + 16, nl);
		name[nl] = 0;
		ret = fn(arg, name);
		if (ret)
			break;
	}
	if (rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "xattr walk");
	mdb_cursor_close(cur);
	return ret;
}

int mds_db_xattr_iter(struct mds_txn *txn, const struct nacre_fid *fid,
		      int (*fn)(void *arg, const char *name), void *arg)
{
	return xattr_walk(txn, fid, 0, fn, arg);
}

int mds_db_xattr_del_all(struct mds_txn *txn, const struct nacre_fid *fid)
{
	return xattr_walk(txn, fid, 1, NULL, NULL);
}

/* ---------------- destroy log ---------------- */

int mds_db_destroy_add(struct mds_txn *txn, const struct nacre_fid *fid,
		       const struct nacre_layout *l)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->t, txn->db->destroy, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	MDB_val k, v;
	uint64_t seq = 1;
	rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	if (!rc && k.mv_size == 8)
		seq = rd_be64(k.mv_data) + 1;
	mdb_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND)
		return db_map_err(rc, "destroy last");

	uint8_t kb[8];
	be64(kb, seq);
	struct wire_cursor c;
	wire_cursor_init_dyn(&c, 4096);
	wire_put_u16(&c, DESTROY_REC_VERSION);
	wire_fid_put(&c, fid);
	wire_layout_put(&c, l);
	if (!wire_cursor_ok(&c)) {
		wire_cursor_fini(&c);
		return -EINVAL;
	}
	rc = db_put_raw(txn->t, txn->db->destroy, kb, 8, c.buf, wire_cursor_pos(&c));
	wire_cursor_fini(&c);
	return db_map_err(rc, "destroy put");
}

int mds_db_destroy_next(struct mds_txn *txn, uint64_t from, uint64_t *seq,
			struct nacre_fid *fid, struct nacre_layout *l)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->t, txn->db->destroy, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	uint8_t kb[8];
	be64(kb, from);
	MDB_val k = {8, kb}, v;
	int ret = -ENOENT;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 8)
			continue;
		struct wire_cursor c;
		wire_cursor_init_read(&c, v.mv_data, v.mv_size);
		uint16_t ver = wire_get_u16(&c);
		wire_fid_get(&c, fid);
		wire_layout_get(&c, l);
		*seq = rd_be64(k.mv_data);
		if (ver != DESTROY_REC_VERSION || !wire_cursor_ok(&c)) {
			LOG_ERR("db", "skipping a corrupt destroy record %" PRIu64, *seq);
			continue;
		}
		ret = 0;
		break;
	}
	if (rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "destroy next");
	mdb_cursor_close(cur);
	return ret;
}

int mds_db_destroy_del(struct mds_txn *txn, uint64_t seq)
{
	uint8_t kb[8];
	be64(kb, seq);
	MDB_val k = {8, kb};
	return db_map_err(mdb_del(txn->t, txn->db->destroy, &k, NULL), "destroy del");
}

/* ---------------- targets ---------------- */

int mds_db_target_put(struct mds_txn *txn, uint32_t type, uint32_t index, const char *addr)
{
	uint8_t kb[8];
	be32(kb, type);
	be32(kb + 4, index);
	return db_map_err(db_put_raw(txn->t, txn->db->targets, kb, 8, addr, strlen(addr)),
		       "target put");
}

int mds_db_target_iter(struct mds_txn *txn,
		       int (*fn)(void *arg, uint32_t type, uint32_t index, const char *addr),
		       void *arg)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->t, txn->db->targets, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	MDB_val k, v;
	char addr[NACRE_ADDR_MAX + 1];
	int ret = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 8 || v.mv_size > NACRE_ADDR_MAX)
			continue;
		memcpy(addr, v.mv_data, v.mv_size);
		addr[v.mv_size] = 0;
		ret = fn(arg, rd_be32(k.mv_data), rd_be32((const uint8_t *)k.mv_data + 4), addr);
		if (ret)
			break;
	}
	if (rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "target iter");
	mdb_cursor_close(cur);
	return ret;
}

/* ---------------- HSM action queue ---------------- */

/* record: u16 version, hsm_action (wire encoding), u64 start_size, i64 + u32 start_mtime,
 * u8 has_layout, layout if has_layout */
int mds_db_hsm_put(struct mds_txn *txn, const struct mds_hsm_rec *r)
{
	uint8_t kb[8];
	struct wire_cursor c;
	be64(kb, r->a.cookie);
	wire_cursor_init_dyn(&c, 16384);
	wire_put_u16(&c, HSM_REC_VERSION);
	wire_hsm_action_put(&c, &r->a);
	wire_put_u64(&c, r->start_size);
	wire_put_i64(&c, r->start_mtime.sec);
	wire_put_u32(&c, r->start_mtime.nsec);
	wire_put_u8(&c, r->has_layout ? 1 : 0);
	if (r->has_layout)
		wire_layout_put(&c, &r->layout);
	if (!wire_cursor_ok(&c)) {
		wire_cursor_fini(&c);
		return -EINVAL;
	}
	int rc = db_put_raw(txn->t, txn->db->hsm, kb, 8, c.buf, wire_cursor_pos(&c));
	wire_cursor_fini(&c);
	return db_map_err(rc, "hsm put");
}

static int decode_hsm(const void *buf, size_t len, struct mds_hsm_rec *r)
{
	struct wire_cursor c;
	memset(r, 0, sizeof(*r));
	wire_cursor_init_read(&c, buf, len);
	uint16_t ver = wire_get_u16(&c);
	wire_hsm_action_get(&c, &r->a);
	r->start_size = wire_get_u64(&c);
	r->start_mtime.sec = wire_get_i64(&c);
	r->start_mtime.nsec = wire_get_u32(&c);
	r->has_layout = wire_get_u8(&c);
	if (r->has_layout)
		wire_layout_get(&c, &r->layout);
	if (ver != HSM_REC_VERSION || !wire_cursor_ok(&c) || wire_cursor_left(&c) != 0)
		return -EIO;
	return 0;
}

int mds_db_hsm_get(struct mds_txn *txn, uint64_t cookie, struct mds_hsm_rec *out)
{
	uint8_t kb[8];
	be64(kb, cookie);
	MDB_val k = {8, kb}, v;
	int rc = mdb_get(txn->t, txn->db->hsm, &k, &v);
	if (rc)
		return db_map_err(rc, "hsm get");
	return decode_hsm(v.mv_data, v.mv_size, out);
}

int mds_db_hsm_del(struct mds_txn *txn, uint64_t cookie)
{
	uint8_t kb[8];
	be64(kb, cookie);
	MDB_val k = {8, kb};
	return db_map_err(mdb_del(txn->t, txn->db->hsm, &k, NULL), "hsm del");
}

int mds_db_hsm_next(struct mds_txn *txn, uint64_t from, struct mds_hsm_rec *out)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->t, txn->db->hsm, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	uint8_t kb[8];
	be64(kb, from);
	MDB_val k = {8, kb}, v;
	int ret = -ENOENT;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 8)
			continue;
		if (decode_hsm(v.mv_data, v.mv_size, out) ||
		    out->a.cookie != rd_be64(k.mv_data)) {
			LOG_ERR("db", "skipping a corrupt HSM action record %" PRIu64,
				rd_be64(k.mv_data));
			continue;
		}
		ret = 0;
		break;
	}
	if (rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "hsm next");
	mdb_cursor_close(cur);
	return ret;
}

int mds_db_hsm_last(struct mds_txn *txn, uint64_t *cookie)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->t, txn->db->hsm, &cur);
	if (rc)
		return db_map_err(rc, "cursor open");
	MDB_val k, v;
	*cookie = 0;
	rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	if (!rc && k.mv_size == 8)
		*cookie = rd_be64(k.mv_data);
	mdb_cursor_close(cur);
	return rc && rc != MDB_NOTFOUND ? db_map_err(rc, "hsm last") : 0;
}

int mds_db_hsm_fid_get(struct mds_txn *txn, const struct nacre_fid *fid, uint64_t *cookie)
{
	uint8_t kb[16];
	fid_to_key(fid, kb);
	MDB_val k = {16, kb}, v;
	int rc = mdb_get(txn->t, txn->db->hsm_fids, &k, &v);
	if (rc)
		return db_map_err(rc, "hsm fid get");
	if (v.mv_size != 8)
		return -EIO;
	*cookie = rd_be64(v.mv_data);
	return 0;
}

int mds_db_hsm_fid_put(struct mds_txn *txn, const struct nacre_fid *fid, uint64_t cookie)
{
	uint8_t kb[16], vb[8];
	fid_to_key(fid, kb);
	be64(vb, cookie);
	return db_map_err(db_put_raw(txn->t, txn->db->hsm_fids, kb, 16, vb, 8), "hsm fid put");
}

int mds_db_hsm_fid_del(struct mds_txn *txn, const struct nacre_fid *fid)
{
	uint8_t kb[16];
	fid_to_key(fid, kb);
	MDB_val k = {16, kb};
	int rc = mdb_del(txn->t, txn->db->hsm_fids, &k, NULL);
	return rc == MDB_NOTFOUND ? 0 : db_map_err(rc, "hsm fid del");
}

/* ---------------- sessions and the reply cache ---------------- */

/* A u64 counter of the meta table: *out = 0 when it was never written (an MDT older than
 * the counter). */
static int meta_u64_get(struct mds_txn *txn, const char *key, uint64_t *out)
{
	MDB_val k = {strlen(key), (void *)key}, v;
	int rc = mdb_get(txn->t, txn->db->meta, &k, &v);

	if (rc == MDB_NOTFOUND) {
		*out = 0;
		return 0;
	}
	if (rc || v.mv_size != 8)
		return rc ? db_map_err(rc, key) : -EIO;
	*out = rd_be64(v.mv_data);
	return 0;
}

static int meta_u64_put(struct mds_txn *txn, const char *key, uint64_t value)
{
	uint8_t b[8];

	be64(b, value);
	return db_map_err(db_put_raw(txn->t, txn->db->meta, key, strlen(key), b, 8), key);
}

int mds_db_transno_get(struct mds_txn *txn, uint64_t *out)
{
	return meta_u64_get(txn, "last_transno", out); /* 0: no change had a transno yet */
}

int mds_db_transno_put(struct mds_txn *txn, uint64_t transno)
{
	return meta_u64_put(txn, "last_transno", transno);
}

int mds_db_client_put(struct mds_txn *txn, uint64_t client, const char *name)
{
	uint8_t kb[8], vb[2 + 2 + NACRE_NAME_MAX];
	struct wire_cursor c;

	be64(kb, client);
	wire_cursor_init_write(&c, vb, sizeof(vb));
	wire_put_u16(&c, CLIENT_REC_VERSION);
	wire_name_put(&c, name && name[0] ? name : "?");
	if (!wire_cursor_ok(&c))
		return -EINVAL;
	return db_map_err(db_put_raw(txn->t, txn->db->clients, kb, 8, vb, c.pos), "client put");
}

int mds_db_client_iter(struct mds_txn *txn,
		       int (*fn)(void *arg, uint64_t client, const char *name), void *arg)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn->t, txn->db->clients, &cur), ret = 0;

	if (rc)
		return db_map_err(rc, "cursor open");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		char name[NACRE_NAME_MAX + 1];
		struct wire_cursor c;
		if (k.mv_size != 8)
			continue;
		wire_cursor_init_read(&c, v.mv_data, v.mv_size);
		uint16_t ver = wire_get_u16(&c);
		wire_name_get(&c, name);
		if (ver != CLIENT_REC_VERSION || !wire_cursor_ok(&c)) {
			LOG_ERR("db", "skipping a corrupt client record");
			continue;
		}
		ret = fn(arg, rd_be64(k.mv_data), name);
		if (ret)
			break;
	}
	if (!ret && rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "client iter");
	mdb_cursor_close(cur);
	return ret;
}

/* keys: name -> u16 version, u8 role, u8 revoked, u64 gen */
int mds_db_key_put(struct mds_txn *txn, const struct keytab_entry *e)
{
	uint8_t vb[12];
	struct wire_cursor c;

	if (!key_name_valid(e->name))
		return -EINVAL;
	wire_cursor_init_write(&c, vb, sizeof(vb));
	wire_put_u16(&c, KEY_REC_VERSION);
	wire_put_u8(&c, (uint8_t)e->role);
	wire_put_u8(&c, e->revoked ? 1 : 0);
	wire_put_u64(&c, e->gen);
	return db_map_err(db_put_raw(txn->t, txn->db->keys, e->name, strlen(e->name), vb, c.pos),
		       "key put");
}

/* Decodes a key record; 0 or -EIO. */
static int key_rec(const MDB_val *k, const MDB_val *v, struct keytab_entry *e)
{
	struct wire_cursor c;

	memset(e, 0, sizeof(*e));
	if (k->mv_size == 0 || k->mv_size > KEY_NAME_MAX)
		return -EIO;
	memcpy(e->name, k->mv_data, k->mv_size);
	wire_cursor_init_read(&c, v->mv_data, v->mv_size);
	uint16_t ver = wire_get_u16(&c);
	e->role = wire_get_u8(&c);
	e->revoked = wire_get_u8(&c);
	e->gen = wire_get_u64(&c);
	if (ver != KEY_REC_VERSION || !wire_cursor_ok(&c) || !key_name_valid(e->name))
		return -EIO;
	return 0;
}

int mds_db_key_get(struct mds_txn *txn, const char *name, struct keytab_entry *out)
{
	MDB_val k = {.mv_size = strlen(name), .mv_data = (void *)name}, v;
	int rc = mdb_get(txn->t, txn->db->keys, &k, &v);

	if (rc)
		return db_map_err(rc, "key get");
	return key_rec(&k, &v, out);
}

int mds_db_key_iter(struct mds_txn *txn, int (*fn)(void *arg, const struct keytab_entry *e),
		    void *arg)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn->t, txn->db->keys, &cur), ret = 0;

	if (rc)
		return db_map_err(rc, "cursor open");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct keytab_entry e;
		if (key_rec(&k, &v, &e)) {
			LOG_ERR("db", "skipping a corrupt key record");
			continue;
		}
		ret = fn(arg, &e);
		if (ret)
			break;
	}
	if (!ret && rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "key iter");
	mdb_cursor_close(cur);
	return ret;
}

static void reply_key(uint8_t kb[16], uint64_t client, uint64_t xid)
{
	be64(kb, client);
	be64(kb + 8, xid);
}

/* Deletes client's replies with xid in [from, below). */
static int reply_del_range(struct mds_txn *txn, uint64_t client, uint64_t from, uint64_t below)
{
	MDB_cursor *cur;
	uint8_t kb[16];
	MDB_val k = {16, kb}, v;
	int rc = mdb_cursor_open(txn->t, txn->db->replies, &cur);

	if (rc)
		return db_map_err(rc, "cursor open");
	reply_key(kb, client, from);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 16 || rd_be64(k.mv_data) != client ||
		    rd_be64((const uint8_t *)k.mv_data + 8) >= below)
			break;
		rc = mdb_cursor_del(cur, 0);
		if (rc)
			break;
	}
	mdb_cursor_close(cur);
	return rc && rc != MDB_NOTFOUND ? db_map_err(rc, "reply trim") : 0;
}

int mds_db_client_del(struct mds_txn *txn, uint64_t client)
{
	uint8_t kb[8];
	MDB_val k = {8, kb};
	int rc;

	be64(kb, client);
	rc = mdb_del(txn->t, txn->db->clients, &k, NULL);
	if (rc && rc != MDB_NOTFOUND)
		return db_map_err(rc, "client del");
	return reply_del_range(txn, client, 0, UINT64_MAX);
}

int mds_db_reply_put(struct mds_txn *txn, uint64_t client, uint64_t xid,
		     const struct mds_reply_rec *r)
{
	uint8_t kb[16], vb[2 + 8 + 16 + 8];
	struct wire_cursor c;

	reply_key(kb, client, xid);
	wire_cursor_init_write(&c, vb, sizeof(vb));
	wire_put_u16(&c, REPLY_REC_VERSION);
	wire_put_u64(&c, r->transno);
	wire_fid_put(&c, &r->fid);
	wire_put_u64(&c, r->value);
	return db_map_err(db_put_raw(txn->t, txn->db->replies, kb, 16, vb, c.pos), "reply put");
}

int mds_db_reply_get(struct mds_txn *txn, uint64_t client, uint64_t xid,
		     struct mds_reply_rec *out)
{
	uint8_t kb[16];
	MDB_val k = {16, kb}, v;
	struct wire_cursor c;
	int rc;

	reply_key(kb, client, xid);
	rc = mdb_get(txn->t, txn->db->replies, &k, &v);
	if (rc)
		return db_map_err(rc, "reply get");
	wire_cursor_init_read(&c, v.mv_data, v.mv_size);
	uint16_t ver = wire_get_u16(&c);
	out->transno = wire_get_u64(&c);
	wire_fid_get(&c, &out->fid);
	out->value = wire_get_u64(&c);
	if (ver != REPLY_REC_VERSION || !wire_cursor_ok(&c) || wire_cursor_left(&c)) {
		LOG_ERR("db", "corrupt reply record (client %016llx, xid %llu)",
			(unsigned long long)client, (unsigned long long)xid);
		return -EIO;
	}
	return 0;
}

int mds_db_reply_trim(struct mds_txn *txn, uint64_t client, uint64_t below)
{
	return reply_del_range(txn, client, 0, below);
}

uint64_t mds_db_reply_count(struct mds_db *db)
{
	MDB_txn *t;
	MDB_stat st;
	if (mdb_txn_begin(db->env, NULL, MDB_RDONLY, &t))
		return 0;
	int rc = mdb_stat(t, db->replies, &st);
	mdb_txn_abort(t);
	return rc ? 0 : st.ms_entries;
}

/* ---------------- tables of named records (nodemap rules, changelog users) ---------------- */

typedef int (*named_fn)(void *arg, const char *name, const void *rec, size_t len);

static int named_put(struct mds_txn *txn, MDB_dbi dbi, const char *name, const void *rec,
		     size_t len, size_t max_len, const char *what)
{
	size_t n = strlen(name);

	if (n == 0 || n > NACRE_NAME_MAX || len > max_len)
		return -EINVAL;
	return db_map_err(db_put_raw(txn->t, dbi, name, n, rec, len), what);
}

static int named_del(struct mds_txn *txn, MDB_dbi dbi, const char *name, const char *what)
{
	MDB_val k = {strlen(name), (void *)name};

	if (k.mv_size == 0 || k.mv_size > NACRE_NAME_MAX)
		return -ENOENT;
	return db_map_err(mdb_del(txn->t, dbi, &k, NULL), what);
}

/* fn for every record, in name order, until it returns non-zero (returned). */
static int named_iter(struct mds_txn *txn, MDB_dbi dbi, named_fn fn, void *arg, const char *what)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn->t, dbi, &cur), ret = 0;

	if (rc)
		return db_map_err(rc, "cursor open");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		char name[NACRE_NAME_MAX + 1];
		if (k.mv_size == 0 || k.mv_size > NACRE_NAME_MAX)
			continue;
		memcpy(name, k.mv_data, k.mv_size);
		name[k.mv_size] = '\0';
		ret = fn(arg, name, v.mv_data, v.mv_size);
		if (ret)
			break;
	}
	if (!ret && rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, what);
	mdb_cursor_close(cur);
	return ret;
}

int mds_db_nodemap_put(struct mds_txn *txn, const char *name, const void *rec, size_t len)
{
	return named_put(txn, txn->db->nodemap, name, rec, len, 65536, "nodemap put");
}

int mds_db_nodemap_del(struct mds_txn *txn, const char *name)
{
	return named_del(txn, txn->db->nodemap, name, "nodemap del");
}

int mds_db_nodemap_iter(struct mds_txn *txn, named_fn fn, void *arg)
{
	return named_iter(txn, txn->db->nodemap, fn, arg, "nodemap iter");
}

/* ---------------- changelog ---------------- */

int mds_db_cl_put(struct mds_txn *txn, uint64_t index, const void *rec, size_t len)
{
	uint8_t kb[8];

	if (len == 0 || len > 65536)
		return -EINVAL;
	be64(kb, index);
	return db_map_err(db_put_raw(txn->t, txn->db->changelog, kb, 8, rec, len), "changelog put");
}

int mds_db_cl_iter(struct mds_txn *txn, uint64_t from,
		   int (*fn)(void *arg, uint64_t index, const void *rec, size_t len), void *arg)
{
	MDB_cursor *cur;
	uint8_t kb[8];
	int rc = mdb_cursor_open(txn->t, txn->db->changelog, &cur), ret = 0;

	if (rc)
		return db_map_err(rc, "cursor open");
	be64(kb, from);
	MDB_val k = {8, kb}, v;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 8)
			continue;
		ret = fn(arg, rd_be64(k.mv_data), v.mv_data, v.mv_size);
		if (ret)
			break;
	}
	if (!ret && rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "changelog iter");
	mdb_cursor_close(cur);
	return ret;
}

int mds_db_cl_bounds(struct mds_txn *txn, uint64_t *first, uint64_t *last)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn->t, txn->db->changelog, &cur);

	if (rc)
		return db_map_err(rc, "cursor open");
	*first = *last = 0;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	if (!rc && k.mv_size == 8)
		*first = rd_be64(k.mv_data);
	if (!rc)
		rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	if (!rc && k.mv_size == 8)
		*last = rd_be64(k.mv_data);
	mdb_cursor_close(cur);
	return rc && rc != MDB_NOTFOUND ? db_map_err(rc, "changelog bounds") : 0;
}

int mds_db_cl_purge(struct mds_txn *txn, uint64_t upto, uint64_t *deleted)
{
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t n = 0;
	int rc = mdb_cursor_open(txn->t, txn->db->changelog, &cur);

	if (rc)
		return db_map_err(rc, "cursor open");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) {
		if (k.mv_size == 8 && rd_be64(k.mv_data) > upto)
			break;
		rc = mdb_cursor_del(cur, 0);
		if (rc)
			break;
		n++;
	}
	mdb_cursor_close(cur);
	if (deleted)
		*deleted = n;
	return rc && rc != MDB_NOTFOUND ? db_map_err(rc, "changelog purge") : 0;
}

int mds_db_cl_next_get(struct mds_txn *txn, uint64_t *out)
{
	return meta_u64_get(txn, "changelog_next", out);
}

int mds_db_cl_next_put(struct mds_txn *txn, uint64_t next)
{
	return meta_u64_put(txn, "changelog_next", next);
}

int mds_db_cl_user_put(struct mds_txn *txn, const char *name, const void *rec, size_t len)
{
	return named_put(txn, txn->db->changelog_users, name, rec, len, 4096,
			 "changelog user put");
}

int mds_db_cl_user_del(struct mds_txn *txn, const char *name)
{
	return named_del(txn, txn->db->changelog_users, name, "changelog user del");
}

int mds_db_cl_user_iter(struct mds_txn *txn, named_fn fn, void *arg)
{
	return named_iter(txn, txn->db->changelog_users, fn, arg, "changelog user iter");
}

