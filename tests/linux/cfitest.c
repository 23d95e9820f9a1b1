// SPDX-License-Identifier: MIT
/*
 * cfitest.c: entry point of the Linux-guest CFI test (Zicfilp/Zicfiss as a
 * guest kernel offers them to its processes).
 *
 *   cfitest               CFI must work: every check must PASS
 *   cfitest --expect-off  the VM/CPU has no CFI: requests must fail cleanly
 *   cfitest --violate     one deliberate shadow-stack violation in a child,
 *                         for isolation tests; prints CFI-VIOLATION-DONE
 *
 * Output: one "PASS|FAIL|SKIP: cfi: <check>" line per check, then
 * "DONE: N passed, M failed".  Exit status 0 iff nothing failed.
 */
#include <stdio.h>
#include <string.h>

#include "cfi_report.h"
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
	} else if (argc > 1) {
		fprintf(stderr, "usage: %s [--expect-off | --violate | --rdtime]\n", argv[0]);
		return 2;
	} else {
		printf("cfitest: mode=full\n");
		run_full();
	}
	cfi_totals(&passed, &failed);
	printf("DONE: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
