/* SPDX-License-Identifier: MIT */
/* SBI PMU: per-vCPU virtual counters (hyp/include/pmu.h has the layout).
 * Nothing is forwarded to the firmware: the counters are the hypervisor's
 * bookkeeping. Snapshot shared memory is not implemented (NOT_SUPPORTED), so
 * the snapshot start/stop flags answer NO_SHMEM, as the spec says. */
#include <guest_mem.h>
#include <pmu.h>
#include <vsbi.h>
#include <vm.h>

#define CFG_FLAGS_DEFINED	0xffUL
/* the guest's own S/U-mode and its "M-mode" (everything below it) cannot be
 * filtered: refused. VS/VU mean the guest's guests, which it has none of
 * (no H extension for guests): honoured by doing nothing. */
#define CFG_FLAGS_REFUSED	(SBI_PMU_CFG_FLAG_SET_UINH | SBI_PMU_CFG_FLAG_SET_SINH | \
				 SBI_PMU_CFG_FLAG_SET_MINH)
#define START_FLAGS_DEFINED	(SBI_PMU_START_SET_INIT_VALUE | SBI_PMU_START_INIT_SNAPSHOT)
#define STOP_FLAGS_DEFINED	(SBI_PMU_STOP_RESET | SBI_PMU_STOP_TAKE_SNAPSHOT)
/* event_get_info works on the guest's memory in one go: bound that work */
#define EVENT_INFO_MAX		4096
#define EVENT_INFO_SIZE		16

static void config_matching(struct vcpu *v, struct vsbi_ret *ret)
{
	unsigned long flags = VSBI_ARG(v, 2), event = VSBI_ARG(v, 3);
	uint64_t data = VSBI_ARG(v, 4);
	uint32_t set;
	int i;

	if ((flags & ~CFG_FLAGS_DEFINED) ||
	    !pmu_counter_mask(VSBI_ARG(v, 0), VSBI_ARG(v, 1), &set)) {
		ret->error = SBI_ERR_INVALID_PARAM;
		return;
	}
	i = (flags & CFG_FLAGS_REFUSED) ? -1 :
		pmu_match(&v->g.pmu, set, flags & SBI_PMU_CFG_FLAG_SKIP_MATCH, event, data);
	if (i < 0) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	v->g.pmu.configured |= 1U << i;
	v->g.pmu.event_idx[i] = (uint32_t)event;
	if (flags & SBI_PMU_CFG_FLAG_CLEAR_VALUE)
		v->g.pmu.value[i] = 0;
	if (flags & SBI_PMU_CFG_FLAG_AUTO_START)
		pmu_start(v, i, false, 0);
	pmu_hw_sync(v);
	ret->value = i;
}

/* Every counter of the set is acted on; the error says if any was already in
 * the state asked for (as KVM does: Linux stops with RESET a counter it
 * stopped before, and the counter must still be released). */
static void start_stop(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	unsigned long flags = VSBI_ARG(v, 2);
	bool start = fid == SBI_PMU_COUNTER_START;
	uint32_t set;

	if ((flags & ~(start ? START_FLAGS_DEFINED : STOP_FLAGS_DEFINED)) ||
	    (start && flags == START_FLAGS_DEFINED) ||	/* the two are exclusive */
	    !pmu_counter_mask(VSBI_ARG(v, 0), VSBI_ARG(v, 1), &set)) {
		ret->error = SBI_ERR_INVALID_PARAM;
		return;
	}
	/* the same bit (1) in both: INIT_SNAPSHOT and TAKE_SNAPSHOT */
	if (flags & SBI_PMU_START_INIT_SNAPSHOT) {
		ret->error = SBI_ERR_NO_SHMEM;
		return;
	}
	/* a counter without an event cannot start; it is stopped already */
	if (start && (set & ~v->g.pmu.configured)) {
		ret->error = SBI_ERR_INVALID_PARAM;
		return;
	}
	for (unsigned int i = 0; i < PMU_NR_COUNTERS; i++) {
		uint32_t b = 1U << i;

		if (!(set & b))
			continue;
		if (start && (v->g.pmu.started & b))
			ret->error = SBI_ERR_ALREADY_STARTED;
		else if (start)
			pmu_start(v, i, flags & SBI_PMU_START_SET_INIT_VALUE, VSBI_ARG(v, 3));
		else if (!(v->g.pmu.started & b))
			ret->error = SBI_ERR_ALREADY_STOPPED;
		else
			pmu_stop(v, i);
		if (!start && (flags & SBI_PMU_STOP_RESET)) {
			v->g.pmu.configured &= ~b;
			v->g.pmu.event_idx[i] = 0;
		}
	}
	pmu_hw_sync(v);
}

