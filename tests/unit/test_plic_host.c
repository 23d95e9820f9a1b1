/* SPDX-License-Identifier: MIT */
/* hyp/drivers/plic_host.c: registration and the bounded claim loop against a
 * fake PLIC that claims like the hardware (the lowest pending enabled source
 * of the context above its threshold; 0 when none) and can misbehave: a line
 * that re-asserts the moment it is completed, a claim of a source beyond
 * riscv,ndev, a source the firmware left enabled that no driver registered. */
#include <string.h>
#include <errno.h>
#include <arch/riscv/csr.h>
#include <host_irq.h>
#include "test.h"

extern unsigned long fake_csr[4096];
void fake_csr_reset(void);

#define NDEV	95
#define CTX	1	/* QEMU virt: hart 0's S-mode context */

static struct fake_plic {
	uint32_t prio[PLIC_MAX_SOURCES];
	uint32_t enable[PLIC_MAX_SOURCES / 32];	/* context CTX only */
	uint32_t threshold;
	bool pending[PLIC_MAX_SOURCES], stuck[PLIC_MAX_SOURCES];
	uint32_t forced_claim;		/* non-zero: every claim returns it */
	unsigned int claims, completes, bad_access;
	uint32_t last_complete;
} fp;

static unsigned int calls[PLIC_MAX_SOURCES];

static uint32_t fake_rd(void *ctx, uint64_t off)
{
	(void)ctx;
	if (off >= PLIC_ENABLE(CTX, 0) && off < PLIC_ENABLE(CTX, 0) + sizeof(fp.enable))
		return fp.enable[(off - PLIC_ENABLE(CTX, 0)) / 4];
	if (off == PLIC_CLAIM(CTX)) {
		if (++fp.claims > 100)
			return 0;	/* an unbounded loop ends here, and fails the counts */
		if (fp.forced_claim)
			return fp.forced_claim;
		for (uint32_t i = 1; i < PLIC_MAX_SOURCES; i++)
			if (fp.pending[i] && (fp.enable[i / 32] >> (i % 32) & 1) &&
			    fp.prio[i] > fp.threshold) {
				fp.pending[i] = false;
				return i;
			}
		return 0;
	}
	fp.bad_access++;
	return 0;
}

static void fake_wr(void *ctx, uint64_t off, uint32_t v)
{
	(void)ctx;
	if (off < PLIC_ENABLE(0, 0) && off % 4 == 0) {
		fp.prio[off / 4] = v;
	} else if (off >= PLIC_ENABLE(CTX, 0) && off < PLIC_ENABLE(CTX, 0) + sizeof(fp.enable)) {
		fp.enable[(off - PLIC_ENABLE(CTX, 0)) / 4] = v;
	} else if (off == PLIC_THRESHOLD(CTX)) {
		fp.threshold = v;
	} else if (off == PLIC_CLAIM(CTX)) {
		fp.completes++;
		fp.last_complete = v;
		if (v < PLIC_MAX_SOURCES && fp.stuck[v])
			fp.pending[v] = true;	/* the level is still high */
	} else {
		fp.bad_access++;
	}
}

static unsigned int calls_polling;

static void handler(void *ctx)
{
	calls[(uintptr_t)ctx]++;
	calls_polling += host_irq_polling();
}

static void setup(void)
{
	struct irqchip_regs regs = { fake_rd, fake_wr, NULL };

	memset(&fp, 0, sizeof(fp));
	memset(calls, 0, sizeof(calls));
	calls_polling = 0;
	fake_csr_reset();
	fp.threshold = 7;		/* what the firmware might leave */
	EXPECT_EQ(host_irq_init_regs(&regs, NDEV, CTX), 0);
}

TEST(host_irq_register_enables_the_source_for_hart0)
{
	setup();
	EXPECT_EQ(fp.threshold, 0);
	EXPECT_EQ(fake_csr[CSR_SIE] & MIP_SEIP, 0);	/* nothing registered: SEIE off */
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	EXPECT_EQ(fp.prio[33], 1);
	EXPECT_EQ(fp.enable[1], 1u << 1);
	EXPECT_TRUE(fake_csr[CSR_SIE] & MIP_SEIP);
	EXPECT_EQ(host_irq_register(35, handler, (void *)35), 0);
	EXPECT_EQ(fp.enable[1], (1u << 1) | (1u << 3));	/* the word's other bits kept */
	EXPECT_EQ(fp.bad_access, 0);
}

TEST(host_irq_register_refuses_bad_sources)
{
	setup();
	EXPECT_EQ(host_irq_register(0, handler, NULL), -HYP_EINVAL);
	EXPECT_EQ(host_irq_register(NDEV + 1, handler, NULL), -HYP_EINVAL);
	EXPECT_EQ(host_irq_register(5, NULL, NULL), -HYP_EINVAL);
	EXPECT_EQ(host_irq_register(5, handler, NULL), 0);
	EXPECT_EQ(host_irq_register(5, handler, NULL), -HYP_EINVAL);	/* taken */
	for (uint32_t i = 6; i < 6 + HOST_IRQ_MAX_HANDLERS - 1; i++)
		EXPECT_EQ(host_irq_register(i, handler, NULL), 0);
	EXPECT_EQ(host_irq_register(NDEV, handler, NULL), -HYP_ENOMEM);
	EXPECT_EQ(fp.enable[NDEV / 32] >> (NDEV % 32) & 1, 0);
}

