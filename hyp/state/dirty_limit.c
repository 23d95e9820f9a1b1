/* SPDX-License-Identifier: MIT */
/* The pacer of dirty_limit.h. The budget is a point in time, paid_until: each
 * page moves it on by 1/rate s; it never lags @now (time nobody wrote in is
 * not saved up), and a VM whose pages have moved it more than `ahead` past
 * @now waits until then. */
#include <dirty_limit.h>

struct dirty_limit dirty_limit;

void dirty_limit_set(struct dirty_limit *dl, struct vm *vm, uint64_t pages_per_s, uint64_t hz,
		     uint64_t now)
{
	spin_lock(&dl->lock);
	dl->rate = pages_per_s;
	/* at least a page a second: the cost stays below 2^64 for any timebase
	 * below 2^48 Hz */
	dl->cost = pages_per_s ? (hz << DIRTY_LIMIT_FRAC) / pages_per_s : 0;
	dl->ahead = hz * DIRTY_LIMIT_AHEAD_US / 1000000;
	if (dl->paid_until < now) {
		dl->paid_until = now;
		dl->paid_frac = 0;
	}
	if (!pages_per_s) {
		dl->held_until = 0;
		dl->holds = dl->held_ticks = 0;
	}
	__atomic_store_n(&dl->vm, pages_per_s ? vm : NULL, __ATOMIC_RELEASE);
	spin_unlock(&dl->lock);
}

uint64_t dirty_limit_charge(struct dirty_limit *dl, uint64_t now)
{
	uint64_t until = 0;

	spin_lock(&dl->lock);
	if (dl->rate) {
		if (dl->paid_until < now) {
			dl->paid_until = now;
			dl->paid_frac = 0;
		}
		dl->paid_frac += dl->cost;
		dl->paid_until += dl->paid_frac >> DIRTY_LIMIT_FRAC;
		dl->paid_frac &= (1ULL << DIRTY_LIMIT_FRAC) - 1;
		if (dl->paid_until > now + dl->ahead) {
			until = dl->paid_until;
			if (until > dl->held_until) {
				dl->holds++;
				dl->held_ticks += until - MAX(now, dl->held_until);
				dl->held_until = until;
			}
		}
	}
	spin_unlock(&dl->lock);
	return until;
}
