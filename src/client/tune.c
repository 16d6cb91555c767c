/* tune.c - the tunables a mount may change while mounted (nacre_fs_tunable_get/_set):
 * the pool's RPCs in flight per OST, the readahead window limit, FID grants, write-back, the
 * write-behind limit and the RPC size. */
#include <errno.h>
#include <stdint.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"

#define MIB (1024ull * 1024ull)

NACRE_API uint64_t nacre_fs_client_id(const struct nacre_fs *fs)
{
	return fs->client_id;
}

NACRE_API int nacre_fs_tunable_get(struct nacre_fs *fs, int tunable, int ost, int64_t *val)
{
	switch (tunable) {
	case NACRE_TUNE_RPCS_IN_FLIGHT:
		if (ost < -1 || ost > 0xffff)
			return -EINVAL;
		*val = cl_pool_max(&fs->pool, ost);
		return 0;
	case NACRE_TUNE_READ_AHEAD_MB:
		*val = (int64_t)__atomic_load_n(&fs->ra_mb, __ATOMIC_RELAXED);
		return 0;
	case NACRE_TUNE_FID_GRANT:
		*val = !__atomic_load_n(&fs->fidseq.off, __ATOMIC_RELAXED);
		return 0;
	case NACRE_TUNE_WB:
		*val = __atomic_load_n(&fs->leases.on, __ATOMIC_RELAXED);
		return 0;
	case NACRE_TUNE_WB_DELAY_MS:
		*val = __atomic_load_n(&fs->wbq.delay_ms, __ATOMIC_RELAXED);
		return 0;
	case NACRE_TUNE_MAX_DIRTY_MB:
		*val = (int64_t)(__atomic_load_n(&fs->dirty_max, __ATOMIC_RELAXED) / MIB);
		return 0;
	case NACRE_TUNE_MAX_PAGES_PER_RPC:
		*val = __atomic_load_n(&fs->rpc_cap, __ATOMIC_RELAXED) / 4096u;
		return 0;
	default:
		return -EINVAL;
	}
}

/* The write-behind limits: the mount's, and a file's (a quarter of it, within
 * CL_FILE_DIRTY_MB_MAX, at least one RPC), as at mount. Writers read them as they go. */
static int set_dirty_mb(struct nacre_fs *fs, int64_t val)
{
	if (__atomic_load_n(&fs->dirty_max, __ATOMIC_RELAXED) == 0)
		return -EPERM; /* write-through mount: its write path has no write-behind */
	if (val < 1 || val > NACRE_DIRTY_MB_MAX)
		return -ERANGE;
	uint64_t all = (uint64_t)val * MIB, file = all / 4;
	if (file > CL_FILE_DIRTY_MB_MAX * MIB)
		file = CL_FILE_DIRTY_MB_MAX * MIB;
	if (file < fs->rpc_max)
		file = fs->rpc_max;
	__atomic_store_n(&fs->file_dirty_max, file, __ATOMIC_RELAXED);
	__atomic_store_n(&fs->dirty_max, all, __ATOMIC_RELAXED);
	return 0;
}

NACRE_API int nacre_fs_tunable_set(struct nacre_fs *fs, int tunable, int ost, int64_t val)
{
	switch (tunable) {
	case NACRE_TUNE_RPCS_IN_FLIGHT:
		if (ost < -1 || ost > 0xffff)
			return -EINVAL;
		if (val < 1 || val > NACRE_RPCS_IN_FLIGHT_MAX)
			return -ERANGE;
		cl_pool_set_max(&fs->pool, ost, (int)val);
		return 0;
	case NACRE_TUNE_READ_AHEAD_MB: {
		uint64_t bytes;

		if (val < 0 || val > NACRE_READ_AHEAD_MB_MAX)
			return -ERANGE;
		bytes = (uint64_t)val * MIB;
		if (bytes > 0 && bytes < fs->rpc_max)
			bytes = fs->rpc_max;
		__atomic_store_n(&fs->ra_mb, (uint64_t)val, __ATOMIC_RELAXED);
		__atomic_store_n(&fs->ra_max, bytes, __ATOMIC_RELAXED);
		return 0;
	}
	case NACRE_TUNE_FID_GRANT:
		if (val != 0 && val != 1)
			return -ERANGE;
		__atomic_store_n(&fs->fidseq.off, val == 0, __ATOMIC_RELAXED);
		return 0;
	case NACRE_TUNE_WB:
		if (val != 0 && val != 1)
			return -ERANGE;
		if (val == 1 && cl_wbq_start(fs))
			return -EAGAIN; /* no thread to send what is queued */
		__atomic_store_n(&fs->leases.on, (int)val, __ATOMIC_RELAXED);
		if (val == 0)
			cl_lease_recall(fs, NULL, 0, 1); /* every lease goes back */
		return 0;
	case NACRE_TUNE_WB_DELAY_MS:
		if (val < 1 || val > NACRE_WB_DELAY_MS_MAX)
			return -ERANGE;
		__atomic_store_n(&fs->wbq.delay_ms, (uint32_t)val, __ATOMIC_RELAXED);
		return 0;
	case NACRE_TUNE_MAX_DIRTY_MB:
		return set_dirty_mb(fs, val);
	case NACRE_TUNE_MAX_PAGES_PER_RPC:
		if (val < 1 || val > fs->rpc_max / 4096u)
			return -ERANGE;
		__atomic_store_n(&fs->rpc_cap, (uint32_t)val * 4096u, __ATOMIC_RELAXED);
		return 0;
	default:
		return -EINVAL;
	}
}
