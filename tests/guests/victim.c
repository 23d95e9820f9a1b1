/* SPDX-License-Identifier: MIT */
/* The victim beside the malicious guest (attack.c, tests/guests/test_attacks.py):
 * a VM that keeps checking itself until it is destroyed (or run_ms passes).
 *
 * Set up once: a 2 MiB buffer filled from a seed, a periodic timer of
 * period_ms, FWFT SHADOW_STACK = 1 with LOCK (when offered), ssp and
 * senvcfg set to known values. Then every round (about round_ms, sleeping in
 * WFI between timer ticks) it checks:
 *  - memory: the buffer's checksum and the image's own code unchanged;
 *  - timer: every tick came, none later than late_ms after its deadline;
 *  - CFI: FWFT shadow_stack still 1 and locked (a set 0 is DENIED_LOCKED),
 *    landing_pad still 0, ssp and senvcfg what it wrote;
 * and prints one cumulative line (the console keeps flowing):
 *   VICTIM: round N ticks T late_max_us L mem_bad M cfi_bad C timer_bad B
 * The harness reads the last round line after the attacks. A first line
 *   VICTIM-READY: ssp=0x... senvcfg=0x... ss=0|1
 * gives the values it must find in `carapace-ctl cfi`.
 * Any check that fails also prints a FAIL line at once. corrupt_round=N
 * flips a bit of the buffer in round N itself (the harness's negative control).
 */
#include "libguest.h"
#include "cfi.h"

#define T "victim"
#define BUF_WORDS	(2UL << 20) / 8
#define SSP_VALUE	0x80ff0000UL	/* never used for an access: Bare, no sspush */

static uint64_t buf[BUF_WORDS];
static uint64_t buf_sum, text_sum;
static volatile unsigned long ticks, late_max_ticks, next_deadline, period_ticks;
extern char _start_text[] __asm__("_start");
extern char __bss_start[];

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static uint64_t sum_words(const volatile uint64_t *p, unsigned long n)
{
	uint64_t s = 0;
	unsigned long i;

	for (i = 0; i < n; i++)
		s = mix(s ^ p[i]) + i;
	return s;
}

static void on_timer(unsigned long irq)
{
	unsigned long now = rdtime();

	(void)irq;
	if (now - next_deadline > late_max_ticks && now >= next_deadline)
		late_max_ticks = now - next_deadline;
	ticks++;
	next_deadline += period_ticks;
	if (next_deadline < now)	/* missed whole periods: counted by the tick total */
		next_deadline = now + period_ticks;
	sbi_set_timer(next_deadline);
}

void test_main(unsigned long hartid)
{
	unsigned long run_ms = bootarg_ulong("run_ms", 600000);
	unsigned long period_ms = bootarg_ulong("period_ms", 10);
	unsigned long round_ms = bootarg_ulong("round_ms", 200);
	unsigned long late_ms = bootarg_ulong("late_ms", 400);
	unsigned long corrupt_round = bootarg_ulong("corrupt_round", 0);
	unsigned long mem_bad = 0, cfi_bad = 0, timer_bad = 0, round = 0, i;
	unsigned long start, senvcfg_want = 0, last_ticks = 0;
	bool ss;
	unsigned long text_words = ((unsigned long)__bss_start - (unsigned long)_start_text) / 8;

	(void)hartid;
	for (i = 0; i < BUF_WORDS; i++)
		buf[i] = mix(i * 0x9e3779b97f4a7c15ULL + 0x1234);
	buf_sum = sum_words(buf, BUF_WORDS);
	/* code and read-only data up to .bss; .data holds nothing we write */
	text_sum = sum_words((const uint64_t *)_start_text, text_words);

	ss = fwft_set(SBI_FWFT_SHADOW_STACK, 1, SBI_FWFT_SET_FLAG_LOCK).error == SBI_SUCCESS;
	if (ss) {
		csr_write(CSR_SSP, SSP_VALUE);
		csr_set(CSR_SENVCFG, ENVCFG_SSE | ENVCFG_LPE);
		senvcfg_want = csr_read(CSR_SENVCFG);
	}
	printf("VICTIM-READY: ssp=0x%lx senvcfg=0x%lx ss=%d\n", ss ? SSP_VALUE : 0UL,
	       senvcfg_want, ss);

	period_ticks = us_to_ticks(period_ms * 1000);
	trap_set_irq(IRQ_S_TIMER, on_timer);
	next_deadline = rdtime() + period_ticks;
	sbi_set_timer(next_deadline);
	csr_set(CSR_SIE, MIP_STIP);
	csr_set(CSR_SSTATUS, SR_SIE);
	start = rdtime();

	while (rdtime() - start < us_to_ticks(run_ms * 1000)) {
		unsigned long round_end = rdtime() + us_to_ticks(round_ms * 1000);
		unsigned long t;

		while (rdtime() < round_end)
			wfi();
		round++;
		if (round == corrupt_round)	/* negative control: the checks must see it */
			buf[BUF_WORDS / 2] ^= 1;
		if (sum_words(buf, BUF_WORDS) != buf_sum) {
			mem_bad++;
			report_fail(T, "round %lu: buffer checksum (got changed, want unchanged)", round);
		}
		if (sum_words((const uint64_t *)_start_text, text_words) != text_sum) {
			mem_bad++;
			report_fail(T, "round %lu: code checksum (got changed, want unchanged)", round);
		}
		if (ss) {
			struct sbiret g = fwft_get(SBI_FWFT_SHADOW_STACK);
			long e = fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0).error;

			if (g.error || g.value != 1 || e != SBI_ERR_DENIED_LOCKED ||
			    csr_read(CSR_SSP) != SSP_VALUE || csr_read(CSR_SENVCFG) != senvcfg_want) {
				cfi_bad++;
				report_fail(T, "round %lu: CFI state (got ss %ld/%ld set0 %ld ssp 0x%lx senvcfg 0x%lx, want 1/0 -14 0x%lx 0x%lx)",
					    round, g.error, g.value, e, csr_read(CSR_SSP),
					    csr_read(CSR_SENVCFG), SSP_VALUE, senvcfg_want);
			}
		}
		if (fwft_get(SBI_FWFT_LANDING_PAD).value != 0) {
			cfi_bad++;
			report_fail(T, "round %lu: landing_pad (got 1, want 0)", round);
		}
		/* the timer: it kept firing, never late_ms behind */
		t = READ_ONCE(ticks);
		if (t == last_ticks || ticks_to_us(late_max_ticks) > late_ms * 1000) {
			timer_bad++;
			report_fail(T, "round %lu: timer (got %lu ticks this round, worst lateness %lu us, want > 0 and <= %lu ms)",
				    round, t - last_ticks, ticks_to_us(late_max_ticks), late_ms);
		}
		last_ticks = t;
		printf("VICTIM: round %lu ticks %lu late_max_us %lu mem_bad %lu cfi_bad %lu timer_bad %lu\n",
		       round, t, ticks_to_us(late_max_ticks), mem_bad, cfi_bad, timer_bad);
	}
	csr_clear(CSR_SSTATUS, SR_SIE);
	sbi_set_timer(-1UL);
	check_eq(T, "memory unchanged in every round", mem_bad, 0);
	check_eq(T, "CFI state unchanged in every round", cfi_bad, 0);
	check_eq(T, "timer kept firing in every round", timer_bad, 0);
}
