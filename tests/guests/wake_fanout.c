/* SPDX-License-Identifier: MIT */
/* Wake fan-out: vCPU 0 wakes every other vCPU, each waiting in WFI off its
 * hart, with one IPI call, and keeps its own hart busy meanwhile; each woken
 * vCPU notes when it ran and then spins, so that the harts it lands on stay
 * busy too. With as many harts as vCPUs, each should run at once on a hart
 * of its own (issue 22: one kick woke one idle hart, and the others' vCPUs
 * waited for a slice to end). Knobs: rounds=N (default 8), spin_ms=S
 * (default 30) each woken vCPU spins. Prints "FANOUT round R hart H us U"
 * per wake-up and "FANOUT-WORST us U". Same in both modes. */
#include "libguest.h"

#define T "fanout"

static unsigned long woke_at[MAX_HARTS];	/* rdtime in its IPI handler; 0: not yet */
static unsigned long ready[MAX_HARTS];		/* the round it waits for */
static unsigned long spin_ticks;

static void soft_irq(unsigned long irq)
{
	(void)irq;
	csr_clear(sip, MIP_SSIP);
	WRITE_ONCE(woke_at[current_hartid()], rdtime());
}

static void waiter(unsigned long hartid, unsigned long opaque)
{
	(void)opaque;
	csr_set(sie, MIP_SSIP);
	csr_set(sstatus, SR_SIE);
	for (unsigned long round = 1;; round++) {
		WRITE_ONCE(ready[hartid], round);
		wfi_until(READ_ONCE(woke_at[hartid]) != 0);
		for (unsigned long end = rdtime() + spin_ticks; rdtime() < end;)
			cpu_relax();
		/* the sender clears woke_at for the next round */
		while (READ_ONCE(woke_at[hartid]) != 0)
			cpu_relax();
	}
}

void test_main(unsigned long self)
{
	unsigned long rounds = bootarg_ulong("rounds", 8), worst = 0, mask = 0;
	unsigned long others = 0;

	spin_ticks = us_to_ticks(bootarg_ulong("spin_ms", 30) * 1000);
	trap_set_irq(IRQ_S_SOFT, soft_irq);
	for (unsigned long i = 0; i < env.nr_harts; i++) {
		unsigned long h = env.hartids[i];

		if (h == self || h >= MAX_HARTS)
			continue;
		if (check_eq(T, "start a waiter", hart_start(h, waiter, 0), SBI_SUCCESS)) {
			mask |= 1UL << h;
			others++;
		}
	}
	if (!check_eq(T, "at least two waiters", others >= 2, 1))
		return;
	for (unsigned long round = 1; round <= rounds; round++) {
		unsigned long sent;

		for (unsigned long h = 0; h < MAX_HARTS; h++)
			if (mask & (1UL << h))
				while (READ_ONCE(ready[h]) != round)
					cpu_relax();
		udelay(20000);	/* all of them in WFI, their harts idle */
		sent = rdtime();
		sbi_send_ipi(mask, 0);
		for (unsigned long h = 0; h < MAX_HARTS; h++) {
			unsigned long us;

			if (!(mask & (1UL << h)))
				continue;
			if (!check_eq(T, "woken within 2 s",
				      wait_for(READ_ONCE(woke_at[h]) != 0, 2000000), 1))
				return;
			us = ticks_to_us(READ_ONCE(woke_at[h]) - sent);
			printf("FANOUT round %lu hart %lu us %lu\n", round, h, us);
			worst = us > worst ? us : worst;
		}
		udelay(bootarg_ulong("spin_ms", 30) * 1000 + 10000);	/* they stop spinning */
		for (unsigned long h = 0; h < MAX_HARTS; h++)
			WRITE_ONCE(woke_at[h], 0);
	}
	printf("FANOUT-WORST us %lu\n", worst);
}
