/* SPDX-License-Identifier: MIT */
/* The guest virtio devices: the virtio-mmio transport (hyp/vdev/vio_mmio.c),
 * virtio-blk (vblk.c) and virtio-net (vnet.c), driven as a guest drives
 * them, through the MMIO handler of the VM's virtio window, over the real
 * virtqueue walker and guest memory layer and an 8 MiB fake guest RAM.
 * The disk is a memory-backed backend here (completing at once, later,
 * refusing for room, or failing); the switch port records what it gets.
 * Rules: docs/virtio.md. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <gstage.h>
#include <guest_mem.h>
#include <mm.h>
#include <mmio.h>
#include <vblk.h>
#include <vio_mmio.h>
#include <virtio_mmio.h>
#include <vnet.h>
#include <vm.h>
#include "test.h"

#define RAM		VM_GUEST_RAM_BASE
#define RAM_SIZE	(4 * SZ_2M)
#define QSIZE		256	/* the disk's QueueNumMax: chains of SEG_MAX + 2 */
#define BUF		(RAM + 0x100000)	/* guest buffers from here */
#define BLK		0			/* slots */
#define NET		3
#define DISK_SECTORS	256	/* a request of SEG_MAX one-sector pieces fits */

static struct vm tvm;
static uint16_t next_desc[VIO_MMIO_SLOTS][2];	/* the driver's next free descriptor */

/* ---- what the device models call outside vdev/ ---- */

static bool line[VPLIC_NR_SRC];

void virq_set_level(struct vm *vm, unsigned int irq, bool level)
{
	(void)vm;
	if (irq < VPLIC_NR_SRC)
		line[irq] = level;
}

void pr_info(const char *fmt, ...)
{
	(void)fmt;
}

/* ---- a memory-backed disk ---- */

enum disk_mode { DISK_SYNC, DISK_LATER, DISK_FAIL };

static struct disk {
	uint8_t data[DISK_SECTORS * VIRTIO_BLK_SECTOR];
	bool ro;
	uint32_t seg_max;
	enum disk_mode mode;
	unsigned int room;		/* DISK_LATER: requests it holds; more: -HYP_EBUSY */
	struct vblk_io *held[VBLK_INFLIGHT + 1];
	unsigned int nr_held;
	unsigned int submits, busy_answers;
	uint32_t last_type;
	uint64_t cow_at_submit;		/* chunks copied for a live snapshot before the last submit */
} disk;

static uint64_t cow_chunks;

/* a live snapshot's copy-before-write hook: notes the chunk, lets the write go */
static bool note_cow(struct vm *vm, uint64_t chunk)
{
	(void)vm;
	cow_chunks |= 1ULL << chunk;
	return true;
}

static void disk_do(struct vblk_io *io)
{
	uint64_t off = io->sector * VIRTIO_BLK_SECTOR;

	for (uint32_t i = 0; i < io->nr_seg; i++) {
		void *p = (void *)(uintptr_t)io->seg[i].hpa;

		if (io->type == VIRTIO_BLK_T_IN)
			memcpy(p, disk.data + off, io->seg[i].len);
		else if (io->type == VIRTIO_BLK_T_OUT)
			memcpy(disk.data + off, p, io->seg[i].len);
		off += io->seg[i].len;
	}
}

/* The backend sees only checked requests: segments inside the VM's RAM,
 * whole sectors inside the disk. */
static int disk_submit(void *be, struct vblk_io *io)
{
	uint64_t len = 0;

	EXPECT_TRUE(be == &disk);
	EXPECT_TRUE(io->type == VIRTIO_BLK_T_IN || io->type == VIRTIO_BLK_T_OUT ||
		    io->type == VIRTIO_BLK_T_FLUSH);
	EXPECT_TRUE(io->nr_seg <= disk.seg_max);
	for (uint32_t i = 0; i < io->nr_seg; i++) {
		EXPECT_TRUE(io->seg[i].len > 0);
		EXPECT_TRUE(io->seg[i].hpa >= tvm.ram_hpa &&
			    io->seg[i].hpa + io->seg[i].len <= tvm.ram_hpa + RAM_SIZE);
		len += io->seg[i].len;
	}
	if (io->type != VIRTIO_BLK_T_FLUSH) {
		EXPECT_TRUE(len > 0 && len % VIRTIO_BLK_SECTOR == 0);
		EXPECT_TRUE(io->sector * VIRTIO_BLK_SECTOR + len <= sizeof(disk.data));
	}
	disk.submits++;
	disk.last_type = io->type;
	disk.cow_at_submit = cow_chunks;
	if (disk.mode == DISK_FAIL)
		return -HYP_EINVAL;
	if (disk.mode == DISK_SYNC) {
		disk_do(io);
		vblk_complete(io, VIRTIO_BLK_S_OK);
		return 0;
	}
	if (disk.nr_held == disk.room) {
		disk.busy_answers++;
		return -HYP_EBUSY;
	}
	disk_do(io);
	disk.held[disk.nr_held++] = io;
	return 0;
}

/* DISK_LATER: finish the oldest held request */
static void disk_complete_one(uint8_t status)
{
	struct vblk_io *io = disk.held[0];

	EXPECT_TRUE(disk.nr_held > 0);
	memmove(disk.held, disk.held + 1, --disk.nr_held * sizeof(disk.held[0]));
	vblk_complete(io, status);
}

static uint64_t disk_sectors(void *be)
{
	(void)be;
	return DISK_SECTORS;
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

static const struct vblk_backend_ops disk_ops = { disk_submit, disk_sectors, disk_ro, disk_seg_max };

/* ---- a switch port ---- */

static struct {
	uint8_t frame[2048];
	uint32_t len;
	unsigned int frames;
	int allow;		/* frames its rate limit lets through; -1: any */
	unsigned int refused;
} port;

static void port_tx(void *p, const void *frame, uint32_t len)
{
	EXPECT_TRUE(p == &port);
	EXPECT_TRUE(len >= VNET_FRAME_MIN && len <= VNET_FRAME_MAX);
	memcpy(port.frame, frame, len);
	port.len = len;
	port.frames++;
}

static bool port_may_send(void *p, uint32_t len)
{
	EXPECT_TRUE(p == &port);
	EXPECT_TRUE(len >= VNET_FRAME_MIN && len <= VNET_FRAME_MAX);
	if (port.allow < 0)
		return true;
	if (!port.allow) {
		port.refused++;
		return false;
	}
	port.allow--;
	return true;
}

static const struct vnet_port_ops port_ops = { port_tx, port_may_send };
static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

/* ---- the VM ---- */

static void vm_new(void)
{
	memset(&tvm, 0, sizeof(tvm));
	strcpy(tvm.cfg.name, "vm0");
	tvm.cfg.ram_gpa = RAM;
	tvm.cfg.ram_size = RAM_SIZE;
	tvm.state = VM_RUNNING;
	tvm.ram_hpa = (hpa_t)(uintptr_t)aligned_alloc(SZ_2M, RAM_SIZE);
	tvm.meta_hpa = mm_alloc(vm_meta_size(RAM_SIZE), GSTAGE_ROOT_SIZE);
	vm_ram_init(&tvm);
	memset(line, 0, sizeof(line));
	memset(&disk, 0, sizeof(disk));
	for (unsigned int i = 0; i < sizeof(disk.data); i++)
		disk.data[i] = (uint8_t)(i * 7 + i / VIRTIO_BLK_SECTOR);
	disk.seg_max = 8;
	memset(&port, 0, sizeof(port));
	memset(next_desc, 0, sizeof(next_desc));
}

static void vm_free(void)
{
	vio_detach_all(&tvm);
	vm_dirty_log_stop(&tvm);
	free((void *)(uintptr_t)tvm.ram_hpa);
	mm_free(tvm.meta_hpa, 0);
}

static void *guest(gpa_t gpa, uint64_t len)
{
	void *p = vm_gpa_to_hva(&tvm, gpa, len, true);

	EXPECT_TRUE(p != NULL);
	return p;
}

/* ---- MMIO as the guest does it ---- */

static uint64_t access(unsigned int slot, uint32_t off, unsigned int width, bool write,
		       uint64_t value)
{
	gpa_t gpa = VIO_MMIO_BASE + slot * VIO_MMIO_STRIDE + off;
	struct mmio_region *r = vm_mmio_find(&tvm, gpa);
	struct mmio_access a = { .gpa = gpa, .width = width, .is_write = write, .value = value };

	EXPECT_TRUE(r != NULL);
	if (!r)
		return 0;
	EXPECT_EQ(r->handle(&tvm, r->priv, &a), 0);	/* never a fault */
	return a.value;
}

static uint32_t rd(unsigned int slot, uint32_t off)
{
	return (uint32_t)access(slot, off, 4, false, 0);
}

static void wr(unsigned int slot, uint32_t off, uint32_t v)
{
	access(slot, off, 4, true, v);
}

/* the rings of queue @qi of the device in @slot */
static gpa_t desc_at(unsigned int slot, unsigned int qi)
{
	return RAM + 0x10000 + slot * 0x8000 + qi * 0x4000;
}

static gpa_t avail_at(unsigned int slot, unsigned int qi)
{
	return desc_at(slot, qi) + 0x1000;
}

static gpa_t used_at(unsigned int slot, unsigned int qi)
{
	return desc_at(slot, qi) + 0x2000;
}

static void setup_queue(unsigned int slot, unsigned int qi)
{
	wr(slot, VIRTIO_MMIO_QUEUE_SEL, qi);
	EXPECT_EQ(rd(slot, VIRTIO_MMIO_QUEUE_READY), 0);
	EXPECT_TRUE(rd(slot, VIRTIO_MMIO_QUEUE_NUM_MAX) >= QSIZE);
	wr(slot, VIRTIO_MMIO_QUEUE_NUM, QSIZE);
	wr(slot, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)desc_at(slot, qi));
	wr(slot, VIRTIO_MMIO_QUEUE_DESC_HIGH, (uint32_t)(desc_at(slot, qi) >> 32));
	wr(slot, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)avail_at(slot, qi));
	wr(slot, VIRTIO_MMIO_QUEUE_DRIVER_HIGH, 0);
	wr(slot, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)used_at(slot, qi));
	wr(slot, VIRTIO_MMIO_QUEUE_DEVICE_HIGH, 0);
	wr(slot, VIRTIO_MMIO_QUEUE_READY, 1);
	EXPECT_EQ(rd(slot, VIRTIO_MMIO_QUEUE_READY), 1);
}

