/* hsm_int.h - what the files of the HSM coordinator share, and nothing outside them uses:
 * its state and the functions one of them offers the others. The files, from the bottom:
 *   hsm_agent.c   agents, and the STARTED actions they run (in memory): start, progress,
 *                 timeouts, requeue
 *   hsm_queue.c   the persistent queue: user requests, enqueueing, purge, queue depth
 *   hsm_hooks.c   what the namespace calls (hsm.h): dirty bits, unlink's REMOVE, the restore
 *                 an open of a released file queues
 *   hsm_policy.c  the built-in archive and release policy
 *   hsm_rpc.c     the HSM request handlers
 *   hsm_coord.c   start, stop, and the coordinator thread that drives timeouts, purge, policy
 * Locking: h->lock (a leaf) protects the in-memory fields marked so below. */
#ifndef NACRE_MDS_HSM_INT_H
#define NACRE_MDS_HSM_INT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "mds/db.h"
#include "mds/feed.h"
#include "mds/hsm.h"
#include "mds/perm.h"
#include "proto/wire.h"

#define MAX_AGENTS 64
#define RECENT_FAILS 32
#define RECENT_FAIL_MS 15000 /* an open after a failed restore fails this long, then retries */

/* A STARTED action, in memory for progress and timeouts. */
struct active {
	uint64_t cookie;
	struct nacre_fid fid;
	uint32_t action;
	uint64_t conn;
	int64_t last_ms; /* last progress (or start) */
	uint64_t done, total;
	int cancel;
	/* Finished or taken back, its new status not committed yet: it keeps its slot until
	 * then, so the queue never shows more actions STARTED than the limit allows. */
	int ending;
	struct nacre_layout layout; /* RESTORE: where the copytool writes */
};

struct agent {
	uint64_t conn;
	uint32_t ids[WIRE_HSM_ARCHIVES_MAX];
	uint32_t nids; /* 0 = any */
	uint32_t max_active;
	uint32_t active;
};

struct recent_fail {
	struct nacre_fid fid;
	int err;
	int64_t ms;
};

struct mds_hsm {
	struct mds *m;
	struct mds_hsm_conf conf;
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t work;  /* queue or slots changed (pollers wait on it) */
	pthread_cond_t tick;  /* wakes the coordinator thread to stop */
	struct active *act;
	uint32_t nact;
	uint32_t nact_max; /* high-water mark of nact: proves admission control in tests */
	struct metric *m_active, *m_active_max, *m_started;
	struct metric *m_waiting, *m_queued_started; /* set by the coordinator thread */
	int64_t last_release_ms; /* the policy's last release (coordinator thread only) */
	/* The policy's state (coordinator thread only, hsm_policy.c). policy_cands holds
	 * the files it follows: ARCHIVE (due when they come of age) and RELEASE (archived,
	 * releasable, with atime and size); it is whole (policy_whole) from one full scan on,
	 * kept up to date by the changed FIDs of the changelog's feed. When it is not whole
	 * (the start, or a bound passed) the policy scans as it did before: when the change
	 * count moved (policy_changes), a file came of age or an OST is above the mark. */
	struct mds_fidset policy_cands;
	int policy_whole, policy_scanned, policy_warned;
	uint64_t policy_changes;
	int64_t policy_due; /* the soonest an ARCHIVE candidate comes of age (INT64_MAX: none) */
	uint64_t policy_scans, policy_skips; /* for the log */
	struct metric *m_examined, *m_scans, *m_cands;
	struct agent agents[MAX_AGENTS];
	uint32_t nagents;
	uint64_t next_cookie;
	struct recent_fail fails[RECENT_FAILS];
	unsigned nfails;
	int stop;
	pthread_t thread;
};

static inline int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int is_owner(const struct nacre_cred *cr, const struct mds_inode *ino)
{
	return mds_perm_is_root(cr) || cr->uid == ino->uid;
}

/* Wakes the pollers waiting for work. */
static inline void wake(struct mds_hsm *h)
{
	pthread_mutex_lock(&h->lock);
	pthread_cond_broadcast(&h->work);
	pthread_mutex_unlock(&h->lock);
}

