/* SPDX-License-Identifier: MIT */
/* Host physical memory allocator: a page bitmap over the free ranges found at
 * boot (mm_ranges.h), first fit.
 *
 * Bound: one bit per 4 KiB page (32 KiB per GiB, 1/32768 of the memory),
 * placed at the start of each free range when the pool is laid out and never
 * grown. A free clears bits and allocates nothing, so it cannot fail, however
 * fragmented the pool is (a guest can choose the order in which a live
 * snapshot copies and frees its chunks); the earlier free-range list lost
 * every free once it held 32 pieces. Costs: a free O(pages / 64) word writes;
 * an allocation O(pages of the pool / 64) word reads at worst. */
#ifndef HYP_MM_H
#define HYP_MM_H
#include <types.h>
#include <mm_ranges.h>

/* One free range of the boot layout: its pages and their bits (1 = in use). */
struct mm_region {
	uint64_t base;		/* page-aligned, just past its own bitmap */
	uint64_t pages;
	uint64_t *used;		/* pages bits, in the range's first pages */
};

/* Plain data so host unit tests can drive it over a buffer of their own. */
struct mm_pool {
	unsigned int nr;
	uint64_t free_pages;
	struct mm_region reg[MM_MAX_RANGES];
};

/** mm_pool_init() - lay the pool out over @free: each range (trimmed to whole
 *  pages) keeps its bitmap in its first pages, the rest is free. A range too
 *  small to hold its bitmap and one page is left out. */
void mm_pool_init(struct mm_pool *p, const struct mm_ranges *free);
/** mm_pool_alloc() - first fit of @size bytes (rounded up to pages) aligned to
 *  @align (a power of 2; at least a page is implied); 0 on failure. */
uint64_t mm_pool_alloc(struct mm_pool *p, uint64_t size, uint64_t align);
/** mm_pool_free() - give back [base, base+size) (size rounded up to pages as
 *  mm_pool_alloc() did); base 0 is nothing. Never fails for what
 *  mm_pool_alloc() gave; -HYP_EINVAL, nothing changed, for a range that is not
 *  page-aligned, not in the pool or not wholly in use (a double free). */
int mm_pool_free(struct mm_pool *p, uint64_t base, uint64_t size);
/** mm_pool_free_bytes() - total free bytes. */
uint64_t mm_pool_free_bytes(const struct mm_pool *p);

/* The hypervisor's pool. */
extern struct mm_pool host_pool;
/** mm_alloc() - zeroed, aligned host memory, or 0. */
hpa_t mm_alloc(uint64_t size, uint64_t align);
/** mm_alloc_raw() - the same, not zeroed (guest RAM: zeroed on first touch). */
hpa_t mm_alloc_raw(uint64_t size, uint64_t align);
/** mm_free() - give [pa, pa+size) back (a destroyed VM's blocks); cannot fail. */
void mm_free(hpa_t pa, uint64_t size);
/** mm_free_bytes() - host memory still free. */
uint64_t mm_free_bytes(void);
/** mm_total_bytes() - host memory the pool manages (free and in use; fixed at boot). */
uint64_t mm_total_bytes(void);
/** mm_zero() - zero @n bytes at @p: Zicboz blocks where boot enabled them
 *  (mm_zero_use_cbo(), @p and @n multiples of the block), else stores. */
void mm_zero(void *p, uint64_t n);
/** mm_zero_use_cbo() - zero with cbo.zero blocks of @block bytes (0: never). */
void mm_zero_use_cbo(unsigned long block);
/** mm_zero_cbo_block() - the block mm_zero() uses, 0 if none. */
unsigned long mm_zero_cbo_block(void);
#endif
