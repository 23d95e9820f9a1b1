/* SPDX-License-Identifier: MIT */
/* The snapshot stream, version 2 (docs/snapshot-format.md is normative; this
 * header is its C form, shared by the hypervisor and its tests).
 *
 * A stream is a header, then sections, each a section header and a payload:
 *   CONFIG, VCPU x nr_vcpus, DEVICE x every device, MEMORY x runs, END.
 * Everything is little-endian, every field has a fixed width and every struct
 * a fixed size with no implicit padding. A snapshot file is a saved stream. */
#ifndef HYP_SNAPSHOT_FORMAT_H
#define HYP_SNAPSHOT_FORMAT_H
#include <stdint.h>

#define SNAP_MAGIC		"CARASNAP"	/* 8 bytes, no NUL */
#define SNAP_VERSION		2
#define SNAP_VERSION_MIN	1	/* version 1 streams are read too */
#define SNAP_PAGE_SIZE		4096
#define SNAP_RUN_MAX_PAGES	512		/* one MEMORY section covers at most 2 MiB */
#define SNAP_MAX_VCPUS		8
#define SNAP_SECTION_MAX	(sizeof(struct snap_mem_run) + \
				 (uint64_t)SNAP_RUN_MAX_PAGES * SNAP_PAGE_SIZE)

#define SNAP_F_LIVE		(1ULL << 0)	/* taken while the VM ran on */

struct snap_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;	/* sizeof(struct snap_header) */
	uint64_t flags;		/* SNAP_F_*; unknown bits are refused */
	uint64_t reserved;	/* 0 */
};

enum snap_section_type {
	SNAP_SEC_CONFIG = 1,
	SNAP_SEC_VCPU = 2,
	SNAP_SEC_DEVICE = 3,
	SNAP_SEC_MEMORY = 4,
	SNAP_SEC_END = 5,
};

struct snap_section {
	uint32_t type;		/* enum snap_section_type */
	uint32_t instance;	/* vCPU id, device index, 0 otherwise */
	uint64_t length;	/* payload bytes that follow */
	uint32_t crc32c;	/* CRC32C (Castagnoli) of the payload */
	uint32_t reserved;	/* 0 */
};

/* CONFIG (instance 0): what the VM is. */
struct snap_config {
	char name[16];		/* NUL-terminated, [a-z0-9_-]{1,15} */
	uint64_t ram_gpa;	/* guest physical base of RAM */
	uint64_t ram_size;	/* bytes, multiple of 2 MiB, >= 8 MiB */
	uint32_t nr_vcpus;	/* 1..8 */
	uint32_t cfi_policy;	/* 0 trap, 1 delegate, 2 strict, 3 off */
	uint32_t features;	/* SNAP_FEAT_*: what the guest was given */
	uint32_t boot_count;
	uint32_t debug_ext;	/* 0 or 1 */
	uint32_t vs_sv;		/* widest paging mode the guest was given: 39, 48, 57 (0 in version 1) */
	uint64_t guest_time;	/* the guest's time (rdtime) when its vCPUs stopped */
	uint64_t timebase_hz;	/* of the source host: time continues at this rate */
	char kernel_image[32];	/* host image names it booted from (NUL-terminated) */
	char initrd_image[32];
	char bootargs[512];	/* NUL-terminated */
};

#define SNAP_FEAT_ZICFILP	(1U << 0)
#define SNAP_FEAT_ZICFISS	(1U << 1)
#define SNAP_FEAT_SSTC		(1U << 2)
#define SNAP_FEAT_SVPBMT	(1U << 3)
#define SNAP_FEAT_SVADU		(1U << 4)
#define SNAP_FEAT_ALL		0x1fU

/* VCPU (instance = guest hart id): everything the guest can observe. */
struct snap_vcpu {
	uint64_t gpr[32];	/* x0..x31; x0 is 0 */
	uint64_t pc;
	uint64_t sstatus;	/* the trapped context: SPP, SPIE, SPELP, FS (others 0) */
	uint64_t vsstatus, vsie, vstvec, vsscratch, vsepc, vscause, vstval, vsatp;
	uint64_t vstimecmp;	/* guest time */
	uint64_t hvip;		/* pending virtual interrupts: VSSIP, VSTIP, VSEIP bits */
	uint64_t scounteren;
	uint64_t senvcfg;
	uint64_t ssp;
	uint64_t f[32];
	uint64_t fcsr;
	uint8_t lp_value, lp_locked, ss_value, ss_locked;	/* FWFT, each 0 or 1 */
	uint32_t hsm_state;	/* 0 stopped, 1 started, 2 suspended */
	uint32_t waiting;	/* in WFI or retentive suspend: 0 or 1 */
	uint32_t resume_nonret;	/* non-retentive suspend pending: 0 or 1 */
	uint64_t resume_addr, resume_opaque;
	/* version 2 from here (a version 1 record ends above: SNAP_VCPU_V1_SIZE) */
	uint8_t misaligned_locked;	/* FWFT MISALIGNED_EXC_DELEG lock (value always 1) */
	uint8_t pte_ad_value, pte_ad_locked;	/* FWFT PTE_AD_HW_UPDATING, 0 or 1 */
	uint8_t system_suspend;	/* 0 or 1: the suspend is the VM's (SBI SUSP) */
	uint32_t reserved;	/* 0 */
	uint64_t sta_shmem;	/* SBI STA shared memory (guest physical), SNAP_STA_OFF: none */
	/* SBI PMU: counters 0..SNAP_PMU_COUNTERS-1 (docs/snapshot-format.md) */
	uint32_t pmu_configured;	/* bit i: counter i has an event */
	uint32_t pmu_started;		/* bit i: counter i counts (within configured) */
	uint32_t pmu_event_idx[11];	/* SNAP_PMU_COUNTERS: each one's event, 0 if none */
	uint32_t reserved2;		/* 0 */
	uint64_t pmu_value[11];		/* each counter's value when the vCPU stopped */
	uint64_t reserved3[2];		/* 0 */
};

#define SNAP_VCPU_V1_SIZE	672
#define SNAP_STA_OFF		UINT64_MAX
#define SNAP_PMU_COUNTERS	11

/* DEVICE (instance = index): a name, then the model's own state bytes. */
struct snap_device {
	char name[16];		/* "uart16550", "plic", "vmgenid" (NUL-terminated) */
	uint32_t state_size;	/* bytes that follow */
	uint32_t reserved;	/* 0 */
};

/* MEMORY (instance 0): one run of pages, each not all zero; pages missing
 * from every run are zero. */
struct snap_mem_run {
	uint64_t gpa;		/* page aligned, inside RAM */
	uint64_t pages;		/* 1..SNAP_RUN_MAX_PAGES; the data follows */
};

/* END (instance 0): the stream is complete. */
struct snap_end {
	uint64_t sections;	/* sections before this one */
	uint64_t memory_pages;	/* pages in all MEMORY sections */
};

_Static_assert(sizeof(struct snap_header) == 32, "snap_header");
_Static_assert(sizeof(struct snap_section) == 24, "snap_section");
_Static_assert(sizeof(struct snap_config) == 648, "snap_config");
_Static_assert(sizeof(struct snap_vcpu) == 848, "snap_vcpu");
_Static_assert(sizeof(struct snap_device) == 24, "snap_device");
_Static_assert(sizeof(struct snap_mem_run) == 16, "snap_mem_run");
_Static_assert(sizeof(struct snap_end) == 16, "snap_end");
#endif