/* Linux's virtio_mmio probe and virtio core: reset, ACKNOWLEDGE, DRIVER,
 * features, FEATURES_OK read back, queues, DRIVER_OK. */
static void driver_init(unsigned int slot, unsigned int nr_queues)
{
	uint32_t lo, hi;

	EXPECT_EQ(rd(slot, VIRTIO_MMIO_MAGIC_VALUE), VIRTIO_MMIO_MAGIC);
	EXPECT_EQ(rd(slot, VIRTIO_MMIO_VERSION), 2);
	wr(slot, VIRTIO_MMIO_STATUS, 0);
	wr(slot, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE);
	wr(slot, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(slot, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	hi = rd(slot, VIRTIO_MMIO_DEVICE_FEATURES);
	wr(slot, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	lo = rd(slot, VIRTIO_MMIO_DEVICE_FEATURES);
	wr(slot, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(slot, VIRTIO_MMIO_DRIVER_FEATURES, hi);
	wr(slot, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(slot, VIRTIO_MMIO_DRIVER_FEATURES, lo);
	wr(slot, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				     VIRTIO_STATUS_FEATURES_OK);
	EXPECT_TRUE(rd(slot, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK);
	for (unsigned int qi = 0; qi < nr_queues; qi++)
		setup_queue(slot, qi);
	wr(slot, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				     VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
	EXPECT_TRUE(rd(slot, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK);
}

static void blk_new(void)
{
	vm_new();
	EXPECT_EQ(vio_attach_blk(&tvm, BLK, &disk_ops, &disk), 0);
}

static void blk_ready(void)
{
	blk_new();
	driver_init(BLK, 1);
}

/* ---- chains as the driver offers them ---- */

struct seg {
	gpa_t gpa;
	uint32_t len;
	bool write;
};

/* Descriptors for @segs (from the queue's next free index), then the
 * avail entry and idx; returns the head. */
static uint16_t offer(unsigned int slot, unsigned int qi, const struct seg *segs, unsigned int n)
{
	uint16_t head = next_desc[slot][qi] % QSIZE, *a;

	for (unsigned int i = 0; i < n; i++) {
		uint16_t at = (uint16_t)((head + i) % QSIZE);
		struct virtq_desc *d = guest(desc_at(slot, qi) + 16ULL * at, 16);

		d->addr = segs[i].gpa;
		d->len = segs[i].len;
		d->flags = (uint16_t)((segs[i].write ? VIRTQ_DESC_F_WRITE : 0) |
				      (i + 1 < n ? VIRTQ_DESC_F_NEXT : 0));
		d->next = (uint16_t)((at + 1) % QSIZE);
	}
	next_desc[slot][qi] = (uint16_t)(next_desc[slot][qi] + n);
	a = guest(avail_at(slot, qi), 6 + 2 * QSIZE);
	a[2 + a[1] % QSIZE] = head;
	a[1]++;
	return head;
}

static void notify(unsigned int slot, unsigned int qi)
{
	wr(slot, VIRTIO_MMIO_QUEUE_NOTIFY, qi);
}

static uint16_t used_idx(unsigned int slot, unsigned int qi)
{
	return ((uint16_t *)guest(used_at(slot, qi), 4))[1];
}

static struct virtq_used_elem used_elem(unsigned int slot, unsigned int qi, uint16_t n)
{
	return *(struct virtq_used_elem *)guest(used_at(slot, qi) + 4 + 8ULL * (n % QSIZE), 8);
}

/* a block request header at @gpa */
static void blk_hdr(gpa_t gpa, uint32_t type, uint64_t sector)
{
	uint8_t *h = guest(gpa, VIRTIO_BLK_HDR_SIZE);

	memcpy(h, &type, 4);
	memset(h + 4, 0, 4);
	memcpy(h + 8, &sector, 8);
}

#define HDR	(BUF)
#define DATA	(BUF + 0x1000)
#define STATUS	(BUF + 0x800)

static uint8_t status_byte(void)
{
	return *(uint8_t *)guest(STATUS, 1);
}

/* One request of the usual shape: header, one data buffer, status. The
 * status byte starts at 0xff (never a device answer). */
static void blk_request(uint32_t type, uint64_t sector, uint32_t len, bool data_writable)
{
	struct seg s[3] = { { HDR, VIRTIO_BLK_HDR_SIZE, false }, { DATA, len, data_writable },
			    { STATUS, 1, true } };

	blk_hdr(HDR, type, sector);
	*(uint8_t *)guest(STATUS, 1) = 0xff;
	if (len)
		offer(BLK, 0, s, 3);
	else
		offer(BLK, 0, (struct seg[]){ s[0], s[2] }, 2);
	notify(BLK, 0);
}

/* The last request was answered @st without reaching the backend. */
static void expect_refused(uint8_t st)
{
	EXPECT_EQ(disk.submits, 0);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(status_byte(), st);
	EXPECT_EQ(used_elem(BLK, 0, 0).len, 1);
	EXPECT_FALSE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET);
}

/* ---- the transport ---- */

TEST(vio_no_device_no_window)
{
	vm_new();
	EXPECT_EQ(tvm.nr_mmio, 0);
	EXPECT_TRUE(vm_mmio_find(&tvm, VIO_MMIO_BASE) == NULL);
	vio_reset_all(&tvm);
	EXPECT_TRUE(vio_quiesce(&tvm));
	vm_free();
}

TEST(vio_linux_init_sequence_blk)
{
	blk_new();
	EXPECT_EQ(tvm.nr_mmio, 1);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_BLOCK);
	EXPECT_NE(rd(BLK, VIRTIO_MMIO_VENDOR_ID), 0);
	wr(BLK, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_DEVICE_FEATURES),
		  (1U << VIRTIO_BLK_F_SEG_MAX) | (1U << VIRTIO_BLK_F_BLK_SIZE) |
		  (1U << VIRTIO_BLK_F_FLUSH));
	wr(BLK, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_DEVICE_FEATURES), 1);	/* VERSION_1 */
	wr(BLK, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 2);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_DEVICE_FEATURES), 0);
	driver_init(BLK, 1);
	wr(BLK, VIRTIO_MMIO_QUEUE_SEL, 0);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_QUEUE_NUM_MAX), VBLK_QUEUE_SIZE);
	wr(BLK, VIRTIO_MMIO_QUEUE_SEL, 1);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_QUEUE_NUM_MAX), 0);	/* no second queue */
	/* config: capacity, seg_max, blk_size; any width */
	EXPECT_EQ(access(BLK, VIRTIO_MMIO_CONFIG, 8, false, 0), DISK_SECTORS);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_CONFIG + 12), 8);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_CONFIG + 20), VIRTIO_BLK_SECTOR);
	EXPECT_EQ(access(BLK, VIRTIO_MMIO_CONFIG + 20, 2, false, 0), VIRTIO_BLK_SECTOR);
	EXPECT_EQ(access(BLK, VIRTIO_MMIO_CONFIG + 24, 4, false, 0), 0);	/* past it */
	access(BLK, VIRTIO_MMIO_CONFIG, 4, true, 0x1234);	/* read-only */
	EXPECT_EQ(access(BLK, VIRTIO_MMIO_CONFIG, 8, false, 0), DISK_SECTORS);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	EXPECT_FALSE(line[VIO_MMIO_IRQ(BLK)]);
	vm_free();
}

TEST(vio_features_ok_refused_without_version_1)
{
	blk_new();
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES, 1U << VIRTIO_BLK_F_FLUSH);
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				    VIRTIO_STATUS_FEATURES_OK);
	EXPECT_FALSE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK);
	/* and DRIVER_OK without FEATURES_OK is not kept either */
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				    VIRTIO_STATUS_DRIVER_OK);
	EXPECT_FALSE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK);
	vm_free();
}

TEST(vio_features_ok_refused_for_a_feature_not_offered)
{
	blk_new();
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES, 1);		/* VERSION_1 */
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES, 1U << 28);	/* INDIRECT_DESC: never offered */
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				    VIRTIO_STATUS_FEATURES_OK);
	EXPECT_FALSE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK);
	/* RO is offered only for a read-only disk */
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES, 1U << VIRTIO_BLK_F_RO);
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				    VIRTIO_STATUS_FEATURES_OK);
	EXPECT_FALSE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES, 1U << VIRTIO_BLK_F_FLUSH);
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				    VIRTIO_STATUS_FEATURES_OK);
	EXPECT_TRUE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK);
	/* accepted features are fixed */
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES, 1U << 28);
	EXPECT_EQ(tvm.vio[BLK]->s.driver_features,
		  (1ULL << 32) | (1ULL << VIRTIO_BLK_F_FLUSH));
	vm_free();
}

