/* SPDX-License-Identifier: MIT */
/* Host physical memory allocator: free ranges carved out of the host DT's memory. */
#ifndef HYP_MM_H
#define HYP_MM_H
#include <types.h>

#define MM_MAX_RANGES	32

struct mm_range {
	uint64_t base, size;
};

/* A set of free ranges, sorted by base and never overlapping. Plain data so
 * host unit tests can drive it. */
struct mm_pool {
	unsigned int nr;
	struct mm_range r[MM_MAX_RANGES];
};

/** mm_pool_add() - add [base, base+size) as free (merged with neighbours). */
int mm_pool_add(struct mm_pool *p, uint64_t base, uint64_t size);
/** mm_pool_reserve() - remove [base, base+size) from the free set (may split a range). */
int mm_pool_reserve(struct mm_pool *p, uint64_t base, uint64_t size);
/** mm_pool_alloc() - first fit of @size bytes aligned to @align (power of 2); 0 on failure. */
uint64_t mm_pool_alloc(struct mm_pool *p, uint64_t size, uint64_t align);
/** mm_pool_free_bytes() - total free bytes. */
uint64_t mm_pool_free_bytes(const struct mm_pool *p);

/* The hypervisor's pool. */
extern struct mm_pool host_pool;
/** mm_alloc() - zeroed, aligned host memory, or 0. */
hpa_t mm_alloc(uint64_t size, uint64_t align);
/** mm_alloc_raw() - the same, not zeroed (guest RAM: zeroed on first touch). */
hpa_t mm_alloc_raw(uint64_t size, uint64_t align);
/** mm_free() - give [pa, pa+size) back (a destroyed VM's blocks). */
void mm_free(hpa_t pa, uint64_t size);
/** mm_free_bytes() - host memory still free. */
uint64_t mm_free_bytes(void);
#endif