static bool fw_counter(const struct vcpu *v, unsigned long i)
{
	/* a firmware counter with an event: anything else has nothing to read */
	return i < PMU_NR_COUNTERS && (PMU_FW_MASK & (1U << i)) &&
	       (v->g.pmu.configured & (1U << i));
}

/* Shared memory of @num 16-byte entries: validated like every shmem argument
 * (alignment, hi half, wholly in this VM's RAM), then answered entry by entry. */
static void event_get_info(struct vcpu *v, struct vsbi_ret *ret)
{
	unsigned long lo = VSBI_ARG(v, 0), hi = VSBI_ARG(v, 1), num = VSBI_ARG(v, 2);
	uint32_t *e;

	if (VSBI_ARG(v, 3) || (lo & (EVENT_INFO_SIZE - 1)) || !num) {
		ret->error = SBI_ERR_INVALID_PARAM;
		return;
	}
	if (hi || num > (-1UL - lo) / EVENT_INFO_SIZE ||
	    !vm_gpa_range_is_ram(v->vm, lo, num * EVENT_INFO_SIZE)) {
		ret->error = SBI_ERR_INVALID_ADDRESS;
		return;
	}
	if (num > EVENT_INFO_MAX) {	/* bounded work per call (spec: "other reasons") */
		ret->error = SBI_ERR_FAILED;
		return;
	}
	e = vm_gpa_to_hva(v->vm, lo, num * EVENT_INFO_SIZE, true);
	if (!e) {
		ret->error = SBI_ERR_INVALID_ADDRESS;
		return;
	}
	/* first every event_idx word: a reserved bit fails the call, untouched */
	for (unsigned long n = 0; n < num; n++)
		if (e[4 * n] & ~PMU_EVENT_IDX_BITS) {
			ret->error = SBI_ERR_INVALID_PARAM;
			return;
		}
	for (unsigned long n = 0; n < num; n++) {
		uint32_t idx = e[4 * n];
		unsigned int type = PMU_EVENT_TYPE(idx);
		/* event_data counts only for raw and firmware events */
		uint64_t data = (type == 2 || type == 3 || type == PMU_TYPE_FW) ?
					((uint64_t)e[4 * n + 3] << 32) | e[4 * n + 2] : 0;

		e[4 * n + 1] = pmu_event_supported(idx, data) ? 1 : 0;
	}
	ret->error = SBI_SUCCESS;
}

static void pmu_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	unsigned long i = VSBI_ARG(v, 0);

	ret->error = SBI_SUCCESS;
	switch (fid) {
	case SBI_PMU_NUM_COUNTERS:
		ret->value = PMU_NR_COUNTERS;
		break;
	case SBI_PMU_COUNTER_GET_INFO:
		if (i >= PMU_NR_COUNTERS || !(PMU_VALID_MASK & (1U << i)))
			ret->error = SBI_ERR_INVALID_PARAM;
		else
			ret->value = pmu_counter_info(i);
		break;
	case SBI_PMU_COUNTER_CONFIG_MATCHING:
		config_matching(v, ret);
		break;
	case SBI_PMU_COUNTER_START:
	case SBI_PMU_COUNTER_STOP:
		start_stop(v, fid, ret);
		break;
	case SBI_PMU_COUNTER_FW_READ:
	case SBI_PMU_COUNTER_FW_READ_HI:
		if (!fw_counter(v, i))
			ret->error = SBI_ERR_INVALID_PARAM;
		else	/* RV64: the whole value fits; the high half is 0 */
			ret->value = fid == SBI_PMU_COUNTER_FW_READ ? pmu_read(v, i) : 0;
		break;
	case SBI_PMU_EVENT_GET_INFO:
		event_get_info(v, ret);
		break;
	default:	/* SNAPSHOT_SET_SHMEM (optional) and unknown functions */
		ret->error = SBI_ERR_NOT_SUPPORTED;
	}
}

const struct vsbi_ext vsbi_pmu = {
	.name = "pmu",
	.eid_first = SBI_EXT_PMU,
	.eid_last = SBI_EXT_PMU,
	.call = pmu_call,
};
