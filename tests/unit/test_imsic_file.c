/* SPDX-License-Identifier: MIT */
/* hyp/lib/imsic_file.c: a software IMSIC interrupt file, against the rules of
 * the AIA spec's IMSIC chapter. */
#include <errno.h>
#include <imsic_file.h>
#include "test.h"

#define N 255		/* QEMU virt's riscv,num-ids */

/* id pending and enabled, through the registers as a guest would */
static void raise_id(struct imsic_file *f, uint32_t nr_ids, uint32_t id)
{
	uint64_t bit = 1ull << (id % 64);

	EXPECT_EQ(imsic_rmw(f, nr_ids, IMSIC_ISEL_EIE0 + 2 * (id / 64), NULL, bit, bit), 0);
	EXPECT_EQ(imsic_rmw(f, nr_ids, IMSIC_ISEL_EIP0 + 2 * (id / 64), NULL, bit, bit), 0);
}

static uint64_t reg(struct imsic_file *f, uint32_t nr_ids, uint64_t isel)
{
	uint64_t v = 0xdeadbeef;

	EXPECT_EQ(imsic_rmw(f, nr_ids, isel, &v, 0, 0), 0);
	return v;
}

static void set_reg(struct imsic_file *f, uint32_t nr_ids, uint64_t isel, uint64_t val)
{
	EXPECT_EQ(imsic_rmw(f, nr_ids, isel, NULL, val, ~0ull), 0);
}

TEST(imsic_file_reset_clears_everything)
{
	struct imsic_file f;

	for (unsigned int i = 0; i < sizeof(f); i++)
		((unsigned char *)&f)[i] = 0xa5;
	imsic_file_reset(&f);
	EXPECT_EQ(f.eidelivery, 0);
	EXPECT_EQ(f.eithreshold, 0);
	for (unsigned int w = 0; w < IMSIC_FILE_WORDS; w++) {
		EXPECT_EQ(f.eip[w], 0);
		EXPECT_EQ(f.eie[w], 0);
	}
	EXPECT_EQ(imsic_topei(&f, N), 0);
}

TEST(imsic_topei_is_the_lowest_pending_and_enabled_identity)
{
	struct imsic_file f;

	imsic_file_reset(&f);
	raise_id(&f, N, 200);
	EXPECT_EQ(imsic_topei(&f, N), 200);
	raise_id(&f, N, 70);
	EXPECT_EQ(imsic_topei(&f, N), 70);
	raise_id(&f, N, 63);		/* the last bit of word 0 */
	EXPECT_EQ(imsic_topei(&f, N), 63);
	/* pending but not enabled, enabled but not pending: neither counts */
	f.eip[0] |= 1ull << 5;
	f.eie[0] |= 1ull << 6;
	EXPECT_EQ(imsic_topei(&f, N), 63);
	f.eie[0] |= 1ull << 5;
	EXPECT_EQ(imsic_topei(&f, N), 5);
	EXPECT_EQ(imsic_topei_csr(&f, N), (5ull << 16) | 5);
	/* delivery does not change the top interrupt */
	set_reg(&f, N, IMSIC_ISEL_EIDELIVERY, 1);
	EXPECT_EQ(imsic_topei(&f, N), 5);
}

TEST(imsic_topei_ignores_identities_above_the_file)
{
	struct imsic_file f;

	imsic_file_reset(&f);
	/* bits a bad state could hold beyond identity 255 and identity 0 */
	f.eip[4] = f.eie[4] = 1;	/* identity 256 */
	f.eip[0] = f.eie[0] = 1;	/* identity 0 */
	EXPECT_EQ(imsic_topei(&f, N), 0);
	EXPECT_EQ(imsic_topei_csr(&f, N), 0);
	EXPECT_EQ(imsic_topei(&f, 2047), 256);
	/* a count past the arrays reads no further than identity 2047 */
	f.eip[31] = f.eie[31] = 1ull << 63;
	f.eip[4] = 0;
	EXPECT_EQ(imsic_topei(&f, ~0u), 2047);
	EXPECT_FALSE(imsic_set_pending(&f, ~0u, 2048));
}

