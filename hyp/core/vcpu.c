/* SPDX-License-Identifier: MIT */
/* vCPU reset, load/put of VS state around a run, the run loop, and kicks. */
#include <arch/riscv/csr.h>
#include <string.h>
#include <atomic.h>
#include <cfi.h>
#include <console.h>
#include <exit.h>
#include <hart.h>
#include <hfence.h>
#include <sbi_client.h>
#include <sched.h>
#include <vm.h>
#include <vsbi.h>

static unsigned long henvcfg_base(void)
{
	/* Sstc for the guest, and Svpbmt/Svadu when the hardware has them */
	return hart_caps.henvcfg_ok & (ENVCFG_STCE | ENVCFG_PBMTE | ENVCFG_ADUE);
}

void vcpu_reset(struct vcpu *v, unsigned long entry, unsigned long arg)
{
	memset(&v->ctx, 0, sizeof(v->ctx));
	memset(&v->csr, 0, sizeof(v->csr));
	memset(&v->fp, 0, sizeof(v->fp));
	v->ctx.gpr[10] = v->id;
	v->ctx.gpr[11] = arg;
	v->ctx.sepc = entry;
	/* enter VS-mode (SPP=1) with SIE=0, ELP=0 (SPELP clear) */
	v->ctx.sstatus = SR_SPP | SR_FS_INITIAL | SR_UXL_64;
	v->csr.hstatus = HSTATUS_SPV | HSTATUS_SPVP | HSTATUS_VTW | HSTATUS_VSXL_64;
	v->csr.vsstatus = SR_UXL_64;
	v->csr.vstimecmp = -1UL;
	v->waiting = false;
	v->resume_nonret = false;
	v->irq_pending = 0;
	v->requests = VCPU_REQ_FENCE_I | VCPU_REQ_HFENCE_VVMA;
	cfi_vcpu_reset(v);
	v->csr.henvcfg = henvcfg_base() | cfi_henvcfg(v);
}

void vcpu_load(struct vcpu *v)
{
	struct hart *h = this_hart();
	unsigned long henvcfg = v->csr.henvcfg;

	h->current = v;
	v->ctx.hyp_sp = hart_stack_top(h);
	v->ctx.hyp_tp = (unsigned long)h;
	csr_write(CSR_HGATP, v->vm->hgatp);
	if (!hart_caps.vmid_bits)
		hfence_gvma_all();	/* VMIDs all alias: nothing cached may survive */
	if (h->last != v) {
		/* Another vCPU (of this VM or another) used this hart since, or @v ran
		 * elsewhere: cached VS-stage entries and fetched code may be stale. */
		v->requests |= VCPU_REQ_FENCE_I | VCPU_REQ_HFENCE_VVMA;
		h->last = v;
	}
	csr_write(CSR_HSTATUS, v->csr.hstatus);
	csr_write(CSR_VSSTATUS, v->csr.vsstatus);
	csr_write(CSR_VSIE, v->csr.vsie);
	csr_write(CSR_VSTVEC, v->csr.vstvec);
	csr_write(CSR_VSSCRATCH, v->csr.vsscratch);
	csr_write(CSR_VSEPC, v->csr.vsepc);
	csr_write(CSR_VSCAUSE, v->csr.vscause);
	csr_write(CSR_VSTVAL, v->csr.vstval);
	csr_write(CSR_VSATP, v->csr.vsatp);
	csr_write(CSR_HTIMEDELTA, v->csr.htimedelta);
	csr_write(CSR_VSTIMECMP, v->csr.vstimecmp);
	csr_write(CSR_HVIP, v->csr.hvip);
	v->ext_irq_live = v->csr.hvip & MIP_VSEIP;
	csr_write(CSR_HENVCFG, henvcfg);
	csr_write(CSR_HEDELEG, (csr_read(CSR_HEDELEG) & ~BIT(EXC_SW_CHECK)) |
				       cfi_hedeleg(v->vm));
	csr_write(CSR_SCOUNTEREN, v->csr.scounteren);
	/* senvcfg is not banked; its SSE must read 0 while henvcfg.SSE=0 (QEMU Q6) */
	csr_write(CSR_SENVCFG, (henvcfg & ENVCFG_SSE) ? v->csr.senvcfg :
							 v->csr.senvcfg & ~ENVCFG_SSE);
	if (hart_caps.zicfiss)
		csr_write(CSR_SSP, v->csr.ssp);
	__vcpu_fp_restore(&v->fp);
}

