/* wbj.h - the write-back journal: every change the queue (wbq.h) takes is appended to a
 * file of this mount's own before the application is answered, so a crash or kill -9 of
 * the process loses nothing it acknowledged (docs/writeback.md, "The journal").
 *
 * A journal is a directory holding segment files "NNNNNNNN.wbj" and a lock file (flock:
 * one process per journal). A segment starts with a header (magic, version, the session's
 * client id, the mount spec, the client name nodemaps know it by) and holds records, each checksummed (CRC-32C): a change (its
 * sequence number, opcode, directory, name and request body, as queued) or a mark that the
 * MDS answered every change up to a sequence number. A segment past CL_WBJ_SEGMENT bytes is
 * followed by a new one; segments whose changes were all answered are removed, and the last
 * one is cut back to its header whenever nothing is outstanding.
 *
 * Modes: async (written, not fsynced: a crash of the process loses nothing, a power loss
 * may), sync (fdatasync before the change is answered, shared by the changes that wait
 * together), off (no journal).
 *
 * Recovery (wbj_replay.c, nacre_wb_recover) reads the segments, skips the answered changes
 * and sends the rest to the MDS. Thread-safe; its own mutex is a leaf.
 */
#ifndef NACRE_CL_WBJ_H
#define NACRE_CL_WBJ_H

#include <pthread.h>
#include <stdint.h>

#include "nacre/nacre.h"

#define CL_WBJ_MAGIC "NACREWBJ"
#define CL_WBJ_VERSION 1u
#define CL_WBJ_REC_MAGIC 0x314a4257u /* "WBJ1" */
#define CL_WBJ_SEGMENT (4u << 20)
#define CL_WBJ_REC_MAX (256u << 10) /* a change's record: its body is at most WIRE_BODY_MAX */
#define CL_WBJ_OLD_MAX 8            /* segments kept for unanswered changes */

enum { CL_WBJ_CHANGE = 1, CL_WBJ_DONE = 2 };

struct cl_wbj {
	pthread_mutex_t lock;     /* protects everything below; a leaf */
	pthread_mutex_t sync_lock;/* one fdatasync at a time (sync mode) */
	char dir[NACRE_PATH_MAX];
	char spec[NACRE_PATH_MAX];
	char client_name[256];    /* the nodemaps match it: the recovery is this client */
	int mode;                 /* NACRE_WB_JOURNAL_* */
	int lock_fd, fd;          /* the lock file; the segment written now */
	uint64_t client_id;
	uint32_t segno;           /* of fd */
	uint64_t size, hdr_size;  /* of fd's segment */
	uint64_t appended, done;  /* the last sequence number written; answered */
	uint64_t synced;          /* written and fdatasynced (sync mode) */
	struct { uint32_t segno; uint64_t last; } old[CL_WBJ_OLD_MAX]; /* full segments */
	int nold;
	uint64_t bytes;           /* counters: written */
	uint64_t errors;
};

/* Opens (creating) the journal directory dir for fs (mode 0700) and takes its lock; a
 * journal that still holds unanswered changes is refused (-EEXIST: recover it first). 0 or
 * -errno with a sentence in err. */
int cl_wbj_open(struct nacre_fs *fs, const char *dir, int mode, const char *spec, char *err,
		size_t err_len);
/* Removes what is answered and closes (unmount). Changes not answered stay for recovery. */
void cl_wbj_close(struct nacre_fs *fs);
/* Appends change seq (wbq.c, under the queue's lock, so records follow queue order).
 * 0, or -errno: nothing usable was written and the change is made at the MDS instead. */
int cl_wbj_append(struct cl_wbj *j, uint64_t seq, uint16_t opcode, const struct nacre_fid *parent,
		  const char *name, const void *body, uint32_t len);
/* Waits until seq is on the disk (sync mode; a no-op otherwise). 0 or -errno. */
int cl_wbj_sync(struct cl_wbj *j, uint64_t seq);
/* Every change up to seq is settled: the MDS answered it, or it was reported (refused,
 * lost with its lease, or never answered while the MDS stayed away past the recovery
 * timeout: EIO at the next fsync, as without a journal). */
void cl_wbj_done(struct cl_wbj *j, uint64_t seq);

/* The segment file name of segno in dir, into out. */
void cl_wbj_segment_path(const char *dir, uint32_t segno, char *out, size_t len);
/* The segment numbers in dir, ascending, into a malloc'ed *out. Count or -errno. */
int cl_wbj_segments(const char *dir, uint32_t **out);
/* Takes the journal's lock file in dir (created): its fd, -EBUSY (another process has it)
 * or -errno. */
int cl_wbj_lock(const char *dir);
/* Removes the journal directory dir once its segments are gone: its lock file, then dir
 * itself unless something else is left there (a recovery's conflicts/). */
void cl_wbj_remove_dir(const char *dir);

#endif
