/* SPDX-License-Identifier: MIT */
/* SBI IPI: a supervisor software interrupt (VSSIP) to each named vCPU of the same VM. */
#include <arch/riscv/csr.h>
#include <hartmask.h>
#include <vsbi.h>
#include <vm.h>

static void ipi_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	unsigned long targets;

	if (fid != SBI_IPI_SEND_IPI) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	ret->error = vsbi_hart_mask(v->vm->cfg.nr_vcpus, VSBI_ARG(v, 0), VSBI_ARG(v, 1), &targets);
	if (ret->error)
		return;
	for (unsigned int i = 0; i < v->vm->cfg.nr_vcpus; i++)
		if (targets & (1UL << i)) {
			vcpu_post_irq(&v->vm->vcpus[i], MIP_VSSIP);
			pmu_count_fw(v, SBI_PMU_FW_IPI_SENT, 1);	/* one per target */
		}
}

const struct vsbi_ext vsbi_ipi = {
	.name = "ipi",
	.eid_first = SBI_EXT_IPI,
	.eid_last = SBI_EXT_IPI,
	.call = ipi_call,
};
