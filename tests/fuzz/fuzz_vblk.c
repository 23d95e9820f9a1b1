/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a guest's virtio-blk device, hyp/vdev/vblk.c over the
 * virtio-mmio transport (vio_mmio.c) and the virtqueue walker (virtq.c)
 * (docs/fuzzing.md, docs/virtio.md "virtio-blk"). One input is a disk and
 * backend configuration, a script of operations and a guest RAM image:
 *
 *   0  u8  backend seg_max     4  u16 QueueNum
 *   1  u8  flags: 1 read-only, 2 the backend completes at once,
 *          4 it fails every request
 *   2  u8  backend room (requests it holds; more: -HYP_EBUSY)
 *   3  u8  nr_ops (<= 128)     6  u16 unused
 *   8  u32 capacity (sectors)  12 u32 unused
 *   16 ops: nr_ops records of 6 bytes (kind u8, a u8, b u16, c u16)
 *   then the first bytes of guest RAM (16 KiB at 0x80000000, zero after
 *   the input): descriptors at 0, the available ring at 0x1000, the used
 *   ring at 0x1400, set up by a driver init before the script runs.
 *
 * Operations: 0 QueueNotify (value a); 1 the backend completes its oldest
 * request with status a; 2 the guest writes u16 c at RAM offset b; 3 a
 * 32-bit register write at offset b & 0xffc of value c | a << 16; 4 a read
 * at offset b of width 1 << (a & 3) (aligned); 5 device reset and a new
 * driver init; 6 the backend completes everything it holds.
 *
 * Checked on every input, besides ASan/UBSan (the RAM block is exactly 16
 * KiB, so any access past it is reported):
 *  - the backend only sees checked requests: IN, OUT or FLUSH; 1..seg_max
 *    segments for IN/OUT (none for FLUSH), each of length > 0 wholly inside
 *    the VM's RAM (computed here in 128 bits); whole sectors, at least one,
 *    inside the disk; no OUT on a read-only disk; never a request it holds;
 *  - the device holds at most VBLK_INFLIGHT requests with the backend;
 *  - bounded work: one operation copies at most QueueNum chains' worth of
 *    descriptors (QueueNum x min(QueueNum, chain limit));
 *  - the PLIC line follows InterruptStatus != 0;
 *  - at the end, once the backend has finished everything, a working queue
 *    holds no chain (every request taken was answered). */
#include <string.h>
#include <errno.h>
#include <vblk.h>
#include <vio_mmio.h>
#include <virtio_mmio.h>
#include "fuzz_check.h"
#include "fuzz_vio_guest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR		16
#define OP_SIZE		6
#define MAX_OPS		128

static const struct fuzz_vio_queue rings = { 0x0000, 0x1000, 0x1400 };	/* desc, avail, used */

/* ---- the backend: a disk that checks what it is given ---- */

static struct {
	uint32_t seg_max;
	bool ro, sync, fail;
	unsigned int room;
	uint64_t capacity;
	struct vblk_io *held[VBLK_INFLIGHT + 1];
	unsigned int nr_held;
	uint8_t sector[VIRTIO_BLK_SECTOR];
} disk;

static int disk_submit(void *be, struct vblk_io *io)
{
	unsigned __int128 total = 0;
	uint32_t seg_max = disk.seg_max < 1 ? 1 : disk.seg_max > VBLK_SEG_MAX ? VBLK_SEG_MAX
									      : disk.seg_max;

	CHECK(be == &disk);
	CHECK(io->type == VIRTIO_BLK_T_IN || io->type == VIRTIO_BLK_T_OUT ||
	      io->type == VIRTIO_BLK_T_FLUSH);
	/* never a request of a driver before a reset still held beside a new
	 * one: an old write could land after a new one (docs/virtio.md, "Reset
	 * and reboot") */
	for (unsigned int i = 0; i < disk.nr_held; i++)
		CHECK(disk.held[i] != io && disk.held[i]->epoch == io->epoch);
	if (io->type == VIRTIO_BLK_T_FLUSH) {
		CHECK(io->nr_seg == 0);
	} else {
		CHECK(io->nr_seg >= 1 && io->nr_seg <= seg_max);
		for (uint32_t i = 0; i < io->nr_seg; i++) {
			const struct blk_seg *s = &io->seg[i];

			CHECK(s->len > 0);
			CHECK(s->hpa >= (uintptr_t)fuzz_ram &&
			      (unsigned __int128)s->hpa + s->len <= (uintptr_t)fuzz_ram + FUZZ_RAM_SIZE);
			total += s->len;
		}
		CHECK(total > 0 && total % VIRTIO_BLK_SECTOR == 0);
		CHECK((unsigned __int128)io->sector + total / VIRTIO_BLK_SECTOR <= disk.capacity);
		CHECK(io->type != VIRTIO_BLK_T_OUT || !disk.ro);
	}
	if (disk.fail)
		return -HYP_EINVAL;
	/* move the data as a host device would (ASan sees each byte) */
	for (uint32_t i = 0; i < io->nr_seg; i++) {
		uint8_t *p = (uint8_t *)(uintptr_t)io->seg[i].hpa;

		for (uint32_t k = 0; k < io->seg[i].len; k += VIRTIO_BLK_SECTOR / 4) {
			if (io->type == VIRTIO_BLK_T_IN)
				p[k] = disk.sector[k % VIRTIO_BLK_SECTOR];
			else
				disk.sector[k % VIRTIO_BLK_SECTOR] = p[k];
		}
	}
	if (disk.sync) {
		vblk_complete(io, VIRTIO_BLK_S_OK);
		return 0;
	}
	if (disk.nr_held >= disk.room)
		return -HYP_EBUSY;
	CHECK(disk.nr_held < VBLK_INFLIGHT);	/* the device's limit */
	disk.held[disk.nr_held++] = io;
	return 0;
}

