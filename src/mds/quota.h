/* quota.h - QUOTA requests (docs/quota.md): usage and limits of a user or group, setting
 * limits, grace periods and defaults, and the recount. Usage itself is charged by the
 * store in the transaction of each inode change (db.h, "quotas"). Thread-safe. */
#ifndef NACRE_MDS_QUOTA_H
#define NACRE_MDS_QUOTA_H

#include "mds/mds.h"
#include "proto/rpc.h"

/* Answers one QUOTA request. Changes and the recount need the caller's (mapped) uid 0. */
int mds_quota_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);

#endif
