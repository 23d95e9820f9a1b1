/* SPDX-License-Identifier: MIT */
/* The run loop: a hart enters a vCPU, the trap vector brings every exit here,
 * the dispatcher (exit.c) returns a verdict, and the hart enters the same vCPU
 * again or the next one the scheduler picks. Data flows one way round. */
#include <arch/riscv/csr.h>
#include <cfi.h>
#include <exit.h>
#include <hart.h>
#include <hart_service.h>
#include <imsic_files.h>
#include <sched.h>
#include <steal_time.h>
#include <tlb.h>
#include <vcpu_run.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include <vsbi.h>

/* Leaving a retentive or non-retentive suspend (SBI HSM), or the VM's
 * system suspend (SBI SUSP, always non-retentive). */
static void resume_from_suspend(struct vcpu *v)
{
	v->g.hsm.state = VCPU_HSM_STARTED;
	v->g.hsm.system = false;
	if (!v->g.hsm.resume_nonret)
		return;
	v->g.hsm.resume_nonret = false;
	v->g.ctx.sepc = v->g.hsm.resume_addr;
	v->g.ctx.gpr[10] = v->id;
	v->g.ctx.gpr[11] = v->g.hsm.resume_opaque;
	v->g.ctx.sstatus = (v->g.ctx.sstatus & ~(SR_SPIE | SR_SPELP)) | SR_SPP;
	csr_write(CSR_VSSTATUS, csr_read(CSR_VSSTATUS) & ~SR_SIE);
	csr_write(CSR_VSATP, 0);
}

/* May @v go on running on this hart now? Settles a pending wake-up. */
static __attribute__((noinline)) bool may_continue_slow(struct vcpu *v)
{
	if (v->vm->state != VM_RUNNING || v->g.hsm.state == VCPU_HSM_STOPPED)
		return false;
	if (v->g.hsm.waiting) {
		if (!vcpu_wake_pending_live(v))
			return false;
		v->g.hsm.waiting = false;
	}
	/* woken by an interrupt, or by the host (vm_wake: no interrupt) */
	if (v->g.hsm.state == VCPU_HSM_SUSPENDED)
		resume_from_suspend(v);
	return true;
}

/* The common case, decided without touching the saved context. */
static inline bool plainly_runnable(const struct vcpu *v)
{
	return v->vm->state == VM_RUNNING && v->g.hsm.state == VCPU_HSM_STARTED && !v->g.hsm.waiting;
}

static inline __attribute__((always_inline)) bool may_continue(struct vcpu *v)
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
	vcpu_apply_pending(v);
	__vcpu_enter(v);
}

/* Give the hart away; the stack is fresh again at the next exit. */
static __attribute__((noinline, noreturn)) void switch_out(struct vcpu *v)
{
	csr_write(CSR_STIMECMP, -1UL);
	sched_wfi_mode_off(this_hart());
	if (v->lp_window.open)
		cfi_lp_window_drop(v);	/* vcpu_load() sets hedeleg and hstatus afresh */
	vcpu_put(v);
	if (v->g.sta.enabled)	/* one test for vCPUs without a steal-time record */
		steal_vcpu_out(v);
	sched_release(v);
	/* one of a VM being paused, stopped or destroyed: the operation that
	 * waits for its vCPUs to leave their harts goes on at once on hart 0,
	 * not at the end of the slice of a guest there */
	if (__builtin_expect(v->vm->state != VM_RUNNING, 0))
		sched_want_host_turn();
	vcpu_start_on_hart(sched_next());
}

/* A vCPU that waits for an interrupt (WFI, HSM suspend) keeps its hart
 * while no other vCPU wants one: the hart sleeps with it loaded and, when its
 * interrupt comes, enters it again without the put, the pick and the load
 * (an IPI to a sleeping vCPU: docs/architecture.md, "Waiting in place").
 * Anything else that wakes the hart ends the wait the usual way. */
static __attribute__((noinline)) bool wait_in_place(struct vcpu *v)
{
	struct hart *h = this_hart();
	uint64_t not_after = -1UL;
	unsigned long sgei;
	bool woken;

	if (!v->g.hsm.waiting || v->lp_window.open || v->vm->state != VM_RUNNING)
		return false;
	if (h->index == 0 && sched_host_poll)
		not_after = sched_host_poll();	/* what sched_next() would do first */
	sgei = imsic_files_wait_arm();
	woken = sched_wait_loaded(h, v, not_after);
	if (sgei)	/* before hart_service(): its SGEI is no other vCPU's */
		csr_clear(CSR_HGEIE, sgei);
	if (!woken)
		return false;
	hart_service();
	hart_service_sgei();	/* the SGEI that may have ended the wfi */
	if (h->index == 0 && sched_host_turn_wanted)
		return false;
	if (!may_continue(v))
		return false;
	v->stats.wfi_in_place++;
	sched_arm_slice();
	/* its next WFI sleeps in the guest if it has the hart to itself: decided
	 * here, not at every load (a vCPU switch pays nothing for it) */
	sched_wfi_mode(h, v);
	return true;
}

