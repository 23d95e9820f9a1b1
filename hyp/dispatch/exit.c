/* SPDX-License-Identifier: MIT */
/* VM exit dispatch: the one route from an exit's cause to its handler, for the
 * fast and the full path alike (exit_route()); handlers return verdicts and
 * never move the guest pc themselves (the run loop does, exit_action.h). */
#include <arch/riscv/csr.h>
#include <cfi.h>
#include <dirty_limit.h>
#include <errno.h>
#include <exit.h>
#include <guest_mem.h>
#include <hart.h>
#include <hart_service.h>
#include <host_ipi.h>
#include <imsic_files.h>
#include <misaligned.h>
#include <host_irq.h>
#include <mmio.h>
#include <pmu.h>
#include <sched.h>
#include <tlb.h>
#include <trap_inject.h>
#include <vdev.h>
#include <vm.h>
#include <vsbi.h>

#define INSN_WFI	0x10500073UL

static const char *const cause_names[VCPU_EXIT_CAUSES] = {
	[EXC_INST_MISALIGNED] = "instruction misaligned",
	[EXC_INST_ACCESS] = "instruction access fault",
	[EXC_ILLEGAL_INST] = "illegal instruction",
	[EXC_LOAD_ACCESS] = "load access fault",
	[EXC_STORE_ACCESS] = "store access fault",
	[EXC_SW_CHECK] = "software check",
	[EXC_INST_GUEST_PAGE_FAULT] = "instruction guest-page fault",
	[EXC_LOAD_GUEST_PAGE_FAULT] = "load guest-page fault",
	[EXC_VIRTUAL_INST] = "virtual instruction",
	[EXC_STORE_GUEST_PAGE_FAULT] = "store/AMO guest-page fault",
};

static const char *cause_name(unsigned long cause)
{
	const char *n = cause < VCPU_EXIT_CAUSES ? cause_names[cause] : NULL;

	return n ? n : "unexpected exception";
}

static struct exit_verdict stop_vm(struct vcpu *v, unsigned long cause, const char *what,
				   unsigned long addr)
{
	vm_stop(v->vm, "vcpu %u: %s (cause %lu: %s) at pc 0x%lx, address 0x%lx", v->id, what,
		cause, cause_name(cause), v->g.ctx.sepc, addr);
	return exit_stay(EXIT_VM_STOP);
}

static struct exit_verdict exit_wfi(struct vcpu *v)
{
	v->stats.wfi++;
	v->g.hsm.waiting = true;	/* run loop re-enters at once if an interrupt is pending */
	return exit_next(4);
}

/* Virtual-instruction exits: WFI from the guest kernel is ours; everything else
 * (hypervisor CSRs, ssp or ssamoswap with SSE=0, ...) is an illegal instruction
 * for the guest. So is WFI from guest user mode: on hardware a U-mode WFI
 * raises an illegal-instruction exception to S-mode (Priv spec, mstatus.TW
 * "WFI in U-mode"), it never sleeps on the user's behalf. */
static unsigned long trapped_insn(struct vcpu *v)
{
	unsigned long insn = csr_read(CSR_STVAL);

	return insn ? insn : vcpu_fetch_insn(v->g.ctx.sepc);
}

static struct exit_verdict exit_illegal(struct vcpu *v, unsigned long insn)
{
	pmu_count_fw(v, SBI_PMU_FW_ILLEGAL_INSN, 1);
	vcpu_redirect_trap(v, EXC_ILLEGAL_INST, insn);
	return exit_stay(EXIT_INJECTED);
}

/* Out of line: inlined, the CSR emulation made exit_other() save four more
 * registers on every exit it handles (a landing-pad violation among them). */
static __attribute__((noinline)) struct exit_verdict exit_aia_csr(struct vcpu *v,
								   unsigned long insn)
{
	int rc = vimsic_csr_exit(v, insn);

	if (rc > 0)
		return exit_next(4);
	if (!rc && pmu_csr_exit(v, insn) > 0)
		return exit_next(4);
	return exit_illegal(v, insn);
}

/* (the instructions trapped here, WFI and CSR accesses, are 4 bytes long) */
static struct exit_verdict exit_virtual_insn(struct vcpu *v)
{
	unsigned long insn = trapped_insn(v);

