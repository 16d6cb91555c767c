/* bufcache.h - a bounded cache of large buffers for paths that allocate and free one per
 * request (RPC payloads of up to 16 MiB).
 *
 * Why: malloc gives a multi-MiB block back to the kernel when it is freed (munmap or heap
 * trim), so the next request's buffer is fresh memory: every 4 KiB page faults and is zeroed
 * while the socket data is copied in, and the CRC and the copy into the page cache that
 * follow read memory that is no longer in the CPU cache. On the development machine an OSS
 * taking 4 MiB writes spent twice the CPU per byte of one taking 1 MiB writes for that reason
 * alone (docs/PERFORMANCE.md). Buffers under BUFCACHE_MIN are left to malloc, which keeps
 * small blocks anyway.
 *
 * Capacities are rounded up to BUFCACHE_GRAIN so that requests of nearly the same size share
 * buffers; a cached buffer serves a request of up to its capacity but is not wasted on one
 * much smaller. A NULL cache is allowed: get and put are then malloc and free. Thread-safe:
 * one mutex, held for a few list operations.
 */
#ifndef NACRE_BUFCACHE_H
#define NACRE_BUFCACHE_H

#include <pthread.h>
#include <stddef.h>

#define BUFCACHE_MIN (256u * 1024u)   /* smaller requests go straight to malloc */
#define BUFCACHE_GRAIN (256u * 1024u) /* capacities are multiples of this */
#define BUFCACHE_SLOTS 32

struct bufcache {
	pthread_mutex_t lock;
	size_t max_bytes; /* bound on the bytes kept */
	size_t bytes;     /* lock: bytes kept now */
	int n;            /* lock: entries used in slot[] */
	struct {
		void *buf;
		size_t cap;
	} slot[BUFCACHE_SLOTS];
};

/* Keeps at most max_bytes of free buffers (0: cache nothing, every call is malloc/free). */
void bufcache_init(struct bufcache *bc, size_t max_bytes);
/* Frees every cached buffer. Buffers still out are the callers' to bufcache_put or free(). */
void bufcache_fini(struct bufcache *bc);
/* A buffer of at least len bytes (len 0 gives a valid 1-byte buffer); its capacity goes to
 * *cap, to be handed back with it. NULL when memory is short. */
void *bufcache_get(struct bufcache *bc, size_t len, size_t *cap);
/* Takes back a buffer from bufcache_get (NULL is fine): kept for reuse, or freed when the
 * cache is full. */
void bufcache_put(struct bufcache *bc, void *buf, size_t cap);

#endif
