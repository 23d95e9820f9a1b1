/* SPDX-License-Identifier: MIT */
/* Time base for the guests, taken from /cpus timebase-frequency. */
#include <arch/riscv/encoding.h>
#include "fdt.h"
#include "sbi.h"
#include "timer.h"

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
