// SPDX-License-Identifier: MIT
/*
 * cfi_off.c: checks for a VM (or CPU) without CFI.  The kernel must refuse
 * every CFI request with an error instead of half-enabling it, and the
 * Zimop-encoded shadow-stack instructions must stay harmless.
 */
#define _GNU_SOURCE
#include <signal.h>

#include "cfi_abi.h"
#include "cfi_report.h"
#include "cfi_sys.h"
#include "cfi_tests.h"

/* A refused request is the expected outcome; print the errno we got. */
static void expect_refused(const char *check, long r)
{
	cfi_check(r < 0, check, "%s", r < 0 ? cfi_errname(r) : "succeeded");
}

/* Child: with SSE clear, ssrdp is a Zimop "mop.r" and writes 0; without
 * Zimop it is an illegal instruction.  Anything else would mean CFI state
 * leaked into a VM that was supposed to have none. */
static int ssrdp_child(long unused)
{
	(void)unused;
	cfi_install_fault_handler();
	return cfi_ssrdp() == 0 ? 0 : 1;
}

/* Child: exits with the errno of PR_SET_CFI, 0 if it succeeded. */
static int lp_enable_child(long unused)
{
	long r = cfi_lp_enable();

	(void)unused;
	cfi_exit(r < 0 ? (int)-r : 0);
}

void cfi_group_off(void)
{
	unsigned long st = 0;
	struct cfi_status s;
	char buf[96];

	expect_refused("off: PR_GET_SHADOW_STACK_STATUS fails",
		       cfi_prctl(CFI_PR_GET_SHADOW_STACK_STATUS, (unsigned long)&st, 0));
	expect_refused("off: PR_SET_SHADOW_STACK_STATUS(ENABLE) fails",
		       cfi_ss_enable());
	expect_refused("off: PR_GET_CFI(BRANCH_LANDING_PADS) fails",
		       cfi_prctl(CFI_PR_GET_CFI, CFI_PR_CFI_BRANCH_LANDING_PADS,
				 (unsigned long)&st));
	/* In a child: if this wrongly succeeds, libc's next indirect call
	 * would kill the process and take the remaining checks with it. */
	s = cfi_run_child(lp_enable_child, 0);
	expect_refused("off: PR_SET_CFI(BRANCH_LANDING_PADS, ENABLE) fails",
		       s.exited ? -s.code : -1);
	expect_refused("off: map_shadow_stack fails",
		       cfi_map_shadow_stack(0, 4096, 0));

	s = cfi_run_child(ssrdp_child, 0);
	if (s.exited && s.code == 0)
		cfi_result(CFI_PASS, "off: ssrdp is inert", "reads 0 (Zimop)");
	else if (s.exited && s.code >> 4 == SIGILL)
		cfi_result(CFI_PASS, "off: ssrdp is inert",
			   "illegal instruction (no Zimop)");
	else
		cfi_result(CFI_FAIL, "off: ssrdp is inert", "%s",
			   s.exited && s.code == 1 ? "non-zero ssp" :
			   cfi_status_str(s, buf, sizeof(buf)));
}