void vcpu_put(struct vcpu *v)
{
	v->csr.vsstatus = csr_read(CSR_VSSTATUS);
	v->csr.vsie = csr_read(CSR_VSIE);
	v->csr.vstvec = csr_read(CSR_VSTVEC);
	v->csr.vsscratch = csr_read(CSR_VSSCRATCH);
	v->csr.vsepc = csr_read(CSR_VSEPC);
	v->csr.vscause = csr_read(CSR_VSCAUSE);
	v->csr.vstval = csr_read(CSR_VSTVAL);
	v->csr.vsatp = csr_read(CSR_VSATP);
	v->csr.vstimecmp = csr_read(CSR_VSTIMECMP);
	v->csr.hvip = csr_read(CSR_HVIP);
	v->csr.scounteren = csr_read(CSR_SCOUNTEREN);
	v->csr.senvcfg = csr_read(CSR_SENVCFG);
	if (hart_caps.zicfiss)
		v->csr.ssp = csr_read(CSR_SSP);
	__vcpu_fp_save(&v->fp);
	csr_write(CSR_HVIP, 0);
	this_hart()->current = NULL;
}

uint64_t vcpu_exits(const struct vcpu *v)
{
	uint64_t n = v->stats.irq_exits;

	for (unsigned int i = 0; i < VCPU_EXIT_CAUSES; i++)
		n += v->stats.by_cause[i];
	return n;
}

/* Pending-and-enabled check shared by the live and the saved state. */
static bool wake_check(unsigned long hvip, unsigned long posted, bool ext, unsigned long vsie,
		       uint64_t vstimecmp, uint64_t htimedelta, uint64_t now)
{
	unsigned long pending = (hvip & ~MIP_VSEIP) | posted | (ext ? MIP_VSEIP : 0);

	if (now + htimedelta >= vstimecmp)
		pending |= MIP_VSTIP;
	/* vsie uses the guest's layout (SSIE=1, STIE=5, SEIE=9): shift to hvip's */
	return pending & (vsie << 1) & VS_IRQ_MASK;
}

bool vcpu_wake_pending(const struct vcpu *v, uint64_t now)
{
	return wake_check(v->csr.hvip, v->irq_pending, v->ext_irq, v->csr.vsie, v->csr.vstimecmp,
			  v->csr.htimedelta, now);
}

/* Same, for the vCPU loaded on this hart (state is in the CSRs). */
static bool wake_pending_live(const struct vcpu *v)
{
	return wake_check(csr_read(CSR_HVIP), v->irq_pending, v->ext_irq, csr_read(CSR_VSIE),
			  csr_read(CSR_VSTIMECMP), csr_read(CSR_HTIMEDELTA), time_now());
}

void vcpu_kick(struct vcpu *v)
{
	int h = v->hart;

	if (h >= 0 && h != (int)this_hart()->index)
		sbi_send_ipi(1, harts[h].hartid);
	else if (h < 0)
		sched_kick_idle();
}

void vcpu_post_irq(struct vcpu *v, unsigned long bits)
{
	atomic_or(&v->irq_pending, bits);
	vcpu_kick(v);
}


/* Work posted to the vCPU loaded on this hart. */
static void apply_pending_slow(struct vcpu *v)
{
	unsigned long req, irq;

	if (v->requests) {
		req = atomic_xchg(&v->requests, 0);
		if (req & VCPU_REQ_FENCE_I)
			local_fence_i();
		if (req & VCPU_REQ_HFENCE_VVMA)
			hfence_vvma_all();
		if (req & VCPU_REQ_HFENCE_GVMA)
			hfence_gvma_vmid(v->vm->vmid);
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
	}
}

static inline void apply_pending(struct vcpu *v)
{
	/* one test on the hot path: is there anything to do at all? */
	if (v->requests | v->irq_pending | (v->ext_irq ^ v->ext_irq_live))
		apply_pending_slow(v);
}

void vcpu_request_sync(struct vcpu *self, struct vcpu *t, unsigned long req)
{
	int h;

	atomic_or(&t->requests, req);
	h = t->hart;
	if (t == self || h < 0)
		return;		/* applied before it next enters the guest */
	sbi_send_ipi(1, harts[h].hartid);
	/* SBI RFENCE returns once the fence is done. Keep serving requests posted
	 * to us meanwhile, or two vCPUs fencing each other would wait forever. */
	while ((atomic_load(&t->requests) & req) && t->hart == h)
		apply_pending(self);
}

