/* SPDX-License-Identifier: MIT */
/* The hypervisor's own CFI (docs/security.md, "The hypervisor's own CFI"):
 * in the CFI build (CARAPACE_CFI_BUILD) it runs with landing pads and a
 * shadow stack per hart in HS-mode, asked of the firmware (SBI FWFT) and
 * locked. The shadow stack is turned on by head.S before any C code runs,
 * the landing pads by hyp_cfi_hart_init(). hyp/arch/hyp_cfi.c. */
#ifndef HYP_HYP_CFI_H
#define HYP_HYP_CFI_H
#include <types.h>

#ifdef CARAPACE_CFI_BUILD
#define HYP_CFI_BUILD	true
#else
#define HYP_CFI_BUILD	false
#endif
#ifdef CARAPACE_DEBUG_HOOKS
#define HYP_DEBUG_HOOKS	true
#else
#define HYP_DEBUG_HOOKS	false
#endif

/* What every hart that came up has (a feature is on only if it is on all). */
struct hyp_cfi {
	bool lp_on, lp_locked;		/* menvcfg.LPE for HS */
	bool ss_on, ss_locked;		/* menvcfg.SSE, ssp on the hart's shadow stack */
	long lp_error, ss_error;	/* a refusal's SBI error (0: none) */
};
extern struct hyp_cfi hyp_cfi;

/** hyp_cfi_hart_init() - on each hart, early: the CFI build asks the
 *  firmware for LANDING_PAD (locked) and records what head.S got for
 *  SHADOW_STACK. @first: the boot hart (starts the all-harts summary). */
void hyp_cfi_hart_init(bool first);
/** hyp_cfi_summary() - "landing pads on (locked), shadow stack on (locked)",
 *  or "plain build", into @buf. */
const char *hyp_cfi_summary(char *buf, size_t len);
/** hyp_cfi_fault() - a trap taken in HS-mode: a software-check exception
 *  (cause 18) is reported as a CFI violation and the host stopped; false
 *  (returns) for any other cause. */
bool hyp_cfi_fault(unsigned long scause, unsigned long sepc, unsigned long stval);
#endif
