/* SPDX-License-Identifier: MIT */
/* libfdt includes <stdlib.h>; the hypervisor offers only this. */
#ifndef HYP_LIBC_STDLIB_H
#define HYP_LIBC_STDLIB_H
#include <stddef.h>
unsigned long strtoul(const char *s, char **end, int base);
#endif
