/* SPDX-License-Identifier: MIT */
/* Per-vCPU CFI state: FWFT LANDING_PAD/SHADOW_STACK drive henvcfg.LPE/SSE (with
 * LOCK). Software-check exits are handled in swcheck.c. */
#include <arch/riscv/csr.h>
#include <abi/sbi_defs.h>
#include <cfi.h>
#include <hart.h>
#include <vm.h>

/* What the VM was given at creation (vm_features()), never what the host
 * could give now: a restored guest keeps exactly its ISA. */
bool cfi_vm_has_lp(const struct vm *vm)
{
	return vm->cfg.features & VM_FEAT_ZICFILP;
}

bool cfi_vm_has_ss(const struct vm *vm)
{
	return vm->cfg.features & VM_FEAT_ZICFISS;
}

void cfi_vcpu_reset(struct vcpu *v)
{
	v->g.fwft = (struct cfi_fwft){ 0 };
	v->henvcfg &= ~(ENVCFG_LPE | ENVCFG_SSE);
	v->g.csr.senvcfg = 0;
	v->g.csr.ssp = 0;
	v->g.ctx.sstatus &= ~SR_SPELP;
	v->g.csr.vsstatus &= ~SR_SPELP;
	v->lp_window.owed = false;	/* went with the context it was owed to */
}

unsigned long cfi_henvcfg(const struct vcpu *v)
{
	return (v->g.fwft.lp_value ? ENVCFG_LPE : 0) | (v->g.fwft.ss_value ? ENVCFG_SSE : 0);
}

unsigned long cfi_hedeleg(const struct vm *vm)
{
	return vm->cfg.cfi_policy == CFI_POLICY_DELEGATE ? BIT(EXC_SW_CHECK) : 0;
}

/* Where ELP and the guest's own SPELP of a vCPU stopped in HS live. The spec
 * (and snapshot files, docs/snapshot-format.md) keep ELP in the trapped
 * context's SPELP (HS sstatus: g.ctx) and the guest's bit in vsstatus. A CPU
 * whose exit writes ELP over the guest's bit (CFI self-test; QEMU 10.0.2) has
 * one bit for both: vsstatus's while henvcfg.LPE=1 (banked), else the one HS
 * and the guest share (g.ctx); it holds ELP when the trapped mode had landing
 * pads on, else the guest's SPELP. */
static bool lp_on_in_trapped_mode(const struct vcpu *v)
{
	return (v->g.ctx.sstatus & SR_SPP) ? v->g.fwft.lp_value
					   : !!(v->g.csr.senvcfg & ENVCFG_LPE);
}

void cfi_spelp_to_spec(const struct vcpu *v, uint64_t *sstatus, uint64_t *vsstatus)
{
	uint64_t bit;

	if (!hart_caps.spelp_lost_at_exit)
		return;
	bit = (v->g.fwft.lp_value ? *vsstatus : *sstatus) & SR_SPELP;
	*sstatus &= ~SR_SPELP;
	*vsstatus &= ~SR_SPELP;
	if (lp_on_in_trapped_mode(v))
		*sstatus |= bit;
	else
		*vsstatus |= bit;
}

void cfi_spelp_from_spec(struct vcpu *v)
{
	unsigned long bit;

	if (!hart_caps.spelp_lost_at_exit)
		return;
	bit = (lp_on_in_trapped_mode(v) ? v->g.ctx.sstatus : v->g.csr.vsstatus) & SR_SPELP;
	v->g.ctx.sstatus &= ~SR_SPELP;
	v->g.csr.vsstatus &= ~SR_SPELP;
	if (v->g.fwft.lp_value)
		v->g.csr.vsstatus |= bit;
	else
		v->g.ctx.sstatus |= bit;
}

bool cfi_vcpu_elp(const struct vcpu *v)
{
	uint64_t s = v->g.ctx.sstatus, vs = v->g.csr.vsstatus;

	cfi_spelp_to_spec(v, &s, &vs);
	return s & SR_SPELP;
}

