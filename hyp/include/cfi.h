/* SPDX-License-Identifier: MIT */
/* Per-vCPU CFI state (Zicfilp/Zicfiss) and the FWFT features that drive it. */
#ifndef HYP_CFI_H
#define HYP_CFI_H
#include <types.h>
#include <exit_action.h>

struct vcpu;
struct vm;

/* Per-VM policy for software-check exceptions (cause 18). */
enum cfi_policy {
	CFI_POLICY_TRAP,	/* count, then inject into the guest (default) */
	CFI_POLICY_DELEGATE,	/* hedeleg[18]: hardware delivers it to the guest */
	CFI_POLICY_STRICT,	/* like trap; a VS-mode violation stops the VM */
	CFI_POLICY_OFF,		/* VM gets neither Zicfilp nor Zicfiss */
};

/* FWFT feature state a guest sets per vCPU; reset on vCPU reset and HSM start. */
struct cfi_fwft {
	uint8_t lp_value, lp_locked;
	uint8_t ss_value, ss_locked;
};

/* A landing-pad fault being re-delivered by the hardware (cfi/lp_redeliver.c). */
struct cfi_lp_window {
	bool open;		/* hedeleg[18], hstatus.VTSR and the guard are set */
	unsigned long pc;	/* the faulting instruction */
	bool timer_moved;	/* the guard moved the slice's end */
	uint64_t slice_end;	/* of the vCPU's time slice when it opened */
	unsigned int rearms;	/* guard periods added at the faulting pc */
	unsigned long held_hvip;	/* VS interrupts held back until it closes */
	bool timer_parked;		/* the guest's timer is held too: */
	uint64_t held_vstimecmp;	/* its deadline */
	/* a fault counted, not yet delivered when its window closed */
	bool owed;
	unsigned long owed_pc, owed_vsatp;
};

struct cfi_stats {
	uint64_t swcheck_lp, swcheck_ss;	/* cause 18 by tval */
	uint64_t last_pc, last_tval, last_from_vs;
	uint64_t lp_windows_cut;	/* re-delivery windows ended by their bound */
};

/** vm_features() - the VM_FEAT_* (vm.h) a VM with @policy gets on this host. */
uint32_t vm_features(enum cfi_policy policy);
/** cfi_vm_has_lp()/cfi_vm_has_ss() - what this VM may use (host caps and policy). */
bool cfi_vm_has_lp(const struct vm *vm);
bool cfi_vm_has_ss(const struct vm *vm);
/** cfi_vcpu_reset() - FWFT values and locks to 0; henvcfg LPE/SSE, senvcfg, ssp, SPELP cleared. */
void cfi_vcpu_reset(struct vcpu *v);
/** cfi_spelp_to_spec() - a stopped vCPU's sstatus/vsstatus as the spec places
 *  SPELP: ELP in @sstatus (the trapped context), the guest's own in @vsstatus. */
void cfi_spelp_to_spec(const struct vcpu *v, uint64_t *sstatus, uint64_t *vsstatus);
/** cfi_spelp_from_spec() - the reverse, in place, for a vCPU loaded from a file
 *  or a stream (its FWFT state and senvcfg already set). */
void cfi_spelp_from_spec(struct vcpu *v);
/** cfi_vcpu_elp() - is a landing pad expected at the stopped vCPU's next instruction? */
bool cfi_vcpu_elp(const struct vcpu *v);
/** cfi_hstateen0() - the VM's hstateen0 (with Smstateen): ENVCFG clear, so that
 *  senvcfg accesses trap, where the host has CFI the VM was not given. */
unsigned long cfi_hstateen0(const struct vm *vm);
/** cfi_senvcfg_insn() - a trapped senvcfg access from VS (@insn): done with the
 *  CFI bits the VM lacks held at 0; false if @insn is not one. */
bool cfi_senvcfg_insn(struct vcpu *v, unsigned long insn);
/** cfi_henvcfg() - henvcfg CFI bits derived from the vCPU's FWFT state (never raw). */
unsigned long cfi_henvcfg(const struct vcpu *v);
/** cfi_fwft_set()/cfi_fwft_get() - FWFT backends; return SBI_ERR_* codes. */
long cfi_fwft_set(struct vcpu *v, unsigned long feature, unsigned long value, unsigned long flags);
long cfi_fwft_get(struct vcpu *v, unsigned long feature, unsigned long *value);
/** cfi_hedeleg() - hedeleg bit for cause 18 under the VM's policy. */
unsigned long cfi_hedeleg(const struct vm *vm);
/** cfi_count_violation() - count a software check at @pc (tval 2: landing pad, 3:
 *  shadow stack); EXIT_VM_STOP if it stopped the VM (strict, @from_vs). */
enum exit_action cfi_count_violation(struct vcpu *v, unsigned long tval, unsigned long pc,
				     bool from_vs);
/** cfi_lp_redeliver_ok() - may @v's landing-pad fault be re-delivered (strict:
 *  only while the guest kernel has no landing pads, see lp_redeliver.c)? */
bool cfi_lp_redeliver_ok(const struct vcpu *v);
/** cfi_lp_redeliver() - re-run the faulting instruction with ELP=1 and cause 18
 *  delegated, so the hardware hands the guest its landing-pad fault (SPELP=1). */
enum exit_action cfi_lp_redeliver(struct vcpu *v);
/** cfi_lp_window_exit() - an exit (not an SBI call or a device access) while a
 *  re-delivery window is open: closes it; true when it handled the exit itself
 *  (the guest's trapped sret, the guard timer, a strict stop), *act says what next.
 *  @insn: the instruction of a virtual-instruction exit. */
bool cfi_lp_window_exit(struct vcpu *v, unsigned long cause, unsigned long insn,
			enum exit_action *act);
/** cfi_lp_window_exit_seen() - an exit the window stays open through (a dirty-
 *  logged page written, say): host IPIs may come again. */
void cfi_lp_window_exit_seen(struct vcpu *v);
/** cfi_lp_window_drop() - the vCPU leaves the hart with a window open. */
void cfi_lp_window_drop(struct vcpu *v);
/** cfi_lp_fault_owed() - is the landing-pad fault at @v's sepc one already
 *  counted, whose window closed before the guest had it? (Then not again.)
 *  Only while v->lp_window.owed. */
bool cfi_lp_fault_owed(struct vcpu *v);
/** cfi_spelp_selftest() - boot, hart 0: measure what the CPU does with a guest's
 *  SPELP across an exit and an sret (hart_caps.spelp_lost_at_*). */
void cfi_spelp_selftest(void);
/** cfi_spelp_report() - print the self-test's findings. */
void cfi_spelp_report(void);
/** cfi_delegate_exact() - can policy delegate keep every landing-pad check here? */
bool cfi_delegate_exact(void);
/** cfi_swcheck_exit() - a software-check exception (cause 18) reached HS: count it,
 *  then inject it (trap, strict) or stop the VM (strict, from VS-mode). */
enum exit_action cfi_swcheck_exit(struct vcpu *v);
#endif
