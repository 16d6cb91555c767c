/* dir.c - namespace operations: lookup, create-like calls, unlink, rename, link, and
 * directory listing.
 *
 * Listing: the kernel gives back the offset of the last entry it consumed. Offsets are the
 * MDS cookies (which never use 1 and 2), "." has next-offset 1 and ".." next-offset 2, so
 * any offset resumes exactly where the previous reply stopped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fuse/fz.h"

#define DIR_BATCH 128 /* entries fetched from the MDS per READDIR RPC */

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* An open directory (fi->fh): the last batch read from the MDS, so that consecutive
 * readdir calls do not refetch entries the previous reply had no room for. */
struct fz_dir {
	pthread_mutex_t lock;     /* serializes readdir on this handle */
	struct nacre_dirent *ents; /* lock: the batch */
	struct nacre_attr *attrs; /* lock: with plus, each entry's attributes (mode 0: none) */
	int plus;                 /* lock: the batch was read with attributes */
	int nents;                /* lock */
	int eof;                  /* lock: the batch ends the directory */
	int valid;                /* lock: ents holds a batch */
	uint64_t from;            /* lock: cookie the batch was read after */
};

/* nacre_links callback: keeps the first link's parent. */
static int first_link(void *arg, const struct nacre_fid *parent, const char *name)
{
	(void)name;
	*(struct nacre_fid *)arg = *parent;
	return 1;
}

/* Replies the entry of fid for a file handle the kernel decodes: ESTALE if it is gone
 * (removed, or unlinked and open elsewhere only), and if the kernel asked for node id want
 * (0: any) and would get another one. */
static void reply_handle_entry(fuse_req_t req, const struct nacre_cred *cr,
			       const struct nacre_fid *fid, fuse_ino_t want)
{
	struct fz_mount *m = fz_mnt(req);
	struct fuse_entry_param e;
	struct fz_inode *in;
	struct nacre_attr a;
	int rc = nacre_getattr(m->fs, cr, fid, &a);

	if (rc == -ENOENT || (rc >= 0 && a.nlink == 0)) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	rc = fz_entry_prepare(req, &a, NULL, &e, &in);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	/* another number: a counter an older version gave this FID (before an upgrade) */
	if (want && e.ino != want) {
		fz_inode_forget(m, in, 1);
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (fuse_reply_entry(req, &e) != 0)
		fz_inode_forget(m, in, 1);
}

/* "." and "..", which the kernel asks only to decode a file handle (FUSE_CAP_EXPORT_SUPPORT):
 * "." of the handle's node id once the inode left its cache (the table may have forgotten
 * it: the node id is the FID, fz_inode_fid), ".." of a directory it connects to the tree
 * (cached). A directory has one parent, which the MDS's link records name. */
static void lookup_dot(fuse_req_t req, fuse_ino_t ino, int dotdot)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_fid fid, parent;
	struct nacre_cred cr;
	struct fz_inode *in;
	int rc;

	fz_cred(req, &cr);
	if (!dotdot) {
		if (fz_inode_fid(m, ino, &fid) < 0) {
			fuse_reply_err(req, ESTALE);
			return;
		}
		reply_handle_entry(req, &cr, &fid, ino);
		return;
	}
	in = fz_inode_get(m, ino);
	if (!in) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (in == &m->itab.root) {
		reply_handle_entry(req, &cr, &in->fid, FUSE_ROOT_ID);
		return;
	}
	rc = nacre_links(m->fs, &cr, &in->fid, first_link, &parent);
	if (rc == -ENOENT) {
		fuse_reply_err(req, ESTALE); /* removed meanwhile */
		return;
	}
	if (rc < 0) {
		/* links this caller may not see: the parent this mount saw last */
		parent = fz_inode_parent(m, in);
		if (nacre_fid_eq(&parent, &in->fid)) {
			fz_reply_rc(req, rc);
			return;
		}
	}
	fz_inode_set_parent(m, in, &parent);
	reply_handle_entry(req, &cr, &parent, 0);
}

