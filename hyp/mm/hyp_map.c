/* SPDX-License-Identifier: MIT */
/* The hypervisor's own page tables (hyp_map.h): an identity map with W^X.
 * The builder is plain code over a buffer of table pages (the host unit test
 * walks what it writes); hyp_map_enable() runs it over .bss on the boot hart
 * and switches satp. Leaves are global and have A (and D where writable)
 * set: with Svade a hart that does not update them would fault. */
#include <string.h>
#include <arch/riscv/csr.h>
#include <arch/riscv/encoding.h>
#include <errno.h>
#include <hart.h>
#include <hyp_map.h>
#include <log.h>

#define LEVEL_SHIFT(l)	(PAGE_SHIFT + 9 * (l))
#define LEAF_MAX_LEVEL	2	/* 1 GiB pages at most */
#define PTE_LEAF_BITS	(PTE_R | PTE_W | PTE_X)
#define PTE_FLAGS	0x3ffUL

uint64_t hyp_map_pte_bits(enum hyp_map_perm perm)
{
	uint64_t common = PTE_V | PTE_G | PTE_A;

	switch (perm) {
	case HYP_MAP_RX: return common | PTE_R | PTE_X;
	case HYP_MAP_RO: return common | PTE_R;
	case HYP_MAP_RW: return common | PTE_R | PTE_W | PTE_D;
	case HYP_MAP_SS: return common | PTE_W | PTE_D;	/* Zicfiss: R=0 W=1 X=0 */
	}
	return 0;
}

static uint64_t *new_table(struct hyp_map_tables *t)
{
	if (t->used == t->nr_pages)
		return NULL;
	return t->pages[t->used++];	/* zeroed by the caller */
}

static uint64_t *table_of(uint64_t pte)
{
	return (uint64_t *)(uintptr_t)((pte >> PTE_PPN_SHIFT) << PAGE_SHIFT);
}

/* Map [va, end) of @table's span at @level with leaf @bits: the biggest
 * page that fits each piece. A piece already mapped by a leaf with the same
 * bits is left as it is (regions may overlap where they agree); different
 * bits on one page is a layout error. */
static int map_level(struct hyp_map_tables *t, uint64_t *table, unsigned int level,
		     uint64_t va, uint64_t end, uint64_t bits)
{
	uint64_t size = 1ULL << LEVEL_SHIFT(level);

	for (uint64_t a = va, next; a < end; a = next) {
		uint64_t *pte = &table[(a >> LEVEL_SHIFT(level)) & 511];
		bool whole;
		int rc;

		next = (a & ~(size - 1)) + size;
		if (next > end || next < a)
			next = end;
		whole = !(a & (size - 1)) && next - a == size;
		if ((*pte & PTE_V) && (*pte & PTE_LEAF_BITS)) {
			if ((*pte & PTE_FLAGS) != bits)
				return -HYP_EINVAL;
			continue;
		}
		if (!*pte && whole && level <= LEAF_MAX_LEVEL) {
			*pte = ((a >> PAGE_SHIFT) << PTE_PPN_SHIFT) | bits;
			t->leaves[level]++;
			continue;
		}
		if (!*pte) {
			uint64_t *sub = new_table(t);

			if (!sub)
				return -HYP_ENOMEM;
			*pte = (((uint64_t)(uintptr_t)sub >> PAGE_SHIFT) << PTE_PPN_SHIFT) | PTE_V;
		}
		rc = map_level(t, table_of(*pte), level - 1, a, next, bits);
		if (rc)
			return rc;
	}
	return 0;
}

static int map(struct hyp_map_tables *t, uint64_t start, uint64_t end, enum hyp_map_perm perm)
{
	uint64_t limit = 1ULL << (LEVEL_SHIFT(t->levels) - 1);	/* identity: bit 38 / 47 clear */

	if ((start | end) & (PAGE_SIZE - 1))
		return -HYP_EINVAL;
	if (end > limit)
		return -HYP_ERANGE;
	if (start >= end)
		return 0;
	return map_level(t, t->pages[0], t->levels - 1, start, end, hyp_map_pte_bits(perm));
}

