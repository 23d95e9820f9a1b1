/* SPDX-License-Identifier: MIT */
/* vCPU state operations: load/put of VS state around a run, posted
 * interrupts and requests, kicks. Reset is in vcpu_reset.c, the run loop in
 * vcpu_run.c. */
#include <arch/riscv/csr.h>
#include <string.h>
#include <atomic.h>
#include <cfi.h>
#include <fwft.h>
#include <hart.h>
#include <hfence.h>
#include <host_ipi.h>
#include <sched.h>
#include <steal_time.h>
#include <tlb.h>
#include <vm.h>

/* hstatus is the hypervisor's, not the guest's: the same for every vCPU. */
#define VCPU_HSTATUS	(HSTATUS_SPV | HSTATUS_SPVP | HSTATUS_VTW | HSTATUS_VSXL_64)

/* Where the guest's ssp lives while the hypervisor runs: in the CSR (plain
 * build: swapped at load and put), or in the context, always current (CFI
 * build: the CSR holds the hypervisor's own; the trap vector and the guest
 * entries swap it, run/vcpu_switch.S). */
#ifdef CARAPACE_CFI_BUILD
#define ssp_in_csr()	false
#else
#define ssp_in_csr()	hart_caps.zicfiss
#endif

/* An AIA VM's external interrupt in software (hvip.VSEIP, VGEIN 0) as vstopi
 * reports it: only through hvictl (IID 9, IPRIO 1 while pending, as KVM's
 * aia_set_hvictl()); a guest that finds its interrupt through stopi (Linux
 * with Ssaia) would never see it otherwise. A PLIC VM's hvictl stays 0. */
static void vcpu_set_hvictl(const struct vcpu *v)
{
	if (!vm_is_aia(v->vm))
		return;
	if (v->imsic.mode == VIMSIC_HW)	/* its guest file drives vstopi (VGEIN) */
		csr_write(CSR_HVICTL, 0);
	else
		csr_write(CSR_HVICTL, ((unsigned long)IRQ_S_EXT << HVICTL_IID_SHIFT) |
				      (v->ext_irq_live ? 1 : 0));
}

/* An AIA vCPU holding a guest file of this hart (imsic_files.c): VGEIN
 * selects it, and a file parked armed (the vCPU waited) stops raising SGEI.
 * One held elsewhere is moved here before entry (imsic_files_enter()). */
static void vcpu_load_gfile(struct vcpu *v)
{
	unsigned long bit = 1UL << v->imsic.gfile;

	if (v->imsic.mode != VIMSIC_HW || v->imsic.ghart != (int)this_hart()->index)
		return;
	csr_set(CSR_HSTATUS, (unsigned long)v->imsic.gfile << HSTATUS_VGEIN_SHIFT);
	if (v->imsic.armed) {
		csr_clear(CSR_HGEIE, bit);
		v->imsic.armed = false;
	}
}

/* Parked: a waiting vCPU's file is armed, so that its next interrupt raises
 * SGEI on this hart (3.8); a pending one raises it at once. VGEIN goes, or
 * its VSEIP would keep the idle hart's wfi from sleeping. */
static void vcpu_put_gfile(struct vcpu *v)
{
	unsigned long bit = 1UL << v->imsic.gfile;

	if (v->imsic.mode != VIMSIC_HW || v->imsic.ghart != (int)this_hart()->index)
		return;
	csr_clear(CSR_HSTATUS, HSTATUS_VGEIN);
	if (v->g.hsm.waiting) {
		v->imsic.armed = true;
		csr_set(CSR_HGEIE, bit);
	}
}

