/* lprocfs.h - the text shape of Lustre's `*.stats` parameters (lprocfs_stats_seq_show), in
 * one place for every nacre tool that prints one (nacre-mount's llite stats, the CLI's
 * obdfilter and md_stats): scripts written for `lctl get_param` parse them unchanged.
 *
 *   snapshot_time             1700000000.123456789 secs.nsecs
 *   read_bytes                12 samples [bytes] 4096 1048576 5242880
 *   open                      3 samples [reqs]
 *
 * Pure formatting into a strbuf; thread-safe.
 */
#ifndef NACRE_LPROCFS_H
#define NACRE_LPROCFS_H

#include <stdatomic.h>
#include <stdint.h>

struct strbuf;

/* Keeps *min (0 until the first sample) and *max over the samples n given, lock-free:
 * what a counter line's MIN and MAX show. */
void lprocfs_minmax(atomic_uint_fast64_t *min, atomic_uint_fast64_t *max, uint64_t n);

/* The first line, "%-25s SECS.NSECS secs.nsecs", of the current CLOCK_REALTIME. */
void lprocfs_snapshot_line(struct strbuf *out);
/* "%-25s COUNT samples [UNIT]" and, when minmaxsum is not NULL, " MIN MAX SUM"; nothing
 * at all when count is 0 (lprocfs leaves counters without samples out). */
void lprocfs_counter_line(struct strbuf *out, const char *name, uint64_t count,
			  const char *unit, const uint64_t *minmaxsum);

#endif
