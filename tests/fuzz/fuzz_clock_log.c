/* SPDX-License-Identifier: MIT */
/* The clock and the log the fuzzed hypervisor code sees (the management,
 * snapshot and migration targets). */
#include <stdarg.h>
#include <stdint.h>
#include <log.h>
#include "fuzz_check.h"

static uint64_t clock_ticks;

/* 10 MHz, and the clock moves on at every look, so any time budget of the
 * code under test ends. */
uint64_t time_now(void)
{
	return clock_ticks += 100;
}

void pr_info(const char *fmt, ...)
{
	va_list ap;

	if (!fuzz_verbose())
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void hyp_panic(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	abort();
}
