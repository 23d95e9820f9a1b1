/* SPDX-License-Identifier: MIT */
/* The AIA host interrupt backend (hyp/drivers/aplic_host.c, imsic_host.c,
 * through the host_irq.c front end) against a fake S-level APLIC domain in
 * MSI mode and a fake S-level IMSIC file (fake_imsic.c), each by the AIA
 * spec: sources the parent domain did not delegate read 0, a level source
 * becomes pending on a rising input and setipnum only while its input is
 * high, an edge source on a rising edge or any setipnum; with IE, an enabled
 * pending source is sent at once to its target's identity (its pending bit
 * cleared), here hart 0's S file. */
#include <string.h>
#include <errno.h>
#include <arch/riscv/csr.h>
#include <host_irq.h>
#include "fake_imsic.h"
#include "test.h"

#define SOURCES		96	/* QEMU virt's riscv,num-sources */
#define HART_INDEX	5	/* hart 0's position in the IMSIC node (not 0: seen in target) */
#define IDS		255

static struct fake_aplic {
	bool msi_mode;			/* DM reads 1 */
	uint32_t domaincfg;
	uint32_t sourcecfg[APLIC_MAX_SOURCES], target[APLIC_MAX_SOURCES];
	bool delegated[APLIC_MAX_SOURCES];	/* by the M-level parent */
	bool enabled[APLIC_MAX_SOURCES], pending[APLIC_MAX_SOURCES], input[APLIC_MAX_SOURCES];
	unsigned int msis, setipnums, bad_access, bad_target;
} fa;

static bool level(uint32_t i)
{
	return fa.sourcecfg[i] == APLIC_SM_LEVEL_HIGH || fa.sourcecfg[i] == APLIC_SM_LEVEL_LOW;
}

/* The input as the source mode sees it (low-active and falling modes invert). */
static bool rectified(uint32_t i)
{
	bool inv = fa.sourcecfg[i] == APLIC_SM_LEVEL_LOW || fa.sourcecfg[i] == APLIC_SM_EDGE_FALL;

	return fa.input[i] != inv;
}

/* MSI mode: every enabled pending source of an enabled domain is sent. */
static void forward(void)
{
	if (!(fa.domaincfg & APLIC_DOMAINCFG_IE))
		return;
	for (uint32_t i = 1; i <= SOURCES; i++) {
		if (!fa.pending[i] || !fa.enabled[i] || !fa.sourcecfg[i])
			continue;
		fa.pending[i] = false;
		fa.msis++;
		if (fa.target[i] >> APLIC_TARGET_HART_SHIFT != HART_INDEX ||
		    (fa.target[i] >> 12 & 0x3f)) {
			fa.bad_target++;	/* another hart's file, or a guest file */
			continue;
		}
		fake_imsic_send(fa.target[i] & APLIC_TARGET_EIID_MASK);
	}
}

/* The device drives source @i's line. */
static void line(uint32_t i, bool high)
{
	bool was = fa.sourcecfg[i] ? rectified(i) : false;

	fa.input[i] = high;
	if (!fa.sourcecfg[i])
		return;
	if (!was && rectified(i))
		fa.pending[i] = true;		/* a rising edge, both kinds */
	else if (level(i) && !rectified(i))
		fa.pending[i] = false;		/* a level source follows its input down */
	forward();
}

static uint32_t fake_rd(void *ctx, uint64_t off)
{
	(void)ctx;
	if (off == APLIC_DOMAINCFG)
		return 0x80000000u | fa.domaincfg | (fa.msi_mode ? APLIC_DOMAINCFG_DM : 0);
	if (off >= APLIC_SOURCECFG(1) && off <= APLIC_SOURCECFG(SOURCES))
		return fa.sourcecfg[off / 4];
	if (off >= APLIC_TARGET(1) && off <= APLIC_TARGET(SOURCES))
		return fa.target[(off - APLIC_TARGET(0)) / 4];
	fa.bad_access++;
	return 0;
}

