/* wbq.h - the write-back queue: namespace changes this mount made under its leases (lease.h)
 * and answered without the MDS, sent to it in order, many per BATCH (docs/writeback.md,
 * "The queue").
 *
 * A change is queued as the body its lone request would have. The queue is sent:
 * NACRE_TUNE_WB_DELAY_MS after its first change (a thread), when it holds CL_WBQ_MAX changes,
 * before any other request of this mount goes to the MDS (cl_mds_call: a later request
 * may depend on a queued change, and must see it), before a lease is given back (a recall:
 * the other client then sees every change), and at unmount. One flush at a time, in queue
 * order; a BATCH the MDS finds too big for one reply is split.
 *
 * A change the MDS refuses (EDQUOT, EACCES after a permission change elsewhere, EEXIST
 * after an eviction) is logged with its name and directory, its directory is noted for the
 * lease layer to give its lease back (what it knows is wrong now: cl_wbq_take_doubts), and the error is kept for the next fsync of
 * that directory (of the inode, for an attribute change; cl_wbq_error), as Linux keeps a
 * writeback error for the next fsync; past CL_WBQ_ERRS such errors, the next fsync of
 * anything reports one. The queue is in memory; with a journal (wbj.h) each change is
 * also appended to a file before the application is answered and marked answered after
 * the BATCH reply, so a crash of the process loses nothing acknowledged.
 *
 * Below the leases: it calls only the MDS client (mdc.c); cl_mds_call calls it through
 * fs->before_mds. Its own mutex (a leaf: held across no call) and a flush mutex held
 * across the BATCH RPCs (taken before the lease lock, never under it). Thread-safe.
 */
#ifndef NACRE_CL_WBQ_H
#define NACRE_CL_WBQ_H

#include <pthread.h>
#include <stdint.h>

#include "nacre/nacre.h"
#include "proto/cursor.h"

#define CL_WBQ_DELAY_MS 50 /* the default of NACRE_TUNE_WB_DELAY_MS */
#define CL_WBQ_MAX 1024
#define CL_WBQ_ERRS 64
#define CL_WBQ_DOUBTS 64

struct cl_wbq_change;
struct wire_batch_req;
struct wire_batch_rep;

struct cl_wbq {
	pthread_mutex_t lock;         /* protects the fields below but flush_lock */
	pthread_cond_t cond;          /* the flusher's sleep */
	struct cl_wbq_change *head, *tail;
	uint32_t count;               /* atomic reads: changes queued */
	uint32_t inflight;            /* atomic reads: changes in a BATCH not answered yet */
	uint32_t delay_ms;            /* atomic: NACRE_TUNE_WB_DELAY_MS */
	uint64_t seq;                 /* the last change's journal sequence number */
	int64_t first_ms;             /* when the oldest queued change was queued */
	struct {
		struct nacre_fid fid;
		int err;
	} errs[CL_WBQ_ERRS];          /* the first refusal per directory (or inode) not yet
				       * reported */
	int nerrs;
	int err_any;                  /* one that found no room: the next fsync reports it */
	struct nacre_fid doubts[CL_WBQ_DOUBTS]; /* directories of refused changes, whose
						 * leases the lease layer gives back */
	int ndoubts, doubt_all;       /* doubt_all: more than fit: every lease goes back */
	int lose_all;                 /* the next take reports every queued change lost */
	int has_doubts;               /* atomic reads */
	int stop, started;
	pthread_t thread;
	pthread_mutex_t flush_lock;   /* one flush at a time */
	/* counters */
	uint64_t queued, sent, refused, batches, flush_us;
};

void cl_wbq_init(struct nacre_fs *fs);
/* Starts the flusher thread (at the first change). 0 or -EAGAIN. */
int cl_wbq_start(struct nacre_fs *fs);
/* Sends what is queued and stops the thread (unmount); then frees. */
void cl_wbq_fini(struct nacre_fs *fs);

/* Queues the change of opcode whose request body is body (copied); parent and name (NULL
 * for a change of an inode, not a name) say what it changes, for the log; granted_ms is
 * when the lease it is made under was granted. With the lease lock held: the caller
 * checked the lease and updates its names in the same hold, so a recall sees both or
 * neither. 0, or -ENOMEM or the journal's error (then nothing is queued: the caller makes
 * the change at the MDS).
 *
 * A change whose lease ran out before it was sent (WIRE_LEASE_MS without a renewal: the
 * process was stopped, or cut off from the MDS, which evicted it) is not sent: others may
 * have seen the directory without it since. It is logged as lost and the next fsync
 * fails with EIO. */
int cl_wbq_add(struct nacre_fs *fs, uint16_t opcode, const struct wire_cursor *body,
	       const struct nacre_fid *parent, const char *name, int64_t granted_ms);
/* With a journal in sync mode: what was queued so far is on its disk when this returns
 * (one fdatasync shared by the changes waiting together). Before a change made under a
 * lease is answered, and after the lease lock is let go: others make changes meanwhile. */
void cl_wbq_durable(struct nacre_fs *fs);
/* Sends everything queued (and what is queued meanwhile by others, until it is empty).
 * Returns 0, or the first refusal of this flush. Never with the lease lock held. */
int cl_wbq_flush(struct nacre_fs *fs);
/* Every change queued now was made under a lease that a restarted MDS did not give back:
 * the next flush reports them lost (EIO at the next fsync), as after a lease that ran out. */
void cl_wbq_lose_queued(struct nacre_fs *fs);
/* Adds to out[0..n) the directories of the queued changes not in it yet, up to max in
 * all; the count. */
int cl_wbq_parents(struct nacre_fs *fs, struct nacre_fid *out, int n, int max);
/* Sends the queue from the caller's thread when it holds CL_WBQ_MAX changes or more (the
 * flusher falls behind: the MDS is slow or away), so it never grows without bound. Never
 * with the lease lock held. */
void cl_wbq_bound(struct nacre_fs *fs);
/* The directories whose changes were refused (or lost) since the last call, up to max,
 * into out; *all when more were than could be kept. For the lease layer, which gives their
 * leases back before it answers from them again. */
int cl_wbq_take_doubts(struct nacre_fs *fs, struct nacre_fid *out, int max, int *all);
/* Sends the BATCH b and decodes its answer into r (as many results as changes). 0 or the
 * error. For the queue and the journal's recovery. */
int cl_wbq_call(struct nacre_fs *fs, const struct wire_batch_req *b, struct wire_batch_rep *r);
/* What one BATCH request and its reply still hold (WIRE_BODY_MAX each). */
struct cl_wbq_room {
	size_t req, rep;
};
void cl_wbq_room_init(struct cl_wbq_room *r);
/* Takes room for one more change (opcode, len bytes of body) after n taken: 1, or 0 when
 * it does not fit (the first always does: the MDS answers E2BIG if it must). */
int cl_wbq_room_take(struct cl_wbq_room *r, uint32_t n, uint16_t opcode, uint32_t len);
/* Whether changes are queued or being sent. */
int cl_wbq_pending(struct nacre_fs *fs);
/* The first refusal kept for fid (or, with none, one kept for nothing in particular), or 0;
 * cleared. For the fsync of fid. */
int cl_wbq_error(struct nacre_fs *fs, const struct nacre_fid *fid);

#endif
