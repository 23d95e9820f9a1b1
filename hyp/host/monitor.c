/* SPDX-License-Identifier: MIT */
/* Monitor: switch console focus, list VMs and their vCPUs, per-VM exit counters
 * and CFI state, pause/resume/destroy the focused VM (the same operations as
 * the management channel, hyp/host/vmops via services.c). Runs on hart 0 from the console poll; reads other harts'
 * state without stopping them, so figures can be a time slice old. */
#include <arch/riscv/encoding.h>
#include <console.h>
#include <hart.h>
#include <monitor.h>
#include <uart.h>
#include <vm.h>
#include <vmops.h>

static unsigned int focus;

unsigned int monitor_focus(void)
{
	return focus;
}

static const char *hsm_name(const struct vcpu *v)
{
	if (v->g.hsm.state == VCPU_HSM_STOPPED)
		return "stopped";
	if (v->g.hsm.state == VCPU_HSM_SUSPENDED)
		return v->g.hsm.system ? "suspended (system)" : "suspended";
	return v->g.hsm.waiting ? "idle (wfi)" : v->hart >= 0 ? "running" : "runnable";
}

void monitor_print_vcpu_cfi(struct vcpu *v, uint64_t until)
{
	const struct cfi_stats *cs = &v->cfi_stats;

	vcpu_sync_state(v, until);	/* on a hart since it changed them: CSRs only */
	pr_info("  vm %s vcpu %u: shadow stack %s%s, ssp=0x%lx, landing pads %s%s, "
		"ELP=%lu, senvcfg=0x%lx",
		v->vm->cfg.name, v->id, v->g.fwft.ss_value ? "on" : "off",
		v->g.fwft.ss_locked ? " (locked)" : "", v->g.csr.ssp,
		v->g.fwft.lp_value ? "on" : "off", v->g.fwft.lp_locked ? " (locked)" : "",
		cfi_vcpu_elp(v) ? 1UL : 0UL, v->g.csr.senvcfg);
	if (cs->swcheck_lp || cs->swcheck_ss)
		pr_info("    violations: landing pad %lu, shadow stack %lu; last at pc 0x%lx "
			"(tval %lu, from %s)",
			(unsigned long)cs->swcheck_lp, (unsigned long)cs->swcheck_ss,
			(unsigned long)cs->last_pc, (unsigned long)cs->last_tval,
			cs->last_from_vs ? "VS (guest kernel)" : "VU (guest user)");
}

static void list_vms(void)
{
	for (unsigned int i = 0; i < nr_vms; i++) {
		const struct vm *vm = &vms[i];

		if (!vm_slot_used(vm))
			continue;
		pr_info("%c%u %-15s %-17s %u vcpu(s), %lu MiB, boots %u, cfi policy %s",
			i == focus ? '*' : ' ', i, vm->cfg.name, vm_state_name(vm), vm->cfg.nr_vcpus,
			(unsigned long)(vm->cfg.ram_size >> 20), vm->cfg.boot_count,
			(const char *[]){ "trap", "delegate", "strict", "off" }[vm->cfg.cfi_policy]);
		if (vm_migration_word(vm))
			pr_info("    migration %s: %s", vm_migration_word(vm),
				vm->mig_unconfirmed == VM_MIG_LEFT ?
				"the destination may run it: destroy this copy if it does, "
				"resume it if not" :
				"the source may still hold a paused copy: destroy that one");
		for (unsigned int c = 0; c < vm->cfg.nr_vcpus; c++)
			pr_info("    vcpu %u: %s, pc 0x%lx", c, hsm_name(&vm->vcpus[c]),
				vm->vcpus[c].g.ctx.sepc);
	}
}

static void show_stats(void)
{
	struct vm_counts c;

	for (unsigned int i = 0; i < nr_vms; i++) {
		const struct vm *vm = &vms[i];

		if (!vm_slot_used(vm))
			continue;
		vm_count(vm, &c);
		pr_info("vm %s: exits %lu (sbi %lu, guest-page faults %lu, virtual insn %lu, "
			"host irq %lu, sw-check %lu), mmio %lu, wfi %lu, injected %lu",
			vm->cfg.name, (unsigned long)c.exits, (unsigned long)c.sbi,
			(unsigned long)c.guest_page_faults, (unsigned long)c.virtual_insn,
			(unsigned long)c.host_irq, (unsigned long)c.sw_check, (unsigned long)c.mmio,
			(unsigned long)c.wfi, (unsigned long)c.injected);
	}
}

