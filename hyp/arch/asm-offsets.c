/* SPDX-License-Identifier: MIT */
/* Struct offsets for the assembly, generated at build time into asm-offsets.h. */
#include <stddef.h>
#include <hart.h>
#include <vcpu.h>
#include <vcpu_run.h>

#define DEFINE(sym, val) asm volatile("\n.ascii \"->" #sym " %0\"" ::"i"(val))
#define OFFSET(sym, str, mem) DEFINE(sym, offsetof(struct str, mem))

/* the trap vector uses hart->current (a struct vcpu *) as its context */
_Static_assert(offsetof(struct vcpu, g.ctx) == 0, "vcpu context must come first");

void asm_offsets(void);
void asm_offsets(void)
{
	OFFSET(CTX_GPR, vcpu, g.ctx.gpr);
	OFFSET(CTX_SEPC, vcpu, g.ctx.sepc);
	OFFSET(CTX_SSTATUS, vcpu, g.ctx.sstatus);
	OFFSET(VCPU_HYP_SP, vcpu, hyp_sp);
	OFFSET(VCPU_HYP_TP, vcpu, hyp_tp);
	OFFSET(FP_F, vcpu_fp, f);
	OFFSET(FP_FCSR, vcpu_fp, fcsr);
	OFFSET(HART_INDEX, hart, index);
	OFFSET(HART_CURRENT, hart, current);
	OFFSET(HART_FAST_LOAD_VALUE, hart, fast_load.value);
	OFFSET(HART_FAST_LOAD_REG, hart, fast_load.reg);
	OFFSET(HART_SS_TOP, hart, ss_top);
	OFFSET(HART_SS_FWFT_ERROR, hart, ss_fwft_error);
	OFFSET(HART_SS_ON, hart, ss_on);
	OFFSET(HART_SS_LOCKED, hart, ss_locked);
	OFFSET(VCPU_SSP, vcpu, g.csr.ssp);
	DEFINE(HART_STACK_SZ, HART_STACK_SLOT);	/* a slot: guard page and stack */
	DEFINE(HYP_FAULT_STACK_SZ, HYP_FAULT_STACK_SIZE);
	DEFINE(EXIT_FAST_FINISH, VCPU_EXIT_FINISH);
	DEFINE(HART_SIZE, sizeof(struct hart));
}
