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
 *
 * Output: one "PASS|FAIL|SKIP: cfi: <check>" line per check, then
 * "DONE: N passed, M failed".  Exit status 0 iff nothing failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <signal.h>
#include <sys/syscall.h>

#include "cfi_abi.h"
#include "cfi_report.h"
#include "cfi_sys.h"
#include "cfi_tests.h"

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

/* One process that lives through whatever the hypervisor does to its VM
 * (pause, snapshot, migration): its own shadow stack stays on, and every
 * round checks that calls balance at the same ssp as in the first round,
 * that a forked child's corrupted return is still caught, and that landing
 * pads still work and fault. */
static void run_rounds(int n, int sample)
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
	for (int i = 1; i <= n; i++) {
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
		int sample = argc > 3 && strcmp(argv[3], "--random") == 0;

		printf("cfitest: mode=rounds %d%s\n", atoi(argv[2]), sample ? " random" : "");
		run_rounds(atoi(argv[2]), sample);
	} else if (argc > 1) {
		fprintf(stderr, "usage: %s [--expect-off | --violate | --rdtime | --rounds N [--random]]\n",
			argv[0]);
		return 2;
	} else {
		printf("cfitest: mode=full\n");
		run_full();
	}
	cfi_totals(&passed, &failed);
	printf("DONE: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