/* [start, end) rw- but for the pages in @holes (sorted, page-aligned) */
static int map_around(struct hyp_map_tables *t, uint64_t start, uint64_t end,
		      const struct mm_range *holes, unsigned int nr)
{
	int rc = 0;

	for (unsigned int i = 0; i < nr && !rc; i++) {
		uint64_t h = holes[i].base, h_end = holes[i].base + holes[i].size;

		if (h_end <= start || h >= end)
			continue;
		if (h > start)
			rc = map(t, start, h, HYP_MAP_RW);
		start = h_end;
	}
	return rc ? rc : map(t, start, end, HYP_MAP_RW);
}

static int map_image(struct hyp_map_tables *t, const struct hyp_map_layout *l)
{
	struct mm_range holes[HART_MAX + 1];
	unsigned int nr = 0;
	int rc;

	for (unsigned int i = 0; i < l->nr_stack_guards && i < HART_MAX; i++)
		holes[nr++] = (struct mm_range){ l->stack_guard[i], PAGE_SIZE };
	holes[nr++] = (struct mm_range){ l->ss_start, l->ss_end - l->ss_start };
	for (unsigned int i = 1; i < nr; i++)		/* insertion sort: a handful */
		for (unsigned int j = i; j && holes[j].base < holes[j - 1].base; j--) {
			struct mm_range h = holes[j];

			holes[j] = holes[j - 1];
			holes[j - 1] = h;
		}
	rc = map(t, l->text_start, l->text_end, HYP_MAP_RX);
	if (!rc)
		rc = map(t, l->text_end, l->rodata_end, HYP_MAP_RO);
	if (!rc)
		rc = map_around(t, l->rodata_end, l->image_end, holes, nr);
	/* the odd pages of .shadow_stacks: the even ones are their guards */
	for (uint64_t p = l->ss_start + PAGE_SIZE; !rc && p < l->ss_end; p += 2 * PAGE_SIZE)
		rc = map(t, p, p + PAGE_SIZE, HYP_MAP_SS);
	return rc;
}

static bool layout_ok(const struct hyp_map_layout *l)
{
	uint64_t any = l->text_start | l->text_end | l->rodata_end | l->image_end |
		       l->ss_start | l->ss_end;

	for (unsigned int i = 0; i < l->nr_stack_guards; i++)
		any |= l->stack_guard[i];
	return !(any & (PAGE_SIZE - 1)) && l->text_start < l->text_end &&
	       l->text_end <= l->rodata_end && l->rodata_end <= l->ss_start &&
	       l->ss_start <= l->ss_end && l->ss_end <= l->image_end &&
	       l->nr_stack_guards <= HART_MAX && l->nr_ram <= HYP_MAP_MAX_RAM &&
	       l->nr_dev <= HYP_MAP_MAX_DEV;
}

