/* SPDX-License-Identifier: MIT */
/* Round-robin over every VM's vCPUs; one global lock (few harts, few vCPUs).
 * A hart runs a vCPU for a time slice (HS timer), or until it waits (WFI,
 * HSM suspend/stop) or its VM goes down; idle harts sleep in WFI until the
 * earliest guest timer or a kick. */
#include <arch/riscv/csr.h>
#include <atomic.h>
#include <bitops.h>
#include <dirty_limit.h>
#include <hart.h>
#include <host_irq.h>
#include <host_ipi.h>
#include <sched.h>
#include <vm.h>

uint64_t sched_slice_ticks = 50000;	/* 5 ms at QEMU virt's 10 MHz timebase */

static struct spinlock lock = SPINLOCK_INIT;
static unsigned int rr_next;
static volatile unsigned long idle_harts;	/* bitmap of hart indices in WFI */
static volatile unsigned long wake_gen;		/* bumped whenever work may have appeared */
static bool reboots;				/* a VM may be REBOOTING: claim_reboot() looks */
uint64_t (*sched_host_poll)(void);
volatile bool sched_host_turn_wanted;
bool sched_wfi_traps;				/* boot option: every guest WFI exits */
static volatile unsigned long native_wfi_harts;	/* harts whose vCPU has VTW=0 */
static volatile unsigned long fit_word;		/* wake generation << 1 | fit */
static void kick_native_wfi(void);

void sched_arm_slice(void)
{
	csr_write(CSR_STIMECMP, time_now() + sched_slice_ticks);
}

void sched_lock(void)
{
	spin_lock(&lock);
}

void sched_unlock(void)
{
	spin_unlock(&lock);
}

static unsigned int nr_slots(void)
{
	return nr_vms * VM_MAX_VCPUS;
}

/* The vCPU in @slot if its VM is running. A slot being created or destroyed
 * is not looked into at all: its vCPUs may be half set up. Lock held. */
static struct vcpu *slot_vcpu(unsigned int slot)
{
	struct vm *vm = &vms[slot / VM_MAX_VCPUS];
	unsigned int id = slot % VM_MAX_VCPUS;

	if (vm->state != VM_RUNNING)
		return NULL;
	return id < vm->cfg.nr_vcpus ? &vm->vcpus[id] : NULL;
}

/* Caller holds the lock; @v came from slot_vcpu(), so its VM is running. */
static inline __attribute__((always_inline)) bool runnable(const struct vcpu *v, uint64_t now)
{
	if (v->hart >= 0)
		return false;
	if (v->g.hsm.state != VCPU_HSM_STARTED && v->g.hsm.state != VCPU_HSM_SUSPENDED)
		return false;
	if (v->g.hsm.waiting && !vcpu_wake_pending(v, now))
		return false;
	/* last: only a vCPU that would run pays for it */
	return !dirty_limit_holds(&dirty_limit, v->vm, now);
}

/* noinline: its loop, inlined into the exit dispatcher (a slice's end),
 * made every exit there save and restore eight more registers */
__attribute__((noinline)) bool sched_other_runnable(const struct vcpu *self)
{
	uint64_t now = time_now();
	bool any = false;

	spin_lock(&lock);
	for (unsigned int s = 0; s < nr_slots() && !any; s++) {
		struct vcpu *v = slot_vcpu(s);

		any = v && v != self && runnable(v, now);
	}
	spin_unlock(&lock);
	return any;
}

bool vm_off_cpu(const struct vm *vm)
{
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++)
		if (vm->vcpus[i].hart >= 0)
			return false;
	return true;
}

void sched_note_reboot(void)
{
	__atomic_store_n(&reboots, true, __ATOMIC_RELEASE);	/* after the state */
}

/* A rebooting VM is reset by whichever hart finds all its vCPUs off CPU
 * (and, after a try that found host I/O of it in flight, its retry due).
 * A switch looks only when a VM went REBOOTING since a look found none. */
static struct vm *claim_reboot(uint64_t now)
{
	bool waiting = false;

