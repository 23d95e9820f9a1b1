/* SPDX-License-Identifier: MIT */
/* Landing-pad faults delivered by the hardware, on CPUs whose HS sret cannot
 * leave a guest's sstatus.SPELP set (CFI self-test: QEMU 10.0.2 takes ELP from
 * it and clears it). Injecting such a fault by hand would give the guest's
 * handler SPELP=0 where bare hardware gives 1 (docs/cfi.md §7, issue 12).
 *
 * After counting the fault, the vCPU re-runs the faulting instruction with
 * ELP=1 and hedeleg[18] set: it faults again, and the hardware delivers that
 * fault to the guest's vstvec with SPELP=1. This "window" lasts until the next
 * exit that is not an SBI call or a device access; hstatus.VTSR makes the
 * guest's sret out of its handler such an exit, so no guest code outside the
 * handler runs with hedeleg[18] set: every user-mode violation is counted. A
 * violation by that handler itself goes to the guest too; when the window
 * closes, a shadow-stack one is still in vscause (tval 3: the re-delivered
 * fault has 2) and is counted then (strict stops the VM). A landing-pad one
 * (possible only while the guest kernel has landing pads on) cannot be told
 * from the re-delivered fault, so strict re-delivers only while henvcfg.LPE=0
 * (Linux 7.2: user landing pads only) and otherwise injects the fault as
 * before, with SPELP=0.
 * Any exit while the handler has not yet read sstatus would clear the guest's
 * SPELP again, so host IPIs are held off and the host timer is pushed to at
 * least LP_WINDOW_GUARD_US ahead while the window is open, IPIs only until an
 * exit the window stays open through (a write to a page being dirty-logged,
 * say) has cost the guest its SPELP anyway.
 * The guest's own interrupts wait too, until the window closes: one taken at
 * the faulting instruction (pending since the fault reached us) finds ELP=1,
 * and a guest kernel that then runs another task returns to the instruction
 * only after the window has closed; its fault reaches us a second time. The
 * guest's timer cannot be held for certain (Sstc makes a vstimecmp write
 * reach the interrupt "eventually"; QEMU 10.0.2 can raise a timer it had
 * already fired after the write), so a window that closes with the fault not
 * yet delivered leaves it "owed": counted once, it is re-delivered, not
 * counted, when it comes back (cfi_lp_fault_owed()). */
#include <arch/riscv/csr.h>
#include <cfi.h>
#include <exit_action.h>
#include <guest_time.h>
#include <fwft.h>
#include <hart.h>
#include <host_ipi.h>
#include <sched.h>
#include <vm.h>

#define LP_WINDOW_GUARD_US	200
/* guard periods a window may be extended by while the vCPU sits at the
 * faulting pc: at most (1 + this) * LP_WINDOW_GUARD_US with host IPIs held */
#define LP_WINDOW_MAX_REARMS	3
#define INSN_SRET		0x10200073UL
/* vstimecmp while the guest's timer is held: not a value a guest writes to
 * stop its timer (-1), so a write the handler makes meanwhile is told apart */
#define TIMER_PARKED		(~0UL - 1)

bool cfi_lp_redeliver_ok(const struct vcpu *v)
{
	return v->vm->cfg.cfi_policy != CFI_POLICY_STRICT || !(v->henvcfg & ENVCFG_LPE);
}

static uint64_t guard_ticks(void)
{
	static uint64_t ticks;	/* (harts racing here all store the same value) */

	if (__builtin_expect(!ticks, 0))
		ticks = timebase_hz * LP_WINDOW_GUARD_US / 1000000;
	return ticks;
}

enum exit_action cfi_lp_redeliver(struct vcpu *v)
{
	uint64_t slice_end = csr_read(CSR_STIMECMP);
	uint64_t now = time_now(), guard_end = now + guard_ticks();

