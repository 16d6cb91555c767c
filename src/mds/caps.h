/* caps.h - the MDS side of object capabilities (common/cap.h): which rights an open or a
 * layout request earns, the hook where a nodemap will narrow them, minting for replies and
 * for the MDS's own OSS requests (punch, destroy), and CAP_GET (renewal). */
#ifndef NACRE_MDS_CAPS_H
#define NACRE_MDS_CAPS_H

#include <stdint.h>

#include "common/cap.h"
#include "mds/inode.h"
#include "mds/mds.h"
#include "proto/rpc.h"
#include "proto/wire.h"

#define MDS_CAP_LIFETIME_DEFAULT_S 3600

/* The rights an open with access mask (MDS_MAY_*) that passed its permission check gets:
 * read for reading or executing, write for writing, and read with a write-only open when
 * cr may read the file too. Pure. */
uint32_t mds_cap_open_rights(const struct nacre_cred *cr, const struct mds_inode *ino,
			     int mask);

/* The nodemap hook: the rights the client of req may have on fid, at most rights. Today it
 * returns rights; a nodemap will take write away from a read-only client, and everything
 * from a denied client or outside its fileset. Thread-safe. */
uint32_t mds_cap_rights_filter(struct mds *m, const struct rpc_request *req,
			       const struct nacre_fid *fid, uint32_t rights);

/* Mints a capability for client on every stripe of fid at layout generation gen, valid for
 * the configured lifetime from now. Thread-safe. */
void mds_cap_mint(struct mds *m, uint64_t client, const struct nacre_fid *fid, uint32_t gen,
		  uint32_t rights, struct wire_cap *out);

/* For a reply to req on a file with layout l: filters rights through the nodemap hook and
 * mints, setting *has, when the connection negotiated WIRE_FEAT_CAPS, l has objects and
 * some right is left; else leaves *has 0. Thread-safe. */
void mds_cap_for_reply(struct mds *m, const struct rpc_request *req, const struct nacre_fid *fid,
		       const struct nacre_layout *l, uint32_t rights, uint8_t *has,
		       struct wire_cap *out);

/* LAYOUT_GET's rights: read if cr may read the file, else none. */
uint32_t mds_cap_layout_rights(struct mds *m, const struct nacre_cred *cr,
			       const struct nacre_fid *fid);

/* CAP_GET: a fresh capability for the rights recorded on the open handle of owner (the
 * caller, session.h: mds_owner_of). Returns
 * 0, -EBADF (no such handle of this client on that file), or -EACCES (the nodemap leaves
 * no right). */
int mds_cap_get(struct mds *m, const struct rpc_request *req, uint64_t owner,
		const struct wire_cap_req *r, struct wire_cap_rep *out);

#endif
