/* SPDX-License-Identifier: MIT */
/* Guest RAM access for the hypervisor: every guest-supplied address goes through here. */
#include <string.h>
#include <errno.h>
#include <gstage.h>
#include <guest_mem.h>
#include <mm.h>
#include <tlb.h>
#include <vm.h>
#include "dirty_log.h"

bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	return range_within(gpa, len, vm->cfg.ram_gpa, vm->cfg.ram_size);
}

/* The per-VM block (allocated zeroed by the caller, GSTAGE_ROOT_SIZE aligned):
 * G-stage root, one table page per GiB of guest RAM (2 MiB leaves) and those
 * the device pages need (VM_DEVICE_PAGE_TABLES: they are outside RAM), the
 * device pages, then the populated and dirty chunk maps. One block, so
 * destroy returns it whole. */
static uint64_t chunk_map_bytes(uint64_t ram_size)
{
	return ALIGN_UP((ram_size / VM_RAM_CHUNK + 63) / 64 * 8, PAGE_SIZE);
}

static uint64_t table_pages(uint64_t ram_size)
{
	/* RAM starts on a GiB boundary: one level-1 table per GiB it touches */
	return (ram_size + SZ_1G - 1) / SZ_1G + VM_DEVICE_PAGE_TABLES;
}

uint64_t vm_meta_size(uint64_t ram_size)
{
	return GSTAGE_ROOT_SIZE + (table_pages(ram_size) + VM_DEVICE_PAGES) * PAGE_SIZE +
	       2 * chunk_map_bytes(ram_size);
}

/* gstage_alloc_fn: the next table page of the VM's block (zeroed). */
static uint64_t table_page(void *ctx)
{
	struct vm *vm = ctx;
	uint64_t page;

	if (vm->table_next >= vm->table_end)
		return 0;
	page = vm->table_next;
	vm->table_next += PAGE_SIZE;
	return page;
}

int vm_ram_init(struct vm *vm)
{
	uint64_t maps = chunk_map_bytes(vm->cfg.ram_size);

	vm->meta_size = vm_meta_size(vm->cfg.ram_size);
	vm->gstage_root = vm->meta_hpa;
	vm->table_next = vm->meta_hpa + GSTAGE_ROOT_SIZE;
	vm->table_end = vm->table_next + table_pages(vm->cfg.ram_size) * PAGE_SIZE;
	vm->device_pages = vm->table_end;
	vm->nr_device_pages = 0;
	vm->populated = (uint64_t *)(uintptr_t)(vm->device_pages + VM_DEVICE_PAGES * PAGE_SIZE);
	vm->dirty = (uint64_t *)(uintptr_t)((uintptr_t)vm->populated + maps);
	vm->dirty_tracking = false;
	return 0;
}

uint64_t *vm_device_leaf_slot(struct vm *vm, gpa_t gpa)
{
	if (gpa < vm->cfg.ram_gpa + vm->cfg.ram_size && gpa + PAGE_SIZE > vm->cfg.ram_gpa)
		return NULL;
	return gstage_leaf_slot(vm->gstage_root, gpa, table_page, vm);
}

void *vm_map_device_page(struct vm *vm, gpa_t gpa)
{
	hpa_t page = vm->device_pages + vm->nr_device_pages * PAGE_SIZE;

	if (vm->nr_device_pages == VM_DEVICE_PAGES || (gpa & (PAGE_SIZE - 1)) ||
	    (gpa < vm->cfg.ram_gpa + vm->cfg.ram_size && gpa + PAGE_SIZE > vm->cfg.ram_gpa) ||
	    gstage_translate(vm->gstage_root, gpa))
		return NULL;
	/* read-only and never executable: a store or fetch faults as before */
	if (gstage_map(vm->gstage_root, gpa, page, PAGE_SIZE, PTE_R, table_page, vm))
		return NULL;
	vm->nr_device_pages++;
	return (void *)(uintptr_t)page;
}

/* A write is about to be allowed on a write-protected chunk: a live snapshot
 * first keeps what it holds. False: not now (the writer retries later). */
static bool before_first_write(struct vm *vm, uint64_t chunk)
{
	return !vm->cow || vm->cow(vm, chunk);
}

static inline bool chunk_populated(const struct vm *vm, uint64_t c)
{
	/* acquire: pairs with the release that sets the bit (mark_populated()) */
	return __atomic_load_n(&vm->populated[c / 64], __ATOMIC_ACQUIRE) & (1UL << (c % 64));
}

/* Under mem_lock: the chunk is zeroed and mapped. Release: a hart that sees
 * the bit without the lock (populated_fast()) sees the zeroes too, so its
 * access can never be overwritten by this hart's memset. */
static void mark_populated(struct vm *vm, uint64_t c)
{
	__atomic_store_n(&vm->populated[c / 64], vm->populated[c / 64] | 1UL << (c % 64),
			 __ATOMIC_RELEASE);
}

