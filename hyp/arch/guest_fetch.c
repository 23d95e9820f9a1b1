/* SPDX-License-Identifier: MIT */
/* A guest instruction read the way the hardware fetched it (HLVX: the
 * guest's two stages, execute permission, its privilege), for the exit
 * handlers that decode what trapped. */
#include <exit.h>

unsigned long vcpu_fetch_insn(unsigned long pc)
{
	unsigned long fault, lo, hi = 0;

	lo = __guest_fetch_hu(pc, &fault);
	if (fault)
		return 0;
	if ((lo & 3) == 3) {
		hi = __guest_fetch_hu(pc + 2, &fault);
		if (fault)
			return 0;
	}
	return lo | (hi << 16);
}
