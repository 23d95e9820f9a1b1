/* SPDX-License-Identifier: MIT */
/* hyp/state/vcpu_request.c: an SBI remote fence posts its request to every
 * target, IPIs the ones on other harts, and waits for them at most
 * VCPU_REQUEST_WAIT_US; a target whose hart never gets to it makes the call
 * fail (the guest retries it) instead of holding the caller's hart for ever.
 * The clock moves 1 us at every look; the other harts are played by
 * tlb_service(), which the wait loop calls at every turn. */
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <atomic.h>
#include <hart.h>
#include <vm.h>
#include "test.h"

struct hart harts[HART_MAX];
struct hart *test_this_hart = &harts[0];
uint64_t timebase_hz = 10000000;
static uint64_t clock_ticks;
static struct vm vm;

uint64_t time_now(void)
{
	return clock_ticks += 10;	/* 1 us */
}

static struct {
	unsigned long ipis;	/* bit per hart id */
	unsigned int nr_ipis;
	unsigned int turns;	/* tlb_service() calls: turns of the wait */
	unsigned int serve_after;	/* the other harts do their work then (0: never) */
	unsigned int leave_after;	/* vCPU 2 leaves its hart then (0: never) */
	unsigned long served_before_first_turn;
} h;

void host_ipi_send(unsigned int hart)
{
	h.ipis |= 1UL << hart;
	h.nr_ipis++;
}

void tlb_service(void)
{
	if (h.turns++ == 0)
		h.served_before_first_turn = h.ipis;
	if (h.leave_after && h.turns >= h.leave_after)
		vm.vcpus[2].hart = -1;
	if (h.serve_after && h.turns >= h.serve_after)
		for (unsigned int i = 0; i < vm.cfg.nr_vcpus; i++)
			if (vm.vcpus[i].hart > 0)
				vm.vcpus[i].requests = 0;	/* applied at its IPI exit */
}

void vcpu_apply_pending_slow(struct vcpu *v)
{
	v->requests = 0;	/* the caller's own work: done while it waits */
}

/* A VM of 4 vCPUs; the caller, vCPU 0, on hart 0; vCPUs 1 and 2 on harts 1
 * and 2; vCPU 3 off every hart. */
static void setup(unsigned int serve_after)
{
	memset(&vm, 0, sizeof(vm));
	memset(&h, 0, sizeof(h));
	vm.cfg.nr_vcpus = 4;
	for (unsigned int i = 0; i < HART_MAX; i++) {
		harts[i].index = i;
		harts[i].hartid = i;
	}
	for (unsigned int i = 0; i < 4; i++) {
		vm.vcpus[i].vm = &vm;
		vm.vcpus[i].id = i;
		vm.vcpus[i].hart = i < 3 ? (int)i : -1;
	}
	h.serve_after = serve_after;
	clock_ticks = 1000;
	/* a loop without the bound would never end: fail, do not hang */
	alarm(5);
}

TEST(request_sync_waits_for_every_remote_target)
{
	setup(3);
	EXPECT_TRUE(vcpu_request_sync(&vm.vcpus[0], 0xf, VCPU_REQ_HFENCE_VVMA));
	EXPECT_EQ(h.ipis, 0x6);	/* harts 1 and 2; not the caller's, not off-CPU */
	EXPECT_EQ(h.served_before_first_turn, 0x6);	/* all posted before waiting */
	EXPECT_EQ(vm.vcpus[1].requests, 0);
	EXPECT_EQ(vm.vcpus[2].requests, 0);
	/* off CPU: posted, applied before it next enters */
	EXPECT_EQ(vm.vcpus[3].requests, VCPU_REQ_HFENCE_VVMA);
	/* the caller's own: applied while it waited */
	EXPECT_EQ(vm.vcpus[0].requests, 0);
}

TEST(request_sync_gives_up_after_its_bound)
{
	uint64_t start;

	setup(0);	/* hart 2 never gets to it */
	start = clock_ticks;
	EXPECT_FALSE(vcpu_request_sync(&vm.vcpus[0], 0x4, VCPU_REQ_FENCE_I));
	EXPECT_TRUE(clock_ticks - start >= timebase_hz * VCPU_REQUEST_WAIT_US / 1000000);
	EXPECT_TRUE(clock_ticks - start <= timebase_hz * VCPU_REQUEST_WAIT_US / 1000000 + 100);
	EXPECT_EQ(vm.vcpus[2].requests, VCPU_REQ_FENCE_I);	/* still posted: the retry finds it */
}

TEST(request_sync_stops_waiting_for_a_target_that_left)
{
	setup(0);
	h.leave_after = 3;	/* it applies the work before it next enters */
	EXPECT_TRUE(vcpu_request_sync(&vm.vcpus[0], 0x4, VCPU_REQ_FENCE_I));
	EXPECT_EQ(h.turns, 3);
	EXPECT_EQ(vm.vcpus[2].requests, VCPU_REQ_FENCE_I);
}

TEST(request_sync_does_not_wait_for_self_or_off_cpu_targets)
{
	setup(0);
	EXPECT_TRUE(vcpu_request_sync(&vm.vcpus[0], 0x9, VCPU_REQ_FENCE_I));
	EXPECT_EQ(h.nr_ipis, 0);
	EXPECT_EQ(h.turns, 0);
	EXPECT_EQ(vm.vcpus[0].requests, VCPU_REQ_FENCE_I);
	EXPECT_EQ(vm.vcpus[3].requests, VCPU_REQ_FENCE_I);
}

TEST(request_sync_serves_its_own_requests_while_waiting)
{
	setup(5);
	vm.vcpus[0].requests = VCPU_REQ_FENCE_I;	/* from a vCPU fencing us */
	EXPECT_TRUE(vcpu_request_sync(&vm.vcpus[0], 0x2, VCPU_REQ_FENCE_I));
	EXPECT_EQ(vm.vcpus[0].requests, 0);
}
