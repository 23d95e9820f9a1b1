/* SPDX-License-Identifier: MIT */
/* VM exit dispatch (hyp/dispatch/exit.c): for the run loop above it. Handlers
 * include exit_action.h, the verdict they return, not this. */
#ifndef HYP_EXIT_H
#define HYP_EXIT_H
#include <types.h>
#include <exit_action.h>

struct vcpu;

/** vcpu_exit() - handle the exit the hardware just reported for @v. */
enum exit_action vcpu_exit(struct vcpu *v);
/** exit_mmio_fast() - emulate a device access using only the caller-saved part of
 *  the context; false (with nothing changed) when the full path must do it. */
bool exit_mmio_fast(struct vcpu *v, unsigned long cause);
/** vcpu_fetch_insn() - read the guest instruction at @pc with HLVX; 0 on fault. */
unsigned long vcpu_fetch_insn(unsigned long pc);
/* arch/trap.S: one HLVX.HU with the fault caught (*scause = 0 when it worked). */
unsigned long __guest_fetch_hu(unsigned long gva, unsigned long *scause);
#endif