int hyp_map_build(struct hyp_map_tables *t, const struct hyp_map_layout *l)
{
	int rc;

	if (!layout_ok(l) || (t->levels != 3 && t->levels != 4))
		return -HYP_EINVAL;
	if (!new_table(t))
		return -HYP_ENOMEM;
	rc = map_image(t, l);
	/* RAM: whole pages; below the image (the firmware) is left out */
	for (unsigned int i = 0; i < l->nr_ram && !rc; i++) {
		uint64_t base = (l->ram[i].base + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
		uint64_t end = (l->ram[i].base + l->ram[i].size) & ~(PAGE_SIZE - 1);

		if (l->text_start >= l->ram[i].base && l->text_start < end)
			base = l->image_end;
		rc = map(t, base, end, HYP_MAP_RW);
	}
	/* device registers: whole pages around each region */
	for (unsigned int i = 0; i < l->nr_dev && !rc; i++) {
		uint64_t base = l->dev[i].base & ~(PAGE_SIZE - 1);
		uint64_t end = (l->dev[i].base + l->dev[i].size + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);

		rc = map(t, base, end, HYP_MAP_RW);
	}
	return rc;
}

uint64_t hyp_map_root(const struct hyp_map_tables *t)
{
	return (uint64_t)(uintptr_t)t->pages[0];
}

#ifndef HOST_TEST
/* Page 2i+1 is hart i's shadow stack, the even pages guards (hyp.ld). */
char hart_shadow_stacks[HYP_SS_PAGES][4096]
	__attribute__((section(".shadow_stacks"), aligned(4096)));
unsigned long hyp_map_satp;
static uint64_t table_pages[HYP_MAP_TABLE_PAGES][512] __attribute__((aligned(4096)));

extern char __text_start[], __text_end[], __rodata_end[], __image_end[];
extern char __shadow_stacks_start[], __shadow_stacks_end[];

void hyp_map_image_layout(struct hyp_map_layout *l)
{
	l->text_start = (uintptr_t)__text_start;
	l->text_end = (uintptr_t)__text_end;
	l->rodata_end = (uintptr_t)__rodata_end;
	l->image_end = (uintptr_t)__image_end;
	l->ss_start = (uintptr_t)__shadow_stacks_start;
	l->ss_end = (uintptr_t)__shadow_stacks_end;
	for (unsigned int i = 0; i < HART_MAX; i++)
		l->stack_guard[i] = (uintptr_t)hart_stacks[i];
	l->nr_stack_guards = HART_MAX;
}

/* Build for @levels and switch: true if the hart kept the mode (satp is
 * WARL: a mode it lacks leaves satp as it was, Bare). */
static bool try_mode(const struct hyp_map_layout *l, unsigned int levels, int *rc)
{
	unsigned long mode = levels == 4 ? ATP_MODE_SV48 : ATP_MODE_SV39;
	struct hyp_map_tables t = {
		.pages = table_pages, .nr_pages = HYP_MAP_TABLE_PAGES, .levels = levels,
	};
	unsigned long satp;

	memset(table_pages, 0, sizeof(table_pages));
	*rc = hyp_map_build(&t, l);
	if (*rc)
		return false;
	satp = (mode << ATP_MODE_SHIFT) | (hyp_map_root(&t) >> PAGE_SHIFT);
	asm volatile("sfence.vma" ::: "memory");
	csr_write(CSR_SATP, satp);
	asm volatile("sfence.vma" ::: "memory");
	if (csr_read(CSR_SATP) != satp)
		return false;
	hyp_map_satp = satp;
	pr_info("own address space: Sv%u, text r-x, rodata r--, data rw-, guest RAM rw-, "
		"devices rw-; %u shadow-stack pages with guard pages; %u table pages, "
		"leaves %u x 1 GiB, %u x 2 MiB, %u x 4 KiB", levels == 4 ? 48 : 39, HART_MAX,
		t.used, t.leaves[2], t.leaves[1], t.leaves[0]);
	return true;
}

void hyp_map_enable(const struct hyp_map_layout *l)
{
	int rc;

	if (!try_mode(l, 4, &rc) && !rc && !try_mode(l, 3, &rc)) {
		if (rc == -HYP_ERANGE)
			hyp_panic("own address space: the hart has Sv39 only, which cannot "
				  "identity-map the host's memory or devices above 256 GiB "
				  "(needs Sv48)");
		if (!rc)
			hyp_panic("own address space: the hart takes neither Sv48 nor Sv39");
	}
	if (rc)
		hyp_panic("own address space: cannot build the map (error %d: %s)", rc,
			  rc == -HYP_ENOMEM ? "more tables than HYP_MAP_TABLE_PAGES" :
			  "the layout asks one page for two permissions");
	for (unsigned int i = 0; i < HART_MAX; i++)
		harts[i].ss_top = (unsigned long)hart_shadow_stacks[2 * i + 1] + PAGE_SIZE;
}
#endif