static void fake_wr(void *ctx, uint64_t off, uint32_t v)
{
	(void)ctx;
	if (off == APLIC_DOMAINCFG) {
		fa.domaincfg = v & APLIC_DOMAINCFG_IE;	/* DM is read-only: the mode is fixed */
	} else if (off >= APLIC_SOURCECFG(1) && off <= APLIC_SOURCECFG(SOURCES)) {
		uint32_t i = (uint32_t)(off / 4);

		fa.sourcecfg[i] = fa.delegated[i] && (v == 1 || (v >= 4 && v <= 7)) ? v : 0;
	} else if (off >= APLIC_TARGET(1) && off <= APLIC_TARGET(SOURCES)) {
		uint32_t i = (uint32_t)((off - APLIC_TARGET(0)) / 4);

		fa.target[i] = fa.sourcecfg[i] ? v & 0xfffff7ffu : 0;
	} else if (off == APLIC_SETIENUM || off == APLIC_CLRIENUM) {
		if (v >= 1 && v <= SOURCES && fa.sourcecfg[v])
			fa.enabled[v] = off == APLIC_SETIENUM;
	} else if (off == APLIC_SETIPNUM_LE) {
		fa.setipnums++;
		/* a level source takes it only while its input is asserted */
		if (v >= 1 && v <= SOURCES && fa.sourcecfg[v] && (!level(v) || rectified(v)))
			fa.pending[v] = true;
	} else {
		fa.bad_access++;
	}
	forward();
}

static unsigned int calls[APLIC_MAX_SOURCES];
static bool lower_on_call[APLIC_MAX_SOURCES];	/* the handler quiets its device */

static void handler(void *ctx)
{
	uint32_t irq = (uint32_t)(uintptr_t)ctx;

	calls[irq]++;
	if (lower_on_call[irq])
		line(irq, false);
}

static const struct irqchip_regs regs = { fake_rd, fake_wr, NULL };

static void setup(void)
{
	memset(&fa, 0, sizeof(fa));
	memset(calls, 0, sizeof(calls));
	memset(lower_on_call, 0, sizeof(lower_on_call));
	fake_csr_reset();
	fake_imsic_install(IDS);
	fa.msi_mode = true;
	for (uint32_t i = 1; i <= SOURCES; i++)
		fa.delegated[i] = true;
	imsic_host_hart_init(IDS, true);
	EXPECT_EQ(host_irq_init_aia_regs(&regs, SOURCES, HART_INDEX, IDS), 0);
}

TEST(imsic_host_hart_init_clears_the_file_and_sets_delivery)
{
	fake_csr_reset();
	fake_imsic_install(IDS);
	fake_imsic.eidelivery = 1;		/* whatever the firmware left */
	fake_imsic.eithreshold = 9;
	for (unsigned int w = 0; w < 4; w++)
		fake_imsic.eip[w] = fake_imsic.eie[w] = ~0ull << (w ? 0 : 1);
	imsic_host_hart_init(IDS, false);
	EXPECT_EQ(fake_imsic.eidelivery, 0);
	EXPECT_EQ(fake_imsic.eithreshold, 0);
	for (unsigned int w = 0; w < 4; w++)
		EXPECT_EQ(fake_imsic.eip[w] | fake_imsic.eie[w], 0);
	EXPECT_EQ(fake_imsic.bad_select, 0);	/* never an odd or absent register */
	imsic_host_hart_init(IDS, true);
	EXPECT_EQ(fake_imsic.eidelivery, 1);
	EXPECT_EQ(fake_imsic.bad_select, 0);
}

TEST(imsic_host_hart_init_touches_only_the_words_that_exist)
{
	fake_csr_reset();
	fake_imsic_install(63);			/* the least an IMSIC has: word 0 only */
	imsic_host_hart_init(63, true);
	EXPECT_EQ(fake_imsic.bad_select, 0);
	EXPECT_EQ(fake_csr_nr_writes[CSR_SIREG], 5);	/* delivery, eie0, eip0, threshold, delivery */
}

TEST(imsic_host_claim_takes_the_lowest_identity_once)
{
	fake_csr_reset();
	fake_imsic_install(IDS);
	imsic_host_hart_init(IDS, true);
	EXPECT_EQ(imsic_host_claim(), 0);
	imsic_host_enable(70);
	imsic_host_enable(17);
	EXPECT_TRUE(fake_imsic_enabled(70) && fake_imsic_enabled(17));
	EXPECT_EQ(fake_imsic.eie[0], 1ull << 17);	/* its word's other bits untouched */
	fake_imsic_send(70);
	fake_imsic_send(17);
	fake_imsic_send(18);			/* pending, not enabled: never claimed */
	EXPECT_EQ(imsic_host_claim(), 17);
	EXPECT_EQ(imsic_host_claim(), 70);
	EXPECT_EQ(imsic_host_claim(), 0);
	EXPECT_TRUE(fake_imsic_pending(18));
}

