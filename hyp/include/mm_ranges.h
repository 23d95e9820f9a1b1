/* SPDX-License-Identifier: MIT */
/* Boot-time set of free host memory ranges: the host DT's memory minus the
 * firmware, the image, reserved-memory and the DT itself. Used once, to lay
 * out the page allocator (mm.h), which never changes it again. */
#ifndef HYP_MM_RANGES_H
#define HYP_MM_RANGES_H
#include <types.h>

#define MM_MAX_RANGES	32

struct mm_range {
	uint64_t base, size;
};

/* Sorted by base, never overlapping, merged with their neighbours. Plain
 * data so host unit tests can drive it. A full set refuses (-HYP_ENOMEM) at
 * boot, where the DT decides how many pieces there are; nothing a guest does
 * reaches it. */
struct mm_ranges {
	unsigned int nr;
	struct mm_range r[MM_MAX_RANGES];
};

/** mm_ranges_add() - add [base, base+size) (merged with neighbours); -HYP_EEXIST
 *  on overlap, -HYP_ENOMEM when a new piece finds no slot. */
int mm_ranges_add(struct mm_ranges *s, uint64_t base, uint64_t size);
/** mm_ranges_reserve() - remove [base, base+size) (may split a range); unchanged
 *  and -HYP_ENOMEM when a split finds no slot. */
int mm_ranges_reserve(struct mm_ranges *s, uint64_t base, uint64_t size);
/** mm_ranges_bytes() - total bytes in the set. */
uint64_t mm_ranges_bytes(const struct mm_ranges *s);
#endif
