/* SPDX-License-Identifier: MIT */
/*
 * pmu_count.c: the guest's SBI PMU as Linux's perf sees it. Counts the
 * instructions and cycles of this process running a loop of known length,
 * twice the length and ten times (the least of five runs each): counts must
 * be non-zero and grow with the loop. Prints "PASS|FAIL: pmu: ..." lines and a DONE line (the harness,
 * tests/linux/test_linux_pmu.py, reads them).
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "pmu_count.h"

static int passed, failed;

static void check(int ok, const char *what, unsigned long long got)
{
	printf("%s: pmu: %s (got %llu)\n", ok ? "PASS" : "FAIL", what, got);
	if (ok)
		passed++;
	else
		failed++;
}

static void loop(unsigned long n)
{
	for (volatile unsigned long i = 0; i < n; i++)
		;
}

/* One count of @config over loop(@n); -1 when the event cannot be opened. */
static long long count(uint64_t config, unsigned long n)
{
	struct perf_event_attr attr;
	long long value = -1;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = config;
	attr.disabled = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) {
		perror("pmu: perf_event_open");
		return -1;
	}
	ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	loop(n);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(fd, &value, sizeof(value)) != sizeof(value))
		value = -1;
	close(fd);
	return value;
}

static void event(const char *name, uint64_t config)
{
	static const unsigned long n[3] = { 100000, 200000, 1000000 };
	long long c[3];
	char what[128];

	/* the kernel's work is counted too (SINH is refused): an interrupt in
	 * a run can add a million; the least of five runs is the loop's */
	for (int i = 0; i < 3; i++) {
		c[i] = -1;
		for (int r = 0; r < 5; r++) {
			long long x = count(config, n[i]);

			if (x >= 0 && (c[i] < 0 || x < c[i]))
				c[i] = x;
		}
	}
	printf("pmu: %s: %lu iterations %lld, %lu: %lld, %lu: %lld\n", name, n[0], c[0], n[1],
	       c[1], n[2], c[2]);
	snprintf(what, sizeof(what), "%s: perf_event_open and read work", name);
	check(c[0] >= 0 && c[1] >= 0 && c[2] >= 0, what, (unsigned long long)c[0]);
	snprintf(what, sizeof(what), "%s: %lu iterations count more than %lu", name, n[0], n[0]);
	check(c[0] >= (long long)n[0], what, (unsigned long long)c[0]);
	snprintf(what, sizeof(what), "%s: twice the loop counts more", name);
	check(c[1] > c[0], what, (unsigned long long)c[1]);
	snprintf(what, sizeof(what), "%s: ten times the loop counts at least 3x more", name);
	check(c[2] > 3 * c[0], what, (unsigned long long)c[2]);
}

int pmu_count_main(void)
{
	event("instructions", PERF_COUNT_HW_INSTRUCTIONS);
	event("cycles", PERF_COUNT_HW_CPU_CYCLES);
	printf("DONE: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
