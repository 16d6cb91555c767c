/* hsm.h - the HSM coordinator of the MDS: per-file HSM state, the persistent action queue
 * (LMDB tables hsm_actions / hsm_fids), registered agents (copytools) and admission control.
 *
 * An action goes WAITING -> STARTED (handed to an agent by a poll) -> SUCCEED / FAILED /
 * CANCELED (the agent's final progress report). An action whose agent disconnects or sends no
 * progress for conf.timeout_s goes back to WAITING. At most conf.max_active actions are
 * STARTED at once, and at most an agent's own max_active per agent; the rest wait in LMDB, so
 * a request for 100k files costs 100k small records, not memory. Finished records are kept
 * conf.grace_s seconds for `nacre hsm list` / hsm_action, then purged.
 *
 * The coordinator is split by job into the hsm_*.c files (hsm_int.h names them).
 * Locking: the coordinator's mutex is a leaf; it is taken inside writer operations and never
 * held across a writer submit or an RPC. */
#ifndef NACRE_MDS_HSM_H
#define NACRE_MDS_HSM_H

#include <stdint.h>

#include "mds/db.h"
#include "mds/mds.h"
#include "proto/rpc.h"

/* The xattr holding the archive object name of an archived file. */
#define MDS_HSM_PATH_XATTR NACRE_HSM_PATH_XATTR
#define MDS_HSM_ORIGIN_XATTR NACRE_HSM_ORIGIN_XATTR

struct mds_hsm_conf {
	uint32_t max_active;       /* STARTED actions at once over all agents; 0 = 64 */
	int timeout_s;             /* no progress this long: back to WAITING; 0 = 120 */
	int grace_s;               /* finished records kept this long; 0 = 300 */
	uint32_t default_archive;  /* archive id of requests that name none; 0 = 1 */
	int remove_on_unlink;      /* unlink of an archived file queues a REMOVE */
	/* built-in policy (0 = off) */
	int64_t archive_age_s;     /* archive files not modified for this long */
	int release_high;          /* release LRU archived files when an OST is above this % */
	int release_low;           /* ... until it is below this % */
	int policy_period_s;       /* how often the policy runs; 0 = 30 */
	uint64_t policy_max_files; /* files it follows between scans; 0 = 1,000,000 */
};

/* Loads the queue (STARTED actions go back to WAITING: their agents are gone) and starts the
 * coordinator thread (timeouts, purge, policy). m->hsm is set by the caller. */
int mds_hsm_start(struct mds *m, const struct mds_hsm_conf *conf, struct mds_hsm **out);
/* Stops and joins the thread, frees h. NULL is fine. */
void mds_hsm_stop(struct mds_hsm *h);

/* Handles the HSM opcodes (WIRE_OP_MDS_HSM_*) on a worker thread. */
int mds_hsm_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);
/* A connection went away: its agent registration ends, its actions go back to WAITING.
 * Returns 1 if it was an agent's, else 0. */
int mds_hsm_disconnect(struct mds *m, uint64_t conn_id);

/* OPEN of a released regular file ino. If conn_id is the agent running its restore, writes
 * the restore layout to *layout and returns 1 (the handle is the copytool's). Otherwise queues
 * a RESTORE (or joins the one queued) and returns -NACRE_ERESTORING (wait and retry), or the
 * error of a restore that just failed. */
int mds_hsm_open_released(struct mds *m, uint64_t conn_id, const struct mds_inode *ino,
			  struct nacre_layout *layout);
/* OPEN for writing of a file with an archive copy: sets dirty (a writer operation). */
int mds_hsm_set_dirty(struct mds *m, const struct nacre_fid *fid);
/* Inside a writer op that changes a file's data (size, mtime from writes): sets dirty on an
 * archived inode. */
void mds_hsm_mark_dirty(struct mds_inode *ino);
/* Inside the writer op that deletes ino: queues a REMOVE of its archive copy when the MDS
 * runs with --hsm-remove-on-unlink (nothing when m has no coordinator). */
int mds_hsm_inode_destroyed(struct mds *m, struct mds_txn *txn, const struct mds_inode *ino);

#endif
