/* SPDX-License-Identifier: MIT */
/* Bit helpers (the riscv64-unknown-elf libgcc has no lp64 soft-float multilib to link). */
#ifndef HYP_BITOPS_H
#define HYP_BITOPS_H

static inline unsigned int bit_count(unsigned long v)
{
	unsigned int n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

/* index of the lowest set bit; v must be non-zero */
static inline unsigned int bit_first(unsigned long v)
{
	unsigned int n = 0;

	while (!(v & 1)) {
		v >>= 1;
		n++;
	}
	return n;
}
#endif
