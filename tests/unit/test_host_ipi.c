/* SPDX-License-Identifier: MIT */
/* Host IPIs (hyp/drivers/host_ipi.c) on each of their three ways: the SSWI
 * (a store of 1, sip.SSIP), the IMSIC (a store of HOST_IPI_EIID to the
 * target's S file page, its S file the fake of fake_imsic.c, sip.SEIP) and
 * the firmware (an SBI IPI to the target's hart id); and the receiving side's
 * view of each: whether one came, taking it, holding it off. The "pages" are
 * words of this test's memory; what the IMSIC would do with a store there,
 * the test does (fake_imsic_send()). */
#include <string.h>
#include <arch/riscv/csr.h>
#include <host_ipi.h>
#include <imsic.h>
#include <sbi_client.h>
#include "fake_imsic.h"
#include "test.h"

#define HARTS	3
#define IDS	255

static const unsigned long hartids[HARTS] = { 4, 0, 9 };	/* firmware ids, by index */
static uint32_t pages[HARTS];			/* each hart's SSWI register or S file page */
static unsigned long sbi_ipis, sbi_mask, sbi_base;

long sbi_send_ipi(unsigned long hart_mask, unsigned long hart_mask_base)
{
	sbi_ipis++;
	sbi_mask = hart_mask;
	sbi_base = hart_mask_base;
	return 0;
}

static uint64_t addr_of(unsigned int i)
{
	return (uint64_t)(uintptr_t)&pages[i];
}

static void setup(void)
{
	memset(pages, 0, sizeof(pages));
	sbi_ipis = sbi_mask = sbi_base = 0;
	fake_csr_reset();
	fake_imsic_install(IDS);
}

/* The AIA machine: no SSWI, an S file per hart; this hart's set up as boot
 * does (hart_init_csrs()'s sie, then the file, then the IPI's identity). */
static void setup_imsic(void)
{
	uint64_t files[HARTS] = { addr_of(0), addr_of(1), addr_of(2) };

	setup();
	host_ipi_init(hartids, NULL, HARTS);
	EXPECT_TRUE(host_ipi_use_imsic(files, HARTS));
	fake_csr[CSR_SIE] = MIP_SSIP | MIP_STIP;
	imsic_host_hart_init(IDS, true);
	host_ipi_hart_init();
}

TEST(host_ipi_sswi_stores_one_and_is_preferred_to_the_imsic)
{
	uint64_t sswi[HARTS] = { addr_of(0), addr_of(1), addr_of(2) };
	uint64_t files[HARTS] = { 0x28000000, 0x28001000, 0x28002000 };

	setup();
	host_ipi_init(hartids, sswi, HARTS);
	EXPECT_TRUE(host_ipi_sswi());
	EXPECT_FALSE(host_ipi_use_imsic(files, HARTS));
	EXPECT_FALSE(host_ipi_imsic());
	host_ipi_send(2);
	EXPECT_EQ(pages[2], 1);
	EXPECT_EQ(pages[0] | pages[1], 0);
	EXPECT_EQ(sbi_ipis, 0);
	/* the receiving side: sip.SSIP, taken by clearing it; held in sie */
	fake_csr[CSR_SIE] = MIP_SSIP | MIP_STIP;
	fake_csr[CSR_SIP] = MIP_SSIP;
	EXPECT_TRUE(host_ipi_pending());
	EXPECT_FALSE(host_ipi_claim_ext());	/* never an external interrupt */
	host_ipi_hold();
	EXPECT_EQ(fake_csr[CSR_SIE], MIP_STIP);
	EXPECT_TRUE(host_ipi_pending());	/* held, still there */
	host_ipi_release();
	EXPECT_EQ(fake_csr[CSR_SIE], MIP_SSIP | MIP_STIP);
	host_ipi_clear();
	EXPECT_FALSE(host_ipi_pending());
}

TEST(host_ipi_without_sswi_or_imsic_goes_through_the_firmware)
{
	uint64_t files[HARTS] = { 0x28000000, 0, 0x28002000 };	/* hart 1 has none */

	setup();
	host_ipi_init(hartids, NULL, HARTS);
	EXPECT_FALSE(host_ipi_sswi());
	EXPECT_FALSE(host_ipi_use_imsic(files, HARTS));
	EXPECT_FALSE(host_ipi_use_imsic(NULL, HARTS));
	host_ipi_hart_init();
	EXPECT_EQ(fake_csr[CSR_SIE] & MIP_SEIP, 0);	/* no identity, no SEIE */
	EXPECT_FALSE(fake_imsic_enabled(HOST_IPI_EIID));
	host_ipi_send(2);
	EXPECT_EQ(sbi_ipis, 1);
	EXPECT_EQ(sbi_mask, 1);
	EXPECT_EQ(sbi_base, 9);			/* hart index 2's firmware id */
}