static void show_cfi(void)
{
	/* one deadline for every vCPU shown: hart 0 waits ~10 ms at most */
	uint64_t until = time_now() + timebase_hz * VCPU_SYNC_STATE_MS / 1000;

	for (unsigned int i = 0; i < nr_vms; i++)
		for (unsigned int c = 0; c < vms[i].cfg.nr_vcpus; c++)
			monitor_print_vcpu_cfi(&vms[i].vcpus[c], until);
}

void monitor_open(void)
{
	pr_info("monitor: 0-%u focus a VM, l list, s stats, c CFI state, p pause, r resume, "
		"w wake, X destroy (focused VM), Enter/q leave", nr_vms ? nr_vms - 1 : 0);
}

static void op_done(void *ctx, struct vm *vm, uint64_t result)
{
	(void)ctx;
	(void)vm;
	(void)result;	/* services.c already said "paused" / "destroyed" */
}

/* p, r, w, X: the focused VM, through the same operations as carapace-ctl. */
static void lifecycle_key(int c)
{
	struct vm *vm = &vms[focus];
	int rc;

	if (focus >= nr_vms || !vm_slot_used(vm)) {
		pr_info("monitor: no VM in slot %u", focus);
		return;
	}
	if (c == 'p')
		rc = vmop_pause(vm, op_done, NULL);
	else if (c == 'r')
		rc = vmop_resume(vm);
	else if (c == 'w')
		rc = vmop_wake(vm);	/* a guest-suspended VM (SBI SUSP) */
	else
		rc = vmop_destroy(vm, op_done, NULL);
	if (rc) {
		enum vmop op = c == 'p' ? VMOP_PAUSE : c == 'r' ? VMOP_RESUME :
			       c == 'w' ? VMOP_WAKE : VMOP_DESTROY;
		const char *why = vmop_refusal(vm, op);

		pr_info("monitor: vm %s is %s: cannot %s it now%s%s", vm->cfg.name,
			vm_state_name(vm),
			c == 'p' ? "pause" : c == 'r' ? "resume" : c == 'w' ? "wake" : "destroy",
			why ? ": " : "", why ? why : "");
	}
	else if (c == 'r' || c == 'w')
		pr_info("vm %s: %s", vm->cfg.name, c == 'r' ? "resumed" : "woken");
}

bool monitor_key(int c)
{
	if (c >= '0' && c < '0' + (int)nr_vms) {
		focus = (unsigned int)(c - '0');
		pr_info("console input -> vm %s", vms[focus].cfg.name);
		return false;
	}
	switch (c) {
	case 'l':
		list_vms();
		return true;
	case 's':
		show_stats();
		return true;
	case 'c':
		show_cfi();
		return true;
	case 'p':
	case 'r':
	case 'w':
	case 'X':
		lifecycle_key(c);
		return true;
	case 'q':
	case '\r':
	case '\n':
	case MONITOR_ESCAPE:
		pr_info("monitor closed; input -> vm %s", nr_vms ? vms[focus].cfg.name : "-");
		return false;
	default:
		monitor_open();
		return true;
	}
}

/* Host input goes to the focused VM; the escape key opens the monitor. */
void monitor_poll_input(void)
{
	static bool in_monitor;
	int c;

	if (!nr_vms)
		return;
	while ((c = uart_getc()) >= 0) {
		struct vm *vm;

		if (in_monitor) {
			in_monitor = monitor_key(c);
			continue;
		}
		if (c == MONITOR_ESCAPE) {
			in_monitor = true;
			monitor_open();
			continue;
		}
		vm = &vms[monitor_focus()];
		if (vm->state != VM_EMPTY) {
			char ch = (char)c;

			vuart_input(vm, &ch, 1);	/* a full FIFO drops it, as a UART would */
		}
	}
}
