/* SPDX-License-Identifier: MIT */
/* SBI DBTR (SBI v3.0 "Debug Triggers Extension") and the Sdtrig mcontrol6
 * trigger word it carries: its IDs, the trig_state bits and the layout of one
 * shared-memory entry, shared by the hypervisor, its unit tests and the test
 * guests. Little-endian, like all SBI shared memory. */
#ifndef HYP_SBI_DBTR_H
#define HYP_SBI_DBTR_H
#include <stdint.h>

#define SBI_EXT_DBTR			0x44425452
#define SBI_DBTR_NUM_TRIGGERS		0
#define SBI_DBTR_SET_SHMEM		1
#define SBI_DBTR_READ_TRIGGERS		2
#define SBI_DBTR_INSTALL_TRIGGERS	3
#define SBI_DBTR_UPDATE_TRIGGERS	4
#define SBI_DBTR_UNINSTALL_TRIGGERS	5
#define SBI_DBTR_ENABLE_TRIGGERS	6
#define SBI_DBTR_DISABLE_TRIGGERS	7
/* lo and hi both all-ones: no shared memory */
#define SBI_DBTR_SHMEM_DISABLE		(~0UL)
#define SBI_DBTR_SHMEM_ALIGN		8	/* XLEN / 8 */

/* One entry of the shared memory (XLEN / 2 bytes): word 0 is trig_state
 * (read), trig_idx (install: written back; update: read). */
struct sbi_dbtr_entry {
	uint64_t word0;
	uint64_t tdata1, tdata2, tdata3;
};
_Static_assert(sizeof(struct sbi_dbtr_entry) == 32, "a DBTR entry is XLEN / 2 bytes");

/* trig_state */
#define SBI_DBTR_TS_MAPPED		(1UL << 0)
#define SBI_DBTR_TS_U			(1UL << 1)
#define SBI_DBTR_TS_S			(1UL << 2)
#define SBI_DBTR_TS_VU			(1UL << 3)
#define SBI_DBTR_TS_VS			(1UL << 4)
#define SBI_DBTR_TS_HAVE_HW_TRIG	(1UL << 5)
#define SBI_DBTR_TS_HW_IDX_SHIFT	8

/* tdata1 (RV64): type in bits 63:60 for every trigger type */
#define TDATA1_TYPE_SHIFT		60
#define TDATA1_TYPE(t)			((uint64_t)(t) >> TDATA1_TYPE_SHIFT)
#define TDATA1_DMODE			(1ULL << 59)
#define TDATA1_TYPE_MCONTROL		2ULL
#define TDATA1_TYPE_MCONTROL6		6ULL

/* mcontrol6 (Sdtrig 1.0) */
#define MC6_LOAD			(1ULL << 0)
#define MC6_STORE			(1ULL << 1)
#define MC6_EXECUTE			(1ULL << 2)
#define MC6_U				(1ULL << 3)
#define MC6_S				(1ULL << 4)
#define MC6_UNCERTAINEN			(1ULL << 5)
#define MC6_M				(1ULL << 6)
#define MC6_MATCH_SHIFT			7
#define MC6_MATCH			(0xfULL << MC6_MATCH_SHIFT)
#define MC6_CHAIN			(1ULL << 11)
#define MC6_ACTION_SHIFT		12
#define MC6_ACTION			(0xfULL << MC6_ACTION_SHIFT)
#define MC6_SIZE_SHIFT			16
#define MC6_SIZE			(0x7ULL << MC6_SIZE_SHIFT)
#define MC6_SELECT			(1ULL << 21)
#define MC6_HIT0			(1ULL << 22)
#define MC6_VU				(1ULL << 23)
#define MC6_VS				(1ULL << 24)
#define MC6_HIT1			(1ULL << 25)
#define MC6_UNCERTAIN			(1ULL << 26)
#define MC6_TYPE			(TDATA1_TYPE_MCONTROL6 << TDATA1_TYPE_SHIFT)
/* action 0: raise a breakpoint exception; 1: enter Debug Mode */
#define MC6_ACTION_BREAKPOINT		0ULL
#define MC6_ACTION_DEBUG_MODE		1ULL
#endif
