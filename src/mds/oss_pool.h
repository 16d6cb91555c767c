/* oss_pool.h - connections from the MDS to the OSSes (one rpc_conn per OSS address, made on
 * first use) and the object operations the MDS needs: punch for truncate, batched destroy
 * for the destroy log. Thread-safe. */
#ifndef NACRE_MDS_OSS_POOL_H
#define NACRE_MDS_OSS_POOL_H

#include <stdint.h>

#include "common/key.h"
#include "mds/mds.h"

#define MDS_OSS_TIMEOUT_MS 10000
#define MDS_OSS_KEYS_PUSH_MS 2000 /* longest a key table push waits for the OSSes */

/* key and fsname are copied. */
int mds_oss_pool_create(const char *fsname, const struct nacre_key *key,
			struct mds_oss_pool **out);
void mds_oss_pool_destroy(struct mds_oss_pool *p); /* NULL is fine */
/* OST_PUNCH of every object of l to its size for a file of new_size bytes, all stripes at
 * once. Returns 0, or -EIO if any OSS failed or could not be reached in time. */
int mds_oss_punch(struct mds *m, const struct nacre_fid *fid, const struct nacre_layout *l,
		  uint64_t new_size);

/* One object for mds_oss_destroy_batch. */
struct mds_oss_obj {
	struct nacre_fid fid;
	uint32_t ost_idx;
	uint32_t stripe;
	uint32_t gen;  /* layout generation */
	uint32_t tag;  /* the caller's (which destroy log record); here only a sort key */
	int rc;        /* out: 0 if the object is gone (or never existed), -EAGAIN if its OST
			* is unknown or down (nothing was sent), else the OSS's or transport's
			* error */
};
/* Destroys objs[0..n): one OST_DESTROY_BATCH per OST (per WIRE_OST_DESTROY_MAX objects),
 * all in flight at once, then the replies; an OSS that answers -EOPNOTSUPP (it predates the
 * opcode) gets one OST_DESTROY per object instead. Sorts objs by OST (then tag, stripe) and
 * sets every rc. Blocks up to about MDS_OSS_TIMEOUT_MS, more for an old OSS (its requests
 * go 64 at a time, each window with that deadline). objs is the caller's and is only used
 * during the call. Thread-safe. */
void mds_oss_destroy_batch(struct mds *m, struct mds_oss_obj *objs, size_t n);

/* Whether the OSS at addr answers a PING within timeout_ms (connecting first if need be):
 * 0, or the error (-ECONNREFUSED, -ETIMEDOUT...). Thread-safe. */
int mds_oss_ping(struct mds *m, const char *addr, int timeout_ms);

struct keytab_entry;
/* OST_KEY_UPDATE of entries e[0..n) to every OSS that has an OST up, all at once; waits for
 * the answers at most MDS_OSS_KEYS_PUSH_MS. An OSS that misses it pulls the table
 * when it registers again, and at each heartbeat round. Failures are logged. */
void mds_oss_key_update(struct mds *m, const struct keytab_entry *e, int n);

#endif