void vcpu_load(struct vcpu *v)
{
	struct hart *h = this_hart();
	unsigned long henvcfg = v->henvcfg;

	h->current = v;
	v->hyp_sp = hart_stack_top(h);
	v->hyp_tp = (unsigned long)h;
	csr_write(CSR_HGATP, v->vm->hgatp);
	tlb_vcpu_load(h, v);	/* after hgatp: hfence.vvma acts on its VMID */
	csr_write(CSR_HSTATUS, VCPU_HSTATUS);
	csr_write(CSR_VSSTATUS, v->g.csr.vsstatus);
	csr_write(CSR_VSIE, v->g.csr.vsie);
	csr_write(CSR_VSTVEC, v->g.csr.vstvec);
	csr_write(CSR_VSSCRATCH, v->g.csr.vsscratch);
	csr_write(CSR_VSEPC, v->g.csr.vsepc);
	csr_write(CSR_VSCAUSE, v->g.csr.vscause);
	csr_write(CSR_VSTVAL, v->g.csr.vstval);
	csr_write(CSR_VSATP, v->g.csr.vsatp);
	csr_write(CSR_HTIMEDELTA, v->vm->htimedelta);
	csr_write(CSR_VSTIMECMP, v->g.csr.vstimecmp);
	csr_write(CSR_HVIP, v->g.csr.hvip);
	v->ext_irq_live = v->g.csr.hvip & MIP_VSEIP;
	csr_write(CSR_HENVCFG, henvcfg);
	if (hart_caps.smstateen)
		csr_write(CSR_HSTATEEN0, v->vm->hstateen0);
	csr_write(CSR_HEDELEG, vcpu_hedeleg(v));
	csr_write(CSR_SCOUNTEREN, v->g.csr.scounteren);
	/* senvcfg is not banked; its SSE must read 0 while henvcfg.SSE=0 (QEMU Q6) */
	csr_write(CSR_SENVCFG, (henvcfg & ENVCFG_SSE) ? v->g.csr.senvcfg :
							 v->g.csr.senvcfg & ~ENVCFG_SSE);
	if (ssp_in_csr())
		csr_write(CSR_SSP, v->g.csr.ssp);
	/* one test on a host without Ssaia, where no VM is an AIA VM */
	if (__builtin_expect(hart_caps.ssaia, 0)) {
		csr_write(CSR_VSISELECT, v->g.csr.vsiselect);	/* VS state, whatever the irqchip */
		if (vm_is_aia(v->vm)) {	/* one test for a PLIC VM (the vCPU switch) */
			if (v->imsic.mode)	/* not VIMSIC_SW: it holds a guest file */
				vcpu_load_gfile(v);
			vcpu_set_hvictl(v);
		}
	}
	/* one test for a vCPU without debug triggers */
	if (__builtin_expect(v->dbtr.live, 0))
		dbtr_vcpu_load_slow(v);
	__vcpu_fp_restore(&v->g.fp);
}

void vcpu_put(struct vcpu *v)
{
	/* it hands v back: nothing is kept across the call (vCPU switch cost) */
	if (v->g.pmu.configured & PMU_HW_MASK)	/* folds the live counts in */
		v = pmu_vcpu_put(v);
	v->g.csr.vsstatus = csr_read(CSR_VSSTATUS);
	v->g.csr.vsie = csr_read(CSR_VSIE);
	v->g.csr.vstvec = csr_read(CSR_VSTVEC);
	v->g.csr.vsscratch = csr_read(CSR_VSSCRATCH);
	v->g.csr.vsepc = csr_read(CSR_VSEPC);
	v->g.csr.vscause = csr_read(CSR_VSCAUSE);
	v->g.csr.vstval = csr_read(CSR_VSTVAL);
	v->g.csr.vsatp = csr_read(CSR_VSATP);
	v->g.csr.vstimecmp = csr_read(CSR_VSTIMECMP);
	v->g.csr.hvip = csr_read(CSR_HVIP);
	v->g.csr.scounteren = csr_read(CSR_SCOUNTEREN);
	v->g.csr.senvcfg = csr_read(CSR_SENVCFG);
	if (ssp_in_csr())
		v->g.csr.ssp = csr_read(CSR_SSP);
	if (__builtin_expect(hart_caps.ssaia, 0)) {
		v->g.csr.vsiselect = csr_read(CSR_VSISELECT);
		if (vm_is_aia(v->vm)) {
			csr_write(CSR_HVICTL, 0);	/* the next VM's starts from 0 */
			if (v->imsic.mode)
				vcpu_put_gfile(v);
		}
	}
	/* posted interrupts become guest state once the vCPU is off the hart */
	if (v->irq_pending)
		v->g.csr.hvip |= atomic_xchg(&v->irq_pending, 0);
	/* only what the guest changed: FS is Dirty once it wrote an f register
	 * or fcsr (at either level, V=1), and Clean again once saved */
	if ((v->g.ctx.sstatus & SR_FS) == SR_FS) {
		__vcpu_fp_save(&v->g.fp);
		v->g.ctx.sstatus = (v->g.ctx.sstatus & ~SR_FS) | SR_FS_CLEAN;
	}
	csr_write(CSR_HVIP, 0);
	/* its debug triggers leave with it (one test without) */
	if (__builtin_expect(this_hart()->dbtr_hw, 0))
		dbtr_hart_clear();
	this_hart()->current = NULL;
}

