/* SPDX-License-Identifier: MIT */
/* SBI SUSP: a guest's "system" is its VM. SUSPEND_TO_RAM puts the VM to sleep:
 * its last running vCPU waits, consuming no host CPU, as a non-retentive HSM
 * suspend does (vsbi_hsm_suspend), and restarts at resume_addr. What wakes it
 * is an interrupt the guest left enabled in sie: its timer (vstimecmp) or an
 * external interrupt from its PLIC, e.g. console input through the UART. */
#include <guest_mem.h>
#include <sched.h>
#include <vsbi.h>
#include <vm.h>

/* All but the caller in HSM STOPPED, and off their harts (else get_status
 * still says STOP_PENDING). Scheduler lock held. */
static bool others_stopped(const struct vcpu *v)
{
	for (unsigned int i = 0; i < v->vm->cfg.nr_vcpus; i++) {
		const struct vcpu *t = &v->vm->vcpus[i];

		if (t != v && (t->g.hsm.state != VCPU_HSM_STOPPED || t->hart >= 0))
			return false;
	}
	return true;
}

static void system_suspend(struct vcpu *v, struct vsbi_ret *ret)
{
	/* sleep_type is a uint32: RV64 callers' upper bits are ignored */
	uint32_t type = (uint32_t)VSBI_ARG(v, 0);
	unsigned long addr = VSBI_ARG(v, 1);

	/* reserved (1..0x7fffffff) or platform-specific and none implemented
	 * (>= 0x80000000): INVALID_PARAM, as the v3.0 table says. No mode check:
	 * only VS-mode ecalls reach us (hedeleg gives VU's to the guest). */
	if (type != SBI_SUSP_SLEEP_TYPE_SUSPEND_TO_RAM) {
		ret->error = SBI_ERR_INVALID_PARAM;
		return;
	}
	if (!vm_gpa_range_is_ram(v->vm, addr, 4)) {
		ret->error = SBI_ERR_INVALID_ADDRESS;
		return;
	}
	/* the check and the state change under one lock: no vCPU can be started
	 * in between (and only a running vCPU could start one) */
	sched_lock();
	if (!others_stopped(v)) {
		sched_unlock();
		ret->error = SBI_ERR_DENIED;
		return;
	}
	vsbi_hsm_suspend(v, true, addr, VSBI_ARG(v, 2));
	v->g.hsm.system = true;	/* the VM reports "suspended" (vm_state_name) */
	sched_unlock();
	ret->error = SBI_SUCCESS;
	ret->action = EXIT_YIELD;
}

static void susp_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	if (fid != SBI_SUSP_SYSTEM_SUSPEND) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	system_suspend(v, ret);
}

const struct vsbi_ext vsbi_susp = {
	.name = "susp",
	.eid_first = SBI_EXT_SUSP,
	.eid_last = SBI_EXT_SUSP,
	.call = susp_call,
};
