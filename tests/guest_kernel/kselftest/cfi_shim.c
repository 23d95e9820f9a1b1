// SPDX-License-Identifier: MIT
/*
 * cfi_shim.c: turns the shadow stack and landing pads on for a nolibc
 * program before main(), the way a CFI-aware libc start-up would (Debian's
 * glibc does not yet, so the upstream riscv CFI kselftests would stop at
 * "Landing pad is not enabled, should be enabled via glibc").
 *
 * Built without -fcf-protection: this function turns the shadow stack on
 * half-way through, so it must not end with a shadow-stack check (sspopchk)
 * for an entry it never pushed; its plain `ret` is not checked, and it
 * returns to nolibc's _start_c, which never returns itself. It is called
 * through the init array while landing pads are still off.
 */
#include <linux/const.h>
#include <linux/prctl.h>
#include <asm/unistd.h>

static long shim_syscall(long nr, long a0, long a1, long a2)
{
	register long r0 __asm__("a0") = a0;
	register long r1 __asm__("a1") = a1;
	register long r2 __asm__("a2") = a2;
	register long r3 __asm__("a3") = 0;
	register long r4 __asm__("a4") = 0;
	register long r7 __asm__("a7") = nr;

	__asm__ volatile("ecall"
			 : "+r"(r0)
			 : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r7)
			 : "memory");
	return r0;
}

static void shim_say(const char *msg)
{
	unsigned long n = 0;

	while (msg[n])
		n++;
	shim_syscall(__NR_write, 2, (long)msg, (long)n);
}

__attribute__((constructor(101))) static void cfi_shim_enable(void)
{
	if (shim_syscall(__NR_prctl, PR_SET_SHADOW_STACK_STATUS,
			 PR_SHADOW_STACK_ENABLE, 0))
		shim_say("cfi_shim: PR_SET_SHADOW_STACK_STATUS(ENABLE) failed\n");
	if (shim_syscall(__NR_prctl, PR_SET_CFI, PR_CFI_BRANCH_LANDING_PADS,
			 PR_CFI_ENABLE))
		shim_say("cfi_shim: PR_SET_CFI(BRANCH_LANDING_PADS, ENABLE) failed\n");
}
