/* SPDX-License-Identifier: MIT */
/* The one path that delivers an exception into a guest, as hardware would. */
#include <arch/riscv/csr.h>
#include <hart.h>
#include <trap_inject.h>
#include <vm.h>

void vcpu_redirect_trap(struct vcpu *v, unsigned long cause, unsigned long tval)
{
	unsigned long vs = csr_read(CSR_VSSTATUS);

	/* what the hardware does on a trap into VS (Priv spec, docs/cfi.md §9.8) */
	vs = (vs & ~SR_SPP) | (v->g.ctx.sstatus & SR_SPP);
	vs = (vs & ~SR_SPIE) | ((vs & SR_SIE) ? SR_SPIE : 0);
	vs &= ~SR_SIE;
	vs = (vs & ~SR_SPELP) | (v->g.ctx.sstatus & SR_SPELP);	/* ELP at the trap */
	if (hart_caps.spelp_lost_at_sret && (v->henvcfg & ENVCFG_LPE))
		vs &= ~SR_SPELP;	/* this sret would take ELP=1 from it: a second fault */
	csr_write(CSR_VSSTATUS, vs);
	csr_write(CSR_VSCAUSE, cause);
	csr_write(CSR_VSTVAL, tval);
	csr_write(CSR_VSEPC, v->g.ctx.sepc);
	/* the handler starts in VS with ELP=0, at the vector base */
	v->g.ctx.sstatus = (v->g.ctx.sstatus | SR_SPP) & ~SR_SPELP;
	v->g.ctx.sepc = csr_read(CSR_VSTVEC) & ~3UL;
	v->vm->stats.injected++;
}
