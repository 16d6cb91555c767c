/* bufcache.c - a bounded cache of large buffers (see bufcache.h). */
#include "common/bufcache.h"

#include <stdlib.h>

void bufcache_init(struct bufcache *bc, size_t max_bytes)
{
	pthread_mutex_init(&bc->lock, NULL);
	bc->max_bytes = max_bytes;
	bc->bytes = 0;
	bc->n = 0;
}

void bufcache_fini(struct bufcache *bc)
{
	for (int i = 0; i < bc->n; i++)
		free(bc->slot[i].buf);
	bc->n = 0;
	bc->bytes = 0;
	pthread_mutex_destroy(&bc->lock);
}

static size_t round_cap(size_t len)
{
	if (len < BUFCACHE_MIN)
		return len ? len : 1;
	return (len + BUFCACHE_GRAIN - 1) / BUFCACHE_GRAIN * BUFCACHE_GRAIN;
}

void *bufcache_get(struct bufcache *bc, size_t len, size_t *cap)
{
	size_t want = round_cap(len);
	void *buf = NULL;

	if (bc && want >= BUFCACHE_MIN) {
		int best = -1;

		pthread_mutex_lock(&bc->lock);
		/* the smallest buffer that fits, unless even that one would waste half of it */
		for (int i = 0; i < bc->n; i++)
			if (bc->slot[i].cap >= want && bc->slot[i].cap / 2 <= want &&
			    (best < 0 || bc->slot[i].cap < bc->slot[best].cap))
				best = i;
		if (best >= 0) {
			buf = bc->slot[best].buf;
			want = bc->slot[best].cap;
			bc->bytes -= want;
			bc->slot[best] = bc->slot[--bc->n];
		}
		pthread_mutex_unlock(&bc->lock);
	}
	/* page-aligned: the OSS reads into a reply's bulk with O_DIRECT (oss/store.c) */
	if (!buf && posix_memalign(&buf, 4096, want) != 0)
		buf = NULL;
	if (buf)
		*cap = want;
	return buf;
}

void bufcache_put(struct bufcache *bc, void *buf, size_t cap)
{
	if (!buf)
		return;
	if (bc && cap >= BUFCACHE_MIN) {
		pthread_mutex_lock(&bc->lock);
		if (bc->n < BUFCACHE_SLOTS && bc->bytes + cap <= bc->max_bytes) {
			bc->slot[bc->n].buf = buf;
			bc->slot[bc->n].cap = cap;
			bc->n++;
			bc->bytes += cap;
			buf = NULL;
		}
		pthread_mutex_unlock(&bc->lock);
	}
	free(buf);
}
