/* upgrade_blob.c - the state blob of an upgrade (see upgrade.h for its layout). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/upgrade.h"
#include "proto/wire.h"

/* The fewest bytes a record takes: a count above left / min cannot be real. */
#define INODE_REC_MIN (8 + 16 + 16 + 8 + 4 + 8 + 12 + 12)
#define HANDLE_REC_MIN (8 + 4 + 8 + 4 + 12)
#define OWNER_REC_MIN (16 + 8)

/* ---- encoding: walks of the live tables */

static int put_inode(struct fz_inode *in, void *arg)
{
	struct wire_cursor *c = arg;

	wire_put_u64(c, in->ino);
	wire_fid_put(c, &in->fid);
	wire_fid_put(c, &in->parent);
	wire_put_u64(c, in->nlookup);
	pthread_mutex_lock(&in->lock);
	wire_put_u32(c, (uint32_t)in->cache_valid);
	wire_put_u64(c, in->cache_size);
	wire_time_put(c, &in->cache_mtime);
	wire_time_put(c, &in->cache_ctime);
	pthread_mutex_unlock(&in->lock);
	return c->err;
}

static int count_inode(struct fz_inode *in, void *arg)
{
	(void)in;
	++*(uint64_t *)arg;
	return 0;
}

static int put_handle(uint64_t fh, int kind, void *obj, void *arg)
{
	static const struct nacre_cred no_cred;
	struct wire_cursor *c = arg;
	struct fz_file *f = kind == FZ_H_FILE ? obj : NULL;

	wire_put_u64(c, fh);
	wire_put_u32(c, (uint32_t)kind);
	wire_put_u64(c, f ? f->inode->ino : 0);
	wire_put_u32(c, f ? (uint32_t)f->flags : 0);
	wire_cred_put(c, f ? &f->cred : &no_cred);
	return c->err;
}

static int count_handle(uint64_t fh, int kind, void *obj, void *arg)
{
	(void)fh;
	(void)kind;
	(void)obj;
	++*(uint64_t *)arg;
	return 0;
}

static int put_owner(const struct nacre_fid *fid, uint64_t owner, void *arg)
{
	struct wire_cursor *c = arg;

	wire_fid_put(c, fid);
	wire_put_u64(c, owner);
	return c->err;
}

static int count_owner(const struct nacre_fid *fid, uint64_t owner, void *arg)
{
	(void)fid;
	(void)owner;
	++*(uint64_t *)arg;
	return 0;
}

int upg_blob_build(struct fz_mount *m, const struct fz_upgrade_conf *cf, struct wire_cursor *c)
{
	uint64_t n;

	wire_put_u32(c, UPG_MAGIC);
	wire_put_u32(c, UPG_VERSION);
	wire_put_u32(c, m->init.proto_major);
	wire_put_u32(c, m->init.proto_minor);
	wire_put_u32(c, m->init.max_readahead);
	wire_put_u32(c, m->init.capable);
	wire_put_u32(c, m->init.want);
	wire_lstr_put(c, cf->spec);
	wire_lstr_put(c, cf->opts);
	wire_lstr_put(c, cf->mnt);
	wire_put_u64(c, nacre_fs_lock_client(m->fs));
	n = 0;
	fz_itable_walk(m, count_inode, &n);
	wire_put_u64(c, n);
	fz_itable_walk(m, put_inode, c);
	n = 0;
	fz_htable_walk(m, count_handle, &n);
	wire_put_u64(c, n);
	fz_htable_walk(m, put_handle, c);
	n = 0;
	fz_lock_owners_walk(count_owner, &n);
	wire_put_u64(c, n);
	fz_lock_owners_walk(put_owner, c);
	return c->err;
}

/* ---- decoding */

int upg_head_decode(struct wire_cursor *c, struct upg_head *h)
{
	memset(h, 0, sizeof(*h));
	if (wire_get_u32(c) != UPG_MAGIC || wire_get_u32(c) != UPG_VERSION)
		return -EPROTONOSUPPORT;
	h->init.proto_major = wire_get_u32(c);
	h->init.proto_minor = wire_get_u32(c);
	h->init.max_readahead = wire_get_u32(c);
	h->init.capable = wire_get_u32(c);
	h->init.want = wire_get_u32(c);
	h->spec = wire_lstr_dup(c, UINT32_MAX);
	h->opts = wire_lstr_dup(c, UINT32_MAX);
	h->mnt = wire_lstr_dup(c, UINT32_MAX);
	h->lock_client = wire_get_u64(c);
	return c->err;
}

void upg_head_fini(struct upg_head *h)
{
	free(h->spec);
	free(h->opts);
	free(h->mnt);
	memset(h, 0, sizeof(*h));
}

static uint64_t count_get(struct wire_cursor *c, size_t min)
{
	uint64_t n = wire_get_u64(c);

	if (wire_cursor_ok(c) && n > wire_cursor_left(c) / min)
		wire_cursor_fail(c, -EPROTO);
	return wire_cursor_ok(c) ? n : 0;
}

uint64_t upg_inodes_count(struct wire_cursor *c)
{
	return count_get(c, INODE_REC_MIN);
}

uint64_t upg_handles_count(struct wire_cursor *c)
{
	return count_get(c, HANDLE_REC_MIN);
}

uint64_t upg_owners_count(struct wire_cursor *c)
{
	return count_get(c, OWNER_REC_MIN);
}

void upg_inode_get(struct wire_cursor *c, struct upg_inode *r)
{
	r->ino = wire_get_u64(c);
	wire_fid_get(c, &r->fid);
	wire_fid_get(c, &r->parent);
	r->nlookup = wire_get_u64(c);
	r->cache_valid = wire_get_u32(c);
	r->cache_size = wire_get_u64(c);
	wire_time_get(c, &r->cache_mtime);
	wire_time_get(c, &r->cache_ctime);
}

void upg_handle_get(struct wire_cursor *c, struct upg_handle *r)
{
	r->fh = wire_get_u64(c);
	r->kind = wire_get_u32(c);
	r->ino = wire_get_u64(c);
	r->flags = wire_get_u32(c);
	wire_cred_get(c, &r->cred); /* fails the cursor if ngroups > NACRE_CRED_GROUPS */
}

void upg_owner_get(struct wire_cursor *c, struct upg_owner *r)
{
	wire_fid_get(c, &r->fid);
	r->owner = wire_get_u64(c);
}
