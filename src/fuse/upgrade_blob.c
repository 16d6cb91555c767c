/* upgrade_blob.c - the state blob of an upgrade (its layout: upgrade_codec.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/upgrade.h"

/* The fewest bytes a record takes: a count above left / min cannot be real. */
#define INODE_REC_MIN (8 + 16 + 16 + 8 + 4 + 8 + 12 + 12)
#define HANDLE_REC_MIN (8 + 4 + 8 + 4 + 12)
#define OWNER_REC_MIN (16 + 8)

#define NSEC_PER_SEC 1000000000u

/* ---- field groups (upgrade_codec.h) */

static void fid_put(struct upg_writer *w, const struct nacre_fid *fid)
{
	upg_put_u64(w, fid->seq);
	upg_put_u32(w, fid->oid);
	upg_put_u32(w, fid->ver);
}

static void fid_get(struct upg_reader *r, struct nacre_fid *fid)
{
	fid->seq = upg_get_u64(r);
	fid->oid = upg_get_u32(r);
	fid->ver = upg_get_u32(r);
}

static void time_put(struct upg_writer *w, const struct nacre_time *t)
{
	upg_put_i64(w, t->sec);
	upg_put_u32(w, t->nsec);
}

static void time_get(struct upg_reader *r, struct nacre_time *t)
{
	t->sec = upg_get_i64(r);
	t->nsec = upg_get_u32(r);
	if (t->nsec >= NSEC_PER_SEC)
		upg_reader_fail(r, -EPROTO);
}

