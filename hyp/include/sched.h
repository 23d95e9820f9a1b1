/* SPDX-License-Identifier: MIT */
/* Time-sliced scheduling of every VM's vCPUs on the physical harts. */
#ifndef HYP_SCHED_H
#define HYP_SCHED_H
#include <types.h>

struct hart;
struct vcpu;
struct vm;

extern uint64_t sched_slice_ticks;
/* Host services run on hart 0 whenever it passes through the scheduler or
 * takes a timer exit (set at boot; the run loop knows nothing about them).
 * Returns the host time by which they want to run again: 0, at once (work
 * in flight: a stream moving, management requests left over from a poll
 * that reached its bound), so an idle hart 0 calls again instead of
 * sleeping; a time soon (a stream waiting for the host: its disk reads
 * interrupt, the stream port does not); or -1, whenever. */
extern uint64_t (*sched_host_poll)(void);
/* Set by sched_want_host_turn(); hart 0 takes a host turn at its next kick
 * exit and clears it (a pass through the scheduler takes one anyway). */
extern volatile bool sched_host_turn_wanted;
/** sched_want_host_turn() - hart 0 should run the host services now, not at
 *  the end of a guest's slice there: kicked (from another hart). */
void sched_want_host_turn(void);

/** sched_loop() - run vCPUs on this hart forever (hyp/run/vcpu_run.c). */
void sched_loop(void) __attribute__((noreturn));
/** sched_next() - the next vCPU for this hart (marked as on it); idles until
 *  one is runnable, and resets VMs that asked for a reboot meanwhile. */
struct vcpu *sched_next(void);
/** sched_pick() - a runnable vCPU, now marked as on this hart, or NULL; or a
 *  rebooting VM this hart must reset (*reboot, then no vCPU). */
struct vcpu *sched_pick(uint64_t now, struct vm **reboot);
/** sched_reboot_later() - the reset of @vm (VM_RESETTING) could not be done
 *  yet: rebooting again, claimed at host time @at or later. */
void sched_reboot_later(struct vm *vm, uint64_t at);
/** sched_note_reboot() - a VM went VM_REBOOTING (after the state is set):
 *  the next pick looks for VMs to reset. */
void sched_note_reboot(void);
/** sched_wake_gen() - read before looking for work; sched_idle() does not
 *  sleep if anything was kicked since. */
unsigned long sched_wake_gen(void);
/** sched_idle() - sleep until a kick, the earliest guest timer or
 *  @not_after (host time), whichever comes first. */
void sched_idle(struct hart *h, uint64_t now, unsigned long gen, uint64_t not_after);
/** sched_wait_loaded() - @v, loaded on this hart, waits for an interrupt
 *  (WFI, HSM suspend): sleep with it loaded, as sched_idle() does without it,
 *  until its interrupt, a kick, its own timer, another vCPU's or @not_after.
 *  False at once if another vCPU is runnable or a VM is rebooting, and false
 *  after the sleep if work may have come up elsewhere (the caller gives the
 *  hart to the scheduler); true: nothing else came up, @v may be re-entered
 *  if it was woken. */
bool sched_wait_loaded(struct hart *h, struct vcpu *v, uint64_t not_after);
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
/** sched_wfi_mode() - with @v loaded on @h: let its WFI sleep natively
 *  (hstatus.VTW=0) if no vCPU can be left waiting for a hart, else trap it. */
void sched_wfi_mode(struct hart *h, struct vcpu *v);
/** sched_wfi_mode_off() - the vCPU left @h (vcpu_load() sets VTW again). */
void sched_wfi_mode_off(struct hart *h);
/** sched_wfi_traps - boot option (carapace,wfi-traps): every guest WFI exits. */
extern bool sched_wfi_traps;
/** sched_kick_host() - wake hart 0 if it sleeps: host work came up that
 *  no interrupt announces (a write a live snapshot holds). */
void sched_kick_host(void);
#endif
