/* SPDX-License-Identifier: MIT */
/* Recording trap vector and U-mode entry for the CFI payloads (safe with landing pads on). */
#include <arch/riscv/encoding.h>
#include "cfi.h"

	.option	norvc
	.text

.macro	inc off
	ld	t1, \off(sp)
	addi	t1, t1, 1
	sd	t1, \off(sp)
.endm

/*
 * sscratch points to this hart's struct cfi_rec. No indirect jumps here:
 * the code must run while landing pads are enforced in S/VS.
 */
	.align	2
	.globl	cfi_trap_vector
cfi_trap_vector:
	csrrw	sp, CSR_SSCRATCH, sp		/* sp = rec, sscratch = old sp */
	sd	t0, CR_SAVE(sp)
	sd	t1, CR_SAVE + 8(sp)
	sd	t2, CR_SAVE + 16(sp)
	csrr	t2, CSR_SSTATUS			/* first, before any branch */
	csrr	t0, CSR_SCAUSE
	bltz	t0, .Lirq
	li	t1, EXC_ECALL_U
	beq	t0, t1, .Luser_exit
	li	t1, EXC_BREAKPOINT
	beq	t0, t1, .Lbreak
.Lrecord:
	sd	t2, CR_SSTATUS(sp)
	sd	t0, CR_SCAUSE(sp)
	csrr	t1, CSR_STVAL
	sd	t1, CR_STVAL(sp)
	csrr	t1, CSR_SEPC
	sd	t1, CR_SEPC(sp)
	inc	CR_COUNT
	li	t1, EXC_SW_CHECK
	bne	t0, t1, .Lresume
	li	t1, SR_SPELP
	and	t2, t2, t1
	beqz	t2, 1f
	inc	CR_SPELP
1:	csrr	t0, CSR_STVAL
	li	t1, SWCHECK_TVAL_LANDING_PAD
	bne	t0, t1, 2f
	inc	CR_LP
	j	.Lresume
2:	li	t1, SWCHECK_TVAL_SHADOW_STACK
	bne	t0, t1, .Lresume
	inc	CR_SS
.Lresume:
	ld	t1, CR_FIXUP(sp)
	bnez	t1, 3f
	csrr	t1, CSR_SEPC
	addi	t1, t1, 4
3:	csrw	CSR_SEPC, t1
	li	t1, SR_SPELP			/* resume with ELP clear */
	csrc	CSR_SSTATUS, t1
.Lout:
	ld	t0, CR_SAVE(sp)
	ld	t1, CR_SAVE + 8(sp)
	ld	t2, CR_SAVE + 16(sp)
	csrrw	sp, CSR_SSCRATCH, sp
	sret

.Lirq:
	ld	t1, CR_DETOUR(sp)
	bnez	t1, .Lswitch
	/* Nothing here enables interrupts: count it and mask them all. */
	inc	CR_IRQS
	csrw	CSR_SIE, zero
	j	.Lout

.Lswitch:
	inc	CR_IRQS
	csrr	t0, CSR_TIME
	ld	t1, CR_PERIOD(sp)
	add	t0, t0, t1
	csrw	CSR_STIMECMP, t0
	li	t1, SR_SPELP
	and	t0, t2, t1
	beqz	t0, .Lout
	csrc	CSR_SSTATUS, t1			/* the other task starts with ELP clear */
	csrr	t0, CSR_SEPC
	sd	t0, CR_DPC(sp)
	ld	t0, CR_DETOUR(sp)
	csrw	CSR_SEPC, t0
	inc	CR_SWITCHES
	j	.Lout

.Lbreak:
	ld	t1, CR_DETOUR(sp)
	beqz	t1, .Lrecord
	/* the other task yields: back to the interrupted one, ELP pending again */
	ld	t0, CR_DPC(sp)
	csrw	CSR_SEPC, t0
	li	t1, SR_SPELP
	csrs	CSR_SSTATUS, t1
	j	.Lout

.Luser_exit:
	/* End of a cfi_enter_user() run: back to its caller, still in S. */
	sd	a0, CR_UA0(sp)
	sd	a1, CR_UA1(sp)
	ld	ra, CR_KCTX + 0 * 8(sp)
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
	ld	s\n, CR_KCTX + (2 + \n) * 8(sp)
	.endr
	ld	t1, CR_KCTX + 1 * 8(sp)
	csrw	CSR_SSCRATCH, sp		/* sscratch = rec again */
	mv	sp, t1
	ret

/* unsigned long cfi_enter_user(fn, usp, a0, a1, a2) */
	.align	2
	.globl	cfi_enter_user
cfi_enter_user:
	csrr	t0, CSR_SSCRATCH
	sd	ra, CR_KCTX + 0 * 8(t0)
	sd	sp, CR_KCTX + 1 * 8(t0)
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
	sd	s\n, CR_KCTX + (2 + \n) * 8(t0)
	.endr
	csrw	CSR_SEPC, a0
	li	t1, SR_SPP | SR_SPELP | SR_SPIE
	csrc	CSR_SSTATUS, t1
	mv	sp, a1
	mv	a0, a2
	mv	a1, a3
	mv	a2, a4
	sret
