/* SPDX-License-Identifier: MIT */
/* hyp/lib/token_bucket.c: the rate limiter of guest I/O devices. */
#include <token_bucket.h>
#include "test.h"

#define HZ 10000000ull		/* QEMU virt's timebase */

TEST(token_bucket_starts_full_and_refuses_past_its_size)
{
	struct token_bucket b;

	tb_init(&b, 1000, 100, HZ, 5);
	EXPECT_TRUE(tb_take(&b, 60, 5));
	EXPECT_TRUE(tb_take(&b, 40, 5));
	EXPECT_TRUE(!tb_take(&b, 1, 5));
	EXPECT_EQ(b.tokens, 0);
}

TEST(token_bucket_refills_at_its_rate_without_losing_fractions)
{
	struct token_bucket b;
	uint64_t t = 0, got = 0;

	tb_init(&b, 3, 3, HZ, 0);
	EXPECT_TRUE(tb_take(&b, 3, 0));
	/* 3 tokens a second, asked every 1/7 s for a minute: exactly 180 */
	for (int i = 0; i < 7 * 60; i++) {
		t += HZ / 7;
		got += tb_take(&b, 1, t);
	}
	EXPECT_EQ(got, 179);	/* 60 s minus the 1/7 s of rounding in t */
	t += HZ;
	EXPECT_TRUE(tb_take(&b, 3, t));
}

TEST(token_bucket_never_holds_more_than_its_size_after_a_long_idle)
{
	struct token_bucket b;

	tb_init(&b, 1ull << 40, 50, HZ, 0);
	EXPECT_TRUE(tb_take(&b, 50, 0));
	/* hours idle at a huge rate: elapsed * rate would wrap 64 bits */
	EXPECT_TRUE(tb_take(&b, 50, 36000 * HZ));
	EXPECT_TRUE(!tb_take(&b, 1, 36000 * HZ));
	/* just short of a fill, with the largest size and rate */
	tb_init(&b, 1ull << 62, 1ull << 62, HZ, 0);
	EXPECT_EQ(b.size, TB_SIZE_MAX);
	EXPECT_TRUE(tb_take(&b, TB_SIZE_MAX, 0));
	EXPECT_TRUE(!tb_take(&b, TB_SIZE_MAX, b.fill - 1));
	EXPECT_TRUE(b.tokens <= TB_SIZE_MAX);
	EXPECT_TRUE(b.tokens >= TB_SIZE_MAX - TB_SIZE_MAX / 1000);
}

TEST(token_bucket_wait_says_when_a_take_passes)
{
	struct token_bucket b;
	uint64_t w;

	tb_init(&b, 1000, 1000, HZ, 0);
	EXPECT_TRUE(tb_take(&b, 1000, 0));
	w = tb_wait(&b, 250, 0);
	EXPECT_EQ(w, HZ / 4);
	EXPECT_TRUE(!tb_take(&b, 250, w - 1));
	EXPECT_TRUE(tb_take(&b, 250, w));
	EXPECT_EQ(tb_wait(&b, 0, w), 0);
}

TEST(token_bucket_passes_an_oversized_request_on_a_full_bucket_only)
{
	struct token_bucket b;

	tb_init(&b, 100, 100, HZ, 0);
	EXPECT_TRUE(tb_take(&b, 500, 0));	/* full: passes, bucket empty */
	EXPECT_TRUE(!tb_take(&b, 500, HZ / 2));
	EXPECT_TRUE(!tb_take(&b, 1, HZ / 2));
	EXPECT_EQ(tb_wait(&b, 500, HZ / 2), 9 * HZ / 2);
	EXPECT_TRUE(!tb_take(&b, 500, 5 * HZ - 1));
	EXPECT_TRUE(tb_take(&b, 500, 5 * HZ));
}

/* Requests larger than the bucket get the rate, not a bucket a refill: 64
 * KiB reads at 32 KiB/s with a 3.2 KiB bucket go at one every 2 s. Before,
 * the part of a request past the bucket was never paid for: one passed
 * each time the bucket filled (every 0.1 s), 20 times the rate. */
TEST(token_bucket_charges_an_oversized_request_in_full)
{
	struct token_bucket b;
	uint64_t t = 0, passed = 0;

	tb_init(&b, 32768, 3276, HZ, 0);
	for (; t <= 60 * HZ; t += HZ / 100)
		passed += tb_take(&b, 65536, t);
	EXPECT_EQ(passed, 31);			/* at 0, 2 s, ... 60 s */
	/* the debt is paid before a small request passes too */
	tb_init(&b, 1000, 100, HZ, 0);
	EXPECT_TRUE(tb_take(&b, 1100, 0));
	EXPECT_EQ(b.debt, 1000);
	EXPECT_EQ(tb_wait(&b, 1, 0), HZ + HZ / 1000);
	EXPECT_TRUE(!tb_take(&b, 1, HZ));
	EXPECT_TRUE(tb_take(&b, 1, HZ + HZ / 1000));
	/* a debt past the limit is cut to it */
	tb_init(&b, 1, 1, HZ, 0);
	EXPECT_TRUE(tb_take(&b, ~0ull, 0));
	EXPECT_EQ(b.debt, TB_DEBT_MAX);
	EXPECT_EQ(tb_wait(&b, 1, 0), (TB_DEBT_MAX + 1) * HZ);
	EXPECT_TRUE(tb_take(&b, 1, (TB_DEBT_MAX + 1) * HZ));
}

TEST(token_bucket_rate_zero_never_limits_and_a_stale_clock_adds_nothing)
{
	struct token_bucket b;

	tb_init(&b, 0, 0, HZ, 0);
	for (int i = 0; i < 1000; i++)
		EXPECT_TRUE(tb_take(&b, 1ull << 40, 0));
	tb_init(&b, 10, 10, HZ, 100);
	EXPECT_TRUE(tb_take(&b, 10, 100));
	EXPECT_TRUE(!tb_take(&b, 1, 50));	/* time ran backwards: no tokens */
	EXPECT_EQ(b.last, 100);
}
