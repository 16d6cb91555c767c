/* perm_notify.h - telling the clients that cache an inode that its permissions
 * changed (mode, owner, group or ACL), so that no kernel acts on stale
 * attributes or ACLs. */
#ifndef NACRE_MDS_PERM_NOTIFY_H
#define NACRE_MDS_PERM_NOTIFY_H

#include "mds/mds.h"
#include "nacre/nacre_types.h"

/* Called after a permission change of fid was committed, before it is
 * acknowledged. Thread-safe; fid is borrowed for the call. */
void mds_notify_perm_change(struct mds *m, const struct nacre_fid *fid);

#endif
