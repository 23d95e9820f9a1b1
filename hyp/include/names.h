/* SPDX-License-Identifier: MIT */
/* Names a host gives: of VMs and switches (and the VM name in a disk's
 * serial). One alphabet, [a-z0-9_-], everywhere a name comes in: the host
 * DT, the management channel, a snapshot file, a migration stream. Inline:
 * every parser and its host-built tests and fuzz targets use it. */
#ifndef CARAPACE_NAMES_H
#define CARAPACE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The @n characters at @s are all of the alphabet. */
static inline bool name_chars_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* @s is a name of 1 .. @size - 1 characters (its NUL within @size bytes,
 * none read past them). */
static inline bool name_ok(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	return n && n < size && name_chars_ok(s, n);
}

#endif
