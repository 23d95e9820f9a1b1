/* SPDX-License-Identifier: MIT */
/* pmu_count.c: perf_event_open counts of a known loop (cfitest --pmu). */
#ifndef PMU_COUNT_H
#define PMU_COUNT_H
/** pmu_count_main() - PASS/FAIL lines, a DONE line; 0 if all passed. */
int pmu_count_main(void);
#endif
