/* SPDX-License-Identifier: MIT */
/* Formatted output into buffers (hyp/lib/printf.c). */
#ifndef HYP_PRINTF_H
#define HYP_PRINTF_H
#include <stdarg.h>
#include <stddef.h>

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
int snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#endif
