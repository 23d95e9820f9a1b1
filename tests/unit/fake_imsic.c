/* SPDX-License-Identifier: MIT */
/* tests/unit/fake_imsic.h: an S-level interrupt file for code that reaches it
 * through csr_read/csr_write (hyp/drivers/imsic_host.c). */
#include <string.h>
#include <arch/riscv/csr.h>
#include "fake_imsic.h"
#include "test.h"

struct fake_imsic fake_imsic;

static bool exists(uint32_t id)
{
	return id && id <= fake_imsic.num_ids;
}

bool fake_imsic_pending(uint32_t id)
{
	return exists(id) && (fake_imsic.eip[id / 64] >> (id % 64) & 1);
}

bool fake_imsic_enabled(uint32_t id)
{
	return exists(id) && (fake_imsic.eie[id / 64] >> (id % 64) & 1);
}

uint32_t fake_imsic_top(void)
{
	uint32_t t = fake_imsic.eithreshold;

	/* the lowest identity is the highest priority; a threshold T lets only
	 * identities below T through (0: no threshold) */
	for (uint32_t id = 1; id <= fake_imsic.num_ids && (!t || id < t); id++)
		if (fake_imsic_pending(id) && fake_imsic_enabled(id))
			return id;
	return 0;
}

void fake_imsic_send(uint32_t id)
{
	if (exists(id))
		fake_imsic.eip[id / 64] |= 1ull << (id % 64);
}

/* The bits of array word @w that exist: no identity 0, none above num_ids. */
static uint64_t word_mask(unsigned int w)
{
	uint64_t m = ~0ull;

	if (w == 0)
		m &= ~1ull;
	if (64 * w > fake_imsic.num_ids)
		return 0;
	if (64 * w + 63 > fake_imsic.num_ids)
		m &= (1ull << (fake_imsic.num_ids - 64 * w + 1)) - 1;
	return m;
}

/* The register siselect names, NULL if none (counted). */
static uint64_t *selected(uint32_t **reg32, uint64_t *mask)
{
	unsigned long isel = fake_csr[CSR_SISELECT];

	*reg32 = NULL;
	if (isel == ISELECT_EIDELIVERY) {
		*reg32 = &fake_imsic.eidelivery;
		*mask = 1;
		return NULL;
	}
	if (isel == ISELECT_EITHRESHOLD) {
		*reg32 = &fake_imsic.eithreshold;
		*mask = 0x7ff;
		return NULL;
	}
	if (isel >= ISELECT_EIP0 && isel < ISELECT_EIE0 + 64 && !(isel & 1)) {
		bool eie = isel >= ISELECT_EIE0;
		unsigned int w = (unsigned int)(isel - (eie ? ISELECT_EIE0 : ISELECT_EIP0)) / 2;

		*mask = word_mask(w);
		return eie ? &fake_imsic.eie[w] : &fake_imsic.eip[w];
	}
	fake_imsic.bad_select++;
	return NULL;
}

static unsigned long sireg_read(unsigned int csr)
{
	uint32_t *r32;
	uint64_t mask, *r64 = selected(&r32, &mask);

	(void)csr;
	return r64 ? *r64 : r32 ? *r32 : 0;
}

static void sireg_write(unsigned int csr, unsigned long v)
{
	uint32_t *r32;
	uint64_t mask, *r64 = selected(&r32, &mask);

	(void)csr;
	if (r64)
		*r64 = v & mask;
	else if (r32)
		*r32 = (uint32_t)(v & mask);
}

static unsigned long stopei_read(unsigned int csr)
{
	uint32_t top = fake_imsic_top();

	(void)csr;
	return (unsigned long)top << TOPEI_ID_SHIFT | top;
}

static void stopei_write(unsigned int csr, unsigned long v)
{
	uint32_t top = fake_imsic_top();

	(void)csr;
	(void)v;	/* any write claims the top identity */
	fake_imsic.claims++;
	if (top)
		fake_imsic.eip[top / 64] &= ~(1ull << (top % 64));
}

static unsigned long sip_read(unsigned int csr)
{
	unsigned long sip = fake_csr[csr] & ~MIP_SEIP;

	return sip | (fake_imsic.eidelivery && fake_imsic_top() ? MIP_SEIP : 0);
}

void fake_imsic_install(uint32_t num_ids)
{
	memset(&fake_imsic, 0, sizeof(fake_imsic));
	fake_imsic.num_ids = num_ids;
	fake_csr_hook(CSR_SIREG, &(struct fake_csr_hook){ sireg_read, sireg_write });
	fake_csr_hook(CSR_STOPEI, &(struct fake_csr_hook){ stopei_read, stopei_write });
	fake_csr_hook(CSR_SIP, &(struct fake_csr_hook){ sip_read, NULL });
}
