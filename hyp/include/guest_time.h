/* SPDX-License-Identifier: MIT */
/* A VM's time and its timer deadline, compared in the guest's time domain.
 *
 * Guest time is host time + htimedelta, modulo 2^64 (Priv spec, H extension:
 * htimedelta), and Sstc raises VSTIP when guest time >= vstimecmp, an
 * unsigned compare of guest times. htimedelta is negative (a large unsigned
 * value) whenever the guest's clock is behind the host's: every restore and
 * every incoming migration onto a host whose clock is ahead. So never turn a
 * guest deadline into host time by subtracting htimedelta and comparing host
 * times: vstimecmp = -1 ("no timer") would become a deadline in the past.
 * Compare in guest time and convert only the remaining wait, as KVM does
 * (kvm_riscv_current_cycles() adds time_delta; the hrtimer gets the delta). */
#ifndef HYP_GUEST_TIME_H
#define HYP_GUEST_TIME_H
#include <types.h>

#define GUEST_TIMER_NEVER	(~0ULL)	/* host time: not within the host's range */

/** guest_timer_due() - has a timer at @vstimecmp fired at host time @now? */
static inline bool guest_timer_due(uint64_t vstimecmp, uint64_t htimedelta, uint64_t now)
{
	return now + htimedelta >= vstimecmp;
}

/** guest_timer_host_deadline() - host time at which a timer at @vstimecmp
 *  fires: @now if it is due, GUEST_TIMER_NEVER if that lies beyond the host's
 *  time range (vstimecmp = -1 does, unless guest time is within the wait). */
static inline uint64_t guest_timer_host_deadline(uint64_t vstimecmp, uint64_t htimedelta,
						 uint64_t now)
{
	uint64_t wait = vstimecmp - (now + htimedelta);

	if (guest_timer_due(vstimecmp, htimedelta, now))
		return now;
	return wait > GUEST_TIMER_NEVER - now ? GUEST_TIMER_NEVER : now + wait;
}

/** guest_timer_fired_at() - host time at which a timer at @vstimecmp fired,
 *  if it is due at @now (0 if that was before host time 0); GUEST_TIMER_NEVER
 *  if it has not fired yet. */
static inline uint64_t guest_timer_fired_at(uint64_t vstimecmp, uint64_t htimedelta,
					    uint64_t now)
{
	uint64_t ago = now + htimedelta - vstimecmp;

	if (!guest_timer_due(vstimecmp, htimedelta, now))
		return GUEST_TIMER_NEVER;
	return ago <= now ? now - ago : 0;
}
#endif
