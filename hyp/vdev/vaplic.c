/* SPDX-License-Identifier: MIT */
/* The APLIC of an AIA VM (docs/design-aia.md 3.10): one supervisor-level
 * domain in MSI mode at VAPLIC_BASE, sources 1..31, over the register and
 * pending-bit rules of hyp/lib/aplic_model.c. Each MSI it sends becomes an
 * injection into the target vCPU's IMSIC file; one that names no file (hart
 * index past the VM's vCPUs, a guest index, an EIID outside 1..imsic_ids)
 * is dropped, as a store to no file would be. Its state is the aplic device
 * of snapshot version 7 (aplic_ops). Lock order: vaplic.lock, then
 * a vCPU's IMSIC lock (vimsic_inject()), never the other way. */
#include <stddef.h>
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

	if (!vm_is_aia(vm))
		return 0;	/* a PLIC VM has the PLIC's window instead */
	return vm_mmio_register(vm, &r);
}

/* The lock is not part of the state: another hart may hold it. */
void vaplic_reset(struct vm *vm)
{
	spin_lock(&vm->aplic.lock);
	aplic_model_reset(&vm->aplic.s);
	spin_unlock(&vm->aplic.lock);
}

/* The model's state is the snapshot's device record, field for field (the
 * model lives in lib, below the stream headers it must not know). */
#define SAME(f)	(offsetof(struct aplic_state, f) == offsetof(struct snap_dev_aplic, f) && \
		 sizeof(((struct aplic_state *)0)->f) == sizeof(((struct snap_dev_aplic *)0)->f))
_Static_assert(sizeof(struct aplic_state) == sizeof(struct snap_dev_aplic) && SAME(domaincfg) &&
	       SAME(sourcecfg) && SAME(target) && SAME(pending) && SAME(enabled) && SAME(level) &&
	       SAME(genmsi) && SAME(pad), "struct aplic_state is struct snap_dev_aplic");
_Static_assert(SNAP_APLIC_SOURCES == APLIC_MODEL_SOURCES &&
	       SNAP_APLIC_TARGET_BITS == APLIC_MODEL_TARGET_MASK &&
	       SNAP_APLIC_SOURCE_BITS == APLIC_MODEL_SRC_MASK, "the table's constants are the model's");

/* The VM is paused: nothing drives a line or sends an MSI meanwhile. */
static void vaplic_save(struct vm *vm, void *out)
{
	spin_lock(&vm->aplic.lock);
	memcpy(out, &vm->aplic.s, sizeof(vm->aplic.s));
	spin_unlock(&vm->aplic.lock);
}

#define FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_dev_aplic, n, t), bits, value, ro, live, SNAP_DEV_WHY(n, what) },
static const struct snap_field fields[] = { SNAP_DEV_APLIC(FIELD) };

/* What the table cannot say: the relations between sources' modes, inputs,
 * pending and enable bits a guest's writes keep (aplic_model_check()). */
static const char *vaplic_check(const struct vm *vm, const void *state, uint32_t *offset)
{
	struct aplic_state s;

	(void)vm;
	memcpy(&s, state, sizeof(s));
	return aplic_model_check(&s, offset);
}

/* Checked: no MSI is due (with IE, nothing pending is enabled), so none is
 * sent; the vCPUs' files were loaded with their VCPU sections. */
static void vaplic_load(struct vm *vm, const void *in)
{
	spin_lock(&vm->aplic.lock);
	memcpy(&vm->aplic.s, in, sizeof(vm->aplic.s));
	spin_unlock(&vm->aplic.lock);
}

static bool vaplic_present(const struct vm *vm)
{
	return vm_is_aia(vm);
}

const struct vdev_ops aplic_ops = {
	VDEV_STATE(aplic, fields),
	.reg = vaplic_register,
	.reset = vaplic_reset,
	.save = vaplic_save,
	.check = vaplic_check,
	.load = vaplic_load,
	.present = vaplic_present,
};
