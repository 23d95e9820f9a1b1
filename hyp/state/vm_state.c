/* SPDX-License-Identifier: MIT */
/* VM state changes any part of the hypervisor may ask for (a fatal exit, SRST,
 * the operator). Each one takes the scheduler lock, moves the state, kicks the
 * VM's vCPUs off their harts and posts an event; the host services (hart 0)
 * print, reply and free later. Nothing here prints or waits. */
#include <arch/riscv/encoding.h>
#include <stdarg.h>
#include <string.h>
#include <errno.h>
#include <hart.h>
#include <imsic_files.h>
#include <printf.h>
#include <sbi_client.h>
#include <sched.h>
#include <steal_time.h>
#include <vm.h>

uint64_t vm_exits(const struct vm *vm)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		n += vcpu_exits(&vm->vcpus[i]);
	return n;
}

static void vm_count_imsic(const struct vimsic_live *f, struct vm_counts *c)
{
	c->imsic_sw_stores += f->sw_stores;
	c->imsic_csr_exits += f->csr_exits;
	c->imsic_moves += f->moves;
	c->imsic_evictions += f->evictions;
	c->imsic_sgei += f->sgei;
}

void vm_count(const struct vm *vm, struct vm_counts *c)
{
	*c = (struct vm_counts){ .exits = vm_exits(vm), .mmio = vm->stats.mmio,
				 .injected = vm->stats.injected };
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		const struct vcpu_stats *s = &vm->vcpus[i].stats;

		c->sbi += s->by_cause[EXC_ECALL_VS];
		c->guest_page_faults += s->by_cause[EXC_LOAD_GUEST_PAGE_FAULT] +
					s->by_cause[EXC_STORE_GUEST_PAGE_FAULT] +
					s->by_cause[EXC_INST_GUEST_PAGE_FAULT];
		c->virtual_insn += s->by_cause[EXC_VIRTUAL_INST];
		c->sw_check += s->by_cause[EXC_SW_CHECK];
		c->host_irq += s->irq_exits;
		c->wfi += s->wfi;
		c->wfi_in_place += s->wfi_in_place;
		c->misaligned_emulated += s->misaligned_emulated;
		c->cfi_lp += vm->vcpus[i].cfi_stats.swcheck_lp;
		c->cfi_ss += vm->vcpus[i].cfi_stats.swcheck_ss;
		vm_count_imsic(&vm->vcpus[i].imsic, c);
		for (unsigned int k = 0; k < VCPU_EXIT_CAUSES; k++)
			c->by_cause[k] += s->by_cause[k];
	}
	c->cfi_lp += vm->stats.cfi_lp_earlier;
	c->cfi_ss += vm->stats.cfi_ss_earlier;
}

struct vm *vm_find(const char *name)
{
	for (unsigned int i = 0; i < nr_vms; i++)
		if (vm_slot_used(&vms[i]) && !strcmp(vms[i].cfg.name, name))
			return &vms[i];
	return NULL;
}

static void kick_all(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		vcpu_kick(&vm->vcpus[i]);
}

static bool goes_on(enum vm_state s)
{
	return s != VM_EMPTY && s != VM_DOWN && s != VM_STOPPING && s != VM_DESTROYING;
}

/* Claim the right to take @vm down; false if it is already going. */
static bool claim_down(struct vm *vm, bool failed, const char *reason)
{
	bool claimed;

	sched_lock();
	claimed = goes_on(vm->state);
	if (claimed) {
		vm->state = VM_STOPPING;
		vm->failed = failed;
		memcpy(vm->reason, reason, sizeof(vm->reason));
		vm->reason[sizeof(vm->reason) - 1] = '\0';
	}
	sched_unlock();
	if (claimed) {
		kick_all(vm);
		vm_event_post(vm, VM_EV_DOWN);
	}
	return claimed;
}

