/* SPDX-License-Identifier: MIT */
/* SBI extension/function IDs and error codes (SBI spec v3.0); shared by the
 * hypervisor (both as firmware client and as guest-facing server) and by the
 * bare-metal test guests. */
#ifndef HYP_SBI_DEFS_H
#define HYP_SBI_DEFS_H

#define SBI_SPEC_VERSION(maj, min)	(((unsigned long)(maj) << 24) | (min))

#define SBI_EXT_BASE		0x10
#define SBI_EXT_TIME		0x54494D45
#define SBI_EXT_IPI		0x735049
#define SBI_EXT_RFENCE		0x52464E43
#define SBI_EXT_HSM		0x48534D
#define SBI_EXT_SRST		0x53525354
#define SBI_EXT_DBCN		0x4442434E
#define SBI_EXT_FWFT		0x46574654
#define SBI_EXT_PMU		0x504D55
#define SBI_EXT_SUSP		0x53555350

#define SBI_BASE_GET_SPEC_VERSION	0
#define SBI_BASE_GET_IMPL_ID		1
#define SBI_BASE_GET_IMPL_VERSION	2
#define SBI_BASE_PROBE_EXT		3
#define SBI_BASE_GET_MVENDORID		4
#define SBI_BASE_GET_MARCHID		5
#define SBI_BASE_GET_MIMPID		6

#define SBI_TIME_SET_TIMER		0
#define SBI_IPI_SEND_IPI		0

#define SBI_RFENCE_FENCE_I		0
#define SBI_RFENCE_SFENCE_VMA		1
#define SBI_RFENCE_SFENCE_VMA_ASID	2
#define SBI_RFENCE_HFENCE_GVMA_VMID	3
#define SBI_RFENCE_HFENCE_GVMA		4
#define SBI_RFENCE_HFENCE_VVMA_ASID	5
#define SBI_RFENCE_HFENCE_VVMA		6

#define SBI_HSM_HART_START		0
#define SBI_HSM_HART_STOP		1
#define SBI_HSM_HART_GET_STATUS		2
#define SBI_HSM_HART_SUSPEND		3

#define SBI_HSM_STATE_STARTED		0
#define SBI_HSM_STATE_STOPPED		1
#define SBI_HSM_STATE_START_PENDING	2
#define SBI_HSM_STATE_STOP_PENDING	3
#define SBI_HSM_STATE_SUSPENDED		4
#define SBI_HSM_STATE_SUSPEND_PENDING	5
#define SBI_HSM_STATE_RESUME_PENDING	6

#define SBI_HSM_SUSPEND_RET_DEFAULT	0x00000000UL
#define SBI_HSM_SUSPEND_NON_RET_DEFAULT	0x80000000UL

#define SBI_SRST_SYSTEM_RESET		0
#define SBI_SRST_TYPE_SHUTDOWN		0
#define SBI_SRST_TYPE_COLD_REBOOT	1
#define SBI_SRST_TYPE_WARM_REBOOT	2
#define SBI_SRST_REASON_NONE		0
#define SBI_SRST_REASON_SYSFAIL		1

#define SBI_DBCN_WRITE			0
#define SBI_DBCN_READ			1
#define SBI_DBCN_WRITE_BYTE		2

#define SBI_SUSP_SYSTEM_SUSPEND		0
#define SBI_SUSP_SLEEP_TYPE_SUSPEND_TO_RAM	0

#define SBI_FWFT_SET			0
#define SBI_FWFT_GET			1
#define SBI_FWFT_MISALIGNED_EXC_DELEG	0
#define SBI_FWFT_LANDING_PAD		1
#define SBI_FWFT_SHADOW_STACK		2
#define SBI_FWFT_DOUBLE_TRAP		3
#define SBI_FWFT_PTE_AD_HW_UPDATING	4
#define SBI_FWFT_POINTER_MASKING_PMLEN	5
#define SBI_FWFT_SET_FLAG_LOCK		1UL

