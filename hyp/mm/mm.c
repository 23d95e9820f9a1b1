/* SPDX-License-Identifier: MIT */
/* Host physical memory allocator: one bit per page over each free range of
 * the boot layout, first fit (the bound and the costs: hyp/include/mm.h). */
#include <arch/riscv/encoding.h>
#include <string.h>
#include <errno.h>
#include <atomic.h>
#include <bitops.h>
#include <log.h>
#include <mm.h>

struct mm_pool host_pool;

#define WORD_BITS	64U

/* The first page in [from, to) whose bit is @used, or @to; a word at a time. */
static uint64_t find_page(const uint64_t *map, uint64_t from, uint64_t to, bool used)
{
	while (from < to) {
		uint64_t w = used ? map[from / WORD_BITS] : ~map[from / WORD_BITS];

		w >>= from % WORD_BITS;
		if (w) {
			from += bit_first(w);
			return from < to ? from : to;
		}
		from = ALIGN_DOWN(from, WORD_BITS) + WORD_BITS;
	}
	return to;
}

static void mark_pages(uint64_t *map, uint64_t from, uint64_t n, bool used)
{
	while (n) {
		unsigned int shift = from % WORD_BITS;
		uint64_t k = MIN(n, (uint64_t)(WORD_BITS - shift));
		uint64_t mask = (k == WORD_BITS ? ~0ULL : (1ULL << k) - 1) << shift;

		if (used)
			map[from / WORD_BITS] |= mask;
		else
			map[from / WORD_BITS] &= ~mask;
		from += k;
		n -= k;
	}
}

void mm_pool_init(struct mm_pool *p, const struct mm_ranges *free)
{
	p->nr = 0;
	p->free_pages = 0;
	for (unsigned int i = 0; i < free->nr; i++) {
		uint64_t base = ALIGN_UP(free->r[i].base, PAGE_SIZE);
		uint64_t end = ALIGN_DOWN(free->r[i].base + free->r[i].size, PAGE_SIZE);
		uint64_t pages, map_bytes;
		struct mm_region *r;

		if (base < free->r[i].base || end <= base)
			continue;
		pages = (end - base) / PAGE_SIZE;
		/* bits for every page of the range: a few more than the region keeps */
		map_bytes = ALIGN_UP(ALIGN_UP(pages, WORD_BITS) / 8, PAGE_SIZE);
		if (map_bytes / PAGE_SIZE >= pages)
			continue;
		r = &p->reg[p->nr++];
		r->used = (uint64_t *)(uintptr_t)base;
		r->base = base + map_bytes;
		r->pages = pages - map_bytes / PAGE_SIZE;
		memset(r->used, 0, ALIGN_UP(r->pages, WORD_BITS) / 8);
		p->free_pages += r->pages;
	}
}

/* First fit in @r: the lowest @align-aligned run of @n free pages, or 0. */
static uint64_t region_alloc(struct mm_region *r, uint64_t n, uint64_t align)
{
	uint64_t first = ALIGN_UP(r->base, align), step, start, i;

	if (first < r->base)
		return 0;	/* aligning up wrapped: no such address here */
	step = align > PAGE_SIZE ? align / PAGE_SIZE : 1;
	start = (first - r->base) / PAGE_SIZE;
	for (i = start; i < r->pages && r->pages - i >= n;) {
		uint64_t busy = find_page(r->used, i, i + n, true);

		if (busy == i + n) {
			mark_pages(r->used, i, n, true);
			return r->base + i * PAGE_SIZE;
		}
		/* past the pages in use, to the next aligned start */
		i = find_page(r->used, busy, r->pages, false);
		i = start + ALIGN_UP(i - start, step);
	}
	return 0;
}

uint64_t mm_pool_alloc(struct mm_pool *p, uint64_t size, uint64_t align)
{
	uint64_t n;

	if (!size || !align || (align & (align - 1)) || size > ~0ULL - PAGE_SIZE)
		return 0;
	n = ALIGN_UP(size, PAGE_SIZE) / PAGE_SIZE;
	for (unsigned int i = 0; i < p->nr; i++) {
		uint64_t at = region_alloc(&p->reg[i], n, align);

		if (at) {
			p->free_pages -= n;
			return at;
		}
	}
	return 0;
}

int mm_pool_free(struct mm_pool *p, uint64_t base, uint64_t size)
{
	uint64_t n;

	if (!base)
		return 0;
	if (!size || size > ~0ULL - PAGE_SIZE || base % PAGE_SIZE)
		return -HYP_EINVAL;
	n = ALIGN_UP(size, PAGE_SIZE) / PAGE_SIZE;
	for (unsigned int i = 0; i < p->nr; i++) {
		struct mm_region *r = &p->reg[i];
		uint64_t at;

		if (!range_within(base, n * PAGE_SIZE, r->base, r->pages * PAGE_SIZE))
			continue;
		at = (base - r->base) / PAGE_SIZE;
		if (find_page(r->used, at, at + n, false) != at + n)
			return -HYP_EINVAL;	/* some page is free already */
		mark_pages(r->used, at, n, false);
		p->free_pages += n;
		return 0;
	}
	return -HYP_EINVAL;
}

uint64_t mm_pool_free_bytes(const struct mm_pool *p)
{
	return p->free_pages * PAGE_SIZE;
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

void mm_free(hpa_t pa, uint64_t size)
{
	int rc;

	spin_lock(&host_pool_lock);
	rc = mm_pool_free(&host_pool, pa, size);
	spin_unlock(&host_pool_lock);
	/* only a hypervisor bug gets here (a double or foreign free): refused,
	 * so the pages are not handed out twice */
	if (rc)
		pr_info("mm: free of 0x%lx (+0x%lx) not allocated: ignored",
			(unsigned long)pa, (unsigned long)size);
}

uint64_t mm_free_bytes(void)
{
	uint64_t n;

	spin_lock(&host_pool_lock);
	n = mm_pool_free_bytes(&host_pool);
	spin_unlock(&host_pool_lock);
	return n;
}

uint64_t mm_total_bytes(void)
{
	uint64_t pages = 0;

	/* the layout is fixed once the pool is laid out: no lock */
	for (unsigned int i = 0; i < host_pool.nr; i++)
		pages += host_pool.reg[i].pages;
	return pages * PAGE_SIZE;
}
#endif
