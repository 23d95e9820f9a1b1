/* SPDX-License-Identifier: MIT */
/* tests/unit/fake_imsic.h: an S-level interrupt file and guest interrupt
 * files for code that reaches them through csr_read/csr_write
 * (hyp/drivers/imsic_host.c). */
#include <string.h>
#include <arch/riscv/csr.h>
#include "fake_imsic.h"
#include "test.h"

struct fake_imsic fake_imsic;

static bool exists(uint32_t id, uint32_t num_ids)
{
	return id && id <= num_ids;
}

static bool bit_of(const uint64_t *a, uint32_t id)
{
	return a[id / 64] >> (id % 64) & 1;
}

bool fake_imsic_pending(uint32_t id)
{
	return exists(id, fake_imsic.num_ids) && bit_of(fake_imsic.s.eip, id);
}

bool fake_imsic_enabled(uint32_t id)
{
	return exists(id, fake_imsic.num_ids) && bit_of(fake_imsic.s.eie, id);
}

static uint32_t file_top(const struct fake_imsic_file *f, uint32_t num_ids)
{
	uint32_t t = f->eithreshold;

	/* the lowest identity is the highest priority; a threshold T lets only
	 * identities below T through (0: no threshold) */
	for (uint32_t id = 1; id <= num_ids && (!t || id < t); id++)
		if (bit_of(f->eip, id) && bit_of(f->eie, id))
			return id;
	return 0;
}

uint32_t fake_imsic_top(void)
{
	return file_top(&fake_imsic.s, fake_imsic.num_ids);
}

static bool is_gfile(uint32_t f)
{
	return f && f <= fake_imsic.geilen;
}

uint32_t fake_imsic_gtop(uint32_t f)
{
	return is_gfile(f) ? file_top(&fake_imsic.g[f], fake_imsic.guest_ids) : 0;
}

static void file_send(struct fake_imsic_file *f, uint32_t num_ids, uint32_t id)
{
	if (exists(id, num_ids))
		f->eip[id / 64] |= 1ull << (id % 64);
}

void fake_imsic_send(uint32_t id)
{
	file_send(&fake_imsic.s, fake_imsic.num_ids, id);
}

void fake_imsic_gsend(uint32_t f, uint32_t id)
{
	if (is_gfile(f))
		file_send(&fake_imsic.g[f], fake_imsic.guest_ids, id);
}

/* A guest file's interrupt signal: hgeip bit f. */
static unsigned long hgeip_bits(void)
{
	unsigned long bits = 0;

	for (uint32_t f = 1; f <= fake_imsic.geilen; f++)
		if (fake_imsic.g[f].eidelivery && fake_imsic_gtop(f))
			bits |= 1ul << f;
	return bits;
}

static uint32_t vgein(void)
{
	return (uint32_t)((fake_csr[CSR_HSTATUS] & HSTATUS_VGEIN) >> HSTATUS_VGEIN_SHIFT);
}

/* The bits of array word @w that exist: no identity 0, none above @num_ids. */
static uint64_t word_mask(unsigned int w, uint32_t num_ids)
{
	uint64_t m = ~0ull;

	if (w == 0)
		m &= ~1ull;
	if (64 * w > num_ids)
		return 0;
	if (64 * w + 63 > num_ids)
		m &= (1ull << (num_ids - 64 * w + 1)) - 1;
	return m;
}

/* The register @isel names in file @f, NULL if none (counted). */
static uint64_t *selected(unsigned long isel, struct fake_imsic_file *f, uint32_t num_ids,
			  uint32_t **reg32, uint64_t *mask)
{
	*reg32 = NULL;
	if (isel == ISELECT_EIDELIVERY) {
		*reg32 = &f->eidelivery;
		*mask = 1;
		return NULL;
	}
	if (isel == ISELECT_EITHRESHOLD) {
		*reg32 = &f->eithreshold;
		*mask = 0x7ff;
		return NULL;
	}
	if (isel >= ISELECT_EIP0 && isel < ISELECT_EIE0 + 64 && !(isel & 1)) {
		bool eie = isel >= ISELECT_EIE0;
		unsigned int w = (unsigned int)(isel - (eie ? ISELECT_EIE0 : ISELECT_EIP0)) / 2;

		*mask = word_mask(w, num_ids);
		return eie ? &f->eie[w] : &f->eip[w];
	}
	fake_imsic.bad_select++;
	return NULL;
}

static unsigned long ireg_read(unsigned long isel, struct fake_imsic_file *f, uint32_t num_ids)
{
	uint32_t *r32;
	uint64_t mask, *r64 = selected(isel, f, num_ids, &r32, &mask);

	return r64 ? *r64 : r32 ? *r32 : 0;
}

static void ireg_write(unsigned long isel, struct fake_imsic_file *f, uint32_t num_ids,
		       unsigned long v)
{
	uint32_t *r32;
	uint64_t mask, *r64 = selected(isel, f, num_ids, &r32, &mask);

	if (r64)
		*r64 = v & mask;
	else if (r32)
		*r32 = (uint32_t)(v & mask);
}

static unsigned long sireg_read(unsigned int csr)
{
	(void)csr;
	return ireg_read(fake_csr[CSR_SISELECT], &fake_imsic.s, fake_imsic.num_ids);
}

static void sireg_write(unsigned int csr, unsigned long v)
{
	(void)csr;
	ireg_write(fake_csr[CSR_SISELECT], &fake_imsic.s, fake_imsic.num_ids, v);
}

