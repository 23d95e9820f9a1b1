/* SPDX-License-Identifier: MIT */
/* hyp/drivers/imsic_host.c's guest-file primitives (docs/design-aia.md 2.2,
 * 3.7): where each hart's guest files are, and a file's state read and
 * cleared, zeroed and loaded through vsiselect/vsireg with hstatus.VGEIN
 * juggled, against fake guest files by the AIA spec (fake_imsic.c). */
#include <string.h>
#include <arch/riscv/csr.h>
#include <imsic.h>
#include <imsic_file.h>
#include "fake_imsic.h"
#include "test.h"

#define IDS	255
#define GEILEN	3
/* hstatus of a loaded vCPU: SPV, VTW and VGEIN 2 (its own file), so a
 * restore that loses any of them shows */
#define HSTATUS_LOADED	((1ul << 7) | (1ul << 21) | (2ul << HSTATUS_VGEIN_SHIFT))
#define VSISELECT_LOADED 0x85ul

/* QEMU virt, aia-guests=3, 2 harts: each hart's S file then 3 guest files in
 * a 16 KiB stride */
static const struct imsic_host_desc qemu = {
	.present = true, .base = 0x28000000, .size = 0x8000,
	.num_ids = IDS, .guest_ids = IDS, .guest_bits = 2, .phandle = 9,
};

static void install(uint32_t guest_ids)
{
	fake_imsic_install(IDS);
	fake_imsic_install_guests(GEILEN, guest_ids);
	fake_csr_write(CSR_HSTATUS, HSTATUS_LOADED);
	fake_csr[CSR_VSISELECT] = VSISELECT_LOADED;
}

static void fill(struct fake_imsic_file *f, uint32_t guest_ids, unsigned int seed)
{
	memset(f, 0, sizeof(*f));
	f->eidelivery = 1;
	f->eithreshold = 200;
	for (unsigned int w = 0; w < (guest_ids + 1) / 64; w++) {
		f->eip[w] = 0x0123456789abcdefull * (seed + w) & ~(w ? 0 : 1ull);
		f->eie[w] = 0xfedcba9876543210ull * (seed + w + 1) & ~(w ? 0 : 1ull);
	}
}

static void expect_same(const struct imsic_file *a, const struct fake_imsic_file *b)
{
	EXPECT_EQ(a->eidelivery, b->eidelivery);
	EXPECT_EQ(a->eithreshold, b->eithreshold);
	for (unsigned int w = 0; w < 32; w++) {
		EXPECT_EQ(a->eip[w], b->eip[w]);
		EXPECT_EQ(a->eie[w], b->eie[w]);
	}
}

static bool file_zero(const struct fake_imsic_file *f)
{
	static const struct fake_imsic_file zero;

	return !memcmp(f, &zero, sizeof(zero));
}

static void expect_put_back(void)
{
	EXPECT_EQ(fake_csr[CSR_HSTATUS], HSTATUS_LOADED);
	EXPECT_EQ(fake_csr[CSR_VSISELECT], VSISELECT_LOADED);
	EXPECT_EQ(fake_imsic.bad_select, 0);
	EXPECT_EQ(fake_imsic.bad_vgein, 0);
}

TEST(imsic_gfiles_on_qemu_virt)
{
	EXPECT_EQ(imsic_gfiles_setup(0, &qemu, 0, GEILEN), 3);
	EXPECT_EQ(imsic_gfiles_setup(1, &qemu, 1, GEILEN), 3);
	EXPECT_EQ(imsic_gfiles_nr(0), 3);
	EXPECT_EQ(gfile_pa(0, 1), 0x28001000);
	EXPECT_EQ(gfile_pa(0, 3), 0x28003000);
	EXPECT_EQ(gfile_pa(1, 1), 0x28005000);
	EXPECT_EQ(gfile_pa(1, 2), 0x28006000);	/* design-aia 1.1's example */
	EXPECT_EQ(gfile_pa(1, 3), 0x28007000);
	/* never the S file, never past the usable ones, never another hart's */
	EXPECT_EQ(gfile_pa(0, 0), 0);
	EXPECT_EQ(gfile_pa(0, 4), 0);
	EXPECT_EQ(gfile_pa(1, 4), 0);
	EXPECT_EQ(gfile_pa(0, ~0u), 0);
	/* harts set up in another order than their positions */
	EXPECT_EQ(imsic_gfiles_setup(0, &qemu, 1, GEILEN), 3);
	EXPECT_EQ(gfile_pa(0, 1), 0x28005000);
	/* harts never set up, and beyond the table */
	EXPECT_EQ(imsic_gfiles_nr(5), 0);
	EXPECT_EQ(gfile_pa(5, 1), 0);
	EXPECT_EQ(imsic_gfiles_setup(~0u, &qemu, 0, GEILEN), 0);
	EXPECT_EQ(gfile_pa(~0u, 1), 0);
}

