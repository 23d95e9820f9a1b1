/* SPDX-License-Identifier: MIT */
/* The host around the engines that stream a VM out (hyp/snap/snap_save.c,
 * hyp/migrate/mig_send.c), played in host memory for their unit tests
 * (tests/unit/fake_snap_host.c): a clock that ticks on every read, an
 * allocator that can be rationed, a scheduler with every vCPU off its hart,
 * the VM state the stream carries besides memory (contents that do not
 * matter), the stream port (bytes out into a buffer up to a limit, bytes in
 * from a buffer the test fills), and the VM's host disks: disk 0 in memory,
 * any disk read-only by its bit, a request done at the next poll, FLUSHes
 * logged against the port's bytes. One VM, vms[0] (tvm), of 16 MiB. */
#ifndef FAKE_SNAP_HOST_H
#define FAKE_SNAP_HOST_H
#include <stdbool.h>
#include <stdint.h>
#include <vm.h>
#include <vm_io.h>

#define RAM_SIZE	(8 * SZ_2M)
#define GPA(c, off)	(VM_GUEST_RAM_BASE + (uint64_t)(c) * SZ_2M + (off))
#define STREAM_MAX	(RAM_SIZE + SZ_2M)

#define DISK_SECTORS	(32 * SNAP_DISK_BLOCK_SECTORS + 64)	/* the last block half */
#define BLOCK_BYTES	(SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR)

extern struct vm vms[VM_MAX];
#define tvm (vms[0])	/* the VM being streamed */

/* the allocator: mm_alloc_raw()s left (< 0: no limit); mm_free_bytes() */
extern int alloc_budget;
extern uint64_t free_bytes;
/* virtio devices the VM has (a VIRTIO section each) */
extern unsigned int vio_devices;

/* the stream port: what went out (up to stream_limit bytes), what comes in */
extern uint8_t *stream;
extern size_t stream_len, stream_limit;
extern bool client_there;
void port_in_put(const void *bytes, size_t len);

/* the disks: nr_disks of DISK_SECTORS each; disk 0's content */
extern uint8_t disk[DISK_SECTORS * SNAP_DISK_SECTOR];
extern unsigned int nr_disks;
extern unsigned int disk_ro_mask;	/* bit d: the guest cannot write disk d */
/* time_now(): one tick more at each call. While clock_manual, clock_now
 * one tick more at each call, and with port_bps set the port takes that
 * many bytes a second of it from port_since on, after port_from. */
extern bool clock_manual;
extern uint64_t clock_now, port_bps, port_since;
extern size_t port_from;
extern unsigned int guest_disk_busy;	/* vm_io_guest_disk_busy() */
extern unsigned int most_queued;	/* the most disk reads queued at once */
extern unsigned int nr_queued;
extern uint64_t disk_bad_sector;	/* a read there fails */
extern uint8_t disk_flush_status;	/* what a FLUSH answers */
extern unsigned int host_kicks;		/* sched_kick_host() calls */
extern vm_disk_guard_fn guard_fn;	/* what the engine set: the test plays the guest */
extern vm_disk_written_fn watch_fn;
struct disk_flush_log {
	unsigned int disk;
	size_t stream_at_submit, stream_at_done;	/* stream_len then */
	enum vm_state vm_state;		/* the VM's at the submit */
};
extern struct disk_flush_log flushes[8];
extern unsigned int nr_flushes;

/** fill_block() - block @b of disk 0 all @byte (0: zero). */
void fill_block(unsigned int b, uint8_t byte);
/** fill_chunk() - RAM chunk @c all @byte. */
void fill_chunk(unsigned int c, uint8_t byte);
/** vm_new() - a paused VM whose chunks 0..@chunks-1 hold 0x10 + chunk (boot
 *  1's data); every fake as new: an empty port, no disk. */
void vm_new(unsigned int chunks);
void vm_free(void);
#endif
