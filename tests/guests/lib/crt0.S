/* SPDX-License-Identifier: MIT */
/* Guest entry points: boot hart, HSM-started/resumed harts, and the trap vector. */
#include <arch/riscv/encoding.h>
#include "guest.h"

/* gp for relaxed accesses, tp = hart id, a per-hart stack, our stvec, FP on. */
.macro hart_setup
	.option push
	.option norelax
	la	gp, __global_pointer$
	.option pop
	mv	tp, a0
	li	t0, MAX_HARTS
	bgeu	a0, t0, park
	la	sp, guest_stacks
	li	t0, STACK_SIZE
	addi	t1, a0, 1
	mul	t0, t0, t1
	add	sp, sp, t0
	la	t0, trap_entry
	csrw	CSR_STVEC, t0
	csrw	CSR_SSCRATCH, zero
	li	t0, SR_FS
	csrc	CSR_SSTATUS, t0
	li	t0, SR_FS_INITIAL
	csrs	CSR_SSTATUS, t0
.endm

	.section .text.entry, "ax"
	.globl _start
_start:
	/* a0 = hart id, a1 = FDT; only the boot hart arrives here. */
	hart_setup
	la	t0, __bss_start
	la	t1, __bss_end
1:	bgeu	t0, t1, 2f
	sd	zero, 0(t0)
	addi	t0, t0, 8
	j	1b
2:	call	guest_main
	j	park

	/* HSM hart_start and non-retentive resume: a0 = hart id, a1 = opaque. */
	.align 2
	.globl _hart_entry
_hart_entry:
	hart_setup
	call	hart_entry_c
	/* fall through: hart_entry_c never returns */
park:
	csrw	CSR_SIE, zero
1:	wfi
	j	1b

	/* All traps land here; the frame layout is struct trap_frame. */
	.align 4
trap_entry:
	addi	sp, sp, -TF_SIZE
	sd	x1, 1 * 8(sp)
	.irp	n, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	sd	x\n, \n * 8(sp)
	.endr
	addi	t0, sp, TF_SIZE
	sd	t0, 2 * 8(sp)
	csrr	t0, CSR_SEPC
	sd	t0, TF_SEPC(sp)
	csrr	t0, CSR_SSTATUS
	sd	t0, TF_SSTATUS(sp)
	csrr	t0, CSR_SCAUSE
	sd	t0, TF_SCAUSE(sp)
	csrr	t0, CSR_STVAL
	sd	t0, TF_STVAL(sp)
	mv	a0, sp
	call	trap_handler
	/* The handler may have moved sepc (skip) or changed sstatus. */
	ld	t0, TF_SEPC(sp)
	csrw	CSR_SEPC, t0
	ld	t0, TF_SSTATUS(sp)
	csrw	CSR_SSTATUS, t0
	ld	x1, 1 * 8(sp)
	.irp	n, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	ld	x\n, \n * 8(sp)
	.endr
	addi	sp, sp, TF_SIZE
	sret

	.section .stack, "aw", @nobits
	.align 4
	.globl guest_stacks
guest_stacks:
	.space	STACK_SIZE * MAX_HARTS
