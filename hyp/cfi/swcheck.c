/* SPDX-License-Identifier: MIT */
/* Software-check exceptions (cause 18) that reach HS: counted per vCPU, then
 * injected into the guest (trap, strict) or, under strict, a violation in the
 * guest kernel stops the VM. Under delegate they never come here. */
#include <arch/riscv/csr.h>
#include <hyp/sbi_defs.h>
#include <cfi.h>
#include <exit.h>
#include <vm.h>

enum exit_action cfi_swcheck_exit(struct vcpu *v)
{
	unsigned long tval = csr_read(CSR_STVAL);
	bool from_vs = v->g.ctx.sstatus & SR_SPP;

	if (tval == SWCHECK_TVAL_LANDING_PAD)
		v->cfi_stats.swcheck_lp++;
	else
		v->cfi_stats.swcheck_ss++;
	v->cfi_stats.last_pc = v->g.ctx.sepc;
	v->cfi_stats.last_tval = tval;
	v->cfi_stats.last_from_vs = from_vs;
	if (v->vm->cfg.cfi_policy == CFI_POLICY_STRICT && from_vs) {
		vm_stop(v->vm, "vcpu %u: CFI violation in the guest kernel (%s) at pc 0x%lx "
			"(policy strict)", v->id,
			tval == SWCHECK_TVAL_LANDING_PAD ? "landing pad" : "shadow stack",
			v->g.ctx.sepc);
		return EXIT_VM_STOP;
	}
	vcpu_redirect_trap(v, EXC_SW_CHECK, tval);
	return EXIT_INJECTED;
}