/* The vCPU is loaded on this hart: keep the live henvcfg in step. */
static void apply_henvcfg(struct vcpu *v)
{
	v->henvcfg = (v->henvcfg & ~(ENVCFG_LPE | ENVCFG_SSE)) | cfi_henvcfg(v);
	csr_write(CSR_HENVCFG, v->henvcfg);
	if (!(v->henvcfg & ENVCFG_SSE))	/* guest's senvcfg.SSE must read 0 now */
		csr_clear(CSR_SENVCFG, ENVCFG_SSE);
}

long cfi_fwft_set(struct vcpu *v, unsigned long feature, unsigned long value,
		  unsigned long flags)
{
	uint8_t *val, *locked;
	bool supported;

	switch (feature) {
	case SBI_FWFT_LANDING_PAD:
		val = &v->g.fwft.lp_value;
		locked = &v->g.fwft.lp_locked;
		supported = cfi_vm_has_lp(v->vm);
		break;
	case SBI_FWFT_SHADOW_STACK:
		val = &v->g.fwft.ss_value;
		locked = &v->g.fwft.ss_locked;
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
		*value = v->g.fwft.lp_value;
		return SBI_SUCCESS;
	case SBI_FWFT_SHADOW_STACK:
		if (!cfi_vm_has_ss(v->vm))
			return SBI_ERR_NOT_SUPPORTED;
		*value = v->g.fwft.ss_value;
		return SBI_SUCCESS;
	default:
		return SBI_ERR_DENIED;
	}
}

/* A VM without Zicfilp or Zicfiss (cfi=off) on a host that has them must not
 * reach them through senvcfg.LPE/SSE, which the hardware does not bank for VS
 * (SSE is read-only 0 anyway while henvcfg.SSE=0; LPE is not): with Smstateen
 * its senvcfg accesses trap (hstateen0.ENVCFG=0) and cfi_senvcfg_insn() does
 * them with those bits held at 0. */
unsigned long cfi_hstateen0(const struct vm *vm)
{
	bool hide = (hart_caps.zicfilp && !cfi_vm_has_lp(vm)) ||
		    (hart_caps.zicfiss && !cfi_vm_has_ss(vm));

	return HSTATEEN0_SE0 | (hide ? 0 : HSTATEEN0_ENVCFG);
}

bool cfi_senvcfg_insn(struct vcpu *v, unsigned long insn)
{
	unsigned int f3 = (insn >> 12) & 7, rd = (insn >> 7) & 31, rs1 = (insn >> 15) & 31;
	unsigned long hidden = (cfi_vm_has_lp(v->vm) ? 0 : ENVCFG_LPE) |
			       (cfi_vm_has_ss(v->vm) ? 0 : ENVCFG_SSE);
	unsigned long old, src, val;

	/* csrrw/csrrs/csrrc[i] senvcfg (Zicsr) */
	if ((insn & 0x7f) != 0x73 || (insn >> 20) != CSR_SENVCFG || !(f3 & 3))
		return false;
	old = csr_read(CSR_SENVCFG);
	src = (f3 & 4) ? rs1 : rs1 ? v->g.ctx.gpr[rs1] : 0;
	val = (f3 & 3) == 1 ? src : (f3 & 3) == 2 ? old | src : old & ~src;
	if ((f3 & 3) == 1 || rs1)	/* csrrs/csrrc with x0 or uimm 0 only read */
		csr_write(CSR_SENVCFG, val & ~hidden);
	if (rd)
		v->g.ctx.gpr[rd] = old;
	return true;
}

/* The VM_FEAT_* a VM with @policy gets on this host (recorded at creation). */
uint32_t vm_features(enum cfi_policy policy)
{
	uint32_t f = VM_FEAT_SSTC;

	if (hart_caps.henvcfg_ok & ENVCFG_PBMTE)
		f |= VM_FEAT_SVPBMT;
	if (hart_caps.henvcfg_ok & ENVCFG_ADUE)
		f |= VM_FEAT_SVADU;
	if (policy != CFI_POLICY_OFF && hart_caps.zicfilp)
		f |= VM_FEAT_ZICFILP;
	if (policy != CFI_POLICY_OFF && hart_caps.zicfiss)
		f |= VM_FEAT_ZICFISS;
	return f;
}
