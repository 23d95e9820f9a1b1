/* SPDX-License-Identifier: MIT */
/* The virtio block device's protocol (virtio 1.2 section 5.2), as both sides
 * of the hypervisor speak it: the guest device model (vblk.c) and the host
 * disk driver (hostblk.c). */
#ifndef HYP_VIRTIO_BLK_H
#define HYP_VIRTIO_BLK_H
#include <types.h>

/* feature bits (5.2.3) */
#define VIRTIO_BLK_F_SEG_MAX	2
#define VIRTIO_BLK_F_RO		5
#define VIRTIO_BLK_F_BLK_SIZE	6
#define VIRTIO_BLK_F_FLUSH	9
/* request types and status (5.2.6) */
#define VIRTIO_BLK_T_IN		0
#define VIRTIO_BLK_T_OUT	1
#define VIRTIO_BLK_T_FLUSH	4
#define VIRTIO_BLK_T_GET_ID	8
#define VIRTIO_BLK_S_OK		0
#define VIRTIO_BLK_S_IOERR	1
#define VIRTIO_BLK_S_UNSUPP	2

#define VIRTIO_BLK_SECTOR	512	/* the unit of a request's sector, whatever the block size */
#define VIRTIO_BLK_HDR_SIZE	16	/* type, reserved, sector */
#define VIRTIO_BLK_ID_BYTES	20	/* a GET_ID answer */

/* One data segment of a request in host-physical terms: the guest model
 * checks it lies in the VM's RAM, and the host driver hands the same array
 * to its disk (no copy between the two). */
struct blk_seg {
	hpa_t hpa;
	uint32_t len;
};
#endif
