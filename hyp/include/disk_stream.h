/* SPDX-License-Identifier: MIT */
/* A VM's disks in a stream: DISK sections (docs/snapshot-format.md, "DISK")
 * for the snapshot's saver and loader (snap_save.c, snap_load.c) and a
 * copy-mode migration's sender and receiver (mig_send.c, mig_recv.c); the
 * DISK_ID sections of a snapshot without the disks' content
 * (snap_disk_id.c). A disk is the VM's virtio slot of the same number
 * (disks come first). */
#ifndef HYP_DISK_STREAM_H
#define HYP_DISK_STREAM_H
#include <types.h>
#include <vm_io.h>
#include <abi/snapshot_format.h>

struct vm;
struct section_tx;

enum disk_save_step {
	DS_STAGED,	/* a DISK section is staged: push it, then ask again */
	DS_WAIT,	/* reads under way: ask again */
	DS_DONE,	/* every block of every disk is out */
	DS_FAILED,	/* *why says why (the snapshot is aborted) */
};

enum disk_save_mode {
	DISK_SAVE_PLAIN,	/* the VM stays paused until the end */
	DISK_SAVE_LIVE,		/* it runs on: its writes to blocks not read yet held */
	DISK_SAVE_TRACKED,	/* it runs on: its writes mark blocks for a later round */
};

/** disk_save_begin() - PLAIN, LIVE: the VM is paused with its devices
 *  drained, and every block is read once. TRACKED: from now on a guest
 *  write marks its blocks; disk_save_round() starts each round. */
int disk_save_begin(struct vm *vm, enum disk_save_mode mode);
/** disk_save_round() - TRACKED: the next round reads every block (@first,
 *  zero ones left out) or those marked since the last round began (all
 *  sent); their number. */
uint64_t disk_save_round(bool first);
/** disk_save_bytes() - the bytes of the blocks staged since begin. */
uint64_t disk_save_bytes(void);
/** disk_save_holds() - LIVE: guest writes held until their block was read
 *  (a write held again when retried counts again). */
uint64_t disk_save_holds(void);
/** disk_save_dirty() - TRACKED: blocks marked since the round began. */
uint64_t disk_save_dirty(void);
/** disk_save_next() - read on; stage the next non-zero block on @tx. */
enum disk_save_step disk_save_next(struct section_tx *tx, const char **why);
/** disk_save_serve() - LIVE: read the blocks held writes wait for, now
 *  (while the memory goes out, or the stream is full), into the pool: a
 *  held write waits for its block's read, not for the stream. */
void disk_save_serve(void);
/** disk_save_end() - done or aborted: the held writes go, memory back. */
void disk_save_end(void);

/* The restore's side: each DISK section's block, checked, into the host
 * disk the VIRTIO section bound (snap_disk_load.c), or the one a migration's
 * DISK_LAYOUT bound. One block at a time: the loader reads nothing more
 * until it is written. */
struct disk_load {
	struct vm *vm;
	bool again;			/* a migration: a block may come in each round */
	unsigned int slot;		/* the section being read */
	uint64_t sectors[VM_MAX_DISKS];	/* capacity, once a disk's first block came */
	uint64_t *seen[VM_MAX_DISKS];	/* a bit a block: each comes at most once */
	uint64_t map_bytes[VM_MAX_DISKS];
	uint8_t *buf;			/* the block (SNAP_DISK_BLOCK_SECTORS sectors) */
	uint64_t sector;
	uint32_t count;
	bool pending, writing;		/* a block to hand to the disk; at the disk */
	bool flushing, wiping;		/* disk_load_flush(), disk_load_wipe() under way */
	struct vm_disk_req req;
	char err[96];
};

/** disk_load_section() - a DISK section of the disk in @slot begins: NULL,
 *  or why not (no disk there, no memory). */
const char *disk_load_section(struct disk_load *d, struct vm *vm, uint32_t slot);
/** disk_load_run() - its run header, @length the section's: NULL and *@dst,
 *  where its sectors go; or why not and *@offset, the field's. */
const char *disk_load_run(struct disk_load *d, const struct snap_disk_run *run,
			  uint64_t length, void **dst, uint32_t *offset);
/** disk_load_write() - the sectors are in, their CRC good: start the write. */
const char *disk_load_write(struct disk_load *d);
/** disk_load_busy() - a block is on its way to the disk (the caller waits);
 *  *@why: the disk refused it (else NULL). */
bool disk_load_busy(struct disk_load *d, const char **why);
/** disk_load_end() - the restore ended: wait for a write under way, free. */
void disk_load_end(struct disk_load *d);
/** disk_load_flush() - FLUSH every disk a block went to, one after the
 *  other (a migration's arrival, before the source lets its copy go): call
 *  until false. *@why: a disk refused it (else NULL). */
bool disk_load_flush(struct disk_load *d, const char **why);
/** disk_load_wipe() - a migration that failed: write zeroes over every
 *  block it wrote, so the host disk is again the zeroed one it was given
 *  (a next attempt leaves zero blocks out): call until false. */
bool disk_load_wipe(struct disk_load *d, const char **why);

/* A disk's identity (DISK_ID, snap_disk_id.c): its sampled blocks' CRCs. */
enum disk_id_step {
	DID_WAIT,	/* a read under way: poll again */
	DID_DONE,	/* every sample's CRC is in id */
	DID_FAILED,	/* *why says why */
};

struct disk_id_read {
	struct vm *vm;
	unsigned int slot;
	struct snap_disk_id id;		/* the samples of the disk's size; CRCs as read */
	uint32_t next;			/* the sample being read */
	bool reading;			/* req is at the disk */
	uint8_t *buf;			/* a block */
	struct vm_disk_req req;
	char err[96];
};

/** disk_id_layout() - @id for a disk of @sectors: its samples' blocks, CRCs 0. */
void disk_id_layout(uint64_t sectors, struct snap_disk_id *id);
/** disk_id_problem() - a DISK_ID payload's first problem for a disk of
 *  @capacity (*@offset: its field's payload offset), or NULL. */
const char *disk_id_problem(const struct snap_disk_id *id, uint64_t capacity, uint32_t *offset);
/** disk_id_begin() - read the samples of @vm's disk in @slot, as it is now. */
void disk_id_begin(struct disk_id_read *r, struct vm *vm, unsigned int slot);
/** disk_id_poll() - read on (one block a call at most); never waits. */
enum disk_id_step disk_id_poll(struct disk_id_read *r, const char **why);
/** disk_id_end() - give the buffer back: false (@wait false) if a read is
 *  still at the disk, which keeps it; @wait: wait for that read first. */
bool disk_id_end(struct disk_id_read *r, bool wait);
/** disk_id_take() - the saver's: @vm's disk @slot's identity into @id, read
 *  now (the VM is paused), waiting a bounded time; -HYP_E* and *@why. */
int disk_id_take(struct vm *vm, unsigned int slot, struct snap_disk_id *id, const char **why);
#endif