/* After an exit has been handled (whole context saved): go on or switch. */
static __attribute__((noreturn)) void continue_or_switch(struct vcpu *v, enum exit_action act)
{
	if (__builtin_expect(act != EXIT_YIELD && act != EXIT_VM_STOP, 1) &&
	    (may_continue(v) || wait_in_place(v))) {
		vcpu_apply_pending(v);
		__vcpu_enter(v);
	}
	switch_out(v);
}

/* The one place an exit is counted and the guest pc moves (the pc rule):
 * right after the handler, before anything else reads the context. */
static inline __attribute__((always_inline)) enum exit_action
exit_apply(struct vcpu *v, unsigned long cause, long action, unsigned long pc_step)
{
	if (cause & CAUSE_IRQ_FLAG)
		v->stats.irq_exits++;
	else	/* the only counter on the hot path; totals are summed when shown */
		v->stats.by_cause[cause < VCPU_EXIT_CAUSES ? cause : 0]++;
	v->g.ctx.sepc += pc_step;
	return action;
}

void vcpu_handle_exit(struct vcpu *v)
{
	struct hart *h = this_hart();
	unsigned long cause;
	struct exit_verdict vd;

	if (__builtin_expect(h->deferred.region != NULL, 0)) {
		/* the fast path decoded it already: only the register was missing */
		cause = h->deferred.cause;
		vd = vcpu_exit_deferred(v);
	} else {
		cause = csr_read(CSR_SCAUSE);
		vd = vcpu_exit(v, cause);
	}
	continue_or_switch(v, exit_apply(v, cause, vd.action, vd.pc_step));
}

/* The common case of the end of a fast exit: nothing makes the vCPU leave
 * or wait. */
static inline bool plainly_continues(const struct vcpu *v, enum exit_action act)
{
	return act != EXIT_YIELD && act != EXIT_VM_STOP && plainly_runnable(v) &&
	       !(v->requests | v->irq_pending | (v->ext_irq ^ v->ext_irq_live));
}

/* The fast exit: the same route with only the caller-saved registers saved.
 * May the guest be re-entered directly after it? (flatten: the SBI dispatcher
 * inlined, which keeps the SBI round trip at 150 instructions.) */
__attribute__((flatten)) long vcpu_exit_fast(struct vcpu *v)
{
	unsigned long cause = csr_read(CSR_SCAUSE);
	struct exit_verdict vd = vcpu_exit_hot(v, cause);
	enum exit_action act;

	if (vd.action == EXIT_FULL)
		return VCPU_EXIT_FULL;
	act = exit_apply(v, cause, vd.action, vd.pc_step);
	v->fast_action = act;
	/* only the caller-saved registers are in ctx: anything but "carry on
	 * with nothing pending" finishes with the whole context saved. It is
	 * plainly_continues() written out: through the helper GCC 12 shares the
	 * epilogue, one instruction more on every fast exit (`make bench micro`) */
	if (act == EXIT_YIELD || act == EXIT_VM_STOP || !plainly_runnable(v) ||
	    (v->requests | v->irq_pending | (v->ext_irq ^ v->ext_irq_live)))
		return VCPU_EXIT_FINISH;	/* waking up may rewrite sstatus: full path */
	return VCPU_EXIT_DONE;
}

long vcpu_exit_fast_loaded(struct vcpu *v)
{
	enum exit_action act = exit_apply(v, csr_read(CSR_SCAUSE), EXIT_RESUME,
					  this_hart()->fast_load.len);

	v->fast_action = act;
	return plainly_continues(v, act) ? VCPU_EXIT_DONE : VCPU_EXIT_FINISH;
}

void vcpu_exit_finish(struct vcpu *v)
{
	continue_or_switch(v, v->fast_action);
}

struct vcpu *sched_next(void)
{
	struct hart *h = this_hart();

	for (;;) {
		unsigned long gen = sched_wake_gen();
		uint64_t now = time_now();
		struct vm *reboot;
		struct vcpu *v = sched_pick(now, &reboot);
		uint64_t host_again = -1UL;

		hart_service();
		if (h->index == 0 && sched_host_poll)
			host_again = sched_host_poll();
		if (reboot) {
			vm_reset(reboot);
			continue;
		}
		if (v) {
			/* an AIA vCPU takes a guest file here (moved, maybe)
			 * before its load sets VGEIN for it */
			if (__builtin_expect(imsic_files_used, 0) && vm_is_aia(v->vm))
				imsic_files_enter(v);
			return v;	/* a pending host interrupt exits the guest at once */
		}
		if (host_again) {	/* takes hart 0's host interrupts first */
			sched_idle(h, now, gen, host_again);
			hart_service_sgei();	/* the SGEI that may have ended the wfi */
		}
	}
}

void sched_loop(void)
{
	vcpu_start_on_hart(sched_next());
}
