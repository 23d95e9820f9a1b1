/* SPDX-License-Identifier: MIT */
/* hyp/mm/mm_ranges.c: the boot-time free-range set (add/merge, reserve/split);
 * hyp/mm/mm.c: the page allocator over it (first fit, frees that cannot fail). */
#include <string.h>
#include <errno.h>
#include <stdlib.h>
#include <arch/riscv/encoding.h>
#include <mm.h>
#include "test.h"

#define EXPECT_RANGE(p, i, b, s)                                              \
	do {                                                                  \
		EXPECT_EQ((p)->r[i].base, (b));                               \
		EXPECT_EQ((p)->r[i].size, (s));                               \
	} while (0)

static void ranges_init(struct mm_ranges *p)
{
	memset(p, 0xa5, sizeof(*p));	/* garbage in unused slots must not matter */
	p->nr = 0;
}

TEST(mm_ranges_add_single)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x80000000, 0x1000000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x80000000, 0x1000000);
	EXPECT_EQ(mm_ranges_bytes(&p), 0x1000000);
}

TEST(mm_ranges_add_keeps_sorted)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x30000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x10000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x20000, 0x2000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x40000, 0x1000), 0);
	EXPECT_EQ(p.nr, 4);
	EXPECT_RANGE(&p, 0, 0x10000, 0x1000);
	EXPECT_RANGE(&p, 1, 0x20000, 0x2000);
	EXPECT_RANGE(&p, 2, 0x30000, 0x1000);
	EXPECT_RANGE(&p, 3, 0x40000, 0x1000);
	EXPECT_EQ(mm_ranges_bytes(&p), 0x5000);
}

TEST(mm_ranges_add_merges_with_previous)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x1000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x2000, 0x3000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x1000, 0x4000);
}

TEST(mm_ranges_add_merges_with_next)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x5000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x3000, 0x2000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x3000, 0x3000);
}

TEST(mm_ranges_add_fills_gap_merges_both)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x1000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x8000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x3000, 0x1000), 0);
	EXPECT_EQ(p.nr, 3);
	EXPECT_EQ(mm_ranges_add(&p, 0x2000, 0x1000), 0);	/* joins the first two */
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x1000, 0x3000);
	EXPECT_RANGE(&p, 1, 0x8000, 0x1000);
	EXPECT_EQ(mm_ranges_add(&p, 0x4000, 0x4000), 0);	/* joins everything */
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x1000, 0x8000);
	EXPECT_EQ(mm_ranges_bytes(&p), 0x8000);
}

TEST(mm_ranges_add_refuses_overlap)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x10000, 0x10000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x40000, 0x10000), 0);
	/* tail of the new range over the head of an existing one */
	EXPECT_EQ(mm_ranges_add(&p, 0xf000, 0x2000), -HYP_EEXIST);
	/* head of the new range over the tail of an existing one */
	EXPECT_EQ(mm_ranges_add(&p, 0x1f000, 0x2000), -HYP_EEXIST);
	/* identical, inside, enclosing, spanning two */
	EXPECT_EQ(mm_ranges_add(&p, 0x10000, 0x10000), -HYP_EEXIST);
	EXPECT_EQ(mm_ranges_add(&p, 0x11000, 0x1000), -HYP_EEXIST);
	EXPECT_EQ(mm_ranges_add(&p, 0x8000, 0x20000), -HYP_EEXIST);
	EXPECT_EQ(mm_ranges_add(&p, 0x18000, 0x30000), -HYP_EEXIST);
	/* same base, smaller */
	EXPECT_EQ(mm_ranges_add(&p, 0x40000, 0x1000), -HYP_EEXIST);
	/* unchanged */
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x10000, 0x10000);
	EXPECT_RANGE(&p, 1, 0x40000, 0x10000);
	/* touching on both sides is not an overlap */
	EXPECT_EQ(mm_ranges_add(&p, 0x20000, 0x20000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x10000, 0x40000);
}

TEST(mm_ranges_add_bad_args)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x1000, 0), -HYP_EINVAL);
	EXPECT_EQ(mm_ranges_add(&p, ~0UL - 0xfff, 0x2000), -HYP_EINVAL);	/* wraps */
	EXPECT_EQ(p.nr, 0);
	EXPECT_EQ(mm_ranges_bytes(&p), 0);
}

