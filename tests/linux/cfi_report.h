/* SPDX-License-Identifier: MIT */
/*
 * cfi_report.h: result lines and child-process plumbing for cfitest.
 */
#ifndef CFI_REPORT_H
#define CFI_REPORT_H

#include <stddef.h>

enum cfi_verdict { CFI_PASS, CFI_FAIL, CFI_SKIP };

/* Print (or, inside a group worker, forward) one "PASS/FAIL/SKIP: cfi:" line.
 * check must not contain " (": harnesses split the detail off there.
 * fmt, if not NULL, becomes the parenthesised detail. */
void cfi_result(enum cfi_verdict v, const char *check, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* PASS if ok, else FAIL; the detail is printed either way. */
void cfi_check(int ok, const char *check, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void cfi_totals(int *passed, int *failed);

/*
 * Runs fn in a forked worker so that whatever CFI state it enables (and
 * whatever it breaks) dies with it; its result lines are passed back over
 * a pipe and printed here.  A worker that does not exit 0 adds a FAIL.
 */
void cfi_run_group(const char *group, void (*fn)(void));

/* How a test child ended. */
struct cfi_status {
	int exited;	/* 1: exit code in code; 0: killed by signal sig */
	int code;
	int sig;
};

/* Fork, run fn(arg) in the child and _exit with its value; wait for it. */
struct cfi_status cfi_run_child(int (*fn)(long), long arg);

/* Did the child die in cfi_fault_handler with this signal and si_code? */
int cfi_fault_is(struct cfi_status s, int sig, int si_code);

/* Human-readable description of s, e.g. "SIGSEGV si_code 10 (handled)". */
const char *cfi_status_str(struct cfi_status s, char *buf, size_t len);

/* SIGSEGV/SIGBUS/SIGILL -> cfi_fault_handler (exit (signo<<4)|si_code). */
void cfi_install_fault_handler(void);

/* "EINVAL" etc. for a -errno syscall return, "ok" for >= 0. */
const char *cfi_errname(long ret);

#endif
