/* SPDX-License-Identifier: MIT */
/* Software-check exceptions (cause 18) that reach HS: counted per vCPU, then
 * handed to the guest (trap, strict) or, under strict, a violation in the
 * guest kernel stops the VM. Under delegate they never come here. */
#include <arch/riscv/csr.h>
#include <abi/sbi_defs.h>
#include <cfi.h>
#include <exit_action.h>
#include <hart.h>
#include <trap_inject.h>
#include <vm.h>

enum exit_action cfi_swcheck_exit(struct vcpu *v)
{
	unsigned long tval = csr_read(CSR_STVAL);
	enum exit_action act;

	/* (the return of a fault whose delivery an interrupt got ahead of) */
	if (!v->lp_window.owed || tval != SWCHECK_TVAL_LANDING_PAD || !cfi_lp_fault_owed(v)) {
		act = cfi_count_violation(v, tval, v->g.ctx.sepc, v->g.ctx.sstatus & SR_SPP);
		if (act == EXIT_VM_STOP)
			return act;
	}
	/* A landing-pad fault's handler must find SPELP=1. Where an sret cannot
	 * leave the guest's SPELP set (CFI self-test), the hardware delivers it. */
	if (tval == SWCHECK_TVAL_LANDING_PAD && hart_caps.spelp_lost_at_sret &&
	    cfi_lp_redeliver_ok(v))
		return cfi_lp_redeliver(v);
	vcpu_redirect_trap(v, EXC_SW_CHECK, tval);
	return EXIT_INJECTED;
}
