/* SPDX-License-Identifier: MIT */
/* SBI STA (steal-time accounting, SBI v3.0 "Steal-time Accounting
 * Extension"): its IDs and the 64-byte record a vCPU registers with
 * sbi_steal_time_set_shmem(), shared by the hypervisor, its unit tests and
 * the test guests. Little-endian, like all SBI shared memory. (Its own header:
 * the record is a data format, like the snapshot's.) */
#ifndef HYP_SBI_STA_H
#define HYP_SBI_STA_H
#include <stdint.h>

#define SBI_EXT_STA			0x535441
#define SBI_STA_STEAL_TIME_SET_SHMEM	0
/* lo and hi both all-ones: stop reporting */
#define SBI_STA_SHMEM_DISABLE		(~0UL)
#define SBI_STA_RECORD_SIZE		64	/* also the required alignment */

struct sbi_sta_record {
	uint32_t sequence;	/* odd while the hypervisor updates steal */
	uint32_t flags;		/* always 0 */
	uint64_t steal;		/* ns the vCPU could run but had no hart */
	uint8_t preempted;	/* non-zero while it is kept off a hart */
	uint8_t pad[47];
};

_Static_assert(sizeof(struct sbi_sta_record) == SBI_STA_RECORD_SIZE, "STA record is 64 bytes");
#endif
