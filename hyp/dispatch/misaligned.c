/* SPDX-License-Identifier: MIT */
/* Misaligned loads and stores, emulated for a vCPU that set SBI FWFT
 * MISALIGNED_EXC_DELEG to 0 (its hedeleg then keeps causes 4 and 6 here):
 * the instruction is decoded (htinst when transformed, else fetched), the
 * access done one byte at a time through the guest's own two-stage
 * translation with its privilege (HLV.BU/HSV.B, never a host address), and
 * the register written (loads) or the pc moved (both), as hardware that
 * handled the access itself would have.
 *
 * A byte that faults decides what the guest sees, as on hardware: a
 * VS-stage page or access fault is delivered with that byte's address in
 * stval (the first byte of an unmapped page for an access that crosses into
 * it). A G-stage fault is the hypervisor's own business (a chunk not yet
 * mapped, a page write-protected for dirty logging): served as any exit's,
 * then the whole instruction runs again. A store whose later byte faults
 * has written the bytes before it: the spec lets a misaligned store that
 * faults be partly done, and OpenSBI's emulation does the same. */
#include <arch/riscv/csr.h>
#include <arch/riscv/encoding.h>
#include <abi/sbi_defs.h>
#include <exit.h>
#include <ldst.h>
#include <misaligned.h>
#include <pmu.h>
#include <trap_inject.h>
#include <vm.h>

enum trapped { TRAPPED_LDST, TRAPPED_OTHER, TRAPPED_UNREAD };

/* The instruction that trapped: htinst when it is a transformed load/store,
 * else fetched from the guest's pc. OTHER: no plain load/store (or htinst is
 * the pseudoinstruction of an implicit access, which is no emulation's).
 * UNREAD: the fetch faulted (the guest changed its code's mapping since):
 * running it again shows the guest what its fetch does now. */
static enum trapped trapped_ldst(struct vcpu *v, struct ldst *a)
{
	unsigned long htinst = csr_read(CSR_HTINST);
	uint32_t insn;
	unsigned int len;

	if (ldst_from_htinst(htinst, &insn, &len)) {
		if (!ldst_decode(insn, a))
			return TRAPPED_OTHER;
		a->len = len;
		return TRAPPED_LDST;
	}
	if (htinst)
		return TRAPPED_OTHER;
	insn = (uint32_t)vcpu_fetch_insn(v->g.ctx.sepc);
	if (!insn)
		return TRAPPED_UNREAD;
	return ldst_decode(insn, a) ? TRAPPED_LDST : TRAPPED_OTHER;
}

/* A byte of the access faulted (@f): the guest's own fault is delivered with
 * the byte's address; a G-stage one goes to the caller (*@gstage), which
 * serves it, and the instruction runs again. */
static struct exit_verdict part_fault(struct vcpu *v, const struct guest_fault *f,
				      struct guest_fault *gstage)
{
	switch (f->scause) {
	case EXC_LOAD_GUEST_PAGE_FAULT:
	case EXC_STORE_GUEST_PAGE_FAULT:
		*gstage = *f;
		return exit_stay(EXIT_RESUME);
	case EXC_LOAD_ACCESS:
	case EXC_STORE_ACCESS:
		pmu_count_fw(v, f->scause == EXC_LOAD_ACCESS ? SBI_PMU_FW_ACCESS_LOAD :
							       SBI_PMU_FW_ACCESS_STORE, 1);
		/* fall through */
	default:	/* page faults (and nothing else a byte access raises) */
		vcpu_redirect_trap(v, f->scause, f->stval);
		return exit_stay(EXIT_INJECTED);
	}
}

static struct exit_verdict emulate_load(struct vcpu *v, const struct ldst *a, unsigned long addr,
					struct guest_fault *gstage)
{
	struct guest_fault f;
	uint64_t val = 0;

	for (unsigned int i = 0; i < a->width; i++) {
		uint64_t b = __guest_load_bu(addr + i, &f);

		if (f.scause)
			return part_fault(v, &f, gstage);
		val |= b << (8 * i);
	}
	if (a->fp) {
		/* flw NaN-boxes its 32 bits; the f registers are now written */
		__fp_reg_write(a->reg, a->width == 4 ? val | 0xffffffff00000000ULL : val);
		v->g.ctx.sstatus |= SR_FS_DIRTY;
		csr_set(CSR_VSSTATUS, SR_FS_DIRTY);
	} else if (a->reg) {
		if (a->sign_extend && a->width < 8) {
			unsigned int sh = 64 - 8 * a->width;

			val = (uint64_t)((int64_t)(val << sh) >> sh);
		}
		v->g.ctx.gpr[a->reg] = val;
	}
	v->stats.misaligned_emulated++;
	return exit_next(a->len);
}

static struct exit_verdict emulate_store(struct vcpu *v, const struct ldst *a, unsigned long addr,
					 struct guest_fault *gstage)
{
	struct guest_fault f;
	uint64_t val = a->fp ? __fp_reg_read(a->reg) : a->reg ? v->g.ctx.gpr[a->reg] : 0;

	for (unsigned int i = 0; i < a->width; i++) {
		__guest_store_b(addr + i, (val >> (8 * i)) & 0xff, &f);
		if (f.scause)
			return part_fault(v, &f, gstage);
	}
	v->stats.misaligned_emulated++;
	return exit_next(a->len);
}

struct exit_verdict misaligned_exit(struct vcpu *v, unsigned long cause, struct guest_fault *gstage)
{
	unsigned long addr = csr_read(CSR_STVAL);
	enum trapped t = TRAPPED_OTHER;
	struct ldst a;

	if (v->g.fwft_mem.misaligned_emulate)
		t = trapped_ldst(v, &a);
	if (t == TRAPPED_UNREAD)
		return exit_stay(EXIT_RESUME);
	/* delegated again since the exit, or no plain load/store of the kind
	 * the cause says (an AMO, LR/SC, vector): the exception is the guest's,
	 * as the hardware raised it (OpenSBI does the same). An FP access with
	 * FP off cannot have trapped as misaligned: left to the guest too. */
	if (t != TRAPPED_LDST || a.store != (cause == EXC_STORE_MISALIGNED) ||
	    (a.fp && !(csr_read(CSR_VSSTATUS) & SR_FS))) {
		vcpu_redirect_trap(v, cause, addr);
		return exit_stay(EXIT_INJECTED);
	}
	if (a.store)
		return emulate_store(v, &a, addr, gstage);
	return emulate_load(v, &a, addr, gstage);
}
