/* SPDX-License-Identifier: MIT */
/* Spinner: interrupts off, busy until guest time passes a deadline.
 *
 * Knobs (bootargs): spin_ms=N (default 3000) how long to spin;
 * gap_us=G (default 1000) a jump in rdtime longer than this counts as time
 * taken away from this vCPU; max_stolen_pct=P (optional) FAIL if more than
 * P% of the run was taken away. Used to show that a spinning VM does not
 * block another, and (with a sleeper VM on one hart) that a WFI gives the
 * hart away. Same in both modes (bare QEMU steals nothing).
 */
#include "libguest.h"

#define T "spin"

void test_main(unsigned long hartid)
{
	unsigned long spin_ms = bootarg_ulong("spin_ms", 3000);
	unsigned long gap = us_to_ticks(bootarg_ulong("gap_us", 1000));
	unsigned long max_pct = bootarg_ulong("max_stolen_pct", -1UL);
	unsigned long start, end, last, now, stolen = 0, gaps = 0, longest = 0;
	unsigned long ms, pct;

	(void)hartid;
	csr_clear(sstatus, SR_SIE);
	csr_write(sie, 0);
	report_info(T, "spinning %lu ms with interrupts off", spin_ms);
	start = rdtime();
	end = start + us_to_ticks(spin_ms * 1000);
	for (last = start; (now = rdtime()) < end; last = now) {
		unsigned long d = now - last;

		if (d > gap) {
			stolen += d;
			gaps++;
			if (d > longest)
				longest = d;
		}
	}
	ms = ticks_to_us(now - start) / 1000;
	pct = stolen * 100 / (now - start);
	report_info(T, "spun %lu ms; %lu ms (%lu%%) taken away in %lu gaps, longest %lu us",
		    ms, ticks_to_us(stolen) / 1000, pct, gaps,
		    ticks_to_us(longest));
	check_ge(T, "spun until the deadline (ms)", ms, spin_ms);
	check_eq(T, "interrupts stayed off", !!(csr_read(sstatus) & SR_SIE), 0);
	if (max_pct != -1UL)
		check_le(T, "share of time taken away (%)", pct, max_pct);
}
