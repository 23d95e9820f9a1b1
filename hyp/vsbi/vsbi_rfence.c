/* SPDX-License-Identifier: MIT */
/* SBI RFENCE: remote fence.i and VS-stage TLB flushes for the named vCPUs. Flushing
 * every VS-stage entry of the VM is a safe superset of any address/ASID range,
 * so the range costs nothing: one call's work is at most one request per vCPU
 * and a bounded wait (hyp/state/vcpu_request.c). */
#include <bitops.h>
#include <hartmask.h>
#include <vsbi.h>
#include <vm.h>

static void rfence_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	unsigned long targets, req;
	unsigned int event;	/* SBI_PMU_FW_*_SENT, counted once per target */

	switch (fid) {
	case SBI_RFENCE_FENCE_I:
		req = VCPU_REQ_FENCE_I;
		event = SBI_PMU_FW_FENCE_I_SENT;
		break;
	case SBI_RFENCE_SFENCE_VMA:
	case SBI_RFENCE_SFENCE_VMA_ASID:
		req = VCPU_REQ_HFENCE_VVMA;
		event = fid == SBI_RFENCE_SFENCE_VMA ? SBI_PMU_FW_SFENCE_VMA_SENT :
						       SBI_PMU_FW_SFENCE_VMA_ASID_SENT;
		break;
	default:
		/* the HFENCE functions: our guests have no H extension */
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	ret->error = vsbi_hart_mask(v->vm->cfg.nr_vcpus, VSBI_ARG(v, 0), VSBI_ARG(v, 1), &targets);
	if (ret->error)
		return;
	if (!vcpu_request_sync(v, targets, req)) {
		/* a target's hart did not get to it in time: nothing is returned,
		 * the guest makes the same call again after passing its entry
		 * path (the slice may end there), and finds the done ones done */
		ret->action = EXIT_RESUME_SAME;
		return;
	}
	pmu_count_fw(v, event, bit_count(targets));
}

const struct vsbi_ext vsbi_rfence = {
	.name = "rfence",
	.eid_first = SBI_EXT_RFENCE,
	.eid_last = SBI_EXT_RFENCE,
	.call = rfence_call,
};
