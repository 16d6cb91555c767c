/* lprocfs.c - see lprocfs.h. */
#include <time.h>

#include "common/lprocfs.h"
#include "common/strbuf.h"

void lprocfs_snapshot_line(struct strbuf *out)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	strbuf_printf(out, "%-25s %lld.%09ld secs.nsecs\n", "snapshot_time",
		      (long long)now.tv_sec, (long)now.tv_nsec);
}

void lprocfs_counter_line(struct strbuf *out, const char *name, uint64_t count,
			  const char *unit, const uint64_t *minmaxsum)
{
	if (count == 0)
		return;
	strbuf_printf(out, "%-25s %llu samples [%s]", name, (unsigned long long)count, unit);
	if (minmaxsum)
		strbuf_printf(out, " %llu %llu %llu", (unsigned long long)minmaxsum[0],
			      (unsigned long long)minmaxsum[1], (unsigned long long)minmaxsum[2]);
	strbuf_char(out, '\n');
}

void lprocfs_minmax(atomic_uint_fast64_t *min, atomic_uint_fast64_t *max, uint64_t n)
{
	uint_fast64_t cur = atomic_load_explicit(min, memory_order_relaxed);

	while ((cur == 0 || n < cur) &&
	       !atomic_compare_exchange_weak_explicit(min, &cur, n, memory_order_relaxed,
						      memory_order_relaxed))
		;
	cur = atomic_load_explicit(max, memory_order_relaxed);
	while (n > cur &&
	       !atomic_compare_exchange_weak_explicit(max, &cur, n, memory_order_relaxed,
						      memory_order_relaxed))
		;
}