	if (insn == INSN_WFI && (v->g.ctx.sstatus & SR_SPP))
		return exit_wfi(v);
	if ((v->g.ctx.sstatus & SR_SPP) && cfi_senvcfg_insn(v, insn))
		return exit_next(4);
	/* an AIA VM's IMSIC CSRs while its file is in software (vimsic_csr.c) */
	if (vm_is_aia(v->vm))
		return exit_aia_csr(v, insn);
	/* cycle/instret while the guest's PMU has them configured (pmu.c) */
	if (pmu_csr_exit(v, insn) > 0)
		return exit_next(4);
	return exit_illegal(v, insn);
}

/* The access fault a real bus error would give for this kind of access. */
static struct exit_verdict inject_access_fault(struct vcpu *v, unsigned long cause)
{
	unsigned long fault = cause == EXC_INST_GUEST_PAGE_FAULT ? EXC_INST_ACCESS :
			      cause == EXC_LOAD_GUEST_PAGE_FAULT ? EXC_LOAD_ACCESS :
								   EXC_STORE_ACCESS;

	if (fault != EXC_INST_ACCESS)
		pmu_count_fw(v, fault == EXC_LOAD_ACCESS ? SBI_PMU_FW_ACCESS_LOAD :
							   SBI_PMU_FW_ACCESS_STORE, 1);
	vcpu_redirect_trap(v, fault, csr_read(CSR_STVAL));
	return exit_stay(EXIT_INJECTED);
}

/* Decode the trapped access: htinst when it is a real transformed load/store,
 * else the instruction itself, fetched with HLVX. A pseudoinstruction in
 * htinst (non-zero, bit 0 clear: 0x2000, 0x2020, 0x3000, 0x3020) says the
 * fault came from an implicit access of the guest's VS-stage table walk, not
 * from the instruction at sepc: never emulated, the guest gets an access fault
 * (tests/guests/attack.c pt_walk_through_device). */
static enum insn_kind decode_access(struct vcpu *v, struct mmio_access *a)
{
	unsigned long htinst = csr_read(CSR_HTINST);
	uint32_t insn;
	unsigned int len;
	enum insn_kind kind;

	if (htinst && !(htinst & 1))
		return INSN_KIND_OTHER;
	if (insn_from_htinst(htinst, &insn, &len)) {
		kind = insn_decode_mmio(insn, a);
		a->insn_len = len;
		return kind;
	}
	insn = (uint32_t)vcpu_fetch_insn(v->g.ctx.sepc);
	return insn ? insn_decode_mmio(insn, a) : INSN_KIND_OTHER;
}

/* Carry out a decoded, validated access; 0 or the device's error. */
static inline __attribute__((always_inline)) int mmio_perform(struct vcpu *v,
								struct mmio_region *r,
								struct mmio_access *a)
{
	if (a->is_write) {
		a->value = a->reg ? v->g.ctx.gpr[a->reg] : 0;
		if (a->width < 8)
			a->value &= (1UL << (8 * a->width)) - 1;
	}
	if (r->handle(v->vm, r->priv, a))
		return -HYP_EFAULT;
	if (!a->is_write && a->reg) {
		uint64_t val = a->value;

		if (a->sign_extend && a->width < 8) {
			unsigned int sh = 64 - 8 * a->width;

			val = (uint64_t)((int64_t)(val << sh) >> sh);
		}
		v->g.ctx.gpr[a->reg] = val;
	}
	v->vm->stats.mmio++;
	return 0;
}

/* Decode and check an access to device window @r; false if it must fault. */
static inline __attribute__((always_inline)) bool
mmio_decode(struct vcpu *v, unsigned long cause, gpa_t gpa, struct mmio_region *r,
	    struct mmio_access *a, enum insn_kind *kind)
{
	*kind = decode_access(v, a);
	a->gpa = gpa;
	/* FP/AMO/LR/SC to a device, a mismatched kind, misaligned or straddling */
	return (*kind == INSN_KIND_LOAD || *kind == INSN_KIND_STORE) &&
	       (*kind == INSN_KIND_STORE) == (cause == EXC_STORE_GUEST_PAGE_FAULT) &&
	       !(gpa & (a->width - 1)) && range_within(gpa, a->width, r->base, r->size);
}

