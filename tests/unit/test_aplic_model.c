/* SPDX-License-Identifier: MIT */
/* hyp/lib/aplic_model.c: a virtual APLIC domain in MSI mode, against the AIA
 * spec's APLIC chapter (register rules, "Precise effects on interrupt-pending
 * bits" in MSI delivery mode, forwarding by MSIs). */
#include <stddef.h>
#include <aplic.h>
#include <aplic_model.h>
#include "test.h"

struct msi {
	uint32_t hart, guest, eiid;
};

static struct {
	struct msi sent[64];
	unsigned int n;
} msis;

static void record(void *ctx, uint32_t hart, uint32_t guest, uint32_t eiid)
{
	EXPECT_EQ(ctx, &msis);
	if (msis.n < 64)
		msis.sent[msis.n] = (struct msi){ hart, guest, eiid };
	msis.n++;
}

static void wr(struct aplic_state *s, uint64_t off, uint32_t val)
{
	aplic_model_write(s, (uint32_t)off, val, record, &msis);
}

static void line(struct aplic_state *s, uint32_t src, bool level)
{
	aplic_model_set_level(s, src, level, record, &msis);
}

static uint32_t rd(const struct aplic_state *s, uint64_t off)
{
	return aplic_model_read(s, (uint32_t)off);
}

static uint32_t target(uint32_t hart, uint32_t eiid)
{
	return hart << APLIC_TARGET_HART_SHIFT | eiid;
}

/* @s reset, source @src in mode @sm, aimed at (@hart, @eiid); no MSI sent. */
static void setup(struct aplic_state *s, uint32_t src, uint32_t sm, uint32_t hart, uint32_t eiid)
{
	msis.n = 0;
	aplic_model_reset(s);
	wr(s, APLIC_SOURCECFG(src), sm);
	wr(s, APLIC_TARGET(src), target(hart, eiid));
	EXPECT_EQ(msis.n, 0);
}

static void expect_legal(const struct aplic_state *s)
{
	uint32_t off = 0xdead;

	EXPECT_STREQ(aplic_model_check(s, &off), NULL);
	EXPECT_EQ(off, 0xdead);
}

static bool pending(const struct aplic_state *s, uint32_t src)
{
	return rd(s, APLIC_SETIP(0)) >> src & 1;
}

TEST(aplic_model_reset_state_and_read_values)
{
	struct aplic_state s;

	for (unsigned int i = 0; i < sizeof(s); i++)
		((unsigned char *)&s)[i] = 0x5a;
	aplic_model_reset(&s);
	expect_legal(&s);
	/* 0x80 in the top byte, MSI mode, IE off */
	EXPECT_EQ(rd(&s, APLIC_DOMAINCFG), 0x80000004);
	wr(&s, APLIC_DOMAINCFG, ~0u);	/* only IE sticks: no BE, DM read-only */
	EXPECT_EQ(rd(&s, APLIC_DOMAINCFG), 0x80000104);
	EXPECT_EQ(s.domaincfg, APLIC_DOMAINCFG_IE);
	wr(&s, APLIC_DOMAINCFG, 0);
	EXPECT_EQ(rd(&s, APLIC_DOMAINCFG), 0x80000004);
	for (uint32_t i = 1; i < 32; i++) {
		EXPECT_EQ(rd(&s, APLIC_SOURCECFG(i)), 0);
		EXPECT_EQ(rd(&s, APLIC_TARGET(i)), 0);
	}
	EXPECT_EQ(rd(&s, APLIC_SETIP(0)) | rd(&s, APLIC_SETIE(0)) | rd(&s, APLIC_IN_CLRIP(0)), 0);
	EXPECT_EQ(rd(&s, APLIC_GENMSI), 0);
}

