/* SPDX-License-Identifier: MIT */
/* Sleeper: WFI until a timer interrupt, again and again.
 *
 * Knobs (bootargs): ticks=N (default 10), period_ms=P (default 100),
 * max_late_ms=L (default 1000) latest acceptable wake-up after a deadline,
 * poll=1 busy-polls instead of WFI (a negative control: then the hart is
 * not given away).
 * Paired with a spinner on one hart to show that a guest's WFI gives the
 * hart away. Same in both modes.
 */
#include "libguest.h"

#define T "sleeper"

static unsigned long fired;	/* timer interrupts taken */
static unsigned long fire_time;

static void timer_irq(unsigned long irq)
{
	(void)irq;
	fire_time = rdtime();
	sbi_set_timer(-1UL);
	WRITE_ONCE(fired, fired + 1);
}

void test_main(unsigned long hartid)
{
	unsigned long ticks = bootarg_ulong("ticks", 10);
	unsigned long period = us_to_ticks(bootarg_ulong("period_ms", 100) * 1000);
	unsigned long max_late = bootarg_ulong("max_late_ms", 1000);
	bool poll = bootarg_ulong("poll", 0);
	unsigned long i, wakeups = 0, early = 0, late_us, worst = 0;

	(void)hartid;
	trap_set_irq(IRQ_S_TIMER, timer_irq);
	csr_set(sie, MIP_STIP);
	csr_set(sstatus, SR_SIE);
	for (i = 1; i <= ticks; i++) {
		unsigned long deadline = rdtime() + period;
		unsigned long before = READ_ONCE(fired);

		sbi_set_timer(deadline);
		if (poll) {
			while (READ_ONCE(fired) == before)
				cpu_relax();
		} else {
			/* as wfi_until(), counting the wakeups */
			csr_clear(sstatus, SR_SIE);
			while (READ_ONCE(fired) == before) {
				wfi();
				wakeups++;
				csr_set(sstatus, SR_SIE);
				csr_clear(sstatus, SR_SIE);
			}
			csr_set(sstatus, SR_SIE);
		}
		if (fire_time < deadline)
			early++;
		late_us = fire_time >= deadline ?
			  ticks_to_us(fire_time - deadline) : 0;
		if (late_us > worst)
			worst = late_us;
		printf("INFO: sleeper: tick %lu/%lu, %lu us late\n", i, ticks,
		       late_us);
	}
	csr_clear(sstatus, SR_SIE);
	csr_clear(sie, MIP_STIP);
	report_info(T, "%lu WFI returns for %lu ticks", wakeups, ticks);
	check_eq(T, "every tick fired", READ_ONCE(fired), ticks);
	check_eq(T, "no tick before its deadline", early, 0);
	check_le(T, "worst wake-up lateness (ms)", worst / 1000, max_late);
}
