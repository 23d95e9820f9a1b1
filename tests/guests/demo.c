/* SPDX-License-Identifier: MIT */
/* Demo guest: every hart prints "hello from <hartid>" N times, with a delay.
 *
 * Knobs (bootargs in /chosen, else -DDEMO_COUNT / -DDEMO_DELAY_US):
 * count=N lines per hart, delay_us=D busy wait between lines. Used by
 * `make run` and by the multi-VM interleaving tests. Same in both modes.
 */
#include "libguest.h"

#define T "demo"
#ifndef DEMO_COUNT
#define DEMO_COUNT	5
#endif
#ifndef DEMO_DELAY_US
#define DEMO_DELAY_US	100000
#endif

static unsigned long count, delay_us;
static unsigned long lines[MAX_HARTS];
static unsigned long finished;

static void hello_loop(unsigned long hartid, unsigned long opaque)
{
	unsigned long i;

	(void)opaque;
	for (i = 1; i <= count; i++) {
		printf("hello from %lu (%lu/%lu)\n", hartid, i, count);
		WRITE_ONCE(lines[hartid], i);
		udelay(delay_us);
	}
	__atomic_add_fetch(&finished, 1, __ATOMIC_RELEASE);
}

void test_main(unsigned long self)
{
	unsigned long i, started = 1;
	char what[64];

	count = bootarg_ulong("count", DEMO_COUNT);
	delay_us = bootarg_ulong("delay_us", DEMO_DELAY_US);
	report_info(T, "%lu harts, count=%lu delay_us=%lu", env.nr_harts, count,
		    delay_us);
	for (i = 0; i < env.nr_harts; i++) {
		unsigned long h = env.hartids[i];

		if (h == self || h >= MAX_HARTS)
			continue;
		snprintf(what, sizeof(what), "start hart %lu", h);
		if (check_eq(T, what, hart_start(h, hello_loop, 0), SBI_SUCCESS))
			started++;
	}
	hello_loop(self, 0);
	/* Each line takes delay_us; allow a generous 4x plus 2 s of slack. */
	check_eq(T, "every hart finished",
		 wait_for(READ_ONCE(finished) == started,
			  4 * count * delay_us + 2000000), 1);
	for (i = 0; i < env.nr_harts; i++) {
		unsigned long h = env.hartids[i];

		if (h >= MAX_HARTS)
			continue;
		snprintf(what, sizeof(what), "hart %lu printed every line", h);
		check_eq(T, what, READ_ONCE(lines[h]), count);
	}
}
