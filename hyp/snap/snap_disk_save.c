/* SPDX-License-Identifier: MIT */
/* A VM's disks in its snapshot (docs/snapshot-format.md, "DISK") or its
 * copy-mode migration (docs/migration.md, "Disks"): every block of every
 * disk, read through the host disk (vm_io.h), each block that is not all
 * zero staged as one DISK section.
 *
 * Plain: the VM is paused throughout, so the disk is the one of the pause.
 * Live: the VM runs on, so a guest write to a block not read yet would put
 * the disk of a later instant into the stream. Such a write is held (the
 * guard, called by vm_io.c before every guest write) until the block has
 * been read: the blocks it waits for are read first (urgent), as a live
 * snapshot copies a RAM chunk before its first write. Reads are never held.
 * Such a write waits for one block read, not for the stream: blocks read
 * wait in a pool of up to POOL_BUFS buffers (allocated as they are first
 * needed, from at most a sixteenth of the free memory) until the stream
 * takes them. The scan reads ahead into the pool from the pause on, stream
 * stuck or not, SCAN_READING reads at a time, one only while a guest's own
 * request is at a host disk (a deeper queue holds the guests' requests up
 * behind it: make bench), and leaves URGENT_RESERVE buffers to the urgent
 * reads.
 * The guard and the saver (hart 0, snap_save_poll()) share the maps under
 * one lock.
 * Tracked (a migration): the VM runs on and nothing is held; every guest
 * write that completes marks its 4 KiB units dirty (the watch, called by
 * vm_io.c), and each later round reads the blocks with units marked since
 * the round before began and sends those units, zero or not (the
 * destination had them non-zero perhaps): a guest writing 4 KiB at random
 * costs the stream 4 KiB, not a 64 KiB block, and the stop-and-copy too.
 *
 * A block of zeroes is left out, but one is staged all the same when no
 * DISK section went for KEEPALIVE_MS: reading a big empty disk takes
 * seconds, and a stream that says nothing that long looks dead to its
 * client (carapace-ctl gives up after 30 s of silence). */
#include <string.h>
#include <errno.h>
#include <atomic.h>
#include <bitops.h>
#include <hart.h>
#include <log.h>
#include <mm.h>
#include <printf.h>
#include <sched.h>
#include <section_stream.h>
#include <vm.h>
#include <vm_io.h>
#include <disk_stream.h>

#define BLOCK		SNAP_DISK_BLOCK_SECTORS
#define BLOCK_BYTES	(SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR)
#define UNIT		(SNAP_DISK_UNIT_SECTORS)	/* sectors a dirty bit stands for */
#define UNITS		(BLOCK / UNIT)			/* a block's: 16 bits of a mask */
#define SCAN_BUFS	2	/* the scan: one read while the other block goes out */
#define POOL_BUFS	256	/* live: the urgent reads' too (16 MiB at most) */
#define URGENT_MAX	64	/* blocks held writes wait for */
#define URGENT_RESERVE	32	/* live: pool buffers the scan leaves to them */
#define SCAN_READING	4	/* the scan's reads at the host disk at once */
#define KEEPALIVE_MS	500	/* at most this long without a DISK section */

enum buf_state { BUF_FREE, BUF_READING, BUF_READY, BUF_SENDING };

struct disk_buf {
	enum buf_state state;
	bool scan;			/* the scan's, not a held write's */
	uint16_t units;			/* its units still to send (all: the whole block) */
	unsigned int disk;
	uint64_t block;
	uint32_t sectors;
	uint8_t *data;
	struct vm_disk_req req;
};

static struct {
	struct spinlock lock;		/* taken, urgent, buffer states: the guard's too */
	struct vm *vm;
	enum disk_save_mode mode;
	bool guarding, watching;
	bool elide_zero;		/* a block of zeroes is left out (see above) */
	unsigned int nr;		/* disks */
	uint64_t sectors[VM_MAX_DISKS], blocks[VM_MAX_DISKS];
	uint64_t *taken[VM_MAX_DISKS];	/* a bit a block whose read began (this round) */
	uint64_t *dirty[VM_MAX_DISKS];	/* tracked: a bit a unit written since the round began */
	uint16_t *units[VM_MAX_DISKS];	/* tracked: a block's units this round sends */
	uint64_t dirty_bytes[VM_MAX_DISKS], units_bytes[VM_MAX_DISKS];
	uint64_t *reading[VM_MAX_DISKS];	/* a bit a block whose read is at the disk */
	uint64_t map_bytes[VM_MAX_DISKS];
	unsigned int disk;		/* the scan: next block to look at */
	uint64_t next;
	struct { unsigned int disk; uint64_t block; } urgent[URGENT_MAX];
	unsigned int nr_urgent;
	struct disk_buf buf[POOL_BUFS];
	unsigned int nr_bufs;		/* usable: SCAN_BUFS, or the pool (live) */
	unsigned int scan_bufs;		/* the scan's, not free */
	unsigned int scan_max;		/* at most this many: the rest stay for held writes */
	uint64_t bytes;			/* of the blocks staged, since begin */
	uint64_t holds;			/* guest writes the guard held */
	uint64_t last_staged;		/* time_now() of the last DISK section, or of
					 * the first disk_save_next(); 0: not yet */
	char err[96];
} ds;

