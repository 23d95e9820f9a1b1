/* SPDX-License-Identifier: MIT */
/* hyp/snap/snap_save.c, the live snapshot's lifecycle, over the real guest
 * memory code (guest_mem.c, dirty_log.c, gstage.c) and the real VM state
 * machine (vm_state.c); the host around them is tests/unit/fake_snap_host.c:
 * the stream port a buffer the test lets fill at its pace, the scheduler a
 * stub with every vCPU off its hart.
 *
 * - Out of memory for a copy, the snapshot pauses the VM: it must run again
 *   when the stream ends, whether the stream completed or broke off.
 * - A reboot during a live snapshot must end it with an error, never with a
 *   stream that mixes two boots: here the reboot's unmapping and reloading
 *   happen between two polls, as on another hart, before the boot count
 *   changes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arch/riscv/encoding.h>
#include <crc32c.h>
#include <errno.h>
#include <gstage.h>
#include <guest_mem.h>
#include <hart.h>
#include <mm.h>
#include <sbi_client.h>
#include <sched.h>
#include <steal_time.h>
#include <snapshot.h>
#include <tlb.h>
#include <vm.h>
#include <vm_io.h>
#include "fake_snap_host.h"
#include "test.h"

/* The DISK runs of the stream, each checked against the rules of
 * docs/snapshot-format.md; @bytes[b]: the first byte of block b's run (0:
 * none), *@uniform false if a run is not one byte all through. */
static unsigned int disk_runs(uint8_t bytes[33], bool *uniform)
{
	size_t off = sizeof(struct snap_header);
	unsigned int n = 0;

	memset(bytes, 0, 33);
	*uniform = true;
	while (off + sizeof(struct snap_section) <= stream_len) {
		struct snap_section s;
		struct snap_disk_run run;

		memcpy(&s, stream + off, sizeof(s));
		off += sizeof(s);
		if (s.type == SNAP_SEC_DISK) {
			uint64_t b;

			memcpy(&run, stream + off, sizeof(run));
			b = run.sector / SNAP_DISK_BLOCK_SECTORS;
			EXPECT_EQ(s.instance, 0);
			EXPECT_EQ(run.sector % SNAP_DISK_BLOCK_SECTORS, 0);
			EXPECT_EQ(run.sectors, MIN((uint64_t)SNAP_DISK_BLOCK_SECTORS,
						   DISK_SECTORS - run.sector));
			EXPECT_EQ(s.length, sizeof(run) + run.sectors * SNAP_DISK_SECTOR);
			EXPECT_EQ(crc32c(stream + off, s.length), s.crc32c);
			EXPECT_TRUE(b < 33 && !bytes[b]);	/* each block once */
			if (b < 33)
				bytes[b] = stream[off + sizeof(run)];
			for (uint64_t i = 0; i < run.sectors * SNAP_DISK_SECTOR; i++)
				if (stream[off + sizeof(run) + i] != bytes[b < 33 ? b : 0])
					*uniform = false;
			n++;
		}
		off += s.length;
	}
	return n;
}

/* ---- the VM ---- */

static struct snap_result result;
static bool ended;
static char result_err[256];

static void done(const struct snap_result *r)
{
	result = *r;
	ended = true;
	if (r->err)
		snprintf(result_err, sizeof(result_err), "%s", r->err);
	result.err = r->err ? result_err : NULL;
}

/* Start a live snapshot as the management channel does: the VM paused,
 * its state staged, then it runs on. */
static void live_snapshot(void)
{
	EXPECT_EQ(snap_save_start(&tvm, true, false, done), 0);
	EXPECT_EQ(vm_resume(&tvm), 0);
	EXPECT_EQ(tvm.state, VM_RUNNING);
}

/* Poll until the snapshot ended (the port takes everything from now on). */
static void poll_to_the_end(void)
{
	stream_limit = STREAM_MAX;
	for (unsigned int i = 0; i < 1000 && !ended; i++)
		snap_save_poll();
	EXPECT_TRUE(ended);
}

/* Every MEMORY page in the stream holds boot 1's byte for its chunk; the
 * number of pages checked. */
