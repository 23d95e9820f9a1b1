/* SPDX-License-Identifier: MIT */
/* HS-mode traps taken while hypervisor code runs: always a hypervisor bug. */
#include <generated/asm-offsets.h>
#include <abi/sbi_defs.h>
#include <cfi_asm.h>

	.text
	.globl __hyp_fault_entry
__hyp_fault_entry:
	/* The vector swapped a0 with sscratch (which was 0); put a0 back for the dump. */
	csrrw	a0, sscratch, zero
#ifdef CARAPACE_CFI_BUILD
	/* A fault while one is being reported would loop for ever: C code
	 * itself faults where the shadow stack does (an overflow into its
	 * guard page, or a CPU that refuses it). The second one stops the
	 * machine from here, no C code, no stack. */
	lla	t0, hyp_faults
	li	t1, 1
	amoadd.w t1, t1, (t0)
	bnez	t1, .Lfault_in_fault
#endif
	/* a stack of its own: the fault may be sp running into its guard page */
	la	sp, hyp_fault_stacks
	lwu	t0, HART_INDEX(tp)
	addi	t0, t0, 1
	li	t1, HYP_FAULT_STACK_SZ
	mul	t0, t0, t1
	add	sp, sp, t0
	call	hyp_fault_handler	/* does not return */
1:	wfi
	j	1b

#ifdef CARAPACE_CFI_BUILD
.Lfault_in_fault:
	li	a7, SBI_EXT_DBCN
	li	a6, SBI_DBCN_WRITE
	lla	a0, .Lfault_msg_end
	lla	a1, .Lfault_msg
	sub	a0, a0, a1
	li	a2, 0
	ecall
	li	a7, SBI_EXT_SRST
	li	a6, SBI_SRST_SYSTEM_RESET
	li	a0, SBI_SRST_TYPE_SHUTDOWN
	li	a1, SBI_SRST_REASON_SYSFAIL
	li	a2, 0
	ecall
2:	wfi
	j	2b

	.section .rodata
.Lfault_msg:
	.ascii	"\ncarapace: PANIC: hypervisor trap while reporting a trap (the CPU refuses "
	.ascii	"the hypervisor's shadow stack? docs/security.md): stopped\n"
.Lfault_msg_end:
	.data
	.balign	4
hyp_faults:
	.word	0
	.text
#endif

	/* unsigned long __guest_fetch_hu(unsigned long gva, unsigned long *scause)
	 * HLVX.HU of the guest's instruction halfword at gva (two-stage, execute
	 * permission, guest privilege from hstatus.SPVP). A fault is the guest's
	 * problem, not ours: it is caught here and reported in *scause (0 = ok).
	 * Such a trap into HS rewrites the trap CSRs of the exit being handled,
	 * hstatus.SPV (which would make the next sret enter HS-mode instead of
	 * the guest!) and sstatus.SPP/SPELP, so they are saved first and put back. */
	.globl __guest_fetch_hu
	.balign	4
__guest_fetch_hu:
	LPAD
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
	.balign	4
__guest_load_bu:
	LPAD
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
	.balign	4
__guest_store_b:
	LPAD
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
