/* SPDX-License-Identifier: MIT */
/* A disk's identity in a snapshot without its content (docs/snapshot-format.md,
 * "DISK_ID"): the CRC32C of a few of its blocks, the first, the last and
 * evenly spaced ones between. The saver reads them at the pause (snap_save.c),
 * the restore reads the same blocks of the host disk it bound and compares
 * (snap_load.c). Cheap on purpose: it tells another image, or one changed
 * in a sampled block, from the saved one; not every change.
 *
 * Both read through the host disk (vm_io.h), one block at a time, into a
 * buffer of ours; the reader is polled and never waits itself. */
#include <string.h>
#include <crc32c.h>
#include <errno.h>
#include <hart.h>
#include <log.h>
#include <mm.h>
#include <printf.h>
#include <vm.h>
#include <vm_io.h>
#include <disk_stream.h>

#define BLOCK		SNAP_DISK_BLOCK_SECTORS
#define BLOCK_BYTES	(SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR)
#define TAKE_WAIT_MS	5000	/* the saver's bound on its reads, at the pause */

static uint64_t blocks_of(uint64_t sectors)
{
	return (sectors + BLOCK - 1) / BLOCK;
}

void disk_id_layout(uint64_t sectors, struct snap_disk_id *id)
{
	uint64_t blocks = blocks_of(sectors);

	memset(id, 0, sizeof(*id));
	id->sectors = sectors;
	id->samples = (uint32_t)MIN(blocks, (uint64_t)SNAP_DISK_ID_SAMPLES);
	/* blocks >= samples, so the step is at least 1: no block twice */
	for (uint32_t i = 1; i < id->samples; i++)
		id->sample[i].block = i * (blocks - 1) / (id->samples - 1);
}

const char *disk_id_problem(const struct snap_disk_id *id, uint64_t capacity, uint32_t *offset)
{
	struct snap_disk_id want;

	*offset = offsetof(struct snap_disk_id, reserved);
	if (id->reserved)
		return "reserved field is not 0";
	*offset = offsetof(struct snap_disk_id, sectors);
	if (id->sectors != capacity)
		return "sectors is not the disk's capacity (its VIRTIO section's)";
	disk_id_layout(capacity, &want);
	*offset = offsetof(struct snap_disk_id, samples);
	if (id->samples != want.samples)
		return "samples is not min(16, the disk's blocks)";
	for (uint32_t i = 0; i < SNAP_DISK_ID_SAMPLES; i++) {
		const struct snap_disk_id_sample *s = &id->sample[i];
		uint32_t at = (uint32_t)offsetof(struct snap_disk_id, sample) + i * sizeof(*s);

		*offset = at + (uint32_t)offsetof(struct snap_disk_id_sample, block);
		if (i >= id->samples && (s->block || s->crc32c || s->reserved))
			return "a sample after the last is not all zero";
		if (i < id->samples && s->block != want.sample[i].block)
			return "block is not the sample's (the first, the last and evenly spaced "
			       "ones between)";
		*offset = at + (uint32_t)offsetof(struct snap_disk_id_sample, reserved);
		if (s->reserved)
			return "reserved field is not 0";
	}
	return NULL;
}

void disk_id_begin(struct disk_id_read *r, struct vm *vm, unsigned int slot)
{
	memset(r, 0, sizeof(*r));
	r->vm = vm;
	r->slot = slot;
	disk_id_layout(vm_io_disk_sectors(vm, slot), &r->id);
}

enum disk_id_step disk_id_poll(struct disk_id_read *r, const char **why)
{
	struct snap_disk_id_sample *s;
	uint32_t sectors;
	int rc;

	*why = NULL;
	if (r->next == r->id.samples)
		return DID_DONE;
	if (!r->buf) {
		r->buf = (uint8_t *)(uintptr_t)mm_alloc_raw(BLOCK_BYTES, PAGE_SIZE);
		if (!r->buf) {
			*why = "no memory for a disk block";
			return DID_FAILED;
		}
	}
	s = &r->id.sample[r->next];
	sectors = (uint32_t)MIN((uint64_t)BLOCK, r->id.sectors - s->block * BLOCK);
	if (!r->reading) {
		rc = vm_io_disk_submit(r->vm, r->slot, &r->req, false, s->block * BLOCK, sectors,
				       r->buf);
		if (rc == -HYP_EBUSY)
			return DID_WAIT;	/* the host ring is full: again next poll */
		if (rc) {
			snprintf(r->err, sizeof(r->err), "disk %u refused the read of block %lu",
				 r->slot, (unsigned long)s->block);
			*why = r->err;
			return DID_FAILED;
		}
		r->reading = true;
	}
	vm_io_disk_poll(r->vm, r->slot);
	if (!__atomic_load_n(&r->req.done, __ATOMIC_ACQUIRE))
		return DID_WAIT;
	r->reading = false;
	if (r->req.status != VIRTIO_BLK_S_OK) {
		snprintf(r->err, sizeof(r->err), "disk %u: read error in block %lu", r->slot,
			 (unsigned long)s->block);
		*why = r->err;
		return DID_FAILED;
	}
	s->crc32c = crc32c(r->buf, (size_t)sectors * SNAP_DISK_SECTOR);
	r->next++;
	return r->next == r->id.samples ? DID_DONE : DID_WAIT;
}

bool disk_id_end(struct disk_id_read *r, bool wait)
{
	if (r->reading && !__atomic_load_n(&r->req.done, __ATOMIC_ACQUIRE)) {
		if (!wait)
			return false;	/* the disk still writes into the buffer: kept */
		while (!__atomic_load_n(&r->req.done, __ATOMIC_ACQUIRE))
			vm_io_disk_poll(r->vm, r->slot);
	}
	r->reading = false;
	if (r->buf)
		mm_free((hpa_t)(uintptr_t)r->buf, BLOCK_BYTES);
	r->buf = NULL;
	return true;
}

/* The saver's reader: static, since a read the disk has not answered in
 * time keeps its buffer and request until it has (the next take checks). */
static struct disk_id_read taking;

int disk_id_take(struct vm *vm, unsigned int slot, struct snap_disk_id *id, const char **why)
{
	uint64_t until;
	enum disk_id_step step;

	*why = NULL;
	if (taking.buf && !disk_id_end(&taking, false)) {
		*why = "a disk has not answered a read of the last snapshot yet";
		return -HYP_EBUSY;
	}
	disk_id_begin(&taking, vm, slot);
	until = time_now() + timebase_hz / 1000 * TAKE_WAIT_MS;
	do {
		step = disk_id_poll(&taking, why);
	} while (step == DID_WAIT && time_now() < until);
	if (step == DID_WAIT) {
		snprintf(taking.err, sizeof(taking.err),
			 "disk %u did not answer the reads of its identity within %u ms", slot,
			 TAKE_WAIT_MS);
		*why = taking.err;
		pr_info("vm %s: %s", vm->cfg.name, taking.err);
		disk_id_end(&taking, false);
		return -HYP_EIO;
	}
	if (step == DID_FAILED) {
		disk_id_end(&taking, false);
		return -HYP_EIO;
	}
	*id = taking.id;
	disk_id_end(&taking, false);
	return 0;
}
