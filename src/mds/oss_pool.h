/* oss_pool.h - connections from the MDS to the OSSes (one rpc_conn per OSS address, made on
 * first use) and the object operations the MDS needs: punch for truncate, destroy for the
 * destroy log. Thread-safe. */
#ifndef NACRE_MDS_OSS_POOL_H
#define NACRE_MDS_OSS_POOL_H

#include <stdint.h>

#include "common/key.h"
#include "mds/mds.h"

#define MDS_OSS_TIMEOUT_MS 10000

/* key and fsname are copied. */
int mds_oss_pool_create(const char *fsname, const struct nacre_key *key,
			struct mds_oss_pool **out);
void mds_oss_pool_destroy(struct mds_oss_pool *p); /* NULL is fine */
/* OST_PUNCH of every object of l to its size for a file of new_size bytes, all stripes at
 * once. Returns 0, or -EIO if any OSS failed or could not be reached in time. */
int mds_oss_punch(struct mds *m, const struct nacre_fid *fid, const struct nacre_layout *l,
		  uint64_t new_size);
/* OST_DESTROY of every object of l. Returns 0 only if every one succeeded (a missing object
 * counts as success), -EAGAIN if some OST is unknown or down, else the first error. */
int mds_oss_destroy_objects(struct mds *m, const struct nacre_fid *fid,
			    const struct nacre_layout *l);

#endif
