/* alloc.c - OST allocation for new files. */
#include "mds/alloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/layout.h"
#include "common/log.h"
#include "mds/inode.h"
#include "mds/targets.h"

/* OSTs considered for one allocation (the first ones by index). */
#define MDS_ALLOC_MAX_OSTS 1024

/* Where the next round-robin file starts; any thread may advance it. */
static atomic_uint rr_next;

/* Fills the unset fields of l (count 0, size 0, offset -1) from def. */
static void merge(struct nacre_layout *l, const struct nacre_layout *def)
{
	if (l->stripe_count == 0)
		l->stripe_count = def->stripe_count;
	if (l->stripe_size == 0)
		l->stripe_size = def->stripe_size;
	if (l->stripe_offset == -1)
		l->stripe_offset = def->stripe_offset;
}

/* Chooses the OSTs of l: count and offset resolved as documented in alloc.h. */
static int choose(struct mds *m, struct nacre_layout *l)
{
	struct mds_ost_info up[MDS_ALLOC_MAX_OSTS];
	int nup = mds_targets_up(m->targets, up, MDS_ALLOC_MAX_OSTS);
	if (nup == 0) {
		LOG_RATELIMITED(LOG_LVL_ERR, "alloc", "cannot create a file: no OST is up");
		return -ENOSPC;
	}
	/* skip OSTs with under 0.5% free; an OST that reported no size yet is usable */
	int n = 0;
	for (int i = 0; i < nup; i++)
		if (up[i].kb_total == 0 || up[i].kb_avail * 200 >= up[i].kb_total)
			up[n++] = up[i];
	if (n == 0) {
		LOG_RATELIMITED(LOG_LVL_ERR, "alloc", "cannot create a file: every up OST is full");
		return -ENOSPC;
	}
	int count = l->stripe_count;
	if (count < 0 || count > n)
		count = n;
	if (count > NACRE_MAX_STRIPES)
		count = NACRE_MAX_STRIPES;
	int start;
	if (l->stripe_offset < 0) {
		start = (int)(atomic_fetch_add(&rr_next, 1) % (unsigned)n);
	} else {
		/* the asked OST, or the next usable one after it */
		start = 0;
		while (start < n && up[start].index < (uint32_t)l->stripe_offset)
			start++;
		if (start == n)
			start = 0;
	}
	for (int i = 0; i < count; i++)
		l->ost_idx[i] = up[(start + i) % n].index;
	l->nosts = (uint32_t)count;
	l->stripe_count = count;
	return 0;
}

int mds_alloc_check_offset(struct mds *m, int32_t offset)
{
	char addr[NACRE_ADDR_MAX + 1];
	int up;

	if (offset < 0 || mds_targets_addr(m->targets, (uint32_t)offset, addr, &up) == 0)
		return 0;
	LOG_RATELIMITED(LOG_LVL_INFO, "alloc", "layout refused: stripe offset %d is not an OST "
			"of this file system", offset);
	return -EINVAL;
}

static int resolve(struct mds *m, struct mds_txn *txn, const struct mds_inode *parent,
		   const struct nacre_layout *req, struct nacre_layout *out)
{
	memset(out, 0, sizeof(*out));
	out->stripe_offset = -1;
	if (req) {
		char err[128];
		if (layout_check_request(req, err, sizeof(err))) {
			LOG_RATELIMITED(LOG_LVL_INFO, "alloc", "layout refused: %s", err);
			return -EINVAL;
		}
		if (mds_alloc_check_offset(m, req->stripe_offset))
			return -EINVAL;
		out->stripe_count = req->stripe_count;
		out->stripe_size = req->stripe_size;
		out->stripe_offset = req->stripe_offset;
	}
	if (parent && S_ISDIR(parent->mode) && parent->has_layout)
		merge(out, &parent->layout);
	struct nacre_fid root = mds_root_fid();
	if (!parent || !fid_eq(&parent->fid, &root)) {
		struct mds_inode *r = malloc(sizeof(*r));
		if (!r)
			return -ENOMEM;
		int rc = mds_db_inode_get(txn, &root, r);
		if (!rc && r->has_layout)
			merge(out, &r->layout);
		free(r);
		if (rc && rc != -ENOENT)
			return rc;
	}
	struct nacre_layout builtin = {.stripe_count = 1,
				       .stripe_size = NACRE_STRIPE_SIZE_DEFAULT,
				       .stripe_offset = -1};
	merge(out, &builtin);
	out->pattern = NACRE_PATTERN_RAID0;
	out->gen = 0;
	return choose(m, out);
}

int mds_alloc_file_layout(struct mds *m, struct mds_txn *txn, const struct mds_inode *parent,
			  const struct nacre_layout *req, struct nacre_layout *out)
{
	return resolve(m, txn, parent, req, out);
}

void mds_alloc_inherit_default(const struct mds_inode *parent, struct mds_inode *child)
{
	child->has_layout = parent->has_layout;
	if (parent->has_layout)
		child->layout = parent->layout;
}