TEST(host_irq_init_aia_refuses_a_direct_mode_domain_and_bad_numbers)
{
	fake_csr_reset();
	fake_imsic_install(IDS);
	memset(&fa, 0, sizeof(fa));		/* DM stays 0 whatever is written */
	EXPECT_EQ(host_irq_init_aia_regs(&regs, SOURCES, 0, IDS), -HYP_ENOENT);
	EXPECT_EQ(host_irq_chip(), HOST_IRQ_NONE);
	fa.msi_mode = true;
	EXPECT_EQ(host_irq_init_aia_regs(&regs, 0, 0, IDS), -HYP_EINVAL);
	EXPECT_EQ(host_irq_init_aia_regs(&regs, APLIC_MAX_SOURCES, 0, IDS), -HYP_EINVAL);
	EXPECT_EQ(host_irq_init_aia_regs(&regs, SOURCES, APLIC_TARGET_HART_MAX + 1, IDS),
		  -HYP_EINVAL);
	EXPECT_EQ(host_irq_init_aia_regs(&regs, SOURCES, 0, 62), -HYP_EINVAL);
	EXPECT_EQ(host_irq_init_aia_regs(&regs, SOURCES, 0, IDS), 0);
	EXPECT_EQ(host_irq_chip(), HOST_IRQ_AIA);
	EXPECT_STREQ(host_irq_chip_name(), "aia");
	EXPECT_EQ(fa.domaincfg & APLIC_DOMAINCFG_IE, 0);	/* nothing registered yet */
}

TEST(host_irq_register_routes_the_source_to_hart0s_file)
{
	setup();
	EXPECT_EQ(fake_csr[CSR_SIE] & MIP_SEIP, 0);
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	EXPECT_EQ(fa.sourcecfg[33], APLIC_SM_LEVEL_HIGH);
	EXPECT_EQ(fa.target[33], HART_INDEX << APLIC_TARGET_HART_SHIFT | HOST_IRQ_EIID_BASE);
	EXPECT_TRUE(fa.enabled[33]);
	EXPECT_TRUE(fake_imsic_enabled(HOST_IRQ_EIID_BASE));
	EXPECT_EQ(fa.domaincfg, APLIC_DOMAINCFG_IE);
	EXPECT_TRUE(fake_csr[CSR_SIE] & MIP_SEIP);
	/* the next slot, the next identity; the trigger from the specifier */
	EXPECT_EQ(host_irq_register_type(8, HOST_IRQ_EDGE_RISING, handler, (void *)8), 0);
	EXPECT_EQ(fa.sourcecfg[8], APLIC_SM_EDGE_RISE);
	EXPECT_EQ(fa.target[8] & APLIC_TARGET_EIID_MASK, HOST_IRQ_EIID_BASE + 1);
	EXPECT_EQ(host_irq_register_type(9, HOST_IRQ_EDGE_FALLING, handler, (void *)9), 0);
	EXPECT_EQ(fa.sourcecfg[9], APLIC_SM_EDGE_FALL);
	fa.input[10] = true;			/* a low-active line, not asserted */
	EXPECT_EQ(host_irq_register_type(10, HOST_IRQ_LEVEL_LOW, handler, (void *)10), 0);
	EXPECT_EQ(fa.sourcecfg[10], APLIC_SM_LEVEL_LOW);
	EXPECT_EQ(fa.bad_access, 0);
	EXPECT_EQ(fa.msis, 0);			/* no line is asserted: nothing sent */
	line(10, false);			/* asserted */
	EXPECT_EQ(fa.msis, 1);
	EXPECT_TRUE(fake_imsic_pending(HOST_IRQ_EIID_BASE + 3));
}