static uint64_t check_memory_is_boot_1(void)
{
	size_t off = sizeof(struct snap_header);
	uint64_t pages = 0;

	while (off + sizeof(struct snap_section) <= stream_len) {
		struct snap_section s;

		memcpy(&s, stream + off, sizeof(s));
		off += sizeof(s);
		if (s.type == SNAP_SEC_MEMORY && off + sizeof(struct snap_mem_run) <= stream_len) {
			struct snap_mem_run run;

			memcpy(&run, stream + off, sizeof(run));
			for (uint64_t p = 0; p < run.pages; p++) {
				size_t at = off + sizeof(run) + p * SNAP_PAGE_SIZE;
				uint64_t c = (run.gpa + p * SNAP_PAGE_SIZE - VM_GUEST_RAM_BASE) / SZ_2M;

				if (at + SNAP_PAGE_SIZE > stream_len)
					break;
				for (unsigned int b = 0; b < SNAP_PAGE_SIZE; b++)
					if (stream[at + b] != 0x10 + c) {
						EXPECT_EQ(stream[at + b], 0x10 + c);
						return pages;
					}
				pages++;
			}
		}
		off += s.length;
	}
	return pages;
}

/* ---- out of memory for a copy ---- */

TEST(snap_save_pause_for_memory_ends_with_the_stream)
{
	vm_new(6);
	live_snapshot();
	/* no memory for any copy from now on; the client reads nothing yet */
	alloc_budget = 0;
	snap_save_poll();
	/* the guest writes chunk 4, not sent yet: its copy cannot be made */
	EXPECT_TRUE(vm_ram_resolve_write(&tvm, GPA(4, 64)));
	EXPECT_TRUE(tvm.state == VM_PAUSING || tvm.state == VM_PAUSED);
	snap_save_poll();
	EXPECT_EQ(tvm.state, VM_PAUSED);	/* its vCPUs are off their harts */
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	EXPECT_NE(result.ticks, 0);		/* the pause is reported */
	/* the snapshot holds RAM as it was; the VM runs again */
	EXPECT_EQ(check_memory_is_boot_1(), 6 * 512);
	EXPECT_EQ(tvm.state, VM_RUNNING);
	/* and its write goes through now: no snapshot protects RAM any more */
	EXPECT_TRUE(!vm_ram_resolve_write(&tvm, GPA(4, 64)));
	vm_free();
}

TEST(snap_save_pause_for_memory_ends_when_the_client_leaves)
{
	vm_new(6);
	live_snapshot();
	alloc_budget = 0;
	snap_save_poll();
	EXPECT_TRUE(vm_ram_resolve_write(&tvm, GPA(2, 0)));
	snap_save_poll();
	client_there = false;
	snap_save_poll();
	EXPECT_TRUE(ended);
	EXPECT_TRUE(result.err != NULL);
	EXPECT_EQ(tvm.state, VM_RUNNING);
	vm_free();
}

TEST(snap_save_pause_for_memory_leaves_an_operator_pause_alone)
{
	vm_new(6);
	live_snapshot();
	alloc_budget = 0;
	snap_save_poll();
	/* its operator paused it first; then a write needs a copy */
	EXPECT_EQ(vm_request_pause(&tvm), 0);
	EXPECT_TRUE(vm_ram_resolve_write(&tvm, GPA(3, 0)));
	EXPECT_TRUE(vm_pause_settle(&tvm));
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	EXPECT_EQ(result.ticks, 0);
	EXPECT_EQ(tvm.state, VM_PAUSED);	/* still the operator's pause */
	vm_free();
}

/* ---- a reboot during a live snapshot ---- */

/* What a reboot does to RAM on another hart before it counts the boot:
 * unmap everything, then load the images again (boot 2's bytes). */
static void reboot_reloads_ram(void)
{
	vm_ram_discard(&tvm);
	fill_chunk(1, 0xee);
	fill_chunk(2, 0xee);
	fill_chunk(3, 0xee);
}

