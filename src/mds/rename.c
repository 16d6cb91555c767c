/* rename.c - RENAME: plain, RENAME_NOREPLACE, RENAME_EXCHANGE, and replacing a target. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "mds/changelog.h"
#include "mds/destroy.h"
#include "mds/inode.h"
#include "mds/ns.h"
#include "mds/perm.h"
#include "mds/writer.h"

/* 1 if anc is fid or one of its ancestors, walking the links table up to the root. */
static int is_ancestor(struct mds_txn *txn, const struct nacre_fid *anc,
		       const struct nacre_fid *fid, int *err)
{
	struct nacre_fid root = mds_root_fid(), cur = *fid, parent;
	char name[NACRE_NAME_MAX + 1];
	for (int depth = 0; depth <= NACRE_PATH_MAX; depth++) {
		if (fid_eq(&cur, anc))
			return 1;
		if (fid_eq(&cur, &root))
			return 0;
		int rc = mds_db_link_first(txn, &cur, &parent, name);
		if (rc) {
			*err = rc == -ENOENT ? -ENOENT : rc;
			return 0;
		}
		cur = parent;
	}
	*err = -ELOOP;
	return 0;
}

struct rename_ctx {
	struct mds *m;
	const struct wire_rename_req *r;
	struct mds_inode sp_store, dp_store, src, dst;
	struct mds_inode *sp, *dp; /* dp == sp when both parents are the same directory */
	int have_dst;
	struct nacre_time now;
};

/* Moving a directory to another parent rewrites its "..": Linux needs write access to it. */
static int check_moved_dir(struct rename_ctx *c, const struct mds_inode *ino)
{
	if (!S_ISDIR(ino->mode) || c->sp == c->dp)
		return 0;
	return mds_perm_check(&c->r->cred, ino, MDS_MAY_WRITE);
}

