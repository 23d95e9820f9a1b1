/* SPDX-License-Identifier: MIT */
/* SBI STA steal time: how long a vCPU that could run waited for a hart. The
 * run loop calls out only for vCPUs with g.sta.enabled (so vCPUs that never
 * registered a record pay one test per switch); out posts VCPU_REQ_STEAL, and
 * in runs with the vCPU's other posted work before its next entry. */
#ifndef HYP_STEAL_TIME_H
#define HYP_STEAL_TIME_H
#include <types.h>
#include <abi/sbi_sta.h>

struct vcpu;
struct vm;

/** steal_vcpu_out() - @v just left its hart (after vcpu_put()): note when, and
 *  whether it could run on (preempted) or waits for an interrupt (idle). */
void steal_vcpu_out(struct vcpu *v);
/** steal_vcpu_in() - @v is about to run (VCPU_REQ_STEAL): add what it waited
 *  to its record and clear preempted. */
void steal_vcpu_in(struct vcpu *v);
/** steal_note_wake() - interrupts @bits (hvip layout) were posted to @v: if it
 *  waits off CPU for one of them, it is ready from now. */
void steal_note_wake(struct vcpu *v, unsigned long bits);
/** steal_vcpu_reset() - forget @v's bookkeeping (vCPU reset). */
void steal_vcpu_reset(struct vcpu *v);
/** steal_vm_resumed() - @vm leaves a pause (lock held, its vCPUs off CPU): the
 *  pause is not steal, so every wait counts from now. */
void steal_vm_resumed(struct vm *vm, uint64_t now);

/* Pure parts, host-tested. */
/** steal_wait_ticks() - ticks a vCPU waited for a hart up to @now: from the
 *  first moment it was ready (@ready_at, 0 = never said; @timer_at, its own
 *  timer firing, ~0 = none), never before it left its hart (@off_at). */
uint64_t steal_wait_ticks(uint64_t off_at, uint64_t ready_at, uint64_t timer_at, uint64_t now);
/** steal_ticks_to_ns() - @ticks of a @hz timebase in nanoseconds, without overflow. */
uint64_t steal_ticks_to_ns(uint64_t ticks, uint64_t hz);
/** steal_record_add() - add @ns to @r's steal under the sequence protocol
 *  (odd while updating) and clear preempted. */
void steal_record_add(volatile struct sbi_sta_record *r, uint64_t ns);
#endif
