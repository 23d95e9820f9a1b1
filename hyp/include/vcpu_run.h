/* SPDX-License-Identifier: MIT */
/* The run loop (hyp/run/vcpu_run.c) and what it tells the exit vector
 * (hyp/run/vcpu_switch.S, through asm-offsets.c). */
#ifndef HYP_VCPU_RUN_H
#define HYP_VCPU_RUN_H

struct vcpu;

/** vcpu_start_on_hart() - load @v (picked by the scheduler) and enter it. */
void vcpu_start_on_hart(struct vcpu *v) __attribute__((noreturn));
/** vcpu_handle_exit() - called by the trap vector on a fresh stack: handle the
 *  exit, then enter the same vCPU again or the next one the scheduler picks. */
void vcpu_handle_exit(struct vcpu *v) __attribute__((noreturn));
/* What vcpu_exit_fast() tells the trap vector (values used by vcpu_switch.S). */
#define VCPU_EXIT_DONE		0	/* handled: re-enter with the partial restore */
#define VCPU_EXIT_FINISH	1	/* handled: save the rest, vcpu_exit_finish() */
#define VCPU_EXIT_FULL		2	/* not touched: save the rest, vcpu_handle_exit() */
/** vcpu_exit_fast() - the hot exits (SBI calls, device accesses) served with
 *  only the caller-saved guest registers saved; see VCPU_EXIT_*. */
long vcpu_exit_fast(struct vcpu *v);
/** vcpu_exit_fast_loaded() - after a fast device load into gp or s0-s11 (the
 *  vector has put the value into the register): the rest of the exit, as
 *  vcpu_exit_fast() ends one; VCPU_EXIT_DONE or _FINISH. */
long vcpu_exit_fast_loaded(struct vcpu *v);
/** vcpu_exit_finish() - after VCPU_EXIT_FINISH, with the whole context saved. */
void vcpu_exit_finish(struct vcpu *v) __attribute__((noreturn));
#endif
