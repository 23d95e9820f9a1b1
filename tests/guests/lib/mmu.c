/* SPDX-License-Identifier: MIT */
/* Sv39 identity map of the payload's RAM gigabyte, with 4 KiB pages of chosen permissions. */
#include "mmu.h"

#define ENTRIES		512
#define GIGA		(1UL << 30)
#define MEGA2		(1UL << 21)
#define NR_L0		8
#define LEAF_BITS	(PTE_V | PTE_A | PTE_D)

typedef unsigned long pte_t;

static pte_t root[ENTRIES] __attribute__((aligned(PAGE_SIZE)));
static pte_t l1[ENTRIES] __attribute__((aligned(PAGE_SIZE)));
static pte_t l0[NR_L0][ENTRIES] __attribute__((aligned(PAGE_SIZE)));
static unsigned int l0_used;
static unsigned long giga_base;

static pte_t make_pte(unsigned long pa, unsigned long bits)
{
	return (pa >> PAGE_SHIFT) << PTE_PPN_SHIFT | bits;
}

static unsigned long pte_pa(pte_t pte)
{
	return (pte >> PTE_PPN_SHIFT) << PAGE_SHIFT;
}

static bool pte_is_leaf(pte_t pte)
{
	return (pte & PTE_V) && (pte & (PTE_R | PTE_W | PTE_X));
}

static void fence(void)
{
	__asm__ volatile("sfence.vma" ::: "memory");
}

void mmu_init(void)
{
	unsigned long i;

	giga_base = (unsigned long)_start & ~(GIGA - 1);
	memset(root, 0, sizeof(root));
	memset(l0, 0, sizeof(l0));
	l0_used = 0;
	for (i = 0; i < ENTRIES; i++)
		l1[i] = make_pte(giga_base + i * MEGA2, MMU_RWX | LEAF_BITS);
	root[(giga_base >> 30) & (ENTRIES - 1)] = make_pte((unsigned long)l1, PTE_V);
}

/* The 4 KiB-level table for the 2 MiB page at l1 index @i (split if needed). */
static pte_t *l0_table(unsigned long i)
{
	pte_t *t;
	unsigned long j;

	if (!pte_is_leaf(l1[i]))
		return (pte_t *)pte_pa(l1[i]);
	if (l0_used == NR_L0)
		return NULL;
	t = l0[l0_used++];
	for (j = 0; j < ENTRIES; j++)
		t[j] = make_pte(pte_pa(l1[i]) + j * PAGE_SIZE, l1[i] & 0x3ff);
	l1[i] = make_pte((unsigned long)t, PTE_V);
	return t;
}

int mmu_map(unsigned long va, unsigned long size, unsigned long prot)
{
	unsigned long end = va + size;

	if ((va | size) & (PAGE_SIZE - 1) || va < giga_base ||
	    end > giga_base + GIGA || end < va)
		return -1;
	for (; va < end; va += PAGE_SIZE) {
		pte_t *t = l0_table((va - giga_base) / MEGA2);

		if (!t)
			return -1;
		t[(va >> PAGE_SHIFT) & (ENTRIES - 1)] = make_pte(va, prot | LEAF_BITS);
	}
	fence();
	return 0;
}

unsigned long *mmu_leaf_ptep(unsigned long va)
{
	pte_t *l1e;

	if (va < giga_base || va >= giga_base + GIGA)
		return NULL;
	l1e = &l1[(va - giga_base) / MEGA2];
	if (pte_is_leaf(*l1e))
		return (unsigned long *)l1e;
	return (unsigned long *)&((pte_t *)pte_pa(*l1e))[(va >> PAGE_SHIFT) & (ENTRIES - 1)];
}

unsigned long mmu_leaf_pte(unsigned long va)
{
	unsigned long *p = mmu_leaf_ptep(va);

	return p ? *p : 0;
}

void mmu_enable(void)
{
	fence();
	csr_write(CSR_SATP, SATP_MODE_SV39 | (unsigned long)root >> PAGE_SHIFT);
	fence();
}

void mmu_disable(void)
{
	csr_write(CSR_SATP, 0);
	fence();
}
