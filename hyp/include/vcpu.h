/* SPDX-License-Identifier: MIT */
/* Virtual CPU. Its guest-architectural state (struct vcpu_guest: what the guest
 * can observe, and what a snapshot saves) is kept apart from the hypervisor's
 * bookkeeping about it (where it runs, counters, derived CSR values). */
#ifndef HYP_VCPU_H
#define HYP_VCPU_H
#include <arch/riscv/csr.h>
#include <arch/riscv/encoding.h>
#include <types.h>
#include <atomic.h>
#include <cfi.h>
#include <dbtr.h>
#include <imsic_file.h>
#include <pmu.h>

struct vm;

/* The HS sstatus bits of a vCPU's trapped context that are the hypervisor's,
 * never the guest's nor a snapshot's: FP on (the guest's f registers are live
 * on the hart while it runs) and 64-bit U-mode. The trap's SPP, SPIE and
 * SPELP are the rest. */
#define VCPU_SSTATUS_HOST	(SR_FS_INITIAL | SR_UXL_64)

/* The trapped context: saved by vcpu_switch.S on every exit (offsets generated
 * by asm-offsets.c). */
struct vcpu_regs {
	unsigned long gpr[32];	/* x0..x31; gpr[0] unused */
	unsigned long sepc;	/* the guest pc */
	unsigned long sstatus;	/* guest bits of the trap: SPP, SPIE, SPELP, FS */
};

/* VS-level CSRs and the CSRs the hardware does not bank for VS: loaded by
 * vcpu_load(), saved by vcpu_put(). */
struct vcpu_csrs {
	unsigned long vsstatus, vsie, vstvec, vsscratch, vsepc, vscause, vstval, vsatp;
	uint64_t vstimecmp;	/* in guest time (host time + the VM's htimedelta) */
	unsigned long hvip;	/* pending virtual interrupts (VSSIP; VSEIP follows the PLIC) */
	unsigned long scounteren;
	unsigned long senvcfg;	/* the guest's (VU) envcfg: not banked, swapped in C */
	unsigned long ssp;	/* Zicfiss shadow-stack pointer: not banked */
	unsigned long vsiselect;	/* Ssaia hosts: the guest's siselect (saved with the
					 * IMSIC state in snapshot version 7, stage 5) */
};

struct vcpu_fp {
	uint64_t f[32];
	unsigned long fcsr;
};

/* SBI HSM view of the vCPU. */
enum vcpu_hsm_state {
	VCPU_HSM_STOPPED,
	VCPU_HSM_STARTED,
	VCPU_HSM_SUSPENDED,
};

struct vcpu_hsm {
	enum vcpu_hsm_state state;
	bool waiting;		/* in WFI or retentive suspend: runs when an irq is pending */
	bool resume_nonret;	/* non-retentive suspend: restart at resume_addr */
	bool system;		/* that suspend is the whole VM's (SBI SUSP) */
	unsigned long resume_addr, resume_opaque;
};

/* FWFT MISALIGNED_EXC_DELEG and PTE_AD_HW_UPDATING (vsbi_fwft.c): how the
 * guest's memory accesses behave. MISALIGNED_EXC_DELEG is kept inverted, so
 * that all-zero state is its reset value 1 (delegated): misaligned_emulate is
 * 1 while the guest has set it to 0 (dispatch/misaligned.c emulates). */
struct vcpu_fwft_mem {
	uint8_t misaligned_locked;
	uint8_t pte_ad_value, pte_ad_locked;	/* value 1: henvcfg.ADUE */
	uint8_t misaligned_emulate;		/* FWFT value 0: hedeleg lacks causes 4, 6 */
};

/* SBI STA: where the vCPU's steal-time record is (set_shmem). */
struct vcpu_sta {
	uint64_t shmem;		/* guest physical address of the 64-byte record */
	bool enabled;		/* reporting: shmem was set and not disabled since */
};

/* Everything the guest can observe of one vCPU. Plain data, no host addresses:
 * hstatus and henvcfg are not here because they are derived (hstatus is fixed
 * by the hypervisor, henvcfg follows the FWFT values below and the host). */
struct vcpu_guest {
	struct vcpu_regs ctx;	/* first: the trap vector's context pointer */
	struct vcpu_csrs csr;
	struct vcpu_fp fp;
	struct cfi_fwft fwft;	/* FWFT LANDING_PAD/SHADOW_STACK values and locks */
	struct vcpu_fwft_mem fwft_mem;
	struct vcpu_hsm hsm;
	struct vcpu_sta sta;	/* SBI STA registration */
	struct vcpu_pmu pmu;	/* SBI PMU counters (live counts folded in off CPU) */
};

