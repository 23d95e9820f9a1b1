/* SPDX-License-Identifier: MIT */
/* A second vCPU looping over one function (racer.h). */
#include "env.h"
#include "racer.h"
#include "report.h"
#include "sbi.h"
#include "timer.h"

static void (*volatile race_fn)(unsigned long round);
static volatile bool race_on, race_running;
static volatile unsigned long race_rounds;
static unsigned long race_hart = -1UL;

static void racer(unsigned long hartid, unsigned long opaque)
{
	unsigned long i;

	(void)hartid;
	(void)opaque;
	WRITE_ONCE(race_running, true);
	for (i = 0; READ_ONCE(race_on); i++)
		race_fn(i);
	WRITE_ONCE(race_rounds, i);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	WRITE_ONCE(race_running, false);
}

bool racer_start(const char *test, void (*fn)(unsigned long round))
{
	race_hart = other_hartid();
	if (race_hart == -1UL) {
		report_fail(test, "a race needs a second vCPU (got one)");
		return false;
	}
	hart_wait_state(race_hart, SBI_HSM_STATE_STOPPED, 5000000);
	race_fn = fn;
	WRITE_ONCE(race_on, true);
	WRITE_ONCE(race_running, false);
	if (hart_start(race_hart, racer, 0) != SBI_SUCCESS ||
	    !wait_for(READ_ONCE(race_running), 2000000)) {
		report_fail(test, "second vCPU did not start (got no start, want one)");
		WRITE_ONCE(race_on, false);
		return false;
	}
	return true;
}

unsigned long racer_stop(void)
{
	WRITE_ONCE(race_on, false);
	wait_for(!READ_ONCE(race_running), 5000000);
	hart_wait_state(race_hart, SBI_HSM_STATE_STOPPED, 5000000);
	return READ_ONCE(race_rounds);
}