/* 1 if s (len bytes) can be a job id: 1..NACRE_JOBID_MAX printable ASCII, no space. */
static int jobid_valid(const char *s, size_t len)
{
	if (len == 0 || len > NACRE_JOBID_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return 0;
	return 1;
}

static void cred_put(struct upg_writer *w, const struct nacre_cred *cr)
{
	size_t jl;

	if (cr->ngroups > NACRE_CRED_GROUPS || (cr->flags & ~NACRE_CRED_PROTECTED_HARDLINKS)) {
		upg_writer_fail(w, -EINVAL);
		return;
	}
	upg_put_u32(w, cr->uid);
	upg_put_u32(w, cr->gid);
	jl = strnlen(cr->jobid, sizeof(cr->jobid));
	if (jl && !jobid_valid(cr->jobid, jl)) {
		upg_writer_fail(w, -EINVAL);
		return;
	}
	upg_put_u32(w, cr->ngroups | (cr->groups_token ? UPG_CRED_TOKEN : 0) |
		       (cr->flags & NACRE_CRED_PROTECTED_HARDLINKS ? UPG_CRED_PHL : 0) |
		       (jl ? UPG_CRED_JOBID : 0));
	for (uint32_t i = 0; i < cr->ngroups; i++)
		upg_put_u32(w, cr->groups[i]);
	if (cr->groups_token)
		upg_put_u64(w, cr->groups_token);
	if (jl) {
		upg_put_u8(w, (uint8_t)jl);
		upg_put_bytes(w, cr->jobid, jl);
	}
}

static void cred_get(struct upg_reader *r, struct nacre_cred *cr)
{
	uint32_t n;

	memset(cr, 0, sizeof(*cr));
	cr->uid = upg_get_u32(r);
	cr->gid = upg_get_u32(r);
	n = upg_get_u32(r);
	cr->ngroups = n & ~(UPG_CRED_TOKEN | UPG_CRED_PHL | UPG_CRED_JOBID);
	if (n & UPG_CRED_PHL)
		cr->flags |= NACRE_CRED_PROTECTED_HARDLINKS;
	if (cr->ngroups > NACRE_CRED_GROUPS) {
		cr->ngroups = 0;
		upg_reader_fail(r, -EPROTO);
		return;
	}
	for (uint32_t i = 0; i < cr->ngroups; i++)
		cr->groups[i] = upg_get_u32(r);
	if (n & UPG_CRED_TOKEN) {
		cr->groups_token = upg_get_u64(r);
		if (!cr->groups_token)
			upg_reader_fail(r, -EPROTO);
	}
	if (n & UPG_CRED_JOBID) {
		uint8_t jl = upg_get_u8(r);

		if (jl > NACRE_JOBID_MAX) {
			upg_reader_fail(r, -EPROTO);
			return;
		}
		upg_get_bytes(r, cr->jobid, jl);
		if (upg_reader_ok(r) && !jobid_valid(cr->jobid, jl))
			upg_reader_fail(r, -EPROTO);
		if (!upg_reader_ok(r))
			memset(cr->jobid, 0, sizeof(cr->jobid));
	}
}

/* ---- records */

void upg_head_put(struct upg_writer *w, const struct fz_init_params *init, const char *spec,
		  const char *opts, const char *mnt, uint64_t lock_client)
{
	upg_put_u32(w, UPG_MAGIC);
	upg_put_u32(w, UPG_VERSION);
	upg_put_u32(w, init->proto_major);
	upg_put_u32(w, init->proto_minor);
	upg_put_u32(w, init->max_readahead);
	upg_put_u32(w, init->capable);
	upg_put_u32(w, init->want);
	upg_put_str(w, spec);
	upg_put_str(w, opts);
	upg_put_str(w, mnt);
	upg_put_u64(w, lock_client);
}

void upg_inode_put(struct upg_writer *w, const struct upg_inode *rec)
{
	upg_put_u64(w, rec->ino);
	fid_put(w, &rec->fid);
	fid_put(w, &rec->parent);
	upg_put_u64(w, rec->nlookup);
	upg_put_u32(w, rec->cache_valid);
	upg_put_u64(w, rec->cache_size);
	time_put(w, &rec->cache_mtime);
	time_put(w, &rec->cache_ctime);
}

void upg_handle_put(struct upg_writer *w, const struct upg_handle *rec)
{
	upg_put_u64(w, rec->fh);
	upg_put_u32(w, rec->kind);
	upg_put_u64(w, rec->ino);
	upg_put_u32(w, rec->flags);
	cred_put(w, &rec->cred);
}

void upg_owner_put(struct upg_writer *w, const struct upg_owner *rec)
{
	fid_put(w, &rec->fid);
	upg_put_u64(w, rec->owner);
}

/* ---- encoding: walks of the live tables */

static int put_inode(struct fz_inode *in, void *arg)
{
	struct upg_writer *w = arg;
	struct upg_inode rec = {
		.ino = in->ino,
		.fid = in->fid,
		.parent = in->parent,
		.nlookup = in->nlookup,
	};

	pthread_mutex_lock(&in->lock);
	rec.cache_valid = (uint32_t)in->cache_valid;
	rec.cache_size = in->cache_size;
	rec.cache_mtime = in->cache_mtime;
	rec.cache_ctime = in->cache_ctime;
	pthread_mutex_unlock(&in->lock);
	upg_inode_put(w, &rec);
	return upg_writer_err(w);
}

static int count_inode(struct fz_inode *in, void *arg)
{
	(void)in;
	++*(uint64_t *)arg;
	return 0;
}

static int put_handle(uint64_t fh, int kind, void *obj, void *arg)
{
	struct upg_writer *w = arg;
	struct fz_file *f = kind == FZ_H_FILE ? obj : NULL;
	struct upg_handle rec = {.fh = fh, .kind = (uint32_t)kind}; /* a directory: no cred */

	if (f) {
		rec.ino = f->inode->ino;
		rec.flags = (uint32_t)f->flags;
		rec.cred = f->cred;
	}
	upg_handle_put(w, &rec);
	return upg_writer_err(w);
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
	struct upg_writer *w = arg;
	struct upg_owner rec = {.fid = *fid, .owner = owner};

	upg_owner_put(w, &rec);
	return upg_writer_err(w);
}

static int count_owner(const struct nacre_fid *fid, uint64_t owner, void *arg)
{
	(void)fid;
	(void)owner;
	++*(uint64_t *)arg;
	return 0;
}

int upg_blob_build(struct fz_mount *m, const struct fz_upgrade_conf *cf, struct upg_writer *w)
{
	uint64_t n;

	upg_head_put(w, &m->init, cf->spec, cf->opts, cf->mnt, nacre_fs_lock_client(m->fs));
	n = 0;
	fz_itable_walk(m, count_inode, &n);
	upg_put_u64(w, n);
	fz_itable_walk(m, put_inode, w);
	n = 0;
	fz_htable_walk(m, count_handle, &n);
	upg_put_u64(w, n);
	fz_htable_walk(m, put_handle, w);
	n = 0;
	fz_lock_owners_walk(count_owner, &n);
	upg_put_u64(w, n);
	fz_lock_owners_walk(put_owner, w);
	return upg_writer_err(w);
}

/* ---- decoding */

int upg_head_decode(struct upg_reader *r, struct upg_head *h)
{
	memset(h, 0, sizeof(*h));
	if (upg_get_u32(r) != UPG_MAGIC || upg_get_u32(r) != UPG_VERSION)
		return -EPROTONOSUPPORT;
	h->init.proto_major = upg_get_u32(r);
	h->init.proto_minor = upg_get_u32(r);
	h->init.max_readahead = upg_get_u32(r);
	h->init.capable = upg_get_u32(r);
	h->init.want = upg_get_u32(r);
	h->spec = upg_get_str_dup(r);
	h->opts = upg_get_str_dup(r);
	h->mnt = upg_get_str_dup(r);
	h->lock_client = upg_get_u64(r);
	return upg_reader_err(r);
}

void upg_head_fini(struct upg_head *h)
{
	free(h->spec);
	free(h->opts);
	free(h->mnt);
	memset(h, 0, sizeof(*h));
}

static uint64_t count_get(struct upg_reader *r, size_t min)
{
	uint64_t n = upg_get_u64(r);

	if (upg_reader_ok(r) && n > upg_reader_left(r) / min)
		upg_reader_fail(r, -EPROTO);
	return upg_reader_ok(r) ? n : 0;
}

uint64_t upg_inodes_count(struct upg_reader *r)
{
	return count_get(r, INODE_REC_MIN);
}

uint64_t upg_handles_count(struct upg_reader *r)
{
	return count_get(r, HANDLE_REC_MIN);
}

uint64_t upg_owners_count(struct upg_reader *r)
{
	return count_get(r, OWNER_REC_MIN);
}

void upg_inode_get(struct upg_reader *r, struct upg_inode *rec)
{
	rec->ino = upg_get_u64(r);
	fid_get(r, &rec->fid);
	fid_get(r, &rec->parent);
	rec->nlookup = upg_get_u64(r);
	rec->cache_valid = upg_get_u32(r);
	rec->cache_size = upg_get_u64(r);
	time_get(r, &rec->cache_mtime);
	time_get(r, &rec->cache_ctime);
}

void upg_handle_get(struct upg_reader *r, struct upg_handle *rec)
{
	rec->fh = upg_get_u64(r);
	rec->kind = upg_get_u32(r);
	rec->ino = upg_get_u64(r);
	rec->flags = upg_get_u32(r);
	cred_get(r, &rec->cred); /* fails the reader if ngroups > NACRE_CRED_GROUPS */
}

void upg_owner_get(struct upg_reader *r, struct upg_owner *rec)
{
	fid_get(r, &rec->fid);
	rec->owner = upg_get_u64(r);
}
