/* SPDX-License-Identifier: MIT */
/* hyp/state/vm_events.c: the event ring hart 0 drains. The review's finding:
 * a full ring dropped events silently; a lost DOWN left its VM STOPPING for
 * ever. Now DOWN always has room, a REBOOT notice that finds none is counted,
 * and the order of what was queued is kept. */
#include <string.h>
#include <hart.h>
#include <host_ipi.h>
#include <vm.h>
#include "test.h"

struct hart harts[HART_MAX];
struct hart *test_this_hart = &harts[1];
static unsigned int ipis;

void host_ipi_send(unsigned int hart)
{
	(void)hart;
	ipis++;
}

static struct vm fake[VM_MAX];

static unsigned int drain(struct vm **vm_out, enum vm_event_kind *kind_out, unsigned int max)
{
	unsigned int n = 0;
	struct vm *vm;
	enum vm_event_kind kind;

	while (vm_event_take(&vm, &kind)) {
		if (n < max) {
			vm_out[n] = vm;
			kind_out[n] = kind;
		}
		n++;
	}
	return n;
}

/* One binary, one ring: every test leaves it empty, and counts drops as a
 * difference. */
TEST(vm_events_down_never_dropped_reboots_counted)
{
	uint64_t dropped0 = vm_events_dropped();
	struct vm *got[64];
	enum vm_event_kind kinds[64];
	unsigned int n;

	harts[1].index = 1;	/* posting from hart 1 */
	ipis = 0;
	/* hart 0 busy: a VM rebooting in a loop fills the ring */
	for (unsigned int i = 0; i < 40; i++)
		vm_event_post(&fake[0], VM_EV_REBOOT);
	EXPECT_TRUE(vm_event_pending());
	EXPECT_EQ(vm_events_dropped() - dropped0, 40 - (32 - VM_MAX));
	/* every VM then goes down: each DOWN still finds room */
	for (unsigned int i = 0; i < VM_MAX; i++)
		vm_event_post(&fake[i], VM_EV_DOWN);
	EXPECT_EQ(vm_events_dropped() - dropped0, 40 - (32 - VM_MAX));
	n = drain(got, kinds, 64);
	EXPECT_EQ(n, 32);
	for (unsigned int i = 0; i < 32 - VM_MAX; i++)
		EXPECT_EQ(kinds[i], VM_EV_REBOOT);
	for (unsigned int i = 0; i < VM_MAX; i++) {
		EXPECT_EQ(kinds[32 - VM_MAX + i], VM_EV_DOWN);
		EXPECT_EQ(got[32 - VM_MAX + i], &fake[i]);
	}
	EXPECT_FALSE(vm_event_pending());
	EXPECT_EQ(ipis, 40 + VM_MAX);	/* hart 0 woken for each, dropped or not */
}

TEST(vm_events_ring_reused_after_draining)
{
	uint64_t dropped0 = vm_events_dropped();
	struct vm *got[64];
	enum vm_event_kind kinds[64];

	for (unsigned int round = 0; round < 5; round++) {
		for (unsigned int i = 0; i < 20; i++)
			vm_event_post(&fake[i % VM_MAX], i % 2 ? VM_EV_DOWN : VM_EV_REBOOT);
		EXPECT_EQ(drain(got, kinds, 64), 20);
		EXPECT_EQ(got[19], &fake[19 % VM_MAX]);
		EXPECT_EQ(kinds[19], VM_EV_DOWN);
	}
	EXPECT_EQ(vm_events_dropped(), dropped0);
}
