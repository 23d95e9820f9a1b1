/* SPDX-License-Identifier: MIT */
/* memcmp() for the guest DT target's copy of libfdt (tests/fuzz/fuzz.mk:
 * FUZZ_T_LIBFDT_PLAIN). Compiled without coverage, so libFuzzer's
 * comparison hooks do not run for each of libfdt's string searches; with
 * ASan, so every byte it reads is still checked. */
#include <stddef.h>

int fuzz_libfdt_memcmp(const void *a, const void *b, size_t n);

int fuzz_libfdt_memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *p = a, *q = b;

	for (size_t i = 0; i < n; i++)
		if (p[i] != q[i])
			return p[i] < q[i] ? -1 : 1;
	return 0;
}
