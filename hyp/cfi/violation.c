/* SPDX-License-Identifier: MIT */
/* One CFI violation seen by the hypervisor: counted per vCPU, and under strict
 * a violation in the guest kernel stops the VM. Used by the software-check exit
 * (swcheck.c) and for a violation delivered during a re-delivery window
 * (lp_redeliver.c). */
#include <arch/riscv/csr.h>
#include <cfi.h>
#include <exit_action.h>
#include <vm.h>

enum exit_action cfi_count_violation(struct vcpu *v, unsigned long tval, unsigned long pc,
				     bool from_vs)
{
	if (tval == SWCHECK_TVAL_LANDING_PAD)
		v->cfi_stats.swcheck_lp++;
	else
		v->cfi_stats.swcheck_ss++;
	v->cfi_stats.last_pc = pc;
	v->cfi_stats.last_tval = tval;
	v->cfi_stats.last_from_vs = from_vs;
	if (v->vm->cfg.cfi_policy == CFI_POLICY_STRICT && from_vs) {
		vm_stop(v->vm, "vcpu %u: CFI violation in the guest kernel (%s) at pc 0x%lx "
			"(policy strict)", v->id,
			tval == SWCHECK_TVAL_LANDING_PAD ? "landing pad" : "shadow stack", pc);
		return EXIT_VM_STOP;
	}
	return EXIT_INJECTED;
}
