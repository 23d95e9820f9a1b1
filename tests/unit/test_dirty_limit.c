/* SPDX-License-Identifier: MIT */
/* hyp/state/dirty_limit.c: the pace a migration holds a guest's page writes
 * to. A writer is simulated in its own time: it dirties a page every @gap
 * ticks unless held, and is off its hart until the time a charge gives. */
#include <dirty_limit.h>
#include "test.h"

#define HZ	10000000ULL		/* QEMU virt's timebase */
/* the VM paced: only compared, never looked into */
#define VM	((struct vm *)0x1000)
#define AHEAD	(HZ * DIRTY_LIMIT_AHEAD_US / 1000000)

struct writer {
	uint64_t pages, holds, shortest_hold;
};

static struct writer write_for(struct dirty_limit *dl, uint64_t from, uint64_t ticks, uint64_t gap)
{
	struct writer w = { 0, 0, ~0ULL };

	for (uint64_t t = from; t < from + ticks; t += gap) {
		uint64_t until = dirty_limit_charge(dl, t);

		w.pages++;
		if (until) {
			EXPECT_TRUE(until > t);
			w.holds++;
			if (until - t < w.shortest_hold)
				w.shortest_hold = until - t;
			t = until - gap;	/* back on its hart then */
		}
	}
	return w;
}

TEST(dirty_limit_off_never_holds)
{
	struct dirty_limit dl = { 0 };
	struct writer w = write_for(&dl, 0, HZ, 10);	/* 1 M pages a second */

	EXPECT_EQ(w.holds, 0);
	EXPECT_TRUE(dl.vm == NULL);
}

TEST(dirty_limit_never_holds_a_writer_under_its_rate)
{
	struct dirty_limit dl = { 0 };
	struct writer w;

	dirty_limit_set(&dl, VM, 2000, HZ, 0);
	EXPECT_TRUE(dl.vm == VM);
	w = write_for(&dl, 0, 10 * HZ, HZ / 1900);	/* 1 900 pages a second */
	EXPECT_EQ(w.holds, 0);
	EXPECT_EQ(dl.holds, 0);
}

TEST(dirty_limit_holds_a_faster_writer_to_its_rate)
{
	struct dirty_limit dl = { 0 };
	struct writer w;

	dirty_limit_set(&dl, VM, 2000, HZ, 0);
	/* 100 000 pages a second for 10 s: 20 000 pages and the 2 ms ahead, no more */
	w = write_for(&dl, 0, 10 * HZ, HZ / 100000);
	EXPECT_TRUE(w.pages >= 20000 && w.pages <= 20000 + 2000 * 2 / 1000 + 1);
	EXPECT_TRUE(w.holds > 0);
	EXPECT_EQ(dl.holds, w.holds);
	/* it runs ahead DIRTY_LIMIT_AHEAD_US before it is held: few switches */
	EXPECT_TRUE(w.shortest_hold >= AHEAD);
	EXPECT_TRUE(dl.held_ticks > 9 * HZ);
}

TEST(dirty_limit_saves_no_budget_over_idle_time)
{
	struct dirty_limit dl = { 0 };
	struct writer w;

	dirty_limit_set(&dl, VM, 2000, HZ, 0);
	/* a minute without a write, then as fast as it can: held after the
	 * pages of DIRTY_LIMIT_AHEAD_US, not after a minute's */
	w = write_for(&dl, 60 * HZ, HZ / 100, 1);
	EXPECT_TRUE(w.pages <= 2000 * 10 / 1000 + 2000 * 2 / 1000 + 1);
	EXPECT_TRUE(w.holds > 0);
}

TEST(dirty_limit_set_to_zero_lets_a_held_writer_go)
{
	struct dirty_limit dl = { 0 };

	dirty_limit_set(&dl, VM, 1, HZ, 0);
	EXPECT_EQ(dirty_limit_charge(&dl, 0), HZ);	/* a page a second */
	EXPECT_EQ(dirty_limit_charge(&dl, HZ), 2 * HZ);
	dirty_limit_set(&dl, VM, 0, HZ, 0);
	EXPECT_TRUE(dl.vm == NULL);
	EXPECT_EQ(dirty_limit_charge(&dl, 1), 0);
	EXPECT_EQ(dl.holds, 0);
}
