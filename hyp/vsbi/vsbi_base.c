/* SPDX-License-Identifier: MIT */
/* SBI BASE: versions, implementation identity, extension probing. */
#include <vsbi.h>
#include <vm.h>

static void base_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	ret->error = SBI_SUCCESS;
	switch (fid) {
	case SBI_BASE_GET_SPEC_VERSION:
		/* 3.0: Linux uses FWFT only from 3.0 on (cfi-virt.md 5.4) */
		ret->value = SBI_SPEC_VERSION(3, 0);
		break;
	case SBI_BASE_GET_IMPL_ID:
		ret->value = CARAPACE_SBI_IMPL_ID;
		break;
	case SBI_BASE_GET_IMPL_VERSION:
		ret->value = CARAPACE_SBI_IMPL_VERSION;
		break;
	case SBI_BASE_PROBE_EXT:
		ret->value = vsbi_find(v->vm, VSBI_ARG(v, 0)) ? 1 : 0;
		break;
	case SBI_BASE_GET_MVENDORID:
	case SBI_BASE_GET_MARCHID:
	case SBI_BASE_GET_MIMPID:
		ret->value = 0;	/* a virtual CPU: no vendor, architecture or implementation id */
		break;
	default:
		ret->error = SBI_ERR_NOT_SUPPORTED;
	}
}

const struct vsbi_ext vsbi_base = {
	.name = "base",
	.eid_first = SBI_EXT_BASE,
	.eid_last = SBI_EXT_BASE,
	.call = base_call,
};
