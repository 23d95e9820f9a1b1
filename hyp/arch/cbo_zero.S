/* SPDX-License-Identifier: MIT */
/* Zicboz: zero memory a cache block at a time (cbo.zero), and the boot probe
 * that says whether S-mode may (the firmware sets menvcfg.CBZE; without it
 * cbo.zero is an illegal instruction). */
#include <arch/riscv/encoding.h>
#include <cfi_asm.h>

	.text
	/* void __cbo_zero(void *p, unsigned long blocks, unsigned long block):
	 * @blocks of @block bytes from @p, which is aligned to @block */
	.globl __cbo_zero
	.balign	4
__cbo_zero:
	LPAD
	beqz	a1, 2f
1:	.insn	i 0x0f, 2, x0, a0, 4	/* cbo.zero (a0) */
	add	a0, a0, a2
	add	a1, a1, -1
	bnez	a1, 1b
2:	ret

	/* unsigned long __cbo_zero_probe(void *p): cbo.zero of @p's block with a
	 * trap caught here; 0 if it ran, else the trap's scause. sstatus.SPP
	 * and SPIE, sepc and stval are the caller's to lose (boot, nothing
	 * runs yet). */
	.globl __cbo_zero_probe
	.balign	4
__cbo_zero_probe:
	LPAD
	csrr	t1, stvec
	la	t0, 3f
	csrw	stvec, t0
	li	t2, 0
	.insn	i 0x0f, 2, x0, a0, 4	/* cbo.zero (a0) */
	j	4f
	.align	2
3:	csrr	t2, scause
4:	csrw	stvec, t1
	mv	a0, t2
	ret