TEST(aplic_model_unknown_and_write_only_offsets_read_zero)
{
	struct aplic_state s;
	static const uint32_t zero[] = {
		APLIC_SETIPNUM, APLIC_CLRIPNUM, APLIC_SETIENUM, APLIC_CLRIENUM,
		APLIC_SETIPNUM_LE, APLIC_SETIPNUM_BE, APLIC_CLRIE(0), APLIC_CLRIE(1),
		APLIC_SETIP(1), APLIC_SETIE(31), APLIC_IN_CLRIP(1), APLIC_SOURCECFG(32),
		APLIC_SOURCECFG(1023), APLIC_TARGET(32), APLIC_TARGET(1023),
		APLIC_MMSIADDRCFG, APLIC_MMSIADDRCFG + 4, APLIC_MMSIADDRCFG + 8,
		APLIC_SMSIADDRCFGH, APLIC_IDC_BASE, APLIC_IDC_BASE + 0x18, APLIC_IDC_BASE + 0x1c,
		0x7ffc, 0x8000, 0xfffffffc, 0x1bfc, 0x2008,
	};

	setup(&s, 5, APLIC_SM_EDGE_RISE, 1, 9);
	wr(&s, APLIC_SETIE(0), ~0u);
	wr(&s, APLIC_SETIP(0), ~0u);
	EXPECT_EQ(rd(&s, APLIC_SETIP(0)), 1u << 5);
	for (unsigned int i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		EXPECT_EQ(rd(&s, zero[i]), 0);
	/* unaligned: 0 (the caller faults them; the model never reads a torn word) */
	EXPECT_EQ(rd(&s, APLIC_SOURCECFG(5) + 1), 0);
	EXPECT_EQ(rd(&s, APLIC_DOMAINCFG + 2), 0);
	EXPECT_EQ(rd(&s, APLIC_SOURCECFG(5)), APLIC_SM_EDGE_RISE);
}

TEST(aplic_model_sourcecfg_keeps_implemented_modes_only)
{
	struct aplic_state s;
	static const uint32_t kept[] = { 0, 1, 4, 5, 6, 7 };

	aplic_model_reset(&s);
	for (unsigned int i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		wr(&s, APLIC_SOURCECFG(3), kept[i]);
		EXPECT_EQ(rd(&s, APLIC_SOURCECFG(3)), kept[i]);
	}
	wr(&s, APLIC_SOURCECFG(3), 2);		/* reserved */
	EXPECT_EQ(rd(&s, APLIC_SOURCECFG(3)), 0);
	wr(&s, APLIC_SOURCECFG(3), 6);
	wr(&s, APLIC_SOURCECFG(3), 3);
	EXPECT_EQ(rd(&s, APLIC_SOURCECFG(3)), 0);
	/* D in a domain with no child: the whole register becomes 0 */
	wr(&s, APLIC_SOURCECFG(3), 6);
	wr(&s, APLIC_SOURCECFG(3), APLIC_SOURCECFG_D | 6);
	EXPECT_EQ(rd(&s, APLIC_SOURCECFG(3)), 0);
	/* reserved bits read 0 */
	wr(&s, APLIC_SOURCECFG(31), 0xfffff800 | 0x3f8 | 5);
	EXPECT_EQ(rd(&s, APLIC_SOURCECFG(31)), 5);
	/* sources 32.. do not exist */
	wr(&s, APLIC_SOURCECFG(32), 4);
	EXPECT_EQ(rd(&s, APLIC_SOURCECFG(32)), 0);
	expect_legal(&s);
}

TEST(aplic_model_becoming_inactive_clears_pending_enable_target)
{
	struct aplic_state s;

	setup(&s, 7, APLIC_SM_DETACHED, 3, 44);
	wr(&s, APLIC_SETIPNUM, 7);
	wr(&s, APLIC_SETIENUM, 7);
	EXPECT_TRUE(pending(&s, 7));
	EXPECT_EQ(rd(&s, APLIC_SETIE(0)), 1u << 7);
	EXPECT_EQ(rd(&s, APLIC_TARGET(7)), target(3, 44));
	wr(&s, APLIC_SOURCECFG(7), APLIC_SM_INACTIVE);
	EXPECT_FALSE(pending(&s, 7));
	EXPECT_EQ(rd(&s, APLIC_SETIE(0)), 0);
	EXPECT_EQ(rd(&s, APLIC_TARGET(7)), 0);
	/* inactive: everything read-only 0 */
	wr(&s, APLIC_TARGET(7), target(1, 1));
	wr(&s, APLIC_SETIPNUM, 7);
	wr(&s, APLIC_SETIE(0), 1u << 7);
	wr(&s, APLIC_SETIP(0), 1u << 7);
	EXPECT_EQ(rd(&s, APLIC_TARGET(7)) | rd(&s, APLIC_SETIP(0)) | rd(&s, APLIC_SETIE(0)), 0);
	/* active again: pending and enable stay 0 */
	wr(&s, APLIC_SOURCECFG(7), APLIC_SM_EDGE_RISE);
	EXPECT_EQ(rd(&s, APLIC_SETIP(0)) | rd(&s, APLIC_SETIE(0)), 0);
	EXPECT_EQ(msis.n, 0);
	expect_legal(&s);
}

TEST(aplic_model_target_has_no_guest_index)
{
	struct aplic_state s;

	setup(&s, 2, APLIC_SM_LEVEL_HIGH, 0, 0);
	wr(&s, APLIC_TARGET(2), ~0u);
	EXPECT_EQ(rd(&s, APLIC_TARGET(2)), 0xfffc07ff);	/* no guest index, bit 11 reserved */
	wr(&s, APLIC_TARGET(2), target(0x3fff, 0x7ff));
	EXPECT_EQ(rd(&s, APLIC_TARGET(2)), 0xfffc07ff);
	/* the neighbours are separate registers */
	EXPECT_EQ(rd(&s, APLIC_TARGET(1)), 0);
	EXPECT_EQ(rd(&s, APLIC_TARGET(3)), 0);
	expect_legal(&s);
}

TEST(aplic_model_edge_rise_pends_on_a_rising_wire)
{
	struct aplic_state s;

	setup(&s, 4, APLIC_SM_EDGE_RISE, 1, 30);
	line(&s, 4, false);
	EXPECT_FALSE(pending(&s, 4));
	line(&s, 4, true);
	EXPECT_TRUE(pending(&s, 4));
	EXPECT_EQ(rd(&s, APLIC_IN_CLRIP(0)), 1u << 4);
	/* still high, or falling: no change */
	wr(&s, APLIC_CLRIPNUM, 4);
	EXPECT_FALSE(pending(&s, 4));
	line(&s, 4, true);
	EXPECT_FALSE(pending(&s, 4));
	line(&s, 4, false);
	EXPECT_FALSE(pending(&s, 4));
	EXPECT_EQ(rd(&s, APLIC_IN_CLRIP(0)), 0);
	/* setip works whatever the wire */
	wr(&s, APLIC_SETIP(0), 1u << 4);
	EXPECT_TRUE(pending(&s, 4));
	wr(&s, APLIC_IN_CLRIP(0), 1u << 4);
	EXPECT_FALSE(pending(&s, 4));
	wr(&s, APLIC_SETIPNUM_LE, 4);
	EXPECT_TRUE(pending(&s, 4));
	EXPECT_EQ(msis.n, 0);		/* not enabled, IE off */
	expect_legal(&s);
}

TEST(aplic_model_edge_fall_pends_on_a_falling_wire)
{
	struct aplic_state s;

	setup(&s, 9, APLIC_SM_EDGE_FALL, 0, 3);
	line(&s, 9, true);
	EXPECT_FALSE(pending(&s, 9));
	EXPECT_EQ(rd(&s, APLIC_IN_CLRIP(0)), 0);	/* inverted */
	line(&s, 9, false);
	EXPECT_TRUE(pending(&s, 9));
	EXPECT_EQ(rd(&s, APLIC_IN_CLRIP(0)), 1u << 9);
	/* a pending edge stays pending when the wire goes back */
	line(&s, 9, true);
	EXPECT_TRUE(pending(&s, 9));
	expect_legal(&s);
}

TEST(aplic_model_level_high_pends_while_asserted_only)
{
	struct aplic_state s;

	setup(&s, 10, APLIC_SM_LEVEL_HIGH, 1, 12);
	/* low: setip and setipnum cannot set it */
	wr(&s, APLIC_SETIPNUM, 10);
	wr(&s, APLIC_SETIPNUM_LE, 10);
	wr(&s, APLIC_SETIP(0), 1u << 10);
	EXPECT_FALSE(pending(&s, 10));
	line(&s, 10, true);
	EXPECT_TRUE(pending(&s, 10));
	/* clrip clears it even though the wire is high */
	wr(&s, APLIC_CLRIPNUM, 10);
	EXPECT_FALSE(pending(&s, 10));
	line(&s, 10, true);		/* no transition */
	EXPECT_FALSE(pending(&s, 10));
	wr(&s, APLIC_SETIPNUM, 10);	/* high: may be set again */
	EXPECT_TRUE(pending(&s, 10));
	/* low clears it */
	line(&s, 10, false);
	EXPECT_FALSE(pending(&s, 10));
	expect_legal(&s);
}

TEST(aplic_model_level_low_is_inverted)
{
	struct aplic_state s;

	setup(&s, 11, APLIC_SM_LEVEL_LOW, 0, 5);
	/* the wire is low at reset: asserted, but the mode change alone is the
	 * only "rise" there was */
	EXPECT_EQ(rd(&s, APLIC_IN_CLRIP(0)), 1u << 11);
	EXPECT_TRUE(pending(&s, 11));
	line(&s, 11, true);
	EXPECT_FALSE(pending(&s, 11));
	wr(&s, APLIC_SETIPNUM, 11);
	EXPECT_FALSE(pending(&s, 11));
	line(&s, 11, false);
	EXPECT_TRUE(pending(&s, 11));
	expect_legal(&s);
}

TEST(aplic_model_sourcecfg_write_and_a_level_line)
{
	struct aplic_state s;

	/* a line asserted before its driver set the mode is not lost */
	setup(&s, 12, APLIC_SM_INACTIVE, 0, 0);
	line(&s, 12, true);
	EXPECT_FALSE(pending(&s, 12));
	wr(&s, APLIC_SOURCECFG(12), APLIC_SM_LEVEL_HIGH);
	EXPECT_TRUE(pending(&s, 12));
	/* rewriting the same mode is no new rise */
	wr(&s, APLIC_CLRIPNUM, 12);
	wr(&s, APLIC_SOURCECFG(12), APLIC_SM_LEVEL_HIGH);
	EXPECT_FALSE(pending(&s, 12));
	/* a switch that makes the input low clears a level source's bit */
	wr(&s, APLIC_SETIPNUM, 12);
	EXPECT_TRUE(pending(&s, 12));
	wr(&s, APLIC_SOURCECFG(12), APLIC_SM_LEVEL_LOW);
	EXPECT_FALSE(pending(&s, 12));
	/* edge modes wait for an edge; a pending edge survives the switch to an edge mode */
	wr(&s, APLIC_SOURCECFG(12), APLIC_SM_EDGE_RISE);
	EXPECT_FALSE(pending(&s, 12));
	wr(&s, APLIC_SETIPNUM, 12);
	wr(&s, APLIC_SOURCECFG(12), APLIC_SM_EDGE_FALL);
	EXPECT_TRUE(pending(&s, 12));
	/* from edge to level with the input low: cleared */
	wr(&s, APLIC_SOURCECFG(12), APLIC_SM_LEVEL_LOW);
	EXPECT_FALSE(pending(&s, 12));
	expect_legal(&s);
}

TEST(aplic_model_detached_ignores_the_wire)
{
	struct aplic_state s;

	setup(&s, 31, APLIC_SM_DETACHED, 2, 100);
	line(&s, 31, true);
	EXPECT_FALSE(pending(&s, 31));
	EXPECT_EQ(rd(&s, APLIC_IN_CLRIP(0)), 0);
	line(&s, 31, false);
	EXPECT_FALSE(pending(&s, 31));
	wr(&s, APLIC_SETIPNUM, 31);
	EXPECT_TRUE(pending(&s, 31));
	wr(&s, APLIC_IN_CLRIP(0), 1u << 31);
	EXPECT_FALSE(pending(&s, 31));
	wr(&s, APLIC_SETIP(0), 1u << 31);
	EXPECT_TRUE(pending(&s, 31));
	wr(&s, APLIC_CLRIPNUM, 31);
	EXPECT_FALSE(pending(&s, 31));
	expect_legal(&s);
}

TEST(aplic_model_num_registers_ignore_what_is_no_active_source)
{
	struct aplic_state s;
	static const uint32_t bad[] = { 0, 32, 33, 1023, 0x80000005, ~0u };

	setup(&s, 5, APLIC_SM_DETACHED, 0, 1);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wr(&s, APLIC_SETIPNUM, bad[i]);
		wr(&s, APLIC_SETIPNUM_LE, bad[i]);
		wr(&s, APLIC_SETIENUM, bad[i]);
	}
	wr(&s, APLIC_SETIPNUM, 6);	/* inactive */
	wr(&s, APLIC_SETIENUM, 6);
	EXPECT_EQ(s.pending | s.enabled, 0);
	/* big-endian port: ignored (so is the IMSIC's), even with the bytes swapped */
	wr(&s, APLIC_SETIPNUM_BE, 5);
	wr(&s, APLIC_SETIPNUM_BE, 5u << 24);
	EXPECT_EQ(s.pending, 0);
	/* bit 0 of the arrays: no source 0 */
	wr(&s, APLIC_SETIP(0), 1);
	wr(&s, APLIC_SETIE(0), 1);
	EXPECT_EQ(s.pending | s.enabled, 0);
	/* clears of a number that is no source change nothing */
	wr(&s, APLIC_SETIPNUM, 5);
	wr(&s, APLIC_SETIENUM, 5);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wr(&s, APLIC_CLRIPNUM, bad[i]);
		wr(&s, APLIC_CLRIENUM, bad[i]);
	}
	EXPECT_EQ(s.pending, 1u << 5);
	EXPECT_EQ(s.enabled, 1u << 5);
	expect_legal(&s);
}