void vm_stop(struct vm *vm, const char *fmt, ...)
{
	char msg[VM_REASON_LEN];
	int n;
	va_list ap;

	n = snprintf(msg, sizeof(msg), "stopped: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	claim_down(vm, true, msg);
}

/* One state change the operator or the guest asks for: under the scheduler
 * lock @move changes @vm if its state allows (true); then, outside the lock,
 * @then tells the harts (the VM's vCPUs kicked off, or an idle hart woken to
 * pick it up). -HYP_EBUSY, nothing changed, if the state did not allow it. */
static int transition(struct vm *vm, bool (*move)(struct vm *vm), void (*then)(struct vm *vm))
{
	bool moved;

	sched_lock();
	moved = move(vm);
	sched_unlock();
	if (!moved)
		return -HYP_EBUSY;
	then(vm);
	return 0;
}

static void wake_idle_hart(struct vm *vm)
{
	(void)vm;
	sched_kick_idle();
}

static bool running_to_rebooting(struct vm *vm)
{
	if (vm->state != VM_RUNNING)
		return false;
	vm->reboot_not_before = 0;	/* at once, once off CPU */
	vm->state = VM_REBOOTING;
	sched_note_reboot();
	return true;
}

static void reboot_asked(struct vm *vm)
{
	kick_all(vm);
	vm_event_post(vm, VM_EV_REBOOT);
}

void vm_shutdown(struct vm *vm, bool reboot, bool failure)
{
	if (reboot)
		transition(vm, running_to_rebooting, reboot_asked);
	else
		claim_down(vm, failure, failure ? "shut down (system failure)" : "shut down");
}

static bool running_to_pausing(struct vm *vm)
{
	if (vm->state != VM_RUNNING)
		return false;
	vm->state = VM_PAUSING;
	return true;
}

int vm_request_pause(struct vm *vm)
{
	return transition(vm, running_to_pausing, kick_all);
}

static bool paused_to_running(struct vm *vm)
{
	if (vm->state != VM_PAUSED)
		return false;
	steal_vm_resumed(vm, time_now());	/* before any hart can pick it */
	vm->state = VM_RUNNING;
	return true;
}

int vm_resume(struct vm *vm)
{
	return transition(vm, paused_to_running, wake_idle_hart);
}

bool vm_pause_settle(struct vm *vm)
{
	bool paused;

	sched_lock();
	/* a PAUSED VM holds no guest file: its IMSIC state is all in memory */
	if (vm->state == VM_PAUSING && vm_off_cpu(vm) && imsic_files_vm_released(vm))
		vm->state = VM_PAUSED;
	paused = vm->state == VM_PAUSED;
	sched_unlock();
	return paused;
}

static bool pause_to_running(struct vm *vm)
{
	if (vm->state != VM_PAUSING && vm->state != VM_PAUSED)
		return false;
	/* a vCPU still leaving its hart simply stays: RUNNING again */
	steal_vm_resumed(vm, time_now());
	vm->state = VM_RUNNING;
	return true;
}

int vm_unpause(struct vm *vm)
{
	return transition(vm, pause_to_running, wake_idle_hart);
}

/* the run loop resumes a SUSPENDED vCPU that no longer waits */
static bool system_suspend_to_awake(struct vm *vm)
{
	bool woken = false;

	for (unsigned int i = 0; vm->state == VM_RUNNING && i < vm->cfg.nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		if (v->g.hsm.system && v->g.hsm.state == VCPU_HSM_SUSPENDED && v->g.hsm.waiting) {
			v->g.hsm.waiting = false;
			v->g.hsm.system = false;	/* reads "running" at once */
			woken = true;
		}
	}
	return woken;
}

int vm_wake(struct vm *vm)
{
	return transition(vm, system_suspend_to_awake, wake_idle_hart);
}

static bool to_destroying(struct vm *vm)
{
	if (vm->state == VM_EMPTY || vm->state == VM_DESTROYING || vm->state == VM_RESETTING)
		return false;
	vm->state = VM_DESTROYING;
	return true;
}

int vm_request_destroy(struct vm *vm)
{
	return transition(vm, to_destroying, kick_all);
}