TEST(imsic_gfiles_usable_is_the_least_of_geilen_index_bits_and_reg)
{
	struct imsic_host_desc d = qemu;

	/* GEILEN limits */
	EXPECT_EQ(imsic_gfiles_setup(0, &d, 0, 1), 1);
	EXPECT_EQ(gfile_pa(0, 2), 0);
	EXPECT_EQ(imsic_gfiles_setup(0, &d, 0, 0), 0);
	EXPECT_EQ(gfile_pa(0, 1), 0);
	/* guest-index-bits limits: 2 bits hold files 1..3 */
	EXPECT_EQ(imsic_gfiles_setup(0, &d, 0, 7), 3);
	d.guest_bits = 0;			/* aia-guests=0 */
	EXPECT_EQ(imsic_gfiles_setup(0, &d, 0, 7), 0);
	/* Carapace uses 7 at most */
	d.guest_bits = 4;
	d.size = 0x100000;
	EXPECT_EQ(imsic_gfiles_setup(0, &d, 0, 15), IMSIC_MAX_FILES);
	EXPECT_EQ(gfile_pa(0, IMSIC_MAX_FILES), 0x28007000);
	EXPECT_EQ(gfile_pa(0, IMSIC_MAX_FILES + 1), 0);
	/* a reg that ends early: only pages inside it */
	d = qemu;
	d.size = 0x6000;			/* hart 1's S file and one guest file */
	EXPECT_EQ(imsic_gfiles_setup(1, &d, 1, GEILEN), 1);
	EXPECT_EQ(gfile_pa(1, 1), 0x28005000);
	EXPECT_EQ(gfile_pa(1, 2), 0);
	d.size = 0x5000;
	EXPECT_EQ(imsic_gfiles_setup(1, &d, 1, GEILEN), 0);
	d.size = 0x4000;			/* not even the S file */
	EXPECT_EQ(imsic_gfiles_setup(1, &d, 1, GEILEN), 0);
	/* no IMSIC, no position: none, and a previous setup is forgotten */
	EXPECT_EQ(imsic_gfiles_setup(1, &qemu, 1, GEILEN), 3);
	EXPECT_EQ(imsic_gfiles_setup(1, &qemu, IMSIC_NO_HART, GEILEN), 0);
	EXPECT_EQ(gfile_pa(1, 1), 0);
	d = qemu;
	d.present = false;
	EXPECT_EQ(imsic_gfiles_setup(1, &d, 1, GEILEN), 0);
}

TEST(imsic_gfile_read_clear_then_load_restores_the_file)
{
	struct fake_imsic_file orig;
	struct imsic_file sw;

	install(IDS);
	fill(&fake_imsic.g[1], IDS, 1);
	fill(&fake_imsic.g[2], IDS, 7);		/* the loaded vCPU's file: not touched */
	orig = fake_imsic.g[1];
	imsic_gfile_read_clear(1, IDS, &sw);
	expect_same(&sw, &orig);
	EXPECT_TRUE(file_zero(&fake_imsic.g[1]));
	expect_put_back();
	/* load it into another file, as a move does */
	fill(&fake_imsic.g[3], IDS, 3);		/* a previous owner's leftovers */
	imsic_gfile_zero(3, IDS);
	EXPECT_TRUE(file_zero(&fake_imsic.g[3]));
	expect_put_back();
	imsic_gfile_load(3, IDS, &sw);
	expect_same(&sw, &fake_imsic.g[3]);
	expect_put_back();
	/* its signal shows in hgeip bit 3 once loaded (delivery on, a top below
	 * the threshold) */
	EXPECT_NE(fake_imsic_gtop(3), 0);
	EXPECT_EQ(fake_csr_read(CSR_HGEIP) >> 3 & 1, 1);
	EXPECT_EQ(fake_csr_read(CSR_HGEIP) >> 1 & 1, 0);
	/* the loaded vCPU's file was never touched */
	fill(&orig, IDS, 7);
	EXPECT_EQ(memcmp(&fake_imsic.g[2], &orig, sizeof(orig)), 0);
}