TEST(aplic_model_enable_registers)
{
	struct aplic_state s;

	aplic_model_reset(&s);
	for (uint32_t i = 1; i < 32; i += 2)
		wr(&s, APLIC_SOURCECFG(i), APLIC_SM_DETACHED);
	wr(&s, APLIC_SETIE(0), ~0u);
	EXPECT_EQ(rd(&s, APLIC_SETIE(0)), 0xaaaaaaaa);
	wr(&s, APLIC_CLRIE(0), 0x0000ff00);
	EXPECT_EQ(rd(&s, APLIC_SETIE(0)), 0xaaaa00aa);
	EXPECT_EQ(rd(&s, APLIC_CLRIE(0)), 0);
	wr(&s, APLIC_CLRIENUM, 3);
	EXPECT_EQ(rd(&s, APLIC_SETIE(0)), 0xaaaa00a2);
	wr(&s, APLIC_SETIENUM, 9);
	EXPECT_EQ(rd(&s, APLIC_SETIE(0)), 0xaaaa02a2);
	wr(&s, APLIC_SETIE(1), ~0u);	/* sources 32..63 do not exist */
	EXPECT_EQ(rd(&s, APLIC_SETIE(0)), 0xaaaa02a2);
	expect_legal(&s);
}

TEST(aplic_model_forwards_only_with_ie_enable_and_pending)
{
	struct aplic_state s;

	setup(&s, 6, APLIC_SM_EDGE_RISE, 2, 77);
	line(&s, 6, true);		/* pending, not enabled, IE off */
	wr(&s, APLIC_SETIENUM, 6);	/* enabled, IE off */
	EXPECT_EQ(msis.n, 0);
	EXPECT_TRUE(pending(&s, 6));
	expect_legal(&s);
	wr(&s, APLIC_DOMAINCFG, APLIC_DOMAINCFG_IE);
	EXPECT_EQ(msis.n, 1);
	EXPECT_EQ(msis.sent[0].hart, 2);
	EXPECT_EQ(msis.sent[0].guest, 0);
	EXPECT_EQ(msis.sent[0].eiid, 77);
	EXPECT_FALSE(pending(&s, 6));	/* sent: cleared */
	/* an edge while everything is on: sent at once */
	line(&s, 6, false);
	line(&s, 6, true);
	EXPECT_EQ(msis.n, 2);
	EXPECT_FALSE(pending(&s, 6));
	/* disabled: stays pending until enabled again */
	wr(&s, APLIC_CLRIENUM, 6);
	wr(&s, APLIC_SETIPNUM, 6);
	EXPECT_EQ(msis.n, 2);
	EXPECT_TRUE(pending(&s, 6));
	wr(&s, APLIC_SETIE(0), 1u << 6);
	EXPECT_EQ(msis.n, 3);
	EXPECT_FALSE(pending(&s, 6));
	/* IE off again: nothing sent */
	wr(&s, APLIC_DOMAINCFG, 0);
	wr(&s, APLIC_SETIPNUM, 6);
	EXPECT_EQ(msis.n, 3);
	expect_legal(&s);
	/* a target change takes effect for the next MSI */
	wr(&s, APLIC_TARGET(6), target(5, 200));
	wr(&s, APLIC_DOMAINCFG, APLIC_DOMAINCFG_IE);
	EXPECT_EQ(msis.n, 4);
	EXPECT_EQ(msis.sent[3].hart, 5);
	EXPECT_EQ(msis.sent[3].eiid, 200);
}

