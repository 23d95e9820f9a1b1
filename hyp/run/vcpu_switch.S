/* SPDX-License-Identifier: MIT */
/* The trap vector: every exit from a guest starts here. It saves the guest
 * GPRs, switches to the hart's hypervisor stack (fresh every time: nothing
 * lives on it between exits) and goes to the run loop (run/vcpu_run.c), which
 * ends by entering a context again (arch/vcpu_enter.S): the same vCPU, or
 * another one after a switch. Entry is a separate file, so the code flows one
 * way: vector -> run loop -> dispatch -> handler -> verdict -> entry.
 * sscratch holds the context while a guest runs and 0 while the hypervisor
 * runs, so the trap vector can tell the two apart.
 * CSRs the hardware does not bank (senvcfg, ...) are swapped in C; ssp too
 * in the plain build. In the CFI build ssp is the hypervisor's own shadow
 * stack whenever it runs: swapped here and in arch/vcpu_enter.S. */
#include <generated/asm-offsets.h>
#include <arch/riscv/encoding.h>

#define G(n)	(CTX_GPR + 8 * (n))(a0)

	/* The trap vector (stvec). First only the registers C code may clobber
	 * are saved (ra, sp, tp, t*, a*): the callee-saved ones (s*, and gp,
	 * which the hypervisor never uses) keep the guest's values through any
	 * C call. The hot exits (SBI calls, device accesses) are served that
	 * way; every other exit, or one that gives the hart away, saves the rest.
	 * @ss: the CFI build on a hart whose shadow stack is on: the guest's ssp
	 * goes into the context and the hypervisor's restarts at its top, as sp
	 * does, and back on the way out. Two copies of the vector rather than a
	 * test in one: the hart picks its own at boot (hart_init_csrs()). */
	.macro	trap_vector ss
	csrrw	a0, sscratch, a0
	beqz	a0, __hyp_fault_entry

	sd	ra, G(1)
	sd	sp, G(2)
	sd	tp, G(4)
	sd	t0, G(5)
	sd	t1, G(6)
	sd	t2, G(7)
	sd	a1, G(11)
	sd	a2, G(12)
	sd	a3, G(13)
	sd	a4, G(14)
	sd	a5, G(15)
	sd	a6, G(16)
	sd	a7, G(17)
	sd	t3, G(28)
	sd	t4, G(29)
	sd	t5, G(30)
	sd	t6, G(31)
	csrrw	t0, sscratch, zero	/* guest a0; back to "hypervisor runs" */
	csrr	t1, sepc
	sd	t0, G(10)
	sd	t1, CTX_SEPC(a0)

	ld	sp, VCPU_HYP_SP(a0)	/* this hart's stack top and struct hart */
	ld	tp, VCPU_HYP_TP(a0)
	.if	\ss
	ld	t1, HART_SS_TOP(tp)	/* (t1 is saved already) */
	csrrw	t1, CSR_SSP, t1
	sd	t1, VCPU_SSP(a0)
	.endif

	call	vcpu_exit_fast		/* s* and gp still hold the guest's values */
	ld	t0, HART_CURRENT(tp)	/* this vCPU; its context is at offset 0 */
	bnez	a0, .Lnot_done
	.if	\ss
	ld	t1, VCPU_SSP(t0)
	csrw	CSR_SSP, t1
	.endif
	return_to_guest
	.endm

	/* Back into the vCPU whose context is in t0, on the fast path. */
	.macro	return_to_guest
	ld	t1, CTX_SEPC(t0)	/* sstatus was never touched on this path */
	csrw	sscratch, t0
	csrw	sepc, t1
	ld	ra, (CTX_GPR + 8 * 1)(t0)
	ld	sp, (CTX_GPR + 8 * 2)(t0)
	ld	tp, (CTX_GPR + 8 * 4)(t0)
	ld	t1, (CTX_GPR + 8 * 6)(t0)
	ld	t2, (CTX_GPR + 8 * 7)(t0)
	ld	a0, (CTX_GPR + 8 * 10)(t0)
	ld	a1, (CTX_GPR + 8 * 11)(t0)
	ld	a2, (CTX_GPR + 8 * 12)(t0)
	ld	a3, (CTX_GPR + 8 * 13)(t0)
	ld	a4, (CTX_GPR + 8 * 14)(t0)
	ld	a5, (CTX_GPR + 8 * 15)(t0)
	ld	a6, (CTX_GPR + 8 * 16)(t0)
	ld	a7, (CTX_GPR + 8 * 17)(t0)
	ld	t3, (CTX_GPR + 8 * 28)(t0)
	ld	t4, (CTX_GPR + 8 * 29)(t0)
	ld	t5, (CTX_GPR + 8 * 30)(t0)
	ld	t6, (CTX_GPR + 8 * 31)(t0)
	ld	t0, (CTX_GPR + 8 * 5)(t0)
	sret
	.endm

	.text
	.align	2
	.globl __trap_vector
