/* SPDX-License-Identifier: MIT */
/* hyp/mm/gstage.c: Sv39x4 G-stage tables built in host memory. Table pages are
 * real (aligned_alloc); mapped "host physical" addresses are just numbers. */
#include <stdlib.h>
#include <string.h>
#include <arch/riscv/encoding.h>
#include <errno.h>
#include <gstage.h>
#include "test.h"

#define LEAF_RWX	(PTE_V | PTE_R | PTE_W | PTE_X | PTE_U | PTE_A | PTE_D)	/* 0xdf */
#define PTE_LOW_BITS	0x3ffUL

static void *pages[1024];
static unsigned int nr_pages;
static int alloc_budget;	/* < 0: unlimited */

static uint64_t test_alloc(void *ctx)
{
	(void)ctx;
	void *p;

	if (alloc_budget == 0 || nr_pages == ARRAY_SIZE(pages))
		return 0;
	if (alloc_budget > 0)
		alloc_budget--;
	p = aligned_alloc(SZ_4K, SZ_4K);
	if (!p)
		return 0;
	memset(p, 0, SZ_4K);
	pages[nr_pages++] = p;
	return (uint64_t)(uintptr_t)p;
}

static uint64_t root_new(void)
{
	void *r = aligned_alloc(GSTAGE_ROOT_SIZE, GSTAGE_ROOT_SIZE);

	memset(r, 0, GSTAGE_ROOT_SIZE);
	nr_pages = 0;
	alloc_budget = -1;
	return (uint64_t)(uintptr_t)r;
}

static void root_free(uint64_t root)
{
	for (unsigned int i = 0; i < nr_pages; i++)
		free(pages[i]);
	nr_pages = 0;
	free((void *)(uintptr_t)root);
}

static uint64_t *table_of(uint64_t pte)
{
	return (uint64_t *)(uintptr_t)((pte >> 10) << 12);
}

TEST(gstage_root_geometry)
{
	EXPECT_EQ(GSTAGE_ROOT_SIZE, 16384);
	EXPECT_EQ(GSTAGE_GPA_BITS, 41);
	EXPECT_EQ(LEAF_RWX, 0xdf);
}

TEST(gstage_map_2m_leaves)
{
	uint64_t root = root_new(), *rt = (uint64_t *)(uintptr_t)root, *l1, *pte, sz = 0;

	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, 2 * SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_EQ(nr_pages, 1);			/* one level-1 table, no level-0 table */
	/* root index = gpa[40:30] = 2: a pointer PTE (V only) */
	EXPECT_EQ(rt[2] & PTE_LOW_BITS, PTE_V);
	EXPECT_EQ(rt[2] >> 10, (uint64_t)(uintptr_t)pages[0] >> 12);
	for (unsigned int i = 0; i < 2048; i++)
		if (i != 2)
			EXPECT_EQ(rt[i], 0);
	l1 = table_of(rt[2]);
	EXPECT_EQ(l1[0], ((0x100000000UL >> 12) << 10) | LEAF_RWX);
	EXPECT_EQ(l1[1], ((0x100200000UL >> 12) << 10) | LEAF_RWX);
	EXPECT_EQ(l1[2], 0);

	pte = gstage_lookup(root, 0x80000000, &sz);
	EXPECT_EQ(pte, &l1[0]);
	EXPECT_EQ(sz, SZ_2M);
	pte = gstage_lookup(root, 0x803fffff, &sz);
	EXPECT_EQ(pte, &l1[1]);
	EXPECT_EQ(sz, SZ_2M);
	EXPECT_EQ(gstage_lookup(root, 0x80400000, &sz), NULL);
	EXPECT_EQ(gstage_lookup(root, 0x80000000, NULL), &l1[0]);	/* NULL size is fine */
	root_free(root);
}

