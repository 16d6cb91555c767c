/* crc32c.c - CRC-32C through ISA-L.
 *
 * ISA-L's crc32_iscsi() works on the raw register (no pre/post inversion), so the standard
 * CRC-32C, continuable from a previous result, is ~crc32_iscsi(buf, n, ~crc). */
#include "common/crc32c.h"

#include <isa-l/crc.h>

/* crc32_iscsi takes an int length: feed it in chunks well below INT_MAX. */
#define CRC_CHUNK (1u << 30)

uint32_t crc32c(uint32_t crc, const void *buf, size_t n)
{
	/* ISA-L does not write to the buffer; its prototype is just not const. */
	unsigned char *p = (unsigned char *)(uintptr_t)buf;
	uint32_t reg = ~crc;

	while (n > 0) {
		size_t k = n > CRC_CHUNK ? CRC_CHUNK : n;

		reg = crc32_iscsi(p, (int)k, reg);
		p += k;
		n -= k;
	}
	return ~reg;
}

/* CRC-32C polynomial, bit-reflected as the CRC itself is. */
#define POLY 0x82f63b78u

/* a * b modulo the polynomial, both reflected (bit 31 is x^0). */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	for (;;) {
		if (a & m) {
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
	}
	return p;
}

uint32_t crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
	/* crc(A||B) = crc1 * x^(8 len2) ^ crc2 (the pre/post inversions cancel out) */
	uint32_t xp = 1u << 30; /* x^1 */
	uint32_t p = 1u << 31;  /* x^0 */

	for (int i = 0; i < 3; i++)
		xp = multmodp(xp, xp); /* x^8: one byte */
	while (len2) {
		if (len2 & 1)
			p = multmodp(xp, p);
		len2 >>= 1;
		if (len2)
			xp = multmodp(xp, xp);
	}
	return multmodp(p, crc1) ^ crc2;
}
