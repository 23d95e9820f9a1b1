/* SPDX-License-Identifier: MIT */
/* A restore's DISK sections (docs/snapshot-format.md, "DISK"): each block
 * checked (a disk the stream bound, block aligned, inside it, a partial
 * block only at its end, no block twice), its sectors read into a buffer
 * of ours (the CRC is checked before anything reaches the disk), then
 * written to the host disk through vm_io.h. The host disk is the new image
 * the restoring tool made (zeroed: blocks missing from the stream are
 * zero); a refusal leaves it half written, and the tool deletes it. */
#include <string.h>
#include <errno.h>
#include <mm.h>
#include <printf.h>
#include <vm.h>
#include <vm_io.h>
#include <disk_stream.h>

#define BLOCK		SNAP_DISK_BLOCK_SECTORS
#define BLOCK_BYTES	(SNAP_DISK_BLOCK_SECTORS * SNAP_DISK_SECTOR)

const char *disk_load_section(struct disk_load *d, struct vm *vm, uint32_t slot)
{
	uint64_t sectors;

	if (slot >= VM_MAX_DISKS || !(sectors = vm_io_disk_sectors(vm, slot)))
		return "a DISK section for a slot that is not a disk";
	if (vm_io_disk_read_only(vm, slot))
		return "a DISK section for a read-only disk (its content is its image's)";
	d->vm = vm;
	d->slot = slot;
	if (!d->buf) {
		d->buf = (uint8_t *)(uintptr_t)mm_alloc_raw(BLOCK_BYTES, PAGE_SIZE);
		if (!d->buf)
			return "no memory for a disk block";
	}
	if (!d->seen[slot]) {
		d->map_bytes[slot] = ALIGN_UP(((sectors + BLOCK - 1) / BLOCK + 63) / 64 * 8,
					      PAGE_SIZE);
		d->seen[slot] = (uint64_t *)(uintptr_t)mm_alloc(d->map_bytes[slot], PAGE_SIZE);
		if (!d->seen[slot])
			return "no memory for a disk's block map";
		d->sectors[slot] = sectors;
	}
	return NULL;
}

const char *disk_load_run(struct disk_load *d, const struct snap_disk_run *run,
			  uint64_t length, void **dst, uint32_t *offset)
{
	uint64_t cap = d->sectors[d->slot], block = run->sector / BLOCK;

	*offset = offsetof(struct snap_disk_run, sectors);
	if ((length - sizeof(*run)) / SNAP_DISK_SECTOR != run->sectors)
		return "sectors disagrees with the section length";
	*offset = offsetof(struct snap_disk_run, reserved);
	if (run->reserved)
		return "reserved field is not 0";
	*offset = offsetof(struct snap_disk_run, sector);
	if (run->sector % (d->again ? SNAP_DISK_UNIT_SECTORS : BLOCK))
		return d->again ? "sector is not the start of a 4 KiB unit" :
				  "sector is not the start of a block";
	if (run->sector >= cap)
		return "sector is past the disk's end";
	*offset = offsetof(struct snap_disk_run, sectors);
	if (d->again) {
		/* a migration: whole units inside one block (the last unit of
		 * the disk may be short) */
		if (!run->sectors || run->sector % BLOCK + run->sectors > BLOCK ||
		    run->sector + run->sectors > cap ||
		    (run->sectors % SNAP_DISK_UNIT_SECTORS && run->sector + run->sectors != cap))
			return "sectors is not whole 4 KiB units inside one block";
	} else if (run->sectors != MIN((uint64_t)BLOCK, cap - run->sector)) {
		return "sectors is not the block's (a whole block, or the disk's last)";
	}
	*offset = offsetof(struct snap_disk_run, sector);
	if (!d->again && d->seen[d->slot][block / 64] & (1ULL << (block % 64)))
		return "a block that came before";
	d->seen[d->slot][block / 64] |= 1ULL << (block % 64);
	d->sector = run->sector;
	d->count = run->sectors;
	*dst = d->buf;
	return NULL;
}

const char *disk_load_write(struct disk_load *d)
{
	const char *why;

	d->pending = true;
	disk_load_busy(d, &why);	/* started now if the ring has room */
	return why;
}