TEST(gstage_map_4k_leaves)
{
	uint64_t root = root_new(), *rt = (uint64_t *)(uintptr_t)root, *l1, *l0, sz = 0;

	EXPECT_EQ(gstage_map(root, 0x80001000, 0x200003000, 0x3000, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_EQ(nr_pages, 2);			/* level-1 and level-0 tables */
	l1 = table_of(rt[2]);
	EXPECT_EQ(l1[0] & PTE_LOW_BITS, PTE_V);	/* pointer to level 0 */
	l0 = table_of(l1[0]);
	EXPECT_EQ(l0[0], 0);
	EXPECT_EQ(l0[1], ((0x200003000UL >> 12) << 10) | LEAF_RWX);
	EXPECT_EQ(l0[2], ((0x200004000UL >> 12) << 10) | LEAF_RWX);
	EXPECT_EQ(l0[3], ((0x200005000UL >> 12) << 10) | LEAF_RWX);
	EXPECT_EQ(l0[4], 0);
	EXPECT_EQ(gstage_lookup(root, 0x80002abc, &sz), &l0[2]);
	EXPECT_EQ(sz, SZ_4K);
	EXPECT_EQ(gstage_lookup(root, 0x80000000, &sz), NULL);
	EXPECT_EQ(gstage_lookup(root, 0x80004000, &sz), NULL);
	root_free(root);
}

TEST(gstage_map_mixed_sizes)
{
	uint64_t root = root_new(), sz = 0;

	/* 4K up to the 2 MiB boundary, a 2 MiB leaf, then a 4K tail */
	EXPECT_EQ(gstage_map(root, 0x801ff000, 0x3001ff000, SZ_2M + 0x2000, GSTAGE_PROT_RAM,
			     test_alloc, NULL), 0);
	EXPECT_NE(gstage_lookup(root, 0x801ff000, &sz), NULL);
	EXPECT_EQ(sz, SZ_4K);
	EXPECT_NE(gstage_lookup(root, 0x80200000, &sz), NULL);
	EXPECT_EQ(sz, SZ_2M);
	EXPECT_NE(gstage_lookup(root, 0x80400000, &sz), NULL);
	EXPECT_EQ(sz, SZ_4K);
	EXPECT_EQ(gstage_lookup(root, 0x80401000, &sz), NULL);
	EXPECT_EQ(nr_pages, 3);			/* L1, L0 below it twice */
	EXPECT_EQ(gstage_translate(root, 0x801ff123), 0x3001ff123);
	EXPECT_EQ(gstage_translate(root, 0x80345678), 0x300345678);
	EXPECT_EQ(gstage_translate(root, 0x80400fff), 0x300400fff);
	root_free(root);
}

/* gpa 2 MiB aligned but hpa not: no 2 MiB leaf may be used */
TEST(gstage_map_misaligned_hpa_uses_4k)
{
	uint64_t root = root_new(), sz = 0;

	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100001000, SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_NE(gstage_lookup(root, 0x80000000, &sz), NULL);
	EXPECT_EQ(sz, SZ_4K);
	EXPECT_NE(gstage_lookup(root, 0x801ff000, &sz), NULL);
	EXPECT_EQ(sz, SZ_4K);
	EXPECT_EQ(gstage_translate(root, 0x801ff008), 0x100200008);
	EXPECT_EQ(nr_pages, 2);
	root_free(root);
}

TEST(gstage_translate_inside_outside)
{
	uint64_t root = root_new();

	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, 4 * SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_EQ(gstage_translate(root, 0x80000000), 0x100000000);
	EXPECT_EQ(gstage_translate(root, 0x80012345), 0x100012345);
	EXPECT_EQ(gstage_translate(root, 0x807fffff), 0x1007fffff);
	EXPECT_EQ(gstage_translate(root, 0x80800000), 0);	/* just past the end */
	EXPECT_EQ(gstage_translate(root, 0x7fffffff), 0);	/* just before */
	EXPECT_EQ(gstage_translate(root, 0), 0);
	EXPECT_EQ(gstage_translate(root, 0xc0000000), 0);	/* other root entry */
	EXPECT_EQ(gstage_translate(root, 1UL << 41), 0);	/* beyond Sv39x4 */
	EXPECT_EQ(gstage_translate(root, (1UL << 41) + 0x80000000), 0);	/* aliases idx 2 */
	EXPECT_EQ(gstage_lookup(root, ~0UL, NULL), NULL);
	root_free(root);
}

/* The x4 root has 2048 entries: gpa bits 40:39 select its upper quarters. */
TEST(gstage_map_top_of_41bit_space)
{
	uint64_t root = root_new(), *rt = (uint64_t *)(uintptr_t)root, top = (1UL << 41) - SZ_4K;
	uint64_t sz = 0;

	EXPECT_EQ(gstage_map(root, top, 0x80000000, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_EQ(rt[0x7ff] & PTE_LOW_BITS, PTE_V);
	EXPECT_EQ(rt[0x1ff], 0);	/* no 9-bit truncation of the root index */
	EXPECT_EQ(rt[0x3ff], 0);
	EXPECT_EQ(gstage_translate(root, top + 0x10), 0x80000010);
	EXPECT_NE(gstage_lookup(root, top, &sz), NULL);
	EXPECT_EQ(sz, SZ_4K);
	EXPECT_EQ(gstage_translate(root, top - SZ_4K), 0);
	/* 1 TiB: root index 1024 */
	EXPECT_EQ(gstage_map(root, 1UL << 40, 0x90000000, SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_EQ(rt[1024] & PTE_LOW_BITS, PTE_V);
	EXPECT_EQ(rt[0], 0);
	EXPECT_EQ(gstage_translate(root, (1UL << 40) + 0x1234), 0x90001234);
	root_free(root);
}

TEST(gstage_prot_bits)
{
	uint64_t root = root_new(), *pte;

	EXPECT_EQ(gstage_map(root, 0x1000, 0x5000, SZ_4K, PTE_R, test_alloc, NULL), 0);
	EXPECT_EQ(gstage_map(root, 0x2000, 0x6000, SZ_4K, PTE_X, test_alloc, NULL), 0);
	EXPECT_EQ(gstage_map(root, 0x3000, 0x7000, SZ_4K, PTE_R | PTE_X, test_alloc, NULL), 0);
	EXPECT_EQ(gstage_map(root, 0x4000, 0x8000, SZ_4K, PTE_R | PTE_W, test_alloc, NULL), 0);
	pte = gstage_lookup(root, 0x1000, NULL);
	EXPECT_EQ(pte ? *pte : 0, (5UL << 10) | PTE_V | PTE_R | PTE_U | PTE_A | PTE_D);
	pte = gstage_lookup(root, 0x2000, NULL);
	EXPECT_EQ(pte ? *pte : 0, (6UL << 10) | PTE_V | PTE_X | PTE_U | PTE_A | PTE_D);
	pte = gstage_lookup(root, 0x3000, NULL);
	EXPECT_EQ(pte ? *pte : 0, (7UL << 10) | PTE_V | PTE_R | PTE_X | PTE_U | PTE_A | PTE_D);
	pte = gstage_lookup(root, 0x4000, NULL);
	EXPECT_EQ(pte ? *pte : 0, (8UL << 10) | PTE_V | PTE_R | PTE_W | PTE_U | PTE_A | PTE_D);
	/* never G, never anything above the PPN */
	EXPECT_EQ(pte ? *pte & (PTE_G | (0x3ffUL << 54)) : 1, 0);
	root_free(root);
}

TEST(gstage_refuses_overlap)
{
	uint64_t root = root_new(), *pte, before;

	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	pte = gstage_lookup(root, 0x80000000, NULL);
	before = pte ? *pte : 0;
	/* a 4K page inside a 2 MiB leaf */
	EXPECT_EQ(gstage_map(root, 0x80001000, 0x200000000, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_EEXIST);
	/* the same 2 MiB again, elsewhere in host memory */
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x200000000, SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_EEXIST);
	EXPECT_EQ(pte ? *pte : 0, before);
	EXPECT_EQ(gstage_translate(root, 0x80001000), 0x100001000);

	/* a 2 MiB leaf over a level-0 table */
	EXPECT_EQ(gstage_map(root, 0x80205000, 0x300005000, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_EQ(gstage_map(root, 0x80200000, 0x300000000, SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_EEXIST);
	EXPECT_EQ(gstage_translate(root, 0x80200000), 0);
	EXPECT_EQ(gstage_translate(root, 0x80205000), 0x300005000);
	/* the same 4K page twice */
	EXPECT_EQ(gstage_map(root, 0x80205000, 0x400005000, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_EEXIST);
	EXPECT_EQ(gstage_translate(root, 0x80205000), 0x300005000);
	/* neighbours are fine */
	EXPECT_EQ(gstage_map(root, 0x80204000, 0x300004000, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_EQ(gstage_map(root, 0x80400000, 0x300400000, SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	root_free(root);
}

TEST(gstage_bad_args)
{
	uint64_t root = root_new();

	/* unaligned gpa, hpa, size; empty */
	EXPECT_EQ(gstage_map(root, 0x80000800, 0x100000000, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_EINVAL);
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000010, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_EINVAL);
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, 0x1800, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_EINVAL);
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, 0, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_EINVAL);
	/* no permission, W only, W+X without R (reserved encodings), non-RWX bits */
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_4K, 0, test_alloc, NULL), -HYP_EINVAL);
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_4K, PTE_W, test_alloc, NULL), -HYP_EINVAL);
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_4K, PTE_W | PTE_X, test_alloc, NULL),
		  -HYP_EINVAL);
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_4K, PTE_R | PTE_U, test_alloc, NULL),
		  -HYP_EINVAL);
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_4K, PTE_R | PTE_V, test_alloc, NULL),
		  -HYP_EINVAL);
	/* beyond the 41-bit guest physical space, or wrapping */
	EXPECT_EQ(gstage_map(root, 1UL << 41, 0x100000000, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_ERANGE);
	EXPECT_EQ(gstage_map(root, (1UL << 41) - SZ_4K, 0x100000000, 2 * SZ_4K, GSTAGE_PROT_RAM,
			     test_alloc, NULL), -HYP_ERANGE);
	EXPECT_EQ(gstage_map(root, ~0UL - 0xfff, 0x100000000, 2 * SZ_4K, GSTAGE_PROT_RAM,
			     test_alloc, NULL), -HYP_ERANGE);
	/* nothing was allocated or mapped */
	EXPECT_EQ(nr_pages, 0);
	for (unsigned int i = 0; i < 2048; i++)
		EXPECT_EQ(((uint64_t *)(uintptr_t)root)[i], 0);
	root_free(root);
}

TEST(gstage_alloc_failure)
{
	uint64_t root = root_new();

	alloc_budget = 0;
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_ENOMEM);
	alloc_budget = 1;	/* the level-1 table, then no level-0 table */
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL),
		  -HYP_ENOMEM);
	EXPECT_EQ(gstage_translate(root, 0x80000000), 0);
	alloc_budget = -1;
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_4K, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_EQ(gstage_translate(root, 0x80000000), 0x100000000);
	EXPECT_EQ(nr_pages, 2);
	root_free(root);
}

