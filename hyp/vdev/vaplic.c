/* SPDX-License-Identifier: MIT */
/* The APLIC of an AIA VM (docs/design-aia.md 3.10): one supervisor-level
 * domain in MSI mode at VAPLIC_BASE, sources 1..31, over the register and
 * pending-bit rules of hyp/lib/aplic_model.c. Each MSI it sends becomes an
 * injection into the target vCPU's IMSIC file; one that names no file (hart
 * index past the VM's vCPUs, a guest index, an EIID outside 1..imsic_ids)
 * is dropped, as a store to no file would be. Lock order: vaplic.lock, then
 * a vCPU's IMSIC lock (vimsic_inject()), never the other way. */
#include <string.h>
#include <aplic_model.h>
#include <errno.h>
#include <mmio.h>
#include <vimsic.h>
#include <vm.h>

static void send_msi(void *ctx, uint32_t hart, uint32_t guest, uint32_t eiid)
{
	struct vm *vm = ctx;

	if (hart < vm->cfg.nr_vcpus && guest == 0 && eiid >= 1 && eiid <= vm->cfg.imsic_ids)
		vimsic_inject(&vm->vcpus[hart], eiid);
}

void vaplic_set_level(struct vm *vm, unsigned int irq, bool level)
{
	spin_lock(&vm->aplic.lock);
	aplic_model_set_level(&vm->aplic.s, irq, level, send_msi, vm);
	spin_unlock(&vm->aplic.lock);
}

static int vaplic_access(struct vm *vm, void *priv, struct mmio_access *a)
{
	uint32_t off = (uint32_t)(a->gpa - VAPLIC_BASE);

	(void)priv;
	if (a->width != 4 || (off & 3))
		return -HYP_EINVAL;	/* 32-bit registers only */
	spin_lock(&vm->aplic.lock);
	if (a->is_write)
		aplic_model_write(&vm->aplic.s, off, (uint32_t)a->value, send_msi, vm);
	else
		a->value = aplic_model_read(&vm->aplic.s, off);
	spin_unlock(&vm->aplic.lock);
	return 0;
}

int vaplic_register(struct vm *vm)
{
	struct mmio_region r = { VAPLIC_BASE, VAPLIC_SIZE, vaplic_access, NULL };

	return vm_mmio_register(vm, &r);
}

/* The lock is not part of the state: another hart may hold it. */
void vaplic_reset(struct vm *vm)
{
	spin_lock(&vm->aplic.lock);
	aplic_model_reset(&vm->aplic.s);
	spin_unlock(&vm->aplic.lock);
}
