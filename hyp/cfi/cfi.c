/* SPDX-License-Identifier: MIT */
/* Per-vCPU CFI state: FWFT LANDING_PAD/SHADOW_STACK drive henvcfg.LPE/SSE (with
 * LOCK), and software-check exceptions are counted and routed by VM policy. */
#include <arch/riscv/csr.h>
#include <hyp/sbi_defs.h>
#include <cfi.h>
#include <hart.h>
#include <vm.h>

bool cfi_vm_has_lp(const struct vm *vm)
{
	return hart_caps.zicfilp && vm->cfi_policy != CFI_POLICY_OFF;
}

bool cfi_vm_has_ss(const struct vm *vm)
{
	return hart_caps.zicfiss && vm->cfi_policy != CFI_POLICY_OFF;
}

void cfi_vcpu_reset(struct vcpu *v)
{
	v->fwft = (struct cfi_fwft){ 0 };
	v->csr.henvcfg &= ~(ENVCFG_LPE | ENVCFG_SSE);
	v->csr.senvcfg = 0;
	v->csr.ssp = 0;
	v->ctx.sstatus &= ~SR_SPELP;
	v->csr.vsstatus &= ~SR_SPELP;
}

unsigned long cfi_henvcfg(const struct vcpu *v)
{
	return (v->fwft.lp_value ? ENVCFG_LPE : 0) | (v->fwft.ss_value ? ENVCFG_SSE : 0);
}

unsigned long cfi_hedeleg(const struct vm *vm)
{
	return vm->cfi_policy == CFI_POLICY_DELEGATE ? BIT(EXC_SW_CHECK) : 0;
}

/* The vCPU is loaded on this hart: keep the live henvcfg in step. */
static void apply_henvcfg(struct vcpu *v)
{
	v->csr.henvcfg = (v->csr.henvcfg & ~(ENVCFG_LPE | ENVCFG_SSE)) | cfi_henvcfg(v);
	csr_write(CSR_HENVCFG, v->csr.henvcfg);
	if (!(v->csr.henvcfg & ENVCFG_SSE))	/* guest's senvcfg.SSE must read 0 now */
		csr_clear(CSR_SENVCFG, ENVCFG_SSE);
}

long cfi_fwft_set(struct vcpu *v, unsigned long feature, unsigned long value,
		  unsigned long flags)
{
	uint8_t *val, *locked;
	bool supported;

	switch (feature) {
	case SBI_FWFT_LANDING_PAD:
		val = &v->fwft.lp_value;
		locked = &v->fwft.lp_locked;
		supported = cfi_vm_has_lp(v->vm);
		break;
	case SBI_FWFT_SHADOW_STACK:
		val = &v->fwft.ss_value;
		locked = &v->fwft.ss_locked;
		supported = cfi_vm_has_ss(v->vm);
		break;
	default:
		return SBI_ERR_DENIED;	/* caller filters defined-but-unsupported IDs */
	}
	if (!supported)
		return SBI_ERR_NOT_SUPPORTED;
	if (flags & ~SBI_FWFT_SET_FLAG_LOCK || value > 1)
		return SBI_ERR_INVALID_PARAM;
	if (*locked)
		return SBI_ERR_DENIED_LOCKED;
	*val = (uint8_t)value;
	*locked = flags & SBI_FWFT_SET_FLAG_LOCK;
	apply_henvcfg(v);
	return SBI_SUCCESS;
}

long cfi_fwft_get(struct vcpu *v, unsigned long feature, unsigned long *value)
{
	switch (feature) {
	case SBI_FWFT_LANDING_PAD:
		if (!cfi_vm_has_lp(v->vm))
			return SBI_ERR_NOT_SUPPORTED;
		*value = v->fwft.lp_value;
		return SBI_SUCCESS;
	case SBI_FWFT_SHADOW_STACK:
		if (!cfi_vm_has_ss(v->vm))
			return SBI_ERR_NOT_SUPPORTED;
		*value = v->fwft.ss_value;
		return SBI_SUCCESS;
	default:
		return SBI_ERR_DENIED;
	}
}

enum exit_action cfi_swcheck_exit(struct vcpu *v)
{
	unsigned long tval = csr_read(CSR_STVAL);
	bool from_vs = v->ctx.sstatus & SR_SPP;

	if (tval == SWCHECK_TVAL_LANDING_PAD)
		v->cfi_stats.swcheck_lp++;
	else
		v->cfi_stats.swcheck_ss++;
	v->cfi_stats.last_pc = v->ctx.sepc;
	v->cfi_stats.last_tval = tval;
	v->cfi_stats.last_from_vs = from_vs;
	if (v->vm->cfi_policy == CFI_POLICY_STRICT && from_vs) {
		vm_stop(v->vm, "vcpu %u: CFI violation in the guest kernel (%s) at pc 0x%lx "
			"(policy strict)", v->id,
			tval == SWCHECK_TVAL_LANDING_PAD ? "landing pad" : "shadow stack",
			v->ctx.sepc);
		return EXIT_VM_STOP;
	}
	vcpu_redirect_trap(v, EXC_SW_CHECK, tval);
	return EXIT_INJECTED;
}
