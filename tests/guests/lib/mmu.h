/* SPDX-License-Identifier: MIT */
/* Sv39 identity map of the payload's RAM gigabyte, with 4 KiB pages of chosen permissions. */
#ifndef GUEST_MMU_H
#define GUEST_MMU_H

#include <arch/riscv/encoding.h>
#include "guest.h"

/* Leaf permissions for mmu_map(); V, A and D are always added. */
#define MMU_RWX		(PTE_R | PTE_W | PTE_X)
#define MMU_RW		(PTE_R | PTE_W)
#define MMU_RO		PTE_R
#define MMU_RX		(PTE_R | PTE_X)
#define MMU_SS		PTE_W		/* xwr=010: shadow-stack page (Zicfiss) */
#define MMU_U		PTE_U

#define SATP_MODE_SV39	(8UL << 60)

/*
 * Build (but do not enable) the tables: the 1 GiB region holding the
 * payload is identity-mapped with RWX 2 MiB pages, supervisor only.
 */
void mmu_init(void);

/*
 * Give [@va, @va + @size) (4 KiB aligned, inside the mapped gigabyte) the
 * leaf permissions @prot, splitting 2 MiB pages as needed, then fence.
 * Returns 0, or -1 if out of range or out of page-table pages.
 */
int mmu_map(unsigned long va, unsigned long size, unsigned long prot);

/* Leaf PTE that maps @va (0 if none), and where it is (NULL if none). */
unsigned long mmu_leaf_pte(unsigned long va);
unsigned long *mmu_leaf_ptep(unsigned long va);

/* satp = Sv39 with our root, or Bare again; both fence. */
void mmu_enable(void);
void mmu_disable(void);

#endif
