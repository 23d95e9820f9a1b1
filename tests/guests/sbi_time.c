/* SPDX-License-Identifier: MIT */
/* SBI TIME set_timer and the Sstc stimecmp path: fire, past, cancel, pending.
 *
 * Same expectations in both modes: OpenSBI 1.6 on an Sstc CPU lets S-mode
 * write stimecmp, and Carapace exposes Sstc to its guests.
 */
#include "libguest.h"

#define T "time"

static unsigned long ticks;	/* timer interrupts taken */
static unsigned long irq_time;	/* rdtime() in the last one */
static bool sstc_mode;		/* handler cancels via stimecmp, not SBI */

static void timer_irq(unsigned long irq)
{
	(void)irq;
	irq_time = rdtime();
	/* Cancel so the line drops; otherwise we would trap again at once. */
	if (sstc_mode)
		csr_write(CSR_STIMECMP, -1UL);
	else
		sbi_set_timer(-1UL);
	WRITE_ONCE(ticks, ticks + 1);
}

static bool stip_pending(void)
{
	return csr_read(sip) & MIP_STIP;
}

static void test_time_runs(void)
{
	unsigned long t1 = rdtime(), t2;
	int i;

	for (i = 0; i < 100000; i++)
		cpu_relax();
	t2 = rdtime();
	check_ge(T, "time CSR advances", t2, t1 + 1);
}

static void test_fire(void)
{
	unsigned long before = READ_ONCE(ticks);
	/* 100 ms: room for a host hiccup before the "not yet" check. */
	unsigned long deadline = rdtime() + us_to_ticks(100000);
	struct sbiret r = sbi_set_timer(deadline);

	check_eq(T, "set_timer error", r.error, SBI_SUCCESS);
	check_eq(T, "no interrupt before the deadline", READ_ONCE(ticks), before);
	check_eq(T, "timer interrupt arrives",
		 wait_for(READ_ONCE(ticks) == before + 1, 1000000), 1);
	check_ge(T, "interrupt not before the deadline", irq_time, deadline);
	check_eq(T, "set_timer(-1) clears sip.STIP", stip_pending(), 0);

	before = READ_ONCE(ticks);
	sbi_set_timer(0);
	check_eq(T, "deadline in the past fires at once",
		 wait_for(READ_ONCE(ticks) == before + 1, 10000), 1);
}

static void test_cancel_and_move(void)
{
	unsigned long before = READ_ONCE(ticks);
	unsigned long start;

	sbi_set_timer(rdtime() + us_to_ticks(50000));
	sbi_set_timer(-1UL);
	udelay(100000);
	check_eq(T, "set_timer(-1) cancels a pending deadline",
		 READ_ONCE(ticks), before);

	/* Moving a far deadline closer must take effect. */
	start = rdtime();
	sbi_set_timer(start + us_to_ticks(5000000));
	sbi_set_timer(start + us_to_ticks(10000));
	check_eq(T, "moved-in deadline fires",
		 wait_for(READ_ONCE(ticks) == before + 1, 500000), 1);
	check_le(T, "moved-in deadline fires early (us)",
		 ticks_to_us(irq_time - start), 500000);
}

static void test_pending_masked(void)
{
	unsigned long before = READ_ONCE(ticks);

	csr_clear(sie, MIP_STIP);
	sbi_set_timer(0);
	udelay(5000);
	check_eq(T, "masked timer sets sip.STIP", stip_pending(), 1);
	check_eq(T, "masked timer does not trap", READ_ONCE(ticks), before);
	csr_set(sie, MIP_STIP);
	check_eq(T, "unmasking delivers it",
		 wait_for(READ_ONCE(ticks) == before + 1, 10000), 1);
}

static void test_sstc(void)
{
	struct trap_record tr;
	unsigned long before = READ_ONCE(ticks), deadline, cmp;

	sstc_mode = true;
	deadline = rdtime() + us_to_ticks(10000);
	trap_arm();
	csr_write(CSR_STIMECMP, deadline);
	cmp = csr_read(CSR_STIMECMP);
	if (trap_disarm(&tr)) {
		report_fail(T, "stimecmp access traps (got scause %lu, want no trap)",
			    tr.scause);
		csr_clear(sie, MIP_STIP);
		return;
	}
	check_eqx(T, "stimecmp reads back", cmp, deadline);
	check_eq(T, "stimecmp interrupt arrives",
		 wait_for(READ_ONCE(ticks) == before + 1, 1000000), 1);
	check_ge(T, "stimecmp interrupt not before the deadline", irq_time,
		 deadline);
	check_eq(T, "stimecmp = -1 clears sip.STIP", stip_pending(), 0);
	sstc_mode = false;
}

void test_main(unsigned long hartid)
{
	(void)hartid;
	trap_set_irq(IRQ_S_TIMER, timer_irq);
	sbi_set_timer(-1UL);
	csr_set(sie, MIP_STIP);
	csr_set(sstatus, SR_SIE);

	test_time_runs();
	test_fire();
	test_cancel_and_move();
	test_pending_masked();
	test_sstc();
	check_eq(T, "unknown TIME function 1",
		 SBI_CALL0(SBI_EXT_TIME, 1).error, SBI_ERR_NOT_SUPPORTED);

	csr_clear(sstatus, SR_SIE);
	csr_clear(sie, MIP_STIP);
}
