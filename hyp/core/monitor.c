/* SPDX-License-Identifier: MIT */
/* Monitor: switch console focus, list VMs and their vCPUs, per-VM exit counters
 * and CFI state. Runs on hart 0 from the console poll; reads other harts'
 * state without stopping them, so figures can be a time slice old. */
#include <arch/riscv/encoding.h>
#include <console.h>
#include <monitor.h>
#include <vm.h>

static unsigned int focus;

unsigned int monitor_focus(void)
{
	return focus;
}

static const char *vm_state_name(const struct vm *vm)
{
	switch (vm->state) {
	case VM_RUNNING: return "running";
	case VM_REBOOTING:
	case VM_RESETTING: return "rebooting";
	case VM_STOPPING: return "stopping";
	default: return vm->failed ? "stopped (failed)" : "shut down";
	}
}

static const char *hsm_name(const struct vcpu *v)
{
	if (v->hsm == VCPU_HSM_STOPPED)
		return "stopped";
	if (v->hsm == VCPU_HSM_SUSPENDED)
		return "suspended";
	return v->waiting ? "idle (wfi)" : v->hart >= 0 ? "running" : "runnable";
}

void monitor_print_vcpu_cfi(const struct vcpu *v)
{
	const struct cfi_stats *cs = &v->cfi_stats;

	pr_info("  vm %s vcpu %u: shadow stack %s%s, ssp=0x%lx, landing pads %s%s, "
		"ELP=%lu, senvcfg=0x%lx",
		v->vm->name, v->id, v->fwft.ss_value ? "on" : "off",
		v->fwft.ss_locked ? " (locked)" : "", v->csr.ssp,
		v->fwft.lp_value ? "on" : "off", v->fwft.lp_locked ? " (locked)" : "",
		(v->ctx.sstatus & SR_SPELP) ? 1UL : 0UL, v->csr.senvcfg);
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

		pr_info("%c%u %-15s %-17s %u vcpu(s), %lu MiB, boots %u, cfi policy %s",
			i == focus ? '*' : ' ', i, vm->name, vm_state_name(vm), vm->nr_vcpus,
			(unsigned long)(vm->ram_size >> 20), vm->boot_count,
			(const char *[]){ "trap", "delegate", "strict", "off" }[vm->cfi_policy]);
		for (unsigned int c = 0; c < vm->nr_vcpus; c++)
			pr_info("    vcpu %u: %s, pc 0x%lx", c, hsm_name(&vm->vcpus[c]),
				vm->vcpus[c].ctx.sepc);
	}
}

static void show_stats(void)
{
	for (unsigned int i = 0; i < nr_vms; i++) {
		const struct vm *vm = &vms[i];
		uint64_t ecall = 0, gpf = 0, vinsn = 0, irq = 0, sw = 0, wfi = 0;

		for (unsigned int c = 0; c < vm->nr_vcpus; c++) {
			const struct vcpu_stats *s = &vm->vcpus[c].stats;

			ecall += s->by_cause[EXC_ECALL_VS];
			gpf += s->by_cause[EXC_LOAD_GUEST_PAGE_FAULT] +
			       s->by_cause[EXC_STORE_GUEST_PAGE_FAULT] +
			       s->by_cause[EXC_INST_GUEST_PAGE_FAULT];
			vinsn += s->by_cause[EXC_VIRTUAL_INST];
			sw += s->by_cause[EXC_SW_CHECK];
			irq += s->irq_exits;
			wfi += s->wfi;
		}
		pr_info("vm %s: exits %lu (sbi %lu, guest-page faults %lu, virtual insn %lu, "
			"host irq %lu, sw-check %lu), mmio %lu, wfi %lu, injected %lu",
			vm->name, (unsigned long)vm_exits(vm), (unsigned long)ecall,
			(unsigned long)gpf, (unsigned long)vinsn, (unsigned long)irq,
			(unsigned long)sw, (unsigned long)vm->stats.mmio, (unsigned long)wfi,
			(unsigned long)vm->stats.injected);
	}
}

static void show_cfi(void)
{
	for (unsigned int i = 0; i < nr_vms; i++)
		for (unsigned int c = 0; c < vms[i].nr_vcpus; c++)
			monitor_print_vcpu_cfi(&vms[i].vcpus[c]);
}

void monitor_open(void)
{
	pr_info("monitor: 0-%u focus a VM, l list, s stats, c CFI state, Enter/q leave",
		nr_vms ? nr_vms - 1 : 0);
}

bool monitor_key(int c)
{
	if (c >= '0' && c < '0' + (int)nr_vms) {
		focus = (unsigned int)(c - '0');
		pr_info("console input -> vm %s", vms[focus].name);
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
	case 'q':
	case '\r':
	case '\n':
	case MONITOR_ESCAPE:
		pr_info("monitor closed; input -> vm %s", nr_vms ? vms[focus].name : "-");
		return false;
	default:
		monitor_open();
		return true;
	}
}