TEST(mm_ranges_add_pool_full)
{
	struct mm_ranges p;

	ranges_init(&p);
	for (unsigned int i = 0; i < MM_MAX_RANGES; i++)
		EXPECT_EQ(mm_ranges_add(&p, 0x100000 + i * 0x10000, 0x1000), 0);
	EXPECT_EQ(p.nr, MM_MAX_RANGES);
	EXPECT_EQ(mm_ranges_add(&p, 0x10000000, 0x1000), -HYP_ENOMEM);
	EXPECT_EQ(mm_ranges_add(&p, 0x1000, 0x1000), -HYP_ENOMEM);
	EXPECT_EQ(p.nr, MM_MAX_RANGES);
	EXPECT_EQ(mm_ranges_bytes(&p), MM_MAX_RANGES * 0x1000UL);
	EXPECT_RANGE(&p, MM_MAX_RANGES - 1, 0x100000 + (MM_MAX_RANGES - 1) * 0x10000UL, 0x1000);
}

/* A piece that touches a neighbour merges before any slot is needed. */
TEST(mm_ranges_add_merges_when_full)
{
	struct mm_ranges p;

	ranges_init(&p);
	for (unsigned int i = 0; i < MM_MAX_RANGES; i++)
		EXPECT_EQ(mm_ranges_add(&p, 0x100000 + i * 0x10000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x101000, 0x1000), 0);		/* after range 0 */
	EXPECT_EQ(mm_ranges_add(&p, 0x10f000, 0x1000), 0);		/* before range 1 */
	EXPECT_EQ(mm_ranges_add(&p, 0x102000, 0xd000), 0);		/* joins both */
	EXPECT_EQ(p.nr, MM_MAX_RANGES - 1);
	EXPECT_RANGE(&p, 0, 0x100000, 0x11000);
	EXPECT_EQ(mm_ranges_bytes(&p), MM_MAX_RANGES * 0x1000UL + 0xf000);
}

TEST(mm_ranges_reserve_splits)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x80000000, 0x100000), 0);
	EXPECT_EQ(mm_ranges_reserve(&p, 0x80010000, 0x2000), 0);
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x80000000, 0x10000);
	EXPECT_RANGE(&p, 1, 0x80012000, 0x100000 - 0x12000);
	EXPECT_EQ(mm_ranges_bytes(&p), 0x100000 - 0x2000);
}

TEST(mm_ranges_reserve_trims_head_and_tail)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x10000, 0x10000), 0);
	EXPECT_EQ(mm_ranges_reserve(&p, 0x10000, 0x1000), 0);	/* head, exact start */
	EXPECT_RANGE(&p, 0, 0x11000, 0xf000);
	EXPECT_EQ(mm_ranges_reserve(&p, 0x8000, 0xa000), 0);	/* head, from below */
	EXPECT_RANGE(&p, 0, 0x12000, 0xe000);
	EXPECT_EQ(mm_ranges_reserve(&p, 0x1f000, 0x1000), 0);	/* tail, exact end */
	EXPECT_RANGE(&p, 0, 0x12000, 0xd000);
	EXPECT_EQ(mm_ranges_reserve(&p, 0x1e000, 0x10000), 0);	/* tail, beyond */
	EXPECT_RANGE(&p, 0, 0x12000, 0xc000);
	EXPECT_EQ(p.nr, 1);
	EXPECT_EQ(mm_ranges_bytes(&p), 0xc000);
}

TEST(mm_ranges_reserve_full_cover_and_span)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x10000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x20000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x30000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x40000, 0x4000), 0);
	EXPECT_EQ(mm_ranges_add(&p, 0x50000, 0x1000), 0);
	/* exact cover of one range */
	EXPECT_EQ(mm_ranges_reserve(&p, 0x10000, 0x1000), 0);
	EXPECT_EQ(p.nr, 4);
	EXPECT_RANGE(&p, 0, 0x20000, 0x1000);
	/* two whole ranges (adjacent in the array) and the head of a third */
	EXPECT_EQ(mm_ranges_reserve(&p, 0x1f000, 0x22000), 0);
	EXPECT_EQ(p.nr, 2);
	EXPECT_RANGE(&p, 0, 0x41000, 0x3000);
	EXPECT_RANGE(&p, 1, 0x50000, 0x1000);
	/* everything */
	EXPECT_EQ(mm_ranges_reserve(&p, 0, 0x100000), 0);
	EXPECT_EQ(p.nr, 0);
	EXPECT_EQ(mm_ranges_bytes(&p), 0);
}

TEST(mm_ranges_reserve_outside_is_noop)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x10000, 0x1000), 0);
	EXPECT_EQ(mm_ranges_reserve(&p, 0x11000, 0x1000), 0);	/* touching above */
	EXPECT_EQ(mm_ranges_reserve(&p, 0xf000, 0x1000), 0);	/* touching below */
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x10000, 0x1000);
	EXPECT_EQ(mm_ranges_reserve(&p, ~0UL - 0xfff, 0x2000), -HYP_EINVAL);	/* wraps */
	EXPECT_RANGE(&p, 0, 0x10000, 0x1000);
}

