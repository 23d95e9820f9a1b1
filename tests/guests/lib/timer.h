/* SPDX-License-Identifier: MIT */
/* Guest time: rdtime, unit conversion from the DT timebase, busy waits. */
#ifndef GUEST_TIMER_H
#define GUEST_TIMER_H

#include "guest.h"

static inline unsigned long rdtime(void)
{
	unsigned long t;

	__asm__ volatile("rdtime %0" : "=r"(t) :: "memory");
	return t;
}

void timer_init(void);
unsigned long timebase_hz(void);
unsigned long us_to_ticks(unsigned long us);
unsigned long ticks_to_us(unsigned long ticks);
void udelay(unsigned long us);
/* A timer wake-up in @us (STIP enabled in sie, left masked by sstatus.SIE
 * as the caller has it); returns its deadline. Disarm cancels and disables. */
unsigned long timer_arm_wakeup(unsigned long us);
void timer_disarm_wakeup(void);
/* Sleep @us with the hart given away (WFI until a timer interrupt): a guest
 * that waits without taking CPU time from the others. */
void sleep_us(unsigned long us);

/* Spin until @cond holds or @us microseconds pass; evaluates to @cond. */
#define wait_for(cond, us) ({						\
	unsigned long __end = rdtime() + us_to_ticks(us);		\
	while (!(cond) && rdtime() < __end)				\
		cpu_relax();						\
	(bool)(cond); })

#endif
