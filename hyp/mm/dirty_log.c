/* SPDX-License-Identifier: MIT */
/* 4 KiB dirty logging for live migration. Guest RAM is mapped in 2 MiB
 * leaves; while a VM's pages are logged, each of its 2 MiB leaves is split
 * into 512 4 KiB leaves without W (a chunk first touched meanwhile is
 * mapped so from the start: no writable 2 MiB leaf is ever visible while
 * logging). A guest write (or shadow-stack access)
 * faults once, vm_ram_resolve_write() gives W back and sets the page's bit.
 * vm_dirty_log_take() hands the bits over and takes W away again; stop
 * merges the leaves back. Writes the hypervisor makes for a guest go through
 * vm_gpa_to_hva() and are marked there; since such a write may land after the
 * bit was taken, those pages stay in every later take (sticky) until the
 * final one, made with the VM paused. */
#include <string.h>
#include <errno.h>
#include <bitops.h>
#include <gstage.h>
#include <guest_mem.h>
#include <mm.h>
#include <tlb.h>
#include <vm.h>
#include "dirty_log.h"

static uint64_t nr_pages(const struct vm *vm)
{
	return vm->cfg.ram_size / PAGE_SIZE;
}

static uint64_t map_bytes(const struct vm *vm)
{
	return ALIGN_UP(nr_pages(vm) / 8, PAGE_SIZE);
}

static uint64_t nr_chunks(const struct vm *vm)
{
	return vm->cfg.ram_size / VM_RAM_CHUNK;
}

/* Chunk @c's 4 KiB table, one page per chunk in the logging block. */
static hpa_t split_table(const struct vm *vm, uint64_t c)
{
	return vm->log_tables + c * PAGE_SIZE;
}

static uint64_t *chunk_pmd(const struct vm *vm, uint64_t c)
{
	return gstage_pmd(vm->gstage_root, vm->cfg.ram_gpa + c * VM_RAM_CHUNK);
}

/* A logged chunk's 4 KiB leaves: writable only once a write was logged. */
#define LOGGED_PROT	(GSTAGE_PROT_RAM & ~(unsigned long)PTE_W)

static void split(struct vm *vm, uint64_t c)
{
	uint64_t *pmd = chunk_pmd(vm, c);

	if (pmd && (*pmd & PTE_V) && !gstage_pmd_is_table(*pmd))
		gstage_split_2m(pmd, split_table(vm, c), LOGGED_PROT);
}

int dirty_log_map_chunk(struct vm *vm, uint64_t c, hpa_t hpa, gstage_alloc_fn alloc)
{
	/* never a writable 2 MiB leaf, even for an instant: another hart could
	 * cache it and write the chunk unlogged until its next flush */
	return gstage_map_2m_split(vm->gstage_root, vm->cfg.ram_gpa + c * VM_RAM_CHUNK, hpa,
				   split_table(vm, c), LOGGED_PROT, alloc, vm);
}

void dirty_log_mark_range(struct vm *vm, gpa_t gpa, uint64_t len, uint64_t c, bool by_hyp)
{
	gpa_t lo = vm->cfg.ram_gpa + c * VM_RAM_CHUNK, hi = lo + VM_RAM_CHUNK;
	gpa_t from = MAX(gpa, lo), to = MIN(gpa + len, hi);

	for (uint64_t p = (from - vm->cfg.ram_gpa) / PAGE_SIZE;
	     p <= (to - 1 - vm->cfg.ram_gpa) / PAGE_SIZE; p++)
	{
		vm->page_log[p / 64] |= 1UL << (p % 64);
		if (by_hyp)
			vm->page_sticky[p / 64] |= 1UL << (p % 64);
	}
}

int vm_dirty_log_start(struct vm *vm)
{
	uint64_t maps = map_bytes(vm), tables = nr_chunks(vm) * PAGE_SIZE;
	hpa_t block;

	if (vm->page_log)
		return -HYP_EBUSY;
	block = mm_alloc(2 * maps + tables, PAGE_SIZE);
	if (!block)
		return -HYP_ENOMEM;
	spin_lock(&vm->mem_lock);
	vm->log_tables = block;
	vm->page_sticky = (uint64_t *)(uintptr_t)(block + tables + maps);
	/* read lock-free by vm_ram_populate()'s fast path (a test only) */
	__atomic_store_n(&vm->page_log, (uint64_t *)(uintptr_t)(block + tables), __ATOMIC_RELAXED);
	for (uint64_t c = 0; c < nr_chunks(vm); c++)
		if (vm->populated[c / 64] & (1UL << (c % 64)))
			split(vm, c);
	spin_unlock(&vm->mem_lock);
	/* no hart may keep a writable 2 MiB translation: writes must fault */
	tlb_flush_vm_gstage(vm);
	return 0;
}

uint64_t vm_dirty_log_take(struct vm *vm, uint64_t *out, bool final)
{
	uint64_t words = nr_pages(vm) / 64, n = 0;

	spin_lock(&vm->mem_lock);
	for (uint64_t i = 0; i < words; i++) {
		uint64_t w = vm->page_log[i];

		vm->page_log[i] = 0;
		out[i] = w | vm->page_sticky[i];
		if (final)
			vm->page_sticky[i] = 0;
		for (; w; w &= w - 1) {
			uint64_t p = i * 64 + bit_first(w);
			uint64_t *pte = gstage_lookup(vm->gstage_root,
						      vm->cfg.ram_gpa + p * PAGE_SIZE, NULL);

			if (pte && (*pte & PTE_W)) {
				*pte &= ~PTE_W;
				n++;
			}
		}
	}
	spin_unlock(&vm->mem_lock);
	if (n)
		tlb_flush_vm_gstage(vm);	/* the next write to those pages faults */
	return n;
}

void vm_dirty_log_stop(struct vm *vm)
{
	hpa_t block = vm->log_tables;

	if (!vm->page_log)
		return;
	spin_lock(&vm->mem_lock);
	/* logging ends before any leaf is writable again */
	__atomic_store_n(&vm->page_log, NULL, __ATOMIC_RELAXED);
	vm->page_sticky = NULL;
	for (uint64_t c = 0; c < nr_chunks(vm); c++) {
		uint64_t *pmd = chunk_pmd(vm, c);

		if (pmd && gstage_pmd_is_table(*pmd) &&
		    gstage_pmd_table(*pmd) == split_table(vm, c))
			gstage_merge_2m(pmd, GSTAGE_PROT_RAM);
	}
	vm->log_tables = 0;
	spin_unlock(&vm->mem_lock);
	/* no hart walks the split tables any more once this returns */
	tlb_flush_vm_gstage(vm);
	mm_free(block, 2 * map_bytes(vm) + nr_chunks(vm) * PAGE_SIZE);
}