__trap_vector:
	trap_vector 0

#ifdef CARAPACE_CFI_BUILD
	.align	2
	.globl __trap_vector_ss
__trap_vector_ss:
	trap_vector 1
#endif

	/* The fast path's return after a device load (below): the vector it
	 * came through is not known here, so the shadow stack is tested. */
.Lreturn:
#ifdef CARAPACE_CFI_BUILD
	lbu	t1, HART_SS_ON(tp)	/* the guest's ssp back (tp: still the hart) */
	beqz	t1, 8f
	ld	t1, VCPU_SSP(t0)
	csrw	CSR_SSP, t1
8:
#endif
	return_to_guest

.Lnot_done:
	lwu	t2, HART_FAST_LOAD_REG(tp)
	bnez	t2, .Lfast_load
.Lsave:
	mv	a1, a0
	mv	a0, t0
	jal	t0, .Lsave_rest		/* clobbers t0 and t1 only */
	li	t1, EXIT_FAST_FINISH
	bne	a1, t1, 1f
	tail	vcpu_exit_finish	/* handled; decide what runs next */
1:	tail	vcpu_handle_exit	/* everything else, from the start */

	/* A device load into gp or s0-s11 that the fast exit performed
	 * (dispatch/exit.c, fast_load_callee_saved()): the value goes into its
	 * register through the table below (8 bytes an entry, by register
	 * number; the jump is through t2, a software-guarded branch for
	 * Zicfilp), then vcpu_exit_fast_loaded() ends the exit. */
.Lfast_load:
	sw	zero, HART_FAST_LOAD_REG(tp)
	ld	t1, HART_FAST_LOAD_VALUE(tp)
	lla	t3, .Lload_into
	slli	t2, t2, 3
	add	t2, t3, t2
	jr	t2
.Lloaded:
	mv	a0, t0
	call	vcpu_exit_fast_loaded	/* keeps s* and gp, the new value too */
	ld	t0, HART_CURRENT(tp)
	beqz	a0, .Lreturn
	j	.Lsave

	.option	push
	.option	norvc
	.balign	4
.Lload_into:
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.if \n == 3 || \n == 8 || \n == 9 || (\n >= 18 && \n <= 27)
	mv	x\n, t1
	.else
	nop			/* never named: the other registers are in the context */
	.endif
	j	.Lloaded
	.endr
	.option	pop

	/* The rest of the guest state into the context in a0; returns via t0. */
.Lsave_rest:
	csrr	t1, sstatus
	sd	t1, CTX_SSTATUS(a0)
	sd	gp, G(3)
	sd	s0, G(8)
	sd	s1, G(9)
	sd	s2, G(18)
	sd	s3, G(19)
	sd	s4, G(20)
	sd	s5, G(21)
	sd	s6, G(22)
	sd	s7, G(23)
	sd	s8, G(24)
	sd	s9, G(25)
	sd	s10, G(26)
	sd	s11, G(27)
	jr	t0

