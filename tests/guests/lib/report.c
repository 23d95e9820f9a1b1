/* SPDX-License-Identifier: MIT */
/* Result lines in the format the pytest driver parses, and the exit path. */
#include <stdarg.h>
#include "printf.h"
#include "report.h"
#include "sbi.h"

static unsigned long passed, failed;

static void line(const char *kind, const char *test, const char *fmt,
		 va_list ap)
{
	char what[PRINTF_BUF - 32];

	vsnprintf(what, sizeof(what), fmt, ap);
	printf("%s: %s: %s\n", kind, test, what);
}

static void vreport(const char *kind, unsigned long *counter,
		    const char *test, const char *fmt, va_list ap)
{
	if (counter)
		__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
	line(kind, test, fmt, ap);
}

#define REPORT_FN(name, kind, counter)					\
void name(const char *test, const char *fmt, ...)			\
{									\
	va_list ap;							\
									\
	va_start(ap, fmt);						\
	vreport(kind, counter, test, fmt, ap);				\
	va_end(ap);							\
}

REPORT_FN(report_pass, "PASS", &passed)
REPORT_FN(report_fail, "FAIL", &failed)
REPORT_FN(report_skip, "SKIP", NULL)
REPORT_FN(report_info, "INFO", NULL)

bool check_eq(const char *test, const char *what, long got, long want)
{
	if (got == want)
		report_pass(test, "%s", what);
	else
		report_fail(test, "%s (got %ld, want %ld)", what, got, want);
	return got == want;
}

bool check_eqx(const char *test, const char *what, unsigned long got,
	       unsigned long want)
{
	if (got == want)
		report_pass(test, "%s", what);
	else
		report_fail(test, "%s (got 0x%lx, want 0x%lx)", what, got, want);
	return got == want;
}

bool check_ne(const char *test, const char *what, long got, long bad)
{
	if (got != bad)
		report_pass(test, "%s", what);
	else
		report_fail(test, "%s (got %ld, want != %ld)", what, got, bad);
	return got != bad;
}

bool check_ge(const char *test, const char *what, unsigned long got,
	      unsigned long min)
{
	if (got >= min)
		report_pass(test, "%s", what);
	else
		report_fail(test, "%s (got %lu, want >= %lu)", what, got, min);
	return got >= min;
}

bool check_le(const char *test, const char *what, unsigned long got,
	      unsigned long max)
{
	if (got <= max)
		report_pass(test, "%s", what);
	else
		report_fail(test, "%s (got %lu, want <= %lu)", what, got, max);
	return got <= max;
}

unsigned long report_failures(void)
{
	return __atomic_load_n(&failed, __ATOMIC_RELAXED);
}

void report_done(void)
{
	report_done_reason(SBI_SRST_REASON_NONE);
}

void report_done_reason(unsigned long reason)
{
	unsigned long f = report_failures();
	struct sbiret r;

	printf("DONE: %lu passed, %lu failed\n",
	       __atomic_load_n(&passed, __ATOMIC_RELAXED), f);
	r = sbi_system_reset(SBI_SRST_TYPE_SHUTDOWN,
			     f ? SBI_SRST_REASON_SYSFAIL : reason);
	/* Only reached if shutdown failed; the driver then sees a timeout. */
	printf("FAIL: report: SRST shutdown returned (got %ld, want no return)\n",
	       r.error);
	for (;;)
		wfi();
}