static bool test_bit(const uint64_t *map, uint64_t b)
{
	return map[b / 64] & (1ULL << (b % 64));
}

static void set_bit(uint64_t *map, uint64_t b)
{
	map[b / 64] |= 1ULL << (b % 64);
}

static void clear_bit(uint64_t *map, uint64_t b)
{
	map[b / 64] &= ~(1ULL << (b % 64));
}

/* vm_disk_guard_fn: a guest write may go once every block it touches has
 * been read; the first one missing is asked for first. */
static bool guard(unsigned int disk, uint64_t sector, uint64_t sectors)
{
	bool ok = true;

	spin_lock(&ds.lock);
	if (ds.guarding && disk < ds.nr && ds.blocks[disk] && sectors) {
		uint64_t last = MIN((sector + sectors - 1) / BLOCK, ds.blocks[disk] - 1);

		for (uint64_t b = sector / BLOCK; b <= last; b++) {
			if (test_bit(ds.taken[disk], b)) {
				ok = ok && !test_bit(ds.reading[disk], b);
				continue;
			}
			if (ok && ds.nr_urgent < URGENT_MAX)
				ds.urgent[ds.nr_urgent++] = (__typeof__(ds.urgent[0])){ disk, b };
			ok = false;
			break;
		}
	}
	ds.holds += !ok;
	spin_unlock(&ds.lock);
	if (!ok)
		sched_kick_host();	/* the saver reads the block at once */
	return ok;
}

/* vm_disk_written_fn: a guest write to @disk completed: its blocks go again.
 * Any hart; the maps live until disk_save_end() took the watch away. */
static void written(unsigned int disk, uint64_t sector, uint64_t sectors)
{
	if (disk >= ds.nr || !ds.dirty[disk] || !sectors)
		return;
	for (uint64_t u = sector / UNIT;
	     u <= (sector + sectors - 1) / UNIT && u < ds.blocks[disk] * UNITS; u++)
		__atomic_fetch_or(&ds.dirty[disk][u / 64], 1ULL << (u % 64), __ATOMIC_RELAXED);
}

static void free_maps(void)
{
	for (unsigned int i = 0; i < VM_MAX_DISKS; i++) {
		if (ds.taken[i])
			mm_free((hpa_t)(uintptr_t)ds.taken[i], ds.map_bytes[i]);
		if (ds.dirty[i])
			mm_free((hpa_t)(uintptr_t)ds.dirty[i], ds.dirty_bytes[i]);
		if (ds.units[i])
			mm_free((hpa_t)(uintptr_t)ds.units[i], ds.units_bytes[i]);
		ds.units[i] = NULL;
		if (ds.reading[i])
			mm_free((hpa_t)(uintptr_t)ds.reading[i], ds.map_bytes[i]);
		ds.taken[i] = ds.dirty[i] = ds.reading[i] = NULL;
	}
	for (unsigned int i = 0; i < POOL_BUFS; i++) {
		if (ds.buf[i].data)
			mm_free((hpa_t)(uintptr_t)ds.buf[i].data, BLOCK_BYTES);
		ds.buf[i].data = NULL;
	}
}

