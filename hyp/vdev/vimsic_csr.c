/* SPDX-License-Identifier: MIT */
/* The IMSIC CSRs of a vCPU whose file is in software (docs/design-aia.md
 * 3.6). With hstatus.VGEIN 0, a VS-mode access to sireg while vsiselect is
 * in 0x70..0xFF or to the iprio array (0x30..0x3F), and any VS access to
 * stopei, is a virtual-instruction exit (AIA CSRs.adoc; QEMU 10.0.2 does the
 * same: rmw_xireg_aia()/rmw_xtopei(), docs/design-aia.md 8). vsiselect
 * itself is the guest's, live in the CSR: nothing traps on it. */
#include <arch/riscv/csr.h>
#include <csr_insn.h>
#include <errno.h>
#include <imsic_file.h>
#include <vimsic.h>
#include <vm.h>

#define ISEL_IPRIO_FIRST	0x30
#define ISEL_IPRIO_LAST		0x3f

/* vsireg through vsiselect @isel: 0 or -HYP_EINVAL (illegal). */
static int ireg_access(struct vcpu *v, uint64_t isel, const struct csr_insn *c, uint64_t *old)
{
	if (isel >= ISEL_IPRIO_FIRST && isel <= ISEL_IPRIO_LAST) {
		/* interrupt priorities: read-only zeros (VSLevel.adoc allows it
		 * outside hviprio1/2); on RV64 the odd ones do not exist */
		*old = 0;
		return (isel & 1) ? -HYP_EINVAL : 0;
	}
	if (isel < IMSIC_ISEL_FIRST || isel > IMSIC_ISEL_LAST)
		return -HYP_EINVAL;	/* reserved, as on bare hardware */
	return vimsic_rmw(v, isel, old, c->val, c->write ? c->wmask : 0);
}

int vimsic_csr_exit(struct vcpu *v, unsigned long insn)
{
	struct csr_insn c;
	uint64_t old;
	int rc = 0;

	if (!vm_is_aia(v->vm) || !(v->g.ctx.sstatus & SR_SPP) ||
	    !csr_insn_decode((uint32_t)insn, v->g.ctx.gpr, &c))
		return 0;
	if (c.csr == CSR_SIREG)
		rc = ireg_access(v, csr_read(CSR_VSISELECT), &c, &old);
	else if (c.csr == CSR_STOPEI)	/* any write claims; the value is ignored */
		old = vimsic_topei(v, c.write);
	else
		return 0;
	if (rc)
		return -1;
	if (c.rd)
		v->g.ctx.gpr[c.rd] = old;
	return 1;
}
