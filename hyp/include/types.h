/* SPDX-License-Identifier: MIT */
/* Basic types and helpers used across the hypervisor. */
#ifndef HYP_TYPES_H
#define HYP_TYPES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t gpa_t;	/* guest physical address */
typedef uint64_t hpa_t;	/* host physical address (== its VA: the hypervisor's map is identity) */

#define ALIGN_UP(x, a)		(((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a)	((x) & ~((__typeof__(x))(a) - 1))
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)		((a) < (b) ? (a) : (b))
#define MAX(a, b)		((a) > (b) ? (a) : (b))
#define SZ_4K			0x1000UL
#define SZ_64K			0x10000UL
#define SZ_2M			0x200000UL
#define SZ_1G			0x40000000UL
#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

/* true if [base, base+len) lies inside [lo, lo+size), without overflow */
static inline bool range_within(uint64_t base, uint64_t len, uint64_t lo, uint64_t size)
{
	return base >= lo && len <= size && base - lo <= size - len;
}
#endif
