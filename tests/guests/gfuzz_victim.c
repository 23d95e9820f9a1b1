/* SPDX-License-Identifier: MIT */
/* The VM beside the guest-side fuzzer (tests/guests/gfuzz.c): it keeps a
 * region of its own RAM under a checksum and its timer under watch, and
 * reports whether anything another VM did reached it.
 *
 * bootargs: run_ms=N (how long to watch, default 5000; 0: until destroyed),
 * mib=N (region size, default 4), tick_us=N (timer period, default 2000),
 * report_ms=N (a "VICTIM: ok" line this often while all is clean, default 1000).
 *
 * Loop until run_ms: sleep in WFI until a timer wake-up (SBI TIME) tick_us
 * ahead; it must not come before its deadline, and guest time never goes
 * back; then check the whole region against its checksum, and every 16th
 * round write a new generation of the pattern (new checksum). Prints
 * "VICTIM: clean ..." or FAIL lines, then DONE (SRST shutdown).
 */
#include "libguest.h"

#define T "victim"
#define REGION_OFF	(16UL << 20)

static uint64_t pattern(uint64_t gen, uint64_t i)
{
	uint64_t x = gen * 0x9E3779B97F4A7C15ULL ^ (i + 1) * 0xBF58476D1CE4E5B9ULL;

	x ^= x >> 31;
	x *= 0x94D049BB133111EBULL;
	return x ^ (x >> 29);
}

static uint64_t fill(volatile uint64_t *r, unsigned long words, uint64_t gen)
{
	uint64_t sum = 0;

	for (unsigned long i = 0; i < words; i++) {
		uint64_t v = pattern(gen, i);

		r[i] = v;
		sum = (sum ^ v) * 31 + i;
	}
	return sum;
}

static uint64_t checksum(volatile uint64_t *r, unsigned long words, unsigned long *bad,
			 uint64_t gen)
{
	uint64_t sum = 0;

	*bad = 0;
	for (unsigned long i = 0; i < words; i++) {
		uint64_t v = r[i];

		if (v != pattern(gen, i))
			(*bad)++;
		sum = (sum ^ v) * 31 + i;
	}
	return sum;
}

static volatile unsigned long ticks;

static void on_timer(unsigned long irq)
{
	(void)irq;
	ticks++;
	sbi_set_timer(-1UL);
}

void test_main(unsigned long hartid)
{
	unsigned long run_ms = bootarg_ulong("run_ms", 5000), mib = bootarg_ulong("mib", 4);
	unsigned long tick_us = bootarg_ulong("tick_us", 2000);
	unsigned long words = (mib << 20) / 8, checks = 0, bad_sum = 0, early = 0, back = 0;
	unsigned long late = 0, max_late_us = 0, gens = 1;
	unsigned long report_ms = bootarg_ulong("report_ms", 1000), next_report;
	volatile uint64_t *region = (volatile uint64_t *)(env.ram_base + REGION_OFF);
	uint64_t gen = 1, want;
	unsigned long start = rdtime(), last = start;
	unsigned long end = run_ms ? start + us_to_ticks(run_ms * 1000) : -1UL;

	(void)hartid;
	if (REGION_OFF + (mib << 20) > env.ram_size - (1UL << 20)) {
		report_fail(T, "region does not fit in RAM (got mib=%lu, want less)", mib);
		return;
	}
	want = fill(region, words, gen);
	trap_set_irq(IRQ_S_TIMER, on_timer);
	csr_set(sstatus, SR_SIE);
	printf("VICTIM: watching %lu MiB for %lu ms\n", mib, run_ms);
	next_report = rdtime() + us_to_ticks(report_ms * 1000);
	while (rdtime() < end) {
		unsigned long deadline, now, bad, before = ticks;
		uint64_t sum;

		deadline = timer_arm_wakeup(tick_us);
		wfi_until(ticks != before);
		now = rdtime();
		if (now < deadline && early++ < 3)
			report_fail(T, "timer woke %lu us early (got 0x%lx, want >= 0x%lx)",
				    ticks_to_us(deadline - now), now, deadline);
		if (now < last && back++ < 3)
			report_fail(T, "guest time went back (got 0x%lx, want >= 0x%lx)", now, last);
		if (now - deadline > us_to_ticks(100000)) {
			late++;
			if (ticks_to_us(now - deadline) > max_late_us)
				max_late_us = ticks_to_us(now - deadline);
		}
		last = now;
		sum = checksum(region, words, &bad, gen);
		checks++;
		if (sum != want || bad) {
			bad_sum++;
			if (bad_sum <= 3)
				report_fail(T, "check %lu: %lu words changed behind our back (got sum 0x%lx, want 0x%lx)",
					    checks, bad, (unsigned long)sum, (unsigned long)want);
			want = fill(region, words, ++gen);
			gens++;
		} else if (checks % 16 == 0) {
			want = fill(region, words, ++gen);
			gens++;
		}
		if (now >= next_report) {
			if (!bad_sum && !early && !back)
				printf("VICTIM: ok checks=%lu ticks=%lu late=%lu\n", checks, ticks, late);
			next_report = now + us_to_ticks(report_ms * 1000);
		}
	}
	csr_clear(sstatus, SR_SIE);
	timer_disarm_wakeup();
	printf("VICTIM: %s checks=%lu generations=%lu ticks=%lu early=%lu back=%lu late=%lu max_late_us=%lu\n",
	       bad_sum || early || back ? "dirty" : "clean", checks, gens, ticks, early, back, late,
	       max_late_us);
	check_ge(T, "ran some checks", checks, 1);
	check_eq(T, "memory checksum held at every check", bad_sum, 0);
	check_eq(T, "no timer wake-up before its deadline", early, 0);
	check_eq(T, "guest time never went back", back, 0);
}
