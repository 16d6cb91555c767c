/* crc32c.h - CRC-32C (Castagnoli) of bulk data, via ISA-L's crc32_iscsi. Thread-safe. */
#ifndef NACRE_CRC32C_H
#define NACRE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes continuing from crc (start with 0). crc32c("123456789") == 0xe3069283. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t n);
/* The CRC-32C of A||B from crc1 = CRC-32C of A, crc2 = CRC-32C of B and len2 = the length of
 * B, without the data (zlib's crc32_combine for the Castagnoli polynomial): lets ranges moved
 * in parallel be checked against one whole-file CRC. O(log len2). */
uint32_t crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

#endif