TEST(aplic_model_forwards_lowest_source_first_and_each_once)
{
	struct aplic_state s;

	aplic_model_reset(&s);
	msis.n = 0;
	for (uint32_t i = 1; i < 32; i++) {
		wr(&s, APLIC_SOURCECFG(i), APLIC_SM_DETACHED);
		wr(&s, APLIC_TARGET(i), target(i, 100 + i));
	}
	wr(&s, APLIC_SETIP(0), 0x80010022);	/* 1, 5, 16, 31 */
	wr(&s, APLIC_SETIE(0), ~0u);
	EXPECT_EQ(msis.n, 0);
	wr(&s, APLIC_DOMAINCFG, APLIC_DOMAINCFG_IE);
	EXPECT_EQ(msis.n, 4);
	EXPECT_EQ(msis.sent[0].eiid, 101);
	EXPECT_EQ(msis.sent[1].eiid, 105);
	EXPECT_EQ(msis.sent[2].eiid, 116);
	EXPECT_EQ(msis.sent[3].eiid, 131);
	EXPECT_EQ(msis.sent[3].hart, 31);
	EXPECT_EQ(rd(&s, APLIC_SETIP(0)), 0);
	wr(&s, APLIC_DOMAINCFG, APLIC_DOMAINCFG_IE);	/* nothing left */
	EXPECT_EQ(msis.n, 4);
	expect_legal(&s);
}

