/* SPDX-License-Identifier: MIT */
/* Boot-time free-range set (hyp/include/mm_ranges.h): add with merge, reserve
 * with split. */
#include <string.h>
#include <errno.h>
#include <mm_ranges.h>

static int ranges_insert(struct mm_ranges *s, unsigned int at, uint64_t base, uint64_t size)
{
	if (s->nr == MM_MAX_RANGES)
		return -HYP_ENOMEM;
	memmove(&s->r[at + 1], &s->r[at], (s->nr - at) * sizeof(s->r[0]));
	s->r[at] = (struct mm_range){ base, size };
	s->nr++;
	return 0;
}

static void ranges_remove(struct mm_ranges *s, unsigned int at)
{
	s->nr--;
	memmove(&s->r[at], &s->r[at + 1], (s->nr - at) * sizeof(s->r[0]));
}

int mm_ranges_add(struct mm_ranges *s, uint64_t base, uint64_t size)
{
	bool joins_prev, joins_next;
	unsigned int i;

	if (!size || base + size < base)
		return -HYP_EINVAL;
	for (i = 0; i < s->nr && s->r[i].base < base; i++)
		;
	/* refuse overlap with existing ranges: it would count memory twice */
	if (i > 0 && s->r[i - 1].base + s->r[i - 1].size > base)
		return -HYP_EEXIST;
	if (i < s->nr && base + size > s->r[i].base)
		return -HYP_EEXIST;
	/* merge first: a piece that touches a neighbour needs no slot */
	joins_prev = i > 0 && s->r[i - 1].base + s->r[i - 1].size == base;
	joins_next = i < s->nr && base + size == s->r[i].base;
	if (joins_prev && joins_next) {
		s->r[i - 1].size += size + s->r[i].size;
		ranges_remove(s, i);
	} else if (joins_prev) {
		s->r[i - 1].size += size;
	} else if (joins_next) {
		s->r[i].base = base;
		s->r[i].size += size;
	} else {
		return ranges_insert(s, i, base, size);
	}
	return 0;
}

int mm_ranges_reserve(struct mm_ranges *s, uint64_t base, uint64_t size)
{
	uint64_t end = base + size;

	if (end < base)
		return -HYP_EINVAL;
	for (unsigned int i = 0; i < s->nr; i++) {
		uint64_t rb = s->r[i].base, re = rb + s->r[i].size;

		if (re <= base || rb >= end)
			continue;
		if (rb < base && re > end) {		/* split in two */
			if (s->nr == MM_MAX_RANGES)	/* no slot: change nothing */
				return -HYP_ENOMEM;
			s->r[i].size = base - rb;
			return ranges_insert(s, i + 1, end, re - end);
		}
		if (rb < base) {			/* trim the tail */
			s->r[i].size = base - rb;
		} else if (re > end) {			/* trim the head */
			s->r[i].base = end;
			s->r[i].size = re - end;
		} else {				/* fully covered */
			ranges_remove(s, i);
			i--;
		}
	}
	return 0;
}

uint64_t mm_ranges_bytes(const struct mm_ranges *s)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < s->nr; i++)
		n += s->r[i].size;
	return n;
}
