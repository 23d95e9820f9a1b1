/* SPDX-License-Identifier: MIT */
/* Delivering an exception into a guest (hyp/state/trap_inject.c). */
#ifndef HYP_TRAP_INJECT_H
#define HYP_TRAP_INJECT_H

struct vcpu;

/** vcpu_redirect_trap() - deliver an exception to the guest's vstvec as hardware would,
 *  carrying the trapped context's ELP into vsstatus.SPELP (docs/cfi.md §9.8). */
void vcpu_redirect_trap(struct vcpu *v, unsigned long cause, unsigned long tval);
#endif
