/* jobs.h - each OST's job_stats (Lustre's obdfilter.FS-OSTxxxx.job_stats): per job id, the
 * object requests it made (read_bytes and write_bytes in bytes; read, write, getattr,
 * punch, sync, prealloc and get_info (SEEK) in microseconds), from the job id a client puts
 * in each request (the job of the handle's opener, WIRE_FEAT_OST_JOBID). Served as the
 * metrics endpoint's /job_stats/FS-OSTxxxx (docs/params.md). Failed requests are not
 * counted. Thread-safe.
 */
#ifndef NACRE_OSS_JOBS_H
#define NACRE_OSS_JOBS_H

#include <stdint.h>

#include "oss/target.h"

/* Lustre's defaults (jobstats.h): jobs kept per OST at most, seconds without a request */
#define OSS_JOBS_MAX 4096u
#define OSS_JOB_CLEANUP_S 600u

/* Gives each of the n targets its table and adds the page (before the endpoint starts).
 * 0 or -ENOMEM. */
int oss_jobs_create(struct oss_target **targets, int n);
void oss_jobs_destroy(struct oss_target **targets, int n);
/* A request of opcode on t that succeeded in usecs for job jobid, moving bytes (reads and
 * writes). */
void oss_jobs_note(struct oss_target *t, uint16_t opcode, const char *jobid, uint64_t bytes,
		   uint64_t usecs);
/* The monotonic clock in microseconds. */
uint64_t oss_jobs_now_us(void);

#endif
