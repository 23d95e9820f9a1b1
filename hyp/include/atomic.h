/* SPDX-License-Identifier: MIT */
/* Spinlocks and atomics for state shared between harts. */
#ifndef HYP_ATOMIC_H
#define HYP_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

/* A ticket lock: harts get the lock in the order they asked for it. A
 * test-and-set lock let one hart that takes and drops it in a loop (a guest
 * flooding its console: vm->con_lock per byte) keep another hart spinning in
 * an exit for tens of milliseconds, past its time slice, while a third VM
 * waited for that hart (docs/performance.md, fairness). */
struct spinlock {
	union {
		uint32_t word;
		struct {
			uint16_t owner;	/* the ticket being served */
			uint16_t next;	/* the next ticket to hand out */
		};
	};
};

#define SPINLOCK_INIT { { 0 } }

static inline void spin_lock(struct spinlock *l)
{
	uint16_t t = (uint16_t)(__atomic_fetch_add(&l->word, 1U << 16, __ATOMIC_ACQUIRE) >> 16);

	while (__atomic_load_n(&l->owner, __ATOMIC_ACQUIRE) != t)
		;
}

/* Take the lock only if nobody holds it or waits for it: for a hart that
 * must not wait for another (hart 0 taking host completions for a VM whose
 * own hart may sit, preempted, in the same lock: docs/performance.md, "A
 * disk flood beside a victim"). */
static inline bool spin_trylock(struct spinlock *l)
{
	uint32_t w = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

	if ((uint16_t)w != (uint16_t)(w >> 16))
		return false;
	return __atomic_compare_exchange_n(&l->word, &w, w + (1U << 16), false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->owner, (uint16_t)(l->owner + 1), __ATOMIC_RELEASE);
}

#define atomic_or(p, v)		__atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define atomic_xchg(p, v)	__atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_add(p, v)	__atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define atomic_load(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define atomic_store(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)
#endif
