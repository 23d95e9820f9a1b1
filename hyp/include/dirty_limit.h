/* SPDX-License-Identifier: MIT */
/* A migrating VM's page-write rate held to a share of what the stream moves
 * (hyp/state/dirty_limit.c): the source's answer to a guest that writes
 * faster than its pages can be sent, as QEMU's auto-converge and dirty-limit
 * are. Each page the guest dirties while pages are logged costs it 1/rate of
 * a second of a budget; a vCPU that has run more than DIRTY_LIMIT_AHEAD_US
 * ahead of the budget leaves its hart until the budget catches up (a
 * generic cell-rate pacer, so a guest that writes less is never held).
 * Every vCPU of the VM draws on one budget. */
#ifndef HYP_DIRTY_LIMIT_H
#define HYP_DIRTY_LIMIT_H
#include <types.h>
#include <atomic.h>

/* How far a VM may run ahead of its budget before a vCPU is held, and so
 * about the shortest hold: longer means fewer switches, shorter a smoother
 * guest. */
#define DIRTY_LIMIT_AHEAD_US	2000

struct dirty_limit {
	struct spinlock lock;
	bool on;			/* read without the lock on the fault path */
	uint64_t rate;			/* pages per second */
	uint64_t cost;			/* timebase ticks a page, << DIRTY_LIMIT_FRAC */
	uint64_t ahead;			/* ticks the budget may be overdrawn */
	uint64_t paid_until;		/* the budget is spent up to this time */
	uint64_t paid_frac;		/* and this fraction of a tick (no rounding lost) */
	uint64_t holds, held_ticks;	/* vCPUs held and for how long, since set */
};

#define DIRTY_LIMIT_FRAC	16

/** dirty_limit_set() - hold @dl to @pages_per_s from @now on (0: no limit);
 *  @hz: the timebase. Keeps the budget already spent. */
void dirty_limit_set(struct dirty_limit *dl, uint64_t pages_per_s, uint64_t hz, uint64_t now);
/** dirty_limit_charge() - one page dirtied at @now: 0 if the writer may go on,
 *  else the time it may run again (it has run DIRTY_LIMIT_AHEAD_US or more
 *  ahead of its budget). */
uint64_t dirty_limit_charge(struct dirty_limit *dl, uint64_t now);
#endif