	if (__builtin_expect(!__atomic_load_n(&reboots, __ATOMIC_RELAXED), 1))
		return NULL;
	/* cleared before the scan: a VM going REBOOTING meanwhile sets it again */
	__atomic_store_n(&reboots, false, __ATOMIC_SEQ_CST);
	for (unsigned int i = 0; i < nr_vms; i++) {
		if (vms[i].state != VM_REBOOTING)
			continue;
		if (vm_off_cpu(&vms[i]) && now >= vms[i].reboot_not_before) {
			vms[i].state = VM_RESETTING;	/* nobody schedules it meanwhile */
			__atomic_store_n(&reboots, true, __ATOMIC_RELAXED);	/* others? */
			return &vms[i];
		}
		waiting = true;
	}
	if (waiting)
		__atomic_store_n(&reboots, true, __ATOMIC_RELAXED);
	return NULL;
}

struct vcpu *sched_pick(uint64_t now, struct vm **reboot)
{
	struct hart *h = this_hart();
	struct vcpu *found = NULL;
	unsigned int n = nr_slots(), i;
	bool more = false;

	spin_lock(&lock);
	*reboot = claim_reboot(now);
	for (i = 0; i < n && !found && !*reboot; i++) {
		unsigned int s = (rr_next + i) % n, id = s % VM_MAX_VCPUS;
		struct vm *vm = &vms[s / VM_MAX_VCPUS];
		struct vcpu *v = &vm->vcpus[id];

		if (vm->state != VM_RUNNING || id >= vm->cfg.nr_vcpus) {
			i += VM_MAX_VCPUS - 1 - id;	/* nor any later slot of this VM */
			continue;
		}
		if (runnable(v, now)) {
			found = v;
			v->hart = (int)h->index;
			rr_next = s + 1;
		}
	}
	/* A kick wakes one idle hart. One just woken that finds more work
	 * waiting while a hart sleeps wakes the next one, which does the same:
	 * as many harts wake as there are runnable vCPUs, one IPI each, and
	 * none when there is nothing for them (no herd). Work becomes runnable
	 * only with a kick, so every such chain starts at a hart leaving its
	 * idle wait: a busy hart's pick (a vCPU switch) pays one test. */
	if (__builtin_expect(h->left_idle, 0)) {
		h->left_idle = false;
		if (found && atomic_load(&idle_harts)) {
			/* the slots not looked at yet, from the one after @found on */
			for (unsigned int s = rr_next; i < n && !more; i++, s++) {
				struct vcpu *v = slot_vcpu(s % n);

				more = v && runnable(v, now);	/* (@found is on a hart now) */
			}
		}
	}
	spin_unlock(&lock);
	if (__builtin_expect(more, 0))
		sched_kick_idle();
	return found;
}

void sched_release(struct vcpu *v)
{
	spin_lock(&lock);
	v->hart = -1;
	spin_unlock(&lock);
	/* an interrupt posted while it was leaving found it still on this hart */
	if (v->g.hsm.waiting && v->irq_pending)
		sched_kick_idle();
}

unsigned long sched_wake_gen(void)
{
	return atomic_load(&wake_gen);
}

/* No hart idle: the work may not fit any more (a vCPU started, a VM came
 * up). A hart whose guest may sleep in its own wfi would not see it before
 * its slice ends: this one traps its WFI at once, another is kicked to look
 * (sched_wfi_mode() after its exit); either then waits in place as usual. */
static __attribute__((noinline)) void kick_native_wfi(void)
{
	struct hart *self = this_hart();
	unsigned long others;

	if (self->native_wfi) {	/* a kick from its vCPU's exit: it is loaded */
		csr_set(CSR_HSTATUS, HSTATUS_VTW);
		sched_wfi_mode_off(self);
	}
	others = native_wfi_harts & ~(1UL << self->index);
	if (others)
		host_ipi_send(bit_first(others));
}

void sched_kick_idle(void)
{
	unsigned long idle;

	__atomic_fetch_add(&wake_gen, 1, __ATOMIC_SEQ_CST);
	idle = __atomic_load_n(&idle_harts, __ATOMIC_SEQ_CST);

	if (idle)
		host_ipi_send(bit_first(idle));
	else if (native_wfi_harts)
		kick_native_wfi();
}

/* Can a vCPU be left waiting for a hart? Not while the vCPUs that may run
 * (started or suspended, of running VMs) are no more than the harts: one
 * that becomes runnable finds a hart that holds no vCPU (idle, and kicked).
 * Cached for a wake generation: whatever adds one kicks (sched_pick()). */