TEST(host_irq_register_refuses_bad_types_and_undelegated_sources)
{
	setup();
	EXPECT_EQ(host_irq_register_type(33, 3, handler, NULL), -HYP_EINVAL);
	EXPECT_EQ(host_irq_register_type(33, 0, handler, NULL), -HYP_EINVAL);
	EXPECT_EQ(fa.sourcecfg[33], 0);		/* nothing written */
	EXPECT_EQ(host_irq_register(0, handler, NULL), -HYP_EINVAL);
	EXPECT_EQ(host_irq_register(SOURCES + 1, handler, NULL), -HYP_EINVAL);
	fa.delegated[40] = false;		/* the parent domain kept it */
	EXPECT_EQ(host_irq_register(40, handler, (void *)40), -HYP_ENOENT);
	EXPECT_FALSE(fa.enabled[40]);
	EXPECT_EQ(fa.domaincfg & APLIC_DOMAINCFG_IE, 0);
	/* the refusal took no slot: the next source gets the first identity */
	EXPECT_EQ(host_irq_register(41, handler, (void *)41), 0);
	EXPECT_EQ(fa.target[41] & APLIC_TARGET_EIID_MASK, HOST_IRQ_EIID_BASE);
	EXPECT_EQ(host_irq_register(41, handler, (void *)41), -HYP_EINVAL);	/* taken */
}

TEST(host_irq_handle_dispatches_an_msi_once_when_the_device_quiets)
{
	setup();
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	EXPECT_EQ(host_irq_register(8, handler, (void *)8), 0);
	lower_on_call[33] = lower_on_call[8] = true;
	line(33, true);
	line(8, true);
	EXPECT_EQ(fa.msis, 2);
	EXPECT_TRUE(fake_csr_read(CSR_SIP) & MIP_SEIP);
	host_irq_handle();
	EXPECT_EQ(calls[33], 1);
	EXPECT_EQ(calls[8], 1);
	EXPECT_EQ(fake_imsic.claims, 3);	/* the third finds none */
	EXPECT_EQ(fa.setipnums, 2 + 2);		/* one at each registration, one per completion */
	EXPECT_EQ(fa.msis, 2);			/* the lines were low: no retrigger took */
	EXPECT_EQ(host_irq_get_stats().handled, 2);
	EXPECT_FALSE(fake_csr_read(CSR_SIP) & MIP_SEIP);
}

/* MSI mode clears a level source's pending bit when it is sent: a line still
 * high after the handler is sent again only because completion asks. */
TEST(host_irq_handle_retriggers_a_level_line_still_high)
{
	setup();
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	line(33, true);			/* and stays high: the handler does not quiet it */
	host_irq_handle();
	EXPECT_EQ(calls[33], HOST_IRQ_MAX_CLAIMS);	/* sent again after each completion */
	EXPECT_EQ(host_irq_get_stats().cut, 1);
	EXPECT_TRUE(fake_imsic_pending(HOST_IRQ_EIID_BASE));	/* left for the next call */
	line(33, false);
	host_irq_handle();		/* the one left pending is still delivered */
	EXPECT_EQ(calls[33], HOST_IRQ_MAX_CLAIMS + 1);
	host_irq_handle();
	EXPECT_EQ(calls[33], HOST_IRQ_MAX_CLAIMS + 1);
}

TEST(host_irq_register_catches_a_line_already_high)
{
	setup();
	fa.input[33] = true;		/* asserted before its source was active: no edge */
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	EXPECT_EQ(fa.msis, 1);
	lower_on_call[33] = true;
	host_irq_handle();
	EXPECT_EQ(calls[33], 1);
}

TEST(host_irq_handle_edge_sources_are_not_retriggered)
{
	setup();
	EXPECT_EQ(host_irq_register_type(8, HOST_IRQ_EDGE_RISING, handler, (void *)8), 0);
	EXPECT_EQ(fa.setipnums, 0);	/* an edge source needs no catching up */
	line(8, true);			/* stays high: one edge, one interrupt */
	host_irq_handle();
	EXPECT_EQ(calls[8], 1);
	EXPECT_EQ(fa.setipnums, 0);
	line(8, false);
	line(8, true);
	host_irq_handle();
	EXPECT_EQ(calls[8], 2);
}

