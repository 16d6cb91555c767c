/* db_raw.c - the store's shared pieces (db_raw.h): error mapping, FID keys, the inode
 * record's encoding. */
#include "mds/db_raw.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "nacre/nacre_errno.h"
#include "proto/cursor.h"
#include "proto/wire.h"

int db_map_err(int rc, const char *what)
{
	switch (rc) {
	case 0:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_MAP_FULL:
		LOG_RATELIMITED(LOG_LVL_ERR, "db",
				"metadata store is full (map size %llu bytes) during %s",
				(unsigned long long)MAPSIZE, what);
		return -ENOSPC;
	case MDB_KEYEXIST:
		return -EEXIST;
	default:
		/* a full or failing disk fails every request alike: rate-limited */
		LOG_RATELIMITED(LOG_LVL_ERR, "db", "%s failed: %s", what, mdb_strerror(rc));
		return rc > 0 && rc < 4096 ? -rc : -EIO;
	}
}

int db_put_raw(MDB_txn *t, MDB_dbi dbi, const void *k, size_t kl, const void *v, size_t vl)
{
	MDB_val key = {kl, (void *)k}, val = {vl, (void *)v};
	return mdb_put(t, dbi, &key, &val, 0);
}

static int encode_inode(const struct mds_inode *ino, struct wire_cursor *c)
{
	int bt = ino->has_btime != 0;
	int blk = ino->has_blocks != 0;
	int prj = ino->projid || ino->proj_inherit || blk || bt;
	wire_put_u16(c, bt ? INODE_REC_VERSION_BTIME
		     : blk ? INODE_REC_VERSION_BLOCKS
		     : prj ? INODE_REC_VERSION_PRJ
		     : ino->acl.count ? INODE_REC_VERSION_ACL : INODE_REC_VERSION);
	wire_put_u32(c, ino->mode);
	wire_put_u32(c, ino->nlink);
	wire_put_u32(c, ino->uid);
	wire_put_u32(c, ino->gid);
	wire_put_u32(c, ino->rdev);
	wire_put_u64(c, ino->size);
	const struct nacre_time *t[3] = {&ino->atime, &ino->mtime, &ino->ctime};
	for (int i = 0; i < 3; i++) {
		wire_put_i64(c, t[i]->sec);
		wire_put_u32(c, t[i]->nsec);
	}
	wire_put_u32(c, ino->hsm_state);
	wire_put_u32(c, ino->archive_id);
	wire_put_u64(c, ino->nentries);
	wire_put_u8(c, ino->has_layout ? 1 : 0);
	if (ino->has_layout)
		wire_layout_put(c, &ino->layout);
	wire_path_put(c, ino->target);
	if (ino->acl.count || prj) {
		wire_put_u16(c, (uint16_t)ino->acl.count);
		for (uint32_t i = 0; i < ino->acl.count; i++) {
			wire_put_u16(c, ino->acl.e[i].tag);
			wire_put_u16(c, ino->acl.e[i].perm);
			wire_put_u32(c, ino->acl.e[i].id);
		}
	}
	if (prj) {
		wire_put_u32(c, ino->projid);
		wire_put_u8(c, ino->proj_inherit ? 1 : 0);
	}
	if (bt) {
		wire_put_u8(c, (uint8_t)blk);
		if (blk)
			wire_put_u64(c, ino->blocks);
		wire_put_i64(c, ino->btime.sec);
		wire_put_u32(c, ino->btime.nsec);
	} else if (blk) {
		wire_put_u64(c, ino->blocks);
	}
	return c->err;
}

int db_decode_inode(const void *buf, size_t len, struct mds_inode *ino)
{
	struct wire_cursor c;
	wire_cursor_init_read(&c, buf, len);
	uint16_t ver = wire_get_u16(&c);
	if (wire_cursor_ok(&c) && (ver < INODE_REC_VERSION || ver > INODE_REC_VERSION_BTIME))
		return -NACRE_EFORMAT;
	ino->mode = wire_get_u32(&c);
	ino->nlink = wire_get_u32(&c);
	ino->uid = wire_get_u32(&c);
	ino->gid = wire_get_u32(&c);
	ino->rdev = wire_get_u32(&c);
	ino->size = wire_get_u64(&c);
	struct nacre_time *t[3] = {&ino->atime, &ino->mtime, &ino->ctime};
	for (int i = 0; i < 3; i++) {
		t[i]->sec = wire_get_i64(&c);
		t[i]->nsec = wire_get_u32(&c);
	}
	ino->hsm_state = wire_get_u32(&c);
	ino->archive_id = wire_get_u32(&c);
	ino->nentries = wire_get_u64(&c);
	ino->has_layout = wire_get_u8(&c);
	memset(&ino->layout, 0, sizeof(ino->layout));
	if (ino->has_layout)
		wire_layout_get(&c, &ino->layout);
	wire_path_get(&c, ino->target, NACRE_PATH_MAX);
	ino->acl.count = 0;
	ino->projid = 0;
	ino->proj_inherit = 0;
	ino->has_blocks = 0;
	ino->blocks = 0;
	ino->has_btime = 0;
	memset(&ino->btime, 0, sizeof(ino->btime));
	if (ver >= INODE_REC_VERSION_ACL) {
		uint16_t n = wire_get_u16(&c);
		if ((n == 0 && ver == INODE_REC_VERSION_ACL) || n > MDS_ACL_MAX_ENTRIES)
			return -EIO;
		for (uint32_t i = 0; i < n; i++) {
			ino->acl.e[i].tag = wire_get_u16(&c);
			ino->acl.e[i].perm = wire_get_u16(&c);
			ino->acl.e[i].id = wire_get_u32(&c);
		}
		ino->acl.count = n;
	}
	if (ver >= INODE_REC_VERSION_PRJ) {
		ino->projid = wire_get_u32(&c);
		ino->proj_inherit = wire_get_u8(&c);
		if (ino->proj_inherit > 1)
			return -EIO;
	}
	if (ver == INODE_REC_VERSION_BLOCKS) {
		ino->has_blocks = 1;
		ino->blocks = wire_get_u64(&c);
	} else if (ver == INODE_REC_VERSION_BTIME) {
		ino->has_blocks = wire_get_u8(&c);
		if (ino->has_blocks > 1)
			return -EIO;
		if (ino->has_blocks)
			ino->blocks = wire_get_u64(&c);
		ino->has_btime = 1;
		ino->btime.sec = wire_get_i64(&c);
		ino->btime.nsec = wire_get_u32(&c);
	}
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c) != 0)
		return -EIO;
	return 0;
}

int db_put_inode_raw(MDB_txn *t, MDB_dbi dbi, const struct mds_inode *ino)
{
	uint8_t k[16];
	struct wire_cursor c;
	wire_cursor_init_dyn(&c, 16384);
	if (encode_inode(ino, &c)) {
		wire_cursor_fini(&c);
		return EINVAL;
	}
	fid_to_key(&ino->fid, k);
	int rc = db_put_raw(t, dbi, k, 16, c.buf, wire_cursor_pos(&c));
	wire_cursor_fini(&c);
	return rc;
}