TEST(mm_ranges_reserve_then_add_back_merges)
{
	struct mm_ranges p;

	ranges_init(&p);
	EXPECT_EQ(mm_ranges_add(&p, 0x80000000, 0x400000), 0);
	EXPECT_EQ(mm_ranges_reserve(&p, 0x80100000, 0x100000), 0);
	EXPECT_EQ(p.nr, 2);
	EXPECT_EQ(mm_ranges_add(&p, 0x80100000, 0x100000), 0);
	EXPECT_EQ(p.nr, 1);
	EXPECT_RANGE(&p, 0, 0x80000000, 0x400000);
}

/* A split needs a free slot; without one the pool must stay as it was. */
TEST(mm_ranges_reserve_split_pool_full)
{
	struct mm_ranges p;

	ranges_init(&p);
	for (unsigned int i = 0; i < MM_MAX_RANGES; i++)
		EXPECT_EQ(mm_ranges_add(&p, 0x100000 + i * 0x10000, 0x4000), 0);
	EXPECT_EQ(mm_ranges_reserve(&p, 0x101000, 0x1000), -HYP_ENOMEM);
	EXPECT_EQ(p.nr, MM_MAX_RANGES);
	EXPECT_RANGE(&p, 0, 0x100000, 0x4000);
	EXPECT_EQ(mm_ranges_bytes(&p), MM_MAX_RANGES * 0x4000UL);
	/* trimming needs no slot */
	EXPECT_EQ(mm_ranges_reserve(&p, 0x100000, 0x1000), 0);
	EXPECT_RANGE(&p, 0, 0x101000, 0x3000);
}

/* --- the page allocator, over a real buffer (its bitmap lives in the memory) --- */

#define ARENA_SIZE	(32 * SZ_2M)

struct arena {
	uint8_t *mem;
	struct mm_ranges ranges;
	struct mm_pool pool;
};

/* A pool over @n pieces of one 2 MiB-aligned buffer, given as [off, off+size). */
static void arena_init(struct arena *a, const struct mm_range *pieces, unsigned int n)
{
	a->mem = aligned_alloc(SZ_2M, ARENA_SIZE);
	memset(&a->ranges, 0, sizeof(a->ranges));
	for (unsigned int i = 0; i < n; i++)
		EXPECT_EQ(mm_ranges_add(&a->ranges, (uint64_t)(uintptr_t)a->mem + pieces[i].base,
					pieces[i].size), 0);
	memset(&a->pool, 0xa5, sizeof(a->pool));	/* mm_pool_init() sets every field */
	mm_pool_init(&a->pool, &a->ranges);
}

static uint64_t at(const struct arena *a, uint64_t off)
{
	return (uint64_t)(uintptr_t)a->mem + off;
}

static void arena_whole(struct arena *a)
{
	const struct mm_range all = { 0, ARENA_SIZE };

	arena_init(a, &all, 1);
}

TEST(mm_pool_layout_keeps_the_bitmap_out)
{
	/* one page (no room for a bitmap and a page), an unaligned piece, a big one */
	const struct mm_range pieces[] = {
		{ 0x1000, 0x1000 }, { 0x10800, 0x3900 }, { SZ_2M, 8 * SZ_2M },
	};
	struct arena a;

	arena_init(&a, pieces, 3);
	EXPECT_EQ(a.pool.nr, 2);
	/* [0x10800, 0x14100) trims to [0x11000, 0x14000): bitmap page + 2 pages */
	EXPECT_EQ(a.pool.reg[0].base, at(&a, 0x12000));
	EXPECT_EQ(a.pool.reg[0].pages, 2);
	/* 4096 pages need 512 bytes of bits: one page */
	EXPECT_EQ(a.pool.reg[1].base, at(&a, SZ_2M + PAGE_SIZE));
	EXPECT_EQ(a.pool.reg[1].pages, 8 * SZ_2M / PAGE_SIZE - 1);
	EXPECT_EQ(mm_pool_free_bytes(&a.pool), 2 * PAGE_SIZE + 8 * SZ_2M - PAGE_SIZE);
	free(a.mem);
}

