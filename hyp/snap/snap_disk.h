/* SPDX-License-Identifier: MIT */
/* A VM's disks in its snapshot, for the saver (snap_save.c) and the loader
 * (snap_load.c): DISK sections (docs/snapshot-format.md, "DISK"). A disk is
 * the VM's virtio slot of the same number (disks come first). */
#ifndef HYP_SNAP_DISK_H
#define HYP_SNAP_DISK_H
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

/** disk_save_begin() - the VM is paused with its devices drained; @live: it
 *  runs on after this, its guest writes to blocks not saved yet held. */
int disk_save_begin(struct vm *vm, bool live);
/** disk_save_next() - read on; stage the next non-zero block on @tx. */
enum disk_save_step disk_save_next(struct section_tx *tx, const char **why);
/** disk_save_end() - done or aborted: the held writes go, memory back. */
void disk_save_end(void);

/* The restore's side: each DISK section's block, checked, into the host
 * disk the VIRTIO section bound (snap_disk_load.c). One block at a time:
 * the loader reads nothing more until it is written. */
struct disk_load {
	struct vm *vm;
	unsigned int slot;		/* the section being read */
	uint64_t sectors[VM_MAX_DISKS];	/* capacity, once a disk's first block came */
	uint64_t *seen[VM_MAX_DISKS];	/* a bit a block: each comes at most once */
	uint64_t map_bytes[VM_MAX_DISKS];
	uint8_t *buf;			/* the block (SNAP_DISK_BLOCK_SECTORS sectors) */
	uint64_t sector;
	uint32_t count;
	bool pending, writing;		/* a block to hand to the disk; at the disk */
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
#endif
