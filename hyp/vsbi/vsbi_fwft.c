/* SPDX-License-Identifier: MIT */
/* SBI FWFT: per-vCPU firmware features. LANDING_PAD and SHADOW_STACK are backed by
 * hyp/cfi; the other defined features are NOT_SUPPORTED, reserved IDs DENIED. */
#include <cfi.h>
#include <vsbi.h>
#include <vm.h>

#define FWFT_LOCAL_DEFINED_LAST	SBI_FWFT_POINTER_MASKING_PMLEN

static bool feature_defined(uint32_t f)
{
	return f <= FWFT_LOCAL_DEFINED_LAST;	/* no global feature is defined yet */
}

static bool feature_is_cfi(uint32_t f)
{
	return f == SBI_FWFT_LANDING_PAD || f == SBI_FWFT_SHADOW_STACK;
}

static void fwft_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	unsigned long feature = VSBI_ARG(v, 0);
	uint32_t f = (uint32_t)feature;	/* uint32 parameter */

	if (fid != SBI_FWFT_SET && fid != SBI_FWFT_GET) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	if (!feature_defined(f)) {
		ret->error = SBI_ERR_DENIED;
		return;
	}
	if (!feature_is_cfi(f)) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	if (fid == SBI_FWFT_SET)
		ret->error = cfi_fwft_set(v, f, VSBI_ARG(v, 1), VSBI_ARG(v, 2));
	else
		ret->error = cfi_fwft_get(v, f, &ret->value);
}

const struct vsbi_ext vsbi_fwft = {
	.name = "fwft",
	.eid_first = SBI_EXT_FWFT,
	.eid_last = SBI_EXT_FWFT,
	.call = fwft_call,
};
