/* SPDX-License-Identifier: MIT */
/* SBI DBTR: which trigger words a guest may install, and that the word the
 * firmware gets (hyp/state/dbtr_word.c) can only fire in VS/VU: never in M,
 * HS or U, never Debug Mode, never chained, whatever the guest asked. */
#include <abi/sbi_dbtr.h>
#include <abi/sbi_defs.h>
#include <dbtr.h>
#include "test.h"

#define EXEC_S	(MC6_TYPE | MC6_EXECUTE | MC6_S)

TEST(dbtr_check_accepts_mcontrol6_breakpoints)
{
	EXPECT_EQ(dbtr_check(EXEC_S, 0), SBI_SUCCESS);
	EXPECT_EQ(dbtr_check(MC6_TYPE | MC6_LOAD | MC6_STORE | MC6_U | MC6_S, 0), SBI_SUCCESS);
	/* VS/VU name modes a guest does not have: taken, and never fire */
	EXPECT_EQ(dbtr_check(MC6_TYPE | MC6_EXECUTE | MC6_VS | MC6_VU, 0), SBI_SUCCESS);
	EXPECT_EQ(dbtr_check(MC6_TYPE | MC6_EXECUTE | MC6_SELECT | MC6_SIZE |
			     (2ULL << MC6_MATCH_SHIFT), 0), SBI_SUCCESS);
}

TEST(dbtr_check_refuses_what_the_spec_forbids)
{
	EXPECT_EQ(dbtr_check(EXEC_S | MC6_M, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(dbtr_check(EXEC_S | TDATA1_DMODE, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(dbtr_check(EXEC_S | MC6_ACTION_DEBUG_MODE << MC6_ACTION_SHIFT, 0),
		  SBI_ERR_INVALID_PARAM);
	/* reserved bits 58:27 and 20:19 */
	EXPECT_EQ(dbtr_check(EXEC_S | 1ULL << 58, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(dbtr_check(EXEC_S | 1ULL << 27, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(dbtr_check(EXEC_S | 1ULL << 19, 0), SBI_ERR_INVALID_PARAM);
}

TEST(dbtr_check_refuses_what_it_does_not_implement)
{
	for (uint64_t a = 2; a < 16; a++)
		EXPECT_EQ(dbtr_check(EXEC_S | a << MC6_ACTION_SHIFT, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(dbtr_check(EXEC_S | MC6_CHAIN, 0), SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(dbtr_check(EXEC_S, 1), SBI_ERR_NOT_SUPPORTED);
}

TEST(dbtr_check_refuses_types_it_cannot_restrict)
{
	for (uint64_t t = 0; t < 16; t++)
		if (t != TDATA1_TYPE_MCONTROL6)
			EXPECT_EQ(dbtr_check(t << TDATA1_TYPE_SHIFT | MC6_EXECUTE | MC6_S, 0),
				  SBI_ERR_FAILED);
	dbtr_host.trig_max = 2;
	EXPECT_EQ(dbtr_num_triggers(0), 2);
	EXPECT_EQ(dbtr_num_triggers(MC6_TYPE), 2);
	EXPECT_EQ(dbtr_num_triggers(TDATA1_TYPE_MCONTROL << TDATA1_TYPE_SHIFT), 0);
	dbtr_host.trig_max = 0;
}

TEST(dbtr_host_word_maps_s_to_vs_and_u_to_vu)
{
	EXPECT_EQ(dbtr_host_tdata1(EXEC_S), MC6_TYPE | MC6_EXECUTE | MC6_VS);
	EXPECT_EQ(dbtr_host_tdata1(MC6_TYPE | MC6_LOAD | MC6_U), MC6_TYPE | MC6_LOAD | MC6_VU);
	/* the guest's own VS/VU, no access kind, disabled: nothing to install */
	EXPECT_EQ(dbtr_host_tdata1(MC6_TYPE | MC6_EXECUTE | MC6_VS | MC6_VU), 0);
	EXPECT_EQ(dbtr_host_tdata1(MC6_TYPE | MC6_S | MC6_U), 0);
	EXPECT_EQ(dbtr_host_tdata1(MC6_TYPE | MC6_EXECUTE), 0);
}

/* Every word a guest could pass the check with (a pseudo-random walk over
 * all 64 bits) gives a host word that fires in VS/VU only. */
TEST(dbtr_host_word_never_fires_outside_vs_vu)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL, checked = 0;
	const uint64_t forbidden = MC6_M | MC6_S | MC6_U | TDATA1_DMODE | MC6_CHAIN | MC6_ACTION |
				   MC6_HIT0 | MC6_HIT1 | MC6_UNCERTAIN | MC6_UNCERTAINEN;

	for (unsigned int i = 0; i < 200000; i++) {
		uint64_t t1, w;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		t1 = MC6_TYPE | (x & ~(0xfULL << TDATA1_TYPE_SHIFT));
		if (i & 1)	/* half of them pass the check: the rest are common */
			t1 &= ~(MC6_M | TDATA1_DMODE | MC6_CHAIN | MC6_ACTION | (((1ULL << 59) - 1) &
				~((1ULL << 27) - 1)) | 3ULL << 19);
		if (dbtr_check(t1, 0) != SBI_SUCCESS)
			continue;
		checked++;
		w = dbtr_host_tdata1(t1);
		if (!w)
			continue;
		EXPECT_EQ(TDATA1_TYPE(w), TDATA1_TYPE_MCONTROL6);
		EXPECT_EQ(w & forbidden, 0);
		EXPECT_EQ(!!(w & MC6_VS), !!(t1 & MC6_S));
		EXPECT_EQ(!!(w & MC6_VU), !!(t1 & MC6_U));
		EXPECT_EQ(dbtr_saved_state(t1) & (SBI_DBTR_TS_S | SBI_DBTR_TS_U),
			  (t1 & MC6_S ? SBI_DBTR_TS_S : 0) | (t1 & MC6_U ? SBI_DBTR_TS_U : 0));
	}
	EXPECT_TRUE(checked > 50000);
}
