/* mds_metrics.c - what the MDS exports besides the rpc layer's per-operation counters:
 * MDT space, open files, OSTs registered and up. Values are computed at scrape time. */
#include <sys/statvfs.h>

#include "common/metrics.h"
#include "mds/mds_metrics.h"
#include "mds/open.h"
#include "mds/targets.h"

static void mdt_space(void *arg, uint64_t *kb_free, uint64_t *kb_total)
{
	struct mds *m = arg;
	struct statvfs sv;

	if (statvfs(m->data_dir, &sv) == 0) {
		*kb_free = (uint64_t)sv.f_bavail * sv.f_frsize / 1024;
		*kb_total = (uint64_t)sv.f_blocks * sv.f_frsize / 1024;
	}
}

static double open_files(void *arg)
{
	struct mds *m = arg;
	return (double)mds_open_handles(m->open);
}

static double osts_up(void *arg)
{
	struct mds *m = arg;
	static __thread struct mds_ost_info info[1024];
	return (double)mds_targets_up(m->targets, info, 1024);
}

void mds_metrics_register(struct mds *m)
{
	metrics_set_space_fn(mdt_space, m);
	metrics_gauge_fn("nacre_mds_open_files", "", "Files open by clients (handles)",
			 open_files, m);
	metrics_gauge_fn("nacre_mds_osts_up", "", "OSTs whose server sent a recent heartbeat",
			 osts_up, m);
}