/* gp and s0-s11 are not in the context on the fast path (they are still in the
 * CPU). Linux keeps a value it reads from or writes to a device in one of
 * them when it lives across a call (virtio-mmio's InterruptStatus and
 * InterruptACK, the PLIC's claim and complete). A load into one is performed
 * on the fast path, its value put into the register by the trap vector
 * (fast_load_callee_saved()); a store from one is left for the full path,
 * decoded and checked (defer_access()): performed there without decoding
 * again. */
static bool reg_saved_on_fast_path(unsigned int r)
{
	return !(r == 3 || r == 8 || r == 9 || (r >= 18 && r <= 27));
}

/* A checked load into gp or s0-s11, performed: the trap vector writes the
 * register from this hart's record and vcpu_exit_fast_loaded() finishes the
 * exit (EXIT_FULL tells vcpu_exit_fast() to leave it to them). A device
 * error: nothing was done, the full path starts over. Out of line: the fast
 * path's frame stays as it was. */
static struct exit_verdict
fast_load_callee_saved(struct vcpu *v, struct mmio_region *r, struct mmio_access *a)
{
	struct hart *h = this_hart();

	if (mmio_perform(v, r, a))
		return exit_stay(EXIT_FULL);
	h->fast_load.value = v->g.ctx.gpr[a->reg];	/* sign-extended there */
	h->fast_load.len = a->insn_len;
	h->fast_load.reg = a->reg;
	return exit_stay(EXIT_FULL);
}

/* Decoded and checked as the full path does, nothing done: the full path
 * (EXIT_FULL: the rest of the context saved) performs it from this hart's
 * record (vcpu_exit_deferred()). Out of line: the fast path's frame stays as
 * it was. */
static struct exit_verdict
defer_access(const struct mmio_access *a, struct mmio_region *r, unsigned long cause)
{
	struct hart *h = this_hart();

	h->deferred.access = *a;
	h->deferred.region = r;
	h->deferred.cause = cause;
	return exit_stay(EXIT_FULL);
}

/* An access naming gp or s0-s11 on the fast path: a load is done there, a
 * store left for the full path. One call site, out of line: the fast path's
 * frame and layout stay as they were. */
static __attribute__((noinline)) struct exit_verdict
callee_saved_access(struct vcpu *v, struct mmio_access *a, struct mmio_region *r,
		    unsigned long cause)
{
	if (a->is_write)
		return defer_access(a, r, cause);
	return fast_load_callee_saved(v, r, a);
}

/* An access to device window @r. On the fast path (@fast) anything unusual
 * (a fault to inject, a register not saved) goes the full way: nothing has
 * changed yet, so the exit starts over there. */
static inline __attribute__((always_inline)) struct exit_verdict
exit_mmio(struct vcpu *v, unsigned long cause, gpa_t gpa, struct mmio_region *r, bool fast)
{
	struct mmio_access a = { 0 };
	enum insn_kind kind;

	if (fast) {
		if (!mmio_decode(v, cause, gpa, r, &a, &kind))
			return exit_stay(EXIT_FULL);
		if (a.reg && !reg_saved_on_fast_path(a.reg))
			return callee_saved_access(v, &a, r, cause);
		if (mmio_perform(v, r, &a))
			return exit_stay(EXIT_FULL);
		return exit_next(a.insn_len);
	}
	if (cause == EXC_INST_GUEST_PAGE_FAULT)
		return inject_access_fault(v, cause);	/* no executing from devices */
	if (!mmio_decode(v, cause, gpa, r, &a, &kind)) {
		if (kind == INSN_KIND_SHADOW_STACK)	/* never emulated: docs/cfi.md §9.10 */
			return inject_access_fault(v, EXC_STORE_GUEST_PAGE_FAULT);
		return inject_access_fault(v, cause);
	}
	if (mmio_perform(v, r, &a))
		return inject_access_fault(v, cause);
	return exit_next(a.insn_len);	/* the decoded length: 2 when compressed */
}

