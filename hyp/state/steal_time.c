/* SPDX-License-Identifier: MIT */
/* SBI STA steal time: the time a vCPU could run but had no hart, written into
 * the record it registered each time it is loaded. A vCPU counts as ready
 * from the moment it left its hart still runnable (its slice ended while
 * another vCPU waited), or, if it left to wait for an interrupt (WFI, HSM
 * suspend), from the moment one it enabled became pending: waiting for an
 * interrupt is idle time, not steal. */
#include <arch/riscv/encoding.h>
#include <atomic.h>
#include <guest_mem.h>
#include <guest_time.h>
#include <hart.h>
#include <steal_time.h>
#include <vm.h>

/* the record is little-endian; so is every host Carapace runs on */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "STA record needs a little-endian host");

#define NO_TIME	(~0ULL)

uint64_t steal_wait_ticks(uint64_t off_at, uint64_t ready_at, uint64_t timer_at, uint64_t now)
{
	uint64_t from = ready_at ? ready_at : NO_TIME;

	if (timer_at <= now && timer_at < from)
		from = timer_at;
	if (from == NO_TIME)
		return 0;	/* nothing made it ready: it was idle */
	if (from < off_at)
		from = off_at;	/* an old deadline: ready only since it left */
	return now > from ? now - from : 0;
}

uint64_t steal_ticks_to_ns(uint64_t ticks, uint64_t hz)
{
	/* whole seconds apart, so ticks * 1e9 cannot overflow for any wait */
	return ticks / hz * 1000000000ULL + ticks % hz * 1000000000ULL / hz;
}

void steal_record_add(volatile struct sbi_sta_record *r, uint64_t ns)
{
	if (ns) {
		/* odd while steal changes, even after; forced odd in case the
		 * guest wrote the field (the spec lets the data go bad then,
		 * but the protocol still ends even) */
		uint32_t seq = (r->sequence + 1) | 1;

		r->sequence = seq;
		__atomic_thread_fence(__ATOMIC_RELEASE);
		r->steal = r->steal + ns;
		__atomic_thread_fence(__ATOMIC_RELEASE);
		r->sequence = seq + 1;
	}
	r->preempted = 0;	/* must be 0 before the vCPU runs */
}

static volatile struct sbi_sta_record *record(struct vcpu *v)
{
	/* marks the page dirty for snapshots and migration like any guest write;
	 * NULL only while a live snapshot cannot copy the chunk yet */
	return vm_gpa_to_hva(v->vm, v->g.sta.shmem, SBI_STA_RECORD_SIZE, true);
}

/* Host time at which @v's own timer fired by @now, if it has it enabled; else
 * none. Compared in guest time: htimedelta is negative after a restore onto a
 * host whose clock is ahead, and a timer at -1 (none) must never count. */
static uint64_t timer_at(const struct vcpu *v, uint64_t now)
{
	if (!((v->g.csr.vsie << 1) & MIP_VSTIP))
		return NO_TIME;
	return guest_timer_fired_at(v->g.csr.vstimecmp, v->vm->htimedelta, now);
}

void steal_vcpu_out(struct vcpu *v)
{
	uint64_t now = time_now();
	/* a vCPU of a pausing VM is ready too: steal_vm_resumed() moves its
	 * start to the resume */
	bool ready = v->g.hsm.state == VCPU_HSM_STARTED && !v->g.hsm.waiting;
	volatile struct sbi_sta_record *r;

	v->steal.off_at = now;
	v->steal.ready_at = ready ? now : 0;
	/* steal_vcpu_in() runs as posted work before its next entry: the
	 * entry path tests for posted work anyway */
	atomic_or(&v->requests, VCPU_REQ_STEAL);
	/* preempted is advisory (MAY); a VM that is not running gets no writes */
	if (ready && v->vm->state == VM_RUNNING && (r = record(v)))
		r->preempted = 1;
}

void steal_vcpu_in(struct vcpu *v)
{
	uint64_t now = time_now(), ticks, ns;
	volatile struct sbi_sta_record *r;

	if (!v->g.sta.enabled)
		return;		/* reset since it was posted: nothing to report to */
	ticks = steal_wait_ticks(v->steal.off_at, v->steal.ready_at, timer_at(v, now), now);
	ns = steal_ticks_to_ns(ticks, timebase_hz);
	v->steal.total_ns += ns;
	ns += v->steal.unreported_ns;
	r = record(v);
	v->steal.ready_at = 0;
	v->steal.off_at = NO_TIME;	/* running: nothing to count until it leaves */
	if (!r) {
		v->steal.unreported_ns = ns;	/* the next load reports it */
		return;
	}
	v->steal.unreported_ns = 0;
	steal_record_add(r, ns);
}

void steal_note_wake(struct vcpu *v, unsigned long bits)
{
	/* racy on purpose: a stamp that lands as the vCPU is picked is replaced
	 * when it next leaves its hart */
	if (v->g.hsm.waiting && v->hart < 0 && !v->steal.ready_at &&
	    (bits & (v->g.csr.vsie << 1) & VS_IRQ_MASK))
		v->steal.ready_at = time_now();
}

void steal_vcpu_reset(struct vcpu *v)
{
	v->steal.off_at = NO_TIME;	/* no steal before it has run once */
	v->steal.ready_at = 0;
	v->steal.unreported_ns = 0;
}

void steal_vm_resumed(struct vm *vm, uint64_t now)
{
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		if (v->steal.off_at != NO_TIME)
			v->steal.off_at = now;
		if (v->steal.ready_at)
			v->steal.ready_at = now;
	}
}
