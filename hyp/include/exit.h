/* SPDX-License-Identifier: MIT */
/* VM exit dispatch (hyp/dispatch/exit.c): for the run loop above it. Handlers
 * include exit_action.h, the verdict they return, not this. */
#ifndef HYP_EXIT_H
#define HYP_EXIT_H
#include <types.h>
#include <exit_action.h>

struct vcpu;

/** vcpu_exit() - route the exit @cause the hardware just reported for @v to its
 *  handler, with the whole context saved; the verdict says what next and how
 *  far the pc moves (the caller moves it, and counts the exit). */
struct exit_verdict vcpu_exit(struct vcpu *v, unsigned long cause);
/** vcpu_exit_hot() - the same route with only the caller-saved guest registers
 *  saved: it serves SBI calls and device accesses that need no more, and
 *  returns EXIT_FULL, with nothing changed, for every other exit (a device
 *  access it decoded but could not finish is recorded for vcpu_exit_deferred()). */
struct exit_verdict vcpu_exit_hot(struct vcpu *v, unsigned long cause);
/** vcpu_exit_deferred() - the full path of an exit whose device access the
 *  fast path decoded and left (this_hart()->deferred.region set: it named a
 *  register the fast path had not saved): perform it as the full path would
 *  have, without decoding it again, and clear the record. */
struct exit_verdict vcpu_exit_deferred(struct vcpu *v);
/** vcpu_fetch_insn() - read the guest instruction at @pc with HLVX; 0 on fault
 *  (arch/guest_fetch.c). */
unsigned long vcpu_fetch_insn(unsigned long pc);
/* arch/trap.S: one HLVX.HU with the fault caught (*scause = 0 when it worked). */
unsigned long __guest_fetch_hu(unsigned long gva, unsigned long *scause);
#endif
