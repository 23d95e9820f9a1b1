/* SPDX-License-Identifier: MIT */
/* SBI FWFT: per-vCPU firmware features. LANDING_PAD and SHADOW_STACK are backed by
 * hyp/cfi; MISALIGNED_EXC_DELEG and PTE_AD_HW_UPDATING are here; DOUBLE_TRAP and
 * POINTER_MASKING_PMLEN are NOT_SUPPORTED, reserved IDs DENIED. */
#include <arch/riscv/csr.h>
#include <atomic.h>
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

static bool feature_is_mem(uint32_t f)
{
	return f == SBI_FWFT_MISALIGNED_EXC_DELEG || f == SBI_FWFT_PTE_AD_HW_UPDATING;
}

/* Misaligned exceptions go to the guest by hedeleg (HEDELEG_GUEST), as the
 * spec's note allows a hypervisor: the reset value is 1 and a request for 0
 * (emulation by the SBI) is DENIED. */
static long misaligned_set(struct vcpu *v, unsigned long value, unsigned long flags)
{
	if (v->g.fwft_mem.misaligned_locked)
		return SBI_ERR_DENIED_LOCKED;
	if (!value)
		return SBI_ERR_DENIED;
	v->g.fwft_mem.misaligned_locked = flags & SBI_FWFT_SET_FLAG_LOCK;
	return SBI_SUCCESS;
}

/* henvcfg.ADUE, where the VM was given Svadu (its DT then lists svade and
 * svadu: A/D updating off at boot, turned on here). The vCPU is loaded. */
static long pte_ad_set(struct vcpu *v, unsigned long value, unsigned long flags)
{
	struct vcpu_fwft_mem *m = &v->g.fwft_mem;

	if (m->pte_ad_locked)
		return SBI_ERR_DENIED_LOCKED;
	if (m->pte_ad_value != value) {
		m->pte_ad_value = (uint8_t)value;
		v->henvcfg = (v->henvcfg & ~ENVCFG_ADUE) | (value ? ENVCFG_ADUE : 0);
		csr_write(CSR_HENVCFG, v->henvcfg);
		/* cached translations may hold the A/D behaviour of before */
		atomic_or(&v->requests, VCPU_REQ_HFENCE_VVMA);
	}
	m->pte_ad_locked = flags & SBI_FWFT_SET_FLAG_LOCK;
	return SBI_SUCCESS;
}

static long fwft_mem_call(struct vcpu *v, unsigned long fid, uint32_t f, unsigned long *value)
{
	unsigned long val = VSBI_ARG(v, 1), flags = VSBI_ARG(v, 2);
	bool pte_ad = f == SBI_FWFT_PTE_AD_HW_UPDATING;

	if (pte_ad && !(v->vm->cfg.features & VM_FEAT_SVADU))
		return SBI_ERR_NOT_SUPPORTED;
	if (fid == SBI_FWFT_GET) {
		*value = pte_ad ? v->g.fwft_mem.pte_ad_value : 1;
		return SBI_SUCCESS;
	}
	if (flags & ~SBI_FWFT_SET_FLAG_LOCK || val > 1)
		return SBI_ERR_INVALID_PARAM;
	return pte_ad ? pte_ad_set(v, val, flags) : misaligned_set(v, val, flags);
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
	if (feature_is_mem(f)) {
		ret->error = fwft_mem_call(v, fid, f, &ret->value);
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