static bool vcpus_fit_harts(void)
{
	unsigned long gen = sched_wake_gen() & (~0UL >> 1), word = fit_word;
	unsigned int n = 0;

	if (__builtin_expect(word >> 1 == gen, 1))
		return word & 1;
	spin_lock(&lock);
	for (unsigned int s = 0; s < nr_slots(); s++) {
		struct vcpu *v = slot_vcpu(s);

		n += v && (v->g.hsm.state == VCPU_HSM_STARTED ||
			   v->g.hsm.state == VCPU_HSM_SUSPENDED);
	}
	word = gen << 1 | (n <= nr_harts);
	fit_word = word;
	spin_unlock(&lock);
	return word & 1;
}

/* Its WFI sleeps natively (hstatus.VTW=0) only while no other vCPU can want
 * the hart, hart 0's host work polls nothing, and no CFI re-delivery window
 * is open (it decides what an exit in it means). Called with @v loaded;
 * vcpu_load() left VTW set. */
void sched_wfi_mode(struct hart *h, struct vcpu *v)
{
	bool native = !sched_wfi_traps && !v->lp_window.open && vcpus_fit_harts() &&
		      (h->index || !sched_host_poll || sched_host_poll() == -1UL);

	if (native == h->native_wfi)
		return;
	h->native_wfi = native;
	if (native) {
		atomic_or(&native_wfi_harts, 1UL << h->index);
		csr_clear(CSR_HSTATUS, HSTATUS_VTW);
	} else {
		csr_set(CSR_HSTATUS, HSTATUS_VTW);
		__atomic_fetch_and(&native_wfi_harts, ~(1UL << h->index), __ATOMIC_SEQ_CST);
	}
}

/* The vCPU leaves the hart: the next one's load sets VTW again. */
void sched_wfi_mode_off(struct hart *h)
{
	if (!h->native_wfi)
		return;
	h->native_wfi = false;
	__atomic_fetch_and(&native_wfi_harts, ~(1UL << h->index), __ATOMIC_SEQ_CST);
}

void sched_want_host_turn(void)
{
	__atomic_store_n(&sched_host_turn_wanted, true, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&wake_gen, 1, __ATOMIC_SEQ_CST);	/* an idle hart 0 does not sleep */
	if (this_hart()->index != 0)
		host_ipi_send(0);
}

/* As sched_kick_idle(): a hart 0 between its host turn and its wfi sees the
 * new generation and does not sleep. */
void sched_kick_host(void)
{
	__atomic_fetch_add(&wake_gen, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&idle_harts, __ATOMIC_SEQ_CST) & 1)
		host_ipi_send(0);
}

/* Earliest host time at which a waiting vCPU's own timer fires. */
static uint64_t next_guest_deadline(uint64_t now)
{
	uint64_t best = now + 10 * sched_slice_ticks;

	spin_lock(&lock);
	for (unsigned int s = 0; s < nr_slots(); s++) {
		struct vcpu *v = slot_vcpu(s);

		if (v && v->vm->state == VM_RUNNING && v->g.hsm.waiting && v->hart < 0) {
			/* in guest time: htimedelta may be negative */
			uint64_t t = vcpu_timer_deadline(v, now);

			if (t < best)
				best = t;
		}
	}
	if (dirty_limit.vm && dirty_limit.held_until > now && dirty_limit.held_until < best)
		best = dirty_limit.held_until;	/* the end of a paced VM's hold */
	for (unsigned int i = 0; i < nr_vms; i++)
		if (vms[i].state == VM_REBOOTING && vms[i].reboot_not_before > now &&
		    vms[i].reboot_not_before < best)
			best = vms[i].reboot_not_before;	/* its retry */
	spin_unlock(&lock);
	return best;
}

void sched_reboot_later(struct vm *vm, uint64_t at)
{
	spin_lock(&lock);
	vm->reboot_not_before = at;
	vm->state = VM_REBOOTING;
	sched_note_reboot();
	spin_unlock(&lock);
	sched_kick_idle();	/* an idle hart sleeps until then, not longer */
}

/* For a vCPU that waits on this hart: 0 if another vCPU is runnable, else
 * the earliest host time anything off CPU needs a hart (next_guest_deadline()
 * in the same scan). */
