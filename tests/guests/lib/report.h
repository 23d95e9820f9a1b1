/* SPDX-License-Identifier: MIT */
/* PASS/FAIL/SKIP/INFO lines, check helpers, and the final DONE + SRST exit. */
#ifndef GUEST_REPORT_H
#define GUEST_REPORT_H

#include "guest.h"

#define __fmt(a, b) __attribute__((format(printf, a, b)))

void report_pass(const char *test, const char *fmt, ...) __fmt(2, 3);
/* @fmt should end with "(got X, want Y)" per the report format. */
void report_fail(const char *test, const char *fmt, ...) __fmt(2, 3);
void report_skip(const char *test, const char *fmt, ...) __fmt(2, 3);
void report_info(const char *test, const char *fmt, ...) __fmt(2, 3);

/* Each prints one PASS or FAIL line and returns whether it passed. */
bool check_eq(const char *test, const char *what, long got, long want);
bool check_eqx(const char *test, const char *what, unsigned long got,
	       unsigned long want);
bool check_ne(const char *test, const char *what, long got, long bad);
bool check_ge(const char *test, const char *what, unsigned long got,
	      unsigned long min);
bool check_le(const char *test, const char *what, unsigned long got,
	      unsigned long max);

unsigned long report_failures(void);
/* DONE line, then SRST shutdown: reason 0 if all passed, else 1. */
void report_done(void) __attribute__((noreturn));
/* The same, with shutdown reason @reason instead of 0 if all passed. */
void report_done_reason(unsigned long reason) __attribute__((noreturn));

#endif
