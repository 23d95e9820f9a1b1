/* SPDX-License-Identifier: MIT */
/* Would an interrupt wake a waiting vCPU now? Pure predicates, asked by the
 * scheduler (off-CPU state) and the run loop (the vCPU on this hart). */
#include <arch/riscv/csr.h>
#include <guest_time.h>
#include <hart.h>
#include <vm.h>

/* Pending-and-enabled check shared by the live and the saved state. */
static bool wake_check(unsigned long hvip, unsigned long posted, bool ext, unsigned long vsie,
		       uint64_t vstimecmp, uint64_t htimedelta, uint64_t now)
{
	unsigned long pending = (hvip & ~MIP_VSEIP) | posted | (ext ? MIP_VSEIP : 0);

	if (guest_timer_due(vstimecmp, htimedelta, now))
		pending |= MIP_VSTIP;
	/* vsie uses the guest's layout (SSIE=1, STIE=5, SEIE=9): shift to hvip's */
	return pending & (vsie << 1) & VS_IRQ_MASK;
}

bool vcpu_wake_pending(const struct vcpu *v, uint64_t now)
{
	/* ext_irq: also an SGEI's mark on a vCPU whose parked file signalled */
	return wake_check(v->g.csr.hvip, v->irq_pending, v->ext_irq, v->g.csr.vsie,
			  v->g.csr.vstimecmp, v->vm->htimedelta, now);
}

uint64_t vcpu_timer_deadline(const struct vcpu *v, uint64_t now)
{
	/* a timer the guest has not enabled (vsie.STIE, guest layout) never
	 * wakes it: an idle hart must not wake up for it, and spin if it is due */
	if (!(v->g.csr.vsie & MIP_STIP))
		return GUEST_TIMER_NEVER;
	return guest_timer_host_deadline(v->g.csr.vstimecmp, v->vm->htimedelta, now);
}

uint64_t vcpu_timer_deadline_live(const struct vcpu *v, uint64_t now)
{
	if (!(csr_read(CSR_VSIE) & MIP_STIP))
		return GUEST_TIMER_NEVER;
	return guest_timer_host_deadline(csr_read(CSR_VSTIMECMP), v->vm->htimedelta, now);
}

/* Same, for the vCPU loaded on this hart (state is in the CSRs). */
/* Its guest file signalling, if it holds one here: hgeip's bit of the file
 * VGEIN selects. hstatus, not the vCPU, says so: every other vCPU's path
 * (the PLIC IPI of `make bench`) pays one CSR read. */
static bool gfile_signals_live(void)
{
	unsigned long vgein = (csr_read(CSR_HSTATUS) & HSTATUS_VGEIN) >> HSTATUS_VGEIN_SHIFT;

	return vgein && ((csr_read(CSR_HGEIP) >> vgein) & 1);
}

bool vcpu_wake_pending_live(const struct vcpu *v)
{
	unsigned long vsie = csr_read(CSR_VSIE);

	/* the guest file last: a wake-up of any other kind asks nothing more */
	return wake_check(csr_read(CSR_HVIP), v->irq_pending, v->ext_irq, vsie,
			  csr_read(CSR_VSTIMECMP), csr_read(CSR_HTIMEDELTA), time_now()) ||
	       ((vsie & MIP_SEIP) && gfile_signals_live());	/* vsie: the guest's SEIE */
}