static uint64_t wait_deadline(const struct vcpu *self, uint64_t now)
{
	uint64_t best = now + 10 * sched_slice_ticks;

	spin_lock(&lock);
	for (unsigned int s = 0; s < nr_slots() && best; s++) {
		struct vcpu *v = slot_vcpu(s);

		if (!v || v == self)
			continue;
		if (runnable(v, now)) {
			best = 0;
		} else if (v->g.hsm.waiting && v->hart < 0) {
			uint64_t t = vcpu_timer_deadline(v, now);

			if (t < best)
				best = t;
		}
	}
	if (best && dirty_limit.vm && dirty_limit.held_until > now && dirty_limit.held_until < best)
		best = dirty_limit.held_until;
	for (unsigned int i = 0; i < nr_vms && best; i++)
		if (vms[i].state == VM_REBOOTING)	/* claim_reboot() is the pick's */
			best = 0;
	spin_unlock(&lock);
	return best;
}

bool sched_wait_loaded(struct hart *h, struct vcpu *v, uint64_t not_after)
{
	unsigned long gen = sched_wake_gen();
	uint64_t now = time_now(), deadline = wait_deadline(v, now), own;

	if (!deadline || !not_after)
		return false;
	own = vcpu_timer_deadline_live(v, now);
	if (deadline > own)
		deadline = own;
	if (deadline > not_after)
		deadline = not_after;
	if (h->index == 0 && host_irq_poll())
		return false;	/* as in sched_idle() */
	atomic_or(&idle_harts, 1UL << h->index);	/* a kick for other work finds it */
	csr_write(CSR_STIMECMP, deadline);
	/* its own wake-ups need no test here: a posted interrupt comes with an
	 * IPI to this hart (vcpu_kick(): it is on it), which leaves SSIP pending
	 * if it came first (SEIP on the AIA machine: host_ipi.h), and a timer
	 * due already is in stimecmp */
	if (atomic_load(&wake_gen) == gen &&
	    !(csr_read(CSR_SIP) & (MIP_SSIP | MIP_STIP | MIP_SEIP)))
		asm volatile("wfi");
	h->idle_wakeups++;
	__atomic_fetch_and(&idle_harts, ~(1UL << h->index), __ATOMIC_SEQ_CST);
	csr_write(CSR_STIMECMP, -1UL);
	host_ipi_clear();
	if (atomic_load(&wake_gen) == gen)
		return true;
	h->left_idle = true;	/* its pick passes the wake-up on, as after sched_idle() */
	return false;
}

/* Nothing to run (as of @gen, read before the last look at the run queue).
 * The idle bit is set before checking whether anything became runnable since
 * that look: whoever makes a vCPU runnable bumps wake_gen first and then
 * reads the idle bits, so either we see the new generation and do not sleep,
 * or the waker sees our bit and kicks us (and a kick that lands before the
 * wfi makes it return at once). */
void sched_idle(struct hart *h, uint64_t now, unsigned long gen, uint64_t not_after)
{
	uint64_t deadline = next_guest_deadline(now);	/* once: it scans every slot */

	if (deadline > not_after)
		deadline = not_after;
	/* hart 0's host interrupts: one may be what woke the last wfi, or one
	 * that came after the host services' last look (a stream's port: room,
	 * bytes); its handler only acknowledges it, so the services look again
	 * before the hart sleeps, or that wake-up would be lost (a stream then
	 * waited its 100 us for nothing) */
	if (h->index == 0 && host_irq_poll())
		return;
	atomic_or(&idle_harts, 1UL << h->index);
	csr_write(CSR_STIMECMP, deadline);
	/* the last vCPU's deadline, left in the CSR, keeps VSTIP pending (Sstc),
	 * and a pending interrupt makes wfi return at once: the hart would spin
	 * (here, not in vcpu_put: a switch to another vCPU loads its own) */
	csr_write(CSR_VSTIMECMP, -1UL);
	if (atomic_load(&wake_gen) == gen &&
	    !(csr_read(CSR_SIP) & (MIP_SSIP | MIP_STIP | MIP_SEIP)))
		asm volatile("wfi");
	/* counted slept or not: a hart whose deadline is always due already
	 * never reaches the wfi, and must show as spinning too */
	h->idle_wakeups++;
	__atomic_fetch_and(&idle_harts, ~(1UL << h->index), __ATOMIC_SEQ_CST);
	h->left_idle = true;
	csr_write(CSR_STIMECMP, -1UL);
	host_ipi_clear();
}
