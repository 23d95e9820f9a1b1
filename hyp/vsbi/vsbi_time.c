/* SPDX-License-Identifier: MIT */
/* SBI TIME: set_timer programs the vCPU's vstimecmp (Sstc), which raises VSTIP by itself. */
#include <arch/riscv/csr.h>
#include <vsbi.h>
#include <vm.h>

static void time_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	if (fid != SBI_TIME_SET_TIMER) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	/* the vCPU is loaded: its vstimecmp is live. Any value is valid. */
	csr_write(CSR_VSTIMECMP, VSBI_ARG(v, 0));
	pmu_count_fw(v, SBI_PMU_FW_SET_TIMER, 1);
	ret->error = SBI_SUCCESS;
}

const struct vsbi_ext vsbi_time = {
	.name = "time",
	.eid_first = SBI_EXT_TIME,
	.eid_last = SBI_EXT_TIME,
	.call = time_call,
};