TEST(vio_bad_accesses_are_ignored)
{
	blk_ready();
	/* a register at the wrong width: ignored, reads 0 */
	EXPECT_EQ(access(BLK, VIRTIO_MMIO_MAGIC_VALUE, 1, false, 0), 0);
	EXPECT_EQ(access(BLK, VIRTIO_MMIO_MAGIC_VALUE, 8, false, 0), 0);
	access(BLK, VIRTIO_MMIO_STATUS, 2, true, 0);		/* not a reset */
	EXPECT_TRUE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK);
	/* reserved and write-only registers read 0; read-only ones ignore writes */
	EXPECT_EQ(rd(BLK, 0x0c0), 0);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_QUEUE_NOTIFY), 0);
	wr(BLK, VIRTIO_MMIO_MAGIC_VALUE, 0);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_MAGIC_VALUE), VIRTIO_MMIO_MAGIC);
	/* a notify of a queue that does not exist */
	wr(BLK, VIRTIO_MMIO_QUEUE_NOTIFY, 7);
	/* an empty slot: no device */
	EXPECT_EQ(rd(5, VIRTIO_MMIO_MAGIC_VALUE), 0);
	EXPECT_EQ(rd(5, VIRTIO_MMIO_DEVICE_ID), 0);
	wr(5, VIRTIO_MMIO_STATUS, 1);
	EXPECT_EQ(rd(5, VIRTIO_MMIO_STATUS), 0);
	vm_free();
}

TEST(vio_queue_size_above_16_bits_refused)
{
	blk_new();
	wr(BLK, VIRTIO_MMIO_QUEUE_SEL, 0);
	wr(BLK, VIRTIO_MMIO_QUEUE_NUM, 0x10000 + 16);	/* 16 if cut to 16 bits */
	wr(BLK, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)desc_at(BLK, 0));
	wr(BLK, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)avail_at(BLK, 0));
	wr(BLK, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)used_at(BLK, 0));
	wr(BLK, VIRTIO_MMIO_QUEUE_READY, 1);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_QUEUE_READY), 0);
	EXPECT_EQ(tvm.vio[BLK]->s.q[0].fault, VIRTQ_FAULT_SIZE);
	vm_free();
}

TEST(vio_queue_fault_needs_reset_and_config_interrupt)
{
	struct seg s = { BUF, 16, false };
	uint16_t h;

	blk_ready();
	/* a descriptor that chains to itself */
	h = offer(BLK, 0, &s, 1);
	((struct virtq_desc *)guest(desc_at(BLK, 0) + 16ULL * h, 16))->flags = VIRTQ_DESC_F_NEXT;
	((struct virtq_desc *)guest(desc_at(BLK, 0) + 16ULL * h, 16))->next = h;
	notify(BLK, 0);
	EXPECT_TRUE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	EXPECT_TRUE(line[VIO_MMIO_IRQ(BLK)]);
	EXPECT_EQ(disk.submits, 0);
	/* the driver cannot clear it; a reset does */
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE);
	EXPECT_TRUE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	wr(BLK, VIRTIO_MMIO_STATUS, 0);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_STATUS), 0);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	EXPECT_FALSE(line[VIO_MMIO_IRQ(BLK)]);
	wr(BLK, VIRTIO_MMIO_QUEUE_SEL, 0);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_QUEUE_READY), 0);
	EXPECT_EQ(tvm.vio[BLK]->s.q[0].fault, VIRTQ_FAULT_NONE);
	vm_free();
}

TEST(vio_ready_fault_before_driver_ok_told_at_driver_ok)
{
	blk_new();
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES, 1);
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				    VIRTIO_STATUS_FEATURES_OK);
	wr(BLK, VIRTIO_MMIO_QUEUE_SEL, 0);
	wr(BLK, VIRTIO_MMIO_QUEUE_NUM, QSIZE);
	wr(BLK, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)VIO_MMIO_BASE);	/* a device window */
	wr(BLK, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)avail_at(BLK, 0));
	wr(BLK, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)used_at(BLK, 0));
	wr(BLK, VIRTIO_MMIO_QUEUE_READY, 1);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_QUEUE_READY), 0);
	EXPECT_TRUE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), 0);	/* not before DRIVER_OK */
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				    VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	vm_free();
}

TEST(vio_interrupt_ack_lowers_the_line)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_VRING);
	EXPECT_TRUE(line[VIO_MMIO_IRQ(BLK)]);
	wr(BLK, VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_MMIO_INT_VRING);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	EXPECT_FALSE(line[VIO_MMIO_IRQ(BLK)]);
	vm_free();
}

TEST(vio_no_interrupt_when_the_driver_suppresses_it)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	((uint16_t *)guest(avail_at(BLK, 0), 2))[0] = VIRTQ_AVAIL_F_NO_INTERRUPT;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	vm_free();
}

TEST(vio_notify_before_driver_ok_does_nothing)
{
	blk_new();
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(BLK, VIRTIO_MMIO_DRIVER_FEATURES, 1);
	wr(BLK, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				    VIRTIO_STATUS_FEATURES_OK);
	setup_queue(BLK, 0);
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.submits, 0);
	EXPECT_EQ(used_idx(BLK, 0), 0);
	vm_free();
}

/* ---- virtio-blk: good requests ---- */

TEST(vblk_read)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_IN, 3, 2 * VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.submits, 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	EXPECT_EQ(memcmp(guest(DATA, 2 * VIRTIO_BLK_SECTOR), disk.data + 3 * VIRTIO_BLK_SECTOR,
			 2 * VIRTIO_BLK_SECTOR), 0);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(used_elem(BLK, 0, 0).id, 0);
	EXPECT_EQ(used_elem(BLK, 0, 0).len, 2 * VIRTIO_BLK_SECTOR + 1);
	EXPECT_EQ(((struct vblk *)tvm.vio[BLK])->b.stats.requests, 1);
	EXPECT_EQ(((struct vblk *)tvm.vio[BLK])->b.stats.bytes, 2 * VIRTIO_BLK_SECTOR);
	vm_free();
}

TEST(vblk_write)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	memset(guest(DATA, VIRTIO_BLK_SECTOR), 0x5a, VIRTIO_BLK_SECTOR);
	blk_request(VIRTIO_BLK_T_OUT, DISK_SECTORS - 1, VIRTIO_BLK_SECTOR, false);	/* the last one */
	EXPECT_EQ(disk.submits, 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	EXPECT_EQ(disk.data[(DISK_SECTORS - 1) * VIRTIO_BLK_SECTOR], 0x5a);
	EXPECT_EQ(used_elem(BLK, 0, 0).len, 1);
	vm_free();
}

TEST(vblk_flush_reaches_the_backend)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_FLUSH, 0, 0, false);
	EXPECT_EQ(disk.submits, 1);
	EXPECT_EQ(disk.last_type, VIRTIO_BLK_T_FLUSH);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	vm_free();
}

TEST(vblk_get_id_answers_the_serial)
{
	blk_ready();
	blk_request(VIRTIO_BLK_T_GET_ID, 0, VIRTIO_BLK_ID_BYTES, true);
	EXPECT_EQ(disk.submits, 0);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	EXPECT_STREQ((char *)guest(DATA, VIRTIO_BLK_ID_BYTES), "vm0-vda");
	EXPECT_EQ(used_elem(BLK, 0, 0).len, VIRTIO_BLK_ID_BYTES + 1);
	vm_free();
}

TEST(vblk_header_split_over_two_buffers_and_data_with_status)
{
	/* any layout: the header in two pieces, the status byte in the data's
	 * last buffer */
	struct seg s[3] = { { HDR, 8, false }, { HDR + 8, 8, false },
			    { DATA, VIRTIO_BLK_SECTOR + 1, true } };

	blk_ready();
	disk.mode = DISK_SYNC;
	blk_hdr(HDR, VIRTIO_BLK_T_IN, 1);
	offer(BLK, 0, s, 3);
	notify(BLK, 0);
	EXPECT_EQ(disk.submits, 1);
	EXPECT_EQ(*(uint8_t *)guest(DATA + VIRTIO_BLK_SECTOR, 1), VIRTIO_BLK_S_OK);
	EXPECT_EQ(memcmp(guest(DATA, VIRTIO_BLK_SECTOR), disk.data + VIRTIO_BLK_SECTOR, VIRTIO_BLK_SECTOR), 0);
	vm_free();
}

/* ---- virtio-blk: each refusal ---- */

TEST(vblk_header_shorter_than_16_bytes_ioerr)
{
	struct seg s[3] = { { HDR, 12, false }, { DATA, VIRTIO_BLK_SECTOR, true }, { STATUS, 1, true } };

	blk_ready();
	disk.mode = DISK_SYNC;
	blk_hdr(HDR, VIRTIO_BLK_T_IN, 0);
	*(uint8_t *)guest(STATUS, 1) = 0xff;
	offer(BLK, 0, s, 3);
	notify(BLK, 0);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_no_status_byte_faults_the_queue)
{
	struct seg s[2] = { { HDR, VIRTIO_BLK_HDR_SIZE, false }, { DATA, VIRTIO_BLK_SECTOR, false } };

	blk_ready();
	disk.mode = DISK_SYNC;
	blk_hdr(HDR, VIRTIO_BLK_T_OUT, 0);
	offer(BLK, 0, s, 2);
	notify(BLK, 0);
	EXPECT_EQ(disk.submits, 0);
	EXPECT_EQ(used_idx(BLK, 0), 0);
	EXPECT_TRUE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	EXPECT_EQ(tvm.vio[BLK]->s.q[0].fault, VIRTQ_FAULT_UNUSABLE);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	vm_free();
}

