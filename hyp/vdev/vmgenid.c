/* SPDX-License-Identifier: MIT */
/* VM generation ID (devicetree binding "microsoft,vmgenid"): 16 bytes a guest
 * reads, and an interrupt when they change. A restored VM gets a new ID, so a
 * Linux guest reseeds its random number generator (add_vmfork_randomness)
 * and two restores of one snapshot never share their randomness. */
#include <string.h>
#include <entropy.h>
#include <mmio.h>
#include <vm.h>

/* The line stays up from a change until the guest reads the new ID. */
static void set_line(struct vm *vm, bool level)
{
	vm->genid.s.level = level;
	virq_set_level(vm, VMGENID_IRQ, level);
}

static int vmgenid_access(struct vm *vm, void *priv, struct mmio_access *a)
{
	uint64_t off = a->gpa - VMGENID_BASE, v = 0;

	(void)priv;
	if (a->is_write)
		return 0;	/* read-only: writes are ignored */
	spin_lock(&vm->genid.lock);
	for (unsigned int i = 0; i < a->width; i++)
		if (off + i < sizeof(vm->genid.s.id))
			v |= (uint64_t)vm->genid.s.id[off + i] << (8 * i);
	a->value = v;
	if (vm->genid.s.level)
		set_line(vm, false);
	spin_unlock(&vm->genid.lock);
	return 0;
}

static int vmgenid_register(struct vm *vm)
{
	struct mmio_region r = { VMGENID_BASE, VMGENID_SIZE, vmgenid_access, NULL };

	return vm_mmio_register(vm, &r);
}

/* A fresh ID, never one another VM or generation had. */
static void new_id(struct vm *vm)
{
	entropy_fresh(vm->genid.s.id, sizeof(vm->genid.s.id));
}

static void vmgenid_reset(struct vm *vm)
{
	spin_lock(&vm->genid.lock);
	memset(&vm->genid.s, 0, sizeof(vm->genid.s));
	new_id(vm);
	spin_unlock(&vm->genid.lock);
}

static void vmgenid_save(struct vm *vm, void *out)
{
	spin_lock(&vm->genid.lock);
	memcpy(out, &vm->genid.s, sizeof(vm->genid.s));
	spin_unlock(&vm->genid.lock);
}

#define FIELD(n, t, d, bits, value, ro, live, what) \
	{ SNAP_ROW_HEAD(struct snap_dev_vmgenid, n, t), bits, value, ro, live, SNAP_DEV_WHY(n, what) },
static const struct snap_field fields[] = { SNAP_DEV_VMGENID(FIELD) };

/* A restore is a new generation: the saved ID (checked by the table) is
 * replaced, and the guest is told. A migration moves the same VM: its ID
 * stays (the VM Generation ID spec changes it for copies, not for a live
 * move). */
static void vmgenid_load(struct vm *vm, const void *in)
{
	spin_lock(&vm->genid.lock);
	memcpy(&vm->genid.s, in, sizeof(vm->genid.s));
	if (!vm->moved_in) {
		new_id(vm);
		set_line(vm, true);
	}
	spin_unlock(&vm->genid.lock);
}

const struct vdev_ops vmgenid_ops = {
	VDEV_STATE(vmgenid, fields),
	.reg = vmgenid_register,
	.reset = vmgenid_reset,
	.save = vmgenid_save,
	.load = vmgenid_load,
};
