/* SPDX-License-Identifier: MIT */
/* The guest physical windows the device models serve. */
#include <errno.h>
#include <vm.h>

int vm_mmio_register(struct vm *vm, const struct mmio_region *r)
{
	if (!r->size || r->base + r->size < r->base || vm->nr_mmio == VM_MMIO_MAX)
		return -HYP_EINVAL;
	if (r->base < vm->cfg.ram_gpa + vm->cfg.ram_size && vm->cfg.ram_gpa < r->base + r->size)
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
