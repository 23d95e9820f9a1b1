/* SPDX-License-Identifier: MIT */
/* Carapace's own S-level interrupt file on each hart (imsic.h): reached
 * through siselect/sireg and claimed through stopei, never through its
 * memory page (that page is for MSIs: the APLIC's, and later other harts'
 * IPIs). Called with interrupts off; siselect is not preserved (nothing else
 * in HS-mode uses it). And each hart's guest files: where they are, and their
 * state read, cleared and loaded through the VS CSRs. */
#include <arch/riscv/csr.h>
#include <hart.h>
#include <imsic.h>
#include <imsic_file.h>

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

void imsic_host_disable(uint32_t id)
{
	csr_write(CSR_SISELECT, ISELECT_EIE0 + 2 * (id / 64));
	csr_clear(CSR_SIREG, 1UL << (id % 64));
}

bool imsic_host_pending(uint32_t id)
{
	csr_write(CSR_SISELECT, ISELECT_EIP0 + 2 * (id / 64));
	return csr_read(CSR_SIREG) >> (id % 64) & 1;
}

void imsic_host_set_pending(uint32_t id)
{
	csr_write(CSR_SISELECT, ISELECT_EIP0 + 2 * (id / 64));
	csr_set(CSR_SIREG, 1UL << (id % 64));
}

bool imsic_host_claim_top(uint32_t id)
{
	if (((csr_read(CSR_STOPEI) >> TOPEI_ID_SHIFT) & TOPEI_ID_MASK) != id)
		return false;
	/* a higher identity could have come between the two only if @id were
	 * not the highest priority; only this hart claims from its file */
	csr_write(CSR_STOPEI, 0);
	return true;
}

uint32_t imsic_host_claim(void)
{
	/* read and claim in one csrrw: a write claims whatever is on top at that
	 * moment, which a separate read could not be sure was the one it saw */
	unsigned long top = csr_swap(CSR_STOPEI, 0);

	return (uint32_t)((top >> TOPEI_ID_SHIFT) & TOPEI_ID_MASK);
}

/* Each hart's guest files: the S file's page and how many follow it. */
static struct {
	uint64_t s_file;
	unsigned int nr;
} gfiles[HART_MAX];

unsigned int imsic_gfiles_setup(unsigned int hart, const struct imsic_host_desc *d,
				uint32_t pos, unsigned int geilen)
{
	unsigned int nr = geilen;
	uint64_t s_file, room;

	if (hart >= HART_MAX)
		return 0;
	gfiles[hart].nr = 0;
	if (!d->present || pos == IMSIC_NO_HART || d->guest_bits > IMSIC_MAX_GUEST_BITS)
		return 0;
	s_file = imsic_s_file_pa(d, pos);
	if (s_file < d->base || s_file - d->base >= d->size)
		return 0;
	/* pages of the hart's stride that reg holds, after the S file's */
	room = (d->size - (s_file - d->base)) / IMSIC_FILE_SIZE - 1;
	nr = MIN(nr, (1u << d->guest_bits) - 1);
	nr = MIN(nr, IMSIC_MAX_FILES);
	nr = (unsigned int)MIN((uint64_t)nr, room);
	gfiles[hart].s_file = s_file;
	gfiles[hart].nr = nr;
	return nr;
}

unsigned int imsic_gfiles_nr(unsigned int hart)
{
	return hart < HART_MAX ? gfiles[hart].nr : 0;
}

uint64_t gfile_pa(unsigned int hart, unsigned int f)
{
	if (!f || f > imsic_gfiles_nr(hart))
		return 0;
	return gfiles[hart].s_file + f * IMSIC_FILE_SIZE;
}

#ifndef HOST_TEST
static void page_store(uint64_t pa, uint32_t id)
{
	*(volatile uint32_t *)(uintptr_t)pa = id;
	asm volatile("fence iorw, iorw" ::: "memory");	/* it has reached the file */
}
#else
static void page_store(uint64_t pa, uint32_t id)
{
	if (fake_mmio_store32)	/* tests/unit: the fake IMSIC's pages */
		fake_mmio_store32(pa, id);
}
#endif