void fz_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *p;
	struct nacre_cred cr;
	struct nacre_attr a;
	int rc;

	if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]))) {
		lookup_dot(req, parent, name[1] == '.');
		return;
	}
	if (fz_check_name(req, name))
		return;
	p = fz_inode_get(m, parent);
	fz_cred(req, &cr);
	rc = nacre_lookup(m->fs, &cr, &p->fid, name, &a);
	if (rc < 0) {
		/* No negative caching: another client may create the name at any time. */
		fz_reply_rc(req, rc);
		return;
	}
	fz_reply_entry(req, &a, &p->fid);
}

void fz_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *p = fz_inode_get(m, parent);
	struct nacre_cred cr;
	struct nacre_attr a;
	int rc;

	if (fz_check_ro(req) || fz_check_name(req, name))
		return;
	fz_cred(req, &cr);
	rc = nacre_mkdir(m->fs, &cr, &p->fid, name, (mode & 07777) | fz_umask_bits(req), &a);
	if (rc >= 0)
		fz_dattr_changed(p, &a.ctime, 1); /* the parent's times are the child's */
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	fz_reply_entry(req, &a, &p->fid);
}

void fz_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *p = fz_inode_get(m, parent);
	struct nacre_cred cr;
	struct nacre_attr a;
	int rc;

	if (fz_check_ro(req) || fz_check_name(req, name))
		return;
	fz_cred(req, &cr);
	/* The type bits go along: mknod makes fifos, sockets, devices and regular files. */
	rc = nacre_mknod(m->fs, &cr, &p->fid, name, mode | fz_umask_bits(req), (uint32_t)rdev,
			 &a);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	fz_dattr_changed(p, &a.ctime, 0);
	fz_reply_entry(req, &a, &p->fid);
}

void fz_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *p = fz_inode_get(m, parent);
	struct nacre_cred cr;
	struct nacre_attr a;
	int rc;

	if (fz_check_ro(req) || fz_check_name(req, name))
		return;
	if (strlen(link) > NACRE_PATH_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	fz_cred(req, &cr);
	rc = nacre_symlink(m->fs, &cr, &p->fid, name, link, &a);
	if (rc >= 0)
		fz_dattr_changed(p, &a.ctime, 0);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	fz_reply_entry(req, &a, &p->fid);
}

void fz_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_cred cr;
	char *buf = malloc(NACRE_PATH_MAX + 1);
	int rc;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fz_cred(req, &cr);
	rc = nacre_readlink(m->fs, &cr, &in->fid, buf, NACRE_PATH_MAX + 1);
	if (rc < 0)
		fz_reply_rc(req, rc);
	else
		fuse_reply_readlink(req, buf);
	free(buf);
}

void fz_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_cred cr;

	if (fz_check_ro(req))
		return;
	struct fz_inode *p = fz_inode_get(m, parent);
	int rc;

	fz_cred(req, &cr);
	rc = nacre_unlink(m->fs, &cr, &p->fid, name);
	if (rc >= 0)
		fz_dattr_changed(p, NULL, 0);
	fuse_reply_err(req, fz_errno_or_ok(rc));
}

void fz_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_cred cr;

	if (fz_check_ro(req))
		return;
	struct fz_inode *p = fz_inode_get(m, parent);
	int rc;

	fz_cred(req, &cr);
	rc = nacre_rmdir(m->fs, &cr, &p->fid, name);
	if (rc >= 0)
		fz_dattr_changed(p, NULL, -1);
	fuse_reply_err(req, fz_errno_or_ok(rc));
}

void fz_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		  const char *newname, unsigned int flags)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_cred cr;
	int rc;

	if (fz_check_ro(req) || fz_check_name(req, newname))
		return;
	/* RENAME_WHITEOUT is for overlay file systems; nacre has no whiteouts. */
	if (flags & ~(unsigned int)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fz_cred(req, &cr);
	struct fz_inode *from = fz_inode_get(m, parent), *to = fz_inode_get(m, newparent);

	rc = nacre_rename(m->fs, &cr, &from->fid, name, &to->fid, newname, flags);
	/* a directory moved or replaced changes link counts: ask the MDS again */
	fz_dattr_drop(from);
	fz_dattr_drop(to);
	fuse_reply_err(req, fz_errno_or_ok(rc));
}

