/* SPDX-License-Identifier: MIT */
/* hyp/mm/hyp_map.c: the hypervisor's own identity map, built for QEMU virt's
 * layout into a buffer and walked as the hart would: no leaf both writable
 * and executable, each part of the image with its permissions, the guard
 * pages, the shadow-stack pages and the firmware as they must be. */
#include <stdlib.h>
#include <string.h>
#include <arch/riscv/encoding.h>
#include <errno.h>
#include <hyp_map.h>
#include "test.h"

#define KiB	0x400ULL
#define MiB	(KiB * KiB)
#define GiB	(MiB * KiB)
#define PTE_RWX	(PTE_R | PTE_W | PTE_X)

/* QEMU virt's, as carapace.elf links today: 512 MiB of RAM at 2 GiB, the
 * firmware in its first 2 MiB, device space below it, a 64-bit PCIe window */
#define RAM_BASE	0x80000000ULL
#define RAM_SIZE	(512 * MiB)
#define TEXT		0x80200000ULL
#define RODATA		0x80233000ULL
#define DATA		0x80247000ULL
#define STACKS		0x80444000ULL		/* 8 slots of a guard and 16 KiB */
#define SS		0x804d0000ULL
#define IMAGE_END	(SS + HYP_SS_PAGES * 4 * KiB)

static void virt_layout(struct hyp_map_layout *l, uint64_t mem64)
{
	memset(l, 0, sizeof(*l));
	l->text_start = TEXT;
	l->text_end = RODATA;
	l->rodata_end = DATA;
	l->ss_start = SS;
	l->ss_end = IMAGE_END;
	l->image_end = IMAGE_END;
	for (unsigned int i = 0; i < HART_MAX; i++)
		l->stack_guard[i] = STACKS + i * HART_STACK_SLOT;
	l->nr_stack_guards = HART_MAX;
	l->ram[l->nr_ram++] = (struct mm_range){ RAM_BASE, RAM_SIZE };
	l->dev[l->nr_dev++] = (struct mm_range){ 2 * MiB, RAM_BASE - 2 * MiB };
	l->dev[l->nr_dev++] = (struct mm_range){ 0x10000000, 0x100 };	/* the UART, again */
	l->dev[l->nr_dev++] = (struct mm_range){ mem64, 16 * GiB };
}

static struct hyp_map_tables tables(unsigned int levels, unsigned int nr_pages)
{
	struct hyp_map_tables t = { .nr_pages = nr_pages, .levels = levels };

	t.pages = aligned_alloc(4096, nr_pages * 4096ULL);
	memset(t.pages, 0, nr_pages * 4096ULL);
	return t;
}

/* The leaf @va resolves to (0: none), as the hart walks from the root; a
 * leaf must map @va to itself. */
static uint64_t walk(const struct hyp_map_tables *t, uint64_t va)
{
	uint64_t *table = (uint64_t *)(uintptr_t)hyp_map_root(t);

	for (int level = (int)t->levels - 1; level >= 0; level--) {
		unsigned int shift = 12 + 9 * level;
		uint64_t pte = table[(va >> shift) & 511];

		if (!(pte & PTE_V))
			return 0;
		if (pte & PTE_RWX) {
			uint64_t pa = ((pte >> PTE_PPN_SHIFT) << 12) | (va & ((1ULL << shift) - 1));

			EXPECT_EQ(pa, va);
			return pte;
		}
		table = (uint64_t *)(uintptr_t)((pte >> PTE_PPN_SHIFT) << 12);
	}
	return 0;
}

static uint64_t perm(const struct hyp_map_tables *t, uint64_t va)
{
	return walk(t, va) & (PTE_V | PTE_RWX);
}

/* Every leaf of every table: never W and X together, always A and G (and D
 * where writable), never U; a non-leaf has no other bit but V. */
static unsigned int check_leaves(uint64_t *table, int level)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < 512; i++) {
		uint64_t pte = table[i];

		if (!(pte & PTE_V))
			continue;
		if (!(pte & PTE_RWX)) {
			EXPECT_EQ(pte & 0x3ff, PTE_V);
			EXPECT_TRUE(level > 0);
			n += check_leaves((uint64_t *)(uintptr_t)((pte >> PTE_PPN_SHIFT) << 12),
					  level - 1);
			continue;
		}
		n++;
		EXPECT_FALSE((pte & PTE_W) && (pte & PTE_X));
		EXPECT_TRUE(pte & PTE_A);
		EXPECT_TRUE(pte & PTE_G);
		EXPECT_FALSE(pte & PTE_U);
		if (pte & PTE_W)
			EXPECT_TRUE(pte & PTE_D);
		EXPECT_TRUE(level <= 2);	/* no 512 GiB leaves */
	}
	return n;
}

static bool is_stack_guard(uint64_t pa)
{
	return pa >= STACKS && pa < STACKS + HART_MAX * HART_STACK_SLOT &&
	       (pa - STACKS) % HART_STACK_SLOT == 0;
}

