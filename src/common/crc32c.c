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