void fz_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *p = fz_inode_get(m, newparent);
	struct nacre_cred cr;
	struct nacre_attr a;
	int rc;

	if (fz_check_ro(req) || fz_check_name(req, newname))
		return;
	fz_cred(req, &cr);
	/* the kernel checked may_linkat already; the MDS checks it too, being the authority */
	if (fz_protected_hardlinks())
		cr.flags |= NACRE_CRED_PROTECTED_HARDLINKS;
	rc = nacre_link(m->fs, &cr, &fz_inode_get(m, ino)->fid, &p->fid, newname, &a);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	fz_dattr_changed(p, &a.ctime, 0); /* the link's ctime is the directory's mtime */
	fz_reply_entry(req, &a, &p->fid);
}

void *fz_dir_create(void)
{
	struct fz_dir *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->ents = malloc(DIR_BATCH * sizeof(*d->ents));
	d->attrs = malloc(DIR_BATCH * sizeof(*d->attrs));
	if (!d->ents || !d->attrs) {
		free(d->ents);
		free(d->attrs);
		free(d);
		return NULL;
	}
	pthread_mutex_init(&d->lock, NULL);
	return d;
}

void fz_dir_destroy(void *dir)
{
	struct fz_dir *d = dir;

	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	free(d->ents);
	free(d->attrs);
	free(d);
}

void fz_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fz_dir *d = fz_dir_create();
	uint64_t fh;

	(void)ino;
	if (!d || fz_handle_add(fz_mnt(req), FZ_H_DIR, d, &fh) < 0) {
		fz_dir_destroy(d);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = fh;
	/* Entries change under us from other clients: the kernel must not keep a listing. */
	fi->cache_readdir = 0;
	if (fuse_reply_open(req, fi) != 0)
		fz_dir_destroy(fz_handle_del(fz_mnt(req), fh, FZ_H_DIR));
}

/* Adds one entry to buf; returns 0 if it did not fit. */
static int add_entry(fuse_req_t req, char *buf, size_t size, size_t *pos, const char *name,
		     const struct nacre_fid *fid, uint32_t type, uint64_t next)
{
	struct stat st;
	size_t len;

	memset(&st, 0, sizeof(st));
	st.st_ino = (ino_t)fz_fid_ino(fid);
	st.st_mode = type & S_IFMT;
	len = fuse_add_direntry(req, buf + *pos, size - *pos, name, &st, (off_t)next);
	if (len > size - *pos)
		return 0;
	*pos += len;
	return 1;
}

/* READDIRPLUS's entry: with attributes, a lookup the kernel takes (the inode table counts
 * it, and gives it back if the entry does not fit); without, a plain entry the kernel looks
 * up itself when it needs to. Returns 0 if it did not fit. */
static int add_entry_plus(fuse_req_t req, char *buf, size_t size, size_t *pos,
			  const char *name, const struct nacre_fid *fid, uint32_t type,
			  const struct nacre_attr *a, const struct nacre_fid *parent, uint64_t next)
{
	struct fuse_entry_param e;
	struct fz_inode *in = NULL;
	size_t len;

	memset(&e, 0, sizeof(e));
	if (a && a->mode && fz_entry_prepare(req, a, parent, &e, &in) < 0)
		in = NULL; /* out of memory: a plain entry then */
	if (!in) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = (ino_t)fz_fid_ino(fid);
		e.attr.st_mode = type & S_IFMT;
	}
	len = fuse_add_direntry_plus(req, buf + *pos, size - *pos, name, &e, (off_t)next);
	if (len > size - *pos) {
		if (in)
			fz_inode_forget(fz_mnt(req), in, 1);
		return 0;
	}
	*pos += len;
	return 1;
}

/* Makes d->ents hold the entries after cookie (fetching if the batch does not cover it) and
 * returns the index of the first one, or a negative error. A batch is read with attributes
 * when plus asks for them. Called with d->lock held. */
