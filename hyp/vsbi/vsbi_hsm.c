/* SPDX-License-Identifier: MIT */
/* SBI HSM: the per-vCPU start/stop/suspend state machine. HSM state changes
 * happen under the scheduler lock, which also guards "is it on a hart". And
 * that state (with SBI SUSP's system suspend) as a snapshot's HSM record. */
#include <stddef.h>
#include <arch/riscv/csr.h>
#include <guest_mem.h>
#include <sched.h>
#include <snap_table.h>
#include <vsbi.h>
#include <vm.h>

static bool suspend_type_valid(unsigned long type, bool *nonret)
{
	/* only the two default types; the rest is reserved or platform-specific */
	*nonret = type == SBI_HSM_SUSPEND_NON_RET_DEFAULT;
	return type == SBI_HSM_SUSPEND_RET_DEFAULT || *nonret;
}

/* The pc a start or resume address gives: sepc[0] is read-only 0, so on bare
 * hardware the firmware's mret/sret drops bit 0 (an odd pc never reaches the
 * CPU; QEMU 10.0.2 does not mask it). */
static unsigned long entry_pc(unsigned long addr)
{
	return addr & ~1UL;
}

void vsbi_hsm_suspend(struct vcpu *v, bool nonret, unsigned long addr, unsigned long opaque)
{
	/* like WFI: resumes when an enabled interrupt is pending; the run loop
	 * (resume_from_suspend) restarts a non-retentive one at addr */
	v->g.hsm.resume_nonret = nonret;
	v->g.hsm.resume_addr = entry_pc(addr);
	v->g.hsm.resume_opaque = opaque;
	v->g.hsm.system = false;
	v->g.hsm.state = VCPU_HSM_SUSPENDED;
	v->g.hsm.waiting = true;
}

static long hart_start(struct vcpu *v, unsigned long hartid, unsigned long addr,
		       unsigned long opaque)
{
	struct vcpu *t = vm_vcpu(v->vm, hartid);
	long err = SBI_SUCCESS;

	if (!t)
		return SBI_ERR_INVALID_PARAM;
	if (!vm_gpa_range_is_ram(v->vm, addr, 4))
		return SBI_ERR_INVALID_ADDRESS;
	sched_lock();
	if (t->g.hsm.state != VCPU_HSM_STOPPED || t->hart >= 0) {
		err = SBI_ERR_ALREADY_AVAILABLE;
	} else {
		/* a fresh hart: CFI state and FWFT locks reset too (docs/cfi.md §9.12) */
		vcpu_reset(t, entry_pc(addr), opaque);
		t->g.hsm.state = VCPU_HSM_STARTED;
	}
	sched_unlock();
	if (!err)
		sched_kick_idle();
	return err;
}

static unsigned long hart_status(const struct vcpu *t)
{
	if (t->g.hsm.state == VCPU_HSM_STOPPED)
		return t->hart >= 0 ? SBI_HSM_STATE_STOP_PENDING : SBI_HSM_STATE_STOPPED;
	if (t->g.hsm.state == VCPU_HSM_SUSPENDED)
		return SBI_HSM_STATE_SUSPENDED;
	return SBI_HSM_STATE_STARTED;
}

static void hart_suspend(struct vcpu *v, struct vsbi_ret *ret)
{
	/* suspend_type is a uint32: RV64 callers' upper bits are ignored
	 * (SBI spec, binary encoding), as OpenSBI does */
	unsigned long type = (uint32_t)VSBI_ARG(v, 0), addr = VSBI_ARG(v, 1);
	bool nonret;

	if (!suspend_type_valid(type, &nonret)) {
		ret->error = SBI_ERR_INVALID_PARAM;
		return;
	}
	if (nonret && !vm_gpa_range_is_ram(v->vm, addr, 4)) {
		ret->error = SBI_ERR_INVALID_ADDRESS;
		return;
	}
	vsbi_hsm_suspend(v, nonret, addr, VSBI_ARG(v, 2));
	ret->error = SBI_SUCCESS;
	ret->action = EXIT_YIELD;
}

static void hsm_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	struct vcpu *t;

	ret->error = SBI_SUCCESS;
	switch (fid) {
	case SBI_HSM_HART_START:
		ret->error = hart_start(v, VSBI_ARG(v, 0), VSBI_ARG(v, 1), VSBI_ARG(v, 2));
		break;
	case SBI_HSM_HART_STOP:
		sched_lock();
		v->g.hsm.state = VCPU_HSM_STOPPED;	/* stop pending until it leaves the hart */
		sched_unlock();
		ret->action = EXIT_YIELD;
		break;
	case SBI_HSM_HART_GET_STATUS:
		t = vm_vcpu(v->vm, VSBI_ARG(v, 0));
		if (!t)
			ret->error = SBI_ERR_INVALID_PARAM;
		else
			ret->value = hart_status(t);
		break;
	case SBI_HSM_HART_SUSPEND:
		hart_suspend(v, ret);
		break;
	default:
		ret->error = SBI_ERR_NOT_SUPPORTED;
	}
}

const struct vsbi_ext vsbi_hsm = {
	.name = "hsm",
	.eid_first = SBI_EXT_HSM,
	.eid_last = SBI_EXT_HSM,
	.call = hsm_call,
};

/* The HSM record: the table copies every field; a system suspend (SBI SUSP)
 * is a non-retentive suspend of the vCPU that made it. */
static const char *hsm_record_check(const void *rec, const struct snap_config *c,
				    uint32_t *offset)
{
	const struct snap_rec_hsm *r = rec;

	(void)c;
	*offset = offsetof(struct snap_rec_hsm, system_suspend);
	if (r->system_suspend && (r->hsm_state != VCPU_HSM_SUSPENDED || !r->resume_nonret))
		return "a system suspend is a non-retentive suspend";
	return NULL;
}

const struct snap_record_ops vsbi_hsm_record = {
	.check = hsm_record_check,
};