#define SBI_PMU_NUM_COUNTERS		0
#define SBI_PMU_COUNTER_GET_INFO	1
#define SBI_PMU_COUNTER_CONFIG_MATCHING	2
#define SBI_PMU_COUNTER_START		3
#define SBI_PMU_COUNTER_STOP		4
#define SBI_PMU_COUNTER_FW_READ		5
#define SBI_PMU_COUNTER_FW_READ_HI	6
#define SBI_PMU_SNAPSHOT_SET_SHMEM	7
#define SBI_PMU_EVENT_GET_INFO		8
#define SBI_PMU_CFG_FLAG_SKIP_MATCH	(1UL << 0)
#define SBI_PMU_CFG_FLAG_CLEAR_VALUE	(1UL << 1)
#define SBI_PMU_CFG_FLAG_AUTO_START	(1UL << 2)
#define SBI_PMU_CFG_FLAG_SET_VUINH	(1UL << 3)
#define SBI_PMU_CFG_FLAG_SET_VSINH	(1UL << 4)
#define SBI_PMU_CFG_FLAG_SET_UINH	(1UL << 5)
#define SBI_PMU_CFG_FLAG_SET_SINH	(1UL << 6)
#define SBI_PMU_CFG_FLAG_SET_MINH	(1UL << 7)
#define SBI_PMU_START_SET_INIT_VALUE	(1UL << 0)
#define SBI_PMU_START_INIT_SNAPSHOT	(1UL << 1)
#define SBI_PMU_STOP_RESET		(1UL << 0)
#define SBI_PMU_STOP_TAKE_SNAPSHOT	(1UL << 1)
#define SBI_PMU_HW_CPU_CYCLES		1
#define SBI_PMU_HW_INSTRUCTIONS		2
#define SBI_PMU_FW_ACCESS_LOAD		2
#define SBI_PMU_FW_ACCESS_STORE		3
#define SBI_PMU_FW_ILLEGAL_INSN		4
#define SBI_PMU_FW_SET_TIMER		5
#define SBI_PMU_FW_IPI_SENT		6
#define SBI_PMU_FW_IPI_RECEIVED		7
#define SBI_PMU_FW_FENCE_I_SENT		8
#define SBI_PMU_FW_SFENCE_VMA_SENT	10
#define SBI_PMU_FW_SFENCE_VMA_ASID_SENT	12
#define SBI_PMU_FW_PLATFORM		0xffff
#define SBI_PMU_CTR_INFO_FW		(1UL << 63)	/* counter_info type bit (RV64) */

#define SBI_SUCCESS			0
#define SBI_ERR_FAILED			-1
#define SBI_ERR_NOT_SUPPORTED		-2
#define SBI_ERR_INVALID_PARAM		-3
#define SBI_ERR_DENIED			-4
#define SBI_ERR_INVALID_ADDRESS		-5
#define SBI_ERR_ALREADY_AVAILABLE	-6
#define SBI_ERR_ALREADY_STARTED		-7
#define SBI_ERR_ALREADY_STOPPED		-8
#define SBI_ERR_NO_SHMEM		-9
#define SBI_ERR_INVALID_STATE		-10
#define SBI_ERR_BAD_RANGE		-11
#define SBI_ERR_TIMEOUT			-12
#define SBI_ERR_IO			-13
#define SBI_ERR_DENIED_LOCKED		-14

/* Carapace's own extension (firmware-specific EID range), present only in VMs
 * declared with debug=1: hooks for tests of hypervisor-side behaviour. */
#define SBI_EXT_CARAPACE_DEBUG		0x0A435250	/* "\nCRP" */
#define SBI_CARAPACE_WRITE_PROTECT	0	/* write-protect all mapped RAM; value = chunks */
#define SBI_CARAPACE_DIRTY_CHUNKS	1	/* value = 2 MiB chunks written since */
#define SBI_CARAPACE_EXITS		2	/* value = the calling vCPU's exits so far */

/* Carapace's implementation ID (not in the SBI registry; chosen high to avoid it). */
#define CARAPACE_SBI_IMPL_ID		0x43415250UL	/* "CARP" */
#define CARAPACE_SBI_IMPL_VERSION	0x00000100UL	/* 0.1 */

#endif
