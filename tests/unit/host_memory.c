/* SPDX-License-Identifier: MIT */
/* The memory environment of hyp/mm/ code run on the host: the hypervisor's
 * allocator on the host's heap (zeroed, as mm_alloc() promises) and G-stage
 * TLB flushes with no TLB to flush. Weak: a test that counts flushes or
 * rations allocations defines its own. Linked by the tests that name it in
 * unit.mk. */
#include <stdlib.h>
#include <string.h>
#include <mm.h>
#include <tlb.h>

__attribute__((weak)) hpa_t mm_alloc(uint64_t size, uint64_t align)
{
	void *p = aligned_alloc(align, ALIGN_UP(size, align));

	if (p)
		memset(p, 0, size);
	return (hpa_t)(uintptr_t)p;
}

__attribute__((weak)) hpa_t mm_alloc_raw(uint64_t size, uint64_t align)
{
	return mm_alloc(size, align);
}

__attribute__((weak)) void mm_free(hpa_t pa, uint64_t size)
{
	(void)size;
	free((void *)(uintptr_t)pa);
}

__attribute__((weak)) void tlb_flush_vm_gstage(struct vm *vm)
{
	(void)vm;
}

__attribute__((weak)) void tlb_local_gstage(const struct vm *vm)
{
	(void)vm;
}

/* hyp/mm/mm_zero.c without Zicboz (the host has none) */
void mm_zero(void *p, uint64_t n)
{
	memset(p, 0, n);
}
