/* SPDX-License-Identifier: MIT */
/* The vIMSIC window of an AIA VM (docs/design-aia.md 3.6): a file page per
 * vCPU at VIMSIC_BASE, as QEMU virt's S files. A 32-bit store to offset 0
 * (seteipnum_le) of vCPU i's page raises that identity in its file; every
 * other offset (seteipnum_be included, which QEMU's hardware file ignores
 * too), every read, and the pages of vCPUs the VM lacks read 0 and ignore
 * writes. Only aligned 32-bit accesses exist: others fault, as in every
 * window. */
#include <atomic.h>
#include <errno.h>
#include <mmio.h>
#include <tlb.h>
#include <vimsic.h>
#include <vm.h>

_Static_assert(VIMSIC_SIZE == VM_MAX_VCPUS * VIMSIC_PAGE, "a vIMSIC page per possible vCPU");

static int vimsic_access(struct vm *vm, void *priv, struct mmio_access *a)
{
	uint64_t off = a->gpa - VIMSIC_BASE;
	uint64_t page = off / VIMSIC_PAGE;

	(void)priv;
	if (a->width != 4 || (off & 3))
		return -HYP_EINVAL;
	if (!a->is_write || page >= vm->cfg.nr_vcpus)
		return 0;	/* a read: the caller zeroed a->value */
	/* counted on the target: several senders may store at once */
	atomic_add(&vm->vcpus[page].imsic.sw_stores, 1);
	/* a store that exits while its target holds a guest file found an
	 * invalid entry this hart cached before the page was mapped: it reaches
	 * the file all the same, and the entry goes */
	if (off % VIMSIC_PAGE == 0 && vimsic_inject(&vm->vcpus[page], (uint32_t)a->value))
		tlb_local_gstage(vm);
	return 0;	/* a read: the caller zeroed a->value */
}

int vimsic_mmio_register(struct vm *vm)
{
	struct mmio_region r = { VIMSIC_BASE, VIMSIC_SIZE, vimsic_access, NULL };

	return vm_mmio_register(vm, &r);
}