/* The common case without mem_lock (docs/performance.md: a disk request
 * mapped each segment under it): every chunk of [first, last] is populated
 * and, for a write, nothing counts writes. Then the locked path would only
 * have found the bits set and done nothing, so answering "done" here is the
 * same answer at a slightly different instant. Safe because
 * - a bit is set only after its chunk is zeroed and mapped (release/acquire);
 * - a bit is cleared only by vm_ram_discard(), with the VM's vCPUs off their
 *   harts and its devices quiesced (vm_reset(): vio_quiesce()), so no
 *   access races it; the lock never covered the caller's access anyway;
 * - dirty tracking and page logging are switched on under mem_lock, then
 *   every hart's translations are flushed, before the VM or its devices run
 *   again (a pause drains the devices; vio_resume() and the scheduler take
 *   locks after that): a writer that reads them as off is one whose access
 *   the locked path would also have let through unlogged. Once on, every
 *   write goes the locked way (logging, copy-before-write, W given back). */
bool vm_ram_counts_writes(const struct vm *vm)
{
	return __atomic_load_n(&vm->dirty_tracking, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&vm->page_log, __ATOMIC_RELAXED);
}

static inline __attribute__((always_inline)) bool
populated_fast(const struct vm *vm, uint64_t first, uint64_t last, bool write)
{
	if (write && vm_ram_counts_writes(vm))
		return false;
	for (uint64_t c = first; c <= last; c++)
		if (!chunk_populated(vm, c))
			return false;
	return true;
}

/* The rest of vm_ram_populate(), out of line so that the common case (every
 * chunk mapped, nothing counting writes) is a few instructions with no
 * registers to save (a disk request took about 600 instructions here). */
static __attribute__((noinline)) int populate_locked(struct vm *vm, gpa_t gpa, uint64_t len,
						     bool write, uint64_t first, uint64_t last)
{
	bool fence = false;
	int rc = 0;

	spin_lock(&vm->mem_lock);
	for (uint64_t c = first; c <= last && !rc; c++) {
		uint64_t bit = 1UL << (c % 64), *pte;
		gpa_t cgpa = vm->cfg.ram_gpa + c * VM_RAM_CHUNK;
		hpa_t hpa = vm->ram_hpa + c * VM_RAM_CHUNK;
		unsigned long prot = GSTAGE_PROT_RAM;

		if (vm->populated[c / 64] & bit) {
			if (write && vm->page_log)
				dirty_log_mark_range(vm, gpa, len, c, true);
			/* dirty tracking: a write by the hypervisor counts too */
			if (write && vm->dirty_tracking) {
				pte = gstage_lookup(vm->gstage_root, cgpa, NULL);
				if (pte && !(*pte & PTE_W)) {
					if (!before_first_write(vm, c)) {
						rc = -HYP_EBUSY;
						break;
					}
					*pte |= PTE_W;
					fence = true;
				}
				vm->dirty[c / 64] |= bit;
			}
			continue;
		}
		/* never show a guest what the chunk held before (another boot) */
		mm_zero((void *)(uintptr_t)hpa, VM_RAM_CHUNK);
		/* while tracking, a chunk first mapped by a read must fault on its
		 * first write like any other write-protected chunk */
		if (vm->dirty_tracking && !write)
			prot &= ~(unsigned long)PTE_W;
		if (vm->page_log) {
			/* 4 KiB dirty logging: 4 KiB leaves, each writable only
			 * once its first write has been logged */
			rc = dirty_log_map_chunk(vm, c, hpa, table_page);
			if (!rc && write)
				dirty_log_mark_range(vm, gpa, len, c, true);
		} else {
			rc = gstage_map(vm->gstage_root, cgpa, hpa, VM_RAM_CHUNK, prot, table_page,
					vm);
		}
		if (!rc) {
			mark_populated(vm, c);
			if (vm->dirty_tracking && write)
				vm->dirty[c / 64] |= bit;
		}
	}
	spin_unlock(&vm->mem_lock);
	if (fence)
		tlb_local_gstage(vm);	/* an upgrade: other harts fault and find W */
	return rc;
}

/* vm_ram_populate() of a range known to be RAM (len > 0). */
static inline __attribute__((always_inline)) int populate_ram(struct vm *vm, gpa_t gpa,
							       uint64_t len, bool write)
{
	uint64_t first = (gpa - vm->cfg.ram_gpa) / VM_RAM_CHUNK;
	uint64_t last = (gpa + len - 1 - vm->cfg.ram_gpa) / VM_RAM_CHUNK;

	if (populated_fast(vm, first, last, write))
		return 0;
	return populate_locked(vm, gpa, len, write, first, last);
}

int vm_ram_populate(struct vm *vm, gpa_t gpa, uint64_t len, bool write)
{
	if (!len)
		return 0;
	if (!vm_gpa_range_is_ram(vm, gpa, len))
		return -HYP_EFAULT;
	return populate_ram(vm, gpa, len, write);
}

