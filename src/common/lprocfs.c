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
