/* SPDX-License-Identifier: MIT */
/* Boot self-test only (cfi/spelp_selftest.c): run a few instructions in VS-mode
 * to see what this CPU does with the guest's sstatus.SPELP across an sret and
 * an exit. The caller sets hstatus.SPV, hgatp Bare, vsatp Bare, henvcfg,
 * vsstatus and sie=0, and points stvec at __spelp_probe_exit. The VS code
 * touches only a0 and t0 and ends with ecall, so the trap lands in
 * __spelp_probe_exit with every callee-saved register (and ra) as our caller
 * left them: a plain ret goes back to it with the VS code's a0. */
#include <arch/riscv/encoding.h>
#include <cfi_asm.h>

	.text
	/* unsigned long __spelp_probe(unsigned long vs_pc, unsigned long sstatus) */
	.globl __spelp_probe
	.balign	4
__spelp_probe:
	LPAD
	csrw	sepc, a0
	csrw	sstatus, a1	/* SPP=1 and the SPELP this probe wants HS to hold */
	sret

	.align	2
	.globl __spelp_probe_exit
__spelp_probe_exit:
	ret

	/* VS: what does the guest find in its SPELP after our sret? */
	.align	2
	.globl __spelp_probe_read
__spelp_probe_read:
	auipc	zero, 0		/* lpad 0: a CPU whose sret set ELP=1 from the guest's SPELP */
	csrr	a0, sstatus
	ecall

	/* VS: set the guest's own SPELP, then exit: is it still there in HS? */
	.align	2
	.globl __spelp_probe_set
__spelp_probe_set:
	auipc	zero, 0
	li	t0, SR_SPELP
	csrs	sstatus, t0
	li	a0, 0
	ecall