TEST(mm_pool_alloc_first_fit_and_alignment)
{
	struct arena a;

	arena_whole(&a);	/* bitmap in the first page, pages from 0x1000 */
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, 0x1000), at(&a, 0x1000));
	/* a 16 KiB-aligned 16 KiB block (a G-stage root) skips 0x2000..0x3fff */
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x4000, 0x4000), at(&a, 0x4000));
	/* smaller than a page: a whole page, page-aligned */
	EXPECT_EQ(mm_pool_alloc(&a.pool, 100, 8), at(&a, 0x2000));
	EXPECT_EQ(mm_pool_alloc(&a.pool, SZ_2M, SZ_2M), at(&a, SZ_2M));
	/* the hole left below 2 MiB is found again by a first fit */
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, 0x1000), at(&a, 0x3000));
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x2000, 0x1000), at(&a, 0x8000));
	EXPECT_EQ(mm_pool_free_bytes(&a.pool),
		  ARENA_SIZE - PAGE_SIZE - (1 + 4 + 1 + 512 + 1 + 2) * PAGE_SIZE);
	free(a.mem);
}

TEST(mm_pool_alloc_exhaustion_and_bad_args)
{
	const struct mm_range piece = { 0, 4 * PAGE_SIZE };	/* bitmap + 3 pages */
	struct arena a;

	arena_init(&a, &piece, 1);
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0, 0x1000), 0);
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, 0), 0);
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, 0x3000), 0);	/* not a power of 2 */
	EXPECT_EQ(mm_pool_alloc(&a.pool, ~0ULL, 0x1000), 0);	/* rounding up wraps */
	/* an alignment so large that aligning up wraps, or lands past the end */
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, 0x8000000000000000ULL), 0);
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, SZ_1G), 0);
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x4000, 0x1000), 0);	/* more than there is */
	EXPECT_EQ(mm_pool_free_bytes(&a.pool), 0x3000);
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, 0x1000), at(&a, 0x1000));
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, 0x1000), at(&a, 0x2000));
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, 0x1000), at(&a, 0x3000));
	EXPECT_EQ(mm_pool_alloc(&a.pool, 0x1000, 0x1000), 0);
	EXPECT_EQ(mm_pool_free_bytes(&a.pool), 0);
	free(a.mem);
}

/* The review's finding: the free list held 32 pieces, a free that needed a
 * 33rd was lost (and every later one). A guest chooses the order in which a
 * live snapshot frees its chunk copies: every other one first, then the rest. */
TEST(mm_pool_frees_never_fail_however_fragmented)
{
	uint64_t blk[31];
	struct arena a;

	arena_whole(&a);
	for (unsigned int i = 0; i < 31; i++) {
		blk[i] = mm_pool_alloc(&a.pool, SZ_2M, SZ_2M);
		EXPECT_NE(blk[i], 0);
	}
	EXPECT_EQ(mm_pool_free_bytes(&a.pool), SZ_2M - PAGE_SIZE);
	for (unsigned int i = 0; i < 31; i += 2)
		EXPECT_EQ(mm_pool_free(&a.pool, blk[i], SZ_2M), 0);
	for (unsigned int i = 1; i < 31; i += 2)
		EXPECT_EQ(mm_pool_free(&a.pool, blk[i], SZ_2M), 0);
	EXPECT_EQ(mm_pool_free_bytes(&a.pool), ARENA_SIZE - PAGE_SIZE);
	/* and it is usable again as one piece */
	EXPECT_EQ(mm_pool_alloc(&a.pool, 31 * SZ_2M, SZ_2M), at(&a, SZ_2M));
	free(a.mem);
}

/* 4 KiB blocks, every other one freed: 3000 separate free pieces. */
TEST(mm_pool_thousands_of_free_pieces)
{
	static uint64_t blk[6000];
	struct arena a;

	arena_whole(&a);
	for (unsigned int i = 0; i < 6000; i++)
		blk[i] = mm_pool_alloc(&a.pool, PAGE_SIZE, PAGE_SIZE);
	for (unsigned int i = 0; i < 6000; i += 2)
		EXPECT_EQ(mm_pool_free(&a.pool, blk[i], PAGE_SIZE), 0);
	/* nothing two pages long is free among them: the next one comes after */
	EXPECT_EQ(mm_pool_alloc(&a.pool, 2 * PAGE_SIZE, PAGE_SIZE), at(&a, 6001 * PAGE_SIZE));
	for (unsigned int i = 1; i < 6000; i += 2)
		EXPECT_EQ(mm_pool_free(&a.pool, blk[i], PAGE_SIZE), 0);
	EXPECT_EQ(mm_pool_free_bytes(&a.pool), ARENA_SIZE - 3 * PAGE_SIZE);
	free(a.mem);
}