bool disk_load_busy(struct disk_load *d, const char **why)
{
	int rc;

	*why = NULL;
	if (d->pending) {
		rc = vm_io_disk_submit(d->vm, d->slot, &d->req, true, d->sector, d->count, d->buf);
		if (rc == -HYP_EBUSY)
			return true;	/* the host ring is full: again next poll */
		d->pending = false;
		if (rc) {
			snprintf(d->err, sizeof(d->err), "disk %u refused the write of sector %lu",
				 d->slot, (unsigned long)d->sector);
			*why = d->err;
			return true;
		}
		d->writing = true;
	}
	if (!d->writing)
		return false;
	vm_io_disk_poll(d->vm, d->slot);
	if (!__atomic_load_n(&d->req.done, __ATOMIC_ACQUIRE))
		return true;
	d->writing = false;
	if (d->req.status != VIRTIO_BLK_S_OK) {
		snprintf(d->err, sizeof(d->err), "disk %u: write error at sector %lu", d->slot,
			 (unsigned long)d->sector);
		*why = d->err;
		return true;
	}
	return false;
}

/* The next disk, from @d->slot on, that a block went to: false if none. */
static bool next_written_disk(struct disk_load *d)
{
	for (; d->slot < VM_MAX_DISKS; d->slot++)
		if (d->seen[d->slot])
			return true;
	return false;
}

/* A request of ours at the disk: true while it is; false once it is done,
 * *@why saying why it failed (else NULL). */
static bool request_busy(struct disk_load *d, const char **why)
{
	return disk_load_busy(d, why) && !*why;
}

bool disk_load_flush(struct disk_load *d, const char **why)
{
	int rc;

	*why = NULL;
	if (!d->flushing) {
		d->flushing = true;
		d->slot = 0;
		d->pending = d->writing = false;
	}
	if (d->writing) {
		if (request_busy(d, why))
			return true;
		if (*why)
			return false;
		d->slot++;
	}
	if (!next_written_disk(d))
		return false;
	rc = vm_io_disk_flush(d->vm, d->slot, &d->req);
	if (rc == -HYP_EBUSY)
		return true;	/* the host ring is full: again next poll */
	if (rc) {
		snprintf(d->err, sizeof(d->err), "disk %u refused the flush", d->slot);
		*why = d->err;
		return false;
	}
	d->writing = true;
	return true;
}

bool disk_load_wipe(struct disk_load *d, const char **why)
{
	*why = NULL;
	if (!d->wiping) {
		/* a write under way ends first: its block is wiped after it */
		while (d->writing && !__atomic_load_n(&d->req.done, __ATOMIC_ACQUIRE))
			vm_io_disk_poll(d->vm, d->slot);
		d->writing = d->pending = false;
		d->wiping = true;
		d->slot = 0;
		d->sector = 0;
		if (d->buf)
			memset(d->buf, 0, BLOCK_BYTES);
	}
	if (!d->buf)
		return false;	/* no block ever came */
	if ((d->pending || d->writing) && request_busy(d, why))
		return true;
	if (*why)
		return false;
	while (next_written_disk(d)) {
		uint64_t block = d->sector / BLOCK, blocks = (d->sectors[d->slot] + BLOCK - 1) / BLOCK;

		for (; block < blocks; block++)
			if (d->seen[d->slot][block / 64] & (1ULL << (block % 64)))
				break;
		if (block == blocks) {
			d->slot++;
			d->sector = 0;
			continue;
		}
		d->seen[d->slot][block / 64] &= ~(1ULL << (block % 64));
		d->sector = block * BLOCK;
		d->count = (uint32_t)MIN((uint64_t)BLOCK, d->sectors[d->slot] - d->sector);
		d->pending = true;
		if (request_busy(d, why))
			return true;
		if (*why)
			return false;
	}
	return false;
}

void disk_load_end(struct disk_load *d)
{
	while (d->writing && !__atomic_load_n(&d->req.done, __ATOMIC_ACQUIRE))
		vm_io_disk_poll(d->vm, d->slot);
	d->writing = d->pending = d->flushing = d->wiping = false;
	for (unsigned int i = 0; i < VM_MAX_DISKS; i++) {
		if (d->seen[i])
			mm_free((hpa_t)(uintptr_t)d->seen[i], d->map_bytes[i]);
		d->seen[i] = NULL;
	}
	if (d->buf)
		mm_free((hpa_t)(uintptr_t)d->buf, BLOCK_BYTES);
	d->buf = NULL;
}
