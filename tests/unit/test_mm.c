/* SPDX-License-Identifier: MIT */
/* hyp/mm/mm.c: the free-range pool (add/merge, reserve/split, first-fit alloc). */
#include <string.h>
#include <errno.h>
#include <mm.h>
#include "test.h"

#define EXPECT_RANGE(p, i, b, s)                                              \
	do {                                                                  \
		EXPECT_EQ((p)->r[i].base, (b));                               \
		EXPECT_EQ((p)->r[i].size, (s));                               \
	} while (0)

static void pool_init(struct mm_pool *p)
{
	memset(p, 0xa5, sizeof(*p));	/* garbage in unused slots must not matter */
	p->nr = 0;
}

TEST(mm_add_single)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x80000000, 0x1000000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x80000000, 0x1000000);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0x1000000);
}

TEST(mm_add_keeps_sorted)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x30000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x10000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x20000, 0x2000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x40000, 0x1000), 0);
	EXPECT_EQ(p.nr, 4);
	EXPECT_RANGE(&p, 0, 0x10000, 0x1000);
	EXPECT_RANGE(&p, 1, 0x20000, 0x2000);
	EXPECT_RANGE(&p, 2, 0x30000, 0x1000);
	EXPECT_RANGE(&p, 3, 0x40000, 0x1000);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0x5000);
}

TEST(mm_add_merges_with_previous)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x1000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x2000, 0x3000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x1000, 0x4000);
}

TEST(mm_add_merges_with_next)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x5000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x3000, 0x2000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x3000, 0x3000);
}

TEST(mm_add_fills_gap_merges_both)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x1000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x8000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x3000, 0x1000), 0);
	EXPECT_EQ(p.nr, 3);
	EXPECT_EQ(mm_pool_add(&p, 0x2000, 0x1000), 0);	/* joins the first two */
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x1000, 0x3000);
	EXPECT_RANGE(&p, 1, 0x8000, 0x1000);
	EXPECT_EQ(mm_pool_add(&p, 0x4000, 0x4000), 0);	/* joins everything */
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x1000, 0x8000);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0x8000);
}

TEST(mm_add_refuses_overlap)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x10000, 0x10000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x40000, 0x10000), 0);
	/* tail of the new range over the head of an existing one */
	EXPECT_EQ(mm_pool_add(&p, 0xf000, 0x2000), -HYP_EEXIST);
	/* head of the new range over the tail of an existing one */
	EXPECT_EQ(mm_pool_add(&p, 0x1f000, 0x2000), -HYP_EEXIST);
	/* identical, inside, enclosing, spanning two */
	EXPECT_EQ(mm_pool_add(&p, 0x10000, 0x10000), -HYP_EEXIST);
	EXPECT_EQ(mm_pool_add(&p, 0x11000, 0x1000), -HYP_EEXIST);
	EXPECT_EQ(mm_pool_add(&p, 0x8000, 0x20000), -HYP_EEXIST);
	EXPECT_EQ(mm_pool_add(&p, 0x18000, 0x30000), -HYP_EEXIST);
	/* same base, smaller */
	EXPECT_EQ(mm_pool_add(&p, 0x40000, 0x1000), -HYP_EEXIST);
	/* unchanged */
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x10000, 0x10000);
	EXPECT_RANGE(&p, 1, 0x40000, 0x10000);
	/* touching on both sides is not an overlap */
	EXPECT_EQ(mm_pool_add(&p, 0x20000, 0x20000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x10000, 0x40000);
}

TEST(mm_add_bad_args)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x1000, 0), -HYP_EINVAL);
	EXPECT_EQ(mm_pool_add(&p, ~0UL - 0xfff, 0x2000), -HYP_EINVAL);	/* wraps */
	EXPECT_EQ(p.nr, 0);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0);
}

TEST(mm_add_pool_full)
{
	struct mm_pool p;

	pool_init(&p);
	for (unsigned int i = 0; i < MM_MAX_RANGES; i++)
		EXPECT_EQ(mm_pool_add(&p, 0x100000 + i * 0x10000, 0x1000), 0);
	EXPECT_EQ(p.nr, MM_MAX_RANGES);
	EXPECT_EQ(mm_pool_add(&p, 0x10000000, 0x1000), -HYP_ENOMEM);
	EXPECT_EQ(mm_pool_add(&p, 0x1000, 0x1000), -HYP_ENOMEM);
	EXPECT_EQ(p.nr, MM_MAX_RANGES);
	EXPECT_EQ(mm_pool_free_bytes(&p), MM_MAX_RANGES * 0x1000UL);
	EXPECT_RANGE(&p, MM_MAX_RANGES - 1, 0x100000 + (MM_MAX_RANGES - 1) * 0x10000UL, 0x1000);
}

