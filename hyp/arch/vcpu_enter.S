/* SPDX-License-Identifier: MIT */
/* Guest entry: __vcpu_enter() loads a vCPU's trapped context and srets into
 * it; it never returns (the next exit arrives at the trap vector,
 * run/vcpu_switch.S). Also the guest FP save/restore used when a vCPU
 * lands on or leaves a hart. */
#include <generated/asm-offsets.h>
#include <arch/riscv/encoding.h>
#include <cfi_asm.h>

#define G(n)	(CTX_GPR + 8 * (n))(a0)

	.text
	.globl __vcpu_enter
	.balign	4
__vcpu_enter:
	LPAD
#ifdef CARAPACE_CFI_BUILD
	lbu	t0, HART_SS_ON(tp)	/* the guest's ssp (CFI build: vcpu_switch.S) */
	beqz	t0, 1f
	ld	t0, VCPU_SSP(a0)
	csrw	CSR_SSP, t0
1:
#endif
	ld	t0, CTX_SEPC(a0)
	ld	t1, CTX_SSTATUS(a0)	/* carries the guest's SPP, SPIE and SPELP */
	csrw	sepc, t0
	csrw	sstatus, t1
	csrw	sscratch, a0

	ld	ra, G(1)
	ld	sp, G(2)
	ld	gp, G(3)
	ld	tp, G(4)
	ld	t0, G(5)
	ld	t1, G(6)
	ld	t2, G(7)
	ld	s0, G(8)
	ld	s1, G(9)
	ld	a1, G(11)
	ld	a2, G(12)
	ld	a3, G(13)
	ld	a4, G(14)
	ld	a5, G(15)
	ld	a6, G(16)
	ld	a7, G(17)
	ld	s2, G(18)
	ld	s3, G(19)
	ld	s4, G(20)
	ld	s5, G(21)
	ld	s6, G(22)
	ld	s7, G(23)
	ld	s8, G(24)
	ld	s9, G(25)
	ld	s10, G(26)
	ld	s11, G(27)
	ld	t3, G(28)
	ld	t4, G(29)
	ld	t5, G(30)
	ld	t6, G(31)
	ld	a0, G(10)
	sret

	/* Guest FP registers: saved/restored only when a vCPU leaves/enters a hart.
	 * FS is switched on first: the sstatus in force is whatever the last guest
	 * entry wrote, and no value of it may turn an fsd here into an illegal
	 * instruction in HS. It is not put back (KVM does): nothing in HS uses
	 * FP, and __vcpu_enter writes the whole sstatus from the context before
	 * any guest runs, so the value left here is never seen (2 instructions
	 * instead of 6 per call; the vCPU switch pays 4 calls). */
	.option	push
	.option	arch, +d
	.globl __vcpu_fp_save
	.balign	4
__vcpu_fp_save:
	LPAD
	li	t1, SR_FS
	csrs	sstatus, t1
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	fsd	f\n, (FP_F + 8 * \n)(a0)
	.endr
	frcsr	t0
	sd	t0, FP_FCSR(a0)
	ret

	.globl __vcpu_fp_restore
	.balign	4
__vcpu_fp_restore:
	LPAD
	li	t1, SR_FS
	csrs	sstatus, t1
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	fld	f\n, (FP_F + 8 * \n)(a0)
	.endr
	ld	t0, FP_FCSR(a0)
	fscsr	t0
	ret
	.option	pop