void vm_ram_discard(struct vm *vm)
{
	uint64_t chunks = vm->cfg.ram_size / VM_RAM_CHUNK;

	spin_lock(&vm->mem_lock);
	/* before anything changes: a live snapshot must not read the new boot */
	__atomic_store_n(&vm->ram_epoch, vm->ram_epoch + 1, __ATOMIC_RELEASE);
	for (uint64_t c = 0; c < chunks; c++) {
		/* the 2 MiB entry, a leaf or (dirty logging) a table of 4 KiB ones */
		uint64_t *pmd = gstage_pmd(vm->gstage_root, vm->cfg.ram_gpa + c * VM_RAM_CHUNK);

		if (pmd)
			*pmd = 0;
		__atomic_store_n(&vm->populated[c / 64], vm->populated[c / 64] & ~(1UL << (c % 64)),
				 __ATOMIC_RELAXED);
	}
	spin_unlock(&vm->mem_lock);
	/* the VM's vCPUs are off CPU, but harts that ran it may still cache its
	 * translations: a reboot's first-touch zeroing must not be skipped */
	tlb_flush_vm_gstage(vm);
}

uint64_t vm_ram_write_protect(struct vm *vm)
{
	uint64_t chunks = vm->cfg.ram_size / VM_RAM_CHUNK, n = 0;

	spin_lock(&vm->mem_lock);
	__atomic_store_n(&vm->dirty_tracking, true, __ATOMIC_RELAXED);	/* read lock-free too */
	for (uint64_t c = 0; c < chunks; c++) {
		uint64_t *pte;

		vm->dirty[c / 64] &= ~(1UL << (c % 64));
		if (!(vm->populated[c / 64] & (1UL << (c % 64))))
			continue;
		pte = gstage_lookup(vm->gstage_root, vm->cfg.ram_gpa + c * VM_RAM_CHUNK, NULL);
		if (pte) {
			*pte &= ~PTE_W;
			n++;
		}
	}
	spin_unlock(&vm->mem_lock);
	/* every hart that ran this VM (not only where its vCPUs are now) must drop
	 * writable translations, or a write there would never be seen as dirty */
	tlb_flush_vm_gstage(vm);
	return n;
}

bool vm_ram_resolve_write(struct vm *vm, gpa_t gpa)
{
	uint64_t c = (gpa - vm->cfg.ram_gpa) / VM_RAM_CHUNK, *pte;
	bool done = false;

	bool granted = false;

	spin_lock(&vm->mem_lock);
	pte = gstage_lookup(vm->gstage_root, gpa, NULL);
	if (pte && !(*pte & PTE_W)) {
		done = true;	/* a write-protected chunk: retried either way */
		if (before_first_write(vm, c)) {
			/* logged before it is writable */
			if (vm->page_log)
				dirty_log_mark_range(vm, gpa, 1, c, false);
			vm->dirty[c / 64] |= 1UL << (c % 64);
			*pte |= PTE_W;
			granted = true;
		}
	}
	spin_unlock(&vm->mem_lock);
	if (granted)
		tlb_local_gstage(vm);	/* this hart; others fault and find W set */
	return done;
}

void vm_ram_unprotect(struct vm *vm)
{
	uint64_t chunks = vm->cfg.ram_size / VM_RAM_CHUNK;

	spin_lock(&vm->mem_lock);
	__atomic_store_n(&vm->dirty_tracking, false, __ATOMIC_RELAXED);
	for (uint64_t c = 0; c < chunks; c++) {
		uint64_t *pte = gstage_lookup(vm->gstage_root, vm->cfg.ram_gpa + c * VM_RAM_CHUNK,
					      NULL);

		if (pte && (vm->populated[c / 64] & (1UL << (c % 64))))
			*pte |= PTE_W;
	}
	spin_unlock(&vm->mem_lock);
	tlb_local_gstage(vm);	/* an upgrade: other harts fault once and find W */
}

uint64_t vm_ram_dirty_chunks(struct vm *vm)
{
	uint64_t n = 0;

	for (uint64_t c = 0; c < vm->cfg.ram_size / VM_RAM_CHUNK; c++)
		n += (vm->dirty[c / 64] >> (c % 64)) & 1;
	return n;
}

void *vm_gpa_to_hva(struct vm *vm, gpa_t gpa, uint64_t len, bool write)
{
	if (!vm_gpa_range_is_ram(vm, gpa, len) || (len && populate_ram(vm, gpa, len, write)))
		return NULL;
	/* guest RAM is one contiguous host block; the hypervisor's map is identity (hyp_map.h) */
	return (void *)(uintptr_t)(vm->ram_hpa + (gpa - vm->cfg.ram_gpa));
}

int vm_copy_from_guest(struct vm *vm, void *dst, gpa_t src, uint64_t len)
{
	void *p = vm_gpa_to_hva(vm, src, len, false);

	if (!p)
		return -HYP_EFAULT;
	memcpy(dst, p, len);
	return 0;
}

int vm_copy_to_guest(struct vm *vm, gpa_t dst, const void *src, uint64_t len)
{
	void *p = vm_gpa_to_hva(vm, dst, len, true);

	if (!p)
		return -HYP_EFAULT;
	memcpy(p, src, len);
	return 0;
}
