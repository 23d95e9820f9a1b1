/* SPDX-License-Identifier: MIT */
/* Guest time against host time (hyp/include/guest_time.h) and the wake-up
 * predicates built on it (hyp/state/vcpu_wake.c). The review's finding: a
 * negative htimedelta (a restore or an incoming migration onto a host whose
 * clock is ahead) was treated as unsigned, so a vCPU waiting with its timer
 * off (vstimecmp = -1) gave the scheduler a deadline in the past: idle harts
 * spun. */
#include <string.h>
#include <arch/riscv/encoding.h>
#include <guest_time.h>
#include <hart.h>
#include <vm.h>
#include "test.h"

uint64_t timebase_hz = 10000000;
struct hart harts[HART_MAX];
struct hart *test_this_hart = &harts[0];

uint64_t time_now(void)
{
	return 0;	/* vcpu_wake_pending_live() only: not called here */
}

#define NOW		123456789ULL
#define BEHIND(t)	((uint64_t)-(int64_t)(t))	/* guest clock @t ticks behind */
#define CENTURIES	(1ULL << 62)	/* ticks: 14 600 years at 10 MHz */

/* guest clock ahead, equal, behind (a restore on a host up for longer; down
 * to guest time 0 and 1 now), far ahead */
static const uint64_t deltas[] = {
	1000, 0, BEHIND(1000), BEHIND(NOW), BEHIND(NOW - 1), CENTURIES, ~0ULL,
};

/* vstimecmp = -1 ("no timer") fires only when guest time reaches 2^64 - 1:
 * never due now, and its host deadline ages away. */
TEST(guest_timer_at_minus_one_never_fires)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(deltas); i++) {
		EXPECT_FALSE(guest_timer_due(~0ULL, deltas[i], NOW));
		EXPECT_TRUE(guest_timer_host_deadline(~0ULL, deltas[i], NOW) - NOW >= CENTURIES);
		EXPECT_EQ(guest_timer_fired_at(~0ULL, deltas[i], NOW), GUEST_TIMER_NEVER);
	}
}

TEST(guest_timer_deadline_in_guest_time)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(deltas); i++) {
		uint64_t d = deltas[i], gnow = NOW + d;

		/* 500 ticks ahead in guest time is 500 ticks ahead in host time */
		EXPECT_FALSE(guest_timer_due(gnow + 500, d, NOW));
		EXPECT_EQ(guest_timer_host_deadline(gnow + 500, d, NOW), NOW + 500);
		EXPECT_EQ(guest_timer_fired_at(gnow + 500, d, NOW), GUEST_TIMER_NEVER);
		/* due right now */
		EXPECT_TRUE(guest_timer_due(gnow, d, NOW));
		EXPECT_EQ(guest_timer_host_deadline(gnow, d, NOW), NOW);
		EXPECT_EQ(guest_timer_fired_at(gnow, d, NOW), NOW);
		if (gnow < 40)
			continue;	/* 40 ticks before guest time 0 is 2^64 - 40 */
		EXPECT_EQ(guest_timer_host_deadline(gnow - 40, d, NOW), NOW);
		EXPECT_EQ(guest_timer_fired_at(gnow - 40, d, NOW), NOW - 40);
	}
}

TEST(guest_timer_edges)
{
	/* fired before host time 0 (the guest's clock is ahead): long past */
	EXPECT_EQ(guest_timer_fired_at(5, NOW + 10, NOW), 0);
	/* a wait that takes host time past 2^64 saturates: never, not a
	 * wrapped early deadline */
	EXPECT_EQ(guest_timer_host_deadline(~0ULL, BEHIND(5), NOW), GUEST_TIMER_NEVER);
	EXPECT_EQ(guest_timer_host_deadline(NOW - 5 + (1ULL << 40), BEHIND(5), NOW),
		  NOW + (1ULL << 40));
	/* guest time about to reach 2^64 - 1: Sstc fires vstimecmp -1 there */
	EXPECT_EQ(guest_timer_host_deadline(~0ULL, ~0ULL - 9 - NOW, NOW), NOW + 9);
}

static struct vm vm;

static struct vcpu *waiting_vcpu(uint64_t htimedelta, uint64_t vstimecmp)
{
	memset(&vm, 0, sizeof(vm));
	vm.cfg.nr_vcpus = 1;
	vm.htimedelta = htimedelta;
	vm.vcpus[0].vm = &vm;
	vm.vcpus[0].hart = -1;
	vm.vcpus[0].g.hsm.waiting = true;
	vm.vcpus[0].g.csr.vstimecmp = vstimecmp;
	vm.vcpus[0].g.csr.vsie = MIP_STIP;	/* guest layout: STIE */
	return &vm.vcpus[0];
}

/* The scheduler's idle deadline (sched.c next_guest_deadline()) for a vCPU
 * restored 5 s behind the host, waiting with its timer off. */
TEST(vcpu_timer_deadline_with_negative_htimedelta)
{
	struct vcpu *v = waiting_vcpu(BEHIND(50000000), ~0ULL);

	EXPECT_EQ(vcpu_timer_deadline(v, NOW), GUEST_TIMER_NEVER);
	EXPECT_FALSE(vcpu_wake_pending(v, NOW));
	/* a real deadline 2 ms ahead in its (late) time */
	v->g.csr.vstimecmp = NOW - 50000000 + 20000;
	EXPECT_EQ(vcpu_timer_deadline(v, NOW), NOW + 20000);
	EXPECT_FALSE(vcpu_wake_pending(v, NOW + 19999));
	EXPECT_TRUE(vcpu_wake_pending(v, NOW + 20000));
}

TEST(vcpu_timer_deadline_with_positive_htimedelta)
{
	/* the guest's clock 5 s ahead: a deadline before host time 0 is due */
	struct vcpu *v = waiting_vcpu(50000000, 1000);

	EXPECT_EQ(vcpu_timer_deadline(v, NOW), NOW);
	EXPECT_TRUE(vcpu_wake_pending(v, NOW));
	v->g.csr.vstimecmp = ~0ULL;
	EXPECT_TRUE(vcpu_timer_deadline(v, NOW) - NOW >= CENTURIES);
	EXPECT_FALSE(vcpu_wake_pending(v, NOW));
}

/* A due timer the guest has not enabled (vsie.STIE=0) cannot wake it: the
 * idle harts get no deadline from it (they spun at 90 % of a host CPU). */
TEST(vcpu_timer_deadline_needs_the_timer_enabled)
{
	struct vcpu *v = waiting_vcpu(0, 1000);

	EXPECT_EQ(vcpu_timer_deadline(v, NOW), NOW);
	v->g.csr.vsie = MIP_SSIP | MIP_SEIP;
	EXPECT_EQ(vcpu_timer_deadline(v, NOW), GUEST_TIMER_NEVER);
	EXPECT_FALSE(vcpu_wake_pending(v, NOW));
}

/* A waiting AIA vCPU whose parked guest file signalled (SGEI marks ext_irq) is
 * runnable, as with its software file's signal (ext_irq), and only if its
 * external interrupt is enabled (vsie.SEIE, guest layout). */
TEST(a_parked_guest_file_signal_wakes_a_waiting_vcpu)
{
	struct vcpu *v = waiting_vcpu(0, ~0ULL);

	v->g.csr.vsie = MIP_SEIP;
	EXPECT_FALSE(vcpu_wake_pending(v, NOW));
	v->ext_irq = true;
	EXPECT_TRUE(vcpu_wake_pending(v, NOW));
	v->g.csr.vsie = MIP_STIP;
	EXPECT_FALSE(vcpu_wake_pending(v, NOW));
}
