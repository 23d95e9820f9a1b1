/* SPDX-License-Identifier: MIT */
/* hyp/lib/crc32c.c: the table path against the standard check value, and
 * the carry-less product path (Barrett reduction; on the host its products
 * are computed bit by bit) against the table path on every alignment and
 * length, from any running state. */
#include <stdint.h>
#include <string.h>
#include <crc32c.h>
#include "test.h"

static uint8_t buf[4096 + 64];

static void fill(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

TEST(crc32c_check_value_both_paths)
{
	/* CRC-32C's check value (the CRC of "123456789") */
	EXPECT_TRUE(!crc32c_use_clmul(false));
	EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
	EXPECT_TRUE(crc32c_use_clmul(true));
	EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
	crc32c_use_clmul(false);
}

TEST(crc32c_products_agree_with_tables)
{
	uint32_t seed = 0x12345678;
	unsigned int bad = 0;

	fill();
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len < 300; len += 1 + len / 16) {
			uint32_t by_table, by_products;

			seed = seed * 1103515245u + 12345u;
			crc32c_use_clmul(false);
			by_table = crc32c_update(seed, buf + off, len);
			crc32c_use_clmul(true);
			by_products = crc32c_update(seed, buf + off, len);
			bad += by_table != by_products;
		}
	crc32c_use_clmul(false);
	EXPECT_EQ(bad, 0);
}

TEST(crc32c_products_long_buffer_in_pieces)
{
	uint32_t whole, pieces = CRC32C_INIT;

	fill();
	whole = crc32c(buf + 3, 4096);
	crc32c_use_clmul(true);
	for (size_t at = 0; at < 4096; at += 1000)
		pieces = crc32c_update(pieces, buf + 3 + at, at + 1000 > 4096 ? 4096 - at : 1000);
	crc32c_use_clmul(false);
	EXPECT_EQ(crc32c_final(pieces), whole);
}
