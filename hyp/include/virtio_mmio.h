/* SPDX-License-Identifier: MIT */
/* virtio over MMIO (virtio 1.x, "modern" transport, version 2) and split
 * virtqueues: register offsets, status and feature bits, ring layout.
 * Everything the device sees is little-endian, as RISC-V is. */
#ifndef HYP_VIRTIO_MMIO_H
#define HYP_VIRTIO_MMIO_H
#include <types.h>

/* --- MMIO registers (32-bit accesses only; config space from 0x100) --- */
#define VIRTIO_MMIO_MAGIC_VALUE		0x000	/* "virt" */
#define VIRTIO_MMIO_VERSION		0x004	/* 2: modern; 1: legacy */
#define VIRTIO_MMIO_DEVICE_ID		0x008	/* 0: no device behind this transport */
#define VIRTIO_MMIO_VENDOR_ID		0x00c
#define VIRTIO_MMIO_DEVICE_FEATURES	0x010
#define VIRTIO_MMIO_DEVICE_FEATURES_SEL	0x014
#define VIRTIO_MMIO_DRIVER_FEATURES	0x020
#define VIRTIO_MMIO_DRIVER_FEATURES_SEL	0x024
#define VIRTIO_MMIO_QUEUE_SEL		0x030
#define VIRTIO_MMIO_QUEUE_NUM_MAX	0x034	/* 0: the queue does not exist */
#define VIRTIO_MMIO_QUEUE_NUM		0x038
#define VIRTIO_MMIO_QUEUE_READY		0x044
#define VIRTIO_MMIO_QUEUE_NOTIFY	0x050
#define VIRTIO_MMIO_INTERRUPT_STATUS	0x060
#define VIRTIO_MMIO_INTERRUPT_ACK	0x064
#define VIRTIO_MMIO_STATUS		0x070
#define VIRTIO_MMIO_QUEUE_DESC_LOW	0x080
#define VIRTIO_MMIO_QUEUE_DESC_HIGH	0x084
#define VIRTIO_MMIO_QUEUE_DRIVER_LOW	0x090	/* available ring */
#define VIRTIO_MMIO_QUEUE_DRIVER_HIGH	0x094
#define VIRTIO_MMIO_QUEUE_DEVICE_LOW	0x0a0	/* used ring */
#define VIRTIO_MMIO_QUEUE_DEVICE_HIGH	0x0a4
#define VIRTIO_MMIO_CONFIG_GENERATION	0x0fc
#define VIRTIO_MMIO_CONFIG		0x100

/* InterruptStatus bits */
#define VIRTIO_MMIO_INT_VRING		0x1	/* used buffer notification */
#define VIRTIO_MMIO_INT_CONFIG		0x2	/* configuration change notification */

#define VIRTIO_MMIO_MAGIC		0x74726976u
#define VIRTIO_MMIO_VERSION_MODERN	2

/* --- device status --- */
#define VIRTIO_STATUS_ACKNOWLEDGE	0x01
#define VIRTIO_STATUS_DRIVER		0x02
#define VIRTIO_STATUS_DRIVER_OK		0x04
#define VIRTIO_STATUS_FEATURES_OK	0x08
#define VIRTIO_STATUS_NEEDS_RESET	0x40
#define VIRTIO_STATUS_FAILED		0x80

/* --- feature bits (bit numbers in the 64-bit feature word) --- */
#define VIRTIO_F_VERSION_1		32

/* --- device ids --- */
#define VIRTIO_ID_NET			1
#define VIRTIO_ID_BLOCK			2
#define VIRTIO_ID_CONSOLE		3

/* --- split virtqueue (virtio 1.x section 2.7) --- */
#define VIRTQ_DESC_F_NEXT		1
#define VIRTQ_DESC_F_WRITE		2	/* device writes the buffer */
#define VIRTQ_DESC_F_INDIRECT		4	/* a table of descriptors (never offered) */
#define VIRTQ_AVAIL_F_NO_INTERRUPT	1
#define VIRTQ_USED_F_NO_NOTIFY		1

struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct virtq_used_elem {
	uint32_t id;	/* head descriptor of the returned chain */
	uint32_t len;	/* bytes the device wrote into it */
};

/* One split virtqueue of at most VIRTQ_MAX entries: the three parts are
 * handed to the device separately (modern transport), so any queue size
 * up to VIRTQ_MAX uses the same storage. Alignments: 16, 2, 4. */
#define VIRTQ_MAX	32

struct virtq_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[VIRTQ_MAX];
	uint16_t used_event;	/* only with VIRTIO_F_EVENT_IDX (not used) */
};

struct virtq_used {
	uint16_t flags;
	uint16_t idx;
	struct virtq_used_elem ring[VIRTQ_MAX];
	uint16_t avail_event;	/* only with VIRTIO_F_EVENT_IDX (not used) */
};

struct virtq_ring {
	struct virtq_desc desc[VIRTQ_MAX];
	struct virtq_avail avail __attribute__((aligned(2)));
	struct virtq_used used __attribute__((aligned(4)));
} __attribute__((aligned(16)));
#endif
