/* crc32c.h - CRC-32C (Castagnoli) of bulk data, via ISA-L's crc32_iscsi. Thread-safe. */
#ifndef NACRE_CRC32C_H
#define NACRE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes continuing from crc (start with 0). crc32c("123456789") == 0xe3069283. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t n);

#endif
