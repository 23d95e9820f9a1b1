/* SPDX-License-Identifier: MIT */
/* Time base for the guests, taken from /cpus timebase-frequency. */
#include <arch/riscv/encoding.h>
#include "fdt.h"
#include "sbi.h"
#include "timer.h"
#include "trap.h"

#define DEFAULT_TIMEBASE	10000000UL	/* QEMU virt, if the DT lacks it */

static unsigned long tb_hz;

void timer_init(void)
{
	tb_hz = fdt_timebase();
	if (!tb_hz)
		tb_hz = DEFAULT_TIMEBASE;
}

unsigned long timebase_hz(void)
{
	return tb_hz;
}

unsigned long us_to_ticks(unsigned long us)
{
	return us * (tb_hz / 1000) / 1000;
}

unsigned long ticks_to_us(unsigned long ticks)
{
	return ticks * 1000 / (tb_hz / 1000);
}

void udelay(unsigned long us)
{
	unsigned long end = rdtime() + us_to_ticks(us);

	while (rdtime() < end)
		cpu_relax();
}

unsigned long timer_arm_wakeup(unsigned long us)
{
	unsigned long when = rdtime() + us_to_ticks(us);

	csr_set(sie, MIP_STIP);
	sbi_set_timer(when);
	return when;
}

void timer_disarm_wakeup(void)
{
	sbi_set_timer(-1UL);
	csr_clear(sie, MIP_STIP);
}

static volatile bool slept;

static void sleep_irq(unsigned long irq)
{
	(void)irq;
	sbi_set_timer(-1UL);
	WRITE_ONCE(slept, true);
}

void sleep_us(unsigned long us)
{
	bool sie = csr_read(sstatus) & SR_SIE;

	WRITE_ONCE(slept, false);
	trap_set_irq(IRQ_S_TIMER, sleep_irq);
	timer_arm_wakeup(us);
	wfi_until(READ_ONCE(slept));
	timer_disarm_wakeup();
	if (!sie)
		csr_clear(sstatus, SR_SIE);
}
