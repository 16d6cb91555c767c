/* perm_notify_stub.c - mds_notify_perm_change until the MDS->client
 * invalidation callback exists: nothing to tell (clients see the change when
 * their cache times out). */
#include "mds/perm_notify.h"

void mds_notify_perm_change(struct mds *m, const struct nacre_fid *fid) {
  (void)m;
  (void)fid;
}