	v->lp_window.open = true;
	v->lp_window.pc = v->g.ctx.sepc;
	v->lp_window.rearms = 0;
	v->lp_window.slice_end = slice_end;
	/* ELP=1 at the faulting instruction: this CPU's sret takes it from the
	 * guest's SPELP, banked in vsstatus only while henvcfg.LPE=1 */
	if (v->henvcfg & ENVCFG_LPE)
		csr_set(CSR_VSSTATUS, SR_SPELP);
	else
		v->g.ctx.sstatus |= SR_SPELP;
	/* cause 18 alone goes to the guest: any other trap its handler takes
	 * exits to us first, so nothing overwrites vscause before the window
	 * closes and count_delegated() looks at it */
	csr_write(CSR_HEDELEG, BIT(EXC_SW_CHECK));
	/* a WFI in the window exits (window_close() leaves it so until the
	 * next sched_wfi_mode()) */
	csr_set(CSR_HSTATUS, HSTATUS_VTSR | HSTATUS_VTW);
	sched_wfi_mode_off(this_hart());
	host_ipi_hold();	/* kicks wait; hart 0's devices do not */
	/* (a timer write costs: only when the slice would end too soon) */
	v->lp_window.timer_moved = slice_end < guard_end;
	if (v->lp_window.timer_moved)
		csr_write(CSR_STIMECMP, guard_end);
	v->lp_window.held_hvip = 0;
	vcpu_hold_irqs(v);
	/* a timer due later than the guard rarely fires inside the window; if
	 * it does, the fault is owed (below) */
	v->lp_window.held_vstimecmp = csr_read(CSR_VSTIMECMP);
	/* (vstimecmp is guest time: compared where it fires in host time) */
	v->lp_window.timer_parked = guest_timer_host_deadline(v->lp_window.held_vstimecmp,
							     csr_read(CSR_HTIMEDELTA), now) < guard_end;
	if (v->lp_window.timer_parked)
		csr_write(CSR_VSTIMECMP, TIMER_PARKED);
	v->vm->stats.injected++;
	return EXIT_RESUME;
}

/* The held interrupts become pending again; the external one is a level,
 * which may have dropped meanwhile (vcpu_apply_pending() tracks it). A timer
 * the handler set meanwhile is the guest's new one. */
static inline __attribute__((always_inline)) void release_irqs(struct vcpu *v)
{
	unsigned long held = v->lp_window.held_hvip;

	if (held)	/* (a level that rose meanwhile was held too) */
		csr_set(CSR_HVIP, (held & ~MIP_VSEIP) | (v->ext_irq_live ? MIP_VSEIP : 0));
	if (v->lp_window.timer_parked && csr_read(CSR_VSTIMECMP) == TIMER_PARKED)
		csr_write(CSR_VSTIMECMP, v->lp_window.held_vstimecmp);
}

/* The fault was counted but the guest has not had it: it comes back to us
 * when the guest returns to the instruction (with ELP=1, as the interrupt
 * that came first found it), from the same address space. */
static void note_owed(struct vcpu *v)
{
	v->lp_window.owed = true;
	v->lp_window.owed_pc = v->lp_window.pc;
	v->lp_window.owed_vsatp = csr_read(CSR_VSATP);
}

/* Closing other than at the guest's sret: was the last trap into the guest
 * (@vscause) an interrupt at the faulting instruction, so before its fault? */
static void note_owed_if_irq_first(struct vcpu *v, unsigned long vscause)
{
	if ((vscause & CAUSE_IRQ_FLAG) && csr_read(CSR_VSEPC) == v->lp_window.pc)
		note_owed(v);
}

bool cfi_lp_fault_owed(struct vcpu *v)
{
	if (v->g.ctx.sepc != v->lp_window.owed_pc ||
	    csr_read(CSR_VSATP) != v->lp_window.owed_vsatp)
		return false;
	v->lp_window.owed = false;
	return true;
}

static inline __attribute__((always_inline)) void window_close(struct vcpu *v)
{
	v->lp_window.open = false;
	release_irqs(v);
	csr_write(CSR_HEDELEG, vcpu_hedeleg(v));
	csr_clear(CSR_HSTATUS, HSTATUS_VTSR);
	host_ipi_release();
	/* the slice ends when it would have: a guest that opens windows back
	 * to back cannot stretch it (if it has passed, the timer fires at once) */
	if (v->lp_window.timer_moved)
		csr_write(CSR_STIMECMP, v->lp_window.slice_end);
}

/* A shadow-stack violation the guest kernel's handler made while the window
 * was open (hedeleg[18] gave it to the guest): the last trap into VS
 * (@vscause). The re-delivered fault came first, so an older one cannot
 * still be there. */
static inline __attribute__((always_inline)) enum exit_action
count_delegated(struct vcpu *v, unsigned long vscause)
{
	if (vscause != EXC_SW_CHECK ||
	    csr_read(CSR_VSTVAL) != SWCHECK_TVAL_SHADOW_STACK)
		return EXIT_RESUME;
	return cfi_count_violation(v, SWCHECK_TVAL_SHADOW_STACK, csr_read(CSR_VSEPC), true) ==
			       EXIT_VM_STOP ? EXIT_VM_STOP : EXIT_RESUME;
}

/* The guest's own sret, done for it (VTSR trapped it): re-executed after our
 * sret it would find its SPELP cleared. Returns with the context set for
 * entering the mode and pc the guest's sret goes to, with its ELP. */