TEST(snap_save_reboot_discarding_ram_aborts_the_live_snapshot)
{
	vm_new(4);
	live_snapshot();
	/* the client takes the state and some of chunk 0, then waits */
	stream_limit = 64 * 1024;
	snap_save_poll();
	EXPECT_TRUE(!ended);
	reboot_reloads_ram();	/* the boot count has not changed yet */
	poll_to_the_end();
	EXPECT_TRUE(result.err != NULL);
	/* nothing of boot 2 went out */
	check_memory_is_boot_1();
	/* the snapshot let go of the VM: writes go through */
	EXPECT_TRUE(tvm.cow == NULL);
	EXPECT_TRUE(!vm_ram_resolve_write(&tvm, GPA(2, 0)));
	vm_free();
}

TEST(snap_save_reboot_asked_for_aborts_the_live_snapshot)
{
	vm_new(4);
	live_snapshot();
	stream_limit = 64 * 1024;
	snap_save_poll();
	/* SRST reboot: the VM is REBOOTING until a hart resets it */
	vm_shutdown(&tvm, true, false);
	EXPECT_EQ(tvm.state, VM_REBOOTING);
	poll_to_the_end();
	EXPECT_TRUE(result.err != NULL);
	EXPECT_TRUE(tvm.cow == NULL);
	vm_free();
}

TEST(snap_save_live_snapshot_without_trouble_is_whole)
{
	vm_new(4);
	live_snapshot();
	stream_limit = 64 * 1024;
	snap_save_poll();
	/* the guest writes every chunk while the stream goes: copies are kept */
	for (unsigned int c = 0; c < 4; c++)
		EXPECT_TRUE(vm_ram_resolve_write(&tvm, GPA(c, 0)));
	memset((void *)(uintptr_t)(tvm.ram_hpa + 3 * SZ_2M), 0xee, SZ_2M);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	EXPECT_EQ(result.ticks, 0);
	EXPECT_EQ(check_memory_is_boot_1(), 4 * 512);
	EXPECT_EQ(tvm.state, VM_RUNNING);
	vm_free();
}

/* ---- the disks' content (snap_disk_save.c) ---- */

TEST(snap_save_plain_snapshot_holds_every_nonzero_block_of_the_disk)
{
	uint8_t bytes[33];
	bool uniform;

	vm_new(1);
	nr_disks = 1;
	fill_block(0, 0xa0);
	fill_block(7, 0xa7);
	fill_block(32, 0xb2);		/* the disk's last, half block */
	EXPECT_EQ(snap_save_start(&tvm, false, true, done), 0);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	EXPECT_EQ(result.disk_runs, 3);
	EXPECT_EQ(disk_runs(bytes, &uniform), 3);	/* zero blocks are left out */
	EXPECT_TRUE(uniform);
	EXPECT_EQ(bytes[0], 0xa0);
	EXPECT_EQ(bytes[7], 0xa7);
	EXPECT_EQ(bytes[32], 0xb2);
	EXPECT_TRUE(((const struct snap_header *)stream)->flags & SNAP_F_DISKS);
	EXPECT_TRUE(guard_fn == NULL);		/* a plain snapshot holds no write */
	vm_free();
}

TEST(snap_save_without_disks_leaves_them_out)
{
	uint8_t bytes[33];
	bool uniform;

	vm_new(1);
	nr_disks = 1;
	fill_block(3, 0x33);
	EXPECT_EQ(snap_save_start(&tvm, false, false, done), 0);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	EXPECT_EQ(disk_runs(bytes, &uniform), 0);
	EXPECT_FALSE(((const struct snap_header *)stream)->flags & SNAP_F_DISKS);
	vm_free();
}

/* A live snapshot of a VM whose one disk has block b all 0x40 + b. */
static void live_snapshot_of_a_patterned_disk(void)
{
	vm_new(1);
	nr_disks = 1;
	for (unsigned int b = 0; b < 33; b++)
		fill_block(b, (uint8_t)(0x40 + b));
	EXPECT_EQ(snap_save_start(&tvm, true, true, done), 0);
}

/* A guest write during a live snapshot to a block not saved yet waits until
 * that block has been read (it is read first); the stream holds the block
 * as it was at the pause. Once the snapshot is over, nothing is held. */