static void disk_complete_one(uint8_t status)
{
	struct vblk_io *io;

	if (!disk.nr_held)
		return;
	io = disk.held[0];
	memmove(disk.held, disk.held + 1, --disk.nr_held * sizeof(disk.held[0]));
	vblk_complete(io, status);
}

static uint64_t disk_sectors(void *be)
{
	(void)be;
	return disk.capacity;
}

static bool disk_ro(void *be)
{
	(void)be;
	return disk.ro;
}

static uint32_t disk_seg_max(void *be)
{
	(void)be;
	return disk.seg_max;
}

static const struct vblk_backend_ops disk_ops = { disk_submit, disk_sectors, disk_ro,
						   disk_seg_max };

/* What one operation may cost: every round of the device's loop takes at
 * most a queue's worth of chains (the walker's limits per chain). */
static void check_state(struct vblk *b, uint64_t reads_before)
{
	struct virtq *q = &b->dev.s.q[0];
	unsigned int held = 0;

	/* one operation takes at most the chains the ring holds (pending and
	 * held never exceed the queue's size), each of at most
	 * min(size, chain_max) descriptors */
	CHECK(q->desc_reads - reads_before <= (uint64_t)q->size * MIN(q->size, q->chain_max));
	CHECK(q->in_flight <= q->size);
	for (unsigned int i = 0; i < VBLK_INFLIGHT; i++) {
		held += b->io[i].state != 0;
		/* the state masks the hot paths walk say what each request's state says */
		for (unsigned int s = 0; s < ARRAY_SIZE(b->in_state); s++)
			CHECK(!!(b->in_state[s] & (1U << i)) == (b->io[i].state == s));
	}
	CHECK(held <= VBLK_INFLIGHT);
	CHECK(fuzz_line == (b->dev.s.interrupt_status != 0));
	fuzz_vio_check_view();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int nr_ops;
	uint16_t qnum;
	struct vblk *b;
	struct virtq *q;

	if (size < HDR)
		return 0;
	nr_ops = data[3] > MAX_OPS ? MAX_OPS : data[3];
	if (size < HDR + (size_t)nr_ops * OP_SIZE)
		return 0;
	fuzz_vio_reset(data + HDR + nr_ops * OP_SIZE, size - HDR - nr_ops * OP_SIZE);
	memset(&disk, 0, sizeof(disk));
	disk.seg_max = data[0];
	disk.ro = data[1] & 1;
	disk.sync = data[1] & 2;
	disk.fail = data[1] & 4;
	disk.room = data[2] % (VBLK_INFLIGHT + 2);
	disk.capacity = fuzz_rd32(data + 8);
	qnum = fuzz_rd16(data + 4);

	CHECK(vio_attach_blk(&fuzz_vm, 0, &disk_ops, &disk) == 0);
	b = (struct vblk *)fuzz_vm.vio[0];
	q = &b->dev.s.q[0];
	fuzz_vio_driver_init(&rings, &qnum, 1);
	for (unsigned int i = 0; i < nr_ops; i++) {
		const uint8_t *op = data + HDR + i * OP_SIZE;
		uint8_t a = op[1];
		uint16_t ob = fuzz_rd16(op + 2), oc = fuzz_rd16(op + 4);
		uint64_t reads = q->desc_reads;

		switch (op[0] % 7) {
		case 0:
			fuzz_vio_wr(VIRTIO_MMIO_QUEUE_NOTIFY, a);
			break;
		case 1:
			disk_complete_one(a);
			break;
		case 6:
			while (disk.nr_held)
				disk_complete_one(VIRTIO_BLK_S_OK);
			break;
		default:	/* 2-5 */
			CHECK(fuzz_vio_guest_op(op[0] % 7, a, ob, oc));
			break;
		}
		check_state(b, reads);
	}
	/* the backend finishes everything; what it refused for room goes in at
	 * those completions, so a bounded number of rounds ends it */
	disk.fail = false;
	if (!disk.room)
		disk.room = 1;
	for (unsigned int round = 0; round < 4 * VBLK_QUEUE_SIZE && (disk.nr_held || round == 0);
	     round++) {
		while (disk.nr_held)
			disk_complete_one(VIRTIO_BLK_S_OK);
		fuzz_vio_wr(VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	}
	CHECK(!disk.nr_held);
	if (q->ready && !q->fault && vio_mmio_driver_ok(&b->dev))
		CHECK(q->in_flight == 0);
	if (fuzz_verbose())
		fprintf(stderr, "blk: status 0x%x fault %s in_flight %u used %u requests %lu "
			"errors %lu\n", b->dev.s.status, virtq_fault_name(q->fault), q->in_flight,
			q->next_used, (unsigned long)b->b.stats.requests,
			(unsigned long)b->b.stats.errors);
	vio_detach_all(&fuzz_vm);
	return 0;
}