TEST(imsic_gfile_read_clear_stops_delivery_first)
{
	struct imsic_file sw;

	install(IDS);
	fill(&fake_imsic.g[2], IDS, 2);
	imsic_gfile_read_clear(2, IDS, &sw);
	EXPECT_EQ(fake_imsic.vs_writes, 2 + 2 * 4);	/* delivery, threshold, 4 words each of eip/eie */
	EXPECT_EQ(fake_imsic.vs_trace[0], 2 << 16 | ISELECT_EIDELIVERY);
	EXPECT_EQ(fake_imsic.vs_trace[1], 2 << 16 | ISELECT_EITHRESHOLD);
	for (unsigned int i = 0; i < fake_imsic.vs_writes; i++)
		EXPECT_EQ(fake_imsic.vs_trace[i] >> 16, 2);	/* every access with VGEIN 2 */
	expect_put_back();
}

TEST(imsic_gfile_zero_and_load_order)
{
	struct imsic_file sw;

	install(IDS);
	imsic_gfile_zero(1, IDS);
	EXPECT_EQ(fake_imsic.vs_trace[0], 1 << 16 | ISELECT_EIDELIVERY);	/* stop it first */
	EXPECT_EQ(fake_imsic.vs_trace[fake_imsic.vs_writes - 1], 1 << 16 | ISELECT_EITHRESHOLD);
	fake_imsic.vs_writes = 0;
	imsic_file_reset(&sw);
	sw.eidelivery = 1;
	imsic_gfile_load(1, IDS, &sw);
	/* delivery last: the file signals only once it is whole */
	EXPECT_EQ(fake_imsic.vs_trace[fake_imsic.vs_writes - 1], 1 << 16 | ISELECT_EIDELIVERY);
	EXPECT_EQ(fake_imsic.vs_trace[fake_imsic.vs_writes - 2], 1 << 16 | ISELECT_EITHRESHOLD);
	EXPECT_EQ(fake_imsic.vs_trace[0], 1 << 16 | ISELECT_EIP0);
	expect_put_back();
}

TEST(imsic_gfile_load_keeps_bits_already_pending)
{
	struct imsic_file sw;

	install(IDS);
	imsic_file_reset(&sw);
	sw.eip[0] = 1ull << 5;
	sw.eie[0] = 1ull << 5 | 1ull << 9;
	fake_imsic_gsend(1, 9);			/* arrived between the zeroing and the load */
	fake_imsic_gsend(1, 200);
	imsic_gfile_load(1, IDS, &sw);
	EXPECT_EQ(fake_imsic.g[1].eip[0], 1ull << 5 | 1ull << 9);
	EXPECT_EQ(fake_imsic.g[1].eip[3], 1ull << 8);
	EXPECT_EQ(fake_imsic.g[1].eie[0], 1ull << 5 | 1ull << 9);
	expect_put_back();
}

TEST(imsic_gfile_touches_only_the_words_that_exist)
{
	struct fake_imsic_file orig;
	struct imsic_file sw;

	install(63);				/* word 0 only */
	fill(&fake_imsic.g[1], 63, 4);
	imsic_gfile_read_clear(1, 63, &sw);
	EXPECT_EQ(fake_imsic.vs_writes, 4);
	EXPECT_EQ(sw.eip[1] | sw.eie[1], 0);
	imsic_gfile_zero(1, 63);
	imsic_gfile_load(1, 63, &sw);
	EXPECT_EQ(fake_imsic.vs_writes, 4 + 4 + 4);
	expect_put_back();
	/* 2047 identities: all 32 words */
	install(2047);
	fill(&fake_imsic.g[3], 2047, 9);
	orig = fake_imsic.g[3];
	EXPECT_NE(orig.eip[31], 0);
	imsic_gfile_read_clear(3, 2047, &sw);
	expect_same(&sw, &orig);
	EXPECT_EQ(fake_imsic.vs_writes, 2 + 2 * 32);
	expect_put_back();
}