TEST(snap_save_live_snapshot_holds_a_write_until_its_block_is_saved)
{
	uint8_t bytes[33];
	bool uniform;

	live_snapshot_of_a_patterned_disk();
	EXPECT_TRUE(guard_fn != NULL);
	EXPECT_EQ(vm_resume(&tvm), 0);
	/* the guest writes blocks 30 and 31 (a write across two blocks) */
	EXPECT_FALSE(guard_fn(0, 30 * SNAP_DISK_BLOCK_SECTORS + 64, SNAP_DISK_BLOCK_SECTORS));
	/* the memory goes first; the held write's blocks before the others */
	stream_limit = stream_len + SZ_2M + SZ_64K;
	for (unsigned int i = 0; i < 200 && !guard_fn(0, 30 * SNAP_DISK_BLOCK_SECTORS + 64,
						     SNAP_DISK_BLOCK_SECTORS); i++) {
		stream_limit += SZ_64K;
		snap_save_poll();
	}
	EXPECT_TRUE(guard_fn(0, 30 * SNAP_DISK_BLOCK_SECTORS + 64, SNAP_DISK_BLOCK_SECTORS));
	EXPECT_FALSE(ended);			/* the rest of the disk is still to come */
	fill_block(30, 0xee);			/* the write goes */
	fill_block(31, 0xee);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	EXPECT_EQ(disk_runs(bytes, &uniform), 33);
	EXPECT_TRUE(uniform);
	for (unsigned int b = 0; b < 33; b++)
		EXPECT_EQ(bytes[b], 0x40 + b);	/* every block as at the pause */
	EXPECT_TRUE(guard_fn == NULL);		/* nothing is held any more */
	vm_free();
}

/* A held write waits for its block's read, never for the stream: with the
 * stream stuck and the scan's buffers full of blocks waiting for it, the
 * block is read into a buffer of the pool and the write goes. Without a
 * pool (no memory for one) it waits for the stream, and still goes once the
 * stream moves. Either way the stream holds the block as at the pause. */
static void held_write_and_a_stuck_stream(uint64_t free, bool goes_while_stuck)
{
	uint8_t bytes[33];
	unsigned int kicks;
	size_t stuck;
	bool uniform;

	free_bytes = free;
	live_snapshot_of_a_patterned_disk();
	EXPECT_EQ(vm_resume(&tvm), 0);
	/* the memory and one block out, then the stream stops */
	stream_limit = stream_len + SZ_2M + SZ_64K + 4096;
	for (unsigned int i = 0; i < 50; i++)
		snap_save_poll();
	stuck = stream_len;
	kicks = host_kicks;
	EXPECT_FALSE(guard_fn(0, 20 * SNAP_DISK_BLOCK_SECTORS, 8));
	EXPECT_EQ(host_kicks, kicks + 1);	/* hart 0 wakes to read the block */
	for (unsigned int i = 0; i < 20; i++)
		/* waiting for the port: hart 0 may sleep (host_poll()) */
		EXPECT_FALSE(snap_save_poll());
	EXPECT_EQ(stream_len, stuck);		/* nothing moved meanwhile */
	EXPECT_EQ(guard_fn(0, 20 * SNAP_DISK_BLOCK_SECTORS, 8), goes_while_stuck);
	if (!goes_while_stuck) {
		stream_limit += 4 * SZ_64K;
		for (unsigned int i = 0; i < 20 && !guard_fn(0, 20 * SNAP_DISK_BLOCK_SECTORS, 8); i++)
			snap_save_poll();
		EXPECT_TRUE(guard_fn(0, 20 * SNAP_DISK_BLOCK_SECTORS, 8));
	}
	fill_block(20, 0xee);			/* the write goes */
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	EXPECT_TRUE(result.disk_holds >= 1);	/* the reply's disk_holds */
	EXPECT_EQ(disk_runs(bytes, &uniform), 33);
	EXPECT_TRUE(uniform);
	EXPECT_EQ(bytes[20], 0x40 + 20);	/* as at the pause */
	vm_free();
	free_bytes = 1ULL << 30;
}

/* a pool of 34 buffers: the scan keeps to 2, 32 are the held writes' */
#define SMALL_POOL	(34ULL * 16 * SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR)

TEST(snap_save_live_held_write_waits_for_its_read_not_the_stream)
{
	held_write_and_a_stuck_stream(SMALL_POOL, true);
}