TEST(aplic_model_level_source_retriggers_by_setipnum_le)
{
	struct aplic_state s;

	setup(&s, 1, APLIC_SM_LEVEL_HIGH, 0, 9);
	wr(&s, APLIC_SETIENUM, 1);
	wr(&s, APLIC_DOMAINCFG, APLIC_DOMAINCFG_IE);
	line(&s, 1, true);
	EXPECT_EQ(msis.n, 1);
	/* sent and cleared; the line still high is no new rise */
	line(&s, 1, true);
	EXPECT_EQ(msis.n, 1);
	/* the handler's retrigger while still asserted: one more MSI */
	wr(&s, APLIC_SETIPNUM_LE, 1);
	EXPECT_EQ(msis.n, 2);
	/* deasserted: the retrigger does nothing */
	line(&s, 1, false);
	wr(&s, APLIC_SETIPNUM_LE, 1);
	EXPECT_EQ(msis.n, 2);
	line(&s, 1, true);
	EXPECT_EQ(msis.n, 3);
	expect_legal(&s);
}

TEST(aplic_model_genmsi_is_sent_at_once_even_without_ie)
{
	struct aplic_state s;

	aplic_model_reset(&s);
	msis.n = 0;
	wr(&s, APLIC_GENMSI, target(3, 0x123) | 0x3f << 11);	/* with Busy and reserved bits */
	EXPECT_EQ(msis.n, 1);
	EXPECT_EQ(msis.sent[0].hart, 3);
	EXPECT_EQ(msis.sent[0].guest, 0);
	EXPECT_EQ(msis.sent[0].eiid, 0x123);
	EXPECT_EQ(rd(&s, APLIC_GENMSI), target(3, 0x123));	/* Busy never reads 1 */
	wr(&s, APLIC_DOMAINCFG, APLIC_DOMAINCFG_IE);
	wr(&s, APLIC_GENMSI, target(0x3fff, 0x7ff));
	EXPECT_EQ(msis.n, 2);
	EXPECT_EQ(msis.sent[1].hart, 0x3fff);
	EXPECT_EQ(msis.sent[1].eiid, 0x7ff);
	expect_legal(&s);
}

