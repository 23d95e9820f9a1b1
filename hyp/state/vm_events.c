/* SPDX-License-Identifier: MIT */
/* The events the VM machinery posts for the host services on hart 0 (a VM
 * went down, a VM reboots): a ring, drained by host_poll(). Posting never
 * blocks and never waits for hart 0, so the ring can fill while hart 0 does
 * not drain it: a VM can reboot any number of times meanwhile (whichever
 * hart finds it resets it). DOWN, which the VM's state depends on (STOPPING
 * until hart 0 handles it), is never dropped: only hart 0 moves a VM out of
 * STOPPING, so at most one DOWN per VM slot is ever queued, and VM_MAX
 * entries are kept for them. A REBOOT notice (a console line) finding the
 * rest full is dropped and counted (vm_events_dropped()): the host services
 * say how many were lost, and `stats` reports it (docs/management.md). */
#include <atomic.h>
#include <hart.h>
#include <host_ipi.h>
#include <vm.h>

#define EVENTS 32
_Static_assert(EVENTS > VM_MAX, "room for every VM's DOWN and some REBOOTs");
static struct spinlock ev_lock = SPINLOCK_INIT;
static struct { struct vm *vm; enum vm_event_kind kind; } ev_ring[EVENTS];
static unsigned int ev_head, ev_tail;
static uint64_t ev_dropped;

void vm_event_post(struct vm *vm, enum vm_event_kind kind)
{
	unsigned int room = kind == VM_EV_DOWN ? EVENTS : EVENTS - VM_MAX;

	spin_lock(&ev_lock);
	if (ev_head - ev_tail < room) {
		ev_ring[ev_head % EVENTS].vm = vm;
		ev_ring[ev_head % EVENTS].kind = kind;
		ev_head++;
	} else {
		ev_dropped++;
	}
	spin_unlock(&ev_lock);
	/* the host services run on hart 0: wake it if it sleeps */
	if (this_hart()->index != 0)
		host_ipi_send(0);
}

bool vm_event_pending(void)
{
	return atomic_load(&ev_head) != atomic_load(&ev_tail);
}

bool vm_event_take(struct vm **vm, enum vm_event_kind *kind)
{
	bool got = false;

	spin_lock(&ev_lock);
	if (ev_tail != ev_head) {
		*vm = ev_ring[ev_tail % EVENTS].vm;
		*kind = ev_ring[ev_tail % EVENTS].kind;
		ev_tail++;
		got = true;
	}
	spin_unlock(&ev_lock);
	return got;
}

uint64_t vm_events_dropped(void)
{
	return atomic_load(&ev_dropped);
}