/* The guest file VGEIN names for a VS CSR access, NULL (counted) if none. */
static struct fake_imsic_file *vs_file(void)
{
	if (is_gfile(vgein()))
		return &fake_imsic.g[vgein()];
	fake_imsic.bad_vgein++;
	return NULL;
}

static unsigned long vsireg_read(unsigned int csr)
{
	struct fake_imsic_file *f = vs_file();

	(void)csr;
	return f ? ireg_read(fake_csr[CSR_VSISELECT], f, fake_imsic.guest_ids) : 0;
}

static void vsireg_write(unsigned int csr, unsigned long v)
{
	struct fake_imsic_file *f = vs_file();

	(void)csr;
	if (fake_imsic.vs_writes < sizeof(fake_imsic.vs_trace) / sizeof(fake_imsic.vs_trace[0]))
		fake_imsic.vs_trace[fake_imsic.vs_writes] =
			vgein() << 16 | (uint32_t)(fake_csr[CSR_VSISELECT] & 0xffff);
	fake_imsic.vs_writes++;
	if (f)
		ireg_write(fake_csr[CSR_VSISELECT], f, fake_imsic.guest_ids, v);
}

static unsigned long topei(uint32_t top)
{
	return (unsigned long)top << TOPEI_ID_SHIFT | top;
}

/* any write claims the top identity, whatever the value */
static void claim(struct fake_imsic_file *f, uint32_t top)
{
	if (top)
		f->eip[top / 64] &= ~(1ull << (top % 64));
}

static unsigned long stopei_read(unsigned int csr)
{
	(void)csr;
	return topei(fake_imsic_top());
}

static void stopei_write(unsigned int csr, unsigned long v)
{
	(void)csr;
	(void)v;
	fake_imsic.claims++;
	claim(&fake_imsic.s, fake_imsic_top());
}

static unsigned long vstopei_read(unsigned int csr)
{
	(void)csr;
	return vs_file() ? topei(fake_imsic_gtop(vgein())) : 0;
}

static void vstopei_write(unsigned int csr, unsigned long v)
{
	(void)csr;
	(void)v;
	if (!vs_file())
		return;
	fake_imsic.vclaims++;
	claim(&fake_imsic.g[vgein()], fake_imsic_gtop(vgein()));
}

static unsigned long sip_read(unsigned int csr)
{
	unsigned long sip = fake_csr[csr] & ~MIP_SEIP;

	return sip | (fake_imsic.eidelivery && fake_imsic_top() ? MIP_SEIP : 0);
}

/* VGEIN is WLRL 0..GEILEN: a larger value is the writer's bug */
static void hstatus_write(unsigned int csr, unsigned long v)
{
	fake_csr[csr] = v;
	if (vgein() > fake_imsic.geilen)
		fake_imsic.bad_vgein++;
}

static unsigned long hgeip_read(unsigned int csr)
{
	(void)csr;
	return hgeip_bits();
}

static void hgeip_write(unsigned int csr, unsigned long v)
{
	(void)csr;
	(void)v;	/* read-only */
}

static void hgeie_write(unsigned int csr, unsigned long v)
{
	unsigned long files = ((1ul << fake_imsic.geilen) - 1) << 1;

	fake_csr[csr] = v & files;
}

static unsigned long hip_read(unsigned int csr)
{
	unsigned long hip = fake_csr[csr] & ~(MIP_VSEIP | BIT(IRQ_SGEI));
	unsigned long geip = hgeip_bits();

	if ((fake_csr[CSR_HVIP] & MIP_VSEIP) || (geip >> vgein() & 1 && vgein()))
		hip |= MIP_VSEIP;
	if (geip & fake_csr[CSR_HGEIE])
		hip |= BIT(IRQ_SGEI);
	return hip;
}

void fake_imsic_install(uint32_t num_ids)
{
	memset(&fake_imsic, 0, sizeof(fake_imsic));
	fake_imsic.num_ids = num_ids;
	fake_csr_hook(CSR_SIREG, &(struct fake_csr_hook){ sireg_read, sireg_write });
	fake_csr_hook(CSR_STOPEI, &(struct fake_csr_hook){ stopei_read, stopei_write });
	fake_csr_hook(CSR_SIP, &(struct fake_csr_hook){ sip_read, NULL });
}

void fake_imsic_install_guests(uint32_t geilen, uint32_t guest_ids)
{
	EXPECT_TRUE(geilen <= FAKE_IMSIC_MAX_GEILEN);
	fake_imsic.geilen = geilen <= FAKE_IMSIC_MAX_GEILEN ? geilen : FAKE_IMSIC_MAX_GEILEN;
	fake_imsic.guest_ids = guest_ids;
	memset(fake_imsic.g, 0, sizeof(fake_imsic.g));
	fake_csr_hook(CSR_VSIREG, &(struct fake_csr_hook){ vsireg_read, vsireg_write });
	fake_csr_hook(CSR_VSTOPEI, &(struct fake_csr_hook){ vstopei_read, vstopei_write });
	fake_csr_hook(CSR_HSTATUS, &(struct fake_csr_hook){ NULL, hstatus_write });
	fake_csr_hook(CSR_HGEIP, &(struct fake_csr_hook){ hgeip_read, hgeip_write });
	fake_csr_hook(CSR_HGEIE, &(struct fake_csr_hook){ NULL, hgeie_write });
	fake_csr_hook(CSR_HIP, &(struct fake_csr_hook){ hip_read, NULL });
}
