/* SPDX-License-Identifier: MIT */
/* HS-mode traps taken while hypervisor code runs: always a hypervisor bug. */

	.text
	.globl __hyp_fault_entry
__hyp_fault_entry:
	/* The vector swapped a0 with sscratch (which was 0); put a0 back for the dump. */
	csrrw	a0, sscratch, zero
	call	hyp_fault_handler	/* does not return */
1:	wfi
	j	1b

	/* unsigned long __guest_fetch_hu(unsigned long gva, unsigned long *scause)
	 * HLVX.HU of the guest's instruction halfword at gva (two-stage, execute
	 * permission, guest privilege from hstatus.SPVP). A fault is the guest's
	 * problem, not ours: it is caught here and reported in *scause (0 = ok).
	 * Such a trap into HS rewrites the trap CSRs of the exit being handled,
	 * hstatus.SPV (which would make the next sret enter HS-mode instead of
	 * the guest!) and sstatus.SPP/SPELP, so they are saved first and put back. */
	.globl __guest_fetch_hu
__guest_fetch_hu:
	csrr	t1, stvec
	csrr	t3, hstatus
	csrr	a2, sstatus
	csrr	a3, sepc
	csrr	a4, scause
	csrr	a5, stval
	csrr	a6, htval
	csrr	a7, htinst
	la	t0, 1f
	csrw	stvec, t0
	.insn	r 0x73, 4, 0x32, t2, a0, x3	/* hlvx.hu t2, (a0) */
	csrw	stvec, t1
	sd	zero, 0(a1)
	mv	a0, t2
	ret
	.align	2
1:	csrr	t0, scause
	sd	t0, 0(a1)
	csrw	hstatus, t3
	csrw	sstatus, a2
	csrw	sepc, a3
	csrw	scause, a4
	csrw	stval, a5
	csrw	htval, a6
	csrw	htinst, a7
	csrw	stvec, t1
	li	a0, 0
	ret

	/* Caught guest data accesses, for emulating a misaligned access byte by
	 * byte (dispatch/misaligned.c): HLV.BU / HSV.B through the guest's two
	 * stages with its privilege (hstatus.SPVP), as __guest_fetch_hu. A
	 * fault fills *f (struct guest_fault: scause, stval, htval; scause 0
	 * = ok) and the trap CSRs of the exit being handled are put back.
	 *   unsigned long __guest_load_bu(unsigned long gva, struct guest_fault *f)
	 *   void __guest_store_b(unsigned long gva, unsigned long val, struct guest_fault *f) */
	.macro	guest_access_save
	csrr	t1, stvec
	csrr	t3, hstatus
	csrr	t4, sstatus
	csrr	t5, sepc
	csrr	t6, scause
	csrr	a3, stval
	csrr	a4, htval
	csrr	a5, htinst
	.endm

	/* the fault into *\f, then the exit's CSRs back */
	.macro	guest_access_fault f
	csrr	t0, scause
	sd	t0, 0(\f)
	csrr	t0, stval
	sd	t0, 8(\f)
	csrr	t0, htval
	sd	t0, 16(\f)
	csrw	hstatus, t3
	csrw	sstatus, t4
	csrw	sepc, t5
	csrw	scause, t6
	csrw	stval, a3
	csrw	htval, a4
	csrw	htinst, a5
	csrw	stvec, t1
	.endm

	.globl __guest_load_bu
__guest_load_bu:
	guest_access_save
	la	t0, 1f
	csrw	stvec, t0
	.insn	r 0x73, 4, 0x30, t2, a0, x1	/* hlv.bu t2, (a0) */
	csrw	stvec, t1
	sd	zero, 0(a1)
	mv	a0, t2
	ret
	.align	2
1:	guest_access_fault a1
	li	a0, 0
	ret

	.globl __guest_store_b
__guest_store_b:
	guest_access_save
	la	t0, 1f
	csrw	stvec, t0
	.insn	r 0x73, 4, 0x31, x0, a0, a1	/* hsv.b a1, (a0) */
	csrw	stvec, t1
	sd	zero, 0(a2)
	ret
	.align	2
1:	guest_access_fault a2
	ret
