/* mds_metrics.c - what the MDS exports besides the rpc layer's per-operation counters:
 * MDT space, changes refused on a full MDT, open files, OSTs registered and up, sessions,
 * the reply cache, commits, the recovery window and write-back leases. Values are computed at scrape time. */
#include <stddef.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "common/metrics.h"
#include "common/util.h"
#include "mds/db.h"
#include "mds/lease.h"
#include "mds/mds_metrics.h"
#include "mds/open.h"
#include "mds/recovery.h"
#include "mds/session.h"
#include "mds/space.h"
#include "mds/targets.h"
#include "mds/writer.h"

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

static double sessions(void *arg)
{
	struct mds *m = arg;
	return m->sessions ? (double)mds_sessions_count(m->sessions) : 0;
}

static double reply_records(void *arg)
{
	struct mds *m = arg;
	return (double)mds_db_reply_count(m->db);
}

static double last_transno(void *arg)
{
	struct mds *m = arg;
	return (double)mds_writer_last_transno(m->writer);
}

static double last_committed(void *arg)
{
	struct mds *m = arg;
	return (double)mds_writer_last_committed(m->writer);
}

/* One field of the recovery status per gauge. */
struct recovery_gauge {
	const char *name, *labels, *help;
	size_t offset; /* in struct wire_recovery_status */
	int wide;      /* a uint64_t field, else uint32_t */
};

#define RG(name, labels, help, field)                                                      \
	{ name, labels, help, offsetof(struct wire_recovery_status, field),                \
	  sizeof(((struct wire_recovery_status *)0)->field) == 8 }

_Static_assert(WIRE_RECOVERY_STATE_RECOVERING == 1 && WIRE_RECOVERY_STATE_COMPLETE == 0,
	       "nacre_mds_recovery_active is the state field itself");

static const struct recovery_gauge recovery_gauges[] = {
	RG("nacre_mds_recovery_active", "", "1 while the recovery window is open", state),
	RG("nacre_mds_recovery_time_left_seconds", "", "Until the recovery window closes",
	   time_left_s),
	RG("nacre_mds_recovery_clients", "state=\"expected\"",
	   "Clients of the last recovery window by state", clients_expected),
	RG("nacre_mds_recovery_clients", "state=\"connected\"", "", clients_connected),
	RG("nacre_mds_recovery_clients", "state=\"replayed\"", "", clients_replayed),
	RG("nacre_mds_recovery_clients", "state=\"completed\"", "", clients_completed),
	RG("nacre_mds_recovery_clients", "state=\"evicted\"", "", clients_evicted),
	RG("nacre_mds_recovery_queued_requests", "", "Requests waiting for recovery to end",
	   queued),
};

struct recovery_metric {
	struct mds *m;
	const struct recovery_gauge *g;
};

static double recovery_field(void *arg)
{
	const struct recovery_metric *rm = arg;
	struct wire_recovery_status st;
	const char *p = (const char *)&st + rm->g->offset;

	mds_recovery_status(rm->m->recovery, &st);
	return rm->g->wide ? (double)*(const uint64_t *)p : (double)*(const uint32_t *)p;
}

static double recovery_replayed(void *arg)
{
	struct mds *m = arg;
	struct wire_recovery_status st;

	mds_recovery_status(m->recovery, &st);
	return (double)st.replayed;
}

/* One field of the write-back lease counters per metric (lease.h). */
struct lease_metric {
	const char *name, *labels, *help;
	size_t offset; /* a uint64_t of struct mds_lease_stats */
	int gauge;
};

#define LM(name, labels, help, field, gauge)                                               \
	{ name, labels, help, offsetof(struct mds_lease_stats, field), gauge }