int disk_save_begin(struct vm *vm, enum disk_save_mode mode)
{
	struct spinlock lock = ds.lock;
	bool writable = false;

	memset(&ds, 0, sizeof(ds));
	ds.lock = lock;
	ds.vm = vm;
	ds.mode = mode;
	ds.elide_zero = true;
	for (unsigned int i = 0; i < VM_MAX_DISKS && vm_io_disk_sectors(vm, i); i++) {
		ds.nr++;
		/* a read-only disk is its image: nothing of it goes in */
		if (vm_io_disk_read_only(vm, i))
			continue;
		ds.sectors[i] = vm_io_disk_sectors(vm, i);
		ds.blocks[i] = (ds.sectors[i] + BLOCK - 1) / BLOCK;
		ds.map_bytes[i] = ALIGN_UP((ds.blocks[i] + 63) / 64 * 8, PAGE_SIZE);
		ds.taken[i] = (uint64_t *)(uintptr_t)mm_alloc(ds.map_bytes[i], PAGE_SIZE);
		ds.reading[i] = (uint64_t *)(uintptr_t)mm_alloc(ds.map_bytes[i], PAGE_SIZE);
		if (!ds.taken[i] || !ds.reading[i])
			goto no_memory;
		if (mode != DISK_SAVE_TRACKED)
			continue;
		ds.dirty_bytes[i] = ALIGN_UP(ds.blocks[i] * UNITS / 8, PAGE_SIZE);
		ds.units_bytes[i] = ALIGN_UP(ds.blocks[i] * sizeof(uint16_t), PAGE_SIZE);
		ds.dirty[i] = (uint64_t *)(uintptr_t)mm_alloc(ds.dirty_bytes[i], PAGE_SIZE);
		ds.units[i] = (uint16_t *)(uintptr_t)mm_alloc(ds.units_bytes[i], PAGE_SIZE);
		if (!ds.dirty[i] || !ds.units[i])
			goto no_memory;
	}
	for (unsigned int i = 0; i < ds.nr; i++)
		writable = writable || ds.blocks[i];
	for (unsigned int i = 0; i < SCAN_BUFS && writable; i++) {
		ds.buf[i].data = (uint8_t *)(uintptr_t)mm_alloc_raw(BLOCK_BYTES, PAGE_SIZE);
		if (!ds.buf[i].data)
			goto no_memory;
	}
	ds.nr_bufs = ds.scan_max = SCAN_BUFS;
	if (mode == DISK_SAVE_LIVE) {
		ds.nr_bufs = (unsigned int)MAX((uint64_t)SCAN_BUFS,
			MIN((uint64_t)POOL_BUFS, mm_free_bytes() / 16 / BLOCK_BYTES));
		/* the scan reads ahead into the pool: a block read before the
		 * guest writes it holds no write; URGENT_RESERVE stay free */
		ds.scan_max = MAX(SCAN_BUFS, ds.nr_bufs - MIN(ds.nr_bufs, URGENT_RESERVE));
	}
	if (mode == DISK_SAVE_LIVE && writable) {
		ds.guarding = true;	/* the VM is paused, its disks drained */
		vm_io_disk_guard(vm, guard);
	}
	if (mode == DISK_SAVE_TRACKED && writable) {
		ds.watching = true;	/* before round 1 reads a block */
		vm_io_disk_watch(vm, written);
	}
	return 0;
no_memory:
	free_maps();
	return -HYP_ENOMEM;
}

uint64_t disk_save_round(bool first)
{
	uint64_t n = 0;

	ds.disk = 0;
	ds.next = 0;
	ds.elide_zero = first;	/* the destination's new image is zero */
	for (unsigned int i = 0; i < ds.nr; i++) {
		for (uint64_t b = 0; b < ds.blocks[i]; b++) {
			uint64_t *word = &ds.dirty[i][b * UNITS / 64];
			unsigned int shift = b * UNITS % 64;
			uint16_t u;

			/* 4 blocks a word: take this block's 16 bits, leave the rest */
			u = (uint16_t)(__atomic_fetch_and(word, ~(0xffffULL << shift),
							  __ATOMIC_ACQ_REL) >> shift);
			if (first)
				u = 0xffff;
			else if (b == ds.blocks[i] - 1)	/* a short last block's own units */
				u &= (uint16_t)((1U << ((ds.sectors[i] - b * BLOCK + UNIT - 1) / UNIT)) - 1);
			ds.units[i][b] = u;
			if (u)
				clear_bit(ds.taken[i], b);
			else
				set_bit(ds.taken[i], b);
			n += !!u;
		}
	}
	return n;
}

uint64_t disk_save_bytes(void)
{
	return ds.bytes;
}

uint64_t disk_save_holds(void)
{
	return ds.holds;
}

uint64_t disk_save_dirty(void)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < ds.nr; i++)
		for (uint64_t w = 0; ds.dirty[i] && w < (ds.blocks[i] * UNITS + 63) / 64; w++)
			n += bit_count(__atomic_load_n(&ds.dirty[i][w], __ATOMIC_RELAXED));
	return n;
}

