/* SPDX-License-Identifier: MIT */
/* The host a restore (fuzz_snap_load.c) or an incoming migration
 * (fuzz_mig_recv.c) lands on, stubbed once for both (fuzz_restore_host.c;
 * the clock and the log are fuzz_clock_log.c): the host's capabilities, the stream port with the
 * fuzzer choosing how its reads are split, and one free VM slot whose RAM is
 * the tail of one host block. docs/fuzzing.md says why each stub is what it
 * is. */
#ifndef FUZZ_RESTORE_HOST_H
#define FUZZ_RESTORE_HOST_H
#include <stddef.h>
#include <stdint.h>
#include <vm.h>
#include <abi/snapshot_format.h>
#include "fuzz_check.h"

#define FUZZ_RAM_CAP	(64ULL << 20)	/* a small host: bigger VMs get -HYP_ENOMEM */
#define FUZZ_TAKEN_NAME	"taken"		/* a VM of that name exists on this host */
#define FUZZ_DRY_READS	3		/* empty reads after the data before the client leaves */

/* The host's disks and switches (hyp/lifecycle/vm_io.c's part, stubbed):
 * for a restore, a writable disk and a read-only one of FUZZ_DISK_SECTORS
 * each; for a copy-mode migration two small writable ones, whose DISK blocks
 * fit in an input (a whole block is 64 KiB): FUZZ_COPY_DISK_PCI of two
 * blocks, the second of 16 sectors, and FUZZ_COPY_DISK2_PCI of one block of
 * 8 sectors. SEG_MAX VBLK_SEG_MAX (254). Each writable disk keeps what
 * vm_io_disk_submit() writes to it, and is all zeroes again at each
 * input's start (a new image). A switch FUZZ_SWITCH on which another VM's
 * NIC has FUZZ_TAKEN_MAC (a restore beside its original derives a new MAC
 * for its NIC). */
#define FUZZ_DISK_PCI		2
#define FUZZ_DISK_RO_PCI	3
#define FUZZ_DISK_SECTORS	16384
/* What both host disks read as (a restore's DISK_ID check reads them):
 * every byte of block b is FUZZ_DISK_BYTE(b), the same on both, as on a
 * copy of one image; but block fuzz_disk_changed (~0: none) reads all 0xee,
 * as an image the guest wrote after its snapshot. tests/fuzz/make_seeds.py
 * computes the seeds' DISK_IDs from the same rule. */
#define FUZZ_DISK_BYTE(b)	((uint8_t)((b) * 7 + 1))
#define FUZZ_DISK_CHANGED_BYTE	0xee
extern uint64_t fuzz_disk_changed;
#define FUZZ_COPY_DISK_PCI	4
#define FUZZ_COPY_DISK_SECTORS	(SNAP_DISK_BLOCK_SECTORS + 16)
#define FUZZ_COPY_DISK2_PCI	5
#define FUZZ_COPY_DISK2_SECTORS	8
#define FUZZ_NR_DISKS		4
#define FUZZ_SWITCH		"lan"
#define FUZZ_TAKEN_MAC		{ 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 }

/* The host lacks Ssaia (an AIA VM is refused at CONFIG); false: it has it.
 * Not a flag: both targets' flag bytes are full. Unit tests set it. */
extern bool fuzz_no_ssaia;

/* Flags in byte 0 of both targets' harness header. */
#define FL_NAME		0x01	/* under a new name, "copy" */
#define FL_NO_SVADU	0x02	/* the host lacks Svadu */
#define FL_NO_ZICFISS	0x04	/* the host lacks Zicfiss */
#define FL_FIX_CRC	0x08	/* every whole section's crc32c is set right first */

/* The client on the stream port. Reads take sizes[] in turn: 0 as much as
 * asked, 1..127 that many bytes, 128..254 (v - 127) * 256 bytes, 255 nothing
 * this time; a first size of 254 makes the third empty read a stall. Writes
 * (a migration's destination answers): wmode 0 = the port takes them all,
 * 1..254 = it takes nothing after that many writes, 255 = nothing from the
 * 2nd write on (the source stopped reading: a stall from then on);
 * slow_tx = 7 bytes a time. */