TEST(mm_reserve_splits)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x80000000, 0x100000), 0);
	EXPECT_EQ(mm_pool_reserve(&p, 0x80010000, 0x2000), 0);
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x80000000, 0x10000);
	EXPECT_RANGE(&p, 1, 0x80012000, 0x100000 - 0x12000);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0x100000 - 0x2000);
}

TEST(mm_reserve_trims_head_and_tail)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x10000, 0x10000), 0);
	EXPECT_EQ(mm_pool_reserve(&p, 0x10000, 0x1000), 0);	/* head, exact start */
	EXPECT_RANGE(&p, 0, 0x11000, 0xf000);
	EXPECT_EQ(mm_pool_reserve(&p, 0x8000, 0xa000), 0);	/* head, from below */
	EXPECT_RANGE(&p, 0, 0x12000, 0xe000);
	EXPECT_EQ(mm_pool_reserve(&p, 0x1f000, 0x1000), 0);	/* tail, exact end */
	EXPECT_RANGE(&p, 0, 0x12000, 0xd000);
	EXPECT_EQ(mm_pool_reserve(&p, 0x1e000, 0x10000), 0);	/* tail, beyond */
	EXPECT_RANGE(&p, 0, 0x12000, 0xc000);
	EXPECT_EQ(p.nr, 1);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0xc000);
}

TEST(mm_reserve_full_cover_and_span)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x10000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x20000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x30000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x40000, 0x4000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x50000, 0x1000), 0);
	/* exact cover of one range */
	EXPECT_EQ(mm_pool_reserve(&p, 0x10000, 0x1000), 0);
	EXPECT_EQ(p.nr, 4);
	EXPECT_RANGE(&p, 0, 0x20000, 0x1000);
	/* two whole ranges (adjacent in the array) and the head of a third */
	EXPECT_EQ(mm_pool_reserve(&p, 0x1f000, 0x22000), 0);
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x41000, 0x3000);
	EXPECT_RANGE(&p, 1, 0x50000, 0x1000);
	/* everything */
	EXPECT_EQ(mm_pool_reserve(&p, 0, 0x100000), 0);
	EXPECT_EQ(p.nr, 0);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0);
}

TEST(mm_reserve_outside_is_noop)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x10000, 0x1000), 0);
	EXPECT_EQ(mm_pool_reserve(&p, 0x11000, 0x1000), 0);	/* touching above */
	EXPECT_EQ(mm_pool_reserve(&p, 0xf000, 0x1000), 0);	/* touching below */
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x10000, 0x1000);
	EXPECT_EQ(mm_pool_reserve(&p, ~0UL - 0xfff, 0x2000), -HYP_EINVAL);	/* wraps */
	EXPECT_RANGE(&p, 0, 0x10000, 0x1000);
}

TEST(mm_reserve_then_add_back_merges)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x80000000, 0x400000), 0);
	EXPECT_EQ(mm_pool_reserve(&p, 0x80100000, 0x100000), 0);
	EXPECT_EQ(p.nr, 2);
	EXPECT_EQ(mm_pool_add(&p, 0x80100000, 0x100000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x80000000, 0x400000);
}

/* A split needs a free slot; without one the pool must stay as it was. */
TEST(mm_reserve_split_pool_full)
{
	struct mm_pool p;

	pool_init(&p);
	for (unsigned int i = 0; i < MM_MAX_RANGES; i++)
		EXPECT_EQ(mm_pool_add(&p, 0x100000 + i * 0x10000, 0x4000), 0);
	EXPECT_EQ(mm_pool_reserve(&p, 0x101000, 0x1000), -HYP_ENOMEM);
	EXPECT_EQ(p.nr, MM_MAX_RANGES);
	EXPECT_RANGE(&p, 0, 0x100000, 0x4000);
	EXPECT_EQ(mm_pool_free_bytes(&p), MM_MAX_RANGES * 0x4000UL);
	/* trimming needs no slot */
	EXPECT_EQ(mm_pool_reserve(&p, 0x100000, 0x1000), 0);
	EXPECT_RANGE(&p, 0, 0x101000, 0x3000);
}

