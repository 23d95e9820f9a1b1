/* SPDX-License-Identifier: MIT */
/* SBI FWFT: the SET/GET calls around the per-vCPU feature table (state/fwft.c).
 * A feature the spec defines that is not in the table is NOT_SUPPORTED, a
 * reserved ID DENIED; flags, the value range and LOCK are checked here, once
 * for every feature. */
#include <abi/sbi_defs.h>
#include <fwft.h>
#include <vsbi.h>
#include <vm.h>

static bool feature_defined(uint32_t f)
{
	return f <= SBI_FWFT_POINTER_MASKING_PMLEN;	/* no global feature is defined yet */
}

static long set_call(struct vcpu *v, const struct fwft_feature *f, unsigned long value,
		     unsigned long flags)
{
	uint8_t *lock = fwft_feature_lock(v, f);
	long err;

	/* every feature here is a 0/1 switch */
	if (flags & ~SBI_FWFT_SET_FLAG_LOCK || value > 1)
		return SBI_ERR_INVALID_PARAM;
	if (*lock)
		return SBI_ERR_DENIED_LOCKED;
	err = fwft_feature_set(v, f, value);
	if (err == SBI_SUCCESS)
		*lock = flags & SBI_FWFT_SET_FLAG_LOCK;
	return err;
}

static void fwft_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	uint32_t id = (uint32_t)VSBI_ARG(v, 0);	/* uint32 parameter */
	const struct fwft_feature *f;

	if (fid != SBI_FWFT_SET && fid != SBI_FWFT_GET) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	f = fwft_feature(id);
	if (!f) {
		ret->error = feature_defined(id) ? SBI_ERR_NOT_SUPPORTED : SBI_ERR_DENIED;
		return;
	}
	if (f->supported && !f->supported(v)) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	if (fid == SBI_FWFT_SET) {
		ret->error = set_call(v, f, VSBI_ARG(v, 1), VSBI_ARG(v, 2));
		return;
	}
	ret->error = SBI_SUCCESS;
	ret->value = fwft_feature_get(v, f);
}

const struct vsbi_ext vsbi_fwft = {
	.name = "fwft",
	.eid_first = SBI_EXT_FWFT,
	.eid_last = SBI_EXT_FWFT,
	.call = fwft_call,
};
