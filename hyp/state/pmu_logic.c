/* SPDX-License-Identifier: MIT */
/* Guest PMU, the pure part: which counters exist, which events each can count,
 * counter sets, matching, and the checks a PMU state from outside must pass.
 * No CSR, no vCPU: host-tested (tests/unit/test_pmu.c). */
#include <pmu.h>

/* Firmware events the hypervisor counts honestly, where it does the work
 * (docs/sbi.md, PMU): the SBI calls it serves and the traps it raises. */
#define PMU_FW_COUNTED	((1U << SBI_PMU_FW_ACCESS_LOAD) | (1U << SBI_PMU_FW_ACCESS_STORE) | \
			 (1U << SBI_PMU_FW_ILLEGAL_INSN) | (1U << SBI_PMU_FW_SET_TIMER) |    \
			 (1U << SBI_PMU_FW_IPI_SENT) | (1U << SBI_PMU_FW_FENCE_I_SENT) |      \
			 (1U << SBI_PMU_FW_SFENCE_VMA_SENT) |                                \
			 (1U << SBI_PMU_FW_SFENCE_VMA_ASID_SENT))

bool pmu_counter_mask(unsigned long base, unsigned long mask, uint32_t *out)
{
	uint32_t set = 0;

	if (!mask)
		return false;	/* an empty set names no counter to act on */
	for (unsigned int b = 0; mask; b++, mask >>= 1) {
		if (!(mask & 1))
			continue;
		/* base + b may wrap: compare without adding first */
		if (base >= PMU_NR_COUNTERS || b >= PMU_NR_COUNTERS - base)
			return false;
		if (!(PMU_VALID_MASK & (1U << (base + b))))
			return false;	/* the hole at index 1 */
		set |= 1U << (base + b);
	}
	*out = set;
	return true;
}

bool pmu_counter_can_count(unsigned int i, unsigned long event_idx, uint64_t data)
{
	unsigned int code;

	if (i >= PMU_NR_COUNTERS || (event_idx & ~PMU_EVENT_IDX_BITS))
		return false;
	code = PMU_EVENT_CODE(event_idx);
	switch (PMU_EVENT_TYPE(event_idx)) {
	case PMU_TYPE_HW:
		/* event_data must be 0: other values are reserved */
		if (data)
			return false;
		return (i == PMU_CTR_CYCLE && code == SBI_PMU_HW_CPU_CYCLES) ||
		       (i == PMU_CTR_INSTRET && code == SBI_PMU_HW_INSTRUCTIONS);
	case PMU_TYPE_FW:
		if (data || code >= 32)	/* PLATFORM (0xffff) and the rest: none */
			return false;
		return (PMU_FW_MASK & (1U << i)) && (PMU_FW_COUNTED & (1U << code));
	default:	/* cache and raw events: no hardware behind them */
		return false;
	}
}

bool pmu_event_supported(unsigned long event_idx, uint64_t data)
{
	for (unsigned int i = 0; i < PMU_NR_COUNTERS; i++)
		if (pmu_counter_can_count(i, event_idx, data))
			return true;
	return false;
}

int pmu_match(const struct vcpu_pmu *p, uint32_t set, bool skip_match,
	      unsigned long event_idx, uint64_t data)
{
	for (unsigned int i = 0; i < PMU_NR_COUNTERS; i++) {
		if (!(set & (1U << i)))
			continue;
		/* SKIP_MATCH: the first counter of the set, even one the caller
		 * configured before (that is what it is for), unless it counts */
		if (skip_match)
			return !(p->started & (1U << i)) &&
					       pmu_counter_can_count(i, event_idx, data) ?
				       (int)i :
				       -1;
		if (!(p->configured & (1U << i)) && pmu_counter_can_count(i, event_idx, data))
			return (int)i;
	}
	return -1;
}

uint32_t pmu_fw_events(const struct vcpu_pmu *p)
{
	uint32_t ev = 0;

	for (unsigned int i = PMU_CTR_FW_FIRST; i < PMU_NR_COUNTERS; i++)
		if (p->started & (1U << i))
			ev |= 1U << PMU_EVENT_CODE(p->event_idx[i]);
	return ev;
}

bool pmu_state_check(const struct vcpu_pmu *p)
{
	if ((p->configured & ~PMU_VALID_MASK) || (p->started & ~p->configured) || p->pad)
		return false;
	for (unsigned int i = 0; i < PMU_NR_COUNTERS; i++) {
		if (!(p->configured & (1U << i))) {
			if (p->event_idx[i])
				return false;
		} else if (!pmu_counter_can_count(i, p->event_idx[i], 0)) {
			return false;
		}
	}
	return true;
}

unsigned long pmu_counter_info(unsigned int i)
{
	if (PMU_FW_MASK & (1U << i))
		return SBI_PMU_CTR_INFO_FW;
	/* CSR number in bits 11:0, width - 1 in bits 17:12 */
	return (unsigned long)(0xc00 + i) | ((unsigned long)(PMU_HW_WIDTH - 1) << 12);
}
