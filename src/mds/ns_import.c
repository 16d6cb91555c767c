/* ns_import.c - HSM_IMPORT: a released stub in the namespace for an object an archive
 * already holds, whose data comes back on first open. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "mds/alloc.h"
#include "mds/changelog.h"
#include "mds/hsm.h"
#include "mds/inode.h"
#include "mds/ns.h"
#include "mds/perm.h"
#include "mds/writer.h"

struct import_arg {
	struct mds *m;
	const struct wire_hsm_import_req *r;
	struct nacre_attr out;
};

static int import_op(struct mds_txn *txn, void *arg)
{
	struct import_arg *a = arg;
	const struct wire_hsm_import_req *r = a->r;
	struct mds_inode *dir = malloc(sizeof(*dir)), *ino = calloc(1, sizeof(*ino));
	struct nacre_fid existing;
	int rc = dir && ino ? 0 : -ENOMEM;
	if (!rc)
		rc = mds_ns_get_dir(txn, &r->parent, dir);
	if (!rc)
		rc = mds_perm_check(&r->cred, dir, MDS_MAY_WRITE | MDS_MAY_EXEC);
	if (!rc) {
		rc = mds_db_dentry_get(txn, &r->parent, r->name, &existing, NULL);
		rc = rc == 0 ? -EEXIST : rc == -ENOENT ? 0 : rc;
	}
	if (!rc)
		rc = mds_db_fid_alloc(txn, &ino->fid);
	if (!rc)
		rc = mds_alloc_file_layout(a->m, txn, dir, NULL, &ino->layout);
	if (rc)
		goto out;
	struct nacre_time now = time_now();
	ino->mode = S_IFREG | (r->mode & 07777);
	ino->uid = r->uid;
	ino->gid = r->gid;
	ino->nlink = 1;
	ino->size = r->size;
	ino->atime = ino->mtime = r->mtime;
	ino->ctime = ino->btime = now;
	ino->has_btime = 1;
	ino->has_layout = 1;
	/* a stub: the data is only in the archive until its first open */
	ino->hsm_state = NACRE_HS_EXISTS | NACRE_HS_ARCHIVED | NACRE_HS_RELEASED;
	ino->archive_id = r->archive_id;
	if (dir->proj_inherit)
		ino->projid = dir->projid; /* as a create in that directory */
	mds_txn_quota_exempt(txn);     /* imports are root's: counted, never refused */
	rc = mds_db_inode_put(txn, ino);
	if (!rc)
		rc = mds_db_dentry_put(txn, &r->parent, r->name, &ino->fid, S_IFREG);
	if (!rc)
		rc = mds_db_link_put(txn, &ino->fid, &r->parent, r->name);
	if (!rc)
		rc = mds_db_xattr_put(txn, &ino->fid, MDS_HSM_PATH_XATTR, r->path, strlen(r->path));
	if (rc)
		goto out;
	dir->nentries++;
	dir->mtime = dir->ctime = now;
	rc = mds_db_inode_put(txn, dir);
	if (!rc) /* a new name, as any create: consumers of the changelog see it appear */
		rc = mds_changelog_note(a->m->changelog, txn, NACRE_CL_CREATE, 0, &ino->fid,
					&r->parent, r->name, &r->cred);
	if (!rc)
		mds_inode_to_attr(ino, &a->out);
out:
	free(dir);
	free(ino);
	return rc;
}

int mds_ns_import(struct mds *m, const struct wire_hsm_import_req *r, struct nacre_attr *out)
{
	if (!mds_perm_is_root(&r->cred))
		return -EPERM; /* it sets any owner, as chown does */
	struct import_arg a = {.m = m, .r = r};
	int rc = mds_writer_submit(m->writer, import_op, &a);
	if (!rc)
		*out = a.out;
	return rc;
}
