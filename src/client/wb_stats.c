/* wb_stats.c - the write-back counters of a mount (nacre_fs_wb_stats): read under each
 * layer's own lock, one at a time. */
#include <errno.h>
#include <string.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/lease.h"
#include "client/wbj.h"
#include "client/wbq.h"

NACRE_API int nacre_fs_wb_stats(struct nacre_fs *fs, struct nacre_wb_stats *out)
{
	if (!fs || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));

	struct cl_leases *l = &fs->leases;
	pthread_mutex_lock(&l->lock);
	out->leases_now = l->n;
	out->leases_granted = l->granted;
	out->leases_refused = l->refused;
	out->leases_recalled = l->recalled;
	out->leases_returned = l->returned;
	out->lookups_answered = l->answered;
	out->changes_made = l->made + l->made_changes;
	pthread_mutex_unlock(&l->lock);

	struct cl_wbq *q = &fs->wbq;
	pthread_mutex_lock(&q->lock);
	out->queued_now = (uint64_t)q->count + q->inflight;
	out->changes_sent = q->sent;
	out->changes_refused = q->refused;
	out->batches = q->batches;
	out->flush_usec = q->flush_us;
	struct cl_wbj *j = fs->wbj; /* set before write-back starts, cleared after it ends */
	pthread_mutex_unlock(&q->lock);

	if (j) {
		pthread_mutex_lock(&j->lock);
		out->journal_mode = j->mode;
		out->journal_bytes = j->bytes;
		out->journal_now = j->appended > j->done ? j->appended - j->done : 0;
		out->journal_errors = j->errors;
		pthread_mutex_unlock(&j->lock);
	}
	return 0;
}