/* A page the guest dirtied while its writes are paced (a migration that
 * must converge): the VM's vCPUs leave their harts if it has written ahead
 * of its budget (the scheduler holds them, dirty_limit_holds()). The write
 * is retried when it is back; its page is writable by then. */
static __attribute__((noinline)) struct exit_verdict exit_dirty_paced(struct vcpu *v)
{
	(void)v;
	if (!dirty_limit_charge(&dirty_limit, time_now()))
		return exit_stay(EXIT_RESUME);
	return exit_stay(EXIT_YIELD);
}

/* A guest-page fault in RAM: write-protected RAM (dirty tracking): a
 * store/AMO fault, and every shadow-stack access faults as one, sspopchk
 * included (docs/cfi.md §9.10), is resolved as a write and retried; else the
 * first touch of a chunk: zeroed and mapped, then the access retried.
 * Out of line: the full path and emulated accesses share it. */
static __attribute__((noinline)) struct exit_verdict
gstage_fault_ram(struct vcpu *v, unsigned long cause, gpa_t gpa)
{
	if (cause == EXC_STORE_GUEST_PAGE_FAULT && vm_ram_resolve_write(v->vm, gpa)) {
		if (v->lp_window.open)
			cfi_lp_window_exit_seen(v);
		if (__builtin_expect(dirty_limit.vm == v->vm, 0))
			return exit_dirty_paced(v);
		return exit_stay(EXIT_RESUME);
	}
	if (vm_ram_populate(v->vm, gpa, 1, cause == EXC_STORE_GUEST_PAGE_FAULT))
		return stop_vm(v, cause, "cannot map guest RAM", gpa);
	tlb_local_gstage(v->vm);	/* drop any cached invalid entry */
	return exit_stay(EXIT_RESUME);
}

/* An access outside guest RAM that no device emulates: the VM stops, with
 * the guest's view as well (the virtual address it used and how the
 * hardware described the access). */
static __attribute__((noinline)) struct exit_verdict
stop_unbacked(struct vcpu *v, unsigned long cause, gpa_t gpa, unsigned long gva, bool gva_given,
	      unsigned long htinst)
{
	vm_stop(v->vm, "vcpu %u: access outside guest RAM that no device emulates (cause %lu: %s) "
		"at pc 0x%lx, address 0x%lx (guest virtual 0x%lx%s, htinst 0x%lx)", v->id, cause,
		cause_name(cause), v->g.ctx.sepc, gpa, gva, gva_given ? "" : ", not given", htinst);
	return exit_stay(EXIT_VM_STOP);
}

/* Guest-page faults: RAM to map or give W back to, a device to emulate, or
 * an access nothing backs. The fast path (@fast) serves device accesses only. */
static inline __attribute__((always_inline)) struct exit_verdict
exit_guest_page_fault(struct vcpu *v, unsigned long cause, bool fast)
{
	gpa_t gpa = (csr_read(CSR_HTVAL) << 2) | (csr_read(CSR_STVAL) & 3);
	struct mmio_region *r;

	if (vm_gpa_range_is_ram(v->vm, gpa, 1)) {
		if (fast)
			return exit_stay(EXIT_FULL);
		return gstage_fault_ram(v, cause, gpa);
	}
	r = vm_mmio_find(v->vm, gpa);
	if (r)
		return exit_mmio(v, cause, gpa, r, fast);
	if (fast)
		return exit_stay(EXIT_FULL);
	return stop_unbacked(v, cause, gpa, csr_read(CSR_STVAL),
			     csr_read(CSR_HSTATUS) & HSTATUS_GVA, csr_read(CSR_HTINST));
}

/* A G-stage fault of a byte of an emulated misaligned access
 * (dispatch/misaligned.c): the trap CSRs are the misaligned exit's, the
 * fault's own are in @f. Served as the hardware's own (RAM mapped or given
 * W back, then the instruction runs again), an access fault at the byte for
 * a device (never accessed misaligned), the VM stopped where nothing backs
 * it. Never a guest-page fault for the guest. */
