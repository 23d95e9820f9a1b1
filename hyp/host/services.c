/* SPDX-License-Identifier: MIT */
/* Host services on hart 0: what the VM machinery reports (events) is printed
 * here, operator operations are finished here once their VM is off every
 * hart, and the machine powers off here when nothing is left to run. */
#include <arch/riscv/encoding.h>
#include <errno.h>
#include <console.h>
#include <mgmt.h>
#include <sbi_client.h>
#include <sched.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include <vmops.h>

static bool persist, boot_failure, powering_off;

static struct {
	enum { OP_NONE, OP_PAUSE, OP_DESTROY } kind;
	vmop_done_fn done;
	void *ctx;
} pending[VM_MAX];

void host_set_persist(bool p)
{
	persist = p;
}

void host_note_failure(void)
{
	boot_failure = true;
}

const char *vm_state_name(const struct vm *vm)
{
	switch (vm->state) {
	case VM_RUNNING: return "running";
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

static int start_op(struct vm *vm, int kind, int rc, vmop_done_fn done, void *ctx)
{
	if (rc)
		return rc;
	pending[vm->index].kind = kind;
	pending[vm->index].done = done;
	pending[vm->index].ctx = ctx;
	return 0;
}

int vmop_pause(struct vm *vm, vmop_done_fn done, void *ctx)
{
	if (pending[vm->index].kind != OP_NONE)
		return -HYP_EBUSY;
	return start_op(vm, OP_PAUSE, vm_request_pause(vm), done, ctx);
}

int vmop_destroy(struct vm *vm, vmop_done_fn done, void *ctx)
{
	/* a pending pause is overtaken: destroy finishes it too */
	if (pending[vm->index].kind == OP_DESTROY)
		return -HYP_EBUSY;
	if (pending[vm->index].kind == OP_PAUSE && pending[vm->index].done)
		pending[vm->index].done(pending[vm->index].ctx, vm, 0);
	pending[vm->index].kind = OP_NONE;
	return start_op(vm, OP_DESTROY, vm_request_destroy(vm), done, ctx);
}

int vmop_resume(struct vm *vm)
{
	if (pending[vm->index].kind != OP_NONE)
		return -HYP_EBUSY;
	return vm_resume(vm);
}

void vmop_cancel_waiter(void *ctx)
{
	for (unsigned int i = 0; i < VM_MAX; i++)
		if (pending[i].ctx == ctx)
			pending[i].done = NULL;
}

/* Finish what waited for VMs to leave their harts. */
static void finish_ops(void)
{
	for (unsigned int i = 0; i < nr_vms; i++) {
		struct vm *vm = &vms[i];
		uint64_t result = 0;
		bool ready;

		if (pending[i].kind == OP_NONE)
			continue;
		sched_lock();
		ready = vm_off_cpu(vm);
		if (ready && pending[i].kind == OP_PAUSE && vm->state == VM_PAUSING)
			vm->state = VM_PAUSED;
		sched_unlock();
		if (!ready)
			continue;
		if (pending[i].kind == OP_DESTROY) {
			console_vm_flush(vm);
			result = vm_destroy_finish(vm);
			pr_info("vm %s: destroyed, %lu MiB returned", vm->cfg.name,
				(unsigned long)(result >> 20));
		} else {
			pr_info("vm %s: paused", vm->cfg.name);
		}
		pending[i].kind = OP_NONE;
		if (pending[i].done)
			pending[i].done(pending[i].ctx, vm, result);
	}
}

static void print_stats(const struct vm *vm)
{
	uint64_t sbi = 0, wfi = 0, lp = 0, ss = 0;

	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		sbi += vm->vcpus[i].stats.by_cause[EXC_ECALL_VS];
		wfi += vm->vcpus[i].stats.wfi;
		lp += vm->vcpus[i].cfi_stats.swcheck_lp;
		ss += vm->vcpus[i].cfi_stats.swcheck_ss;
	}
	pr_info("vm %s: exits %lu, sbi calls %lu, wfi %lu, injected traps %lu, "
		"cfi violations: landing pad %lu, shadow stack %lu",
		vm->cfg.name, (unsigned long)vm_exits(vm), (unsigned long)sbi,
		(unsigned long)wfi, (unsigned long)vm->stats.injected, (unsigned long)lp,
		(unsigned long)ss);
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		const struct cfi_stats *cs = &vm->vcpus[i].cfi_stats;

		if (cs->swcheck_lp || cs->swcheck_ss)
			pr_info("vm %s: vcpu %u: cfi violations: landing pad %lu, shadow stack %lu, "
				"last at pc 0x%lx from %s", vm->cfg.name, i,
				(unsigned long)cs->swcheck_lp, (unsigned long)cs->swcheck_ss,
				(unsigned long)cs->last_pc, cs->last_from_vs ? "VS" : "VU");
	}
}

/* The outcome lines the launcher's batch mode reads (tools/carapace-run). */
static void handle_events(void)
{
	enum vm_event_kind kind;
	struct vm *vm;

	while (vm_event_take(&vm, &kind)) {
		console_vm_flush(vm);
		if (kind == VM_EV_REBOOT) {
			pr_info("vm %s: rebooting", vm->cfg.name);
			continue;
		}
		pr_info("vm %s: %s", vm->cfg.name, vm->reason);
		print_stats(vm);
		sched_lock();
		if (vm->state == VM_STOPPING)
			vm->state = VM_DOWN;
		sched_unlock();
	}
}

static void power_off_if_all_down(void)
{
	bool failed = boot_failure;

	if (persist || powering_off)
		return;
	for (unsigned int i = 0; i < nr_vms; i++) {
		if (vms[i].state != VM_DOWN && vms[i].state != VM_EMPTY)
			return;
		failed |= vms[i].state == VM_DOWN && vms[i].failed;
	}
	powering_off = true;
	pr_info("all VMs down, powering off%s", failed ? " (some VM failed)" : "");
	sbi_system_shutdown(failed);
}

void host_poll(void)
{
	console_poll_input();
	handle_events();
	finish_ops();
	mgmt_poll();
	power_off_if_all_down();
}
