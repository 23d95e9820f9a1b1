/* SPDX-License-Identifier: MIT */
/* The SBI FWFT features of a vCPU, as one table: each feature is a 0/1
 * switch whose value and LOCK flag are bytes of the vCPU's guest state, read,
 * written and reset here for every feature alike; what a feature does beyond
 * its byte is its apply hook. LANDING_PAD and SHADOW_STACK drive
 * henvcfg.LPE/SSE (CFI state, cfi_state.c), PTE_AD_HW_UPDATING henvcfg.ADUE,
 * MISALIGNED_EXC_DELEG hedeleg's causes 4 and 6. DOUBLE_TRAP and
 * POINTER_MASKING_PMLEN are not in it. */
#include <stddef.h>
#include <arch/riscv/csr.h>
#include <abi/sbi_defs.h>
#include <atomic.h>
#include <cfi.h>
#include <fwft.h>
#include <hart.h>
#include <vm.h>

static bool lp_supported(const struct vcpu *v)
{
	return cfi_vm_has_lp(v->vm);
}

static bool ss_supported(const struct vcpu *v)
{
	return cfi_vm_has_ss(v->vm);
}

/* henvcfg.ADUE, where the VM was given Svadu (its DT then lists svade and
 * svadu: A/D updating off at reset, turned on here). */
static bool pte_ad_supported(const struct vcpu *v)
{
	return v->vm->cfg.features & VM_FEAT_SVADU;
}

/* henvcfg follows the value; only a change costs a flush */
static void pte_ad_apply(struct vcpu *v)
{
	unsigned long adue = v->g.fwft_mem.pte_ad_value ? ENVCFG_ADUE : 0;

	if ((v->henvcfg & ENVCFG_ADUE) == adue)
		return;
	v->henvcfg = (v->henvcfg & ~ENVCFG_ADUE) | adue;
	csr_write(CSR_HENVCFG, v->henvcfg);
	/* cached translations may hold the A/D behaviour of before */
	atomic_or(&v->requests, VCPU_REQ_HFENCE_VVMA);
}

/* the exceptions MISALIGNED_EXC_DELEG = 0 keeps for the hypervisor to
 * emulate (KVM's and OpenSBI's choice too: address-misaligned loads and
 * stores; access faults stay the guest's) */
#define MISALIGNED_CAUSES	(BIT(EXC_LOAD_MISALIGNED) | BIT(EXC_STORE_MISALIGNED))

/* only the two causes change in the live CSR: an open CFI window's
 * hedeleg[18] (cfi/lp_redeliver.c) stays as it is */
static void misaligned_apply(struct vcpu *v)
{
	if (v->g.fwft_mem.misaligned_emulate)
		csr_clear(CSR_HEDELEG, MISALIGNED_CAUSES);
	else
		csr_set(CSR_HEDELEG, v->vm->hedeleg & MISALIGNED_CAUSES);
}

#define AT(field)	offsetof(struct vcpu_guest, field)

static const struct fwft_feature features[] = {
	/* 1 from reset on (implementation-defined): misaligned exceptions go to
	 * the guest by hedeleg (HEDELEG_GUEST); 0: the hypervisor emulates the
	 * accesses (dispatch/misaligned.c), as bare OpenSBI would */
	{ .id = SBI_FWFT_MISALIGNED_EXC_DELEG, .inverted = true, .apply = misaligned_apply,
	  .value_at = AT(fwft_mem.misaligned_emulate), .lock_at = AT(fwft_mem.misaligned_locked) },
	{ .id = SBI_FWFT_LANDING_PAD, .supported = lp_supported, .apply = cfi_apply_henvcfg,
	  .value_at = AT(fwft.lp_value), .lock_at = AT(fwft.lp_locked) },
	{ .id = SBI_FWFT_SHADOW_STACK, .supported = ss_supported, .apply = cfi_apply_henvcfg,
	  .value_at = AT(fwft.ss_value), .lock_at = AT(fwft.ss_locked) },
	{ .id = SBI_FWFT_PTE_AD_HW_UPDATING, .supported = pte_ad_supported, .apply = pte_ad_apply,
	  .value_at = AT(fwft_mem.pte_ad_value), .lock_at = AT(fwft_mem.pte_ad_locked) },
};

static uint8_t *byte_at(struct vcpu *v, uint16_t at)
{
	return (uint8_t *)&v->g + at;
}

const struct fwft_feature *fwft_feature(uint32_t id)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(features); i++)
		if (features[i].id == id)
			return &features[i];
	return NULL;
}

long fwft_feature_set(struct vcpu *v, const struct fwft_feature *f, unsigned long value)
{
	*byte_at(v, f->value_at) = (uint8_t)(f->inverted ? !value : value);
	if (f->apply)
		f->apply(v);
	return SBI_SUCCESS;
}

unsigned long fwft_feature_get(const struct vcpu *v, const struct fwft_feature *f)
{
	uint8_t b = *((const uint8_t *)&v->g + f->value_at);

	return f->inverted ? !b : b;
}

uint8_t *fwft_feature_lock(struct vcpu *v, const struct fwft_feature *f)
{
	return byte_at(v, f->lock_at);
}

void fwft_vcpu_reset(struct vcpu *v)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(features); i++) {
		*fwft_feature_lock(v, &features[i]) = 0;
		*byte_at(v, features[i].value_at) = 0;	/* the reset value, inverted or not */
	}
}