TEST(imsic_gfile_refuses_file_numbers_it_never_uses)
{
	struct imsic_file sw;

	install(IDS);
	memset(&sw, 0xa5, sizeof(sw));
	imsic_gfile_read_clear(0, IDS, &sw);	/* VGEIN 0 would be no file at all */
	EXPECT_EQ(sw.eidelivery | sw.eithreshold, 0);
	EXPECT_EQ(sw.eip[0] | sw.eie[31], 0);
	imsic_gfile_zero(IMSIC_MAX_FILES + 1, IDS);
	imsic_gfile_load(0, IDS, &sw);
	imsic_gfile_load(64, IDS, &sw);
	EXPECT_EQ(fake_imsic.vs_writes, 0);
	EXPECT_EQ(fake_csr_nr_writes[CSR_HSTATUS], 1);	/* install()'s own */
	expect_put_back();
}

TEST(imsic_gfile_from_hs_with_no_vcpu_loaded)
{
	struct imsic_file sw;

	install(IDS);
	fake_csr_write(CSR_HSTATUS, 0);		/* VGEIN 0: nothing loaded */
	fake_csr[CSR_VSISELECT] = 0;
	fill(&fake_imsic.g[2], IDS, 5);
	imsic_gfile_read_clear(2, IDS, &sw);
	EXPECT_EQ(sw.eidelivery, 1);
	EXPECT_EQ(fake_csr[CSR_HSTATUS], 0);
	EXPECT_EQ(fake_csr[CSR_VSISELECT], 0);
	EXPECT_EQ(fake_imsic.bad_vgein, 0);
}

/* The fake itself, as stage 4's tests will lean on it: a guest file's signal
 * reaches hgeip, hip.VSEIP through VGEIN and hip.SGEIP through hgeie. */
TEST(fake_guest_files_signal_through_hgeip_and_hip)
{
	install(IDS);
	fake_csr_write(CSR_HGEIE, ~0ul);
	EXPECT_EQ(fake_csr[CSR_HGEIE], 0xeul);	/* files 1..3 only */
	fake_csr_write(CSR_HGEIE, 0);
	fake_imsic.g[2].eie[0] = 1ull << 4;
	fake_imsic_gsend(2, 4);
	EXPECT_EQ(fake_csr_read(CSR_HGEIP), 0);	/* delivery off */
	fake_imsic.g[2].eidelivery = 1;
	EXPECT_EQ(fake_csr_read(CSR_HGEIP), 1ul << 2);
	EXPECT_TRUE(fake_csr_read(CSR_HIP) & MIP_VSEIP);	/* VGEIN 2 */
	EXPECT_FALSE(fake_csr_read(CSR_HIP) & BIT(IRQ_SGEI));
	fake_csr_write(CSR_HGEIE, 1ul << 2);
	EXPECT_TRUE(fake_csr_read(CSR_HIP) & BIT(IRQ_SGEI));
	fake_csr_write(CSR_HSTATUS, 1ul << HSTATUS_VGEIN_SHIFT);
	EXPECT_FALSE(fake_csr_read(CSR_HIP) & MIP_VSEIP);
	/* vstopei: VGEIN's file; a write claims its top */
	fake_csr_write(CSR_HSTATUS, 2ul << HSTATUS_VGEIN_SHIFT);
	EXPECT_EQ(csr_swap(CSR_VSTOPEI, 0), 4ul << 16 | 4);
	EXPECT_EQ(fake_csr_read(CSR_HGEIP), 0);
	/* VGEIN past GEILEN, and a VS access with VGEIN 0: counted */
	fake_csr_write(CSR_HSTATUS, 4ul << HSTATUS_VGEIN_SHIFT);
	EXPECT_EQ(fake_imsic.bad_vgein, 1);
	fake_csr_write(CSR_HSTATUS, 0);
	(void)fake_csr_read(CSR_VSIREG);
	EXPECT_EQ(fake_imsic.bad_vgein, 2);
}