TEST(gstage_hgatp_encoding)
{
	unsigned long h = gstage_hgatp(0x80204000, 5);

	EXPECT_EQ(h >> 60, 8);				/* Sv39x4 */
	EXPECT_EQ((h >> 44) & 0x3fff, 5);		/* VMID */
	EXPECT_EQ(h & 0xfffffffffffUL, 0x80204);	/* PPN */
	EXPECT_EQ((h >> 58) & 3, 0);			/* WPRI */
	EXPECT_EQ(h, 0x8000500000080204UL);
	EXPECT_EQ(gstage_hgatp(0x80204000, 0x3fff), 0x83fff00000080204UL);
	EXPECT_EQ(gstage_hgatp(0x80204000, 0x4001), 0x8000100000080204UL);	/* 14-bit VMID */
	EXPECT_EQ(gstage_hgatp(0, 0), 0x8000000000000000UL);
	/* a PPN wider than 44 bits cannot leak into the VMID */
	EXPECT_EQ(gstage_hgatp(1UL << 57, 0), 0x8000000000000000UL);
}

/* A vCPU's IMSIC page: its slot made once, then pointed at guest files and
 * cleared without allocating (docs/design-aia.md 3.5). */
TEST(gstage_leaf_slot_makes_the_tables_once)
{
	uint64_t root = root_new(), *rt = (uint64_t *)(uintptr_t)root, *slot, *slot2, *l0, sz = 0;

	slot = gstage_leaf_slot(root, 0x28000000, test_alloc, NULL);
	EXPECT_NE(slot, NULL);
	EXPECT_EQ(nr_pages, 2);			/* level-1 and level-0 tables */
	/* root index 0, level-1 index 0x140, level-0 index 0 */
	EXPECT_EQ(rt[0] & PTE_LOW_BITS, PTE_V);
	l0 = table_of(table_of(rt[0])[0x140]);
	EXPECT_EQ(slot, &l0[0]);
	EXPECT_EQ(*slot, 0);			/* left invalid */
	EXPECT_EQ(gstage_lookup(root, 0x28000000, &sz), NULL);
	/* the next vCPU's page shares the tables */
	slot2 = gstage_leaf_slot(root, 0x28001000, test_alloc, NULL);
	EXPECT_EQ(slot2, &l0[1]);
	EXPECT_EQ(nr_pages, 2);
	/* the same page again: refused while it is mapped, as gstage_map() would */
	gstage_leaf_set(slot, 0x28005000, GSTAGE_PROT_DEVICE);
	EXPECT_EQ(gstage_leaf_slot(root, 0x28000000, test_alloc, NULL), NULL);
	gstage_leaf_clear(slot);
	EXPECT_EQ(gstage_leaf_slot(root, 0x28000000, test_alloc, NULL), slot);
	/* gstage_map() sees the slot as the mapping it is */
	gstage_leaf_set(slot2, 0x28006000, GSTAGE_PROT_DEVICE);
	EXPECT_EQ(gstage_map(root, 0x28001000, 0x1000, SZ_4K, PTE_R, test_alloc, NULL), -HYP_EEXIST);
	EXPECT_EQ(nr_pages, 2);
	root_free(root);
}

