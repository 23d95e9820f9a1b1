/* SPDX-License-Identifier: MIT */
/* Carapace's debug extension, only in VMs declared with debug=1: lets test
 * guests drive hypervisor-side mechanisms they could not reach otherwise
 * (write-protecting their own RAM for dirty tracking). It acts on the
 * calling VM alone. */
#include <guest_mem.h>
#include <vsbi.h>
#include <vm.h>

static bool debug_probe(const struct vm *vm)
{
	return vm->cfg.debug_ext;
}

static void debug_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	ret->error = SBI_SUCCESS;
	switch (fid) {
	case SBI_CARAPACE_WRITE_PROTECT:
		ret->value = vm_ram_write_protect(v->vm);
		break;
	case SBI_CARAPACE_DIRTY_CHUNKS:
		ret->value = vm_ram_dirty_chunks(v->vm);
		break;
	case SBI_CARAPACE_EXITS:	/* what a test guest's own actions cost in exits */
		ret->value = vcpu_exits(v);
		break;
	default:
		ret->error = SBI_ERR_NOT_SUPPORTED;
	}
}

const struct vsbi_ext vsbi_debug = {
	.name = "carapace-debug",
	.eid_first = SBI_EXT_CARAPACE_DEBUG,
	.eid_last = SBI_EXT_CARAPACE_DEBUG,
	.probe = debug_probe,
	.call = debug_call,
};
