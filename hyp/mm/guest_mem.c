/* SPDX-License-Identifier: MIT */
/* Guest RAM access for the hypervisor: every guest-supplied address goes through here. */
#include <string.h>
#include <errno.h>
#include <gstage.h>
#include <hfence.h>
#include <mm.h>
#include <vm.h>

bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	return range_within(gpa, len, vm->ram_gpa, vm->ram_size);
}

static uint64_t table_page(void)
{
	return mm_alloc(PAGE_SIZE, PAGE_SIZE);
}

int vm_ram_init(struct vm *vm)
{
	uint64_t chunks = vm->ram_size / VM_RAM_CHUNK;
	uint64_t bytes = ALIGN_UP((chunks + 63) / 64 * 8, PAGE_SIZE);

	vm->populated = (uint64_t *)(uintptr_t)mm_alloc(bytes, PAGE_SIZE);
	vm->dirty = (uint64_t *)(uintptr_t)mm_alloc(bytes, PAGE_SIZE);
	return vm->populated && vm->dirty ? 0 : -HYP_ENOMEM;
}

int vm_ram_populate(struct vm *vm, gpa_t gpa, uint64_t len, bool write)
{
	uint64_t first, last;
	bool fence = false;
	int rc = 0;

	if (!len)
		return 0;
	if (!vm_gpa_range_is_ram(vm, gpa, len))
		return -HYP_EFAULT;
	first = (gpa - vm->ram_gpa) / VM_RAM_CHUNK;
	last = (gpa + len - 1 - vm->ram_gpa) / VM_RAM_CHUNK;
	spin_lock(&vm->mem_lock);
	for (uint64_t c = first; c <= last && !rc; c++) {
		uint64_t bit = 1UL << (c % 64), *pte;
		gpa_t cgpa = vm->ram_gpa + c * VM_RAM_CHUNK;
		hpa_t hpa = vm->ram_hpa + c * VM_RAM_CHUNK;
		unsigned long prot = GSTAGE_PROT_RAM;

		if (vm->populated[c / 64] & bit) {
			/* dirty tracking: a write by the hypervisor counts too */
			if (write && vm->dirty_tracking) {
				pte = gstage_lookup(vm->gstage_root, cgpa, NULL);
				if (pte && !(*pte & PTE_W)) {
					*pte |= PTE_W;
					fence = true;
				}
				vm->dirty[c / 64] |= bit;
			}
			continue;
		}
		/* never show a guest what the chunk held before (another boot) */
		memset((void *)(uintptr_t)hpa, 0, VM_RAM_CHUNK);
		/* while tracking, a chunk first mapped by a read must fault on its
		 * first write like any other write-protected chunk */
		if (vm->dirty_tracking && !write)
			prot &= ~(unsigned long)PTE_W;
		rc = gstage_map(vm->gstage_root, cgpa, hpa, VM_RAM_CHUNK, prot, table_page);
		if (!rc) {
			vm->populated[c / 64] |= bit;
			if (vm->dirty_tracking && write)
				vm->dirty[c / 64] |= bit;
		}
	}
	spin_unlock(&vm->mem_lock);
	if (fence)
		hfence_gvma_vmid(vm->vmid);
	return rc;
}

void vm_ram_discard(struct vm *vm)
{
	uint64_t chunks = vm->ram_size / VM_RAM_CHUNK;

	spin_lock(&vm->mem_lock);
	for (uint64_t c = 0; c < chunks; c++) {
		uint64_t *pte = gstage_lookup(vm->gstage_root, vm->ram_gpa + c * VM_RAM_CHUNK, NULL);

		if (pte)
			*pte = 0;
		vm->populated[c / 64] &= ~(1UL << (c % 64));
	}
	spin_unlock(&vm->mem_lock);
	/* all of this VM's vCPUs are off CPU; no hart may keep old translations */
	hfence_gvma_vmid(vm->vmid);
}

uint64_t vm_ram_write_protect(struct vm *vm, struct vcpu *self)
{
	uint64_t chunks = vm->ram_size / VM_RAM_CHUNK, n = 0;

	spin_lock(&vm->mem_lock);
	vm->dirty_tracking = true;
	for (uint64_t c = 0; c < chunks; c++) {
		uint64_t *pte;

		vm->dirty[c / 64] &= ~(1UL << (c % 64));
		if (!(vm->populated[c / 64] & (1UL << (c % 64))))
			continue;
		pte = gstage_lookup(vm->gstage_root, vm->ram_gpa + c * VM_RAM_CHUNK, NULL);
		if (pte) {
			*pte &= ~PTE_W;
			n++;
		}
	}
	spin_unlock(&vm->mem_lock);
	/* every hart that runs this VM must drop the writable translations */
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		vcpu_request_sync(self, &vm->vcpus[i], VCPU_REQ_HFENCE_GVMA);
	return n;
}

bool vm_ram_resolve_write(struct vm *vm, gpa_t gpa)
{
	uint64_t c = (gpa - vm->ram_gpa) / VM_RAM_CHUNK, *pte;
	bool done = false;

	spin_lock(&vm->mem_lock);
	pte = gstage_lookup(vm->gstage_root, gpa, NULL);
	if (pte && !(*pte & PTE_W)) {
		*pte |= PTE_W;
		vm->dirty[c / 64] |= 1UL << (c % 64);
		done = true;
	}
	spin_unlock(&vm->mem_lock);
	if (done)
		hfence_gvma_vmid(vm->vmid);	/* this hart; others fault and find W set */
	return done;
}

uint64_t vm_ram_dirty_chunks(struct vm *vm)
{
	uint64_t n = 0;

	for (uint64_t c = 0; c < vm->ram_size / VM_RAM_CHUNK; c++)
		n += (vm->dirty[c / 64] >> (c % 64)) & 1;
	return n;
}

void *vm_gpa_to_hva(struct vm *vm, gpa_t gpa, uint64_t len, bool write)
{
	if (!vm_gpa_range_is_ram(vm, gpa, len) || vm_ram_populate(vm, gpa, len, write))
		return NULL;
	/* guest RAM is one contiguous host block; the hypervisor runs with satp=Bare */
	return (void *)(uintptr_t)(vm->ram_hpa + (gpa - vm->ram_gpa));
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

int vm_mmio_register(struct vm *vm, const struct mmio_region *r)
{
	if (!r->size || r->base + r->size < r->base || vm->nr_mmio == VM_MMIO_MAX)
		return -HYP_EINVAL;
	if (r->base < vm->ram_gpa + vm->ram_size && vm->ram_gpa < r->base + r->size)
		return -HYP_EEXIST;
	for (unsigned int i = 0; i < vm->nr_mmio; i++) {
		const struct mmio_region *o = &vm->mmio[i];

		if (r->base < o->base + o->size && o->base < r->base + r->size)
			return -HYP_EEXIST;
	}
	vm->mmio[vm->nr_mmio++] = *r;
	return 0;
}

struct mmio_region *vm_mmio_find(struct vm *vm, gpa_t gpa)
{
	for (unsigned int i = 0; i < vm->nr_mmio; i++)
		if (gpa >= vm->mmio[i].base && gpa - vm->mmio[i].base < vm->mmio[i].size)
			return &vm->mmio[i];
	return NULL;
}