static void emulate_guest_sret(struct vcpu *v, bool force_elp)
{
	unsigned long vs = csr_read(CSR_VSSTATUS);
	bool banked = v->henvcfg & ENVCFG_LPE;
	unsigned long pelp = force_elp ? SR_SPELP : (banked ? vs : v->g.ctx.sstatus) & SR_SPELP;

	/* sret: SIE = SPIE, SPIE = 1, SPP = U, ELP = SPELP, SPELP = 0. Our own
	 * sret (this CPU's) sets ELP from the guest's SPELP, then clears it. */
	v->g.ctx.sstatus = (v->g.ctx.sstatus & ~(SR_SPP | SR_SPELP)) | (vs & SR_SPP) |
			   (banked ? 0 : pelp);
	vs = (vs & ~(SR_SIE | SR_SPP | SR_SPELP)) | ((vs & SR_SPIE) ? SR_SIE : 0) | SR_SPIE |
	     (banked ? pelp : 0);
	csr_write(CSR_VSSTATUS, vs);
	v->g.ctx.sepc = csr_read(CSR_VSEPC);
}

bool cfi_lp_window_exit(struct vcpu *v, unsigned long cause, unsigned long insn,
			enum exit_action *act)
{
	unsigned long vscause;

	if (v->g.ctx.sepc == v->lp_window.pc) {
		/* before the faulting instruction ran again (the host was slow to
		 * get there and the guard fired, say): ELP=1 survived this exit,
		 * keep the window, or the fault would come back to us a second time */
		if (cause != (CAUSE_IRQ_FLAG | IRQ_S_TIMER))
			return false;
		/* ... but a guest whose handler is that very instruction looks the
		 * same for ever (it jumps to itself): the window has a bound the
		 * guest cannot extend, and gives way to host work (a kick, a TLB
		 * shootdown) at once. Then the fault is owed and the timer exit
		 * goes on as usual: host services, slice end, scheduler. */
		if (v->lp_window.rearms >= LP_WINDOW_MAX_REARMS ||
		    host_ipi_pending()) {
			note_owed(v);
			window_close(v);
			v->cfi_stats.lp_windows_cut++;
			return false;
		}
		v->lp_window.rearms++;
		csr_write(CSR_STIMECMP, time_now() + guard_ticks());
		v->lp_window.timer_moved = true;
		*act = EXIT_RESUME;
		return true;
	}
	vscause = csr_read(CSR_VSCAUSE);
	if (cause == (CAUSE_IRQ_FLAG | IRQ_S_TIMER) && v->lp_window.timer_moved &&
	    v->lp_window.slice_end > time_now()) {
		note_owed_if_irq_first(v, vscause);
		window_close(v);	/* the guard fired, not the end of the slice */
		*act = count_delegated(v, vscause);
		return true;
	}
	if (cause == EXC_VIRTUAL_INST && insn == INSN_SRET && (v->g.ctx.sstatus & SR_SPP)) {
		/* after an interrupt that came first (its trap is the last one):
		 * back to the faulting instruction, with the ELP=1 this exit may
		 * have overwritten, keeps the window for the fault still to come;
		 * to user code elsewhere (another task), the fault is owed */
		bool back = false;

		if (vscause & CAUSE_IRQ_FLAG) {
			back = csr_read(CSR_VSEPC) == v->lp_window.pc;
			if (!back && !(csr_read(CSR_VSSTATUS) & SR_SPP))
				note_owed(v);
		}
		emulate_guest_sret(v, back);
		if (back) {
			*act = EXIT_RESUME;
			return true;
		}
		window_close(v);
		*act = count_delegated(v, vscause);
		return true;
	}
	note_owed_if_irq_first(v, vscause);
	window_close(v);
	*act = count_delegated(v, vscause);
	return *act == EXIT_VM_STOP;	/* otherwise the exit is handled as usual */
}

void cfi_lp_window_exit_seen(struct vcpu *v)
{
	/* this exit already cost the guest its SPELP if the handler had not read
	 * it yet (Q4/Q5): holding IPIs off longer protects nothing */
	if (v->g.ctx.sepc != v->lp_window.pc)
		host_ipi_release();
}

void cfi_lp_window_drop(struct vcpu *v)
{
	/* not yet at the instruction again: it faults to us when next run */
	if (v->g.ctx.sepc == v->lp_window.pc)
		note_owed(v);
	else
		note_owed_if_irq_first(v, csr_read(CSR_VSCAUSE));
	v->lp_window.open = false;
	release_irqs(v);
	host_ipi_release();
}