/* Work other harts post to a vCPU; consumed before the next guest entry. */
#define VCPU_REQ_FENCE_I	(1UL << 0)
#define VCPU_REQ_HFENCE_VVMA	(1UL << 1)	/* flush all of the VM's VS-stage entries */
#define VCPU_REQ_SYNC_STATE	(1UL << 2)	/* copy live ssp/senvcfg to memory (host) */
#define VCPU_REQ_STEAL		(1UL << 3)	/* report its wait for a hart (SBI STA) */
#define VCPU_REQ_PMU_LOAD	(1UL << 4)	/* its configured cycle/instret: trap, count */

#define VCPU_EXIT_CAUSES	24

struct vcpu_stats {
	uint64_t irq_exits, wfi;
	uint64_t wfi_in_place;	/* waits that kept the hart and re-entered it (vcpu_run.c) */
	uint64_t misaligned_emulated;	/* loads/stores done for it (dispatch/misaligned.c) */
	uint64_t by_cause[VCPU_EXIT_CAUSES];
};

/* Steal-time bookkeeping (host time, in ticks), kept only while g.sta.enabled. */
struct vcpu_steal {
	uint64_t off_at;		/* it left its hart (~0: has not run since reset) */
	volatile uint64_t ready_at;	/* it could run again from then; 0: waiting for an irq */
	uint64_t unreported_ns;		/* steal its record could not take yet */
	uint64_t total_ns;		/* all steal counted since the VM was created
					 * (metrics; a reboot keeps it) */
};

/* A vCPU's virtual IMSIC (hyp/state/vimsic.c). The file is guest state
 * (stage 5 saves it) kept out of struct vcpu_guest so that the fields every
 * exit uses stay where they were: 528 bytes before them made exits slower. */
enum vimsic_mode {
	VIMSIC_SW,		/* the state is in .file; its page unmapped (stores exit) */
	VIMSIC_HW,		/* in guest file .gfile of hart .ghart, its page mapped there */
	VIMSIC_MOVING,		/* being read out of that file: injections go to .file */
};

struct vimsic_live {
	struct spinlock lock;		/* file, mode, and ext_irq while AIA */
	/* where the state lives (docs/design-aia.md 3.2): only the hart holding
	 * the guest file changes these, never while the vCPU is loaded there,
	 * so a loaded vCPU reads them without the lock */
	volatile uint8_t mode;		/* enum vimsic_mode */
	uint8_t gfile;			/* HW, MOVING: the guest file, 1..GEILEN */
	int8_t ghart;			/* HW, MOVING: the hart holding it */
	bool armed;			/* its hgeie bit is set: a parked file of a waiting vCPU */
	uint64_t *pte;			/* its page's G-stage leaf (NULL: never mapped) */
	uint64_t last_load;		/* host time it was last entered with its file */
	/* counters (docs/design-aia.md 3.9; summed into vm_counts, metrics) */
	uint64_t csr_exits;		/* vsireg/stopei accesses emulated (SW mode) */
	uint64_t sw_stores;		/* 32-bit stores into its page the window emulated
					 * (vimsic_mmio.c, any sender: atomic_add) */
	uint64_t moves;			/* its state left a guest file (imsic_files.c) */
	uint64_t evictions;		/* of those: taken by another vCPU (parked too long) */
	uint64_t sgei;			/* SGEIs that woke it from a parked file */
	struct imsic_file file;		/* AIA VMs: its IMSIC file in software; all
					 * zero in a PLIC VM */
};

struct vcpu {
	struct vcpu_guest g;		/* must stay first (vcpu_switch.S) */

	/* host bookkeeping */
	unsigned long hyp_sp;		/* stack top of the hart it runs on (vcpu_load) */
	unsigned long hyp_tp;		/* struct hart of that hart */
	struct vm *vm;
	unsigned int id;		/* guest hart id */
	int fast_action;		/* enum exit_action of the fast exit being finished */
	unsigned long henvcfg;		/* derived: host bits + cfi_henvcfg() */
	volatile unsigned long irq_pending;	/* VS irq bits (hvip layout) posted by others */
	volatile bool ext_irq;		/* PLIC output for this vCPU's context, or its
					 * software IMSIC file's signal (level) */
	bool ext_irq_live;		/* what hvip.VSEIP holds while loaded */
	volatile unsigned long requests;	/* VCPU_REQ_* */
	volatile int hart;		/* hart index running it, -1 when off CPU */
	int last_hart;			/* hart it last ran on, -1 if none (TLB upkeep) */
	struct cfi_lp_window lp_window;
	struct cfi_stats cfi_stats;
	struct vcpu_stats stats;
	struct vcpu_steal steal;
	struct pmu_live pmu_live;	/* derived from g.pmu; host counters at load */
	struct vimsic_live imsic;
	/* SBI DBTR: guest state, kept out of struct vcpu_guest (its snapshot
	 * record's hooks copy it: hyp/state/dbtr_record.c) */
	struct vcpu_dbtr dbtr;
};

