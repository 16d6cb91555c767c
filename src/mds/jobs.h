/* jobs.h - the MDT's job_stats (Lustre's mdt.FS-MDT0000.job_stats): per job id, the
 * metadata operations it made and how long each took in microseconds, from the job id the
 * credentials of each request carry (a mount's -o jobid=). Served as the metrics endpoint's
 * /job_stats (docs/params.md). Operations that failed are not counted, as Lustre counts
 * them. Thread-safe.
 */
#ifndef NACRE_MDS_JOBS_H
#define NACRE_MDS_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "mds/mds.h"

/* Lustre's defaults: jobs kept at most (nacre's bound), and seconds a job is kept without
 * a request (job_cleanup_interval) */
#define MDS_JOBS_MAX 4096u
#define MDS_JOB_CLEANUP_S 600u

/* Creates m->jobs and adds its page to the metrics endpoint (before that starts).
 * max_jobs, cleanup_s: jobstats.h. Returns 0 or -ENOMEM. */
int mds_jobs_create(struct mds *m, unsigned max_jobs, unsigned cleanup_s);
void mds_jobs_destroy(struct mds *m);
/* A request of opcode that succeeded in usecs, whose body starts with the caller's
 * credentials (an opcode without a job_stats operation, or a BATCH, is ignored). */
void mds_jobs_note(struct mds *m, uint16_t opcode, const void *body, size_t len,
		   uint64_t usecs);
/* The monotonic clock in microseconds, to time a request with. */
uint64_t mds_jobs_now_us(void);

#endif
