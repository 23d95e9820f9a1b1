/* SPDX-License-Identifier: MIT */
/* G-stage table builder and walker (Priv spec, H extension: Sv39x4). */
#include <arch/riscv/encoding.h>
#include <errno.h>
#include <gstage.h>

#define PTE_TABLE_BITS	(PTE_V)
#define LEAF_BITS	(PTE_V | PTE_U | PTE_A | PTE_D)

static unsigned int level_shift(int level)
{
	return PAGE_SHIFT + 9 * (unsigned int)level;
}

static unsigned long pte_index(gpa_t gpa, int level)
{
	/* the root level of an x4 scheme has 2 extra index bits */
	unsigned long mask = level == GSTAGE_LEVELS - 1 ? 0x7ff : 0x1ff;

	return (gpa >> level_shift(level)) & mask;
}

static uint64_t *pte_table(uint64_t pte)
{
	return (uint64_t *)(uintptr_t)((pte >> PTE_PPN_SHIFT) << PAGE_SHIFT);
}

static uint64_t make_pte(uint64_t pa, unsigned long bits)
{
	return ((pa >> PAGE_SHIFT) << PTE_PPN_SHIFT) | bits;
}

static bool pte_is_leaf(uint64_t pte)
{
	return pte & (PTE_R | PTE_W | PTE_X);
}

/* The entry for @gpa at @leaf_level, making the tables above it from @alloc;
 * NULL with *@rc set if a table cannot be had or a larger leaf covers @gpa. */
static uint64_t *leaf_entry(uint64_t root, gpa_t gpa, int leaf_level, gstage_alloc_fn alloc,
			    void *ctx, int *rc)
{
	uint64_t *table = (uint64_t *)(uintptr_t)root;

	for (int level = GSTAGE_LEVELS - 1; level > leaf_level; level--) {
		uint64_t *pte = &table[pte_index(gpa, level)];

		if (!(*pte & PTE_V)) {
			uint64_t page = alloc(ctx);

			if (!page) {
				*rc = -HYP_ENOMEM;
				return NULL;
			}
			*pte = make_pte(page, PTE_TABLE_BITS);
		} else if (pte_is_leaf(*pte)) {
			*rc = -HYP_EEXIST;	/* already covered by a larger leaf */
			return NULL;
		}
		table = pte_table(*pte);
	}
	return &table[pte_index(gpa, leaf_level)];
}

static int map_one(uint64_t root, gpa_t gpa, hpa_t hpa, int leaf_level, unsigned long prot,
		   gstage_alloc_fn alloc, void *ctx)
{
	int rc = 0;
	uint64_t *pte = leaf_entry(root, gpa, leaf_level, alloc, ctx, &rc);

	if (!pte)
		return rc;
	if (*pte & PTE_V)
		return -HYP_EEXIST;
	*pte = make_pte(hpa, LEAF_BITS | prot);
	return 0;
}

int gstage_map(uint64_t root, gpa_t gpa, hpa_t hpa, uint64_t size, unsigned long prot,
	       gstage_alloc_fn alloc, void *ctx)
{
	if (((gpa | hpa | size) & (PAGE_SIZE - 1)) || !size || !(prot & (PTE_R | PTE_X)) ||
	    (prot & ~(unsigned long)(PTE_R | PTE_W | PTE_X)) || (prot & (PTE_R | PTE_W)) == PTE_W)
		return -HYP_EINVAL;	/* W without R is reserved in G-stage too */
	if (gpa + size < gpa || gpa + size > (1UL << GSTAGE_GPA_BITS))
		return -HYP_ERANGE;
	while (size) {
		bool huge = !((gpa | hpa) & (SZ_2M - 1)) && size >= SZ_2M;
		uint64_t step = huge ? SZ_2M : PAGE_SIZE;
		int rc = map_one(root, gpa, hpa, huge ? 1 : 0, prot, alloc, ctx);

		if (rc)
			return rc;
		gpa += step;
		hpa += step;
		size -= step;
	}
	return 0;
}

uint64_t *gstage_lookup(uint64_t root, gpa_t gpa, uint64_t *level_size)
{
	uint64_t *table = (uint64_t *)(uintptr_t)root;

	if (gpa >= (1UL << GSTAGE_GPA_BITS))
		return NULL;
	for (int level = GSTAGE_LEVELS - 1; level >= 0; level--) {
		uint64_t *pte = &table[pte_index(gpa, level)];

		if (!(*pte & PTE_V))
			return NULL;
		if (pte_is_leaf(*pte)) {
			if (level_size)
				*level_size = 1UL << level_shift(level);
			return pte;
		}
		table = pte_table(*pte);
	}
	return NULL;
}

hpa_t gstage_translate(uint64_t root, gpa_t gpa)
{
	uint64_t size;
	uint64_t *pte = gstage_lookup(root, gpa, &size);

	if (!pte)
		return 0;
	return (uint64_t)(uintptr_t)pte_table(*pte) + (gpa & (size - 1));
}

