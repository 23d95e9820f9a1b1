/* SPDX-License-Identifier: MIT */
/* hyp/lib/string.c's memcpy and memmove (renamed hyp_* here, beside the host
 * libc's): every source and destination alignment and every length around
 * the word-copy thresholds, against a byte-by-byte reference; nothing
 * outside the destination written. */
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "test.h"

void *hyp_memcpy(void *dst, const void *src, size_t n);
void *hyp_memmove(void *dst, const void *src, size_t n);

#define BUF 256
#define GUARD 0xa5

/* Sources and destinations are 8-aligned arrays whose size is a multiple of
 * 8: the word copy reads whole aligned words, all inside them. */
static uint64_t src_words[BUF / 8], dst_words[BUF / 8];

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + 1);
}

TEST(memcpy_every_alignment_and_length)
{
	uint8_t *src = (uint8_t *)src_words, *dst = (uint8_t *)dst_words;
	unsigned int bad = 0;

	fill(src, BUF, 3);
	for (size_t so = 0; so < 8; so++)
		for (size_t doff = 0; doff < 8; doff++)
			for (size_t n = 0; n <= 100; n++) {
				memset(dst, GUARD, BUF);
				if (hyp_memcpy(dst + doff + 8, src + so, n) != dst + doff + 8)
					bad++;
				for (size_t i = 0; i < BUF; i++) {
					int in = i >= doff + 8 && i < doff + 8 + n;
					uint8_t want = in ? src[so + i - doff - 8] : GUARD;

					bad += dst[i] != want;
				}
			}
	EXPECT_EQ(bad, 0);
}

TEST(memmove_overlapping_both_ways)
{
	uint8_t *p = (uint8_t *)dst_words, ref[BUF];
	unsigned int bad = 0;

	for (size_t from = 0; from < 24; from++)
		for (size_t to = 0; to < 24; to++) {
			size_t n = 200;

			fill(p, BUF, (unsigned int)(from + to));
			memcpy(ref, p, BUF);
			memmove(ref + to, ref + from, n);	/* the host's, as reference */
			hyp_memmove(p + to, p + from, n);
			bad += memcmp(p, ref, BUF) != 0;
		}
	EXPECT_EQ(bad, 0);
}
