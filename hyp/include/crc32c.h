/* SPDX-License-Identifier: MIT */
/* CRC32C (Castagnoli), as the snapshot format uses it. */
#ifndef HYP_CRC32C_H
#define HYP_CRC32C_H
#include <types.h>

#define CRC32C_INIT	0xffffffffU

/** crc32c_update() - continue a CRC over @len bytes; start from CRC32C_INIT
 *  and finish with crc32c_final(). */
uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len);
/** crc32c_use_clmul() - compute with Zbc's carry-less products (@on: every
 *  hart has Zbc) or with tables; boot, before any other hart computes one.
 *  Returns whether the products are used: they must agree with the tables
 *  on a check value first. */
bool crc32c_use_clmul(bool on);
static inline uint32_t crc32c_final(uint32_t crc)
{
	return crc ^ 0xffffffffU;
}
/** crc32c() - the CRC of one buffer. */
static inline uint32_t crc32c(const void *buf, size_t len)
{
	return crc32c_final(crc32c_update(CRC32C_INIT, buf, len));
}
#endif
