/* SPDX-License-Identifier: MIT */
/*
 * cfi_tests.h: the check groups cfitest runs, one file each.
 */
#ifndef CFI_TESTS_H
#define CFI_TESTS_H

/* cfi_detect.c: cpuinfo + hwprobe, expecting CFI present or absent. */
void cfi_check_detect(int expect_on);

/* cfi_ss.c: shadow stack groups (each meant for cfi_run_group). */
void cfi_group_ss_enable(void);
void cfi_group_ss_calls(void);
void cfi_group_ss_violation(void);
void cfi_group_ss_memory(void);
void cfi_group_ss_fork(void);
void cfi_group_ss_signal(void);

/* cfi_ss.c: the --violate child; ends in cfi_fault_handler if CFI works. */
int cfi_ss_violate(long unused);

/* cfi_lp.c: landing pad group. */
void cfi_group_lp(void);

/* cfi_off.c: a VM/CPU without CFI must refuse it cleanly. */
void cfi_group_off(void);

#endif
