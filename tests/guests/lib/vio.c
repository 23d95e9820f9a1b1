/* SPDX-License-Identifier: MIT */
/* A minimal polled virtio-mmio driver for the payloads (vio.h). */
#include "vio.h"
#include "timer.h"

/* ring sets, each in its own pages (4.2: no alignment beyond the split
 * ring's, but page-aligned keeps the parts apart); a set belongs to one
 * (device, queue) from its first setup on, so a payload may drive several
 * devices */
#define VIO_RING_SETS	8
static struct {
	struct vio_desc desc[VIO_QSIZE] __attribute__((aligned(4096)));
	struct vio_avail avail __attribute__((aligned(4096)));
	struct vio_used used __attribute__((aligned(4096)));
} rings[VIO_RING_SETS] __attribute__((aligned(4096)));
static struct {
	unsigned long base;	/* 0: free */
	unsigned int q;
} ring_owner[VIO_RING_SETS];

/* The ring set of queue @q of the device at @base, or -1 if all are taken. */
static int ring_set(unsigned long base, unsigned int q)
{
	int free = -1;

	for (int i = 0; i < VIO_RING_SETS; i++) {
		if (ring_owner[i].base == base && ring_owner[i].q == q)
			return i;
		if (!ring_owner[i].base && free < 0)
			free = i;
	}
	if (free >= 0) {
		ring_owner[free].base = base;
		ring_owner[free].q = q;
	}
	return free;
}

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
	int set = size <= VIO_QSIZE ? ring_set(d->base, q) : -1;

	if (set < 0)
		return -1;
	vio_write(d, VIO_QUEUE_SEL, q);
	if (vio_read(d, VIO_QUEUE_NUM_MAX) < size || vio_read(d, VIO_QUEUE_READY))
		return -1;
	for (unsigned int i = 0; i < sizeof(rings[set]); i++)
		((volatile uint8_t *)&rings[set])[i] = 0;
	vq->index = q;
	vq->size = size;
	vq->desc = rings[set].desc;
	vq->avail = &rings[set].avail;
	vq->used = &rings[set].used;
	vq->used_seen = 0;
	return vio_queue_enable(d, vq);
}

int vio_queue_enable(struct vio_dev *d, const struct vio_queue *vq)
{
	unsigned long a;

	vio_write(d, VIO_QUEUE_SEL, vq->index);
	vio_write(d, VIO_QUEUE_NUM, vq->size);
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

bool vio_needs_reset(const struct vio_dev *d)
{
	return vio_read(d, VIO_STATUS) & VIO_S_NEEDS_RESET;
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
