/* SPDX-License-Identifier: MIT */
/* Guest RAM access for the hypervisor: every guest-supplied address goes through here. */
#include <string.h>
#include <errno.h>
#include <vm.h>

bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	return range_within(gpa, len, vm->ram_gpa, vm->ram_size);
}

void *vm_gpa_to_hva(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	if (!vm_gpa_range_is_ram(vm, gpa, len))
		return NULL;
	/* guest RAM is one contiguous host block; the hypervisor runs with satp=Bare */
	return (void *)(uintptr_t)(vm->ram_hpa + (gpa - vm->ram_gpa));
}

int vm_copy_from_guest(const struct vm *vm, void *dst, gpa_t src, uint64_t len)
{
	void *p = vm_gpa_to_hva(vm, src, len);

	if (!p)
		return -HYP_EFAULT;
	memcpy(dst, p, len);
	return 0;
}

int vm_copy_to_guest(const struct vm *vm, gpa_t dst, const void *src, uint64_t len)
{
	void *p = vm_gpa_to_hva(vm, dst, len);

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
