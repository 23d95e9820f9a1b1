/* SPDX-License-Identifier: MIT */
/* The live-migration protocol, version 9 (docs/migration.md is normative;
 * this header is its C form, shared by the hypervisor and its tests).
 *
 * Two byte streams between a source hypervisor (S) and a destination (D),
 * each a header then sections framed as in the snapshot format (struct
 * snap_section: type, instance, length, CRC32C of the payload):
 *
 *   S -> D  header(CARAMIGR)
 *   D -> S  header(CARAMIGR) CAPS                       what D can give
 *   S -> D  CONFIG | ABORT                              S decides
 *   D -> S  ACCEPT | ABORT                              D created the VM (not run)
 *   S -> D  DISK_LAYOUT*                                copy mode: each disk
 *   S -> D  { MEMORY | ZERO | DISK }* ROUND             pre-copy round 1..n
 *   S -> D  SWITCHOVER { MEMORY | ZERO | DISK }* VCPU* DEVICE* VIRTIO* END   VM paused on S
 *   D -> S  RUNNING | ABORT                             D runs the guest
 *   S -> D  DONE                                        S destroyed its copy
 *
 * Either side may send ABORT until it has sent END (S) or RUNNING (D); a
 * broken stream is an abort until then. After END S never resumes its copy
 * unless D's ABORT says D did not start it; after RUNNING D keeps the VM
 * whatever happens. A stream that breaks in between leaves both copies,
 * marked unconfirmed: S's paused, D's running (docs/migration.md). */
#ifndef HYP_MIGRATION_FORMAT_H
#define HYP_MIGRATION_FORMAT_H
#include <stdint.h>
#include <abi/snapshot_format.h>

#define MIG_MAGIC		"CARAMIGR"	/* 8 bytes, no NUL; in a snap_header */
#define MIG_VERSION		9	/* 9: snapshot version 8's records (FWFT
					 * misaligned_emulate, DBTR) */

enum mig_section_type {
	/* 1..7 as in the snapshot format: CONFIG, VCPU, DEVICE, MEMORY, END, VIRTIO,
	 * DISK (copy mode only; a block may come again in a later round); never
	 * the snapshot format's 8, DISK_ID */
	MIG_SEC_CAPS = 16,
	MIG_SEC_ACCEPT = 17,
	MIG_SEC_ZERO = 18,
	MIG_SEC_ROUND = 19,
	MIG_SEC_SWITCHOVER = 20,
	MIG_SEC_RUNNING = 21,
	MIG_SEC_DONE = 22,
	MIG_SEC_ABORT = 23,
	MIG_SEC_DISK_LAYOUT = 24,
};

#define MIG_POLICY_BIT(p)	(1U << (p))	/* p: snap_config.cfi_policy */

/* CAPS (D -> S): what a VM created on D would be given. */
struct mig_caps {
	uint32_t features;	/* SNAP_FEAT_* D gives a VM under the trap policy */
	uint32_t policies;	/* MIG_POLICY_BIT() of every policy D accepts */
	uint32_t sbi_version;	/* SBI spec version D's guests see (major << 24 | minor) */
	uint32_t max_vcpus;
	uint64_t free_mem;	/* bytes D can give a new VM (RAM and its tables) */
	uint64_t timebase_hz;
	uint32_t fwft;		/* MIG_FWFT_*: FWFT features D's guests can set */
	uint32_t vs_sv;		/* widest paging mode D's CPU has: 39, 48 or 57 */
};

#define MIG_FWFT_LANDING_PAD	(1U << 0)
#define MIG_FWFT_SHADOW_STACK	(1U << 1)

/* ACCEPT (D -> S): the VM exists on D, not running; memory may come. */
struct mig_accept {
	uint32_t vm_index;	/* D's slot, for the record */
	uint32_t flags;		/* MIG_ACCEPT_*; S refuses unknown bits */
};

/* D chose copy mode: the disks' blocks come in the stream (DISK_LAYOUT, then
 * DISK sections). Without it, shared mode: D opens the images S uses, and
 * S flushes its disks before END. */
#define MIG_ACCEPT_COPY_DISKS	(1U << 0)

/* DISK_LAYOUT (S -> D, copy mode): disk @instance of the VM, one a disk in
 * slot order right after ACCEPT: D binds it to the host disk it was given. */
struct mig_disk_layout {
	uint64_t sectors;	/* its capacity, 512-byte sectors */
	uint32_t flags;		/* MIG_DISK_*; unknown bits are refused */
	uint32_t reserved;	/* 0 */
};

/* The guest cannot write it: its content is not copied (D's host disk is a
 * copy of the image already, as in shared mode). */
#define MIG_DISK_READ_ONLY	(1U << 0)

/* ZERO (S -> D): these pages are zero now (they were sent non-zero before). */
struct mig_zero {
	uint64_t gpa;		/* page aligned, inside RAM */
	uint64_t pages;		/* 1..SNAP_RUN_MAX_PAGES */
};

/* ROUND (S -> D): a pre-copy round is complete. */
struct mig_round {
	uint32_t round;		/* 1, 2, ... */
	uint32_t reserved;	/* 0 */
	uint64_t pages;		/* pages this round sent (MEMORY and ZERO) */
	uint64_t dirty;		/* pages written meanwhile: the next round's work */
	uint64_t bytes;		/* stream bytes S has sent so far */
	uint64_t disk_blocks;	/* DISK sections this round sent (copy mode) */
	uint64_t disk_dirty;	/* 4 KiB disk units written meanwhile: the next round's */
	uint64_t expected_downtime_us;	/* S's estimate were it to stop now */
	uint64_t dirty_limit;	/* pages a second S holds the guest to from now on; 0: none */
};

/* SWITCHOVER (S -> D): the VM is paused on S; the rest follows. */
struct mig_switchover {
	uint64_t guest_time;	/* the guest's time when its vCPUs stopped */
	uint32_t rounds;	/* pre-copy rounds before this */
	uint32_t flags;		/* MIG_SWITCHOVER_*; unknown bits are refused */
};

/* Its operator had paused the VM before the migration: it arrives paused. */
#define MIG_SWITCHOVER_PAUSED	(1U << 0)

/* RUNNING (D -> S): the guest runs on D. */
struct mig_running {
	uint64_t downtime_ticks;	/* D's time from SWITCHOVER to the guest running */
	uint64_t timebase_hz;
};

/* DONE (S -> D): S destroyed its copy; the migration is complete. */
struct mig_done {
	uint64_t downtime_ticks;	/* S's time from pausing the VM to END */
	uint64_t timebase_hz;
};

/* ABORT (either way): the sender gives up; the message says why. */
struct mig_abort {
	char code[16];		/* NUL-terminated: a management error code */
	char message[160];	/* NUL-terminated */
};

_Static_assert(sizeof(struct mig_caps) == 40, "mig_caps");
_Static_assert(sizeof(struct mig_accept) == 8, "mig_accept");
_Static_assert(sizeof(struct mig_zero) == 16, "mig_zero");
_Static_assert(sizeof(struct mig_round) == 64, "mig_round");
_Static_assert(sizeof(struct mig_disk_layout) == 16, "mig_disk_layout");
_Static_assert(sizeof(struct mig_switchover) == 16, "mig_switchover");
_Static_assert(sizeof(struct mig_running) == 16, "mig_running");
_Static_assert(sizeof(struct mig_done) == 16, "mig_done");
_Static_assert(sizeof(struct mig_abort) == 176, "mig_abort");
#endif