/** vcpu_henvcfg_guest() - the henvcfg bits the guest's FWFT values select
 *  (host bits like STCE are added by vcpu.c). */
static inline unsigned long vcpu_henvcfg_guest(const struct vcpu *v)
{
	return cfi_henvcfg(v) | (v->g.fwft_mem.pte_ad_value ? ENVCFG_ADUE : 0);
}

/** vcpu_reset() - architectural reset: pc=@entry, a0=hart id, a1=@arg, S-mode, CSRs cleared. */
void vcpu_reset(struct vcpu *v, unsigned long entry, unsigned long arg);
/** vcpu_load()/vcpu_put() - move VS state onto/off this hart around a run; after
 *  vcpu_put() the whole guest state is in memory (struct vcpu_guest). */
void vcpu_load(struct vcpu *v);
void vcpu_put(struct vcpu *v);
/** vcpu_post_irq() - make VS irq bits (hvip layout) pending and kick the vCPU. */
void vcpu_post_irq(struct vcpu *v, unsigned long bits);
/** vcpu_apply_pending() - fold posted work into the loaded vCPU before entry. */
void vcpu_apply_pending_slow(struct vcpu *v);
static inline void vcpu_apply_pending(struct vcpu *v)
{
	/* one test on the hot path: is there anything to do at all? */
	if (v->requests | v->irq_pending | (v->ext_irq ^ v->ext_irq_live))
		vcpu_apply_pending_slow(v);
}
/** vcpu_hold_irqs() - the loaded @v's pending VS interrupts (hvip) wait in its
 *  open landing-pad window until it closes (cfi/lp_redeliver.c gives them
 *  back): none may be taken before the fault the window re-delivers. */
static inline void vcpu_hold_irqs(struct vcpu *v)
{
	unsigned long held = csr_read(CSR_HVIP) & VS_IRQ_MASK;

	if (held) {
		v->lp_window.held_hvip |= held;
		csr_clear(CSR_HVIP, held);
	}
}
/** vcpu_request_sync() - post VCPU_REQ_* work @req to each vCPU of @self's VM
 *  named in @targets (bit i: vCPU i) and wait until those running on other
 *  harts have done it (SBI RFENCE semantics), at most VCPU_REQUEST_WAIT_US:
 *  false if that ran out first (the caller's guest makes the call again;
 *  hyp/state/vcpu_request.c). @self is the caller's vCPU, loaded here. */
#define VCPU_REQUEST_WAIT_US	500	/* a tenth of the default time slice */
bool vcpu_request_sync(struct vcpu *self, unsigned long targets, unsigned long req);
/** vcpu_sync_state() - the host (hart 0) reads @t's CFI CSRs: have them in
 *  memory (struct vcpu_guest) as they are now, even if @t runs on a hart and
 *  has not been put since it changed them. Waits for @t's hart until host
 *  time @deadline at most: one deadline for all the vCPUs a request shows
 *  (VCPU_SYNC_STATE_MS from its start) bounds the request, however many. */
#define VCPU_SYNC_STATE_MS	10
void vcpu_sync_state(struct vcpu *t, uint64_t deadline);
/** vcpu_kick() - make @v leave the guest soon (or wake its idle hart). */
void vcpu_kick(struct vcpu *v);
/** vcpu_exits() - exits so far (sum of the per-cause counters). */
uint64_t vcpu_exits(const struct vcpu *v);
/** vcpu_wake_pending() - would an interrupt wake @v from WFI now? (off-CPU state) */
bool vcpu_wake_pending(const struct vcpu *v, uint64_t now);
/** vcpu_wake_pending_live() - the same for the vCPU loaded on this hart. */
bool vcpu_wake_pending_live(const struct vcpu *v);
/** vcpu_timer_deadline() - host time at which @v's own timer fires (off-CPU
 *  state): @now if due, ~0 if never within the host's time or if the guest
 *  has not enabled its timer interrupt (it cannot wake the vCPU). */
uint64_t vcpu_timer_deadline(const struct vcpu *v, uint64_t now);
/** vcpu_timer_deadline_live() - the same for the vCPU loaded on this hart. */
uint64_t vcpu_timer_deadline_live(const struct vcpu *v, uint64_t now);

/* arch/vcpu_enter.S: enter a guest context; exits come back through the trap
 * vector (run/vcpu_switch.S), never to the caller. */
void __vcpu_enter(struct vcpu *v) __attribute__((noreturn));
void __vcpu_fp_save(struct vcpu_fp *fp);
void __vcpu_fp_restore(const struct vcpu_fp *fp);
#endif
