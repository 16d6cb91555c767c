/* wb_metrics.c - this mount's write-back counters (nacre_fs_wb_stats) as mdc.*.wb_stats
 * and as nacre_client_wb_* series (fz_metrics.h). */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/lprocfs.h"
#include "common/metrics.h"
#include "common/strbuf.h"
#include "fuse/fz_metrics.h"
#include "nacre/nacre.h"

static const char *journal_mode(int mode)
{
	return mode == NACRE_WB_JOURNAL_SYNC ? "sync" : mode == NACRE_WB_JOURNAL_ASYNC ? "async"
										      : "off";
}

void fz_metrics_wb_stats(struct nacre_fs *fs, struct strbuf *out)
{
	struct nacre_wb_stats s;

	if (nacre_fs_wb_stats(fs, &s) < 0)
		return;
	lprocfs_snapshot_line(out);
	strbuf_printf(out, "%-25s %llu\n", "leases_held", (unsigned long long)s.leases_now);
	lprocfs_counter_line(out, "leases_granted", s.leases_granted, "reqs", NULL);
	lprocfs_counter_line(out, "leases_refused", s.leases_refused, "reqs", NULL);
	lprocfs_counter_line(out, "leases_recalled", s.leases_recalled, "reqs", NULL);
	lprocfs_counter_line(out, "leases_returned", s.leases_returned, "reqs", NULL);
	lprocfs_counter_line(out, "lookups_answered", s.lookups_answered, "reqs", NULL);
	lprocfs_counter_line(out, "changes_made", s.changes_made, "reqs", NULL);
	strbuf_printf(out, "%-25s %llu\n", "changes_queued", (unsigned long long)s.queued_now);
	lprocfs_counter_line(out, "changes_sent", s.changes_sent, "reqs", NULL);
	lprocfs_counter_line(out, "changes_refused", s.changes_refused, "reqs", NULL);
	/* per batch, lprocfs's MIN MAX SUM: the extremes are not kept */
	lprocfs_counter_line(out, "batch_changes", s.batches, "changes",
			     (const uint64_t[3]){0, 0, s.changes_sent});
	lprocfs_counter_line(out, "batch_usec", s.batches, "usec",
			     (const uint64_t[3]){0, 0, s.flush_usec});
	strbuf_printf(out, "%-25s %s\n", "journal", journal_mode(s.journal_mode));
	strbuf_printf(out, "%-25s %llu\n", "journal_changes", (unsigned long long)s.journal_now);
	strbuf_printf(out, "%-25s %llu\n", "journal_bytes", (unsigned long long)s.journal_bytes);
	lprocfs_counter_line(out, "journal_errors", s.journal_errors, "reqs", NULL);
}

/* The one mount of this process (NULL once it is going away: a last scrape or log record
 * may come after), and which counter a series reads. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nacre_fs *g_fs;

static double field(void *arg)
{
	struct nacre_wb_stats s;
	size_t off = (size_t)(uintptr_t)arg;
	int rc = -1;

	pthread_mutex_lock(&g_lock);
	if (g_fs)
		rc = nacre_fs_wb_stats(g_fs, &s);
	pthread_mutex_unlock(&g_lock);
	return rc < 0 ? 0 : (double)*(const uint64_t *)((const char *)&s + off);
}

void fz_metrics_wb_forget(void)
{
	pthread_mutex_lock(&g_lock);
	g_fs = NULL;
	pthread_mutex_unlock(&g_lock);
}

static double usec_as_seconds(void *arg)
{
	return field(arg) / 1e6;
}

#define FIELD(f) ((void *)(uintptr_t)offsetof(struct nacre_wb_stats, f))

void fz_metrics_wb_register(struct nacre_fs *fs)
{
	pthread_mutex_lock(&g_lock);
	g_fs = fs;
	pthread_mutex_unlock(&g_lock);
	metrics_gauge_fn("nacre_client_wb_leases", "", "Directories this mount holds a "
			 "write-back lease on", field, FIELD(leases_now));
	metrics_counter_fn("nacre_client_wb_lease_events_total", "event=\"granted\"",
			   "Write-back lease events of this mount", field, FIELD(leases_granted));
	metrics_counter_fn("nacre_client_wb_lease_events_total", "event=\"refused\"",
			   "Write-back lease events of this mount", field, FIELD(leases_refused));
	metrics_counter_fn("nacre_client_wb_lease_events_total", "event=\"recalled\"",
			   "Write-back lease events of this mount", field, FIELD(leases_recalled));
	metrics_counter_fn("nacre_client_wb_lease_events_total", "event=\"returned\"",
			   "Write-back lease events of this mount", field, FIELD(leases_returned));
	metrics_counter_fn("nacre_client_wb_changes_made_total", "",
			   "Changes answered under a lease without waiting for the MDS", field,
			   FIELD(changes_made));
	metrics_gauge_fn("nacre_client_wb_changes_queued", "",
			 "Changes queued or in a batch not yet answered", field,
			 FIELD(queued_now));
	metrics_counter_fn("nacre_client_wb_changes_sent_total", "",
			   "Changes in batches the MDS answered", field, FIELD(changes_sent));
	metrics_counter_fn("nacre_client_wb_changes_refused_total", "",
			   "Changes the MDS refused, or lost with their lease", field,
			   FIELD(changes_refused));
	metrics_counter_fn("nacre_client_wb_batches_total", "", "BATCH requests sent", field,
			   FIELD(batches));
	metrics_counter_fn("nacre_client_wb_batch_seconds_total", "",
			   "Time spent waiting for BATCH replies", usec_as_seconds,
			   FIELD(flush_usec));
	metrics_counter_fn("nacre_client_wb_journal_bytes_total", "",
			   "Bytes written to the write-back journal", field, FIELD(journal_bytes));
	metrics_gauge_fn("nacre_client_wb_journal_changes", "",
			 "Changes in the journal the MDS has not answered", field,
			 FIELD(journal_now));
}