TEST(host_irq_handle_counts_an_identity_no_source_has)
{
	setup();
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	imsic_host_enable(5);		/* enabled by someone, sent by someone */
	fake_imsic_send(5);
	imsic_host_enable(IDS);
	fake_imsic_send(IDS);
	host_irq_handle();
	EXPECT_EQ(calls[33], 0);
	EXPECT_EQ(host_irq_get_stats().unknown, 2);
	EXPECT_EQ(host_irq_get_stats().handled, 0);
	EXPECT_EQ(fa.setipnums, 1);	/* the registration's only: nothing to retrigger */
	EXPECT_FALSE(fake_imsic_pending(5) || fake_imsic_pending(IDS));	/* claimed */
}

TEST(host_irq_poll_on_aia_claims_only_with_the_file_signalling)
{
	setup();
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	lower_on_call[33] = true;
	host_irq_poll();
	EXPECT_EQ(fake_imsic.claims, 0);	/* sip.SEIP clear: the file not touched */
	fake_imsic.eidelivery = 0;
	line(33, true);
	host_irq_poll();		/* pending in the file, delivery off: no SEIP */
	EXPECT_EQ(calls[33], 0);
	fake_imsic.eidelivery = 1;
	host_irq_poll();
	EXPECT_EQ(calls[33], 1);
	EXPECT_EQ(host_irq_get_stats().polled, 1);
}

TEST(host_irq_aia_table_full_and_identities_stay_in_range)
{
	setup();
	for (uint32_t i = 1; i <= HOST_IRQ_MAX_HANDLERS; i++)
		EXPECT_EQ(host_irq_register(i, handler, (void *)(uintptr_t)i), 0);
	EXPECT_EQ(host_irq_register(HOST_IRQ_MAX_HANDLERS + 1, handler, NULL), -HYP_ENOMEM);
	for (uint32_t i = 1; i <= HOST_IRQ_MAX_HANDLERS; i++)
		EXPECT_TRUE((fa.target[i] & APLIC_TARGET_EIID_MASK) <= IMSIC_MIN_IDS);
	/* on the smallest IMSIC every slot's identity still exists */
	fake_csr_reset();
	fake_imsic_install(IMSIC_MIN_IDS);
	EXPECT_EQ(host_irq_init_aia_regs(&regs, SOURCES, HART_INDEX, IMSIC_MIN_IDS), 0);
	for (uint32_t i = 1; i <= HOST_IRQ_MAX_HANDLERS; i++)
		EXPECT_EQ(host_irq_register(i, handler, (void *)(uintptr_t)i), 0);
}

/* The host IPI's identity (HOST_IPI_EIID, host_ipi.c) is no device's: the
 * device loop leaves it pending for the IPI path, whether it was there
 * before the call or came in its middle, and claims the devices behind it
 * only once it is gone; a poll that finds only it says so (false). */
TEST(host_irq_aia_leaves_the_host_ipi_identity_pending)
{
	setup();
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	lower_on_call[33] = true;
	imsic_host_enable(HOST_IPI_EIID);
	fake_imsic_send(HOST_IPI_EIID);
	EXPECT_FALSE(host_irq_poll());
	EXPECT_TRUE(fake_imsic_pending(HOST_IPI_EIID));
	EXPECT_EQ(host_irq_get_stats().unknown, 0);
	EXPECT_EQ(host_irq_get_stats().polled, 0);
	/* a device behind it waits: the IPI is on top */
	line(33, true);
	host_irq_handle();
	EXPECT_EQ(calls[33], 0);
	EXPECT_TRUE(fake_imsic_pending(HOST_IPI_EIID));
	EXPECT_TRUE(fake_imsic_pending(HOST_IRQ_EIID_BASE));
	/* once the IPI path has taken it, the device's turn */
	EXPECT_TRUE(imsic_host_claim_top(HOST_IPI_EIID));
	EXPECT_FALSE(imsic_host_claim_top(HOST_IPI_EIID));	/* the top is the device's now */
	EXPECT_TRUE(fake_imsic_pending(HOST_IRQ_EIID_BASE));
	EXPECT_TRUE(host_irq_poll());
	EXPECT_EQ(calls[33], 1);
	EXPECT_EQ(host_irq_get_stats().handled, 1);
	EXPECT_EQ(host_irq_get_stats().unknown, 0);
}