static int load(struct mds_txn *txn, struct rename_ctx *c)
{
	const struct wire_rename_req *r = c->r;
	struct nacre_fid sfid, dfid;
	int rc = mds_ns_get_dir(txn, &r->sparent, &c->sp_store);
	if (rc)
		return rc;
	c->sp = &c->sp_store;
	if (fid_eq(&r->sparent, &r->dparent)) {
		c->dp = c->sp;
	} else {
		rc = mds_ns_get_dir(txn, &r->dparent, &c->dp_store);
		if (rc)
			return rc;
		c->dp = &c->dp_store;
	}
	rc = mds_perm_check(&r->cred, c->sp, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (!rc && c->dp != c->sp)
		rc = mds_perm_check(&r->cred, c->dp, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (rc)
		return rc;
	rc = mds_db_dentry_get(txn, &r->sparent, r->sname, &sfid, NULL);
	if (!rc)
		rc = mds_db_inode_get(txn, &sfid, &c->src);
	if (rc)
		return rc;
	rc = mds_db_dentry_get(txn, &r->dparent, r->dname, &dfid, NULL);
	if (rc == 0) {
		c->have_dst = 1;
		rc = mds_db_inode_get(txn, &dfid, &c->dst);
	} else if (rc == -ENOENT) {
		rc = 0;
	}
	return rc;
}

/* Every check Linux makes, in its order where it matters. */
static int check(struct mds_txn *txn, struct rename_ctx *c)
{
	const struct wire_rename_req *r = c->r;
	int rc = mds_perm_sticky(&r->cred, c->sp, &c->src);
	if (rc)
		return rc;
	if (c->have_dst) {
		rc = mds_perm_sticky(&r->cred, c->dp, &c->dst);
		if (rc)
			return rc;
	}
	if (r->flags & MDS_RENAME_EXCHANGE) {
		if (!c->have_dst)
			return -ENOENT;
	} else if (c->have_dst) {
		if (r->flags & MDS_RENAME_NOREPLACE)
			return -EEXIST;
		if (S_ISDIR(c->src.mode) && !S_ISDIR(c->dst.mode))
			return -ENOTDIR;
		if (!S_ISDIR(c->src.mode) && S_ISDIR(c->dst.mode))
			return -EISDIR;
		if (S_ISDIR(c->dst.mode) && c->dst.nentries > 0)
			return -ENOTEMPTY;
	}
	/* a directory cannot move below itself */
	if (S_ISDIR(c->src.mode)) {
		int err = 0;
		if (is_ancestor(txn, &c->src.fid, &r->dparent, &err))
			return -EINVAL;
		if (err)
			return err;
	}
	if ((r->flags & MDS_RENAME_EXCHANGE) && S_ISDIR(c->dst.mode)) {
		int err = 0;
		if (is_ancestor(txn, &c->dst.fid, &r->sparent, &err))
			return -EINVAL;
		if (err)
			return err;
	}
	rc = check_moved_dir(c, &c->src);
	if (!rc && (r->flags & MDS_RENAME_EXCHANGE))
		rc = check_moved_dir(c, &c->dst);
	return rc;
}

static int do_exchange(struct mds_txn *txn, struct rename_ctx *c)
{
	const struct wire_rename_req *r = c->r;
	int rc = mds_db_dentry_put(txn, &r->sparent, r->sname, &c->dst.fid, c->dst.mode & S_IFMT);
	if (!rc)
		rc = mds_db_dentry_put(txn, &r->dparent, r->dname, &c->src.fid,
				       c->src.mode & S_IFMT);
	if (!rc)
		rc = mds_db_link_del(txn, &c->src.fid, &r->sparent, r->sname);
	if (!rc)
		rc = mds_db_link_del(txn, &c->dst.fid, &r->dparent, r->dname);
	if (!rc)
		rc = mds_db_link_put(txn, &c->src.fid, &r->dparent, r->dname);
	if (!rc)
		rc = mds_db_link_put(txn, &c->dst.fid, &r->sparent, r->sname);
	if (rc)
		return rc;
	if (c->sp != c->dp) {
		/* a directory moving between parents carries one parent link with it */
		int sdir = S_ISDIR(c->src.mode), ddir = S_ISDIR(c->dst.mode);
		if (sdir && !ddir) {
			c->sp->nlink--;
			c->dp->nlink++;
		} else if (!sdir && ddir) {
			c->sp->nlink++;
			c->dp->nlink--;
		}
	}
	c->src.ctime = c->dst.ctime = c->now;
	rc = mds_db_inode_put(txn, &c->src);
	if (!rc)
		rc = mds_db_inode_put(txn, &c->dst);
	return rc;
}

static int do_move(struct mds_txn *txn, struct rename_ctx *c)
{
	const struct wire_rename_req *r = c->r;
	int rc;
	if (c->have_dst) {
		rc = mds_db_link_del(txn, &c->dst.fid, &r->dparent, r->dname);
		if (!rc)
			rc = mds_ns_drop_name(c->m, txn, &c->dst, c->now);
		if (rc)
			return rc;
		if (S_ISDIR(c->dst.mode))
			c->dp->nlink--;
		c->dp->nentries--;
	}
	rc = mds_db_dentry_del(txn, &r->sparent, r->sname);
	if (!rc)
		rc = mds_db_dentry_put(txn, &r->dparent, r->dname, &c->src.fid,
				       c->src.mode & S_IFMT);
	if (!rc)
		rc = mds_db_link_del(txn, &c->src.fid, &r->sparent, r->sname);
	if (!rc)
		rc = mds_db_link_put(txn, &c->src.fid, &r->dparent, r->dname);
	if (rc)
		return rc;
	if (S_ISDIR(c->src.mode) && c->sp != c->dp) {
		c->sp->nlink--;
		c->dp->nlink++;
	}
	c->sp->nentries--;
	c->dp->nentries++;
	c->src.ctime = c->now;
	return mds_db_inode_put(txn, &c->src);
}

/* One RENME record per moved inode, as Lustre writes it: t= the target it replaced (zero if
 * none), p= and name its new place, s=, sp= and sname where it was. An exchange moves two
 * inodes: two records, each with no target. */
static int note_one(struct mds_txn *txn, struct rename_ctx *c, const struct mds_inode *moved,
		    const struct nacre_fid *sp, const char *sname, const struct nacre_fid *dp,
		    const char *dname, const struct mds_inode *replaced)
{
	struct nacre_changelog_rec *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->type = NACRE_CL_RENAME;
	r->flags = NACRE_CLF_RENAME;
	if (replaced) {
		r->tfid = replaced->fid;
		/* called after the move: the replaced inode's nlink already lost this name */
		if (S_ISDIR(replaced->mode) || replaced->nlink == 0) {
			r->flags |= NACRE_CLF_RENAME_LAST;
			if (replaced->hsm_state & NACRE_HS_EXISTS)
				r->flags |= NACRE_CLF_RENAME_LAST_EXISTS;
		}
	}
	r->pfid = *dp;
	str_copy(r->name, dname, sizeof(r->name));
	r->sfid = moved->fid;
	r->spfid = *sp;
	str_copy(r->sname, sname, sizeof(r->sname));
	mds_changelog_caller(r, &c->r->cred);
	int rc = mds_changelog_add(c->m->changelog, txn, r);
	free(r);
	return rc;
}

static int note(struct mds_txn *txn, struct rename_ctx *c)
{
	const struct wire_rename_req *r = c->r;

	if (!mds_changelog_wants(c->m->changelog, NACRE_CL_RENAME)) /* counted, not written */
		return mds_changelog_note(c->m->changelog, txn, NACRE_CL_RENAME, 0,
					  c->have_dst ? &c->dst.fid : NULL, NULL, NULL, NULL);
	if (!(r->flags & MDS_RENAME_EXCHANGE))
		return note_one(txn, c, &c->src, &r->sparent, r->sname, &r->dparent, r->dname,
				c->have_dst ? &c->dst : NULL);
	int rc = note_one(txn, c, &c->src, &r->sparent, r->sname, &r->dparent, r->dname, NULL);
	if (!rc)
		rc = note_one(txn, c, &c->dst, &r->dparent, r->dname, &r->sparent, r->sname, NULL);
	return rc;
}

static int rename_op(struct mds_txn *txn, void *arg)
{
	struct rename_ctx *c = arg;
	int rc = load(txn, c);
	if (rc)
		return rc;
	/* two names of one inode: rename(2) does nothing */
	if (c->have_dst && fid_eq(&c->src.fid, &c->dst.fid))
		return 0;
	rc = check(txn, c);
	if (rc)
		return rc;
	c->now = time_now();
	rc = (c->r->flags & MDS_RENAME_EXCHANGE) ? do_exchange(txn, c) : do_move(txn, c);
	if (rc)
		return rc;
	c->sp->mtime = c->sp->ctime = c->now;
	c->dp->mtime = c->dp->ctime = c->now;
	rc = mds_db_inode_put(txn, c->sp);
	if (!rc && c->dp != c->sp)
		rc = mds_db_inode_put(txn, c->dp);
	if (!rc)
		rc = note(txn, c);
	return rc;
}

static int rename_flags_ok(const struct wire_rename_req *r)
{
	if (r->flags & ~(MDS_RENAME_NOREPLACE | MDS_RENAME_EXCHANGE))
		return 0;
	return !((r->flags & MDS_RENAME_NOREPLACE) && (r->flags & MDS_RENAME_EXCHANGE));
}

/* rename_op in txn, or through the group commit when txn is NULL. */
static int rename_in(struct mds *m, struct mds_txn *txn, const struct wire_rename_req *r)
{
	if (!rename_flags_ok(r))
		return -EINVAL;
	struct rename_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->m = m;
	c->r = r;
	int rc = txn ? rename_op(txn, c) : mds_writer_submit(m->writer, rename_op, c);
	free(c);
	return rc;
}

int mds_ns_rename(struct mds *m, const struct wire_rename_req *r)
{
	int rc = rename_in(m, NULL, r);
	if (!rc)
		mds_destroyer_kick(m->destroyer);
	return rc;
}

int mds_ns_rename_txn(struct mds *m, struct mds_txn *txn, const struct wire_rename_req *r)
{
	return rename_in(m, txn, r);
}