/* With a big pool the scan reads ahead into it, the stream stuck or not: a
 * write to a block it read already is never held, and the stream still
 * holds the block as at the pause. */
TEST(snap_save_live_scan_reads_ahead_into_the_pool)
{
	uint8_t bytes[33];
	bool uniform;

	live_snapshot_of_a_patterned_disk();
	EXPECT_EQ(vm_resume(&tvm), 0);
	stream_limit = stream_len + SZ_2M + SZ_64K + 4096;	/* then stuck */
	for (unsigned int i = 0; i < 50; i++)
		snap_save_poll();
	EXPECT_TRUE(guard_fn(0, 30 * SNAP_DISK_BLOCK_SECTORS, 8));	/* read ahead */
	fill_block(30, 0xee);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	EXPECT_EQ(disk_runs(bytes, &uniform), 33);
	EXPECT_TRUE(uniform);
	EXPECT_EQ(bytes[30], 0x40 + 30);	/* as at the pause */
	vm_free();
}

/* The guests' own requests go first: while one of theirs is at the host
 * disk the scan keeps one read there, not SCAN_READING (make bench: a live
 * snapshot's reads held a writer's requests up behind them). */
static unsigned int scan_reads_at_once(unsigned int busy)
{
	unsigned int most;

	live_snapshot_of_a_patterned_disk();
	EXPECT_EQ(vm_resume(&tvm), 0);
	guest_disk_busy = busy;
	most_queued = 0;
	stream_limit = stream_len + SZ_2M + SZ_64K + 4096;	/* then stuck: it reads ahead */
	for (unsigned int i = 0; i < 50; i++)
		snap_save_poll();
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	most = most_queued;
	guest_disk_busy = 0;
	vm_free();
	return most;
}

TEST(snap_save_live_scan_yields_to_the_guests_requests)
{
	EXPECT_EQ(scan_reads_at_once(1), 1);
	EXPECT_TRUE(scan_reads_at_once(0) > 1);
}

TEST(snap_save_live_held_write_without_a_pool_waits_for_the_stream)
{
	held_write_and_a_stuck_stream(0, false);
}

TEST(snap_save_live_snapshot_that_breaks_off_holds_no_write)
{
	vm_new(1);
	nr_disks = 1;
	fill_block(5, 0x55);
	EXPECT_EQ(snap_save_start(&tvm, true, true, done), 0);
	EXPECT_EQ(vm_resume(&tvm), 0);
	EXPECT_FALSE(guard_fn(0, 5 * SNAP_DISK_BLOCK_SECTORS, 8));
	client_there = false;
	snap_save_poll();
	EXPECT_TRUE(ended && result.err != NULL);
	EXPECT_TRUE(guard_fn == NULL);
	vm_free();
}

TEST(snap_save_leaves_a_read_only_disk_to_its_image)
{
	uint8_t bytes[33];
	bool uniform;

	vm_new(1);
	nr_disks = 1;
	disk_ro_mask = 1;
	fill_block(3, 0x33);
	EXPECT_EQ(snap_save_start(&tvm, true, true, done), 0);
	EXPECT_TRUE(guard_fn == NULL);	/* nothing to hold: the guest cannot write it */
	EXPECT_EQ(vm_resume(&tvm), 0);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	EXPECT_EQ(disk_runs(bytes, &uniform), 0);
	vm_free();
}

/* ---- without the disks: their identity (DISK_ID, snap_disk_id.c) ---- */

/* The stream's DISK_ID of slot 0, checked against the disk as the test
 * filled it (docs/snapshot-format.md, "DISK_ID"): 16 samples of its 33
 * blocks, i * 32 / 15, each the CRC32C of its sectors (the last block
 * half); right after the VIRTIO sections, before MEMORY. */