/* a read whose chain also has device-readable data (and writable data
 * that would pass on its own) */
TEST(vblk_read_with_readable_data_ioerr)
{
	struct seg s[4] = { { HDR, VIRTIO_BLK_HDR_SIZE, false }, { DATA, VIRTIO_BLK_SECTOR, false },
			    { DATA + 0x1000, VIRTIO_BLK_SECTOR, true }, { STATUS, 1, true } };

	blk_ready();
	disk.mode = DISK_SYNC;
	blk_hdr(HDR, VIRTIO_BLK_T_IN, 0);
	*(uint8_t *)guest(STATUS, 1) = 0xff;
	offer(BLK, 0, s, 4);
	notify(BLK, 0);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

/* a write whose chain also has device-writable data beside the status */
TEST(vblk_write_with_writable_data_ioerr)
{
	struct seg s[4] = { { HDR, VIRTIO_BLK_HDR_SIZE, false }, { DATA, VIRTIO_BLK_SECTOR, false },
			    { DATA + 0x1000, VIRTIO_BLK_SECTOR, true }, { STATUS, 1, true } };

	blk_ready();
	disk.mode = DISK_SYNC;
	blk_hdr(HDR, VIRTIO_BLK_T_OUT, 0);
	*(uint8_t *)guest(STATUS, 1) = 0xff;
	offer(BLK, 0, s, 4);
	notify(BLK, 0);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_read_with_no_writable_data_ioerr)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, false);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_data_not_whole_sectors_ioerr)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR + 4, true);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_no_data_ioerr)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_IN, 0, 0, true);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_past_the_end_ioerr)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_IN, DISK_SECTORS - 1, 2 * VIRTIO_BLK_SECTOR, true);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_sector_wrapping_ioerr)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	/* sector + 1 wraps to 0: inside the disk if added without care */
	blk_request(VIRTIO_BLK_T_IN, ~0ULL, VIRTIO_BLK_SECTOR, true);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_more_segments_than_seg_max_ioerr)
{
	/* seg_max 2; three data pieces, the last beside the status byte, in
	 * a chain the walker takes (seg_max + 2 descriptors) */
	struct seg s[4] = { { HDR, VIRTIO_BLK_HDR_SIZE, false }, { DATA, VIRTIO_BLK_SECTOR, true },
			    { DATA + 0x1000, VIRTIO_BLK_SECTOR, true },
			    { DATA + 0x2000, VIRTIO_BLK_SECTOR + 1, true } };

	vm_new();
	disk.seg_max = 2;
	EXPECT_EQ(vio_attach_blk(&tvm, BLK, &disk_ops, &disk), 0);
	driver_init(BLK, 1);
	disk.mode = DISK_SYNC;
	blk_hdr(HDR, VIRTIO_BLK_T_IN, 0);
	offer(BLK, 0, s, 4);
	notify(BLK, 0);
	EXPECT_EQ(disk.submits, 0);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(*(uint8_t *)guest(DATA + 0x2000 + VIRTIO_BLK_SECTOR, 1), VIRTIO_BLK_S_IOERR);
	vm_free();
}

/* A chain of header, VBLK_SEG_MAX one-sector data descriptors and the status
 * byte: the whole queue (no INDIRECT_DESC). */
static void blk_seg_max_chain(unsigned int pieces)
{
	static struct seg s[VBLK_SEG_MAX + 2];
	unsigned int n = 0;

	s[n++] = (struct seg){ HDR, VIRTIO_BLK_HDR_SIZE, false };
	for (unsigned int i = 0; i < VBLK_SEG_MAX; i++)
		s[n++] = (struct seg){ DATA + (gpa_t)i * 0x1000, VIRTIO_BLK_SECTOR, true };
	/* one more data piece: the status byte's descriptor carries it too */
	s[n++] = (struct seg){ STATUS - (pieces > VBLK_SEG_MAX ? VIRTIO_BLK_SECTOR : 0),
			       pieces > VBLK_SEG_MAX ? VIRTIO_BLK_SECTOR + 1 : 1, true };
	blk_hdr(HDR, VIRTIO_BLK_T_IN, 0);
	*(uint8_t *)guest(STATUS, 1) = 0xff;
	EXPECT_EQ(n, QSIZE);
	offer(BLK, 0, s, n);
	notify(BLK, 0);
}