static __attribute__((noinline)) struct exit_verdict gstage_part(struct vcpu *v,
								  const struct guest_fault *f)
{
	gpa_t gpa = (f->htval << 2) | (f->stval & 3);
	unsigned long fault = f->scause == EXC_LOAD_GUEST_PAGE_FAULT ? EXC_LOAD_ACCESS :
								       EXC_STORE_ACCESS;

	if (vm_gpa_range_is_ram(v->vm, gpa, 1))
		return gstage_fault_ram(v, f->scause, gpa);
	if (vm_mmio_find(v->vm, gpa)) {
		pmu_count_fw(v, fault == EXC_LOAD_ACCESS ? SBI_PMU_FW_ACCESS_LOAD :
							   SBI_PMU_FW_ACCESS_STORE, 1);
		vcpu_redirect_trap(v, fault, f->stval);
		return exit_stay(EXIT_INJECTED);
	}
	return stop_unbacked(v, f->scause, gpa, f->stval, true, 0);
}

/* Misaligned load/store exits reach here only while the guest asked for
 * emulation (FWFT MISALIGNED_EXC_DELEG 0). */
static __attribute__((noinline)) struct exit_verdict exit_misaligned(struct vcpu *v,
								      unsigned long cause)
{
	struct guest_fault gstage = { 0 };
	struct exit_verdict r = misaligned_exit(v, cause, &gstage);

	return gstage.scause ? gstage_part(v, &gstage) : r;
}

/* The two instances of the guest-page-fault route. The fast one is one
 * function with decode and lookup inlined (flatten): the device read of
 * `make bench` costs 273 instructions that way, 302 with calls. */
static __attribute__((noinline)) struct exit_verdict gpf_full(struct vcpu *v, unsigned long cause)
{
	return exit_guest_page_fault(v, cause, false);
}

static __attribute__((noinline, flatten)) struct exit_verdict gpf_fast(struct vcpu *v,
									unsigned long cause)
{
	return exit_guest_page_fault(v, cause, true);
}

struct exit_verdict vcpu_exit_deferred(struct vcpu *v)
{
	struct hart *h = this_hart();
	struct mmio_access a = h->deferred.access;
	struct mmio_region *r = h->deferred.region;

	h->deferred.region = NULL;	/* taken: the next full exit is a new one */
	if (mmio_perform(v, r, &a))
		return inject_access_fault(v, h->deferred.cause);
	return exit_next(a.insn_len);	/* the decoded length: 2 when compressed */
}

/* A host IPI (a kick), whichever way it came: posted work is applied
 * before re-entry. */
static enum exit_action exit_host_ipi(struct hart *h)
{
	hart_service();
	if (__builtin_expect(sched_host_turn_wanted, 0) && h->index == 0) {
		sched_host_turn_wanted = false;
		sched_host_poll();	/* sched_want_host_turn() */
	}
	if (h->native_wfi)	/* maybe kicked because the vCPUs no longer fit */
		sched_wfi_mode(h, h->current);
	return EXIT_RESUME;
}

/* Out of line: a case more in exit_irq()'s switch made every exit of
 * exit_other() save more (`make bench` cfi_violation: +8). */
static __attribute__((noinline)) enum exit_action exit_irq_rare(struct vcpu *v, unsigned long irq)
{
	if (irq == IRQ_SGEI) {
		/* a parked guest file of a waiting vCPU signalled: it is runnable */
		if (imsic_files_sgei())
			sched_kick_idle();
		return EXIT_RESUME;
	}
	return stop_vm(v, irq, "unexpected host interrupt", 0).action;
}

static enum exit_action exit_irq(struct vcpu *v, unsigned long irq)
{
	struct hart *h = this_hart();
	bool ipi;

