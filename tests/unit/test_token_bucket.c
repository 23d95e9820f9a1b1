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
	EXPECT_EQ(tb_wait(&b, 500, HZ / 2), HZ / 2);
	EXPECT_TRUE(tb_take(&b, 500, HZ));
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
