/* SPDX-License-Identifier: MIT */
/* Physical harts: per-hart data (pointed to by tp) and boot-time capabilities. */
#ifndef HYP_HART_H
#define HYP_HART_H
#include <arch/riscv/encoding.h>
#include <types.h>
#include <tlb.h>
#include <mmio.h>

#define HART_MAX	8
#define HART_STACK_SIZE	(16 * 1024)
/* Each stack's slot: an unmapped guard page (hyp/mm/hyp_map.c), then the
 * stack, so an overflow faults instead of writing the next hart's stack. */
#define HART_STACK_GUARD	4096
#define HART_STACK_SLOT		(HART_STACK_GUARD + HART_STACK_SIZE)
#define HYP_FAULT_STACK_SIZE	4096	/* per hart, for the report of a fault in HS */

struct vcpu;

/* Exceptions the guest handles itself (hedeleg). Cause 18 is added per VM by
 * policy (vm->hedeleg). Access faults too: the firmware (which takes them in
 * M) then delivers them straight into VS with the trap's ELP in SPELP, as bare
 * hardware would; a detour through HS lost it (QEMU banks ELP into the wrong
 * sstatus, Q4). */
#define HEDELEG_GUEST (BIT(EXC_INST_MISALIGNED) | BIT(EXC_INST_ACCESS) | BIT(EXC_ILLEGAL_INST) | \
		       BIT(EXC_BREAKPOINT) | BIT(EXC_LOAD_MISALIGNED) | BIT(EXC_LOAD_ACCESS) | \
		       BIT(EXC_STORE_MISALIGNED) | BIT(EXC_STORE_ACCESS) | BIT(EXC_ECALL_U) | \
		       BIT(EXC_INST_PAGE_FAULT) | BIT(EXC_LOAD_PAGE_FAULT) | \
		       BIT(EXC_STORE_PAGE_FAULT))

/* What the CPU and firmware give us, probed once at boot (write, read back). */
struct hart_caps {
	bool sstc;		/* stimecmp / vstimecmp */
	bool zicfilp;		/* henvcfg.LPE writable */
	bool zicfiss;		/* menvcfg.SSE granted by firmware FWFT, henvcfg.SSE writable */
	bool smstateen;
	bool ssaia;		/* the AIA's S-level CSRs: from the host DT */
	unsigned int geilen;	/* guest interrupt files per hart (hgeie bits that stick) */
	bool zimop, zcmop;	/* may-be-operations: from the host DT (no CSR shows them) */
	unsigned long henvcfg_ok;	/* henvcfg bits that stick */
	bool fw_cfi;		/* firmware implements FWFT LANDING_PAD (OpenSBI >= 1.6),
				 * which also means it delegates cause 18 to HS */
	/* the guest's sstatus.SPELP across an exit and the sret back, measured
	 * (cfi/spelp_selftest.c; QEMU 10.0.2 loses it both ways: Q4, Q5) */
	bool spelp_lost_at_exit;	/* the exit writes its ELP over it */
	bool spelp_lost_at_sret;	/* sret takes ELP from it and clears it */
	bool spelp_probe_failed;	/* a probe did not complete: both assumed */
	unsigned int vmid_bits;
	unsigned int vs_sv;	/* widest vsatp mode: 39, 48 or 57 (Sv39 is required) */
};

struct hart {
	unsigned long hartid;	/* physical hart id */
	unsigned int index;	/* 0..nr_harts-1 */
	struct vcpu *current;	/* vCPU loaded on this hart */
	struct tlb_hart tlb;	/* translation-cache upkeep (hyp/mm/tlb.c) */
	/* its guest interrupt files (hyp/state/imsic_files.c): owner[f] holds
	 * file f (1..GEILEN); bit f of release_req: another hart asks this one
	 * to give file f back */
	struct {
		struct vcpu *owner[8];
		volatile unsigned long release_req;
	} imsic;
	uint64_t idle_wakeups;	/* idle passes (wfi or due at once): a spinning hart shows here */
	bool left_idle;		/* its next pick passes a wake-up on (hyp/state/sched.c) */
	unsigned long dbtr_hw;	/* firmware debug triggers installed here for the
				 * loaded vCPU (bit: firmware index; hyp/state/dbtr.c) */
	bool native_wfi;	/* its vCPU runs with hstatus.VTW=0 (sched_wfi_mode()) */
	/* a device access the fast exit of the vCPU loaded here decoded and
	 * checked but left to the full path (it names a register not saved
	 * yet): region set until vcpu_handle_exit() performs it, right after.
	 * The hart's, not the vCPU's: nothing runs on the hart in between */
	struct {
		struct mmio_access access;
		struct mmio_region *region;
		unsigned long cause;
	} deferred;
	/* a device load into gp or s0-s11 the fast exit performed: C code
	 * cannot write those registers, so the trap vector puts the value there
	 * (vcpu_switch.S) and then vcpu_exit_fast_loaded() finishes the exit.
	 * reg 0: none. */
	struct {
		unsigned long value;
		unsigned long len;	/* of the trapping instruction */
		uint32_t reg;
	} fast_load;
	/* the hypervisor's own shadow stack on this hart: the top of its page
	 * (hyp/mm/hyp_map.c sets it). ss_on: head.S's FWFT SET SHADOW_STACK
	 * succeeded and ssp runs on it (CFI build only; the trap vector then
	 * swaps ssp); ss_locked: with the LOCK flag */
	unsigned long ss_top;
	long ss_fwft_error;	/* that SBI call's error (0: granted) */
	uint8_t ss_on, ss_locked;
};

extern struct hart harts[HART_MAX];
extern char hart_stacks[HART_MAX][HART_STACK_SLOT];
extern unsigned int nr_harts;
extern struct hart_caps hart_caps;
extern uint64_t timebase_hz;

#ifndef HOST_TEST
static inline struct hart *this_hart(void)
{
	struct hart *h;

	asm volatile("mv %0, tp" : "=r"(h));
	return h;
}
#else
extern struct hart *test_this_hart;	/* host unit tests choose the hart */
static inline struct hart *this_hart(void)
{
	return test_this_hart;
}
#endif

/** hart_init_csrs() - per-hart hypervisor CSR setup (hedeleg, hideleg, hcounteren...);
 *  @trap_vector goes to stvec. */
void hart_init_csrs(unsigned long trap_vector);
/** hart_probe_caps() - fill hart_caps on the boot hart. */
void hart_probe_caps(void);
/** hart_stack_top() - initial sp of @h's hypervisor stack. */
unsigned long hart_stack_top(const struct hart *h);

#ifndef HOST_TEST
static inline uint64_t time_now(void)
{
	uint64_t t;

	asm volatile("rdtime %0" : "=r"(t));
	return t;
}
#else
uint64_t time_now(void);	/* host unit tests provide it */
#endif
#endif
