/* SPDX-License-Identifier: MIT */
/* Host services on hart 0: what the VM machinery reports (events) is printed
 * here, operator operations are finished (vmops.c), the management channel is
 * served, and the machine powers off here when nothing is left to run. */
#include <arch/riscv/encoding.h>
#include <errno.h>
#include <hart.h>
#include <host_io.h>
#include <host_irq.h>
#include <console.h>
#include <mgmt.h>
#include <monitor.h>
#include <sbi_client.h>
#include <sched.h>
#include <snapshot.h>
#include <migrate.h>
#include <vm.h>
#include <vm_io.h>
#include <vm_lifecycle.h>
#include <vmops.h>

static bool persist, boot_failure, powering_off;

void host_set_persist(bool p)
{
	persist = p;
}

void host_note_failure(void)
{
	boot_failure = true;
}

static void print_stats(const struct vm *vm)
{
	struct vm_counts c;

	vm_count(vm, &c);
	pr_info("vm %s: exits %lu, sbi calls %lu, wfi %lu (%lu in place), injected traps %lu, "
		"cfi violations: landing pad %lu, shadow stack %lu",
		vm->cfg.name, (unsigned long)c.exits, (unsigned long)c.sbi, (unsigned long)c.wfi,
		(unsigned long)c.wfi_in_place, (unsigned long)c.injected, (unsigned long)c.cfi_lp, (unsigned long)c.cfi_ss);
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

	static uint64_t dropped_seen;
	uint64_t dropped = vm_events_dropped();

	if (dropped != dropped_seen) {
		pr_info("%lu VM reboot notices lost (the event ring was full): "
			"%lu since boot", (unsigned long)(dropped - dropped_seen),
			(unsigned long)dropped);
		dropped_seen = dropped;
	}
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

/* A stream waiting for its port (room, or bytes) or a disk read looks again
 * this soon, if their interrupts did not wake hart 0 before (the bound for
 * a host without the port's interrupt, and for one that came just before
 * hart 0 went to sleep). */
#define STREAM_WAIT_US	100
/* An operation waiting for a VM to leave its harts (a pause) looks again
 * this soon: a guest on hart 0 gets no longer slice meanwhile. */
#define OP_WAIT_US	200

/* The work itself, out of line: its registers are saved only when it runs,
 * not on every vCPU switch that finds nothing to do (make bench micro). */
static __attribute__((noinline)) uint64_t host_work(uint64_t now)
{
	bool streaming;

	host_irq_poll();	/* hart 0 busy with host work and nothing to run */
	console_flush_stale();
	monitor_poll_input();
	handle_events();
	vmops_poll();
	host_io_poll();		/* host devices without a routed interrupt */
	vm_io_poll();		/* disks whose rate limit held requests back */
	mgmt_poll();
	streaming = snap_save_poll();
	streaming |= snap_load_poll();
	streaming |= mig_send_poll();
	streaming |= mig_recv_poll();
	power_off_if_all_down();
	if (streaming || mgmt_busy())
		return 0;
	if (vmops_pending() || vm_event_pending())
		return now + timebase_hz / 1000000 * OP_WAIT_US;
	/* a stream waiting for the host: hart 0 sleeps meanwhile (a spinning
	 * hart 0 took a host CPU from QEMU's thread that moves the port's
	 * bytes), and the guests on the other harts have the machine
	 * (-icount: its clock) */
	return snap_busy() || mig_busy() ? now + timebase_hz / 1000000 * STREAM_WAIT_US : -1UL;
}

uint64_t host_poll(void)
{
	static uint64_t last;
	uint64_t now = time_now();

	/* the scheduler passes here on every vCPU switch on hart 0: do the work at
	 * most once a millisecond, unless an event or an operation is waiting */
	if (now - last < timebase_hz / 1000 && !vm_event_pending() && !vmops_pending() &&
	    !snap_busy() && !mig_busy() && !mgmt_busy())
		return -1UL;
	last = now;
	return host_work(now);
}