void disk_save_end(void)
{
	if (!ds.vm)
		return;
	if (ds.watching) {
		/* a completion that loaded the watch before may still be in
		 * written(): the maps go only after the reads below, and
		 * written() touches nothing but them */
		vm_io_disk_watch(ds.vm, NULL);
		ds.watching = false;
	}
	if (ds.guarding) {
		spin_lock(&ds.lock);
		ds.guarding = false;	/* a guard already called answers "go" */
		spin_unlock(&ds.lock);
		vm_io_disk_guard(ds.vm, NULL);
	}
	/* a read still at the host disk writes into its buffer: wait for it */
	for (unsigned int i = 0; i < ds.nr_bufs; i++)
		while (ds.buf[i].state == BUF_READING &&
		       !__atomic_load_n(&ds.buf[i].req.done, __ATOMIC_ACQUIRE))
			vm_io_disk_poll(ds.vm, ds.buf[i].disk);
	free_maps();
	ds.vm = NULL;
}

/* The next block to read, urgent ones first (only those when @urgent_only);
 * false when none is left. *@scan: it is the scan's. */
static bool pick(unsigned int *disk, uint64_t *block, bool urgent_only, bool *scan)
{
	*scan = false;
	while (ds.nr_urgent) {
		ds.nr_urgent--;
		*disk = ds.urgent[ds.nr_urgent].disk;
		*block = ds.urgent[ds.nr_urgent].block;
		if (!test_bit(ds.taken[*disk], *block))
			return true;
	}
	if (urgent_only)
		return false;
	*scan = true;
	for (; ds.disk < ds.nr; ds.disk++, ds.next = 0)
		for (; ds.next < ds.blocks[ds.disk]; ds.next++) {
			if (!(ds.next % 64) && ds.taken[ds.disk][ds.next / 64] == ~0ULL) {
				ds.next += 63;	/* a word of blocks read already */
				continue;
			}
			if (!test_bit(ds.taken[ds.disk], ds.next)) {
				*disk = ds.disk;
				*block = ds.next++;
				return true;
			}
		}
	return false;
}

/* Start reads into free buffers (the scan's too unless @urgent_only).
 * -HYP_E*: a disk refused one. */
static int start_reads(bool urgent_only_now)
{
	unsigned int scan_reading = 0;

	for (unsigned int i = 0; i < ds.nr_bufs; i++)
		scan_reading += ds.buf[i].state == BUF_READING && ds.buf[i].scan;
	for (unsigned int i = 0; i < ds.nr_bufs; i++) {
		struct disk_buf *b = &ds.buf[i];
		bool urgent_only = urgent_only_now || ds.scan_bufs >= ds.scan_max ||
				   scan_reading >= SCAN_READING ||
				   (scan_reading && vm_io_guest_disk_busy());
		int rc;

		if (b->state != BUF_FREE)
			continue;
		if (urgent_only && !ds.nr_urgent)
			return 0;	/* the scan has its buffers, no write waits */
		if (!b->data) {
			b->data = (uint8_t *)(uintptr_t)mm_alloc_raw(BLOCK_BYTES, PAGE_SIZE);
			if (!b->data) {
				/* the pool ends here (the buffers with data are a
				 * prefix); some of it stays the held writes' */
				ds.nr_bufs = i;
				ds.scan_max = MAX(SCAN_BUFS, i - MIN(i, URGENT_RESERVE));
				return 0;
			}
		}
		spin_lock(&ds.lock);
		if (!pick(&b->disk, &b->block, urgent_only, &b->scan)) {
			spin_unlock(&ds.lock);
			return 0;
		}
		/* taken and reading before the read starts: a guest write to
		 * the block waits from now on */
		set_bit(ds.taken[b->disk], b->block);
		set_bit(ds.reading[b->disk], b->block);
		b->state = BUF_READING;
		ds.scan_bufs += b->scan;
		scan_reading += b->scan;
		spin_unlock(&ds.lock);
		b->sectors = (uint32_t)MIN((uint64_t)BLOCK,
					   ds.sectors[b->disk] - b->block * BLOCK);
		b->units = ds.units[b->disk] ? ds.units[b->disk][b->block] : 0xffff;
		rc = vm_io_disk_submit(ds.vm, b->disk, &b->req, false, b->block * BLOCK,
				       b->sectors, b->data);
		if (rc) {
			spin_lock(&ds.lock);
			clear_bit(ds.taken[b->disk], b->block);
			clear_bit(ds.reading[b->disk], b->block);
			ds.scan_bufs -= b->scan;
			if (ds.nr_urgent < URGENT_MAX)	/* asked for again first */
				ds.urgent[ds.nr_urgent++] =
					(__typeof__(ds.urgent[0])){ b->disk, b->block };
			b->state = BUF_FREE;
			spin_unlock(&ds.lock);
			if (rc != -HYP_EBUSY)
				return rc;
			return 0;	/* the host ring is full: later */
		}
	}
	return 0;
}