TEST(aplic_model_ignores_lines_that_are_no_source)
{
	struct aplic_state s;

	aplic_model_reset(&s);
	line(&s, 0, true);
	line(&s, 32, true);
	line(&s, ~0u, true);
	EXPECT_EQ(s.level, 0);
	/* an inactive source's wire is kept (a later mode sees it) but pends nothing */
	line(&s, 8, true);
	EXPECT_EQ(s.level, 1u << 8);
	EXPECT_EQ(s.pending, 0);
	expect_legal(&s);
}

TEST(aplic_model_null_send_drops_the_msi)
{
	struct aplic_state s;

	setup(&s, 3, APLIC_SM_DETACHED, 0, 1);
	wr(&s, APLIC_SETIENUM, 3);
	wr(&s, APLIC_DOMAINCFG, APLIC_DOMAINCFG_IE);
	aplic_model_write(&s, APLIC_SETIPNUM, 3, NULL, NULL);
	aplic_model_write(&s, APLIC_GENMSI, 5, NULL, NULL);
	EXPECT_FALSE(pending(&s, 3));
	EXPECT_EQ(msis.n, 0);
	expect_legal(&s);
}

/* One illegal field: the check names it, at its offset. */
static void expect_illegal(const struct aplic_state *s, size_t at)
{
	uint32_t off = 0xdead;

	EXPECT_TRUE(aplic_model_check(s, &off) != NULL);
	EXPECT_EQ(off, at);
}

