/* SPDX-License-Identifier: MIT */
/* The guest PMU (SBI PMU extension, docs/sbi.md): per-vCPU virtual counters.
 *
 * Counter indexes (the SBI counter_idx space):
 *   0       cycle   (hardware, CSR 0xC00)
 *   1       hole: the time CSR is no PMU counter (get_info says INVALID_PARAM,
 *           as KVM does; Linux expects counter_idx = CSR - 0xC00 for hardware
 *           counters, so instret must stay at 2)
 *   2       instret (hardware, CSR 0xC02)
 *   3..10   firmware counters, each able to count any supported firmware event
 *
 * Guest-visible state is struct vcpu_pmu (plain data in struct vcpu_guest).
 * While the vCPU is off its hart, value[] holds every counter's value exactly
 * (live hardware counts are folded in by pmu_vcpu_put()), so the struct
 * alone describes the PMU; struct pmu_live is host bookkeeping, valid only
 * while the vCPU is loaded or derived from vcpu_pmu. */
#ifndef HYP_PMU_H
#define HYP_PMU_H
#include <types.h>
#include <abi/sbi_defs.h>

#define PMU_CTR_CYCLE		0
#define PMU_CTR_HOLE		1
#define PMU_CTR_INSTRET		2
#define PMU_CTR_FW_FIRST	3
#define PMU_NR_FW		8
#define PMU_NR_COUNTERS		(PMU_CTR_FW_FIRST + PMU_NR_FW)	/* num_counters */
#define PMU_HW_MASK		((1U << PMU_CTR_CYCLE) | (1U << PMU_CTR_INSTRET))
#define PMU_FW_MASK		(((1U << PMU_NR_FW) - 1) << PMU_CTR_FW_FIRST)
#define PMU_VALID_MASK		(PMU_HW_MASK | PMU_FW_MASK)
#define PMU_HW_WIDTH		64	/* virtual cycle/instret are 64-bit */

/* event_idx encoding (SBI PMU: type in bits 19:16, code in 15:0) */
#define PMU_EVENT_TYPE(e)	(((e) >> 16) & 0xf)
#define PMU_EVENT_CODE(e)	((e) & 0xffff)
#define PMU_EVENT_IDX_BITS	0xfffffUL
#define PMU_TYPE_HW		0
#define PMU_TYPE_FW		15
#define PMU_EVENT_HW_CYCLES	((PMU_TYPE_HW << 16) | SBI_PMU_HW_CPU_CYCLES)
#define PMU_EVENT_HW_INSNS	((PMU_TYPE_HW << 16) | SBI_PMU_HW_INSTRUCTIONS)

/* What a guest can see of its PMU; fixed size, no host addresses (snapshots). */
struct vcpu_pmu {
	uint32_t configured;	/* bit i: counter i has an event (config_matching) */
	uint32_t started;	/* bit i: counter i counts; always within configured */
	uint32_t event_idx[PMU_NR_COUNTERS];	/* its event; 0 when not configured */
	uint32_t pad;
	uint64_t value[PMU_NR_COUNTERS];	/* hw: value at the last start/stop/put;
						 * fw: the count */
};

/* Host bookkeeping, not saved: recomputed by pmu_vcpu_restore()/load. */
struct pmu_live {
	uint64_t base[PMU_CTR_INSTRET + 1];	/* host cycle/instret at start or load */
	uint32_t fw_events;	/* bit c: a started counter counts firmware event c */
	bool loaded;		/* base[] holds this run's start (folded at put) */
};

/* Pure logic (hyp/state/pmu_logic.c, host-tested). */
/** pmu_counter_mask() - (counter_idx_base, counter_idx_mask) to a set of our
 *  counters; false if the set is empty or names an invalid counter. */
bool pmu_counter_mask(unsigned long base, unsigned long mask, uint32_t *out);
/** pmu_event_known() - the event_idx a counter @i can count (with @data). */
bool pmu_counter_can_count(unsigned int i, unsigned long event_idx, uint64_t data);
/** pmu_event_supported() - some counter can count @event_idx with @data. */
bool pmu_event_supported(unsigned long event_idx, uint64_t data);
/** pmu_match() - the counter config_matching picks from @set, or -1. */
int pmu_match(const struct vcpu_pmu *p, uint32_t set, bool skip_match,
	      unsigned long event_idx, uint64_t data);
/** pmu_fw_events() - firmware event codes counted by started counters. */
uint32_t pmu_fw_events(const struct vcpu_pmu *p);
/** pmu_state_check() - a vcpu_pmu from outside (snapshot) is consistent. */
bool pmu_state_check(const struct vcpu_pmu *p);
/** pmu_counter_info() - counter_get_info's value for a valid counter. */
unsigned long pmu_counter_info(unsigned int i);

/* Live counters (hyp/state/pmu.c). */
struct vcpu;
void pmu_vcpu_reset(struct vcpu *v);
/** pmu_vcpu_put() - from vcpu_put() when a hardware counter is configured;
 *  posts VCPU_REQ_PMU_LOAD so that pmu_vcpu_load() runs before the next entry
 *  (guests without one pay one test per switch). */
void pmu_vcpu_load(struct vcpu *v);
struct vcpu *pmu_vcpu_put(struct vcpu *v);	/* returns @v */
/** pmu_hw_sync() - after the configured/started sets changed on the loaded vCPU. */
void pmu_hw_sync(struct vcpu *v);
/** pmu_read() - counter @i's value now (the vCPU is loaded here). */
uint64_t pmu_read(const struct vcpu *v, unsigned int i);
/** pmu_start()/pmu_stop() - one counter of the loaded vCPU. */
void pmu_start(struct vcpu *v, unsigned int i, bool set, uint64_t value);
void pmu_stop(struct vcpu *v, unsigned int i);
/** pmu_csr_exit() - a virtual-instruction exit for @insn: 1 if it read cycle or
 *  instret (rd written), -1 if it must be an illegal instruction, 0 if not a
 *  counter access. */
int pmu_csr_exit(struct vcpu *v, unsigned long insn);
/** pmu_vcpu_save() - @v's PMU as values at this moment (snapshots: the vCPU is
 *  off CPU, so this is a copy; on its own hart it adds the live counts). */
void pmu_vcpu_save(const struct vcpu *v, struct vcpu_pmu *out);
/** pmu_vcpu_restore() - install @in on the off-CPU @v after pmu_state_check(). */
int pmu_vcpu_restore(struct vcpu *v, const struct vcpu_pmu *in);
/* The PMU record's snapshot hooks, which the snap layer reads
 * (hyp/snap/snap_state.c; hyp/include/snap_table.h). */
struct snap_record_ops;
extern const struct snap_record_ops pmu_record;
void pmu_count_fw_slow(struct vcpu *v, unsigned int code, unsigned long n);
/** pmu_count_fw() - @n occurrences of firmware event @code (SBI_PMU_FW_*) on
 *  @v, from its own hart. One test when no started counter counts it. */
#define pmu_count_fw(v, code, n)                                               \
	do {                                                                   \
		if ((v)->pmu_live.fw_events & (1U << (code)))                  \
			pmu_count_fw_slow((v), (code), (n));                   \
	} while (0)
#endif
