/* SPDX-License-Identifier: MIT */
/* SBI SRST: a guest's "system" is its VM: shut it down or reboot it, nothing else. */
#include <vsbi.h>
#include <vm.h>

#define SRST_REASON_SBI_IMPL	0xE0000000UL
#define SRST_REASON_PLATFORM	0xF0000000UL

static void srst_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	/* 32-bit parameters: RV64 callers may sign-extend them */
	uint32_t type = (uint32_t)VSBI_ARG(v, 0), reason = (uint32_t)VSBI_ARG(v, 1);

	if (fid != SBI_SRST_SYSTEM_RESET) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	/* reserved, or platform-specific and none implemented: INVALID_PARAM
	 * (SBI 3.0); SBI-implementation-specific ones are taken as "none" */
	if ((reason > SBI_SRST_REASON_SYSFAIL && reason < SRST_REASON_SBI_IMPL) ||
	    reason >= SRST_REASON_PLATFORM) {
		ret->error = SBI_ERR_INVALID_PARAM;
		return;
	}
	switch (type) {
	case SBI_SRST_TYPE_SHUTDOWN:
		vm_shutdown(v->vm, false, reason == SBI_SRST_REASON_SYSFAIL);
		ret->action = EXIT_VM_STOP;
		break;
	case SBI_SRST_TYPE_COLD_REBOOT:
	case SBI_SRST_TYPE_WARM_REBOOT:
		vm_shutdown(v->vm, true, false);
		ret->action = EXIT_VM_STOP;
		break;
	default:	/* reserved, or a vendor type (none is implemented) */
		ret->error = SBI_ERR_INVALID_PARAM;
	}
}

const struct vsbi_ext vsbi_srst = {
	.name = "srst",
	.eid_first = SBI_EXT_SRST,
	.eid_last = SBI_EXT_SRST,
	.call = srst_call,
};
