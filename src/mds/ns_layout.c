/* ns_layout.c - LAYOUT_GET and LAYOUT_SET: a file's layout, a directory's default. The OSTs
 * of a new layout come from alloc.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/layout.h"
#include "common/log.h"
#include "mds/changelog.h"
#include "common/util.h"
#include "mds/alloc.h"
#include "mds/destroy.h"
#include "mds/ns.h"
#include "mds/perm.h"
#include "mds/writer.h"

int mds_ns_layout_get(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		      struct nacre_layout *out)
{
	(void)cr;
	struct mds_txn *txn;
	struct mds_inode *ino = malloc(sizeof(*ino));
	if (!ino)
		return -ENOMEM;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (!rc) {
		rc = mds_db_inode_get(txn, fid, ino);
		mds_txn_abort(txn);
	}
	if (!rc && !ino->has_layout)
		rc = -ENODATA;
	if (!rc)
		*out = ino->layout;
	free(ino);
	return rc;
}

struct set_arg {
	struct mds *m;
	const struct nacre_cred *cr;
	const struct nacre_fid *fid;
	const struct nacre_layout *req;
	struct nacre_layout *out;
};

static int set_dir_default(struct mds *m, struct mds_inode *ino,
			   const struct nacre_layout *req, struct nacre_layout *out)
{
	if (req->stripe_count == 0 && req->stripe_size == 0 && req->stripe_offset == -1) {
		ino->has_layout = 0; /* the "clear" request (setstripe -d) */
		memset(&ino->layout, 0, sizeof(ino->layout));
		ino->layout.stripe_offset = -1;
		*out = ino->layout;
		return 0;
	}
	char err[128];
	if (layout_check_request(req, err, sizeof(err))) {
		LOG_RATELIMITED(LOG_LVL_INFO, "alloc", "default layout refused: %s", err);
		return -EINVAL;
	}
	if (mds_alloc_check_offset(m, req->stripe_offset))
		return -EINVAL;
	memset(&ino->layout, 0, sizeof(ino->layout));
	ino->layout.pattern = NACRE_PATTERN_RAID0;
	ino->layout.stripe_count = req->stripe_count;
	ino->layout.stripe_size = req->stripe_size;
	ino->layout.stripe_offset = req->stripe_offset;
	ino->has_layout = 1;
	*out = ino->layout;
	return 0;
}

static int layout_set_op(struct mds_txn *txn, void *arg)
{
	struct set_arg *a = arg;
	struct mds_inode ino, parent, *pp = NULL;
	struct nacre_fid pfid;
	char name[NACRE_NAME_MAX + 1];
	int rc = mds_db_inode_get(txn, a->fid, &ino);
	if (rc)
		return rc;
	if (S_ISDIR(ino.mode)) {
		if (!mds_perm_is_root(a->cr) && a->cr->uid != ino.uid)
			return -EPERM;
		rc = set_dir_default(a->m, &ino, a->req, a->out);
	} else if (S_ISREG(ino.mode)) {
		rc = mds_perm_check(a->cr, &ino, MDS_MAY_WRITE);
		if (rc)
			return rc;
		/* objects may hold data: a new layout would lose it (migration needs a copy) */
		if (ino.size != 0)
			return -EBUSY;
		if (mds_db_link_first(txn, a->fid, &pfid, name) == 0 &&
		    mds_db_inode_get(txn, &pfid, &parent) == 0)
			pp = &parent;
		struct nacre_layout nl;
		rc = mds_alloc_file_layout(a->m, txn, pp, a->req, &nl);
		if (rc)
			return rc;
		if (ino.has_layout && ino.layout.nosts > 0) {
			rc = mds_db_destroy_add(txn, &ino.fid, &ino.layout);
			if (rc)
				return rc;
			nl.gen = ino.layout.gen + 1;
		}
		ino.layout = nl;
		ino.has_layout = 1;
		*a->out = nl;
	} else {
		return -EINVAL;
	}
	if (rc)
		return rc;
	ino.ctime = time_now();
	rc = mds_db_inode_put(txn, &ino);
	return rc ? rc
		  : mds_changelog_note(a->m->changelog, txn, NACRE_CL_LAYOUT, 0, a->fid, NULL,
				       NULL, a->cr);
}

int mds_ns_layout_set(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		      const struct nacre_layout *l, struct nacre_layout *out)
{
	struct set_arg a = {m, cr, fid, l, out};
	int rc = mds_writer_submit(m->writer, layout_set_op, &a);
	if (!rc)
		mds_destroyer_kick(m->destroyer);
	return rc;
}
