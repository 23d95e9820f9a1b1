/* SPDX-License-Identifier: MIT */
/* A migrating VM's page-write rate held to a share of what the stream moves
 * (hyp/state/dirty_limit.c): the source's answer to a guest that writes
 * faster than its pages can be sent, as QEMU's auto-converge and dirty-limit
 * are. Each page the guest dirties while pages are logged costs it 1/rate of
 * a second of one budget shared by its vCPUs; once it has run more than
 * DIRTY_LIMIT_AHEAD_US ahead of the budget its vCPUs leave their harts until
 * the budget catches up (a generic cell-rate pacer: a guest that writes less
 * is never held). One migration at a time, so one pacer: dirty_limit. */
#ifndef HYP_DIRTY_LIMIT_H
#define HYP_DIRTY_LIMIT_H
#include <types.h>
#include <atomic.h>

struct vm;

/* How far a VM may run ahead of its budget before it is held, and so about
 * the shortest hold: longer means fewer switches, shorter a smoother guest. */
#define DIRTY_LIMIT_AHEAD_US	2000
#define DIRTY_LIMIT_FRAC	16

struct dirty_limit {
	struct vm *vm;			/* the VM paced; NULL: none (read unlocked) */
	uint64_t held_until;		/* its vCPUs stay off their harts until then */
	struct spinlock lock;
	uint64_t rate;			/* pages per second */
	uint64_t cost;			/* timebase ticks a page, << DIRTY_LIMIT_FRAC */
	uint64_t ahead;			/* ticks the budget may be overdrawn */
	uint64_t paid_until;		/* the budget is spent up to this time */
	uint64_t paid_frac;		/* and this fraction of a tick (no rounding lost) */
	uint64_t holds, held_ticks;	/* holds and their length, since set */
};

/* The scheduler and the fault path look at it without a call. */
extern struct dirty_limit dirty_limit;

/** dirty_limit_set() - pace @vm's page writes to @pages_per_s from @now on
 *  (0: no pace, @vm's vCPUs free at once); @hz: the timebase. A new rate
 *  keeps the budget already spent. */
void dirty_limit_set(struct dirty_limit *dl, struct vm *vm, uint64_t pages_per_s, uint64_t hz,
		     uint64_t now);
/** dirty_limit_charge() - the paced VM dirtied a page at @now: 0 if it may go
 *  on, else the time until which its vCPUs are held (it has run
 *  DIRTY_LIMIT_AHEAD_US or more ahead of its budget). */
uint64_t dirty_limit_charge(struct dirty_limit *dl, uint64_t now);
/** dirty_limit_holds() - @vcpu_vm's vCPUs are held at @now. */
static inline bool dirty_limit_holds(const struct dirty_limit *dl, const struct vm *vcpu_vm,
				     uint64_t now)
{
	return __builtin_expect(vcpu_vm == dl->vm, 0) && now < dl->held_until;
}
#endif
