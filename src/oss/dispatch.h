/* dispatch.h - the OSS request handler: decodes OST requests, runs them on the store,
 * encodes replies. Runs on the rpc server's worker threads, which double as the disk pool. */
#ifndef NACRE_OSS_DISPATCH_H
#define NACRE_OSS_DISPATCH_H

#include <stdint.h>

#include "common/cap.h"
#include "oss/target.h"
#include "proto/rpc.h"

/* The OSTs one process serves. Set up before the server runs and read-only afterwards, so
 * workers read it without a lock. */
struct oss_ctx {
	struct oss_target **targets; /* owned by main */
	int ntargets;
	/* Answer OST_DESTROY_BATCH with -EOPNOTSUPP, as an OSS that predates it does: set from
	 * NACRE_OSS_NO_DESTROY_BATCH=1, for tests of the MDS's fallback. */
	int no_destroy_batch;
	/* Answer OST_FALLOCATE and OST_SEEK with -EOPNOTSUPP, as an OSS that predates them
	 * does: NACRE_OSS_NO_SPACE_OPS=1, for tests of the client's fallback. */
	int no_space_ops;
	/* The capability key (derived from the cluster key): object requests are served only
	 * with a capability it verifies (oss/cap_check.h). */
	struct cap_key capkey;
};

/* The OST with this index, or NULL. Thread-safe (ctx is read-only). */
struct oss_target *oss_ctx_find(const struct oss_ctx *ctx, uint32_t index);

/* rpc_handler_fn with arg = struct oss_ctx *. Returns the reply status: 0, -EPROTO for a
 * malformed request, -EACCES for an object request without a valid capability,
 * -EOPNOTSUPP for an unknown opcode, -NACRE_ENOTARGET for an OST not
 * served here, -EINVAL/-EFBIG for bad ranges, or the store's -errno (ENOSPC, EIO...); for
 * OST_DESTROY_BATCH the first object's error, with the failed objects in the reply body. */
int oss_dispatch(void *arg, const struct rpc_request *req, struct rpc_reply *rep);

#endif
