// SPDX-License-Identifier: MIT
/*
 * cfi_lp.c: Zicfilp landing-pad checks.
 *
 * glibc is not built with lpad, so once landing pads are on, any indirect
 * jump inside it would fault.  The work after PR_SET_CFI therefore happens
 * in a forked child that only makes direct calls into cfi_asm.S and raw
 * syscalls, and reports through its exit status.
 */
#include <signal.h>
#include <stddef.h>

#include "cfi_abi.h"
#include "cfi_report.h"
#include "cfi_sys.h"
#include "cfi_tests.h"

enum lp_mode { LP_GOOD, LP_NO_LPAD, LP_BAD_LABEL };

/* Exit codes of lp_child(LP_GOOD): the number of the step that failed. */
enum {
	LP_STEP_GET_BEFORE = 1,	/* PR_GET_CFI before enabling != DISABLE */
	LP_STEP_SET,		/* PR_SET_CFI(ENABLE) failed */
	LP_STEP_GET_AFTER,	/* PR_GET_CFI after enabling != ENABLE */
	LP_STEP_CALL_ANY,	/* call to "lpad 0" target went wrong */
	LP_STEP_CALL_LABEL,	/* call to a matching labelled lpad went wrong */
	LP_STEPS
};

static int lp_child(long mode)
{
	unsigned long st = 0;

	cfi_install_fault_handler();	/* last libc call in this process */
	if (mode == LP_GOOD &&
	    (cfi_prctl(CFI_PR_GET_CFI, CFI_PR_CFI_BRANCH_LANDING_PADS,
		       (unsigned long)&st) != 0 || !(st & CFI_PR_CFI_DISABLE)))
		cfi_exit(LP_STEP_GET_BEFORE);
	if (cfi_lp_enable() != 0)
		cfi_exit(LP_STEP_SET);
	/* From here on: no libc. */
	if (mode == LP_NO_LPAD) {
		cfi_lp_call(cfi_lp_target_bad, 0);
		cfi_exit(CFI_EXIT_BAD_LANDED);
	}
	if (mode == LP_BAD_LABEL) {
		cfi_lp_call(cfi_lp_target_labeled, CFI_LP_LABEL ^ 1);
		cfi_exit(CFI_EXIT_BAD_LANDED);
	}
	st = 0;
	if (cfi_prctl(CFI_PR_GET_CFI, CFI_PR_CFI_BRANCH_LANDING_PADS,
		      (unsigned long)&st) != 0 || !(st & CFI_PR_CFI_ENABLE))
		cfi_exit(LP_STEP_GET_AFTER);
	if (cfi_lp_call(cfi_lp_target_ok, 0) != CFI_LP_OK_VALUE)
		cfi_exit(LP_STEP_CALL_ANY);
	if (cfi_lp_call(cfi_lp_target_labeled, CFI_LP_LABEL) != CFI_LP_OK_VALUE)
		cfi_exit(LP_STEP_CALL_LABEL);
	cfi_exit(0);
}

static void report_fault(const char *check, enum lp_mode mode)
{
	struct cfi_status s = cfi_run_child(lp_child, mode);
	char buf[96];

	cfi_check(cfi_fault_is(s, SIGSEGV, CFI_SEGV_CPERR), check, "%s",
		  s.exited && s.code == CFI_EXIT_BAD_LANDED ? "call was not trapped" :
		  s.exited && s.code == LP_STEP_SET ? "enable failed" :
		  cfi_status_str(s, buf, sizeof(buf)));
}

void cfi_group_lp(void)
{
	static const char *const step_name[LP_STEPS] = {
		[LP_STEP_GET_BEFORE] = "landing pads: PR_GET_CFI reports DISABLE before enable",
		[LP_STEP_SET] = "landing pads: PR_SET_CFI(BRANCH_LANDING_PADS, ENABLE) succeeds",
		[LP_STEP_GET_AFTER] = "landing pads: PR_GET_CFI reports ENABLE",
		[LP_STEP_CALL_ANY] = "landing pads: indirect call to an lpad target works",
		[LP_STEP_CALL_LABEL] = "landing pads: indirect call to a matching labelled lpad works",
	};
	struct cfi_status s = cfi_run_child(lp_child, LP_GOOD);
	int failed_step, i;
	char buf[96];

	/* Steps before the failing one passed; the rest were never reached. */
	failed_step = s.exited && s.code == 0 ? LP_STEPS :
		      s.exited && s.code > 0 && s.code < LP_STEPS ? s.code : 1;
	for (i = 1; i < LP_STEPS; i++) {
		if (i < failed_step)
			cfi_result(CFI_PASS, step_name[i], NULL);
		else if (i == failed_step)
			cfi_result(CFI_FAIL, step_name[i], "%s",
				   cfi_status_str(s, buf, sizeof(buf)));
		else
			cfi_result(CFI_FAIL, step_name[i], "not reached");
	}

	report_fault("landing pads: indirect call to a non-lpad target -> SIGSEGV/SEGV_CPERR",
		     LP_NO_LPAD);
	report_fault("landing pads: lpad label mismatch -> SIGSEGV/SEGV_CPERR",
		     LP_BAD_LABEL);
}
