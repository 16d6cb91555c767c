/* test_bufcache.c - the cache of large buffers behind RPC payloads and reply bulks. */
#include <stdlib.h>

#include "common/bufcache.h"
#include "unit.h"

#define MIB (1024u * 1024u)

static void test_reuse(void)
{
	struct bufcache bc;
	size_t cap, cap2;

	bufcache_init(&bc, 16 * MIB);
	/* a 4 MiB payload plus its header: rounded up to the grain */
	char *a = bufcache_get(&bc, 4 * MIB + 36, &cap);
	CHECK(a != NULL);
	CHECK_EQ(cap, 4 * MIB + BUFCACHE_GRAIN);
	memset(a, 0xab, 4 * MIB + 36); /* the whole capacity asked for is usable */
	bufcache_put(&bc, a, cap);
	CHECK_EQ(bc.n, 1);
	CHECK_EQ(bc.bytes, cap);

	/* the next request of about that size gets the same memory back */
	char *b = bufcache_get(&bc, 4 * MIB, &cap2);
	CHECK(b == a);
	CHECK_EQ(cap2, cap);
	CHECK_EQ(bc.n, 0);
	CHECK_EQ(bc.bytes, 0);

	/* a much smaller request does not take a big buffer */
	bufcache_put(&bc, b, cap2);
	char *c = bufcache_get(&bc, 512 * 1024, &cap);
	CHECK(c != b);
	CHECK_EQ(cap, 512 * 1024);
	CHECK_EQ(bc.n, 1);
	bufcache_put(&bc, c, cap);
	CHECK_EQ(bc.n, 2);

	/* the smallest buffer that fits is chosen */
	char *d = bufcache_get(&bc, 300 * 1024, &cap);
	CHECK(d == c);
	bufcache_put(&bc, d, cap);
	bufcache_fini(&bc);
}

static void test_bounds(void)
{
	struct bufcache bc;
	size_t cap;
	void *bufs[4];
	size_t caps[4];

	bufcache_init(&bc, 8 * MIB);
	for (int i = 0; i < 4; i++) {
		bufs[i] = bufcache_get(&bc, 3 * MIB, &caps[i]);
		CHECK(bufs[i] != NULL);
	}
	for (int i = 0; i < 4; i++)
		bufcache_put(&bc, bufs[i], caps[i]);
	/* 8 MiB holds two 3 MiB buffers; the others went back to malloc */
	CHECK_EQ(bc.n, 2);
	CHECK_EQ(bc.bytes, 6 * MIB);

	/* small buffers are not cached; zero bytes still gives a buffer */
	void *s = bufcache_get(&bc, 100, &cap);
	CHECK(s != NULL);
	CHECK_EQ(cap, 100);
	bufcache_put(&bc, s, cap);
	CHECK_EQ(bc.n, 2);
	s = bufcache_get(&bc, 0, &cap);
	CHECK(s != NULL);
	CHECK_EQ(cap, 1);
	bufcache_put(&bc, s, cap);
	bufcache_put(&bc, NULL, 0);
	bufcache_fini(&bc);

	/* a cache bounded at 0 keeps nothing */
	bufcache_init(&bc, 0);
	s = bufcache_get(&bc, 2 * MIB, &cap);
	bufcache_put(&bc, s, cap);
	CHECK_EQ(bc.n, 0);
	bufcache_fini(&bc);

	/* no cache at all: plain malloc and free */
	s = bufcache_get(NULL, 2 * MIB, &cap);
	CHECK(s != NULL);
	CHECK(cap >= 2 * MIB);
	bufcache_put(NULL, s, cap);
}

int main(void)
{
	test_reuse();
	test_bounds();
	return unit_done();
}