struct fuzz_port {
	const uint8_t *data;
	size_t len, pos;
	uint8_t sizes[6], wmode;
	bool slow_tx, writable, connected;
	unsigned int turn, dry, writes;
	uint64_t reads, empty_reads;
	uint8_t out[16384];
	size_t out_len;
};
extern struct fuzz_port port;

/* What the VM slot went through during one input. */
struct fuzz_vms_seen {
	unsigned int allocs, alloc_fails, destroys, starts, paused_starts, kicks;
	unsigned int disk_requests;	/* requests the stub disks completed */
	unsigned int frames_seen;	/* frames the other VM's NIC on FUZZ_SWITCH got */
	unsigned int disk_writes;	/* DISK blocks a restore or migration wrote */
	unsigned int disk_reads;	/* blocks a restore's DISK_ID check read */
	unsigned int disk_flushes;	/* FLUSHes of a migration's copied disks */
	uint8_t disk_slots_written;	/* a bit a VM disk slot vm_io_disk_submit() wrote */
	uint64_t disk_last_sector;	/* the last one's sector and first byte */
	uint8_t disk_last_byte;
	bool live;
	unsigned int probes;		/* vsbi_vm_init() calls */
	uint32_t probed_features;	/* the VM's features the last one saw */
};
extern struct fuzz_vms_seen vms_seen;
extern struct vm fuzz_vm;	/* the one free slot */
extern uint8_t *fuzz_ram;	/* the VM's RAM while it exists */

/* A host disk, and what vm_io_disk_submit()/_flush() did to it this input. */
struct fuzz_disk {
	uint8_t pci;
	bool read_only;
	uint64_t sectors;
	uint8_t *data;			/* its content; NULL: read-only, never written */
	uint64_t written[2];		/* a bit a block written this input */
	unsigned int writes, flushes;
	bool dirty;			/* written since its last flush */
	size_t flush_out_len;		/* port.out_len at its last flush */
	bool flush_started;		/* the VM had started at its last flush */
};
extern struct fuzz_disk fuzz_disks[FUZZ_NR_DISKS];
/* Flag: the host disks are slow. Every other request is refused with
 * -HYP_EBUSY (a full ring), and one taken completes (its data moved then)
 * at the second vm_io_disk_poll() after it: the callers' waits, across
 * polls, are taken. */
extern bool fuzz_disk_slow;

/** fuzz_host_init() - before the first input: the one block guest RAM comes
 *  from (allocated in an input, it would look like a leak of that input). */
void fuzz_host_init(void);
/** fuzz_host_input() - a new input: header byte 0 @flags sets the host's
 *  capabilities; a client connected with @data, read in @sizes; the slot free. */
void fuzz_host_input(uint8_t flags, const uint8_t *data, size_t len, const uint8_t sizes[6]);
/** fuzz_disk_at() - the host disk at PCI device @pci, or NULL. */
struct fuzz_disk *fuzz_disk_at(uint8_t pci);
/** fuzz_disk_zero() - every block of @d written this input is zero again. */
bool fuzz_disk_zero(const struct fuzz_disk *d);
/** fuzz_port_stopped() - the port takes no more of the destination's writes. */
bool fuzz_port_stopped(void);
/** fuzz_fix_crcs() - give each section of @s whose payload is all there (as the
 *  sections claim to be laid out) the CRC of that payload. */
void fuzz_fix_crcs(uint8_t *s, size_t len);
/** fuzz_check_devices() - each device's state installed in @vm is one its
 *  table and check hook accept (include/abi/snapshot_devices.h), the virtio
 *  devices' too (after the rescan the restore's start made). */
void fuzz_check_devices(struct vm *vm);
/** fuzz_check_vcpus() - what @vm (restored from a stream with @c) holds is
 *  legal for it: every vCPU saves to a record the checks accept, with no bit
 *  the save had to drop (include/abi/snapshot_records.h), FS on in its trapped
 *  context; hstateen0 and the SBI probes follow the guest's features. */
void fuzz_check_vcpus(struct vm *vm, const struct snap_config *c);

#endif