TEST(mm_pool_free_refuses_what_was_not_allocated)
{
	struct arena a;
	uint64_t b;

	arena_whole(&a);
	b = mm_pool_alloc(&a.pool, 0x3000, 0x1000);
	EXPECT_EQ(b, at(&a, 0x1000));
	EXPECT_EQ(mm_pool_free(&a.pool, 0, 0x1000), 0);		/* nothing */
	EXPECT_EQ(mm_pool_free(&a.pool, b + 1, 0x1000), -HYP_EINVAL);	/* unaligned */
	EXPECT_EQ(mm_pool_free(&a.pool, b, 0), -HYP_EINVAL);
	EXPECT_EQ(mm_pool_free(&a.pool, b, 0x4000), -HYP_EINVAL);	/* past the block */
	EXPECT_EQ(mm_pool_free(&a.pool, at(&a, 0), 0x1000), -HYP_EINVAL);	/* the bitmap */
	EXPECT_EQ(mm_pool_free(&a.pool, at(&a, ARENA_SIZE), 0x1000), -HYP_EINVAL);
	EXPECT_EQ(mm_pool_free(&a.pool, b, ~0ULL), -HYP_EINVAL);
	EXPECT_EQ(mm_pool_free_bytes(&a.pool), ARENA_SIZE - 4 * PAGE_SIZE);
	EXPECT_EQ(mm_pool_free(&a.pool, b + 0x1000, 0x1000), 0);	/* part of it */
	EXPECT_EQ(mm_pool_free(&a.pool, b, 0x3000), -HYP_EINVAL);	/* double */
	EXPECT_EQ(mm_pool_free(&a.pool, b, 0x1000), 0);
	EXPECT_EQ(mm_pool_free(&a.pool, b + 0x2000, 0x1000), 0);
	EXPECT_EQ(mm_pool_free_bytes(&a.pool), ARENA_SIZE - PAGE_SIZE);
	free(a.mem);
}

/* Random allocations and frees of mixed sizes and alignments against a model:
 * blocks never overlap, stay inside the pool, keep their alignment, and the
 * free count always matches. */
TEST(mm_pool_random_against_a_model)
{
	static struct { uint64_t base, size; } live[256];
	const struct mm_range pieces[] = {
		{ 0x5000, 3 * SZ_2M }, { 4 * SZ_2M, 3 * SZ_2M + 0x3000 }, { 10 * SZ_2M, 20 * SZ_2M },
	};
	uint64_t seed = 12345, total, in_use = 0;
	unsigned int allocs = 0, refused = 0;
	struct arena a;

	arena_init(&a, pieces, 3);
	total = mm_pool_free_bytes(&a.pool);
	for (unsigned int step = 0; step < 20000; step++) {
		unsigned int slot;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		slot = (unsigned int)(seed >> 33) % 256;
		if (live[slot].base) {
			EXPECT_EQ(mm_pool_free(&a.pool, live[slot].base, live[slot].size), 0);
			in_use -= ALIGN_UP(live[slot].size, PAGE_SIZE);
			live[slot].base = 0;
		} else {
			uint64_t size = 1 + (seed >> 40) % (3 * SZ_2M / 4);
			uint64_t align = PAGE_SIZE << ((seed >> 20) % 10);
			uint64_t b = mm_pool_alloc(&a.pool, size, align);
			bool inside = false;

			if (!b) {
				refused++;
				continue;
			}
			allocs++;
			EXPECT_EQ(b % align, 0);
			for (unsigned int r = 0; r < a.pool.nr; r++)
				inside |= range_within(b, size, a.pool.reg[r].base,
						       a.pool.reg[r].pages * PAGE_SIZE);
			EXPECT_TRUE(inside);
			for (unsigned int o = 0; o < 256; o++)
				if (live[o].base)
					EXPECT_TRUE(b + size <= live[o].base ||
						    live[o].base + live[o].size <= b);
			live[slot].base = b;
			live[slot].size = size;
			in_use += ALIGN_UP(size, PAGE_SIZE);
		}
		EXPECT_EQ(mm_pool_free_bytes(&a.pool), total - in_use);
	}
	/* both paths taken many times: the pool was full now and then */
	EXPECT_TRUE(allocs > 5000);
	EXPECT_TRUE(refused > 100);
	for (unsigned int o = 0; o < 256; o++)
		if (live[o].base)
			EXPECT_EQ(mm_pool_free(&a.pool, live[o].base, live[o].size), 0);
	EXPECT_EQ(mm_pool_free_bytes(&a.pool), total);
	free(a.mem);
}
