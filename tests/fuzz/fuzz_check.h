/* SPDX-License-Identifier: MIT */
/* What every fuzz target's harness checks with. CHECK() aborts, so libFuzzer
 * keeps the input as a crash, and names the broken invariant by file and
 * line (the file names the target). fuzz_verbose(): FUZZ_VERBOSE=1 in the
 * environment, for a harness that can say how each input ended. */
#ifndef FUZZ_CHECK_H
#define FUZZ_CHECK_H
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)								\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "fuzz: invariant broken at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);			\
			abort();						\
		}								\
	} while (0)

static inline bool fuzz_verbose(void)
{
	static int verbose = -1;

	if (verbose < 0) {
		const char *v = getenv("FUZZ_VERBOSE");

		verbose = v && *v && *v != '0';
	}
	return verbose;
}

#endif
