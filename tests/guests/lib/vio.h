/* SPDX-License-Identifier: MIT */
/* A minimal polled virtio-mmio version 2 driver for the test payloads
 * (virtio 1.2 sections 2.7 and 4.2): find a device in QEMU virt's eight
 * slots, negotiate, set up split queues in the payload's own memory, and
 * hand out the raw rings so that attack payloads can write anything into
 * them. The same payload runs on bare QEMU (QEMU's own virtio-mmio devices)
 * and under Carapace (its device models): the parity of the two is a test. */
#ifndef GUEST_VIO_H
#define GUEST_VIO_H

#include "guest.h"

#define VIO_MMIO_BASE		0x10001000UL
#define VIO_MMIO_STRIDE		0x1000UL
#define VIO_SLOTS		8

/* registers (4.2.2) */
#define VIO_MAGIC		0x000
#define VIO_VERSION		0x004
#define VIO_DEVICE_ID		0x008
#define VIO_VENDOR_ID		0x00c
#define VIO_DEV_FEATURES	0x010
#define VIO_DEV_FEATURES_SEL	0x014
#define VIO_DRV_FEATURES	0x020
#define VIO_DRV_FEATURES_SEL	0x024
#define VIO_QUEUE_SEL		0x030
#define VIO_QUEUE_NUM_MAX	0x034
#define VIO_QUEUE_NUM		0x038
#define VIO_QUEUE_READY		0x044
#define VIO_QUEUE_NOTIFY	0x050
#define VIO_INT_STATUS		0x060
#define VIO_INT_ACK		0x064
#define VIO_STATUS		0x070
#define VIO_QUEUE_DESC_LO	0x080
#define VIO_QUEUE_DESC_HI	0x084
#define VIO_QUEUE_DRIVER_LO	0x090
#define VIO_QUEUE_DRIVER_HI	0x094
#define VIO_QUEUE_DEVICE_LO	0x0a0
#define VIO_QUEUE_DEVICE_HI	0x0a4
#define VIO_CONFIG_GEN		0x0fc
#define VIO_CONFIG		0x100

#define VIO_S_ACK		1
#define VIO_S_DRIVER		2
#define VIO_S_DRIVER_OK		4
#define VIO_S_FEATURES_OK	8
#define VIO_S_NEEDS_RESET	0x40
#define VIO_S_FAILED		0x80

#define VIO_F_VERSION_1		32

#define VIO_DESC_F_NEXT		1
#define VIO_DESC_F_WRITE	2
#define VIO_DESC_F_INDIRECT	4

#define VIO_ID_NET		1
#define VIO_ID_BLK		2

#define VIO_QSIZE		128	/* the largest queue this driver sets up */

struct vio_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vio_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[VIO_QSIZE];
	uint16_t used_event;
};

struct vio_used_elem {
	uint32_t id;
	uint32_t len;
};

struct vio_used {
	uint16_t flags;
	uint16_t idx;
	struct vio_used_elem ring[VIO_QSIZE];
	uint16_t avail_event;
};

struct vio_queue {
	unsigned int index;
	uint16_t size;
	struct vio_desc *desc;
	struct vio_avail *avail;
	struct vio_used *used;
	uint16_t used_seen;	/* next used slot to look at */
};

struct vio_dev {
	unsigned long base;
	unsigned int slot;
	uint32_t device_id;
	uint64_t offered;	/* DeviceFeatures */
};

static inline uint32_t vio_read(const struct vio_dev *d, unsigned int off)
{
	return *(volatile uint32_t *)(d->base + off);
}

static inline void vio_write(const struct vio_dev *d, unsigned int off, uint32_t v)
{
	*(volatile uint32_t *)(d->base + off) = v;
}

/* A virtio-blk request's header (virtio 1.2, 5.2.6). */
struct vio_blk_hdr {
	uint32_t type;
	uint32_t reserved;
	uint64_t sector;
};

/* Rings of one queue, each part in its own page: for a payload with several
 * devices (lib/vio.c keeps one set per queue index for one device). */
struct vio_rings {
	struct vio_desc desc[VIO_QSIZE] __attribute__((aligned(4096)));
	struct vio_avail avail __attribute__((aligned(4096)));
	struct vio_used used __attribute__((aligned(4096)));
};

/* The @nth (0-based) device of @device_id in the slots, false if none. */
bool vio_find(uint32_t device_id, unsigned int nth, struct vio_dev *d);
/* Reset, ACKNOWLEDGE, DRIVER, read the offer, write @features, FEATURES_OK;
 * returns the status read back (FEATURES_OK set if the device took them). */
uint32_t vio_negotiate(struct vio_dev *d, uint64_t features);
/* Queue @q with @size (<= VIO_QSIZE) entries in rings of this payload's
 * memory that belong to that queue of that device (up to eight queues in
 * all); 0, or -1 if QueueNumMax is below @size or no rings are left. */
int vio_queue_setup(struct vio_dev *d, unsigned int q, uint16_t size, struct vio_queue *vq);
/* Give the device @vq's size and ring addresses and set QueueReady: 0, or
 * -1 if the device does not keep it ready. */
int vio_queue_enable(struct vio_dev *d, const struct vio_queue *vq);
void vio_driver_ok(struct vio_dev *d);
void vio_reset(struct vio_dev *d);
/* Put chain @head on the available ring (release order) and notify. */
void vio_submit(struct vio_dev *d, struct vio_queue *vq, uint16_t head);
/* The device set DEVICE_NEEDS_RESET (it refused a queue's ring or chain). */
bool vio_needs_reset(const struct vio_dev *d);
/* Wait up to @us for the next used element; true and *@e if one came. */
bool vio_wait_used(struct vio_queue *vq, unsigned long us, struct vio_used_elem *e);
/* A config-space byte / le32 / le64 (4.2.2: read with the generation check). */
uint64_t vio_config(struct vio_dev *d, unsigned int off, unsigned int size);
#endif