/* ---- hsm_agent.c ---- */
/* The registration of the agent on connection conn, or NULL. Caller holds h->lock. */
struct agent *mds_hsm_agent_find(struct mds_hsm *h, uint64_t conn);
/* The STARTED action cookie, or NULL. Caller holds h->lock. */
struct active *mds_hsm_active_find(struct mds_hsm *h, uint64_t cookie);
/* Drops the ending actions of cookies once their new status is committed. Takes h->lock. */
void mds_hsm_drop_ended(struct mds_hsm *h, const uint64_t *cookies, uint32_t n);
/* Finds up to max WAITING actions the agent on conn may run and starts them into out.
 * Returns the count, or -EPERM for a connection with no agent registered. */
int mds_hsm_poll_once(struct mds_hsm *h, uint64_t conn, uint32_t max,
		      struct nacre_hsm_action *out);
/* Writer operation: ends the STARTED action cookie with the agent's final progress p and
 * applies it to the file (archived, restored, removed). */
struct hsm_finish_arg {
	struct mds_hsm *h;
	uint64_t cookie;
	const struct wire_hsm_progress *p;
	int destroyed; /* objects queued for destruction */
};
int mds_hsm_finish_op(struct mds_txn *txn, void *arg);
/* Remembers a failed RESTORE, for the next open of the file (mds_hsm_restore_state). */
void mds_hsm_note_failure(struct mds_hsm *h, const struct nacre_fid *fid, int err);
/* For an open of released fid by conn: 1 with *layout set if conn runs its restore,
 * -NACRE_ERESTORING if another agent runs it, the error of a restore that just failed
 * (once), or 0 if none of these. Takes h->lock. */
int mds_hsm_restore_state(struct mds_hsm *h, uint64_t conn, const struct nacre_fid *fid,
			  struct nacre_layout *layout);
/* Actions without progress for conf.timeout_s go back to WAITING. */
void mds_hsm_check_timeouts(struct mds_hsm *h);

/* ---- hsm_queue.c ---- */
/* Inside a writer operation: adds a WAITING action for fid (the caller checked it has no
 * active one). archive_id 0 is the default archive; path may be NULL. */
int mds_hsm_enqueue(struct mds_hsm *h, struct mds_txn *txn, const struct nacre_fid *fid,
		    uint32_t action, uint32_t archive_id, const char *path);
/* The archive object name stored on an archived inode into out (NACRE_PATH_MAX + 1 bytes;
 * "" if none). */
void mds_hsm_stored_path(struct mds_txn *txn, const struct nacre_fid *fid, char *out);
/* The active (WAITING or STARTED) action of fid: 0 with *r filled, -ENOENT if none. */
int mds_hsm_active_rec(struct mds_txn *txn, const struct nacre_fid *fid, struct mds_hsm_rec *r);
/* Writer operation: one user request (HSM_REQUEST) for r->nfids files, each in its own
 * nested transaction so one file's failure does not undo the others; rcs[i] gets each
 * file's result. */
struct hsm_req_arg {
	struct mds_hsm *h;
	const struct wire_hsm_request *r;
	const struct nacre_fid *fids;
	int32_t *rcs;
	int released; /* objects were queued for destruction */
	int queued;
};
int mds_hsm_request_op(struct mds_txn *txn, void *arg);
/* Deletes finished records older than conf.grace_s (a batch per call). */
void mds_hsm_purge(struct mds_hsm *h);
/* Sets the queue-depth gauges from one read pass over the records. */
void mds_hsm_count_queue(struct mds_hsm *h);

/* ---- hsm_policy.c ---- */
/* One run of the built-in policy (conf.archive_age_s, conf.release_high/low). */
void mds_hsm_run_policy(struct mds_hsm *h);
/* At start: the metrics and the feed of changed FIDs (when a policy is on). */
void mds_hsm_policy_init(struct mds_hsm *h);
/* At stop: frees the candidates. */
void mds_hsm_policy_fini(struct mds_hsm *h);

#endif
