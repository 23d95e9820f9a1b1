/* SPDX-License-Identifier: MIT */
/* One f register by number, for emulating a guest's FP load or store
 * (dispatch/misaligned.c): a loaded vCPU's f registers are live on the hart
 * (vcpu_load() restores them, vcpu_put() saves them when FS is Dirty). FS is
 * switched on first, as __vcpu_fp_save does and for the same reason.
 *   uint64_t __fp_reg_read(unsigned int n)
 *   void __fp_reg_write(unsigned int n, uint64_t val) */
#include <arch/riscv/encoding.h>
#include <cfi_asm.h>

	.text
	.option	push
	.option	arch, +d

	.globl __fp_reg_read
	.balign	4
__fp_reg_read:
	LPAD
	li	t1, SR_FS
	csrs	sstatus, t1
	andi	a0, a0, 31
	la	t0, 1f
	slli	a0, a0, 3		/* 8 bytes an entry: fmv, ret */
	add	t0, t0, a0
	jr	t0
	.align	3
1:
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.option	push
	.option	norvc
	fmv.x.d	a0, f\n
	ret
	.option	pop
	.endr

	.globl __fp_reg_write
	.balign	4
__fp_reg_write:
	LPAD
	li	t1, SR_FS
	csrs	sstatus, t1
	andi	a0, a0, 31
	la	t0, 1f
	slli	a0, a0, 3
	add	t0, t0, a0
	jr	t0
	.align	3
1:
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.option	push
	.option	norvc
	fmv.d.x	f\n, a1
	ret
	.option	pop
	.endr
	.option	pop
