/* SPDX-License-Identifier: MIT */
/*
 * cfi_asm.S: hand-written Zicfiss/Zicfilp helpers for cfitest.
 *
 * gcc 12 cannot emit CFI code and binutils 2.40 has no CFI mnemonics, so
 * every CFI instruction is spelled with .insn.  Each helper starts with
 * "lpad 0" (a hint, harmless when landing pads are off) so that it stays a
 * legal target even if the compiler reaches it through a tail jump while
 * landing pads are enabled -- except cfi_lp_target_bad, whose whole point
 * is to lack one.
 */
#include "cfi_abi.h"

#define LPAD(label)	.insn u 0x17, x0, label
#define SSPUSH_RA	.insn r 0x73, 4, 0x67, x0, x0, x1
#define SSPOPCHK_RA	.insn i 0x73, 4, x0, x1, -0x324
#define SSRDP(rd)	.insn i 0x73, 4, rd, x0, -0x324
#define SSAMOSWAP_D(rd, rs1, rs2) .insn r 0x2f, 3, 0x24, rd, rs1, rs2

#define FUNC(name)	.globl name; .type name, @function; .balign 4; name:
#define ENDF(name)	.size name, . - name

	.text

/* unsigned long cfi_ssrdp(void): current shadow stack pointer (0 when off). */
FUNC(cfi_ssrdp)
	LPAD(0)
	SSRDP(a0)
	ret
ENDF(cfi_ssrdp)

/*
 * long cfi_ss_balanced(long depth, unsigned long *deepest_ssp)
 * Recurses depth+1 levels, each bracketed by sspush ra / sspopchk ra the
 * way a CFI-compiled prologue/epilogue would.  The deepest level records
 * ssp so the caller can verify that every level really pushed an entry.
 * Returns the number of levels executed.
 */
FUNC(cfi_ss_balanced)
	LPAD(0)
	SSPUSH_RA
	addi	sp, sp, -16
	sd	ra, 8(sp)
	sd	s0, 0(sp)
	bnez	a0, 1f
	SSRDP(t0)
	sd	t0, 0(a1)
	li	a0, 1
	j	2f
1:	mv	s0, a0
	addi	a0, a0, -1
	call	cfi_ss_balanced
	addi	a0, a0, 1
2:	ld	s0, 0(sp)
	ld	ra, 8(sp)
	addi	sp, sp, 16
	SSPOPCHK_RA
	ret
ENDF(cfi_ss_balanced)

/*
 * void cfi_ss_hijack(void)
 * Simulates a stack-smash: the return address saved on the ordinary stack
 * is overwritten with cfi_ss_hijacked before the epilogue reloads it.  With
 * a working shadow stack, sspopchk traps (SIGSEGV/SEGV_CPERR); without one,
 * "ret" lands in cfi_ss_hijacked, which exits with CFI_EXIT_HIJACKED.
 */
FUNC(cfi_ss_hijack)
	LPAD(0)
	SSPUSH_RA
	addi	sp, sp, -16
	sd	ra, 8(sp)
	la	t0, cfi_ss_hijacked
	sd	t0, 8(sp)
	ld	ra, 8(sp)
	addi	sp, sp, 16
	SSPOPCHK_RA
	ret
ENDF(cfi_ss_hijack)

FUNC(cfi_ss_hijacked)
	LPAD(0)
	li	a0, CFI_EXIT_HIJACKED
	li	a7, CFI_NR_exit_group
	ecall
	j	.
ENDF(cfi_ss_hijacked)

/* unsigned long cfi_ssamoswap(unsigned long *addr, unsigned long val) */
FUNC(cfi_ssamoswap)
	LPAD(0)
	SSAMOSWAP_D(t0, a0, a1)
	mv	a0, t0
	ret
ENDF(cfi_ssamoswap)

/*
 * long cfi_lp_call(long (*fn)(void), unsigned long label)
 * Calls fn with "jalr ra, 0(a5)": rs1 is neither x1, x5 nor x7, so the
 * hart expects a landing pad at fn.  x7 carries the label in bits 31:12,
 * which a non-zero "lpad LPL" compares against.
 */
FUNC(cfi_lp_call)
	LPAD(0)
	addi	sp, sp, -16
	sd	ra, 8(sp)
	mv	a5, a0
	slli	t2, a1, 12
	jalr	ra, 0(a5)
	ld	ra, 8(sp)
	addi	sp, sp, 16
	ret
ENDF(cfi_lp_call)

/* Legal indirect-call target: any label. */
FUNC(cfi_lp_target_ok)
	LPAD(0)
	li	a0, CFI_LP_OK_VALUE
	ret
ENDF(cfi_lp_target_ok)

/* Legal only when x7[31:12] == CFI_LP_LABEL. */
FUNC(cfi_lp_target_labeled)
	LPAD(CFI_LP_LABEL)
	li	a0, CFI_LP_OK_VALUE
	ret
ENDF(cfi_lp_target_labeled)

/* Deliberately no landing pad: an indirect call here must trap. */
FUNC(cfi_lp_target_bad)
	li	a0, CFI_LP_BAD_VALUE
	ret
ENDF(cfi_lp_target_bad)

/*
 * void cfi_fault_handler(int sig, siginfo_t *si, void *uc)
 * SA_SIGINFO handler for the violation children: exits with
 * (si_signo << 4) | (si_code & 15) so the parent can read both from the
 * wait status.  It uses a raw exit_group because libc is off-limits while
 * landing pads are on, and it starts with lpad because the kernel delivers
 * a landing-pad fault with the expected-landing-pad state still set.
 */
FUNC(cfi_fault_handler)
	LPAD(0)
	lw	t0, 0(a1)
	lw	t1, 8(a1)
	slli	t0, t0, 4
	andi	t1, t1, 15
	or	a0, t0, t1
	li	a7, CFI_NR_exit_group
	ecall
	j	.
ENDF(cfi_fault_handler)

	.section .note.GNU-stack, "", @progbits
