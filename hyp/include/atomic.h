/* SPDX-License-Identifier: MIT */
/* Spinlocks and atomics for state shared between harts. */
#ifndef HYP_ATOMIC_H
#define HYP_ATOMIC_H

struct spinlock {
	volatile int locked;
};

#define SPINLOCK_INIT { 0 }

static inline void spin_lock(struct spinlock *l)
{
	while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED))
			;
}

static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

#define atomic_or(p, v)		__atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define atomic_xchg(p, v)	__atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_add(p, v)	__atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define atomic_load(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define atomic_store(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)
#endif