static const struct lease_metric lease_metrics[] = {
	LM("nacre_mds_wb_leases", "", "Write-back leases on directories held by clients", held,
	   1),
	LM("nacre_mds_wb_lease_events_total", "event=\"granted\"",
	   "Write-back lease grants, refusals, recalls, returns and ends", granted, 0),
	LM("nacre_mds_wb_lease_events_total", "event=\"refused\"", "", refused, 0),
	LM("nacre_mds_wb_lease_events_total", "event=\"recalled\"", "", recalled, 0),
	LM("nacre_mds_wb_lease_events_total", "event=\"returned\"", "", returned, 0),
	LM("nacre_mds_wb_lease_events_total", "event=\"expired\"", "", expired, 0),
	LM("nacre_mds_wb_lease_events_total", "event=\"evicted\"", "", evicted, 0),
	LM("nacre_mds_wb_lease_waits_total", "",
	   "Requests that waited for a write-back lease to be recalled", waited, 0),
};

struct lease_metric_arg {
	struct mds *m;
	const struct lease_metric *lm;
};

static double lease_field(void *arg)
{
	const struct lease_metric_arg *a = arg;
	struct mds_lease_stats st;

	mds_lease_stats(a->m->leases, &st);
	return (double)*(const uint64_t *)((const char *)&st + a->lm->offset);
}

static double space_refused(void *arg)
{
	return (double)mds_space_refused(((struct mds *)arg)->space);
}

static double one(void *arg)
{
	(void)arg;
	return 1;
}

void mds_metrics_register(struct mds *m)
{
	static struct recovery_metric rms[ARRAY_SIZE(recovery_gauges)];
	static struct lease_metric_arg lms[ARRAY_SIZE(lease_metrics)];
	char labels[NACRE_FSNAME_MAX + 32];

	/* Which MDT this is, for tools that name its counters (mdt.FS-MDT0000.md_stats). */
	snprintf(labels, sizeof(labels), "target=\"%s-MDT0000\"", m->fsname);
	metrics_gauge_fn("nacre_mds_target_info", labels, "The MDT this MDS serves (always 1)",
			 one, NULL);

	metrics_set_space_fn(mdt_space, m);
	metrics_counter_fn("nacre_mds_space_refused_total", "",
			   "Changes refused with ENOSPC to keep the MDT's reserve (space.h)",
			   space_refused, m);
	metrics_gauge_fn("nacre_mds_open_files", "", "Files open by clients (handles)",
			 open_files, m);
	metrics_gauge_fn("nacre_mds_osts_up", "", "OSTs whose server sent a recent heartbeat",
			 osts_up, m);
	metrics_gauge_fn("nacre_mds_sessions", "", "Clients with a session (state kept for them)",
			 sessions, m);
	metrics_gauge_fn("nacre_mds_reply_cache_records", "",
			 "Reply-cache records (changes a resend is answered from)", reply_records,
			 m);
	metrics_gauge_fn("nacre_mds_last_transno", "", "Commit number of the last change",
			 last_transno, m);
	metrics_gauge_fn("nacre_mds_last_committed", "",
			 "Commit number of the last change known to be on disk", last_committed, m);
	for (size_t i = 0; i < ARRAY_SIZE(recovery_gauges); i++) {
		rms[i] = (struct recovery_metric){m, &recovery_gauges[i]};
		metrics_gauge_fn(recovery_gauges[i].name, recovery_gauges[i].labels,
				 recovery_gauges[i].help, recovery_field, &rms[i]);
	}
	metrics_counter_fn("nacre_mds_recovery_replayed_requests_total", "",
			   "Requests replayed by clients in recovery since the MDS started",
			   recovery_replayed, m);
	for (size_t i = 0; i < ARRAY_SIZE(lease_metrics); i++) {
		const struct lease_metric *lm = &lease_metrics[i];
		lms[i] = (struct lease_metric_arg){m, lm};
		(lm->gauge ? metrics_gauge_fn : metrics_counter_fn)(lm->name, lm->labels, lm->help,
								     lease_field, &lms[i]);
	}
}
