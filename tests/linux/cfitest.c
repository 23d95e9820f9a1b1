// SPDX-License-Identifier: MIT
/*
 * cfitest.c: entry point of the Linux-guest CFI test (Zicfilp/Zicfiss as a
 * guest kernel offers them to its processes).
 *
 *   cfitest               CFI must work: every check must PASS
 *   cfitest --expect-off  the VM/CPU has no CFI: requests must fail cleanly
 *   cfitest --violate     one deliberate shadow-stack violation in a child,
 *                         for isolation tests; prints CFI-VIOLATION-DONE
 *   cfitest --rounds N    a long-running CFI process: shadow stack on in the
 *                         process itself, then N rounds of calls, violations
 *                         and landing pads, "cfitest: round I/N ..." after
 *                         each (for pause/resume, snapshot and migration)
 *   cfitest --rounds N --random
 *                         the same, pinned to CPU 0, and after each round
 *                         "cfitest: random I/N HEX": 16 bytes of getrandom,
 *                         so a harness can tell two restores' RNGs apart
 *   cfitest --rounds N --dirty MIB
 *                         the same, keeping MIB MiB of its own memory dirty:
 *                         each round first checks that every page still
 *                         holds the previous round's pattern (derived from
 *                         the round number and the page index), then
 *                         rewrites every page with this round's; a page a
 *                         migration lost or left stale is a FAIL line
 *                         (--random and --dirty may both be given); and
 *                         that guest time went on since the previous round
 *                         (CLOCK_MONOTONIC and the time CSR, never back)
 *   cfitest --rounds N --dirty MIB --dirty-stale R
 *                         tests the checker: after round R's rewrite one
 *                         page gets round R-1's pattern back, as a stale
 *                         page would; round R+1 must FAIL
 *
 * Output: one "PASS|FAIL|SKIP: cfi: <check>" line per check, then
 * "DONE: N passed, M failed".  Exit status 0 iff nothing failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "cfi_abi.h"
#include "cfi_report.h"
#include "cfi_sys.h"
#include "cfi_tests.h"
#include "pmu_count.h"

static void run_full(void)
{
	cfi_check_detect(1);
	cfi_run_group("shadow stack: enable", cfi_group_ss_enable);
	cfi_run_group("shadow stack: calls", cfi_group_ss_calls);
	cfi_run_group("shadow stack: violation", cfi_group_ss_violation);
	cfi_run_group("shadow stack: memory", cfi_group_ss_memory);
	cfi_run_group("landing pads", cfi_group_lp);
	cfi_run_group("fork with shadow stack", cfi_group_ss_fork);
	cfi_run_group("signal with shadow stack", cfi_group_ss_signal);
}

static void run_expect_off(void)
{
	cfi_check_detect(0);
	cfi_run_group("off", cfi_group_off);
}

/* Exactly one violation, reported as signal/si_code for a harness that
 * checks the other VMs were not disturbed by it. */
static int run_violate(void)
{
	struct cfi_status s = cfi_run_child(cfi_ss_violate, 0);
	int sig = 0, code = 0;

	if (s.exited && s.code >= 16) {
		sig = s.code >> 4;
		code = s.code & 15;
	} else if (!s.exited) {
		sig = s.sig;
		code = -1;	/* died without reaching the handler */
	} else {
		printf("cfitest: violation not detected (child exit %d)\n", s.code);
	}
	printf("CFI-VIOLATION-DONE signal=%d code=%d\n", sig, code);
	return 0;
}

/* A child of the long-running process: it inherits its shadow stack. */
static int violate_inherited(long unused)
{
	(void)unused;
	cfi_install_fault_handler();
	cfi_ss_hijack();
	return 2;	/* not reached when the shadow stack works */
}

/* --random: the kernel's RNG as this process sees it, sampled once a round.
 * Pinned to CPU 0 (from before the rounds, so before any snapshot), so that
 * each sample comes from the same per-CPU crng: two restores of one snapshot
 * then print the same bytes unless the kernel reseeded (vmgenid). Raw
 * syscalls, so no vDSO or libc state stands in between. */
static void random_pin(void)
{
	unsigned long mask = 1;
	long got = cfi_syscall5(SYS_sched_setaffinity, 0, sizeof(mask), (long)&mask, 0, 0);

	if (got)
		printf("cfitest: random: sched_setaffinity: %s\n", cfi_errname(got));
}

