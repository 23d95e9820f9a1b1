/* SPDX-License-Identifier: MIT */
/* VM exit dispatch and guest trap injection. */
#ifndef HYP_EXIT_H
#define HYP_EXIT_H
#include <types.h>

struct vcpu;

/* What the run loop does after an exit handler. Only the dispatcher advances sepc. */
enum exit_action {
	EXIT_RESUME_NEXT,	/* skip the trapping instruction, re-enter */
	EXIT_RESUME_SAME,	/* re-enter at the same pc (retry, or pc already set) */
	EXIT_INJECTED,		/* a trap was redirected into the guest; re-enter */
	EXIT_YIELD,		/* give the hart away (WFI, HSM stop/suspend, slice over) */
	EXIT_VM_STOP,		/* the VM was stopped; leave it */
};

/** vcpu_exit() - handle the exit the hardware just reported for @v. */
enum exit_action vcpu_exit(struct vcpu *v);
/** exit_mmio_fast() - emulate a device access using only the caller-saved part of
 *  the context; false (with nothing changed) when the full path must do it. */
bool exit_mmio_fast(struct vcpu *v, unsigned long cause);
/** vcpu_redirect_trap() - deliver an exception to the guest's vstvec as hardware would,
 *  carrying the trapped context's ELP into vsstatus.SPELP (docs/cfi.md §9.8). */
void vcpu_redirect_trap(struct vcpu *v, unsigned long cause, unsigned long tval);
/** vcpu_fetch_insn() - read the guest instruction at @pc with HLVX; 0 on fault. */
unsigned long vcpu_fetch_insn(unsigned long pc);
/* arch/trap.S: one HLVX.HU with the fault caught (*scause = 0 when it worked). */
unsigned long __guest_fetch_hu(unsigned long gva, unsigned long *scause);
#endif
