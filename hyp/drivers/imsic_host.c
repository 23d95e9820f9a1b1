/* SPDX-License-Identifier: MIT */
/* Carapace's own S-level interrupt file on each hart (imsic.h): reached
 * through siselect/sireg and claimed through stopei, never through its
 * memory page (that page is for MSIs: the APLIC's, and later other harts'
 * IPIs). Called with interrupts off; siselect is not preserved (nothing else
 * in HS-mode uses it). */
#include <arch/riscv/csr.h>
#include <imsic.h>

static void ireg_write(unsigned long isel, unsigned long v)
{
	csr_write(CSR_SISELECT, isel);
	csr_write(CSR_SIREG, v);
}

void imsic_host_hart_init(uint32_t num_ids, bool deliver)
{
	/* delivery off first: nothing signals while the file is half cleared */
	ireg_write(ISELECT_EIDELIVERY, 0);
	/* eip/eie register 2k holds identities 64k..64k+63 (RV64: odd ones do not exist) */
	for (unsigned long k = 0; k < (num_ids + 1) / 64; k++) {
		ireg_write(ISELECT_EIE0 + 2 * k, 0);
		ireg_write(ISELECT_EIP0 + 2 * k, 0);
	}
	ireg_write(ISELECT_EITHRESHOLD, 0);	/* 0: every enabled identity interrupts */
	if (deliver)
		ireg_write(ISELECT_EIDELIVERY, IMSIC_EIDELIVERY_ON);
}

void imsic_host_enable(uint32_t id)
{
	csr_write(CSR_SISELECT, ISELECT_EIE0 + 2 * (id / 64));
	csr_set(CSR_SIREG, 1UL << (id % 64));
}

uint32_t imsic_host_claim(void)
{
	/* read and claim in one csrrw: a write claims whatever is on top at that
	 * moment, which a separate read could not be sure was the one it saw */
	unsigned long top = csr_swap(CSR_STOPEI, 0);

	return (uint32_t)((top >> TOPEI_ID_SHIFT) & TOPEI_ID_MASK);
}
