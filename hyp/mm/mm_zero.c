/* SPDX-License-Identifier: MIT */
/* Zeroing large memory (a guest RAM chunk on first touch): Zicboz's cbo.zero
 * a cache block an instruction where boot found it usable (every hart has
 * it, the firmware lets S-mode use it, and a probe zeroed what it should),
 * else word stores. On QEMU under -icount a 2 MiB chunk costs ~49 K
 * instructions instead of ~460 K, most of a Linux guest's boot overhead. */
#include <string.h>
#include <mm.h>

void __cbo_zero(void *p, unsigned long blocks, unsigned long block);

static unsigned long cbo_block;

void mm_zero_use_cbo(unsigned long block)
{
	cbo_block = block;
}

unsigned long mm_zero_cbo_block(void)
{
	return cbo_block;
}

void mm_zero(void *p, uint64_t n)
{
	unsigned long mask = cbo_block - 1;

	if (cbo_block && !((uintptr_t)p & mask) && !(n & mask))
		__cbo_zero(p, n / cbo_block, cbo_block);
	else
		memset(p, 0, n);
}
