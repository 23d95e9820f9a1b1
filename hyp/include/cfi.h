/* SPDX-License-Identifier: MIT */
/* Per-vCPU CFI state (Zicfilp/Zicfiss) and the FWFT features that drive it. */
#ifndef HYP_CFI_H
#define HYP_CFI_H
#include <types.h>
#include <exit.h>

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

struct cfi_stats {
	uint64_t swcheck_lp, swcheck_ss;	/* cause 18 by tval */
	uint64_t last_pc, last_tval, last_from_vs;
};

/** vm_features() - the VM_FEAT_* (vm.h) a VM with @policy gets on this host. */
uint32_t vm_features(enum cfi_policy policy);
/** cfi_vm_has_lp()/cfi_vm_has_ss() - what this VM may use (host caps and policy). */
bool cfi_vm_has_lp(const struct vm *vm);
bool cfi_vm_has_ss(const struct vm *vm);
/** cfi_vcpu_reset() - FWFT values and locks to 0; henvcfg LPE/SSE, senvcfg, ssp, SPELP cleared. */
void cfi_vcpu_reset(struct vcpu *v);
/** cfi_henvcfg() - henvcfg CFI bits derived from the vCPU's FWFT state (never raw). */
unsigned long cfi_henvcfg(const struct vcpu *v);
/** cfi_fwft_set()/cfi_fwft_get() - FWFT backends; return SBI_ERR_* codes. */
long cfi_fwft_set(struct vcpu *v, unsigned long feature, unsigned long value, unsigned long flags);
long cfi_fwft_get(struct vcpu *v, unsigned long feature, unsigned long *value);
/** cfi_hedeleg() - hedeleg bit for cause 18 under the VM's policy. */
unsigned long cfi_hedeleg(const struct vm *vm);
/** cfi_swcheck_exit() - a software-check exception (cause 18) reached HS: count it,
 *  then inject it (trap, strict) or stop the VM (strict, from VS-mode). */
enum exit_action cfi_swcheck_exit(struct vcpu *v);
#endif