TEST(host_irq_init_refuses_what_the_plic_cannot_have)
{
	struct irqchip_regs regs = { fake_rd, fake_wr, NULL };

	EXPECT_EQ(host_irq_init_regs(&regs, 0, CTX), -HYP_EINVAL);
	EXPECT_EQ(host_irq_init_regs(&regs, PLIC_MAX_SOURCES, CTX), -HYP_EINVAL);
	EXPECT_EQ(host_irq_init_regs(&regs, NDEV, PLIC_MAX_CONTEXTS), -HYP_EINVAL);
}

TEST(host_irq_handle_dispatches_and_completes_each)
{
	setup();
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	EXPECT_EQ(host_irq_register(34, handler, (void *)34), 0);
	fp.pending[33] = fp.pending[34] = true;
	host_irq_handle();
	EXPECT_EQ(calls[33], 1);
	EXPECT_EQ(calls[34], 1);
	EXPECT_EQ(fp.claims, 3);	/* the third finds none */
	EXPECT_EQ(fp.completes, 2);
	EXPECT_EQ(host_irq_get_stats().handled, 2);
	EXPECT_EQ(host_irq_get_stats().cut, 0);
	host_irq_handle();		/* nothing pending: one claim read, nothing else */
	EXPECT_EQ(fp.claims, 4);
	EXPECT_EQ(fp.completes, 2);
}

TEST(host_irq_handle_completes_an_unregistered_source_without_calling_it)
{
	setup();
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	fp.enable[40 / 32] |= 1u << (40 % 32);	/* left enabled by someone else */
	fp.prio[40] = 1;
	fp.pending[40] = true;
	host_irq_handle();
	EXPECT_EQ(calls[40], 0);
	EXPECT_EQ(calls[33], 0);
	EXPECT_EQ(fp.completes, 1);
	EXPECT_EQ(fp.last_complete, 40);
	EXPECT_EQ(host_irq_get_stats().unknown, 1);
	EXPECT_EQ(host_irq_get_stats().handled, 0);
}

TEST(host_irq_handle_completes_an_out_of_range_claim)
{
	setup();
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	fp.forced_claim = PLIC_MAX_SOURCES + 7;		/* a broken PLIC, or a lie */
	host_irq_handle();
	for (unsigned int i = 0; i < PLIC_MAX_SOURCES; i++)
		EXPECT_EQ(calls[i], 0);
	EXPECT_EQ(fp.last_complete, PLIC_MAX_SOURCES + 7);
	EXPECT_EQ(host_irq_get_stats().unknown, HOST_IRQ_MAX_CLAIMS);
	fp.forced_claim = NDEV + 1;	/* in the PLIC's range, beyond riscv,ndev */
	host_irq_handle();
	EXPECT_EQ(calls[NDEV + 1], 0);
}

TEST(host_irq_handle_bounds_a_stuck_line)
{
	setup();
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	EXPECT_EQ(host_irq_register(34, handler, (void *)34), 0);
	fp.stuck[33] = true;
	fp.pending[33] = fp.pending[34] = true;
	host_irq_handle();
	EXPECT_EQ(fp.claims, HOST_IRQ_MAX_CLAIMS);
	EXPECT_EQ(fp.completes, HOST_IRQ_MAX_CLAIMS);
	EXPECT_EQ(calls[33] + calls[34], HOST_IRQ_MAX_CLAIMS);
	EXPECT_EQ(host_irq_get_stats().cut, 1);
	EXPECT_TRUE(fp.pending[33]);	/* left for the next call */
	host_irq_handle();
	EXPECT_EQ(fp.claims, 2 * HOST_IRQ_MAX_CLAIMS);
	EXPECT_EQ(host_irq_get_stats().cut, 2);
}

TEST(host_irq_poll_claims_only_with_seip_pending)
{
	setup();
	fake_csr[CSR_SIP] = MIP_SEIP;
	EXPECT_FALSE(host_irq_poll());	/* nothing registered: the PLIC is not touched */
	EXPECT_EQ(fp.claims, 0);
	EXPECT_EQ(host_irq_register(33, handler, (void *)33), 0);
	fp.pending[33] = true;
	fake_csr[CSR_SIP] = 0;
	EXPECT_FALSE(host_irq_poll());
	EXPECT_EQ(fp.claims, 0);
	fake_csr[CSR_SIP] = MIP_SEIP;
	EXPECT_TRUE(host_irq_poll());	/* the caller knows an interrupt was taken */
	EXPECT_EQ(calls[33], 1);
	EXPECT_EQ(calls_polling, 1);		/* the handler can tell where it runs */
	EXPECT_EQ(host_irq_get_stats().polled, 1);
	EXPECT_FALSE(host_irq_polling());
	fp.pending[33] = true;
	host_irq_handle();			/* as at a guest exit */
	EXPECT_EQ(calls[33], 2);
	EXPECT_EQ(calls_polling, 1);
}
