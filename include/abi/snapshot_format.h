/* SPDX-License-Identifier: MIT */
/* The snapshot stream, version 8 (docs/snapshot-format.md is normative; this
 * header, abi/snapshot_records.h (the vCPU records) and
 * abi/snapshot_devices.h (the device states) are its C form, shared by the
 * hypervisor, its tests and tools/carapace-snap).
 *
 * A stream is a header, then sections, each a section header and a payload:
 *   CONFIG, VCPU x nr_vcpus, DEVICE x every device, VIRTIO x the VM's virtio
 *   devices (version 4), DISK_ID x the disks (version 6, without DISKS),
 *   MEMORY x runs, DISK x runs (version 5, with DISKS), END.
 * Everything is little-endian, every field has a fixed width and every struct
 * a fixed size with no implicit padding. A snapshot file is a saved stream. */
#ifndef HYP_SNAPSHOT_FORMAT_H
#define HYP_SNAPSHOT_FORMAT_H
#include <stdint.h>
#include <abi/snapshot_records.h>
#include <abi/snapshot_devices.h>

#define SNAP_MAGIC		"CARASNAP"	/* 8 bytes, no NUL */
#define SNAP_VERSION		8	/* 8: FWFT MISALIGNED_EXC_DELEG's value (FWFT record),
					 * the DBTR record */
#define SNAP_VERSION_MIN	1	/* versions 1 to 7 are read too */
#define SNAP_VERSION_VIRTIO	4	/* the first with VIRTIO sections */
#define SNAP_VERSION_DISK	5	/* the first with DISK sections */
#define SNAP_VERSION_DISK_ID	6	/* the first with DISK_ID sections */
#define SNAP_VERSION_AIA	7	/* the first with the IMSIC record and the aplic device */
#define SNAP_VERSION_MISALIGNED	8	/* the first with FWFT misaligned_emulate */
#define SNAP_VERSION_DBTR	8	/* the first with the DBTR record */
#define SNAP_PAGE_SIZE		4096
#define SNAP_RUN_MAX_PAGES	512		/* one MEMORY section covers at most 2 MiB */
#define SNAP_MAX_VCPUS		8
#define SNAP_SECTION_MAX	(sizeof(struct snap_mem_run) + \
				 (uint64_t)SNAP_RUN_MAX_PAGES * SNAP_PAGE_SIZE)

#define SNAP_F_LIVE		(1ULL << 0)	/* taken while the VM ran on */
#define SNAP_F_DISKS		(1ULL << 1)	/* version 5, 6: every disk's content is in it */

/* A disk's content moves in blocks of this many 512-byte sectors (64 KiB);
 * a block of zeroes is not sent (the restored image starts zeroed). */
#define SNAP_DISK_BLOCK_SECTORS	128
#define SNAP_DISK_SECTOR	512
/* A migration's DISK run (docs/migration.md, "DISK"): whole units of this
 * many sectors (4 KiB) inside one block; a snapshot's is always a block. */
#define SNAP_DISK_UNIT_SECTORS	8

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
	SNAP_SEC_VIRTIO = 6,	/* version 4: one virtio device, instance = its slot */
	SNAP_SEC_DISK = 7,	/* version 5: one run of a disk's sectors, instance = its slot */
	SNAP_SEC_DISK_ID = 8,	/* version 6: a disk's identity, instance = its slot */
};

struct snap_section {
	uint32_t type;		/* enum snap_section_type */
	uint32_t instance;	/* vCPU id, device index, 0 otherwise */
	uint64_t length;	/* payload bytes that follow */
	uint32_t crc32c;	/* CRC32C (Castagnoli) of the payload */
	uint32_t reserved;	/* 0 */
};

/* CONFIG (instance 0): struct snap_config; VCPU (instance = guest hart id):
 * struct snap_vcpu, the records of abi/snapshot_records.h (versions 3 to 6:
 * its first SNAP_VCPU_V6_SIZE bytes, CORE to PMU). */

/* DEVICE (instance = index): a name, then the model's state, a struct
 * snap_dev_<name> of abi/snapshot_devices.h. Every device of SNAP_DEVICES
 * the stream's version has (versions 1 to 6: the first
 * SNAP_DEVICES_V6), the interrupt controller the VM lacks all zero. */
struct snap_device {
	char name[16];		/* SNAP_DEVICES' name at that index (NUL-terminated) */
	uint32_t state_size;	/* bytes that follow */
	uint32_t reserved;	/* 0 */
};

/* VIRTIO (instance = the device's virtio-mmio slot, 0, 1, ... in order): a
 * struct snap_device naming the model (SNAP_VIO_MODELS), then its state. */

/* MEMORY (instance 0): one run of pages, each not all zero; pages missing
 * from every run are zero. */
struct snap_mem_run {
	uint64_t gpa;		/* page aligned, inside RAM */
	uint64_t pages;		/* 1..SNAP_RUN_MAX_PAGES; the data follows */
};

/* DISK (instance = the disk's virtio-mmio slot): one block of its content,
 * not all zero; blocks missing from every run are zero. */
struct snap_disk_run {
	uint64_t sector;	/* a multiple of SNAP_DISK_BLOCK_SECTORS, inside the disk */
	uint32_t sectors;	/* 1..SNAP_DISK_BLOCK_SECTORS, not past the disk's end */
	uint32_t reserved;	/* 0 */
};

/* DISK_ID (instance = the disk's virtio-mmio slot; only in a stream without
 * SNAP_F_DISKS, one per disk, read-only ones too): a cheap fingerprint of the
 * disk's content, so that a restore onto another image is refused. Samples
 * 0..samples-1 are the blocks floor(i * (blocks - 1) / (samples - 1)) of the
 * disk's blocks of SNAP_DISK_BLOCK_SECTORS (the first, the last and evenly
 * spaced ones between), each with the CRC32C of its sectors (the last block
 * may be shorter); the samples after them are all zero. */
#define SNAP_DISK_ID_SAMPLES	16
struct snap_disk_id_sample {
	uint64_t block;		/* the block's index: its first sector / SNAP_DISK_BLOCK_SECTORS */
	uint32_t crc32c;	/* CRC32C of the block's sectors */
	uint32_t reserved;	/* 0 */
};

struct snap_disk_id {
	uint64_t sectors;	/* the disk's capacity: its VIRTIO section's */
	uint32_t samples;	/* min(SNAP_DISK_ID_SAMPLES, the disk's blocks) */
	uint32_t reserved;	/* 0 */
	struct snap_disk_id_sample sample[SNAP_DISK_ID_SAMPLES];
};

/* END (instance 0): the stream is complete. */
struct snap_end {
	uint64_t sections;	/* sections before this one */
	uint64_t memory_pages;	/* pages in all MEMORY sections */
};

_Static_assert(sizeof(struct snap_header) == 32, "snap_header");
_Static_assert(sizeof(struct snap_section) == 24, "snap_section");
_Static_assert(sizeof(struct snap_device) == 24, "snap_device");
_Static_assert(sizeof(struct snap_mem_run) == 16, "snap_mem_run");
_Static_assert(sizeof(struct snap_end) == 16, "snap_end");
_Static_assert(sizeof(struct snap_disk_run) == 16, "snap_disk_run");
_Static_assert(sizeof(struct snap_disk_id_sample) == 16, "snap_disk_id_sample");
_Static_assert(sizeof(struct snap_disk_id) == 272, "snap_disk_id");
#endif
