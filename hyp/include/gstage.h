/* SPDX-License-Identifier: MIT */
/* G-stage (guest physical -> host physical) page tables, Sv39x4. */
#ifndef HYP_GSTAGE_H
#define HYP_GSTAGE_H
#include <arch/riscv/encoding.h>
#include <types.h>

#define GSTAGE_LEVELS		3
#define GSTAGE_ROOT_SIZE	(4 * SZ_4K)	/* Sv39x4 root: 2048 entries, 16 KiB aligned */
#define GSTAGE_GPA_BITS		41

/* Guest RAM: readable, writable, executable. G-stage leaves are always U=1, and
 * shadow-stack accesses need both R and W here (docs/cfi.md §9.9). */
#define GSTAGE_PROT_RAM		(PTE_R | PTE_W | PTE_X)

/** gstage_alloc_fn - returns a zeroed, 4 KiB aligned table page (host address) or 0. */
typedef uint64_t (*gstage_alloc_fn)(void *ctx);

/** gstage_map() - map [gpa, gpa+size) to hpa with @prot; 2 MiB leaves where aligned. */
int gstage_map(uint64_t root, gpa_t gpa, hpa_t hpa, uint64_t size, unsigned long prot,
	       gstage_alloc_fn alloc, void *ctx);
/** gstage_lookup() - the leaf PTE for @gpa, or NULL; *level_size gets the leaf's size. */
uint64_t *gstage_lookup(uint64_t root, gpa_t gpa, uint64_t *level_size);
/** gstage_translate() - host address for @gpa, or 0 if unmapped. */
hpa_t gstage_translate(uint64_t root, gpa_t gpa);
/* 2 MiB granules split into 4 KiB leaves and merged back (dirty logging) */
/** gstage_pmd() - the level-1 entry covering @gpa, or NULL without a level-1 table. */
uint64_t *gstage_pmd(uint64_t root, gpa_t gpa);
/** gstage_pmd_is_table() - the entry points to 512 4 KiB leaves. */
bool gstage_pmd_is_table(uint64_t pmd);
/** gstage_pmd_table() - host address of that table. */
hpa_t gstage_pmd_table(uint64_t pmd);
/** gstage_split_2m() - fill @table (a 4 KiB page) with the 2 MiB leaf *@pmd's
 *  512 pages at @prot and point *@pmd at it. The caller flushes. */
void gstage_split_2m(uint64_t *pmd, hpa_t table, unsigned long prot);
/** gstage_map_2m_split() - map the 2 MiB granule at @gpa to @hpa (both 2 MiB
 *  aligned) as 512 4 KiB leaves at @prot, written into @table (a 4 KiB page)
 *  before the one store that makes them visible: no walker ever sees a 2 MiB
 *  leaf there (dirty logging). A missing level-1 table comes from @alloc.
 *  -HYP_EEXIST if the granule is mapped already. */
int gstage_map_2m_split(uint64_t root, gpa_t gpa, hpa_t hpa, hpa_t table, unsigned long prot,
			gstage_alloc_fn alloc, void *ctx);
/** gstage_merge_2m() - the split *@pmd becomes one 2 MiB leaf at @prot again
 *  (the table stays the caller's to free after a flush). */
void gstage_merge_2m(uint64_t *pmd, unsigned long prot);
/* One 4 KiB leaf whose target changes while the VM runs (a vCPU's IMSIC page,
 * mapped to its current guest interrupt file, or not mapped: docs/design-aia.md
 * 3.5). Its slot is made once; setting and clearing it allocate nothing. */
#define GSTAGE_PROT_DEVICE	(PTE_R | PTE_W)	/* never X: a fetch gets an access fault */
/** gstage_leaf_slot() - make the tables down to level 0 for @gpa (4 KiB
 *  aligned) and return the address of its 4 KiB leaf entry, left invalid.
 *  NULL if @gpa is unaligned or beyond the guest physical space, a table page
 *  could not be had, or @gpa is mapped already (by a 4 KiB or 2 MiB leaf). */
uint64_t *gstage_leaf_slot(uint64_t root, gpa_t gpa, gstage_alloc_fn alloc, void *ctx);
/** gstage_leaf_set() - point the slot at @hpa (4 KiB aligned) with @prot (R,
 *  R|W, X, ...: only the R, W and X bits count; W needs R), one release store.
 *  The caller flushes this hart's G-stage TLB (an invalid entry cached
 *  elsewhere only faults into the window). */
void gstage_leaf_set(uint64_t *slot, hpa_t hpa, unsigned long prot);
/** gstage_leaf_clear() - make the slot invalid, one release store. The caller
 *  flushes the VM's G-stage TLBs on every hart before it reuses the target. */
void gstage_leaf_clear(uint64_t *slot);
/** gstage_hgatp() - hgatp value for a root and VMID. */
unsigned long gstage_hgatp(uint64_t root, unsigned int vmid);
#endif