/* The next run of @b's units as a DISK section (the whole block when all
 * are to go, as a snapshot's always are); SENDING once the last is staged. */
static void stage_units(struct section_tx *tx, struct disk_buf *b)
{
	unsigned int first = 0, end;
	uint32_t sectors;

	if (b->units == 0xffff) {
		end = UNITS;
	} else {
		while (!(b->units & (1U << first)))
			first++;
		for (end = first; end < UNITS && b->units & (1U << end); end++)
			;
	}
	b->units &= (uint16_t)~(((1U << end) - 1) & ~((1U << first) - 1));
	sectors = MIN(end * UNIT, b->sectors) - first * UNIT;
	if (!b->units)
		b->state = BUF_SENDING;
	ds.last_staged = time_now();
	ds.bytes += (uint64_t)sectors * SNAP_DISK_SECTOR;
	section_tx_disk(tx, b->disk, b->block * BLOCK + first * UNIT, sectors,
			b->data + first * UNIT * SNAP_DISK_SECTOR);
}

static void free_buf(struct disk_buf *b)
{
	ds.scan_bufs -= b->scan;
	b->scan = false;
	b->state = BUF_FREE;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i])
			return false;
	return true;
}

/* A read at the disk: true once its block is in (READY: a write held for it
 * goes now); false while it is under way, or when it failed (done set). */
static bool read_done(struct disk_buf *b)
{
	vm_io_disk_poll(ds.vm, b->disk);
	if (!__atomic_load_n(&b->req.done, __ATOMIC_ACQUIRE) || b->req.status != VIRTIO_BLK_S_OK)
		return false;
	spin_lock(&ds.lock);
	b->state = BUF_READY;
	clear_bit(ds.reading[b->disk], b->block);
	spin_unlock(&ds.lock);
	return true;
}

void disk_save_serve(void)
{
	if (!ds.guarding)
		return;
	bool ready = false;

	/* the urgent reads, and the scan's ahead into the pool from the pause
	 * on, whether the stream moves or not: every block read before the
	 * guest writes it is a write that is not held */
	if (start_reads(false))
		return;		/* disk_save_next() reports it when the disks' turn comes */
	for (unsigned int i = 0; i < ds.nr_bufs; i++)
		if (ds.buf[i].state == BUF_READING)
			ready |= read_done(&ds.buf[i]) && !ds.buf[i].scan;
	if (ready)
		vm_io_disk_kick(ds.vm);	/* the writes held for these blocks go now */
}

enum disk_save_step disk_save_next(struct section_tx *tx, const char **why)
{
	bool busy = false;

	if (!ds.last_staged)
		ds.last_staged = time_now();	/* the memory is out: the disks begin */
	/* the block staged last time is out (the caller pushed it) */
	for (unsigned int i = 0; i < ds.nr_bufs; i++)
		if (ds.buf[i].state == BUF_SENDING)
			free_buf(&ds.buf[i]);
	if (start_reads(false)) {
		snprintf(ds.err, sizeof(ds.err), "a disk refused the snapshot's read");
		*why = ds.err;
		return DS_FAILED;
	}
	for (unsigned int i = 0; i < ds.nr_bufs; i++) {
		struct disk_buf *b = &ds.buf[i];

		if (b->state == BUF_READING && !read_done(b)) {
			/* under way; or done just now, on the hart that drained
			 * the disk (a guest's request does): read_done() takes it
			 * next turn. Only a read done with an error fails. */
			if (!__atomic_load_n(&b->req.done, __ATOMIC_ACQUIRE) ||
			    b->req.status == VIRTIO_BLK_S_OK) {
				busy = true;
				continue;
			}
			snprintf(ds.err, sizeof(ds.err), "disk %u: read error at sector %lu",
				 b->disk, (unsigned long)(b->block * BLOCK));
			*why = ds.err;
			return DS_FAILED;
		}
		if (b->state != BUF_READY)
			continue;
		if (ds.elide_zero && all_zero(b->data, (size_t)b->sectors * SNAP_DISK_SECTOR) &&
		    time_now() - ds.last_staged < timebase_hz / 1000 * KEEPALIVE_MS) {
			free_buf(b);
			busy = true;	/* another read can start at once */
			continue;
		}
		stage_units(tx, b);
		return DS_STAGED;
	}
	if (busy || ds.nr_urgent || ds.disk < ds.nr)
		return DS_WAIT;
	for (unsigned int i = 0; i < ds.nr_bufs; i++)
		if (ds.buf[i].state != BUF_FREE)
			return DS_WAIT;
	return DS_DONE;
}
