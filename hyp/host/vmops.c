/* SPDX-License-Identifier: MIT */
/* Lifecycle operations the operator asks for, one implementation for the
 * monitor keys and the management channel. Pause and destroy are finished by
 * vmops_poll() (hart 0) once every vCPU of the VM has left its hart. */
#include <errno.h>
#include <console.h>
#include <imsic_files.h>
#include <sched.h>
#include <vio_mmio.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include <vmops.h>
#include <snapshot.h>
#include <migrate.h>

static struct {
	enum { OP_NONE, OP_PAUSE, OP_DESTROY } kind;
	vmop_done_fn done;
	void *ctx;
} pending[VM_MAX];

/* The guest put itself to sleep (SBI SUSP): running for the host, which
 * schedules it again as soon as a wake-up interrupt is pending. */
static bool guest_suspended(const struct vm *vm)
{
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		if (vm->vcpus[i].g.hsm.system && vm->vcpus[i].g.hsm.state == VCPU_HSM_SUSPENDED)
			return true;
	return false;
}

const char *vm_state_name(const struct vm *vm)
{
	switch (vm->state) {
	case VM_RUNNING: return guest_suspended(vm) ? "suspended" : "running";
	case VM_PAUSING: return "pausing";
	case VM_PAUSED: return "paused";
	case VM_REBOOTING:
	case VM_RESETTING: return "rebooting";
	case VM_STOPPING: return "stopping";
	case VM_DESTROYING: return "destroying";
	case VM_DOWN: return "down";
	default: return "empty";
	}
}

/* Operations under way, so that vmops_pending(), asked on every vCPU switch
 * on hart 0, is one load (hart 0 alone changes them). */
static unsigned int nr_pending;

static void set_kind(unsigned int i, int kind)
{
	nr_pending += (kind != OP_NONE) - (pending[i].kind != OP_NONE);
	pending[i].kind = kind;
}

static int start_op(struct vm *vm, int kind, int rc, vmop_done_fn done, void *ctx)
{
	if (rc)
		return rc;
	set_kind(vm->index, kind);
	pending[vm->index].done = done;
	pending[vm->index].ctx = ctx;
	return 0;
}

int vmop_pause(struct vm *vm, vmop_done_fn done, void *ctx)
{
	int rc;

	if (pending[vm->index].kind != OP_NONE || snap_holds_paused(vm))
		return -HYP_EBUSY;
	rc = start_op(vm, OP_PAUSE, vm_request_pause(vm), done, ctx);
	/* a paused VM's state may be saved: its disks and NICs take no new
	 * request, and the pause ends once those in flight are done */
	if (!rc)
		vio_freeze(vm);
	return rc;
}

const char *vm_migration_word(const struct vm *vm)
{
	switch (vm->mig_unconfirmed) {
	case VM_MIG_LEFT: return "left-unconfirmed";
	case VM_MIG_ARRIVED: return "arrived-unconfirmed";
	default: return NULL;
	}
}

const char *vmop_refusal(const struct vm *vm, enum vmop op)
{
	bool held = snap_holds_paused(vm);

	if (op == VMOP_DESTROY && snap_saving(vm))
		return "a snapshot of the VM is being written: its memory must stay until the "
		       "stream is out";
	if (op != VMOP_DESTROY && held)
		return "a snapshot of the VM is being written: it stays paused until the stream "
		       "is out";
	if (mig_sending(vm))
		return "the VM is migrating: it stays as it is until the migration ends";
	if (pending[vm->index].kind == OP_DESTROY)
		return "the VM is being destroyed";
	if (op != VMOP_DESTROY && pending[vm->index].kind == OP_PAUSE)
		return "a pause of the VM is under way";
	return NULL;
}

int vmop_destroy(struct vm *vm, vmop_done_fn done, void *ctx)
{
	uint64_t freed;

	/* its memory is being streamed, or it is going already (a pending
	 * pause is overtaken: destroy finishes it too) */
	if (vmop_refusal(vm, VMOP_DESTROY))
		return -HYP_EBUSY;
	if (mig_receiving(vm) && mig_recv_cancel(vm, &freed)) {
		/* still arriving, never run: the receive ended and freed it */
		pr_info("vm %s: destroyed while arriving, %lu MiB returned", vm->cfg.name,
			(unsigned long)(freed >> 20));
		if (done)
			done(ctx, vm, freed);
		return 0;
	}
	if (pending[vm->index].kind == OP_PAUSE && pending[vm->index].done)
		pending[vm->index].done(pending[vm->index].ctx, vm, 0);
	set_kind(vm->index, OP_NONE);
	return start_op(vm, OP_DESTROY, vm_request_destroy(vm), done, ctx);
}

int vmop_resume(struct vm *vm)
{
	int rc;

	/* a snapshot or a migration's switchover holds it paused until it ends */
	if (vmop_refusal(vm, VMOP_RESUME))
		return -HYP_EBUSY;
	rc = vm_resume(vm);
	if (!rc)
		vio_resume(vm);	/* what the guest made available meanwhile is served */
	if (!rc && vm->mig_unconfirmed == VM_MIG_LEFT) {
		/* the operator's word: the destination never ran it */
		vm->mig_unconfirmed = VM_MIG_CONFIRMED;
		pr_info("vm %s: resumed here after its unconfirmed migration: make sure the "
			"destination does not run it", vm->cfg.name);
	}
	return rc;
}

int vmop_wake(struct vm *vm)
{
	/* a paused VM (by us or a migration) stays asleep until resumed */
	if (pending[vm->index].kind != OP_NONE)
		return -HYP_EBUSY;
	return vm_wake(vm);
}

void vmop_cancel_waiter(void *ctx)
{
	for (unsigned int i = 0; i < VM_MAX; i++)
		if (pending[i].ctx == ctx)
			pending[i].done = NULL;
}

bool vmops_pending(void)
{
	return nr_pending;
}

/* Finish what waited for VMs to leave their harts. */
void vmops_poll(void)
{
	for (unsigned int i = 0; i < nr_vms; i++) {
		struct vm *vm = &vms[i];
		uint64_t result = 0;
		bool ready;

		if (pending[i].kind == OP_NONE)
			continue;
		sched_lock();
		/* and holding no guest file: a destroyed VM's go back zeroed */
		ready = vm_off_cpu(vm) && imsic_files_vm_released(vm);
		sched_unlock();
		/* a destroy also waits for host devices to finish with its RAM;
		 * a pause for the requests in flight (drained into the guest's
		 * used rings: docs/snapshot-format.md, "VIRTIO") */
		if (ready && pending[i].kind == OP_DESTROY)
			ready = vio_quiesce(vm);
		if (ready && pending[i].kind == OP_PAUSE)
			ready = vio_drained(vm);
		if (!ready)
			continue;
		if (pending[i].kind == OP_PAUSE)
			vm_pause_settle(vm);
		if (pending[i].kind == OP_DESTROY) {
			console_vm_flush(vm);
			result = vm_destroy_finish(vm);
			pr_info("vm %s: destroyed, %lu MiB returned", vm->cfg.name,
				(unsigned long)(result >> 20));
		} else {
			pr_info("vm %s: paused", vm->cfg.name);
		}
		set_kind(i, OP_NONE);
		if (pending[i].done)
			pending[i].done(pending[i].ctx, vm, result);
	}
}

/* What a migration needs of the lifecycle: the same operations. */
const struct mig_host_ops vmops_migration = { vmop_pause, vmop_resume, vmop_destroy };