/* Leaving a retentive or non-retentive suspend (SBI HSM). */
static void resume_from_suspend(struct vcpu *v)
{
	v->hsm = VCPU_HSM_STARTED;
	if (!v->resume_nonret)
		return;
	v->resume_nonret = false;
	v->ctx.sepc = v->resume_addr;
	v->ctx.gpr[10] = v->id;
	v->ctx.gpr[11] = v->resume_opaque;
	v->ctx.sstatus = (v->ctx.sstatus & ~(SR_SPIE | SR_SPELP)) | SR_SPP;
	csr_write(CSR_VSSTATUS, csr_read(CSR_VSSTATUS) & ~SR_SIE);
	csr_write(CSR_VSATP, 0);
}

/* May @v go on running on this hart now? Settles a pending wake-up. */
static __attribute__((noinline)) bool may_continue_slow(struct vcpu *v)
{
	if (v->vm->state != VM_RUNNING || v->hsm == VCPU_HSM_STOPPED)
		return false;
	if (v->waiting) {
		if (!wake_pending_live(v))
			return false;
		v->waiting = false;
		if (v->hsm == VCPU_HSM_SUSPENDED)
			resume_from_suspend(v);
	}
	return true;
}

/* The common case, decided without touching the saved context. */
static inline bool plainly_runnable(const struct vcpu *v)
{
	return v->vm->state == VM_RUNNING && v->hsm == VCPU_HSM_STARTED && !v->waiting;
}

static inline bool may_continue(struct vcpu *v)
{
	if (__builtin_expect(plainly_runnable(v), 1))
		return true;
	return may_continue_slow(v);
}

void vcpu_start_on_hart(struct vcpu *v)
{
	for (;;) {
		vcpu_load(v);
		if (may_continue(v))
			break;
		vcpu_put(v);	/* its state changed since it was picked */
		sched_release(v);
		v = sched_next();
	}
	sched_arm_slice();
	apply_pending(v);
	__vcpu_enter(&v->ctx);
}

/* Give the hart away; the stack is fresh again at the next exit. */
static __attribute__((noinline, noreturn)) void switch_out(struct vcpu *v)
{
	csr_write(CSR_STIMECMP, -1UL);
	vcpu_put(v);
	sched_release(v);
	vcpu_start_on_hart(sched_next());
}

/* After an exit has been handled (whole context saved): go on or switch. */
static __attribute__((noreturn)) void continue_or_switch(struct vcpu *v, enum exit_action act)
{
	if (__builtin_expect(act != EXIT_YIELD && act != EXIT_VM_STOP, 1) && may_continue(v)) {
		apply_pending(v);
		__vcpu_enter(&v->ctx);
	}
	switch_out(v);
}

void vcpu_handle_exit(struct vcpu_ctx *ctx)
{
	struct vcpu *v = container_of(ctx, struct vcpu, ctx);

	continue_or_switch(v, vcpu_exit(v));
}

/* The tail shared by the fast exits: may the guest be re-entered directly? */
static inline long fast_verdict(struct vcpu *v, enum exit_action act)
{
	v->fast_action = act;
	/* only the caller-saved registers are in ctx: anything but "carry on
	 * with nothing pending" finishes with the whole context saved */
	if (act == EXIT_YIELD || act == EXIT_VM_STOP || !plainly_runnable(v) ||
	    (v->requests | v->irq_pending | (v->ext_irq ^ v->ext_irq_live)))
		return VCPU_EXIT_FINISH;	/* waking up may rewrite sstatus: full path */
	return VCPU_EXIT_DONE;
}

static __attribute__((noinline)) long fast_mmio(struct vcpu *v, unsigned long cause)
{
	if ((cause != EXC_LOAD_GUEST_PAGE_FAULT && cause != EXC_STORE_GUEST_PAGE_FAULT) ||
	    !exit_mmio_fast(v, cause))
		return VCPU_EXIT_FULL;
	v->stats.by_cause[cause]++;
	return fast_verdict(v, EXIT_RESUME_SAME);
}

long vcpu_exit_fast(struct vcpu_ctx *ctx)
{
	struct vcpu *v = container_of(ctx, struct vcpu, ctx);
	unsigned long cause = csr_read(CSR_SCAUSE);

	if (__builtin_expect(cause != EXC_ECALL_VS, 0))
		return fast_mmio(v, cause);
	v->stats.by_cause[EXC_ECALL_VS]++;
	return fast_verdict(v, vsbi_dispatch(v));
}

void vcpu_exit_finish(struct vcpu_ctx *ctx)
{
	struct vcpu *v = container_of(ctx, struct vcpu, ctx);

	continue_or_switch(v, v->fast_action);
}