TEST(aplic_model_check_names_each_illegal_field)
{
	struct aplic_state legal, s;

	/* a busy legal state: every mode, a pending level source, IE off */
	setup(&legal, 10, APLIC_SM_LEVEL_HIGH, 3, 7);
	line(&legal, 10, true);
	wr(&legal, APLIC_SETIENUM, 10);
	wr(&legal, APLIC_SOURCECFG(4), APLIC_SM_EDGE_FALL);
	wr(&legal, APLIC_SOURCECFG(5), APLIC_SM_DETACHED);
	wr(&legal, APLIC_SETIPNUM, 5);
	wr(&legal, APLIC_GENMSI, target(9, 9));
	expect_legal(&legal);

#define CASE(stmt, field)                                    \
	do {                                                  \
		s = legal;                                    \
		stmt;                                         \
		expect_illegal(&s, offsetof(struct aplic_state, field)); \
	} while (0)
	CASE(s.domaincfg |= APLIC_DOMAINCFG_DM, domaincfg);
	CASE(s.domaincfg = 0x80000000, domaincfg);
	CASE(s.sourcecfg[0] = APLIC_SM_DETACHED, sourcecfg[0]);
	CASE(s.sourcecfg[6] = 2, sourcecfg[6]);
	CASE(s.sourcecfg[6] = APLIC_SOURCECFG_D | 1, sourcecfg[6]);
	CASE(s.sourcecfg[31] = 0x16, sourcecfg[31]);
	CASE(s.target[0] = 1, target[0]);
	CASE(s.target[6] = target(1, 1), target[6]);		/* inactive */
	CASE(s.target[10] |= 1u << APLIC_TARGET_GUEST_SHIFT, target[10]);
	CASE(s.target[10] |= 1u << 11, target[10]);
	CASE(s.pending |= 1, pending);
	CASE(s.pending |= 1u << 6, pending);			/* inactive */
	CASE(s.level &= ~(1u << 10), pending);			/* level source pending, input low */
	CASE(s.domaincfg = APLIC_DOMAINCFG_IE, pending);	/* would have been sent */
	CASE(s.enabled |= 1, enabled);
	CASE(s.enabled |= 1u << 20, enabled);
	CASE(s.level |= 1, level);
	CASE(s.genmsi |= APLIC_GENMSI_BUSY, genmsi);
	CASE(s.genmsi |= 1u << 17, genmsi);
	CASE(s.pad = 1, pad);
#undef CASE
	/* legal: any hart index or EIID; an edge source pending with its input low */
	s = legal;
	s.target[10] = 0xfffc07ff;
	s.genmsi = 0xfffc07ff;
	s.pending |= 1u << 4;
	s.level |= 1u << 4;
	expect_legal(&s);
}

