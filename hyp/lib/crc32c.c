/* SPDX-License-Identifier: MIT */
/* CRC32C, reflected polynomial 0x82F63B78, eight bytes per step (slicing by 8:
 * eight 256-entry tables built on first use). */
#include <crc32c.h>

#define POLY	0x82f63b78U

static uint32_t table[8][256];
static bool ready;

static void build(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? POLY : 0);
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
	ready = true;
}

uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!ready)
		build();	/* boot runs single-threaded through here first */
	while (len && ((uintptr_t)p & 7)) {
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v = *(const uint64_t *)p ^ crc;	/* little-endian */

		crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^
		      table[5][(v >> 16) & 0xff] ^ table[4][(v >> 24) & 0xff] ^
		      table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
		      table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}