TEST(host_ipi_imsic_enables_its_identity_and_seie_on_every_hart)
{
	setup_imsic();
	EXPECT_TRUE(host_ipi_imsic());
	EXPECT_FALSE(host_ipi_sswi());
	EXPECT_TRUE(fake_imsic_enabled(HOST_IPI_EIID));
	EXPECT_EQ(fake_imsic.eie[0], 1ull << HOST_IPI_EIID);	/* that identity alone */
	EXPECT_EQ(fake_imsic.eidelivery, 1);
	EXPECT_EQ(fake_csr[CSR_SIE], MIP_SSIP | MIP_STIP | MIP_SEIP);
	EXPECT_EQ(fake_imsic.bad_select, 0);
}

TEST(host_ipi_imsic_stores_the_identity_to_the_targets_page)
{
	setup_imsic();
	host_ipi_send(1);
	EXPECT_EQ(pages[1], HOST_IPI_EIID);
	EXPECT_EQ(pages[0] | pages[2], 0);
	EXPECT_EQ(sbi_ipis, 0);
	host_ipi_send(0);
	EXPECT_EQ(pages[0], HOST_IPI_EIID);
}

/* What the exit path and the idle loops see of one that arrives. */
TEST(host_ipi_imsic_is_claimed_as_an_external_interrupt_once)
{
	setup_imsic();
	EXPECT_FALSE(host_ipi_pending());
	EXPECT_FALSE(host_ipi_claim_ext());
	fake_imsic_send(HOST_IPI_EIID);		/* the store's effect */
	EXPECT_TRUE(fake_csr_read(CSR_SIP) & MIP_SEIP);	/* what wakes a wfi */
	EXPECT_TRUE(host_ipi_pending());
	EXPECT_TRUE(host_ipi_claim_ext());
	EXPECT_FALSE(fake_imsic_pending(HOST_IPI_EIID));
	EXPECT_FALSE(fake_csr_read(CSR_SIP) & MIP_SEIP);
	EXPECT_FALSE(host_ipi_claim_ext());	/* one store, one claim */
	EXPECT_EQ(fake_imsic.claims, 1);
	/* several stores before the claim are one interrupt, as SSIP is */
	fake_imsic_send(HOST_IPI_EIID);
	fake_imsic_send(HOST_IPI_EIID);
	host_ipi_clear();
	EXPECT_FALSE(host_ipi_pending());
	EXPECT_EQ(fake_imsic.claims, 2);
	host_ipi_clear();			/* none: nothing claimed */
	EXPECT_EQ(fake_imsic.claims, 2);
}

/* Hart 0's file also holds the devices' identities: a claim for the IPI
 * never takes one of theirs, and the IPI comes first. */
TEST(host_ipi_imsic_claim_leaves_device_identities_alone)
{
	setup_imsic();
	imsic_host_enable(16);
	fake_imsic_send(16);
	EXPECT_FALSE(host_ipi_claim_ext());
	host_ipi_clear();
	EXPECT_TRUE(fake_imsic_pending(16));
	EXPECT_EQ(fake_imsic.claims, 0);
	fake_imsic_send(HOST_IPI_EIID);
	EXPECT_TRUE(host_ipi_claim_ext());
	EXPECT_TRUE(fake_imsic_pending(16));
	EXPECT_FALSE(fake_imsic_pending(HOST_IPI_EIID));
}

/* A landing-pad window holds kicks: the identity stays pending without a
 * signal (hart 0's devices still interrupt), and signals once released. */
TEST(host_ipi_imsic_hold_keeps_it_pending_without_a_signal)
{
	setup_imsic();
	host_ipi_hold();
	EXPECT_EQ(fake_csr[CSR_SIE] & MIP_SEIP, MIP_SEIP);	/* SEIE stays */
	fake_imsic_send(HOST_IPI_EIID);
	EXPECT_TRUE(host_ipi_pending());
	EXPECT_FALSE(fake_csr_read(CSR_SIP) & MIP_SEIP);
	EXPECT_FALSE(host_ipi_claim_ext());
	imsic_host_enable(16);
	fake_imsic_send(16);
	EXPECT_TRUE(fake_csr_read(CSR_SIP) & MIP_SEIP);	/* a device still signals */
	host_ipi_release();
	EXPECT_TRUE(host_ipi_claim_ext());
	EXPECT_TRUE(fake_imsic_pending(16));
}
