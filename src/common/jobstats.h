/* jobstats.h - Lustre's job_stats (mdt.*.job_stats, obdfilter.*.job_stats): per job id, a
 * counter per operation (samples, min, max, sum, sum of squares), printed in Lustre's YAML:
 *
 *   job_stats:
 *   - job_id:          cp.1000
 *     snapshot_time:   1700000000
 *     open:            { samples:           2, unit: usecs, min:      10, max:      30, sum:             40, sumsq:                1000 }
 *
 * Bounded as Lustre bounds it: a job not seen for the cleanup interval is dropped (Lustre's
 * job_cleanup_interval, 600 s by default), and past max_jobs the job seen longest ago makes
 * room. Thread-safe (one mutex; a note is a hash probe and five additions).
 */
#ifndef NACRE_JOBSTATS_H
#define NACRE_JOBSTATS_H

#include <stdint.h>

struct strbuf;
struct jobstats;

/* An operation's name (Lustre's: "open", "read_bytes") and unit ("usecs", "bytes",
 * "reqs"). */
struct jobstats_op {
	const char *name;
	const char *unit;
};

/* A table for nops operations (ops must outlive it), at most max_jobs jobs, each dropped
 * after cleanup_s seconds without a note. NULL when out of memory. */
struct jobstats *jobstats_new(const struct jobstats_op *ops, unsigned nops, unsigned max_jobs,
			      unsigned cleanup_s);
void jobstats_free(struct jobstats *js);
/* One sample of operation op (< nops) for job jobid ("" or NULL: not counted). */
void jobstats_note(struct jobstats *js, const char *jobid, unsigned op, uint64_t value);
/* Appends the YAML above, every job in the order first seen and every operation, those
 * without samples as `{ samples: 0, unit: U }`. */
void jobstats_yaml(struct jobstats *js, struct strbuf *out);
/* Forgets every job (`set_param ...job_stats=clear`). */
void jobstats_clear(struct jobstats *js);
/* Jobs held now. */
unsigned jobstats_count(struct jobstats *js);

#endif