void imsic_gfile_send(unsigned int hart, unsigned int f, uint32_t id)
{
	uint64_t pa = gfile_pa(hart, f);

	if (pa)
		page_store(pa, id);
}

/* What reaching guest file f changes, put back afterwards. */
struct gfile_saved {
	unsigned long hstatus, vsiselect;
};

static bool gfile_select(unsigned int f, struct gfile_saved *saved)
{
	if (!f || f > IMSIC_MAX_FILES)
		return false;
	saved->hstatus = csr_read(CSR_HSTATUS);
	saved->vsiselect = csr_read(CSR_VSISELECT);
	csr_write(CSR_HSTATUS, (saved->hstatus & ~HSTATUS_VGEIN) |
			       ((unsigned long)f << HSTATUS_VGEIN_SHIFT));
	return true;
}

static void gfile_restore(const struct gfile_saved *saved)
{
	csr_write(CSR_VSISELECT, saved->vsiselect);
	csr_write(CSR_HSTATUS, saved->hstatus);
}

static unsigned long vsireg_swap(unsigned long isel, unsigned long v)
{
	csr_write(CSR_VSISELECT, isel);
	return csr_swap(CSR_VSIREG, v);
}

static void vsireg_write(unsigned long isel, unsigned long v)
{
	csr_write(CSR_VSISELECT, isel);
	csr_write(CSR_VSIREG, v);
}

/* eip/eie words of a file of @nr_ids identities */
static unsigned int gfile_words(uint32_t nr_ids)
{
	return MIN((nr_ids + 1) / 64, IMSIC_FILE_WORDS);
}

void imsic_gfile_read_clear(unsigned int f, uint32_t nr_ids, struct imsic_file *out)
{
	struct gfile_saved saved;

	imsic_file_reset(out);
	if (!gfile_select(f, &saved))
		return;
	out->eidelivery = (uint32_t)vsireg_swap(ISELECT_EIDELIVERY, 0);
	out->eithreshold = (uint32_t)vsireg_swap(ISELECT_EITHRESHOLD, 0);
	for (unsigned int k = 0; k < gfile_words(nr_ids); k++) {
		out->eip[k] = vsireg_swap(ISELECT_EIP0 + 2 * k, 0);
		out->eie[k] = vsireg_swap(ISELECT_EIE0 + 2 * k, 0);
	}
	gfile_restore(&saved);
}

void imsic_gfile_zero(unsigned int f, uint32_t nr_ids)
{
	struct gfile_saved saved;

	if (!gfile_select(f, &saved))
		return;
	vsireg_write(ISELECT_EIDELIVERY, 0);
	for (unsigned int k = 0; k < gfile_words(nr_ids); k++) {
		vsireg_write(ISELECT_EIP0 + 2 * k, 0);
		vsireg_write(ISELECT_EIE0 + 2 * k, 0);
	}
	vsireg_write(ISELECT_EITHRESHOLD, 0);
	gfile_restore(&saved);
}

void imsic_gfile_load(unsigned int f, uint32_t nr_ids, const struct imsic_file *in)
{
	struct gfile_saved saved;

	if (!gfile_select(f, &saved))
		return;
	for (unsigned int k = 0; k < gfile_words(nr_ids); k++) {
		csr_write(CSR_VSISELECT, ISELECT_EIP0 + 2 * k);
		csr_set(CSR_VSIREG, in->eip[k]);
	}
	for (unsigned int k = 0; k < gfile_words(nr_ids); k++)
		vsireg_write(ISELECT_EIE0 + 2 * k, in->eie[k]);
	vsireg_write(ISELECT_EITHRESHOLD, in->eithreshold);
	vsireg_write(ISELECT_EIDELIVERY, in->eidelivery);
	gfile_restore(&saved);
}