/* A small deterministic generator: the same sequence on every run. */
static uint32_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint32_t)(*x >> 16);
}

TEST(aplic_model_every_reachable_state_passes_the_check)
{
	static const uint32_t offs[] = {
		APLIC_DOMAINCFG, APLIC_SETIP(0), APLIC_SETIPNUM, APLIC_IN_CLRIP(0),
		APLIC_CLRIPNUM, APLIC_SETIE(0), APLIC_SETIENUM, APLIC_CLRIE(0),
		APLIC_CLRIENUM, APLIC_SETIPNUM_LE, APLIC_SETIPNUM_BE, APLIC_GENMSI,
	};
	struct aplic_state s;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int sent = 0, pends = 0;

	aplic_model_reset(&s);
	msis.n = 0;
	for (unsigned int step = 0; step < 20000; step++) {
		uint32_t r = next_random(&x), val = next_random(&x), src = 1 + r % 31;

		switch (r >> 8 & 3) {
		case 0:
			line(&s, src, val & 1);
			break;
		case 1:
			wr(&s, APLIC_SOURCECFG(src), val & 0x40f);
			break;
		case 2:
			wr(&s, APLIC_TARGET(src), val);
			break;
		default:
			/* numbers or bit masks, both often naming a source */
			wr(&s, offs[r >> 10 & 15 ? (r >> 10) % 12 : 0],
			   val & 0x100 ? src : val & (val >> 3));
			break;
		}
		pends += s.pending != 0;
		if (aplic_model_check(&s, &(uint32_t){ 0 })) {
			expect_legal(&s);
			break;
		}
	}
	sent = msis.n;
	/* the walk did reach states worth checking */
	EXPECT_TRUE(sent > 100);
	EXPECT_TRUE(pends > 1000);
}
