/* SPDX-License-Identifier: MIT */
/* Time-sliced scheduling of every VM's vCPUs on the physical harts. */
#ifndef HYP_SCHED_H
#define HYP_SCHED_H
#include <types.h>

struct vcpu;
struct vm;

extern uint64_t sched_slice_ticks;

/** sched_loop() - run vCPUs on this hart forever. */
void sched_loop(void) __attribute__((noreturn));
/** sched_next() - the next vCPU for this hart (marked as on it); idles until
 *  one is runnable, and resets VMs that asked for a reboot meanwhile. */
struct vcpu *sched_next(void);
/** sched_arm_slice() - end this hart's time slice one slice from now (HS timer). */
void sched_arm_slice(void);
/** sched_release() - @v left this hart (after vcpu_put()). */
void sched_release(struct vcpu *v);
/** sched_other_runnable() - is some vCPU other than @v waiting for a hart? */
bool sched_other_runnable(const struct vcpu *v);
/** sched_lock()/sched_unlock() - guard HSM state, on-CPU state and VM lifecycle. */
void sched_lock(void);
void sched_unlock(void);
/** sched_kick_idle() - wake an idle hart so it rescans the run queue. */
void sched_kick_idle(void);
/** sched_vm_down() - account a VM that went down; powers off when none is left. */
void sched_check_all_down(void);
#endif