TEST(gstage_leaf_set_and_clear)
{
	uint64_t root = root_new(), *slot, sz = 0;
	int budget;

	slot = gstage_leaf_slot(root, 0x28003000, test_alloc, NULL);
	EXPECT_NE(slot, NULL);
	budget = (int)nr_pages;
	alloc_budget = 0;			/* nothing below may allocate */
	gstage_leaf_set(slot, 0x28006000, GSTAGE_PROT_DEVICE);
	EXPECT_EQ(*slot, (0x28006UL << 10) | PTE_V | PTE_R | PTE_W | PTE_U | PTE_A | PTE_D);
	EXPECT_EQ(gstage_lookup(root, 0x28003000, &sz), slot);
	EXPECT_EQ(sz, SZ_4K);
	EXPECT_EQ(gstage_translate(root, 0x28003004), 0x28006004);
	EXPECT_EQ(gstage_translate(root, 0x28004000), 0);	/* the neighbour stays unmapped */
	/* moved to another file: one store, the new target */
	gstage_leaf_set(slot, 0x2800a000, GSTAGE_PROT_DEVICE);
	EXPECT_EQ(gstage_translate(root, 0x28003000), 0x2800a000);
	/* only R, W, X of @prot count */
	gstage_leaf_set(slot, 0x2800a000, PTE_R | PTE_W | PTE_G | (1UL << 63));
	EXPECT_EQ(*slot, (0x2800aUL << 10) | PTE_V | PTE_R | PTE_W | PTE_U | PTE_A | PTE_D);
	gstage_leaf_clear(slot);
	EXPECT_EQ(*slot, 0);
	EXPECT_EQ(gstage_lookup(root, 0x28003000, NULL), NULL);
	EXPECT_EQ(gstage_translate(root, 0x28003000), 0);
	EXPECT_EQ((int)nr_pages, budget);
	root_free(root);
}