TEST(imsic_threshold_zero_p_and_above_n)
{
	struct imsic_file f;

	imsic_file_reset(&f);
	raise_id(&f, N, 10);
	raise_id(&f, N, 11);
	/* 0: every identity counts */
	EXPECT_EQ(imsic_topei(&f, N), 10);
	/* P: only identities below P */
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, 11);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EITHRESHOLD), 11);
	EXPECT_EQ(imsic_topei(&f, N), 10);
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, 10);
	EXPECT_EQ(imsic_topei(&f, N), 0);
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, 1);
	EXPECT_EQ(imsic_topei(&f, N), 0);
	/* N: everything up to N - 1 */
	raise_id(&f, N, N);
	f.eip[0] = f.eie[0] = 0;
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, N);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EITHRESHOLD), N);
	EXPECT_EQ(imsic_topei(&f, N), 0);
	/* above N: legalized to 0, which lets N through */
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, N + 1);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EITHRESHOLD), 0);
	EXPECT_EQ(imsic_topei(&f, N), N);
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, 0x10000 | 5);	/* high bits are not dropped into range */
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EITHRESHOLD), 0);
	/* a stored threshold above N (a state not made by a write) lets all through */
	f.eithreshold = 4000;
	EXPECT_EQ(imsic_topei(&f, N), N);
}

TEST(imsic_claim_clears_the_top_pending_bit_only)
{
	struct imsic_file f;

	imsic_file_reset(&f);
	EXPECT_EQ(imsic_claim(&f, N), 0);	/* nothing: no change */
	raise_id(&f, N, 1);
	raise_id(&f, N, 130);
	f.eip[0] |= 1ull << 2;			/* pending, not enabled */
	EXPECT_EQ(imsic_claim(&f, N), 1);
	EXPECT_EQ(f.eip[0], 1ull << 2);
	EXPECT_EQ(f.eie[0], 1ull << 1);	/* enables untouched */
	EXPECT_EQ(imsic_claim(&f, N), 130);
	EXPECT_EQ(f.eip[2], 0);
	EXPECT_EQ(imsic_claim(&f, N), 0);
	EXPECT_EQ(f.eip[0], 1ull << 2);
	/* the threshold hides an identity from the claim too */
	raise_id(&f, N, 40);
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, 40);
	EXPECT_EQ(imsic_claim(&f, N), 0);
	EXPECT_EQ(f.eip[0] >> 40 & 1, 1);
}

TEST(imsic_rmw_returns_the_old_value_and_writes_under_the_mask)
{
	struct imsic_file f;
	uint64_t old;

	imsic_file_reset(&f);
	EXPECT_EQ(imsic_rmw(&f, N, IMSIC_ISEL_EIE0 + 2, &old, 0xff00, ~0ull), 0);
	EXPECT_EQ(old, 0);
	/* csrs: set bits 0..3 */
	EXPECT_EQ(imsic_rmw(&f, N, IMSIC_ISEL_EIE0 + 2, &old, 0xf, 0xf), 0);
	EXPECT_EQ(old, 0xff00);
	/* csrc: clear bits 8..11 */
	EXPECT_EQ(imsic_rmw(&f, N, IMSIC_ISEL_EIE0 + 2, &old, 0, 0xf00), 0);
	EXPECT_EQ(old, 0xff0f);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIE0 + 2), 0xf00f);
	EXPECT_EQ(f.eie[1], 0xf00f);
	EXPECT_EQ(f.eip[1], 0);
	/* eip and eie are separate arrays, indexed the same */
	set_reg(&f, N, IMSIC_ISEL_EIP0 + 6, 0x1234);
	EXPECT_EQ(f.eip[3], 0x1234);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIE0 + 6), 0);
}