TEST(vblk_seg_max_data_pieces_reach_the_disk)
{
	vm_new();
	disk.seg_max = 1000;	/* the backend takes more: cut to VBLK_SEG_MAX */
	EXPECT_EQ(vio_attach_blk(&tvm, BLK, &disk_ops, &disk), 0);
	driver_init(BLK, 1);
	EXPECT_EQ(access(BLK, VIRTIO_MMIO_CONFIG + 12, 4, false, 0), VBLK_SEG_MAX);
	EXPECT_EQ(VBLK_SEG_MAX, 254);	/* docs/virtio.md */
	disk.mode = DISK_SYNC;
	for (unsigned int i = 0; i < VBLK_SEG_MAX; i++)
		disk.data[i * VIRTIO_BLK_SECTOR] = (uint8_t)(i + 1);
	blk_seg_max_chain(VBLK_SEG_MAX);
	EXPECT_EQ(disk.submits, 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	EXPECT_EQ(used_elem(BLK, 0, 0).len, VBLK_SEG_MAX * VIRTIO_BLK_SECTOR + 1);
	for (unsigned int i = 0; i < VBLK_SEG_MAX; i++)
		EXPECT_EQ(*(uint8_t *)guest(DATA + (gpa_t)i * 0x1000, 1), (uint8_t)(i + 1));
	EXPECT_FALSE(rd(BLK, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	vm_free();
}

TEST(vblk_seg_max_plus_one_data_pieces_ioerr)
{
	vm_new();
	disk.seg_max = VBLK_SEG_MAX;
	EXPECT_EQ(vio_attach_blk(&tvm, BLK, &disk_ops, &disk), 0);
	driver_init(BLK, 1);
	disk.mode = DISK_SYNC;
	/* rule 8: SEG_MAX + 1 pieces in a chain the walker takes */
	blk_seg_max_chain(VBLK_SEG_MAX + 1);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_get_id_too_small_ioerr)
{
	blk_ready();
	blk_request(VIRTIO_BLK_T_GET_ID, 0, 8, true);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_get_id_too_large_ioerr)
{
	blk_ready();
	blk_request(VIRTIO_BLK_T_GET_ID, 0, 64, true);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_unsupported_type_unsupp)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	blk_request(11, 0, VIRTIO_BLK_SECTOR, false);	/* DISCARD: not offered */
	expect_refused(VIRTIO_BLK_S_UNSUPP);
	vm_free();
}

TEST(vblk_write_to_read_only_disk_ioerr)
{
	vm_new();
	disk.ro = true;
	EXPECT_EQ(vio_attach_blk(&tvm, BLK, &disk_ops, &disk), 0);
	wr(BLK, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	EXPECT_TRUE(rd(BLK, VIRTIO_MMIO_DEVICE_FEATURES) & (1U << VIRTIO_BLK_F_RO));
	driver_init(BLK, 1);
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_OUT, 0, VIRTIO_BLK_SECTOR, false);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

TEST(vblk_flush_with_data_ioerr)
{
	blk_ready();
	disk.mode = DISK_SYNC;
	blk_request(VIRTIO_BLK_T_FLUSH, 0, VIRTIO_BLK_SECTOR, false);
	expect_refused(VIRTIO_BLK_S_IOERR);
	vm_free();
}

/* ---- virtio-blk: the backend's answers, limits, reset ---- */

TEST(vblk_backend_error_ioerr)
{
	blk_ready();
	disk.mode = DISK_FAIL;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.submits, 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(((struct vblk *)tvm.vio[BLK])->b.stats.errors, 1);
	vm_free();
}

TEST(vblk_completion_later_then_interrupt)
{
	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = 4;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.submits, 1);
	EXPECT_EQ(used_idx(BLK, 0), 0);
	EXPECT_EQ(status_byte(), 0xff);
	EXPECT_FALSE(line[VIO_MMIO_IRQ(BLK)]);
	disk_complete_one(VIRTIO_BLK_S_OK);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	EXPECT_TRUE(line[VIO_MMIO_IRQ(BLK)]);
	vm_free();
}

/* A completion while another hart holds the device's lock (the device's
 * own vCPU in a notify): posted, not waited for (hart 0, taking every host
 * completion, never waits for a VM's hart: docs/performance.md, "A disk
 * flood beside a victim"); the holder takes it when it lets the lock go,
 * and a kick takes one left by a holder that did not look (the transport).
 * Before, vblk_complete() waited for the lock: here it would never return. */
TEST(vblk_completion_never_waits_for_the_lock)
{
	struct vblk *b;

	blk_ready();
	b = (struct vblk *)tvm.vio[BLK];
	disk.mode = DISK_LATER;
	disk.room = 4;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	unit_deadline(10);
	spin_lock(&b->dev.lock);		/* another hart's */
	disk_complete_one(VIRTIO_BLK_S_OK);
	unit_deadline(0);
	EXPECT_EQ(used_idx(BLK, 0), 0);
	EXPECT_EQ(b->posted, 1U);
	spin_unlock(&b->dev.lock);		/* a holder that does not look */
	EXPECT_EQ(used_idx(BLK, 0), 0);
	EXPECT_TRUE(vblk_kick(&tvm, BLK, false));
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	EXPECT_EQ(b->posted, 0U);
	/* the guest's notify finds the lock held the same way: its exit waits
	 * for it, and takes what was posted meanwhile */
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	spin_lock(&b->dev.lock);
	EXPECT_FALSE(vblk_kick(&tvm, BLK, true));	/* a kick never waits either */
	disk_complete_one(VIRTIO_BLK_S_OK);
	spin_unlock(&b->dev.lock);
	notify(BLK, 0);
	EXPECT_EQ(used_idx(BLK, 0), 2);
	vm_free();
}

TEST(vblk_second_completion_of_a_request_ignored)
{
	struct vblk_io *io;

	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = 4;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	io = disk.held[0];
	disk_complete_one(VIRTIO_BLK_S_OK);
	*(uint8_t *)guest(STATUS, 1) = 0xee;	/* the driver reuses the byte */
	vblk_complete(io, VIRTIO_BLK_S_IOERR);	/* a backend's bug */
	EXPECT_EQ(status_byte(), 0xee);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(((struct vblk *)tvm.vio[BLK])->b.stats.requests, 1);
	EXPECT_EQ(((struct vblk *)tvm.vio[BLK])->b.stats.errors, 0);
	vm_free();
}

TEST(vblk_backend_full_kept_and_retried_after_a_completion)
{
	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = 1;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	blk_request(VIRTIO_BLK_T_IN, 1, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.nr_held, 1);
	EXPECT_EQ(disk.busy_answers, 1);
	disk_complete_one(VIRTIO_BLK_S_OK);
	/* the kept request went in at that completion */
	EXPECT_EQ(disk.nr_held, 1);
	EXPECT_EQ(disk.held[0]->sector, 1);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	disk_complete_one(VIRTIO_BLK_S_OK);
	EXPECT_EQ(used_idx(BLK, 0), 2);
	vm_free();
}

TEST(vblk_in_flight_limit)
{
	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = VBLK_INFLIGHT + 1;
	for (unsigned int i = 0; i < VBLK_INFLIGHT + 4; i++) {
		struct seg s[3] = { { HDR + 16 * i, VIRTIO_BLK_HDR_SIZE, false },
				    { DATA + 0x1000 * i, VIRTIO_BLK_SECTOR, true },
				    { STATUS + i, 1, true } };

		blk_hdr(HDR + 16 * i, VIRTIO_BLK_T_IN, i);
		offer(BLK, 0, s, 3);
	}
	notify(BLK, 0);
	EXPECT_EQ(disk.nr_held, VBLK_INFLIGHT);
	EXPECT_EQ(tvm.vio[BLK]->s.q[0].in_flight, VBLK_INFLIGHT);
	/* a completion frees a slot: the next chain is taken */
	disk_complete_one(VIRTIO_BLK_S_OK);
	EXPECT_EQ(disk.nr_held, VBLK_INFLIGHT);
	EXPECT_EQ(disk.submits, VBLK_INFLIGHT + 1);
	vm_free();
}

TEST(vblk_reset_mid_request_drops_its_completion)
{
	uint16_t used_before;

	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = 4;
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.nr_held, 1);
	wr(BLK, VIRTIO_MMIO_STATUS, 0);
	EXPECT_FALSE(vio_quiesce(&tvm));	/* the host device still has it */
	used_before = used_idx(BLK, 0);
	disk_complete_one(VIRTIO_BLK_S_OK);
	EXPECT_EQ(status_byte(), 0xff);		/* nothing told to the new driver */
	EXPECT_EQ(used_idx(BLK, 0), used_before);
	EXPECT_EQ(rd(BLK, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	EXPECT_TRUE(vio_quiesce(&tvm));
	/* the device works again after a new init */
	memset(guest(used_at(BLK, 0), 4 + 8 * QSIZE), 0, 4 + 8 * QSIZE);
	memset(guest(avail_at(BLK, 0), 4 + 2 * QSIZE), 0, 4 + 2 * QSIZE);
	next_desc[BLK][0] = 0;
	driver_init(BLK, 1);
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	disk_complete_one(VIRTIO_BLK_S_OK);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	vm_free();
}

/* A reset while the host device holds every slot: the new driver's first
 * request waits for a slot, and gets the first one an old request frees
 * (found by tests/guests/test_vio.py: without it, it waited for a notify
 * that a polled driver never sends again). */
/* A device reset and a new driver on fresh rings, as after a guest's
 * reboot of its driver. */
static void new_blk_driver(void)
{
	wr(BLK, VIRTIO_MMIO_STATUS, 0);
	memset(guest(used_at(BLK, 0), 4 + 8 * QSIZE), 0, 4 + 8 * QSIZE);
	memset(guest(avail_at(BLK, 0), 4 + 2 * QSIZE), 0, 4 + 2 * QSIZE);
	next_desc[BLK][0] = 0;
	driver_init(BLK, 1);
}

TEST(vblk_request_after_a_reset_taken_when_an_old_one_completes)
{
	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = VBLK_INFLIGHT + 1;
	for (unsigned int i = 0; i < VBLK_INFLIGHT; i++) {
		struct seg s[3] = { { HDR + 16 * i, VIRTIO_BLK_HDR_SIZE, false },
				    { DATA + 0x1000 * i, VIRTIO_BLK_SECTOR, true },
				    { STATUS + 1 + i, 1, true } };

		blk_hdr(HDR + 16 * i, VIRTIO_BLK_T_IN, i);
		offer(BLK, 0, s, 3);
	}
	notify(BLK, 0);
	EXPECT_EQ(disk.nr_held, VBLK_INFLIGHT);
	new_blk_driver();
	blk_request(VIRTIO_BLK_T_OUT, 3, VIRTIO_BLK_SECTOR, false);
	EXPECT_EQ(disk.submits, VBLK_INFLIGHT);		/* no free slot yet */
	disk_complete_one(VIRTIO_BLK_S_OK);		/* an old one: dropped, its slot free */
	/* the waiting request is taken, but the backend gets it only once every
	 * old request is done: the reset is not over before */
	while (disk.nr_held > 1) {
		EXPECT_EQ(disk.submits, VBLK_INFLIGHT);
		disk_complete_one(VIRTIO_BLK_S_OK);
	}
	disk_complete_one(VIRTIO_BLK_S_OK);		/* the last old one */
	EXPECT_EQ(disk.submits, VBLK_INFLIGHT + 1);	/* at once */
	EXPECT_EQ(disk.last_type, VIRTIO_BLK_T_OUT);
	EXPECT_EQ(disk.nr_held, 1);
	disk_complete_one(VIRTIO_BLK_S_OK);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	vm_free();
}

/* The class behind a corrupt file system after a guest rebooted with a
 * write at the host: an old driver's write still at the backend, a device
 * reset, the new driver writes the same sector. The new write reaches the
 * backend only after the old one finished, so it is the one that stays. */
TEST(vblk_a_new_drivers_write_waits_for_the_old_drivers_write)
{
	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = 4;
	blk_request(VIRTIO_BLK_T_OUT, 7, VIRTIO_BLK_SECTOR, false);
	EXPECT_EQ(disk.submits, 1);
	new_blk_driver();
	blk_request(VIRTIO_BLK_T_OUT, 7, VIRTIO_BLK_SECTOR, false);
	notify(BLK, 0);			/* a notify more changes nothing */
	EXPECT_EQ(disk.submits, 1);
	EXPECT_EQ(disk.nr_held, 1);
	disk_complete_one(VIRTIO_BLK_S_OK);	/* the old write: done, dropped */
	EXPECT_EQ(disk.submits, 2);		/* the new one handed out at once */
	EXPECT_EQ(used_idx(BLK, 0), 0);
	disk_complete_one(VIRTIO_BLK_S_OK);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	vm_free();
}

TEST(vblk_read_data_pages_dirty_again_at_completion)
{
	uint64_t log[RAM_SIZE / PAGE_SIZE / 64];
	uint64_t page = (DATA - RAM) / PAGE_SIZE;

	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = 4;
	EXPECT_EQ(vm_dirty_log_start(&tvm), 0);
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	/* a last take of the log between submit and completion (its sticky
	 * bits, the pages mapped for writing at submit, go too) */
	vm_dirty_log_take(&tvm, log, true);
	disk_complete_one(VIRTIO_BLK_S_OK);
	memset(log, 0, sizeof(log));
	vm_dirty_log_take(&tvm, log, false);
	EXPECT_TRUE(log[page / 64] & (1ULL << (page % 64)));
	vm_free();
}

/* A live snapshot runs (RAM write-protected, a copy-before-write hook): the
 * chunk a read will land in (chunk 1; the rings, header and status byte are
 * in chunk 0) is copied before the host device gets the request. */
TEST(vblk_read_buffers_copied_for_a_live_snapshot_before_submit)
{
	gpa_t data = RAM + SZ_2M;
	struct seg s[3] = { { HDR, VIRTIO_BLK_HDR_SIZE, false }, { data, VIRTIO_BLK_SECTOR, true },
			    { STATUS, 1, true } };

	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = 4;
	guest(BUF, 1);
	guest(data, 1);		/* both chunks populated before the snapshot */
	cow_chunks = 0;
	tvm.cow = note_cow;
	EXPECT_EQ(vm_ram_write_protect(&tvm), 2);
	blk_hdr(HDR, VIRTIO_BLK_T_IN, 0);
	offer(BLK, 0, s, 3);
	notify(BLK, 0);
	EXPECT_EQ(disk.submits, 1);
	EXPECT_TRUE(disk.cow_at_submit & 2);	/* chunk 1 */
	disk_complete_one(VIRTIO_BLK_S_OK);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	tvm.cow = NULL;
	vm_free();
}

TEST(vblk_second_device_same_slot_refused)
{
	blk_new();
	EXPECT_EQ(vio_attach_blk(&tvm, BLK, &disk_ops, &disk), -HYP_EEXIST);
	EXPECT_EQ(vio_attach_blk(&tvm, VIO_MMIO_SLOTS, &disk_ops, &disk), -HYP_EINVAL);
	EXPECT_EQ(tvm.nr_mmio, 1);
	vm_free();
}

/* ---- virtio-net ---- */

#define TXB	(BUF + 0x10000)
#define RXB	(BUF + 0x20000)

static struct vnet *net;

static void net_ready(void)
{
	vm_new();
	port.allow = -1;
	port.refused = 0;
	EXPECT_EQ(vio_attach_net(&tvm, NET, mac, &port_ops, &port), 0);
	net = vnet_of(&tvm, NET);
	EXPECT_TRUE(net != NULL);
	driver_init(NET, 2);
}

/* a frame of @len bytes after a header whose first bytes are @flags, @gso */
static void tx_frame(uint32_t len, uint8_t flags, uint8_t gso)
{
	uint8_t *p = guest(TXB, VNET_HDR_SIZE + len);
	struct seg s = { TXB, VNET_HDR_SIZE + len, false };

	memset(p, 0, VNET_HDR_SIZE);
	p[0] = flags;
	p[1] = gso;
	for (uint32_t i = 0; i < len; i++)
		p[VNET_HDR_SIZE + i] = (uint8_t)(i + 1);
	offer(NET, VNET_TXQ, &s, 1);
	notify(NET, VNET_TXQ);
}

TEST(vnet_init_and_config)
{
	net_ready();
	EXPECT_EQ(rd(NET, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_NET);
	wr(NET, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	EXPECT_EQ(rd(NET, VIRTIO_MMIO_DEVICE_FEATURES),
		  (1U << VIRTIO_NET_F_MAC) | (1U << VIRTIO_NET_F_STATUS));
	for (unsigned int i = 0; i < 6; i++)
		EXPECT_EQ(access(NET, VIRTIO_MMIO_CONFIG + i, 1, false, 0), mac[i]);
	EXPECT_EQ(access(NET, VIRTIO_MMIO_CONFIG + 6, 2, false, 0), VIRTIO_NET_S_LINK_UP);
	EXPECT_TRUE(vnet_of(&tvm, BLK) == NULL);
	vm_free();
}

TEST(vnet_tx_frame_copied_to_the_port)
{
	net_ready();
	tx_frame(60, 0, 0);
	EXPECT_EQ(port.frames, 1);
	EXPECT_EQ(port.len, 60);
	EXPECT_EQ(port.frame[0], 1);
	EXPECT_EQ(port.frame[59], 60);
	EXPECT_EQ(used_idx(NET, VNET_TXQ), 1);
	EXPECT_EQ(used_elem(NET, VNET_TXQ, 0).len, 0);
	EXPECT_EQ(net->n.tx.requests, 1);
	EXPECT_EQ(net->n.tx.bytes, 60);
	EXPECT_EQ(rd(NET, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_VRING);
	vm_free();
}

/* The port's rate limit holds frames in the guest's queue, in order, never
 * dropped: nothing used, nothing counted; the guest's next notify or a kick
 * sends them (a kick at most VNET_KICK_BUDGET). */
TEST(vnet_tx_rate_limit_holds_frames_in_the_queue)
{
	net_ready();
	port.allow = 1;
	tx_frame(60, 0, 0);
	tx_frame(61, 0, 0);
	tx_frame(62, 0, 0);
	EXPECT_EQ(port.frames, 1);
	EXPECT_EQ(port.len, 60);
	EXPECT_EQ(used_idx(NET, VNET_TXQ), 1);		/* the others stay the guest's */
	EXPECT_EQ(net->n.tx.requests, 1);
	EXPECT_EQ(net->n.tx.drops + net->n.tx.errors, 0);
	EXPECT_TRUE(port.refused >= 1);
	port.allow = 1;
	EXPECT_EQ(vnet_kick(&tvm, NET), VNET_TX_DONE);	/* the limit holds the third */
	EXPECT_EQ(port.frames, 2);
	EXPECT_EQ(port.len, 61);			/* in order */
	for (unsigned int i = 0; i < VNET_KICK_BUDGET + 2; i++)
		tx_frame(100 + i, 0, 0);		/* a notify each: all held */
	EXPECT_EQ(port.frames, 2);
	port.allow = -1;
	EXPECT_EQ(vnet_kick(&tvm, NET), VNET_TX_MORE);	/* a kick's budget, more waiting */
	EXPECT_EQ(port.frames, 2 + VNET_KICK_BUDGET);
	EXPECT_EQ(rd(NET, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_VRING);
	EXPECT_EQ(port.len, 100 + VNET_KICK_BUDGET - 2);
	notify(NET, VNET_TXQ);
	EXPECT_EQ(port.frames, 3 + VNET_KICK_BUDGET + 2);
	EXPECT_EQ(port.len, 100 + VNET_KICK_BUDGET + 1);
	EXPECT_EQ(used_idx(NET, VNET_TXQ), 3 + VNET_KICK_BUDGET + 2);
	EXPECT_EQ(net->n.tx.drops + net->n.tx.errors, 0);
	EXPECT_EQ(vnet_kick(&tvm, NET), VNET_TX_DONE);	/* nothing waits */
	spin_lock(&net->dev.lock);			/* another hart's */
	EXPECT_EQ(vnet_kick(&tvm, NET), VNET_TX_BUSY);
	spin_unlock(&net->dev.lock);
	/* a frame of a size the switch never gets: dropped at once, not held;
	 * one of a size it may get costs its tokens even if its header turns
	 * out wrong (held, then dropped) */
	port.allow = 0;
	tx_frame(VNET_FRAME_MAX + 1, 0, 0);
	EXPECT_EQ(net->n.tx.errors, 1);
	tx_frame(60, 1, 0);
	EXPECT_EQ(net->n.tx.errors, 1);
	EXPECT_EQ(used_idx(NET, VNET_TXQ), 4 + VNET_KICK_BUDGET + 2);
	port.allow = 1;
	notify(NET, VNET_TXQ);
	EXPECT_EQ(net->n.tx.errors, 2);
	EXPECT_EQ(port.allow, 0);
	EXPECT_EQ(used_idx(NET, VNET_TXQ), 5 + VNET_KICK_BUDGET + 2);
	vm_free();
}

TEST(vnet_tx_header_with_offload_dropped)
{
	net_ready();
	tx_frame(60, 1, 0);	/* NEEDS_CSUM */
	tx_frame(60, 0, 1);	/* GSO_TCPV4 */
	EXPECT_EQ(port.frames, 0);
	EXPECT_EQ(net->n.tx.errors, 2);
	EXPECT_EQ(used_idx(NET, VNET_TXQ), 2);	/* the buffers go back */
	vm_free();
}

TEST(vnet_tx_frame_size_limits)
{
	net_ready();
	tx_frame(VNET_FRAME_MIN - 1, 0, 0);
	tx_frame(VNET_FRAME_MAX + 1, 0, 0);
	EXPECT_EQ(port.frames, 0);
	EXPECT_EQ(net->n.tx.errors, 2);
	tx_frame(VNET_FRAME_MIN, 0, 0);
	tx_frame(VNET_FRAME_MAX, 0, 0);
	EXPECT_EQ(port.frames, 2);
	EXPECT_EQ(port.len, VNET_FRAME_MAX);
	vm_free();
}

TEST(vnet_tx_writable_buffer_dropped)
{
	struct seg s[2] = { { TXB, VNET_HDR_SIZE + 60, false }, { TXB + 0x800, 64, true } };

	net_ready();
	memset(guest(TXB, VNET_HDR_SIZE), 0, VNET_HDR_SIZE);
	offer(NET, VNET_TXQ, s, 2);
	notify(NET, VNET_TXQ);
	EXPECT_EQ(port.frames, 0);
	EXPECT_EQ(net->n.tx.errors, 1);
	vm_free();
}

TEST(vnet_rx_frame_written_with_header)
{
	struct seg s = { RXB, VNET_HDR_SIZE + VNET_FRAME_MAX, true };
	uint8_t frame[64], *p;

	net_ready();
	for (unsigned int i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)(0x80 + i);
	memset(guest(RXB, VNET_HDR_SIZE), 0xee, VNET_HDR_SIZE);
	offer(NET, VNET_RXQ, &s, 1);
	vnet_rx_deliver(net, frame, sizeof(frame));
	p = guest(RXB, VNET_HDR_SIZE + sizeof(frame));
	EXPECT_EQ(p[0], 0);
	EXPECT_EQ(p[1], 0);
	EXPECT_EQ(p[10], 1);	/* num_buffers */
	EXPECT_EQ(p[11], 0);
	EXPECT_EQ(memcmp(p + VNET_HDR_SIZE, frame, sizeof(frame)), 0);
	EXPECT_EQ(used_idx(NET, VNET_RXQ), 1);
	EXPECT_EQ(used_elem(NET, VNET_RXQ, 0).len, VNET_HDR_SIZE + sizeof(frame));
	EXPECT_EQ(net->n.rx.requests, 1);
	EXPECT_EQ(rd(NET, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_VRING);
	vm_free();
}

TEST(vnet_rx_no_buffer_dropped)
{
	uint8_t frame[64] = { 0 };

	net_ready();
	vnet_rx_deliver(net, frame, sizeof(frame));
	EXPECT_EQ(net->n.rx.drops, 1);
	EXPECT_EQ(used_idx(NET, VNET_RXQ), 0);
	vm_free();
}

TEST(vnet_rx_buffer_too_small_given_back_empty)
{
	struct seg s = { RXB, VNET_HDR_SIZE + 32, true };
	uint8_t frame[64] = { 0 };

	net_ready();
	*(uint8_t *)guest(RXB + VNET_HDR_SIZE + 32, 1) = 0x77;
	offer(NET, VNET_RXQ, &s, 1);
	vnet_rx_deliver(net, frame, sizeof(frame));
	EXPECT_EQ(net->n.rx.drops, 1);
	EXPECT_EQ(net->n.rx.errors, 1);
	EXPECT_EQ(used_idx(NET, VNET_RXQ), 1);
	EXPECT_EQ(used_elem(NET, VNET_RXQ, 0).len, 0);
	EXPECT_EQ(*(uint8_t *)guest(RXB + VNET_HDR_SIZE + 32, 1), 0x77);	/* nothing past it */
	vm_free();
}

TEST(vnet_rx_readable_buffer_refused)
{
	struct seg s[2] = { { RXB, 16, false }, { RXB + 0x1000, 2048, true } };
	uint8_t frame[64] = { 0 };

	net_ready();
	offer(NET, VNET_RXQ, s, 2);
	vnet_rx_deliver(net, frame, sizeof(frame));
	EXPECT_EQ(net->n.rx.errors, 1);
	EXPECT_EQ(used_elem(NET, VNET_RXQ, 0).len, 0);
	vm_free();
}

/* queues set up, features accepted, DRIVER_OK not yet set */
static void net_queues_without_driver_ok(void)
{
	vm_new();
	EXPECT_EQ(vio_attach_net(&tvm, NET, mac, &port_ops, &port), 0);
	net = vnet_of(&tvm, NET);
	wr(NET, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(NET, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(NET, VIRTIO_MMIO_DRIVER_FEATURES, 1);
	wr(NET, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
				    VIRTIO_STATUS_FEATURES_OK);
	setup_queue(NET, VNET_RXQ);
	setup_queue(NET, VNET_TXQ);
}

TEST(vnet_rx_dropped_before_driver_ok)
{
	struct seg s = { RXB, 2048, true };
	uint8_t frame[64] = { 0 };

	net_queues_without_driver_ok();
	offer(NET, VNET_RXQ, &s, 1);
	vnet_rx_deliver(net, frame, sizeof(frame));
	EXPECT_EQ(net->n.rx.drops, 1);
	EXPECT_EQ(used_idx(NET, VNET_RXQ), 0);
	vm_free();
}

TEST(vnet_tx_nothing_before_driver_ok)
{
	net_queues_without_driver_ok();
	tx_frame(60, 0, 0);
	EXPECT_EQ(port.frames, 0);
	EXPECT_EQ(used_idx(NET, VNET_TXQ), 0);
	vm_free();
}

TEST(vnet_rx_dropped_while_paused)
{
	struct seg s = { RXB, 2048, true };
	uint8_t frame[64] = { 0 };

	net_ready();
	offer(NET, VNET_RXQ, &s, 1);
	tvm.state = VM_PAUSED;
	vnet_rx_deliver(net, frame, sizeof(frame));
	EXPECT_EQ(net->n.rx.drops, 1);
	EXPECT_EQ(used_idx(NET, VNET_RXQ), 0);
	tvm.state = VM_RUNNING;
	vnet_rx_deliver(net, frame, sizeof(frame));
	EXPECT_EQ(used_idx(NET, VNET_RXQ), 1);
	vm_free();
}

TEST(vnet_detach_link_down_with_config_interrupt)
{
	uint32_t gen;

	net_ready();
	gen = rd(NET, VIRTIO_MMIO_CONFIG_GENERATION);
	vnet_port_detach(net);
	EXPECT_EQ(access(NET, VIRTIO_MMIO_CONFIG + 6, 2, false, 0), 0);
	EXPECT_EQ(rd(NET, VIRTIO_MMIO_CONFIG_GENERATION), gen + 1);
	EXPECT_EQ(rd(NET, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	EXPECT_TRUE(line[VIO_MMIO_IRQ(NET)]);
	tx_frame(60, 0, 0);
	EXPECT_EQ(port.frames, 0);
	EXPECT_EQ(net->n.tx.drops, 1);
	vm_free();
}

TEST(vnet_tx_queue_fault_needs_reset)
{
	struct seg s = { RAM + RAM_SIZE - 8, 16, false };	/* past the end of RAM */

	net_ready();
	offer(NET, VNET_TXQ, &s, 1);
	notify(NET, VNET_TXQ);
	EXPECT_TRUE(rd(NET, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	EXPECT_EQ(tvm.vio[NET]->s.q[VNET_TXQ].fault, VIRTQ_FAULT_BUF_RAM);
	EXPECT_EQ(port.frames, 0);
	vm_free();
}

/* ---- device state: snapshots and migrations (docs/snapshot-format.md, "VIRTIO") ---- */

#define COPY	1	/* the slot a restored copy of the device in BLK goes to */
#define NET_COPY 4	/* and of the NIC in NET */

static struct snap_dev_virtio_blk blk_state;
static struct snap_dev_virtio_net net_state;

/* The model's check of @state: the message it gives (NULL: accepted) and
 * the offset it names. */
static const char *blk_check(const struct snap_dev_virtio_blk *s, uint32_t *offset)
{
	*offset = ~0U;
	return virtio_blk_model.check(&tvm, s, offset);
}

/* A disk that did a read (its interrupt pending) and has a second request
 * made available while it was frozen for the snapshot. */
static void blk_saved(void)
{
	blk_ready();
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	vio_freeze(&tvm);
	blk_request(VIRTIO_BLK_T_IN, 1, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.submits, 1);		/* frozen: left in the ring */
	EXPECT_TRUE(vio_drained(&tvm));
	virtio_blk_model.save(tvm.vio[BLK], &blk_state);
}

TEST(vblk_state_round_trip_and_rescan)
{
	struct snap_dev_virtio_blk again;
	uint32_t offset;

	blk_saved();
	EXPECT_EQ(blk_state.q_next_avail[0], 1);
	EXPECT_EQ(blk_state.q_next_used[0], 1);
	EXPECT_EQ(blk_state.interrupt_status, VIRTIO_MMIO_INT_VRING);
	EXPECT_EQ(blk_state.capacity, DISK_SECTORS);
	EXPECT_EQ(blk_state.requests, 1);
	EXPECT_TRUE(!strcmp(blk_state.serial, "vm0-vda"));
	EXPECT_TRUE(blk_check(&blk_state, &offset) == NULL);
	/* the original goes; a copy of it comes up elsewhere, as a restore makes it */
	wr(BLK, VIRTIO_MMIO_STATUS, 0);
	EXPECT_EQ(vio_attach_blk(&tvm, COPY, &disk_ops, &disk), 0);
	virtio_blk_model.load(tvm.vio[COPY], &blk_state);
	virtio_blk_model.save(tvm.vio[COPY], &again);
	EXPECT_EQ(memcmp(&again, &blk_state, sizeof(again)), 0);
	EXPECT_TRUE(line[VIO_MMIO_IRQ(COPY)]);	/* the pending interrupt, raised again */
	EXPECT_EQ(rd(COPY, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_VRING);
	EXPECT_EQ(access(COPY, VIRTIO_MMIO_CONFIG, 8, false, 0), DISK_SECTORS);
	/* the request made available before the snapshot is served at the start */
	vio_resume(&tvm);
	EXPECT_EQ(disk.submits, 2);
	EXPECT_EQ(used_idx(BLK, 0), 2);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	EXPECT_EQ(memcmp(guest(DATA, VIRTIO_BLK_SECTOR), disk.data + VIRTIO_BLK_SECTOR,
			 VIRTIO_BLK_SECTOR), 0);
	vm_free();
}

TEST(vblk_drain_waits_for_the_backend_and_throttled_requests)
{
	unsigned int submits;

	blk_ready();
	disk.mode = DISK_LATER;
	disk.room = 0;				/* full: the request waits, READY */
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.busy_answers, 1);
	vio_freeze(&tvm);
	EXPECT_FALSE(vio_drained(&tvm));	/* taken, not published */
	disk.room = 4;
	EXPECT_FALSE(vio_drained(&tvm));	/* handed out now, with the backend */
	EXPECT_EQ(disk.nr_held, 1);
	disk_complete_one(VIRTIO_BLK_S_OK);
	EXPECT_TRUE(vio_drained(&tvm));
	EXPECT_EQ(used_idx(BLK, 0), 1);
	EXPECT_EQ(status_byte(), VIRTIO_BLK_S_OK);
	/* a notify while frozen takes nothing new */
	submits = disk.submits;
	blk_request(VIRTIO_BLK_T_IN, 1, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.submits, submits);
	EXPECT_EQ(tvm.vio[BLK]->s.q[0].next_avail, 1);
	vio_resume(&tvm);
	EXPECT_EQ(tvm.vio[BLK]->s.q[0].next_avail, 2);
	EXPECT_EQ(disk.nr_held, 1);
	vm_free();
}

/* Each field of a saved state set to what no guest write can leave there:
 * the model refuses it naming that field. */
TEST(vblk_state_refusals)
{
	struct snap_dev_virtio_blk s;
	uint32_t offset;
	const char *why;

#define REFUSED(field, mutate, words) do {						\
		s = blk_state;								\
		mutate;									\
		why = blk_check(&s, &offset);						\
		EXPECT_TRUE(why != NULL && strstr(why, words) != NULL);			\
		EXPECT_EQ(offset, offsetof(struct snap_dev_virtio_blk, field));		\
	} while (0)
	blk_saved();
	/* queue addresses: outside RAM, wrapping, at its end, misaligned */
	REFUSED(q_desc, s.q_desc[0] = RAM - 0x1000, "not inside the VM's RAM");
	REFUSED(q_desc, s.q_desc[0] = 0xfffffffffffff000ULL, "not inside the VM's RAM");
	REFUSED(q_desc, s.q_desc[0] = RAM + 8, "16-byte aligned");
	REFUSED(q_avail, s.q_avail[0] = RAM + RAM_SIZE - 2, "not inside the VM's RAM");
	REFUSED(q_used, s.q_used[0] = RAM + RAM_SIZE - 8 * QSIZE, "not inside the VM's RAM");
	REFUSED(q_used, s.q_used[0] = VIO_MMIO_BASE, "not inside the VM's RAM");
	REFUSED(q_used, s.q_used[0] += 2, "4-byte aligned");
	/* sizes: a power of two, at most the device's maximum */
	REFUSED(q_size, s.q_size[0] = 48, "power of two");
	REFUSED(q_size, s.q_size[0] = 0, "power of two");
	REFUSED(q_size, s.q_size[0] = 2 * VBLK_QUEUE_SIZE, "power of two up to the device's maximum");
	/* indices: nothing in flight on a healthy queue; 0 on one not ready */
	REFUSED(q_next_used, s.q_next_used[0] = 0, "in flight");
	REFUSED(q_next_used, s.q_next_avail[0] = 7, "in flight");
	REFUSED(q_next_avail, (s.q_ready[0] = 0, s.q_next_avail[0] = s.q_next_used[0] = 3),
		"not ready has taken no chain");
	REFUSED(q_next_used, (s.q_fault[0] = VIRTQ_FAULT_LOOP,
			      s.status |= VIRTIO_STATUS_NEEDS_RESET,
			      s.q_next_avail[0] = (uint32_t)(s.q_next_used[0] + QSIZE + 1)),
		"more chains in flight than the queue holds");
	/* features: the offer, and with FEATURES_OK a subset of it with VERSION_1 */
	REFUSED(driver_features, s.driver_features |= 1ULL << 28, "subset of device_features");
	REFUSED(driver_features, s.driver_features &= ~(1ULL << VIRTIO_F_VERSION_1), "VERSION_1");
	REFUSED(device_features, s.device_features |= 1ULL << 28, "not what the device offers");
	REFUSED(device_features, s.read_only = 1, "not what the device offers");
	/* status: what a driver can reach */
	REFUSED(status, s.status &= ~VIRTIO_STATUS_FEATURES_OK, "DRIVER_OK without FEATURES_OK");
	REFUSED(interrupt_status, s.status = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER,
		"before DRIVER_OK");
	/* faults: where they happen, with NEEDS_RESET */
	REFUSED(q_fault, s.q_fault[0] = VIRTQ_FAULT_LOOP, "NEEDS_RESET");
	REFUSED(q_fault, (s.q_fault[0] = VIRTQ_FAULT_RING_RAM, s.status |= VIRTIO_STATUS_NEEDS_RESET),
		"configuration fault on a ready queue");
	REFUSED(q_fault, (s.q_fault[0] = VIRTQ_FAULT_LOOP, s.q_ready[0] = 0,
			  s.q_next_avail[0] = s.q_next_used[0] = 0,
			  s.status |= VIRTIO_STATUS_NEEDS_RESET), "queue that is not ready");
	/* a queue a disk does not have */
	REFUSED(q_desc[1], s.q_size[1] = 1, "does not have");
	/* the disk itself */
	REFUSED(seg_max, s.seg_max = 0, "1..254");
	REFUSED(seg_max, s.seg_max = VBLK_SEG_MAX + 1, "1..254");
	REFUSED(serial, memcpy(s.serial, "vm0-vdz", 8), "GET_ID");
	REFUSED(serial, s.serial[19] = 'x', "GET_ID");
	REFUSED(serial, memcpy(s.serial, "VM0-vda", 8), "GET_ID");
#undef REFUSED
	/* and what a guest can reach is accepted: junk features before FEATURES_OK,
	 * a fault kept after a queue reset, any selector */
	s = blk_state;
	s.status = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_NEEDS_RESET;
	s.interrupt_status = 0;
	s.driver_features = ~0ULL;
	s.queue_sel = 0xdeadbeef;
	s.q_ready[0] = 0;
	s.q_next_avail[0] = s.q_next_used[0] = 0;
	s.q_size[0] = 0xffff;
	s.q_desc[0] = ~0ULL;
	EXPECT_TRUE(blk_check(&s, &offset) == NULL);
	vm_free();
}

TEST(vnet_state_round_trip_and_rescan)
{
	struct snap_dev_virtio_net again;
	uint32_t offset;
	struct vnet *copy;

	net_ready();
	tx_frame(60, 0, 0);
	EXPECT_EQ(port.frames, 1);
	vio_freeze(&tvm);
	tx_frame(70, 0, 0);			/* made available just before the snapshot */
	EXPECT_EQ(port.frames, 1);
	vnet_rx_deliver(net, port.frame, 60);	/* frozen: not written into the guest */
	EXPECT_EQ(net->n.rx.drops, 1);
	EXPECT_TRUE(vio_drained(&tvm));
	virtio_net_model.save(tvm.vio[NET], &net_state);
	EXPECT_EQ(net_state.q_next_avail[VNET_TXQ], 1);
	EXPECT_EQ(net_state.tx_requests, 1);
	EXPECT_EQ(net_state.rx_drops, 1);
	EXPECT_EQ(net_state.link, VIRTIO_NET_S_LINK_UP);
	EXPECT_EQ(memcmp(net_state.mac, mac, 6), 0);
	memcpy(net_state.switch_name, "lan", 4);	/* the host side's (snap_vio.c) */
	offset = ~0U;
	EXPECT_TRUE(virtio_net_model.check(&tvm, &net_state, &offset) == NULL);
	wr(NET, VIRTIO_MMIO_STATUS, 0);
	EXPECT_EQ(vio_attach_net(&tvm, NET_COPY, mac, &port_ops, &port), 0);
	copy = vnet_of(&tvm, NET_COPY);
	virtio_net_model.load(&copy->dev, &net_state);
	virtio_net_model.save(&copy->dev, &again);
	memcpy(again.switch_name, "lan", 4);
	EXPECT_EQ(memcmp(&again, &net_state, sizeof(again)), 0);
	EXPECT_TRUE(line[VIO_MMIO_IRQ(NET_COPY)]);
	vio_resume(&tvm);
	EXPECT_EQ(port.frames, 2);
	EXPECT_EQ(port.len, 70);
	EXPECT_EQ(used_idx(NET, VNET_TXQ), 2);
	/* a new MAC for a copy beside its original: shown, and told */
	wr(NET_COPY, VIRTIO_MMIO_INTERRUPT_ACK, 3);
	vnet_set_mac(copy, (const uint8_t[6]){ 0x52, 0x54, 0, 1, 2, 3 });
	EXPECT_EQ(access(NET_COPY, VIRTIO_MMIO_CONFIG + 5, 1, false, 0), 3);
	EXPECT_EQ(rd(NET_COPY, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	EXPECT_EQ(rd(NET_COPY, VIRTIO_MMIO_CONFIG_GENERATION), net_state.config_generation + 1);
	vm_free();
}

TEST(vnet_state_refusals)
{
	struct snap_dev_virtio_net s;
	uint32_t offset;
	const char *why;

#define REFUSED(field, mutate, words) do {						\
		s = net_state;								\
		mutate;									\
		offset = ~0U;								\
		why = virtio_net_model.check(&tvm, &s, &offset);			\
		EXPECT_TRUE(why != NULL && strstr(why, words) != NULL);			\
		EXPECT_EQ(offset, offsetof(struct snap_dev_virtio_net, field));		\
	} while (0)
	net_ready();
	virtio_net_model.save(tvm.vio[NET], &net_state);
	REFUSED(mac, s.mac[0] = 0x01, "unicast");
	REFUSED(mac, memset(s.mac, 0, 6), "unicast");
	REFUSED(switch_name, memset(s.switch_name, 0, sizeof(s.switch_name)), "switch_name");
	memcpy(net_state.switch_name, "lan", 4);
	REFUSED(switch_name, s.switch_name[0] = 'L', "switch_name");
	REFUSED(switch_name, memset(s.switch_name, 'a', sizeof(s.switch_name)), "switch_name");
	REFUSED(q_size[1], s.q_size[1] = 512, "maximum");
	REFUSED(q_used[1], s.q_used[1] = RAM + RAM_SIZE - 4, "not inside the VM's RAM");
	REFUSED(device_features, s.device_features = 1ULL << VIRTIO_F_VERSION_1, "offers");
#undef REFUSED
	vm_free();
}

/* A reboot that overtook a pause (the guest reset the VM while its vCPU was
 * still leaving): the new boot's devices take chains again. */
TEST(vio_reboot_unfreezes)
{
	blk_ready();
	vio_freeze(&tvm);
	vio_reset_all(&tvm);
	driver_init(BLK, 1);
	blk_request(VIRTIO_BLK_T_IN, 0, VIRTIO_BLK_SECTOR, true);
	EXPECT_EQ(disk.submits, 1);
	EXPECT_EQ(used_idx(BLK, 0), 1);
	vm_free();
}
