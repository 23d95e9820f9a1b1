/* SPDX-License-Identifier: MIT */
/* SBI DBTR: which trigger words a guest may install, the word the firmware
 * gets instead of its own, and which of a vCPU's need a hardware trigger.
 * Pure: the unit tests run this code (tests/unit/test_dbtr.c). */
#include <abi/sbi_dbtr.h>
#include <abi/sbi_defs.h>
#include <dbtr.h>

struct dbtr_host dbtr_host;

/* mcontrol6 bits that are 0 in Sdtrig 1.0 (58:27, 20:19) */
#define MC6_RESERVED	((((1ULL << 59) - 1) & ~((1ULL << 27) - 1)) | (3ULL << 19))
/* what decides which accesses match: passed on as the guest set it */
#define MC6_MATCHING	(MC6_SELECT | MC6_SIZE | MC6_MATCH | MC6_EXECUTE | MC6_STORE | MC6_LOAD)

long dbtr_check(uint64_t tdata1, uint64_t tdata3)
{
	uint64_t action = (tdata1 & MC6_ACTION) >> MC6_ACTION_SHIFT;

	/* mcontrol (type 2) has no VS/VU bits: it could not be kept out of HS */
	if (TDATA1_TYPE(tdata1) != TDATA1_TYPE_MCONTROL6)
		return SBI_ERR_FAILED;
	/* the spec: dmode and m must be 0; Debug Mode needs dmode */
	if (tdata1 & (TDATA1_DMODE | MC6_M | MC6_RESERVED) || action == MC6_ACTION_DEBUG_MODE)
		return SBI_ERR_INVALID_PARAM;
	/* trace and external actions, chains, textra: not implemented here */
	if (action != MC6_ACTION_BREAKPOINT || tdata1 & MC6_CHAIN || tdata3)
		return SBI_ERR_NOT_SUPPORTED;
	return SBI_SUCCESS;
}

uint64_t dbtr_host_tdata1(uint64_t tdata1)
{
	/* the guest's S is VS, its U is VU; its own VS/VU name modes it does
	 * not have (no H extension in a guest): they never fire */
	uint64_t modes = (tdata1 & MC6_S ? MC6_VS : 0) | (tdata1 & MC6_U ? MC6_VU : 0);

	if (!modes || !(tdata1 & (MC6_EXECUTE | MC6_STORE | MC6_LOAD)))
		return 0;
	return MC6_TYPE | (tdata1 & MC6_MATCHING) | modes;
}

uint8_t dbtr_saved_state(uint64_t tdata1)
{
	return (uint8_t)((tdata1 & MC6_U ? SBI_DBTR_TS_U : 0) | (tdata1 & MC6_S ? SBI_DBTR_TS_S : 0) |
			 (tdata1 & MC6_VU ? SBI_DBTR_TS_VU : 0) |
			 (tdata1 & MC6_VS ? SBI_DBTR_TS_VS : 0));
}

unsigned long dbtr_num_triggers(uint64_t tdata1)
{
	if (!tdata1 || TDATA1_TYPE(tdata1) == TDATA1_TYPE_MCONTROL6)
		return dbtr_host.trig_max;
	return 0;
}

uint8_t dbtr_live_count(const struct vcpu_dbtr *d)
{
	unsigned int live = 0;

	for (unsigned int i = 0; i < dbtr_host.trig_max; i++)
		if (d->trig[i].state & SBI_DBTR_TS_MAPPED && dbtr_host_tdata1(d->trig[i].tdata1))
			live++;
	return (uint8_t)live;
}
