/* SPDX-License-Identifier: MIT */
/* Host physical memory allocator: a sorted free-range list, first fit. */
#include <string.h>
#include <errno.h>
#include <atomic.h>
#include <mm.h>

struct mm_pool host_pool;

static int pool_insert(struct mm_pool *p, unsigned int at, uint64_t base, uint64_t size)
{
	if (p->nr == MM_MAX_RANGES)
		return -HYP_ENOMEM;
	memmove(&p->r[at + 1], &p->r[at], (p->nr - at) * sizeof(p->r[0]));
	p->r[at] = (struct mm_range){ base, size };
	p->nr++;
	return 0;
}

static void pool_remove(struct mm_pool *p, unsigned int at)
{
	p->nr--;
	memmove(&p->r[at], &p->r[at + 1], (p->nr - at) * sizeof(p->r[0]));
}

int mm_pool_add(struct mm_pool *p, uint64_t base, uint64_t size)
{
	unsigned int i;
	int rc;

	if (!size || base + size < base)
		return -HYP_EINVAL;
	for (i = 0; i < p->nr && p->r[i].base < base; i++)
		;
	/* refuse overlap with existing free ranges: it would double-allocate */
	if (i > 0 && p->r[i - 1].base + p->r[i - 1].size > base)
		return -HYP_EEXIST;
	if (i < p->nr && base + size > p->r[i].base)
		return -HYP_EEXIST;
	rc = pool_insert(p, i, base, size);
	if (rc)
		return rc;
	if (i + 1 < p->nr && p->r[i].base + p->r[i].size == p->r[i + 1].base) {
		p->r[i].size += p->r[i + 1].size;
		pool_remove(p, i + 1);
	}
	if (i > 0 && p->r[i - 1].base + p->r[i - 1].size == p->r[i].base) {
		p->r[i - 1].size += p->r[i].size;
		pool_remove(p, i);
	}
	return 0;
}

int mm_pool_reserve(struct mm_pool *p, uint64_t base, uint64_t size)
{
	uint64_t end = base + size;

	if (end < base)
		return -HYP_EINVAL;
	for (unsigned int i = 0; i < p->nr; i++) {
		uint64_t rb = p->r[i].base, re = rb + p->r[i].size;

		if (re <= base || rb >= end)
			continue;
		if (rb < base && re > end) {		/* split in two */
			if (p->nr == MM_MAX_RANGES)	/* no slot: change nothing */
				return -HYP_ENOMEM;
			p->r[i].size = base - rb;
			return pool_insert(p, i + 1, end, re - end);
		}
		if (rb < base) {			/* trim the tail */
			p->r[i].size = base - rb;
		} else if (re > end) {			/* trim the head */
			p->r[i].base = end;
			p->r[i].size = re - end;
		} else {				/* fully covered */
			pool_remove(p, i);
			i--;
		}
	}
	return 0;
}

uint64_t mm_pool_alloc(struct mm_pool *p, uint64_t size, uint64_t align)
{
	if (!size || !align || (align & (align - 1)))
		return 0;
	for (unsigned int i = 0; i < p->nr; i++) {
		uint64_t rb = p->r[i].base, re = rb + p->r[i].size;
		uint64_t at = ALIGN_UP(rb, align);

		if (at < rb || at >= re || re - at < size)
			continue;
		if (mm_pool_reserve(p, at, size))
			return 0;
		return at;
	}
	return 0;
}

uint64_t mm_pool_free_bytes(const struct mm_pool *p)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < p->nr; i++)
		n += p->r[i].size;
	return n;
}

#ifndef HOST_TEST
static struct spinlock host_pool_lock = SPINLOCK_INIT;

hpa_t mm_alloc_raw(uint64_t size, uint64_t align)
{
	hpa_t pa;

	spin_lock(&host_pool_lock);
	pa = mm_pool_alloc(&host_pool, size, align);
	spin_unlock(&host_pool_lock);
	return pa;
}

hpa_t mm_alloc(uint64_t size, uint64_t align)
{
	hpa_t pa = mm_alloc_raw(size, align);

	if (pa)
		memset((void *)pa, 0, size);
	return pa;
}
#endif

#ifndef HOST_TEST
void mm_free(hpa_t pa, uint64_t size)
{
	spin_lock(&host_pool_lock);
	mm_pool_add(&host_pool, pa, size);
	spin_unlock(&host_pool_lock);
}

uint64_t mm_free_bytes(void)
{
	uint64_t n;

	spin_lock(&host_pool_lock);
	n = mm_pool_free_bytes(&host_pool);
	spin_unlock(&host_pool_lock);
	return n;
}
#endif