TEST(mm_alloc_first_fit)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x10000, 0x3000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x100000, 0x100000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x400000, 0x100000), 0);
	/* too big for the first range: the second one, not the third */
	EXPECT_EQ(mm_pool_alloc(&p, 0x4000, 0x1000), 0x100000);
	/* fits the first range */
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x1000), 0x10000);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x1000), 0x11000);
	EXPECT_EQ(p.nr, 3);
	EXPECT_RANGE(&p, 0, 0x12000, 0x1000);
	EXPECT_RANGE(&p, 1, 0x104000, 0xfc000);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0x1000 + 0xfc000 + 0x100000);
	/* exact fit removes the range */
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x1000), 0x12000);
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x104000, 0xfc000);
}

TEST(mm_alloc_alignment)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x1000, 0x400000), 0);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x200000), 0x200000);
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x1000, 0x1ff000);
	EXPECT_RANGE(&p, 1, 0x201000, 0x200000);
	/* a 16 KiB-aligned 16 KiB block (a G-stage root) */
	EXPECT_EQ(mm_pool_alloc(&p, 0x4000, 0x4000), 0x4000);
	EXPECT_EQ(p.nr, 3);
	EXPECT_RANGE(&p, 0, 0x1000, 0x3000);
	EXPECT_RANGE(&p, 1, 0x8000, 0x1f8000);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0x400000 - 0x5000);
}

TEST(mm_alloc_skips_range_too_small_after_alignment)
{
	struct mm_pool p;

	pool_init(&p);
	/* 2.5 MiB, but its only 2 MiB-aligned address leaves 1.5 MiB */
	EXPECT_EQ(mm_pool_add(&p, 0x100000, 0x280000), 0);
	/* aligned start past the end of the range */
	EXPECT_EQ(mm_pool_add(&p, 0x10401000, 0x1000), 0);
	EXPECT_EQ(mm_pool_add(&p, 0x20000000, 0x400000), 0);
	EXPECT_EQ(mm_pool_alloc(&p, 0x200000, 0x200000), 0x20000000);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x2000), 0x100000);
	/* 1 MiB alignment: the middle of the first range */
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x100000), 0x200000);
	/* 16 MiB alignment: no range has such an address with room */
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x1000000), 0);
	EXPECT_EQ(p.nr, 4);
	EXPECT_RANGE(&p, 0, 0x101000, 0xff000);
	EXPECT_RANGE(&p, 1, 0x201000, 0x17f000);
	EXPECT_RANGE(&p, 2, 0x10401000, 0x1000);
	EXPECT_RANGE(&p, 3, 0x20200000, 0x200000);
}

TEST(mm_alloc_exhaustion)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x80000000, 0x3000), 0);
	EXPECT_EQ(mm_pool_alloc(&p, 0x4000, 0x1000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0x3000);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x1000), 0x80000000);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x1000), 0x80001000);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x1000), 0x80002000);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x1000), 0);
	EXPECT_EQ(p.nr, 0);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0);
}

TEST(mm_alloc_bad_args)
{
	struct mm_pool p;

	pool_init(&p);
	EXPECT_EQ(mm_pool_add(&p, 0x80000000, 0x100000), 0);
	EXPECT_EQ(mm_pool_alloc(&p, 0, 0x1000), 0);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0), 0);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x3000), 0);	/* not a power of 2 */
	EXPECT_EQ(mm_pool_free_bytes(&p), 0x100000);
	/* alignment so large that aligning up wraps */
	EXPECT_EQ(mm_pool_add(&p, 0xfff0000000000000UL, 0x100000), 0);
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x8000000000000000UL), 0);
	EXPECT_EQ(mm_pool_free_bytes(&p), 0x200000);
}

TEST(mm_alloc_split_pool_full)
{
	struct mm_pool p;

	pool_init(&p);
	for (unsigned int i = 0; i < MM_MAX_RANGES; i++)
		EXPECT_EQ(mm_pool_add(&p, 0x1000 + i * 0x400000UL, 0x300000), 0);
	/* the only fit (2 MiB aligned) lies in the middle of range 0: needs a slot */
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x200000), 0);
	EXPECT_EQ(p.nr, MM_MAX_RANGES);
	EXPECT_EQ(mm_pool_free_bytes(&p), MM_MAX_RANGES * 0x300000UL);
	/* from the head needs none */
	EXPECT_EQ(mm_pool_alloc(&p, 0x1000, 0x1000), 0x1000);
	EXPECT_EQ(mm_pool_free_bytes(&p), MM_MAX_RANGES * 0x300000UL - 0x1000);
}
