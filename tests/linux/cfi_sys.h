/* SPDX-License-Identifier: MIT */
/*
 * cfi_sys.h: raw Linux syscalls for cfitest.
 *
 * Once landing pads are enabled in a process, any indirect jump inside
 * glibc (which is not built with lpad) would fault, so the code that runs
 * after enabling them must not enter libc at all: these always-inline
 * wrappers issue the ecall directly.  They return -errno on failure.
 */
#ifndef CFI_SYS_H
#define CFI_SYS_H

#include "cfi_abi.h"

static inline __attribute__((always_inline)) long
cfi_syscall5(long nr, long a, long b, long c, long d, long e)
{
	register long a0 __asm__("a0") = a;
	register long a1 __asm__("a1") = b;
	register long a2 __asm__("a2") = c;
	register long a3 __asm__("a3") = d;
	register long a4 __asm__("a4") = e;
	register long a7 __asm__("a7") = nr;

	__asm__ volatile("ecall"
			 : "+r"(a0)
			 : "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a7)
			 : "memory");
	return a0;
}

/* prctl with arg4 = arg5 = 0: the CFI prctls reject anything else, and
 * glibc's variadic prctl() would pass whatever happens to be in a3/a4. */
static inline __attribute__((always_inline)) long
cfi_prctl(long option, unsigned long arg2, unsigned long arg3)
{
	return cfi_syscall5(CFI_NR_prctl, option, (long)arg2, (long)arg3, 0, 0);
}

static inline __attribute__((always_inline, noreturn)) void
cfi_exit(int code)
{
	for (;;)
		cfi_syscall5(CFI_NR_exit_group, code, 0, 0, 0, 0);
}

static inline __attribute__((always_inline)) long
cfi_map_shadow_stack(unsigned long addr, unsigned long size, unsigned int flags)
{
	return cfi_syscall5(CFI_NR_map_shadow_stack, (long)addr, (long)size,
			    (long)flags, 0, 0);
}

static inline __attribute__((always_inline)) long
cfi_ss_enable(void)
{
	return cfi_prctl(CFI_PR_SET_SHADOW_STACK_STATUS,
			 CFI_PR_SHADOW_STACK_ENABLE, 0);
}

static inline __attribute__((always_inline)) long
cfi_lp_enable(void)
{
	return cfi_prctl(CFI_PR_SET_CFI, CFI_PR_CFI_BRANCH_LANDING_PADS,
			 CFI_PR_CFI_ENABLE);
}

#endif
