/* SPDX-License-Identifier: MIT */
/* A minimal polled virtio-mmio driver for the payloads (vio.h). */
#include "vio.h"
#include "timer.h"

/* rings for queue indices 0..3, each in its own pages (4.2: no alignment
 * beyond the split ring's, but page-aligned keeps the parts apart) */
#define VIO_MAX_QUEUES	4
static struct {
	struct vio_desc desc[VIO_QSIZE] __attribute__((aligned(4096)));
	struct vio_avail avail __attribute__((aligned(4096)));
	struct vio_used used __attribute__((aligned(4096)));
} rings[VIO_MAX_QUEUES] __attribute__((aligned(4096)));

#define MAGIC_VIRT	0x74726976	/* "virt" */

bool vio_find(uint32_t device_id, unsigned int nth, struct vio_dev *d)
{
	for (unsigned int i = 0; i < VIO_SLOTS; i++) {
		struct vio_dev c = { .base = VIO_MMIO_BASE + i * VIO_MMIO_STRIDE, .slot = i };

		if (vio_read(&c, VIO_MAGIC) != MAGIC_VIRT || vio_read(&c, VIO_VERSION) != 2)
			continue;
		c.device_id = vio_read(&c, VIO_DEVICE_ID);
		if (c.device_id != device_id || nth--)
			continue;
		*d = c;
		return true;
	}
	return false;
}

void vio_reset(struct vio_dev *d)
{
	vio_write(d, VIO_STATUS, 0);
	/* 4.2.3.1: the reset is done when status reads 0 */
	wait_for(vio_read(d, VIO_STATUS) == 0, 100000);
}

uint32_t vio_negotiate(struct vio_dev *d, uint64_t features)
{
	vio_reset(d);
	vio_write(d, VIO_STATUS, VIO_S_ACK);
	vio_write(d, VIO_STATUS, VIO_S_ACK | VIO_S_DRIVER);
	vio_write(d, VIO_DEV_FEATURES_SEL, 0);
	d->offered = vio_read(d, VIO_DEV_FEATURES);
	vio_write(d, VIO_DEV_FEATURES_SEL, 1);
	d->offered |= (uint64_t)vio_read(d, VIO_DEV_FEATURES) << 32;
	vio_write(d, VIO_DRV_FEATURES_SEL, 0);
	vio_write(d, VIO_DRV_FEATURES, (uint32_t)features);
	vio_write(d, VIO_DRV_FEATURES_SEL, 1);
	vio_write(d, VIO_DRV_FEATURES, (uint32_t)(features >> 32));
	vio_write(d, VIO_STATUS, VIO_S_ACK | VIO_S_DRIVER | VIO_S_FEATURES_OK);
	return vio_read(d, VIO_STATUS);
}

int vio_queue_setup(struct vio_dev *d, unsigned int q, uint16_t size, struct vio_queue *vq)
{
	unsigned long a;

	if (q >= VIO_MAX_QUEUES || size > VIO_QSIZE)
		return -1;
	vio_write(d, VIO_QUEUE_SEL, q);
	if (vio_read(d, VIO_QUEUE_NUM_MAX) < size || vio_read(d, VIO_QUEUE_READY))
		return -1;
	for (unsigned int i = 0; i < sizeof(rings[q]); i++)
		((volatile uint8_t *)&rings[q])[i] = 0;
	vq->index = q;
	vq->size = size;
	vq->desc = rings[q].desc;
	vq->avail = &rings[q].avail;
	vq->used = &rings[q].used;
	vq->used_seen = 0;
	vio_write(d, VIO_QUEUE_NUM, size);
	a = (unsigned long)vq->desc;
	vio_write(d, VIO_QUEUE_DESC_LO, (uint32_t)a);
	vio_write(d, VIO_QUEUE_DESC_HI, (uint32_t)(a >> 32));
	a = (unsigned long)vq->avail;
	vio_write(d, VIO_QUEUE_DRIVER_LO, (uint32_t)a);
	vio_write(d, VIO_QUEUE_DRIVER_HI, (uint32_t)(a >> 32));
	a = (unsigned long)vq->used;
	vio_write(d, VIO_QUEUE_DEVICE_LO, (uint32_t)a);
	vio_write(d, VIO_QUEUE_DEVICE_HI, (uint32_t)(a >> 32));
	vio_write(d, VIO_QUEUE_READY, 1);
	return vio_read(d, VIO_QUEUE_READY) == 1 ? 0 : -1;
}

void vio_driver_ok(struct vio_dev *d)
{
	vio_write(d, VIO_STATUS, vio_read(d, VIO_STATUS) | VIO_S_DRIVER_OK);
}

void vio_submit(struct vio_dev *d, struct vio_queue *vq, uint16_t head)
{
	uint16_t idx = vq->avail->idx;

	vq->avail->ring[idx % vq->size] = head;
	__atomic_store_n(&vq->avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
	__asm__ volatile("fence rw, rw" ::: "memory");
	vio_write(d, VIO_QUEUE_NOTIFY, vq->index);
}

bool vio_wait_used(struct vio_queue *vq, unsigned long us, struct vio_used_elem *e)
{
	if (!wait_for(__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE) != vq->used_seen, us))
		return false;
	*e = vq->used->ring[vq->used_seen % vq->size];
	vq->used_seen++;
	return true;
}

uint64_t vio_config(struct vio_dev *d, unsigned int off, unsigned int size)
{
	uint32_t gen;
	uint64_t v;

	do {
		gen = vio_read(d, VIO_CONFIG_GEN);
		switch (size) {
		case 1:
			v = *(volatile uint8_t *)(d->base + VIO_CONFIG + off);
			break;
		case 2:
			v = *(volatile uint16_t *)(d->base + VIO_CONFIG + off);
			break;
		case 4:
			v = vio_read(d, VIO_CONFIG + off);
			break;
		default:
			v = vio_read(d, VIO_CONFIG + off) |
			    (uint64_t)vio_read(d, VIO_CONFIG + off + 4) << 32;
		}
	} while (gen != vio_read(d, VIO_CONFIG_GEN));
	return v;
}
