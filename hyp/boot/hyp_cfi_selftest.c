/* SPDX-License-Identifier: MIT */
/* The hypervisor CFI debug hook (hyp_cfi_selftest.h). Its attacks are
 * compiled only with CARAPACE_DEBUG_HOOKS: a release build holds no code
 * that corrupts its own stack. */
#include <fdt_host.h>
#include <hyp_cfi.h>
#include <hyp_cfi_selftest.h>
#include <log.h>
#include <types.h>

#ifdef CARAPACE_DEBUG_HOOKS
static volatile unsigned long sink;

/* Where the bad return or call lands if nothing stopped it. */
static __attribute__((noinline, noreturn)) void ret_not_caught(void)
{
	hyp_panic("hypervisor CFI self-test: the corrupted return address was NOT caught");
}

static __attribute__((noinline, noreturn)) void lp_victim(void)
{
	hyp_panic("hypervisor CFI self-test: the call past the landing pad was NOT caught");
}

static __attribute__((noinline)) void callee(void)
{
	sink++;
}

/* Non-leaf: its return address is saved on the stack and pushed on the
 * shadow stack (sspush). __builtin_frame_address() gives it a frame
 * pointer, and the RISC-V frame keeps the return address just below it. */
static __attribute__((noinline)) void corrupt_return(void)
{
	volatile unsigned long *fp = __builtin_frame_address(0);

	callee();
	fp[-1] = (unsigned long)(uintptr_t)ret_not_caught;	/* the "overflow" */
}	/* ld ra from the stack; sspopchk ra: mismatch */

/* An indirect call (jalr through a register other than t2, so ELP=1) to the
 * instruction after lp_victim()'s lpad. */
static __attribute__((noinline)) void call_past_lpad(void)
{
	void (*volatile fn)(void) = (void (*)(void))((uintptr_t)lp_victim + 4);

	fn();
	sink++;		/* (not a tail call: that could go through t2) */
}
#endif

void hyp_cfi_selftest(unsigned int what)
{
	char own[128];

	if (!HYP_DEBUG_HOOKS) {
		pr_info("carapace,selftest-cfi: refused: this build has no debug hooks "
			"(make cfi builds them)");
		return;
	}
	if (what != HOST_SELFTEST_CFI_RET && what != HOST_SELFTEST_CFI_CALL) {
		pr_info("carapace,selftest-cfi: refused: the value must be \"ret\" or \"call\"");
		return;
	}
	pr_info("hypervisor CFI self-test: %s (hypervisor CFI: %s)",
		what == HOST_SELFTEST_CFI_RET ? "corrupting a saved return address" :
		"calling past a landing pad", hyp_cfi_summary(own, sizeof(own)));
#ifdef CARAPACE_DEBUG_HOOKS
	if (what == HOST_SELFTEST_CFI_RET)
		corrupt_return();
	else
		call_past_lpad();
	hyp_panic("hypervisor CFI self-test: returned normally: nothing was broken");
#endif
}
