/* SPDX-License-Identifier: MIT */
/* SBI hart masks: (hart_mask, hart_mask_base) as IPI and RFENCE take them. */
#include <abi/sbi_defs.h>
#include <hartmask.h>

long vsbi_hart_mask(unsigned int nr_vcpus, unsigned long mask, unsigned long base,
		    unsigned long *out)
{
	unsigned long bits = 0;

	if (base == -1UL) {	/* all harts; the mask is ignored */
		*out = nr_vcpus >= 64 ? ~0UL : (1UL << nr_vcpus) - 1;
		return SBI_SUCCESS;
	}
	for (unsigned int i = 0; mask; i++, mask >>= 1) {
		if (!(mask & 1))
			continue;
		if (base + i < base || base + i >= nr_vcpus)
			return SBI_ERR_INVALID_PARAM;
		bits |= 1UL << (base + i);
	}
	*out = bits;
	return SBI_SUCCESS;
}
