/* SPDX-License-Identifier: MIT */
/* Parse "key=value" words from /chosen bootargs (demo, spin, sleeper knobs). */
#include "env.h"

static unsigned long parse_ulong(const char *s)
{
	unsigned long v = 0, base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	for (;; s++) {
		unsigned long d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return v;
		v = v * base + d;
	}
}

unsigned long bootarg_ulong(const char *key, unsigned long dflt)
{
	size_t klen = strlen(key);
	const char *p = env.bootargs;

	while (*p) {
		while (*p == ' ')
			p++;
		if (!strncmp(p, key, klen) && p[klen] == '=')
			return parse_ulong(p + klen + 1);
		while (*p && *p != ' ')
			p++;
	}
	return dflt;
}