static void random_sample(int i, int n)
{
	unsigned char b[16];
	char hex[2 * sizeof(b) + 1];
	long got = cfi_syscall5(SYS_getrandom, (long)b, sizeof(b), 0, 0, 0);

	if (got != (long)sizeof(b)) {
		printf("cfitest: random %d/%d: getrandom: %s\n", i, n, cfi_errname(got));
		return;
	}
	for (unsigned int k = 0; k < sizeof(b); k++)
		snprintf(hex + 2 * k, 3, "%02x", b[k]);
	printf("cfitest: random %d/%d %s\n", i, n, hex);
}

/* --dirty: MIB MiB of anonymous memory, every page rewritten each round.
 * Word k of page p in round r is base(r, p) + k * golden: every word of
 * every page differs from round to round and from page to page, and none is
 * likely to be 0, so a page that came back as zeroes, as another page's, or
 * as an older round's, does not match. */
#define DIRTY_PAGE	4096UL
#define DIRTY_WORDS	(DIRTY_PAGE / sizeof(uint64_t))
#define DIRTY_GOLDEN	0x9e3779b97f4a7c15ULL

static uint64_t *dirty_mem;
static size_t dirty_pages;
static int dirty_stale;		/* --dirty-stale R */

/* Guest time as the process sees it: CLOCK_MONOTONIC (the vDSO, from the
 * time CSR) and the time CSR itself. */
static struct timespec time_prev;
static unsigned long ticks_prev;

static unsigned long read_ticks(void)
{
	unsigned long t;

	__asm__ volatile("rdtime %0" : "=r"(t));
	return t;
}

static void time_take(struct timespec *ts, unsigned long *ticks)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	*ticks = read_ticks();
}

/* Guest time went on since the previous round (a move must not set it
 * back); the step is in the detail, so a harness can bound the jump. */
static void time_round(int round)
{
	struct timespec now;
	unsigned long ticks;
	long long ns;

	time_take(&now, &ticks);
	ns = (long long)(now.tv_sec - time_prev.tv_sec) * 1000000000LL +
	     (now.tv_nsec - time_prev.tv_nsec);
	cfi_check(ns > 0 && ticks > ticks_prev,
		  "rounds: guest time went on from the previous round",
		  "round %d: %+lld us monotonic, %+lld time ticks", round, ns / 1000,
		  (long long)(ticks - ticks_prev));
	time_prev = now;
	ticks_prev = ticks;
}

