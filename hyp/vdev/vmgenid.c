/* SPDX-License-Identifier: MIT */
/* VM generation ID (devicetree binding "microsoft,vmgenid"): 16 bytes a guest
 * reads, and an interrupt when they change. A restored VM gets a new ID, so a
 * Linux guest reseeds its random number generator (add_vmfork_randomness)
 * and two restores of one snapshot never share their randomness. */
#include <string.h>
#include <errno.h>
#include <entropy.h>
#include <mmio.h>
#include <vm.h>

/* The line stays up from a change until the guest reads the new ID. */
static void set_line(struct vm *vm, bool level)
{
	vm->genid.s.level = level;
	vplic_set_level(vm, VMGENID_IRQ, level);
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

/* A restore is a new generation: the saved ID is checked, then replaced, and
 * the guest is told. A migration moves the same VM: its ID stays (the VM
 * Generation ID spec changes it for copies, not for a live move). */
static int vmgenid_load(struct vm *vm, const void *in)
{
	static const uint8_t zero[sizeof(vm->genid.s.pad)];
	struct vmgenid_state s;

	memcpy(&s, in, sizeof(s));
	if (s.level > 1 || memcmp(s.pad, zero, sizeof(zero)))
		return -HYP_EINVAL;
	spin_lock(&vm->genid.lock);
	vm->genid.s = s;
	if (!vm->moved_in) {
		new_id(vm);
		set_line(vm, true);
	}
	spin_unlock(&vm->genid.lock);
	return 0;
}

const struct vdev_ops vmgenid_ops = {
	.name = "vmgenid",
	.state_size = sizeof(struct vmgenid_state),
	.reg = vmgenid_register,
	.reset = vmgenid_reset,
	.save = vmgenid_save,
	.load = vmgenid_load,
};
