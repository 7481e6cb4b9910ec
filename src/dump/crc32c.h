/*
 * dump/crc32c.h — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every
 * section of a version-2 dump (docs/FORMAT.md). Slicing-by-8: about one table load per byte.
 */
#ifndef CPROF_CRC32C_H
#define CPROF_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of the n bytes at p, continuing from `crc` (0 to start): crc32c_update(0, "123456789",
   9) is 0xE3069283, and crc32c_update(crc32c_update(0, a, k), a + k, n - k) equals
   crc32c_update(0, a, n). */
uint32_t crc32c_update(uint32_t crc, const void *p, size_t n);

#endif