TEST(imsic_rmw_keeps_read_only_bits_zero)
{
	struct imsic_file f;

	imsic_file_reset(&f);
	/* bit 0 of eip0/eie0: identity 0 */
	set_reg(&f, N, IMSIC_ISEL_EIP0, ~0ull);
	set_reg(&f, N, IMSIC_ISEL_EIE0, ~0ull);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIP0), ~1ull);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIE0), ~1ull);
	/* N = 255: words 0..3 exist, eip8/eie8 (identities 256..319) and up do not */
	set_reg(&f, N, IMSIC_ISEL_EIP0 + 6, ~0ull);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIP0 + 6), ~0ull);
	for (uint64_t k = 8; k < 64; k += 2) {
		set_reg(&f, N, IMSIC_ISEL_EIP0 + k, ~0ull);
		set_reg(&f, N, IMSIC_ISEL_EIE0 + k, ~0ull);
		EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIP0 + k), 0);
		EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIE0 + k), 0);
		EXPECT_EQ(f.eip[k / 2], 0);
	}
	/* N = 2047: eip62/eie62 are full */
	set_reg(&f, 2047, IMSIC_ISEL_EIE0 + 62, ~0ull);
	EXPECT_EQ(f.eie[31], ~0ull);
	/* eidelivery keeps bit 0 only (no 0x40000000 in a guest file) */
	set_reg(&f, N, IMSIC_ISEL_EIDELIVERY, 0x40000000);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIDELIVERY), 0);
	set_reg(&f, N, IMSIC_ISEL_EIDELIVERY, 3);
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIDELIVERY), 1);
	/* a stored bit above N reads as 0 and a write drops it */
	f.eip[5] = 0;
	f.eip[3] = 0;
	f.eip[4] = 1;
	EXPECT_EQ(reg(&f, N, IMSIC_ISEL_EIP0 + 8), 0);
	EXPECT_EQ(f.eip[4], 1);		/* a pure read writes nothing */
	EXPECT_EQ(imsic_rmw(&f, N, IMSIC_ISEL_EIP0 + 8, NULL, 2, 2), 0);
	EXPECT_EQ(f.eip[4], 0);
}

TEST(imsic_rmw_reserved_registers_read_zero_and_ignore_writes)
{
	struct imsic_file f, before;
	uint64_t old;

	imsic_file_reset(&f);
	set_reg(&f, N, IMSIC_ISEL_EIDELIVERY, 1);
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, 7);
	before = f;
	for (uint64_t isel = 0x71; isel <= 0x7f; isel++) {
		if (isel == IMSIC_ISEL_EITHRESHOLD)
			continue;
		old = 0xdead;
		EXPECT_EQ(imsic_rmw(&f, N, isel, &old, ~0ull, ~0ull), 0);
		EXPECT_EQ(old, 0);
	}
	EXPECT_EQ(f.eidelivery, before.eidelivery);
	EXPECT_EQ(f.eithreshold, before.eithreshold);
	for (unsigned int w = 0; w < IMSIC_FILE_WORDS; w++)
		EXPECT_EQ(f.eip[w] | f.eie[w], 0);
}

TEST(imsic_rmw_odd_registers_and_outside_the_range_are_illegal)
{
	struct imsic_file f;
	uint64_t old = 0x55;
	static const uint64_t bad[] = { 0x81, 0x83, 0xbf, 0xc1, 0xc3, 0xff, 0x6f, 0x100, 0x30,
					0, ~0ull, 0x1000000000070ull };

	imsic_file_reset(&f);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(imsic_rmw(&f, N, bad[i], &old, ~0ull, ~0ull), -HYP_EINVAL);
		EXPECT_EQ(old, 0x55);	/* nothing read */
	}
	for (unsigned int w = 0; w < IMSIC_FILE_WORDS; w++)
		EXPECT_EQ(f.eip[w] | f.eie[w], 0);
	EXPECT_EQ(f.eidelivery | f.eithreshold, 0);
	/* the even neighbours are fine */
	EXPECT_EQ(imsic_rmw(&f, N, 0x80, NULL, 0, 0), 0);
	EXPECT_EQ(imsic_rmw(&f, N, 0xbe, NULL, 0, 0), 0);
	EXPECT_EQ(imsic_rmw(&f, N, 0xfe, NULL, 0, 0), 0);
}

