/* caps.c - minting object capabilities on the MDS (see caps.h). */
#include "mds/caps.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "mds/db.h"
#include "mds/nodemap.h"
#include "mds/open.h"
#include "mds/perm.h"

uint32_t mds_cap_open_rights(const struct nacre_cred *cr, const struct mds_inode *ino,
			     int mask)
{
	uint32_t rights = 0;
	if (mask & (MDS_MAY_READ | MDS_MAY_EXEC)) /* exec: the kernel reads the program */
		rights |= CAP_READ;
	if (mask & MDS_MAY_WRITE) {
		rights |= CAP_WRITE;
		if (!(mask & MDS_MAY_READ) && mds_perm_check(cr, ino, MDS_MAY_READ) == 0)
			rights |= CAP_READ;
	}
	return rights;
}

uint32_t mds_cap_rights_filter(struct mds *m, const struct rpc_request *req,
			       const struct nacre_fid *fid, uint32_t rights)
{
	struct nodemap_view v;

	/* A request on a FID outside the caller's fileset, or from a denied client, was
	 * refused before it reached a handler (nodemap_serve.c), so in_fileset holds here;
	 * what is left to apply is read-only. */
	(void)fid;
	rights &= CAP_READ | CAP_WRITE;
	if (!m->nodemap || !req)
		return rights;
	nodemap_lookup(m->nodemap, req, &v);
	return (uint32_t)nodemap_data_rights(&v, 1, (int)rights);
}

void mds_cap_mint(struct mds *m, uint64_t client, const struct nacre_fid *fid, uint32_t gen,
		  uint32_t rights, struct wire_cap *out)
{
	uint32_t life = m->cap_lifetime_s ? m->cap_lifetime_s : MDS_CAP_LIFETIME_DEFAULT_S;
	out->expiry = (uint64_t)time(NULL) + life;
	out->rights = rights;
	out->stripe = CAP_STRIPE_ALL;
	cap_mint(&m->capkey, fid, gen, out->stripe, rights, client, out->expiry, out->mac);
}

void mds_cap_for_reply(struct mds *m, const struct rpc_request *req, const struct nacre_fid *fid,
		       const struct nacre_layout *l, uint32_t rights, uint8_t *has,
		       struct wire_cap *out)
{
	*has = 0;
	if (!req || !(req->features & WIRE_FEAT_CAPS) || l->nosts == 0)
		return;
	rights = mds_cap_rights_filter(m, req, fid, rights);
	if (!rights)
		return;
	mds_cap_mint(m, req->client_id, fid, l->gen, rights, out);
	*has = 1;
}

uint32_t mds_cap_layout_rights(struct mds *m, const struct nacre_cred *cr,
			       const struct nacre_fid *fid)
{
	struct mds_inode *ino = malloc(sizeof(*ino));
	struct mds_txn *txn;
	uint32_t rights = 0;
	if (!ino)
		return 0;
	if (mds_txn_begin_read(m->db, &txn) == 0) {
		if (mds_db_inode_get(txn, fid, ino) == 0 &&
		    mds_perm_check(cr, ino, MDS_MAY_READ) == 0)
			rights = CAP_READ;
		mds_txn_abort(txn);
	}
	free(ino);
	return rights;
}

int mds_cap_get(struct mds *m, const struct rpc_request *req, uint64_t owner,
		const struct wire_cap_req *r, struct wire_cap_rep *out)
{
	uint32_t rights = 0;
	int rc = mds_open_handle_rights(m->open, owner, r->handle, &r->fid, &rights);
	if (rc) {
		char fs[NACRE_FID_STR_MAX];
		LOG_RATELIMITED(LOG_LVL_INFO, "cap",
				"capability renewal for %s handle %llu from %s: no such open",
				fid_format(&r->fid, fs, sizeof(fs)),
				(unsigned long long)r->handle, req->peer);
		return rc;
	}
	rights = mds_cap_rights_filter(m, req, &r->fid, rights);
	if (!rights)
		return -EACCES;
	out->layout_gen = r->layout_gen;
	mds_cap_mint(m, req->client_id, &r->fid, r->layout_gen, rights, &out->cap);
	return 0;
}