	switch (irq) {
	case IRQ_S_TIMER:
		csr_write(CSR_STIMECMP, -1UL);
		if (h->index == 0 && sched_host_poll)
			sched_host_poll();
		if (sched_other_runnable(v))
			return EXIT_YIELD;
		sched_arm_slice();
		sched_wfi_mode(h, v);	/* the slice's look at the others */
		return EXIT_RESUME;
	case IRQ_S_SOFT:
		csr_clear(CSR_SIP, MIP_SSIP);
		return exit_host_ipi(h);
	case IRQ_S_EXT:
		/* a host IPI through the IMSIC (any hart: identity HOST_IPI_EIID,
		 * the top one) and a host device (hart 0 only: the other harts'
		 * S files enable the IPI's identity alone) */
		ipi = host_ipi_claim_ext();
		if (h->index == 0) {
			host_irq_handle();
			/* its guest sleeps in its own wfi: the host services
			 * look now, as after an in-place wait (sched_host_poll) */
			if (h->native_wfi && !ipi)
				sched_wfi_mode(h, v);
		}
		return ipi ? exit_host_ipi(h) : EXIT_RESUME;
	default:
		return exit_irq_rare(v, irq);
	}
}

/* Every exit but SBI calls and device accesses. These close a CFI re-delivery
 * window first (cfi/lp_redeliver.c), which may handle the exit itself. */
static __attribute__((noinline)) struct exit_verdict exit_other(struct vcpu *v,
								 unsigned long cause)
{
	enum exit_action act;

	if (__builtin_expect(v->lp_window.open, 0) &&
	    cfi_lp_window_exit(v, cause, cause == EXC_VIRTUAL_INST ? trapped_insn(v) : 0, &act))
		return exit_stay(act);	/* a sret it emulated has set the pc */
	if (cause & CAUSE_IRQ_FLAG)
		return exit_stay(exit_irq(v, cause & ~CAUSE_IRQ_FLAG));

	switch (cause) {
	case EXC_VIRTUAL_INST:
		return exit_virtual_insn(v);
	case EXC_INST_GUEST_PAGE_FAULT:
		return gpf_full(v, cause);
	case EXC_SW_CHECK:
		return exit_stay(cfi_swcheck_exit(v));
	case EXC_LOAD_MISALIGNED:
	case EXC_STORE_MISALIGNED:
		return exit_misaligned(v, cause);
	case EXC_INST_MISALIGNED:
	case EXC_INST_ACCESS:
	case EXC_ILLEGAL_INST:
	case EXC_BREAKPOINT:
	case EXC_LOAD_ACCESS:
	case EXC_STORE_ACCESS:
	case EXC_ECALL_U:
	case EXC_INST_PAGE_FAULT:
	case EXC_LOAD_PAGE_FAULT:
	case EXC_STORE_PAGE_FAULT:
		/* the guest's own business (not delegated on this hart): hand it over */
		vcpu_redirect_trap(v, cause, csr_read(CSR_STVAL));
		return exit_stay(EXIT_INJECTED);
	default:
		return stop_vm(v, cause, "exit the hypervisor cannot handle", csr_read(CSR_STVAL));
	}
}

/* SBI calls that reach the full path (the fast one serves most of them): a
 * call, so the SBI dispatcher, inlined in the fast path, does not also widen
 * the full path's frame, which every other exit pays (a landing-pad
 * violation, two full exits, cost 4 instructions more that way). */
static __attribute__((noinline)) struct exit_verdict sbi_full(struct vcpu *v)
{
	return vsbi_dispatch(v);
}

/* The one route from cause to handler. The hot exits come first: SBI calls
 * and device accesses, the only ones the fast path serves (@fast: only the
 * caller-saved guest registers are in the context) and the only ones a CFI
 * re-delivery window stays open through. */
static inline __attribute__((always_inline)) struct exit_verdict
exit_route(struct vcpu *v, unsigned long cause, bool fast)
{
	if (__builtin_expect(cause == EXC_ECALL_VS, 1))
		return fast ? vsbi_dispatch(v) : sbi_full(v);
	if (cause == EXC_LOAD_GUEST_PAGE_FAULT || cause == EXC_STORE_GUEST_PAGE_FAULT)
		return fast ? gpf_fast(v, cause) : gpf_full(v, cause);
	if (fast)
		return exit_stay(EXIT_FULL);
	return exit_other(v, cause);
}

struct exit_verdict vcpu_exit(struct vcpu *v, unsigned long cause)
{
	return exit_route(v, cause, false);
}

struct exit_verdict vcpu_exit_hot(struct vcpu *v, unsigned long cause)
{
	return exit_route(v, cause, true);
}
