/* SPDX-License-Identifier: MIT */
/* Memory and string functions for the freestanding hypervisor build. */
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

/* Eight bytes at an aligned @s, as one word. */
static inline uint64_t word_at(const unsigned char *s)
{
	return *(const uint64_t *)s;
}

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	/* Word copies for long runs, whatever the alignment of each side: guest
	 * images are megabytes, and network frames sit at addresses with no
	 * common alignment (byte copies were 85-92 % of the hypervisor's work of
	 * a TCP stream, docs/performance.md). */
	if (n >= 32) {
		while ((uintptr_t)d & 7) {
			*d++ = *s++;
			n--;
		}
		unsigned int lag = (unsigned int)((uintptr_t)s & 7);

		if (!lag) {
			for (; n >= 32; n -= 32, d += 32, s += 32) {
				uint64_t a = word_at(s), b = word_at(s + 8);
				uint64_t c = word_at(s + 16), e = word_at(s + 24);

				((uint64_t *)d)[0] = a;
				((uint64_t *)d)[1] = b;
				((uint64_t *)d)[2] = c;
				((uint64_t *)d)[3] = e;
			}
			for (; n >= 8; n -= 8, d += 8, s += 8)
				*(uint64_t *)d = word_at(s);
		} else {
			/* Each destination word from two aligned source words
			 * (little-endian); every word read holds a byte that is
			 * copied, so no read leaves the source's pages. */
			unsigned int lo_shift = lag * 8, hi_shift = 64 - lo_shift;
			const unsigned char *ws = s - lag;
			uint64_t lo = word_at(ws);

			for (; n >= 8; n -= 8, d += 8, s += 8) {
				uint64_t hi = word_at(ws += 8);

				*(uint64_t *)d = lo >> lo_shift | hi << hi_shift;
				lo = hi;
			}
		}
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;

	if (((uintptr_t)d & 7) == 0) {
		uint64_t w = (unsigned char)c * 0x0101010101010101ULL;

		for (; n >= 32; n -= 32, d += 32) {
			((uint64_t *)d)[0] = w;
			((uint64_t *)d)[1] = w;
			((uint64_t *)d)[2] = w;
			((uint64_t *)d)[3] = w;
		}
	}
	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

void *memchr(const void *s, int c, size_t n)
{
	const unsigned char *p = s;

	for (; n; n--, p++)
		if (*p == (unsigned char)c)
			return (void *)p;
	return NULL;
}

size_t strlen(const char *s)
{
	const char *p = s;

	while (*p)
		p++;
	return (size_t)(p - s);
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b || !*a)
			return (unsigned char)*a - (unsigned char)*b;
	}
	return 0;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

char *strrchr(const char *s, int c)
{
	const char *last = NULL;

	for (;; s++) {
		if (*s == (char)c)
			last = s;
		if (!*s)
			return (char *)last;
	}
}

unsigned long strtoul(const char *s, char **end, int base)
{
	unsigned long v = 0;

	if (base == 0) {
		base = 10;
		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
			base = 16;
			s += 2;
		}
	}
	for (;; s++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (d >= base)
			break;
		v = v * (unsigned long)base + (unsigned long)d;
	}
	if (end)
		*end = (char *)s;
	return v;
}
