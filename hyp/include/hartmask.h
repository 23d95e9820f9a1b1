/* SPDX-License-Identifier: MIT */
/* SBI hart masks (hyp/lib/hartmask.c): the (hart_mask, hart_mask_base) pair
 * SBI IPI and RFENCE take, as a bitmap. */
#ifndef HYP_HARTMASK_H
#define HYP_HARTMASK_H

/** vsbi_hart_mask() - turn (hart_mask, hart_mask_base) into a bitmap of vCPU ids.
 *  Returns SBI_SUCCESS or SBI_ERR_INVALID_PARAM if any named hart does not exist. */
long vsbi_hart_mask(unsigned int nr_vcpus, unsigned long mask, unsigned long base,
		    unsigned long *out);
#endif