TEST(imsic_set_pending_ignores_identities_that_do_not_exist)
{
	struct imsic_file f;
	static const uint32_t bad[] = { 0, N + 1, 256 + 63, 2047, 2048, 0x10000, ~0u };

	imsic_file_reset(&f);
	set_reg(&f, N, IMSIC_ISEL_EIDELIVERY, 1);
	for (uint64_t k = 0; k < 64; k += 2)
		set_reg(&f, 2047, IMSIC_ISEL_EIE0 + k, ~0ull);	/* everything enabled */
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_FALSE(imsic_set_pending(&f, N, bad[i]));
	for (unsigned int w = 0; w < IMSIC_FILE_WORDS; w++)
		EXPECT_EQ(f.eip[w], 0);
	EXPECT_TRUE(imsic_set_pending(&f, N, N));
	EXPECT_EQ(f.eip[3], 1ull << 63);
	/* with 2047 identities, 2047 exists */
	imsic_file_reset(&f);
	EXPECT_FALSE(imsic_set_pending(&f, 2047, 2047));	/* delivery off: no signal */
	EXPECT_EQ(f.eip[31], 1ull << 63);
}

TEST(imsic_set_pending_reports_only_the_signal_rising)
{
	struct imsic_file f;

	imsic_file_reset(&f);
	set_reg(&f, N, IMSIC_ISEL_EIE0, 1ull << 3 | 1ull << 9);
	/* delivery off: pending bits but never a signal */
	EXPECT_FALSE(imsic_set_pending(&f, N, 9));
	EXPECT_FALSE(imsic_signal(&f, N));
	EXPECT_EQ(imsic_topei(&f, N), 9);
	set_reg(&f, N, IMSIC_ISEL_EIDELIVERY, 1);
	EXPECT_TRUE(imsic_signal(&f, N));
	/* already signalling: another identity does not rise it again */
	EXPECT_FALSE(imsic_set_pending(&f, N, 3));
	EXPECT_EQ(imsic_claim(&f, N), 3);
	EXPECT_EQ(imsic_claim(&f, N), 9);
	EXPECT_FALSE(imsic_signal(&f, N));
	/* not enabled: pending, no signal */
	EXPECT_FALSE(imsic_set_pending(&f, N, 4));
	EXPECT_EQ(f.eip[0], 1ull << 4);
	/* enabled: 0 -> 1 */
	EXPECT_TRUE(imsic_set_pending(&f, N, 3));
	/* the same identity again: already 1 */
	EXPECT_FALSE(imsic_set_pending(&f, N, 3));
	EXPECT_EQ(imsic_claim(&f, N), 3);
	/* masked by the threshold: no signal until the threshold moves */
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, 9);
	EXPECT_FALSE(imsic_set_pending(&f, N, 9));
	EXPECT_FALSE(imsic_signal(&f, N));
	EXPECT_TRUE(imsic_set_pending(&f, N, 3));
	set_reg(&f, N, IMSIC_ISEL_EITHRESHOLD, 0);
	EXPECT_TRUE(imsic_signal(&f, N));
}

TEST(imsic_word_mask_follows_the_identity_count)
{
	EXPECT_EQ(imsic_word_mask(63, 0), ~1ull);
	EXPECT_EQ(imsic_word_mask(63, 1), 0);
	EXPECT_EQ(imsic_word_mask(127, 1), ~0ull);
	EXPECT_EQ(imsic_word_mask(2047, 31), ~0ull);
	EXPECT_EQ(imsic_word_mask(2047, 32), 0);
	EXPECT_EQ(imsic_word_mask(100, 1), (1ull << 37) - 1);	/* not a legal count, still exact */
	EXPECT_EQ(imsic_word_mask(~0u, 31), ~0ull);
}
