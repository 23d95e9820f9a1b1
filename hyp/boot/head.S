/* SPDX-License-Identifier: MIT */
/* Boot entry from OpenSBI: a0 = hart id, a1 = FDT (boot hart) or struct hart * (others).
 * Both start with satp Bare: the boot hart builds the hypervisor's own map in
 * hyp_boot_map() (hyp/mm/hyp_map.c), the others load it here before any C.
 * In the CFI build the shadow stack goes on after the map (Zicfiss wants
 * translated shadow-stack pages) and before the C code that keeps running:
 * hyp_boot_map() returns before it, with its sspush/sspopchk no-ops. */
#include <generated/asm-offsets.h>
#include <arch/riscv/encoding.h>
#include <abi/sbi_defs.h>
#include <cfi_asm.h>

	/* The CFI build's own shadow stack on (docs/security.md): FWFT SET
	 * SHADOW_STACK, locked if the firmware lets it be, then ssp at once to
	 * the hart's HART_SS_TOP (hyp_map.c). Before the C code that stays on
	 * the stack: a function whose sspush ran with SSE=0 would fault at its
	 * sspopchk once SSE=1 (and ssp itself is illegal while SSE=0). On a
	 * refusal the hart runs without (ss_on = 0, the error kept for the boot
	 * log). Keeps a0 and a1 (in s0, s1); clobbers t0-t1, a2-a7. */
	.macro	shadow_stack_on
#ifdef CARAPACE_CFI_BUILD
	mv	s0, a0
	mv	s1, a1
	li	a7, SBI_EXT_FWFT
	li	a6, SBI_FWFT_SET
	li	a0, SBI_FWFT_SHADOW_STACK
	li	a1, 1
	li	a2, 1			/* SBI_FWFT_SET_FLAG_LOCK */
	ecall
	li	t1, 1
	beqz	a0, 5f
	li	a7, SBI_EXT_FWFT	/* a firmware without the LOCK flag: unlocked */
	li	a6, SBI_FWFT_SET
	li	a0, SBI_FWFT_SHADOW_STACK
	li	a1, 1
	li	a2, 0
	ecall
	li	t1, 0
5:	sd	a0, HART_SS_FWFT_ERROR(tp)
	bnez	a0, 6f
	ld	t0, HART_SS_TOP(tp)
	csrw	CSR_SSP, t0
	sb	t1, HART_SS_LOCKED(tp)
	li	t1, 1
	sb	t1, HART_SS_ON(tp)
6:	mv	a0, s0
	mv	a1, s1
#endif
	.endm

	.section .text.entry, "ax"
	.globl _start
	.balign	4
_start:
	LPAD				/* (entered by the firmware's mret, not a jump) */
	csrw	sie, zero
	csrw	sscratch, zero		/* 0 = "trap came from the hypervisor" */
	la	t0, __bss_start
	la	t1, __bss_end
1:	bgeu	t0, t1, 2f
	sd	zero, 0(t0)
	addi	t0, t0, 8
	j	1b
2:	la	tp, harts		/* boot hart is harts[0] */
	la	sp, hart_stacks
	li	t0, HART_STACK_SZ
	add	sp, sp, t0
	la	t0, __trap_vector	/* a fault from here on is reported (trap.S) */
	csrw	stvec, t0
	mv	s2, a0
	mv	s3, a1
	call	hyp_boot_map		/* the DT, the console, the own map */
	mv	a0, s2
	mv	a1, s3
	shadow_stack_on
	la	a2, _secondary_start	/* hyp_main starts the other harts there */
	call	hyp_main
3:	wfi
	j	3b

	/* Secondary harts, started by the boot hart with SBI HSM; a1 = struct hart *. */
	.globl _secondary_start
	.balign	4
_secondary_start:
	LPAD
	csrw	sie, zero
	csrw	sscratch, zero
	la	t0, hyp_map_satp	/* the boot hart's map: identity, so pc stays valid */
	ld	t0, 0(t0)
	sfence.vma
	csrw	satp, t0
	sfence.vma
	la	t0, __trap_vector
	csrw	stvec, t0
	mv	tp, a1
	lwu	t0, HART_INDEX(tp)
	addi	t0, t0, 1
	li	t1, HART_STACK_SZ
	mul	t0, t0, t1
	la	sp, hart_stacks
	add	sp, sp, t0
	shadow_stack_on
	call	hyp_secondary_main
4:	wfi
	j	4b