static void check_virt(const struct hyp_map_tables *t)
{
	const uint64_t rx = PTE_V | PTE_R | PTE_X, ro = PTE_V | PTE_R;
	const uint64_t rw = PTE_V | PTE_R | PTE_W, ss = PTE_V | PTE_W;

	EXPECT_TRUE(check_leaves((uint64_t *)(uintptr_t)hyp_map_root(t), (int)t->levels - 1) > 0);
	/* the firmware and the NULL page: nothing */
	for (uint64_t pa = RAM_BASE; pa < TEXT; pa += 4 * KiB)
		EXPECT_EQ(walk(t, pa), 0);
	EXPECT_EQ(walk(t, 0), 0);
	EXPECT_EQ(walk(t, 2 * MiB - 4 * KiB), 0);
	/* the image, page by page */
	for (uint64_t pa = TEXT; pa < RODATA; pa += 4 * KiB)
		EXPECT_EQ(perm(t, pa), rx);
	for (uint64_t pa = RODATA; pa < DATA; pa += 4 * KiB)
		EXPECT_EQ(perm(t, pa), ro);
	for (uint64_t pa = DATA; pa < SS; pa += 4 * KiB)
		EXPECT_EQ(perm(t, pa), is_stack_guard(pa) ? 0 : rw);
	for (unsigned int i = 0; i < HYP_SS_PAGES; i++)
		EXPECT_EQ(perm(t, SS + i * 4 * KiB), i % 2 ? ss : 0);
	/* RAM after the image, to its end and no further */
	EXPECT_EQ(perm(t, IMAGE_END), rw);
	EXPECT_EQ(perm(t, RAM_BASE + RAM_SIZE - 4 * KiB), rw);
	EXPECT_EQ(walk(t, RAM_BASE + RAM_SIZE), 0);
	/* devices: rw-, never executable */
	EXPECT_EQ(perm(t, 2 * MiB), rw);
	EXPECT_EQ(perm(t, 0x0c000000), rw);		/* PLIC */
	EXPECT_EQ(perm(t, 0x10000000), rw);		/* UART */
	EXPECT_EQ(perm(t, RAM_BASE - 4 * KiB), rw);
}

TEST(hyp_map_sv48_virt_layout)
{
	struct hyp_map_tables t = tables(4, HYP_MAP_TABLE_PAGES);
	struct hyp_map_layout l;

	virt_layout(&l, 0x4000000000ULL);	/* bit 38: Sv48 only */
	EXPECT_EQ(hyp_map_build(&t, &l), 0);
	check_virt(&t);
	EXPECT_EQ(perm(&t, 0x4000000000ULL), PTE_V | PTE_R | PTE_W);
	EXPECT_EQ(perm(&t, 0x4000000000ULL + 16 * GiB - 4 * KiB), PTE_V | PTE_R | PTE_W);
	EXPECT_EQ(walk(&t, 0x4000000000ULL + 16 * GiB), 0);
	/* big pages where they fit: the window in 1 GiB ones, the device space
	 * and RAM away from the image in 2 MiB ones */
	EXPECT_EQ(t.leaves[2], 16 + 1);
	EXPECT_TRUE(t.leaves[1] > 500);
	EXPECT_TRUE(t.used <= 8);
	free(t.pages);
}

TEST(hyp_map_sv39_virt_layout)
{
	struct hyp_map_tables t = tables(3, HYP_MAP_TABLE_PAGES);
	struct hyp_map_layout l;

	virt_layout(&l, 0x400000000ULL);	/* 16 GiB: Sv39 can */
	EXPECT_EQ(hyp_map_build(&t, &l), 0);
	check_virt(&t);
	EXPECT_EQ(perm(&t, 0x400000000ULL), PTE_V | PTE_R | PTE_W);
	free(t.pages);
}

TEST(hyp_map_sv39_refuses_bit_38)
{
	struct hyp_map_tables t = tables(3, HYP_MAP_TABLE_PAGES);
	struct hyp_map_layout l;

	virt_layout(&l, 0x4000000000ULL);
	EXPECT_EQ(hyp_map_build(&t, &l), -HYP_ERANGE);
	free(t.pages);
}

TEST(hyp_map_refuses_a_device_over_text)
{
	struct hyp_map_tables t = tables(4, HYP_MAP_TABLE_PAGES);
	struct hyp_map_layout l;

	virt_layout(&l, 0x400000000ULL);
	l.dev[l.nr_dev++] = (struct mm_range){ TEXT + 8 * KiB, 4 * KiB };
	EXPECT_EQ(hyp_map_build(&t, &l), -HYP_EINVAL);
	free(t.pages);
}

TEST(hyp_map_refuses_an_unaligned_image)
{
	struct hyp_map_tables t = tables(4, HYP_MAP_TABLE_PAGES);
	struct hyp_map_layout l;

	virt_layout(&l, 0x400000000ULL);
	l.text_end += 16;
	EXPECT_EQ(hyp_map_build(&t, &l), -HYP_EINVAL);
	free(t.pages);
}

TEST(hyp_map_out_of_table_pages)
{
	struct hyp_map_tables t = tables(4, 3);
	struct hyp_map_layout l;

	virt_layout(&l, 0x400000000ULL);
	EXPECT_EQ(hyp_map_build(&t, &l), -HYP_ENOMEM);
	EXPECT_EQ(t.used, 3);
	free(t.pages);
}

TEST(hyp_map_pte_bits_are_wx_exclusive)
{
	EXPECT_EQ(hyp_map_pte_bits(HYP_MAP_RX) & PTE_RWX, PTE_R | PTE_X);
	EXPECT_EQ(hyp_map_pte_bits(HYP_MAP_RO) & PTE_RWX, PTE_R);
	EXPECT_EQ(hyp_map_pte_bits(HYP_MAP_RW) & PTE_RWX, PTE_R | PTE_W);
	EXPECT_EQ(hyp_map_pte_bits(HYP_MAP_SS) & PTE_RWX, PTE_W);	/* Zicfiss encoding */
}
