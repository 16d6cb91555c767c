/* test_crc32c.c - crc32c_combine against one-shot CRCs of random data. */
#include <stdlib.h>

#include "common/crc32c.h"
#include "unit.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint8_t next_byte(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)(rng >> 32);
}

static void test_split_points(void)
{
	size_t n = (9u << 20) + 12345; /* over two of the posix backend's 4 MiB ranges */
	uint8_t *buf = malloc(n);
	const size_t at[] = {0, 1, 3, 8, 4095, 4096, 65537, 1u << 20, 4u << 20, n - 1, n};

	CHECK(buf != NULL);
	if (!buf)
		return;
	for (size_t i = 0; i < n; i++)
		buf[i] = next_byte();
	uint32_t whole = crc32c(0, buf, n);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		uint32_t a = crc32c(0, buf, at[i]);
		uint32_t b = crc32c(0, buf + at[i], n - at[i]);
		CHECK_EQ(crc32c_combine(a, b, n - at[i]), whole);
	}
	/* many ranges folded in order, as a restore does */
	const size_t chunk = 4u << 20;
	uint32_t acc = 0;
	for (size_t off = 0; off < n; off += chunk) {
		size_t len = n - off < chunk ? n - off : chunk;
		acc = crc32c_combine(acc, crc32c(0, buf + off, len), len);
	}
	CHECK_EQ(acc, whole);
	/* random split points, lengths not multiples of anything */
	for (int k = 0; k < 200; k++) {
		size_t len = 1 + (size_t)(next_byte() << 8 | next_byte()) * 37 % 200000;
		size_t cut = (size_t)(next_byte() << 8 | next_byte()) % (len + 1);
		uint32_t a = crc32c(0, buf, cut), b = crc32c(0, buf + cut, len - cut);
		CHECK_EQ(crc32c_combine(a, b, len - cut), crc32c(0, buf, len));
	}
	free(buf);
}

static void test_known(void)
{
	/* "123456789" from "1234" and "56789" */
	CHECK_EQ(crc32c_combine(crc32c(0, "1234", 4), crc32c(0, "56789", 5), 5), 0xe3069283u);
	/* an empty second part leaves the first */
	CHECK_EQ(crc32c_combine(0xe3069283u, 0, 0), 0xe3069283u);
	/* an empty first part gives the second */
	CHECK_EQ(crc32c_combine(0, 0xe3069283u, 9), 0xe3069283u);
	/* ranges of zeros, where every byte's weight comes from the combine */
	static uint8_t zeros[1 << 16];
	uint32_t z = crc32c(0, zeros, sizeof(zeros)), acc = 0;
	for (int i = 0; i < 2; i++)
		acc = crc32c_combine(acc, z, sizeof(zeros));
	CHECK_EQ(acc, crc32c(z, zeros, sizeof(zeros)));
}

int main(void)
{
	test_known();
	test_split_points();
	return unit_done();
}
