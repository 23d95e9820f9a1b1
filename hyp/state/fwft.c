/* SPDX-License-Identifier: MIT */
/* The SBI FWFT features of a vCPU, as one table {id, supported, set, get,
 * reset, lock}: LANDING_PAD and SHADOW_STACK drive henvcfg.LPE/SSE (CFI state,
 * cfi_state.c), PTE_AD_HW_UPDATING henvcfg.ADUE, and MISALIGNED_EXC_DELEG is
 * fixed at 1. DOUBLE_TRAP and POINTER_MASKING_PMLEN are not in it. */
#include <arch/riscv/csr.h>
#include <abi/sbi_defs.h>
#include <atomic.h>
#include <cfi.h>
#include <fwft.h>
#include <vm.h>

/* Misaligned exceptions go to the guest by hedeleg (HEDELEG_GUEST), as the
 * spec's note allows a hypervisor: the value is 1 from reset on and a request
 * for 0 (emulation by the SBI) is DENIED. */
static long misaligned_set(struct vcpu *v, unsigned long value)
{
	(void)v;
	return value ? SBI_SUCCESS : SBI_ERR_DENIED;
}

static unsigned long misaligned_get(const struct vcpu *v)
{
	(void)v;
	return 1;
}

static void misaligned_reset(struct vcpu *v)
{
	(void)v;	/* always 1: nothing to reset but the lock */
}

static uint8_t *misaligned_lock(struct vcpu *v)
{
	return &v->g.fwft_mem.misaligned_locked;
}

static bool lp_supported(const struct vcpu *v)
{
	return cfi_vm_has_lp(v->vm);
}

static long lp_set(struct vcpu *v, unsigned long value)
{
	v->g.fwft.lp_value = (uint8_t)value;
	cfi_apply_henvcfg(v);
	return SBI_SUCCESS;
}

static unsigned long lp_get(const struct vcpu *v)
{
	return v->g.fwft.lp_value;
}

static void lp_reset(struct vcpu *v)
{
	v->g.fwft.lp_value = 0;
}

static uint8_t *lp_lock(struct vcpu *v)
{
	return &v->g.fwft.lp_locked;
}

static bool ss_supported(const struct vcpu *v)
{
	return cfi_vm_has_ss(v->vm);
}

static long ss_set(struct vcpu *v, unsigned long value)
{
	v->g.fwft.ss_value = (uint8_t)value;
	cfi_apply_henvcfg(v);
	return SBI_SUCCESS;
}

static unsigned long ss_get(const struct vcpu *v)
{
	return v->g.fwft.ss_value;
}

static void ss_reset(struct vcpu *v)
{
	v->g.fwft.ss_value = 0;
}

static uint8_t *ss_lock(struct vcpu *v)
{
	return &v->g.fwft.ss_locked;
}

/* henvcfg.ADUE, where the VM was given Svadu (its DT then lists svade and
 * svadu: A/D updating off at reset, turned on here). */
static bool pte_ad_supported(const struct vcpu *v)
{
	return v->vm->cfg.features & VM_FEAT_SVADU;
}

static long pte_ad_set(struct vcpu *v, unsigned long value)
{
	if (v->g.fwft_mem.pte_ad_value != value) {
		v->g.fwft_mem.pte_ad_value = (uint8_t)value;
		v->henvcfg = (v->henvcfg & ~ENVCFG_ADUE) | (value ? ENVCFG_ADUE : 0);
		csr_write(CSR_HENVCFG, v->henvcfg);
		/* cached translations may hold the A/D behaviour of before */
		atomic_or(&v->requests, VCPU_REQ_HFENCE_VVMA);
	}
	return SBI_SUCCESS;
}

static unsigned long pte_ad_get(const struct vcpu *v)
{
	return v->g.fwft_mem.pte_ad_value;
}

static void pte_ad_reset(struct vcpu *v)
{
	v->g.fwft_mem.pte_ad_value = 0;
}

static uint8_t *pte_ad_lock(struct vcpu *v)
{
	return &v->g.fwft_mem.pte_ad_locked;
}

#define FEATURE(fid, name, sup)                                                \
	{ .id = (fid), .supported = (sup), .set = name##_set, .get = name##_get, \
	  .reset = name##_reset, .lock = name##_lock }

static const struct fwft_feature features[] = {
	FEATURE(SBI_FWFT_MISALIGNED_EXC_DELEG, misaligned, NULL),
	FEATURE(SBI_FWFT_LANDING_PAD, lp, lp_supported),
	FEATURE(SBI_FWFT_SHADOW_STACK, ss, ss_supported),
	FEATURE(SBI_FWFT_PTE_AD_HW_UPDATING, pte_ad, pte_ad_supported),
};

const struct fwft_feature *fwft_feature(uint32_t id)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(features); i++)
		if (features[i].id == id)
			return &features[i];
	return NULL;
}

void fwft_vcpu_reset(struct vcpu *v)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(features); i++) {
		*features[i].lock(v) = 0;
		features[i].reset(v);
	}
}