uint64_t *gstage_leaf_slot(uint64_t root, gpa_t gpa, gstage_alloc_fn alloc, void *ctx)
{
	int rc;
	uint64_t *pte;

	if ((gpa & (PAGE_SIZE - 1)) || gpa >= (1UL << GSTAGE_GPA_BITS))
		return NULL;
	pte = leaf_entry(root, gpa, 0, alloc, ctx, &rc);
	return pte && !(*pte & PTE_V) ? pte : NULL;
}

void gstage_leaf_set(uint64_t *slot, hpa_t hpa, unsigned long prot)
{
	prot &= PTE_R | PTE_W | PTE_X;
	__atomic_store_n(slot, make_pte(hpa, LEAF_BITS | prot), __ATOMIC_RELEASE);
}

void gstage_leaf_clear(uint64_t *slot)
{
	__atomic_store_n(slot, 0, __ATOMIC_RELEASE);
}

unsigned long gstage_hgatp(uint64_t root, unsigned int vmid)
{
	return (HGATP_MODE_SV39X4 << HGATP_MODE_SHIFT) |
	       (((unsigned long)vmid & HGATP_VMID_MASK) << HGATP_VMID_SHIFT) |
	       ((root >> PAGE_SHIFT) & HGATP_PPN_MASK);
}

uint64_t *gstage_pmd(uint64_t root, gpa_t gpa)
{
	uint64_t *top = (uint64_t *)(uintptr_t)root;
	uint64_t pte;

	if (gpa >= (1UL << GSTAGE_GPA_BITS))
		return NULL;
	pte = top[pte_index(gpa, GSTAGE_LEVELS - 1)];
	if (!(pte & PTE_V) || pte_is_leaf(pte))
		return NULL;
	return &pte_table(pte)[pte_index(gpa, 1)];
}

bool gstage_pmd_is_table(uint64_t pmd)
{
	return (pmd & PTE_V) && !pte_is_leaf(pmd);
}

hpa_t gstage_pmd_table(uint64_t pmd)
{
	return (hpa_t)(uintptr_t)pte_table(pmd);
}

/* Fill @table with the 512 4 KiB leaves of [hpa, hpa + 2 MiB), then point
 * *@pmd at it in one store: a walker sees the old entry or the full table. */
static void install_4k_table(uint64_t *pmd, hpa_t table, hpa_t hpa, unsigned long prot)
{
	uint64_t *t = (uint64_t *)(uintptr_t)table;

	for (unsigned int i = 0; i < 512; i++)
		t[i] = make_pte(hpa + (uint64_t)i * PAGE_SIZE, LEAF_BITS | prot);
	__atomic_store_n(pmd, make_pte(table, PTE_TABLE_BITS), __ATOMIC_RELEASE);
}

void gstage_split_2m(uint64_t *pmd, hpa_t table, unsigned long prot)
{
	install_4k_table(pmd, table, (hpa_t)(uintptr_t)pte_table(*pmd), prot);
}

int gstage_map_2m_split(uint64_t root, gpa_t gpa, hpa_t hpa, hpa_t table, unsigned long prot,
			gstage_alloc_fn alloc, void *ctx)
{
	uint64_t *top = (uint64_t *)(uintptr_t)root, *pte, *pmd;

	if (((gpa | hpa) & (SZ_2M - 1)) || (table & (PAGE_SIZE - 1)) ||
	    !(prot & (PTE_R | PTE_X)) || (prot & ~(unsigned long)(PTE_R | PTE_W | PTE_X)) ||
	    (prot & (PTE_R | PTE_W)) == PTE_W)
		return -HYP_EINVAL;
	if (gpa >= (1UL << GSTAGE_GPA_BITS))
		return -HYP_ERANGE;
	pte = &top[pte_index(gpa, GSTAGE_LEVELS - 1)];
	if (!(*pte & PTE_V)) {
		uint64_t page = alloc(ctx);

		if (!page)
			return -HYP_ENOMEM;
		*pte = make_pte(page, PTE_TABLE_BITS);
	} else if (pte_is_leaf(*pte)) {
		return -HYP_EEXIST;
	}
	pmd = &pte_table(*pte)[pte_index(gpa, 1)];
	if (*pmd & PTE_V)
		return -HYP_EEXIST;
	install_4k_table(pmd, table, hpa, prot);
	return 0;
}

void gstage_merge_2m(uint64_t *pmd, unsigned long prot)
{
	uint64_t *t = (uint64_t *)(uintptr_t)pte_table(*pmd);

	__atomic_store_n(pmd, make_pte((hpa_t)(uintptr_t)pte_table(t[0]), LEAF_BITS | prot),
			 __ATOMIC_RELEASE);
}
