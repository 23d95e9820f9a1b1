/* SPDX-License-Identifier: MIT */
/* Boot entry from OpenSBI: a0 = hart id, a1 = FDT (boot hart) or struct hart * (others).
 * Both start with satp Bare: the boot hart builds the hypervisor's own map in
 * hyp_main() (hyp/mm/hyp_map.c), the others load it here before any C. */
#include <generated/asm-offsets.h>

	.section .text.entry, "ax"
	.globl _start
_start:
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
	la	a2, _secondary_start	/* hyp_main starts the other harts there */
	call	hyp_main
3:	wfi
	j	3b

	/* Secondary harts, started by the boot hart with SBI HSM; a1 = struct hart *. */
	.globl _secondary_start
_secondary_start:
	csrw	sie, zero
	csrw	sscratch, zero
	la	t0, hyp_map_satp	/* the boot hart's map: identity, so pc stays valid */
	ld	t0, 0(t0)
	sfence.vma
	csrw	satp, t0
	sfence.vma
	mv	tp, a1
	lwu	t0, HART_INDEX(tp)
	addi	t0, t0, 1
	li	t1, HART_STACK_SZ
	mul	t0, t0, t1
	la	sp, hart_stacks
	add	sp, sp, t0
	call	hyp_secondary_main
4:	wfi
	j	4b