TEST(gstage_leaf_slot_refusals)
{
	uint64_t root = root_new();

	/* unaligned, beyond the guest physical space */
	EXPECT_EQ(gstage_leaf_slot(root, 0x28000800, test_alloc, NULL), NULL);
	EXPECT_EQ(gstage_leaf_slot(root, 1UL << 41, test_alloc, NULL), NULL);
	EXPECT_EQ(gstage_leaf_slot(root, ~0UL & ~0xfffUL, test_alloc, NULL), NULL);
	EXPECT_EQ(nr_pages, 0);
	/* inside a 2 MiB leaf */
	EXPECT_EQ(gstage_map(root, 0x80000000, 0x100000000, SZ_2M, GSTAGE_PROT_RAM, test_alloc, NULL), 0);
	EXPECT_EQ(gstage_leaf_slot(root, 0x80001000, test_alloc, NULL), NULL);
	EXPECT_EQ(gstage_translate(root, 0x80001000), 0x100001000);
	/* a 4 KiB page already mapped */
	EXPECT_EQ(gstage_map(root, 0x90000000, 0x100000000, SZ_4K, PTE_R, test_alloc, NULL), 0);
	EXPECT_EQ(gstage_leaf_slot(root, 0x90000000, test_alloc, NULL), NULL);
	/* no table page to be had, at either level */
	alloc_budget = 0;
	EXPECT_EQ(gstage_leaf_slot(root, 0xc0000000, test_alloc, NULL), NULL);
	alloc_budget = 1;
	EXPECT_EQ(gstage_leaf_slot(root, 0xc0000000, test_alloc, NULL), NULL);
	alloc_budget = -1;
	EXPECT_NE(gstage_leaf_slot(root, 0xc0000000, test_alloc, NULL), NULL);
	root_free(root);
}