static int dir_seek(struct fz_mount *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		    struct fz_dir *d, uint64_t cookie, int plus)
{
	int i, n;

	if (d->valid) {
		if (d->from == cookie && (d->nents > 0 || d->eof))
			return 0;
		/* A batch used up to its end says nothing of what follows, unless at eof. */
		for (i = 0; i < d->nents; i++)
			if (d->ents[i].cookie == cookie) {
				if (i + 1 < d->nents || d->eof)
					return i + 1;
				break;
			}
	}
	d->valid = 0;
	if (plus)
		n = nacre_readdir_plus(m->fs, cr, fid, cookie, d->ents, d->attrs, DIR_BATCH,
				       &d->eof);
	else
		n = nacre_readdir(m->fs, cr, fid, cookie, d->ents, DIR_BATCH, &d->eof);
	d->plus = plus;
	if (n < 0)
		return n;
	if (n > DIR_BATCH)
		n = DIR_BATCH;
	d->nents = n;
	d->from = cookie;
	d->valid = 1;
	return 0;
}

/* One READDIR or READDIRPLUS reply. */
static void readdir_reply(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi, int plus)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct fz_dir *d = fz_handle_get(m, fi->fh, FZ_H_DIR);
	struct nacre_cred cr;
	struct nacre_fid parent;
	uint64_t cookie = off > 2 ? (uint64_t)off : 0;
	size_t pos = 0;
	char *buf;
	int rc = 0;

	if (!d || !in) {
		fuse_reply_err(req, EBADF);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fz_cred(req, &cr);
	pthread_mutex_lock(&d->lock);
	if (off == 0) {
		/* rewinddir: show what is there now, not the batch read before. */
		d->valid = 0;
		if (!(plus ? add_entry_plus(req, buf, size, &pos, ".", &in->fid, S_IFDIR, NULL,
					    NULL, 1)
			   : add_entry(req, buf, size, &pos, ".", &in->fid, S_IFDIR, 1)))
			goto out_reply;
	}
	if (off <= 1) {
		parent = in == &m->itab.root ? in->fid : fz_inode_parent(m, in);
		if (!(plus ? add_entry_plus(req, buf, size, &pos, "..", &parent, S_IFDIR, NULL,
					    NULL, 2)
			   : add_entry(req, buf, size, &pos, "..", &parent, S_IFDIR, 2)))
			goto out_reply;
	}
	for (;;) {
		int i = dir_seek(m, &cr, &in->fid, d, cookie, plus);

		if (i < 0) {
			rc = i;
			break;
		}
		for (; i < d->nents; i++) {
			const struct nacre_dirent *de = &d->ents[i];

			if (de->cookie <= 2)
				LOG_RATELIMITED(LOG_LVL_WARN, "dir", "MDS sent reserved cookie %llu",
						(unsigned long long)de->cookie);
			int fit = plus ? add_entry_plus(req, buf, size, &pos, de->name, &de->fid,
							de->type, d->plus ? &d->attrs[i] : NULL,
							&in->fid, de->cookie)
				       : add_entry(req, buf, size, &pos, de->name, &de->fid,
						   de->type, de->cookie);
			if (!fit)
				goto out_reply;
		}
		/* Batch used up: the next one starts after its last entry. */
		if (d->eof || d->nents == 0)
			break;
		cookie = d->ents[d->nents - 1].cookie;
	}
out_reply:
	pthread_mutex_unlock(&d->lock);
	/* Entries already placed are worth more than the error; the next call retries. */
	if (rc < 0 && pos == 0)
		fz_reply_rc(req, rc);
	else
		fuse_reply_buf(req, buf, pos);
	free(buf);
}

void fz_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	readdir_reply(req, ino, size, off, fi, 0);
}

/* READDIRPLUS: the listing with each entry's attributes from the same MDS requests, so
 * ls -l, find -size and os.scandir + stat need no request per entry. */
void fz_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	readdir_reply(req, ino, size, off, fi, 1);
}

void fz_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fz_dir_destroy(fz_handle_del(fz_mnt(req), fi->fh, FZ_H_DIR));
	fuse_reply_err(req, 0);
}

void fz_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_cred cr;

	(void)datasync;
	(void)fi;
	/* The MDS commits at once but flushes to disk within a second; fsyncdir waits for
	 * the flush, so a directory's entries survive a power loss once it returns. */
	fz_cred(req, &cr);
	fuse_reply_err(req, fz_errno_or_ok(nacre_sync_md(m->fs, &cr, &in->fid)));
}
