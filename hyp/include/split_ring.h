/* SPDX-License-Identifier: MIT */
/* The driver's side of a split virtqueue (virtio 1.2 section 2.7), for the
 * host devices the hypervisor drives: the management channel
 * (virtio_console.c, virtio-mmio) and the disks and NICs (virtio_pci.c).
 * The rings are hypervisor memory the device reads and writes; this part
 * owns their indices: it fills avail slots, publishes the avail index and
 * hears whether the device wants a notification, and takes used entries no
 * faster than the device wrote them. What a used entry names (which
 * buffer, how many bytes) is the driver's to check against its own
 * bookkeeping; so is how far the used index may run ahead (sring_pending()).
 *
 * Not thread-safe: the driver serialises calls on one queue. */
#ifndef HYP_SPLIT_RING_H
#define HYP_SPLIT_RING_H
#include <types.h>
#include <virtio_mmio.h>	/* struct virtq_desc, virtq_used_elem, flags */

#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))

/* Ordering against the device: memory against memory, and memory before a
 * register access (device input or output). */
#ifndef HOST_TEST
#define virt_mb()	asm volatile("fence rw,rw" ::: "memory")
#define virt_rmb()	asm volatile("fence r,r" ::: "memory")
#define virt_wmb()	asm volatile("fence w,w" ::: "memory")
#define virt_io_mb()	asm volatile("fence iorw,iorw" ::: "memory")
#else
/* host unit tests: a thread-free fake device, ordering only for the compiler */
#define virt_mb()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define virt_rmb()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define virt_wmb()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define virt_io_mb()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/* The rings' layout for any size (flags, idx, ring[size], then the event
 * field); struct virtq_ring is the same for VIRTQ_MAX entries. */
struct sring_avail {
	uint16_t flags, idx;
	uint16_t ring[];
};

struct sring_used {
	uint16_t flags, idx;
	struct virtq_used_elem ring[];
};

struct sring {
	struct virtq_desc *desc;
	struct sring_avail *avail;
	struct sring_used *used;
	uint16_t num;			/* size: a power of two, so free-running indices wrap evenly */
	uint16_t avail_idx;		/* next avail slot to fill (free-running) */
	uint16_t published;		/* avail.idx as last written (never read back) */
	uint16_t last_used;		/* next used slot to take (free-running) */
};

/** sring_init() - @r over the rings at @desc, @avail and @used, of @num
 *  entries (a power of two), all three zeroed: nothing offered, nothing
 *  used. Before the device is told their addresses. */
void sring_init(struct sring *r, struct virtq_desc *desc, void *avail, void *used, uint16_t num);

/** sring_offer() - put the chain whose head is @head in the next avail
 *  slot; the device sees it at sring_publish(). */
static inline void sring_offer(struct sring *r, uint16_t head)
{
	WRITE_ONCE(r->avail->ring[r->avail_idx % r->num], head);
	r->avail_idx++;
}

/** sring_publish() - publish what sring_offer() put in since the last call
 *  (descriptors, ring entries and buffer data first). True if the device
 *  should then be notified: something was published and the device did not
 *  set VIRTQ_USED_F_NO_NOTIFY. The caller notifies through its transport,
 *  with virt_io_mb() before the register write. */
bool sring_publish(struct sring *r);

/** sring_pending() - how many used entries the device has written that
 *  were not taken yet (its used index minus ours, mod 2^16). The entries
 *  may be read after this returns non-zero. A count above what the device
 *  holds means it broke the ring: the caller decides what follows. */
uint16_t sring_pending(const struct sring *r);

/** sring_take() - the next used entry, as the device wrote it (@id and @len
 *  unchecked), and the slot consumed. Only after sring_pending() said there
 *  is one. */
void sring_take(struct sring *r, uint32_t *id, uint32_t *len);
#endif