static uint64_t dirty_base(int round, size_t page)
{
	/* splitmix64 of (round, page) */
	uint64_t z = ((uint64_t)round << 40) ^ page ^ 0x6361726170616365ULL;

	z += DIRTY_GOLDEN;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void dirty_write_page(int round, size_t p)
{
	uint64_t *w = dirty_mem + p * DIRTY_WORDS, v = dirty_base(round, p);

	for (size_t k = 0; k < DIRTY_WORDS; k++, v += DIRTY_GOLDEN)
		w[k] = v;
}

static void dirty_write(int round)
{
	for (size_t p = 0; p < dirty_pages; p++)
		dirty_write_page(round, p);
}

/* Round 0's pattern, before the rounds (and so before any migration). */
static int dirty_setup(int mib)
{
	void *m;

	dirty_pages = (size_t)mib * (1UL << 20) / DIRTY_PAGE;
	m = mmap(NULL, dirty_pages * DIRTY_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	cfi_check(m != MAP_FAILED, "rounds: dirty memory mapped", "%d MiB, %zu pages", mib,
		  dirty_pages);
	if (m == MAP_FAILED)
		return -1;
	dirty_mem = m;
	dirty_write(0);
	time_take(&time_prev, &ticks_prev);
	return 0;
}

/* Every page holds round - 1's pattern; then every page gets round's. */
static void dirty_round(int round)
{
	size_t bad = 0, first_page = 0, first_word = 0;
	uint64_t got = 0, want = 0;

	for (size_t p = 0; p < dirty_pages; p++) {
		const uint64_t *w = dirty_mem + p * DIRTY_WORDS;
		uint64_t v = dirty_base(round - 1, p);

		for (size_t k = 0; k < DIRTY_WORDS; k++, v += DIRTY_GOLDEN) {
			if (w[k] == v)
				continue;
			if (!bad) {
				first_page = p;
				first_word = k;
				got = w[k];
				want = v;
			}
			bad++;
			break;
		}
	}
	if (bad)
		cfi_check(0, "rounds: every dirty page holds the previous round's pattern",
			  "round %d: %zu of %zu pages bad, first page %zu word %zu: %#llx, "
			  "expected %#llx", round, bad, dirty_pages, first_page, first_word,
			  (unsigned long long)got, (unsigned long long)want);
	else
		cfi_check(1, "rounds: every dirty page holds the previous round's pattern",
			  "round %d: %zu pages", round, dirty_pages);
	dirty_write(round);
	if (round == dirty_stale)
		dirty_write_page(round - 1, dirty_pages / 2);
}

/* One process that lives through whatever the hypervisor does to its VM
 * (pause, snapshot, migration): its own shadow stack stays on, and every
 * round checks that calls balance at the same ssp as in the first round,
 * that a forked child's corrupted return is still caught, and that landing
 * pads still work and fault. */
static void run_rounds(int n, int sample, int dirty_mib)
{
	unsigned long first_ssp = 0, ssp0, ssp1, deepest, status;
	struct cfi_status s;
	int passed, failed;
	long got;
	char buf[96];

	if (sample)
		random_pin();
	got = cfi_ss_enable();
	cfi_check(got == 0, "rounds: shadow stack on in the long-running process", "%s",
		  cfi_errname(got));
	if (dirty_mib && dirty_setup(dirty_mib))
		dirty_mib = 0;
	for (int i = 1; i <= n; i++) {
		if (dirty_mib) {
			time_round(i);
			dirty_round(i);
		}
		ssp0 = cfi_ssrdp();
		got = cfi_ss_balanced(999, &deepest);
		ssp1 = cfi_ssrdp();
		if (!first_ssp)
			first_ssp = ssp0;
		cfi_check(got == 1000 && ssp0 == ssp1 && ssp0 == first_ssp && ssp0,
			  "rounds: 1000 balanced calls at the ssp of round 1",
			  "round %d: ssp %#lx -> %#lx, first %#lx", i, ssp0, ssp1, first_ssp);
		status = ~0UL;
		got = cfi_prctl(CFI_PR_GET_SHADOW_STACK_STATUS, (unsigned long)&status, 0);
		cfi_check(got == 0 && status == CFI_PR_SHADOW_STACK_ENABLE,
			  "rounds: PR_GET_SHADOW_STACK_STATUS still reports ENABLE",
			  "round %d: %s, status=%#lx", i, cfi_errname(got), status);
		s = cfi_run_child(violate_inherited, 0);
		cfi_check(cfi_fault_is(s, SIGSEGV, CFI_SEGV_CPERR),
			  "rounds: corrupted return in a child -> SIGSEGV/SEGV_CPERR", "%s",
			  cfi_status_str(s, buf, sizeof(buf)));
		cfi_run_group("landing pads", cfi_group_lp);
		cfi_totals(&passed, &failed);
		printf("cfitest: round %d/%d: %d passed, %d failed\n", i, n, passed, failed);
		if (sample)
			random_sample(i, n);
		usleep(100 * 1000);	/* paced, so a harness can act between rounds */
	}
}

int main(int argc, char **argv)
{
	int passed, failed;

	/* Line-buffered even on a pipe, so nothing is duplicated by fork. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "--violate") == 0)
		return run_violate();
	if (argc > 1 && strcmp(argv[1], "--pmu") == 0)
		return pmu_count_main();	/* perf counts (SBI PMU), pmu_count.c */
	if (argc > 1 && strcmp(argv[1], "--rdtime") == 0) {
		/* machine time since reset: x100 = instructions under -icount shift=0 */
		unsigned long t;

		__asm__ volatile("rdtime %0" : "=r"(t));
		printf("%lu\n", t);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--expect-off") == 0) {
		printf("cfitest: mode=expect-off\n");
		run_expect_off();
	} else if (argc > 2 && strcmp(argv[1], "--rounds") == 0 && atoi(argv[2]) > 0) {
		int sample = 0, dirty = 0, bad = 0;

		for (int a = 3; a < argc; a++) {
			if (strcmp(argv[a], "--random") == 0)
				sample = 1;
			else if (strcmp(argv[a], "--dirty") == 0 && a + 1 < argc &&
				 atoi(argv[a + 1]) > 0 && atoi(argv[a + 1]) <= 1024)
				dirty = atoi(argv[++a]);
			else if (strcmp(argv[a], "--dirty-stale") == 0 && a + 1 < argc)
				dirty_stale = atoi(argv[++a]);
			else
				bad = 1;
		}
		if (bad)
			goto usage;
		printf("cfitest: mode=rounds %d%s", atoi(argv[2]), sample ? " random" : "");
		if (dirty)
			printf(" dirty %d MiB", dirty);
		printf("\n");
		run_rounds(atoi(argv[2]), sample, dirty);
	} else if (argc > 1) {
usage:
		fprintf(stderr, "usage: %s [--expect-off | --violate | --rdtime | "
			"--rounds N [--random] [--dirty MIB [--dirty-stale R]]]\n", argv[0]);
		return 2;
	} else {
		printf("cfitest: mode=full\n");
		run_full();
	}
	cfi_totals(&passed, &failed);
	printf("DONE: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
