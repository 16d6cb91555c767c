/* pattern.c - the data each rank writes: every 8-byte word holds its own file offset mixed
 * with the writer's rank, so a misplaced, stale or foreign block is caught, and a block can
 * be checked on its own (no state between the write and a later read run). */
#include <string.h>

#include "bench/bench.h"

static uint64_t tag_of(int rank)
{
	/* "nb" in the top bytes keeps zero-filled holes from ever matching. */
	return (0x6e62ULL << 48) ^ ((uint64_t)(rank + 1) << 40);
}

void bench_pattern_fill(void *buf, size_t len, uint64_t off, int rank)
{
	uint64_t tag = tag_of(rank);
	unsigned char *p = buf;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w = tag ^ (off + i);

		memcpy(p + i, &w, 8);
	}
}

uint64_t bench_pattern_check(const void *buf, size_t len, uint64_t off, int rank,
			     uint64_t *bad_off, uint64_t *want, uint64_t *got)
{
	uint64_t tag = tag_of(rank), bad = 0;
	const unsigned char *p = buf;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w, e = tag ^ (off + i);

		memcpy(&w, p + i, 8);
		if (w == e)
			continue;
		if (bad++ == 0) {
			*bad_off = off + i;
			*want = e;
			*got = w;
		}
	}
	return bad;
}