static void check_disk_id(const uint8_t *at_pause)
{
	size_t off = sizeof(struct snap_header);
	int ids = 0, memory_before = 0, vio_after = 0;
	bool memory = false, id_seen = false;

	while (off + sizeof(struct snap_section) <= stream_len) {
		struct snap_section s;
		struct snap_disk_id id;

		memcpy(&s, stream + off, sizeof(s));
		off += sizeof(s);
		if (s.type == SNAP_SEC_MEMORY)
			memory = true;
		if (s.type == SNAP_SEC_VIRTIO && id_seen)
			vio_after++;
		if (s.type == SNAP_SEC_DISK_ID) {
			id_seen = true;
			ids++;
			memory_before += memory;
			EXPECT_EQ(s.instance, 0);
			EXPECT_EQ(s.length, sizeof(id));
			EXPECT_EQ(crc32c(stream + off, s.length), s.crc32c);
			memcpy(&id, stream + off, sizeof(id));
			EXPECT_EQ(id.sectors, DISK_SECTORS);
			EXPECT_EQ(id.samples, 16);
			EXPECT_EQ(id.reserved, 0);
			for (unsigned int i = 0; i < 16; i++) {
				uint64_t b = i * 32 / 15;
				size_t len = MIN((uint64_t)BLOCK_BYTES,
						 sizeof(disk) - b * BLOCK_BYTES);

				EXPECT_EQ(id.sample[i].block, b);
				EXPECT_EQ(id.sample[i].crc32c, crc32c(at_pause + b * BLOCK_BYTES, len));
				EXPECT_EQ(id.sample[i].reserved, 0);
			}
		}
		off += s.length;
	}
	EXPECT_EQ(ids, 1);
	EXPECT_EQ(memory_before, 0);
	EXPECT_EQ(vio_after, 0);
}

static uint8_t disk_at_pause[sizeof(disk)];

TEST(snap_save_without_disks_names_their_identity)
{
	vm_new(1);
	nr_disks = 1;
	vio_devices = 2;	/* the disk and a NIC: both VIRTIO sections come first */
	for (unsigned int b = 0; b < 33; b++)
		fill_block(b, (uint8_t)(0x40 + b));
	memcpy(disk_at_pause, disk, sizeof(disk));
	EXPECT_EQ(snap_save_start(&tvm, false, false, done), 0);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	check_disk_id(disk_at_pause);
	/* with the disks' content, none */
	vm_free();
	vm_new(1);
	nr_disks = 1;
	EXPECT_EQ(snap_save_start(&tvm, false, true, done), 0);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	{
		size_t off = sizeof(struct snap_header);

		while (off + sizeof(struct snap_section) <= stream_len) {
			struct snap_section s;

			memcpy(&s, stream + off, sizeof(s));
			EXPECT_NE(s.type, SNAP_SEC_DISK_ID);
			off += sizeof(s) + s.length;
		}
	}
	vio_devices = 0;
	vm_free();
}

/* Live: the samples are read at the pause, before the VM runs on; what the
 * guest writes afterwards is not in them. */
TEST(snap_save_live_without_disks_reads_their_identity_at_the_pause)
{
	vm_new(1);
	nr_disks = 1;
	for (unsigned int b = 0; b < 33; b++)
		fill_block(b, (uint8_t)(0x80 + b));
	memcpy(disk_at_pause, disk, sizeof(disk));
	live_snapshot();
	EXPECT_TRUE(guard_fn == NULL);		/* nothing is held: the content is not saved */
	fill_block(0, 0xee);			/* the guest writes sampled blocks */
	fill_block(32, 0xee);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	check_disk_id(disk_at_pause);
	vm_free();
}

/* A disk that cannot be read fails the snapshot at its start, saying why. */
TEST(snap_save_without_disks_fails_when_a_sample_cannot_be_read)
{
	vm_new(1);
	nr_disks = 1;
	disk_bad_sector = 32 * SNAP_DISK_BLOCK_SECTORS;	/* the last sample */
	EXPECT_NE(snap_save_start(&tvm, true, false, done), 0);
	EXPECT_TRUE(snap_save_start_error() != NULL &&
		    strstr(snap_save_start_error(), "read error in block 32"));
	EXPECT_FALSE(snap_saving(&tvm));
	EXPECT_TRUE(tvm.cow == NULL);		/* nothing of a live snapshot began */
	/* and the next one goes */
	disk_bad_sector = ~0ULL;
	EXPECT_EQ(snap_save_start(&tvm, false, false, done), 0);
	EXPECT_TRUE(snap_save_start_error() == NULL);
	poll_to_the_end();
	EXPECT_TRUE(result.err == NULL);
	vm_free();
}