uint64_t vcpu_exits(const struct vcpu *v)
{
	uint64_t n = v->stats.irq_exits;

	for (unsigned int i = 0; i < VCPU_EXIT_CAUSES; i++)
		n += v->stats.by_cause[i];
	return n;
}

void vcpu_kick(struct vcpu *v)
{
	int h = v->hart;

	if (h >= 0 && h != (int)this_hart()->index)
		host_ipi_send(h);
	else if (h < 0)
		sched_kick_idle();
}

void vcpu_post_irq(struct vcpu *v, unsigned long bits)
{
	if (v->g.sta.enabled)	/* steal time counts from a wake-up */
		steal_note_wake(v, bits);
	atomic_or(&v->irq_pending, bits);
	vcpu_kick(v);
}


/* The CSRs the host shows that only vcpu_put() saves otherwise. */
static void save_live_cfi(struct vcpu *v)
{
	v->g.csr.senvcfg = csr_read(CSR_SENVCFG);
	if (ssp_in_csr())
		v->g.csr.ssp = csr_read(CSR_SSP);
}

void vcpu_sync_state(struct vcpu *t, uint64_t deadline)
{
	struct hart *self = this_hart();
	int h;

	if (t == self->current) {
		save_live_cfi(t);	/* loaded here: host_poll runs in its exit */
		return;
	}
	atomic_or(&t->requests, VCPU_REQ_SYNC_STATE);
	h = t->hart;
	if (h < 0)
		return;		/* off CPU: memory holds it (the request is harmless) */
	host_ipi_send(h);
	while ((atomic_load(&t->requests) & VCPU_REQ_SYNC_STATE) && t->hart == h &&
	       time_now() < deadline) {
		if (self->current)
			vcpu_apply_pending(self->current);
		tlb_service();
	}
}

/* Work posted to the vCPU loaded on this hart. */
void vcpu_apply_pending_slow(struct vcpu *v)
{
	unsigned long req, irq;

	if (v->requests) {
		req = atomic_xchg(&v->requests, 0);
		if (req & VCPU_REQ_FENCE_I)
			local_fence_i();
		if (req & VCPU_REQ_HFENCE_VVMA)
			hfence_vvma_all();
		if (req & VCPU_REQ_SYNC_STATE)
			save_live_cfi(v);
		if (req & VCPU_REQ_PMU_LOAD)	/* posted by pmu_vcpu_put(): no test in vcpu_load() */
			pmu_vcpu_load(v);
		if (req & VCPU_REQ_STEAL)
			steal_vcpu_in(v);
	}
	if (v->irq_pending) {
		irq = atomic_xchg(&v->irq_pending, 0);
		csr_set(CSR_HVIP, irq);
	}
	if (v->ext_irq != v->ext_irq_live) {	/* the PLIC output is a level */
		v->ext_irq_live = v->ext_irq;
		if (v->ext_irq_live)
			csr_set(CSR_HVIP, MIP_VSEIP);
		else
			csr_clear(CSR_HVIP, MIP_VSEIP);
		vcpu_set_hvictl(v);
	}
	if (v->lp_window.open)	/* not before the fault it re-delivers */
		vcpu_hold_irqs(v);
}
