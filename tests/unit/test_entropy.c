/* SPDX-License-Identifier: MIT */
/* hyp/lib/entropy.c: ChaCha20 against RFC 8439's block test vector, and the
 * fresh draws that give each boot its /chosen/rng-seed. The review's finding:
 * the seed was a function of (slot, boot count), so the VM created in a slot
 * after a destroy booted with its predecessor's seed. Every draw must differ
 * from every other, even with a clock that does not move. The clock is this
 * file's (ticks_now()); each test runs in its own process, so each starts
 * with an unkeyed generator. */
#include <stdlib.h>
#include <string.h>
#include <entropy.h>
#include "test.h"

static const uint64_t fake_ticks = 1000;	/* a clock that never moves */

uint64_t ticks_now(void);
uint64_t ticks_now(void)
{
	return fake_ticks;
}

TEST(chacha20_rfc8439_block_vector)
{
	/* RFC 8439 section 2.3.2: key 00..1f, counter 1, nonce 00:00:00:09
	 * 00:00:00:4a 00:00:00:00 */
	static const uint8_t want[64] = {
		0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15, 0x50, 0x0f, 0xdd, 0x1f, 0xa3, 0x20,
		0x71, 0xc4, 0xc7, 0xd1, 0xf4, 0xc7, 0x33, 0xc0, 0x68, 0x03, 0x04, 0x22, 0xaa, 0x9a,
		0xc3, 0xd4, 0x6c, 0x4e, 0xd2, 0x82, 0x64, 0x46, 0x07, 0x9f, 0xaa, 0x09, 0x14, 0xc2,
		0xd7, 0x05, 0xd9, 0x8b, 0x02, 0xa2, 0xb5, 0x12, 0x9c, 0xd1, 0xde, 0x16, 0x4e, 0xb9,
		0xcb, 0xd0, 0x83, 0xe8, 0xa2, 0x50, 0x3c, 0x4e,
	};
	const uint32_t nonce[3] = { 0x09000000, 0x4a000000, 0 };
	uint32_t key[8];
	uint8_t out[64];

	for (unsigned int i = 0; i < 32; i++)
		((uint8_t *)key)[i] = (uint8_t)i;
	chacha20_block(key, 1, nonce, out);
	EXPECT_TRUE(!memcmp(out, want, sizeof(want)));
}

static int cmp_seed(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}

/* A VM destroyed and another created in its slot, over and over, with the
 * boot count back at 0 each time and a clock that does not move. */
TEST(entropy_fresh_never_repeats)
{
	static uint8_t seeds[20000][32];
	const uint8_t host_seed[32] = { 1, 2, 3 };
	unsigned int same = 0;

	entropy_init(host_seed, sizeof(host_seed));
	for (unsigned int i = 0; i < 20000; i++)
		entropy_fresh(seeds[i], 32);
	qsort(seeds, 20000, 32, cmp_seed);
	for (unsigned int i = 1; i < 20000; i++)
		same += !memcmp(seeds[i - 1], seeds[i], 32);
	EXPECT_EQ(same, 0);
}

/* Draws of any length are distinct streams, not prefixes of each other. */
TEST(entropy_fresh_lengths)
{
	uint8_t a[100], b[100], before[100];

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	entropy_init((const uint8_t *)"seed", 4);
	entropy_fresh(a, 100);
	entropy_fresh(b, 100);
	EXPECT_TRUE(memcmp(a, b, 100) != 0);
	EXPECT_TRUE(memcmp(a + 64, b + 64, 36) != 0);	/* the second block too */
	memcpy(before, a, sizeof(a));
	entropy_fresh(a, 3);
	EXPECT_TRUE(memcmp(a, before, 3) != 0);
	EXPECT_TRUE(memcmp(a + 3, before + 3, 97) == 0);	/* only @len bytes written */
}
