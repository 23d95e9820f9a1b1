/* SPDX-License-Identifier: MIT */
/* Minimal formatted output for the test guests, written through SBI DBCN. */
#ifndef GUEST_PRINTF_H
#define GUEST_PRINTF_H

#include <stdarg.h>
#include <stddef.h>

#define PRINTF_BUF	256	/* longest line printf emits in one DBCN write */

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* One DBCN write per call: callers pass whole lines so lines never mix. */
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long console_write(const char *buf, size_t len);

#endif
