/* SPDX-License-Identifier: MIT */
/* The modern virtio-pci transport (virtio 1.2 section 4.1) for the host
 * devices the hypervisor drives (hostblk.c, hostnet.c), over one function
 * pci_host.c found and configured. Split virtqueues whose rings and buffers
 * are hypervisor memory (static pools of the drivers).
 *
 * The device is QEMU's and is trusted as far as its ring is checked
 * (docs/security.md): every value read from it is bounded before use. A used
 * index that runs ahead of the chains the device holds, or a used id that is
 * not the head of a chain it holds, takes the device out of service
 * (vpci_fail(): logged, reset, FAILED); a used length above what the chain
 * lets the device write is clamped to it. Chain links and lengths are kept
 * here, never read back from the descriptor table.
 *
 * Not thread-safe: the driver serialises calls on one device (its lock). */
#ifndef HYP_VIRTIO_PCI_H
#define HYP_VIRTIO_PCI_H
#include <types.h>
#include <pci_host.h>
#include <split_ring.h>
#include <virtio_mmio.h>	/* status bits */

/* The largest queue size a driver uses (a power of two); the per-queue
 * bookkeeping below is sized for it. */
#define VPCI_QUEUE_MAX		256

#define VIRTIO_F_ACCESS_PLATFORM	33	/* never accepted: no IOMMU between us and QEMU */

/* The rings of a queue of @n entries, as one static object (alignments 16,
 * 2, 4; the modern transport takes the three addresses separately). */
#define VPCI_RING(n)								\
	struct {								\
		struct virtq_desc desc[n];					\
		struct { uint16_t flags, idx, ring[n], used_event; } avail;	\
		struct { uint16_t flags, idx; struct virtq_used_elem ring[n];	\
			 uint16_t avail_event; } used __attribute__((aligned(4)));	\
	} __attribute__((aligned(16)))

/* One buffer of a chain: device-readable ones first, then device-writable. */
struct vpci_buf {
	hpa_t addr;
	uint32_t len;
	bool write;
};

struct vpci_queue {
	struct sring r;			/* the rings and their indices; r.num: the size */
	uintptr_t notify;		/* where this queue's notification is written */
	uint16_t index;			/* virtqueue number */
	uint16_t nr_free, free_head;	/* free descriptors, linked through next[] */
	uint16_t in_flight;		/* chains the device holds */
	uint16_t next[VPCI_QUEUE_MAX];	/* chain and free-list links: ours only */
	uint16_t chain_len[VPCI_QUEUE_MAX];	/* at a head the device holds: its length; else 0 */
	uint32_t write_len[VPCI_QUEUE_MAX];	/* at such a head: device-writable bytes */
};

struct vpci_dev {
	const struct pci_func *pci;
	char name[24];			/* "blk 00:03.0": log prefix */
	uintptr_t common, isr, device, notify;	/* the four structures (CPU addresses) */
	uint32_t device_len, notify_len, notify_mult;
	uint64_t features;		/* negotiated */
	bool up;			/* in service */
	unsigned long len_clamped;	/* used lengths clamped (logged once) */
};

/** vpci_init() - bind @d to @f (its four structures, each long enough), reset
 *  the device, then ACKNOWLEDGE and DRIVER. @kind names it in logs ("blk").
 *  Returns 0, or -HYP_ENOTSUP (structures missing or short) or -HYP_EIO
 *  (reset does not complete), logged. */
int vpci_init(struct vpci_dev *d, const struct pci_func *f, const char *kind);

/** vpci_negotiate() - accept @wanted & what the device offers, plus
 *  VERSION_1, which the device must offer; never ACCESS_PLATFORM. Sets
 *  FEATURES_OK and checks the device kept it. 0 or -HYP_ENOTSUP (logged). */
int vpci_negotiate(struct vpci_dev *d, uint64_t wanted);

/** vpci_has() - feature bit @bit was negotiated. */
static inline bool vpci_has(const struct vpci_dev *d, unsigned int bit)
{
	return d->features >> bit & 1;
}

/** vpci_queue_setup() - set up queue @index with the rings at @desc/@avail/
 *  @used, holding at most @max entries: the size is the largest power of two
 *  <= min(@max, VPCI_QUEUE_MAX, the device's queue_size). Its notification
 *  address must lie inside the notify structure. 0 or -HYP_ENOTSUP (logged). */
int vpci_queue_setup(struct vpci_dev *d, struct vpci_queue *q, uint16_t index,
		     struct virtq_desc *desc, void *avail, void *used, uint16_t max);

/* vpci_queue_setup() with the rings of a VPCI_RING() object */
#define VPCI_QUEUE_SETUP(d, q, index, r) \
	vpci_queue_setup(d, q, index, (r)->desc, &(r)->avail, &(r)->used, ARRAY_SIZE((r)->desc))

/** vpci_start() - DRIVER_OK; the device must not then say NEEDS_RESET or
 *  FAILED. 0 or -HYP_EIO (logged, device reset). */
int vpci_start(struct vpci_dev *d);

/** vpci_cfg_read() - the device-config field at @off of @width bytes (1, 2,
 *  4 or 8: naturally aligned, read at its natural width, 8 as two halves),
 *  retried until config_generation is the same before and after (at most 64
 *  tries, then the device is failed). The field must lie inside the device
 *  structure. 0 or -HYP_EINVAL (outside) or -HYP_EIO. */
int vpci_cfg_read(struct vpci_dev *d, uint32_t off, unsigned int width, uint64_t *val);

/** vpci_cfg_bytes() - @len bytes from @off, byte by byte, in one generation
 *  (a MAC address). Same checks and results as vpci_cfg_read(). */
int vpci_cfg_bytes(struct vpci_dev *d, uint32_t off, void *buf, uint32_t len);

/** vpci_queue_add() - put the chain @b[0..@nr) (readable buffers first, each
 *  len > 0) in the avail ring, not yet published. -HYP_EBUSY if fewer than
 *  @nr descriptors are free, -HYP_EINVAL if @nr is 0; else 0 and its head in
 *  @head, which is always @q->free_head at the call (so a caller can point a
 *  buffer at per-head memory before adding the chain). */
int vpci_queue_add(struct vpci_queue *q, const struct vpci_buf *b, unsigned int nr,
		   uint16_t *head);

/** vpci_queue_kick() - publish what vpci_queue_add() queued and notify the
 *  device unless it asked not to be. */
void vpci_queue_kick(struct vpci_dev *d, struct vpci_queue *q);

/** vpci_queue_used() - the next chain the device gave back: 1 with its
 *  @head and @len (bytes written, clamped to what the chain lets it write),
 *  its descriptors free again; 0 if none; -HYP_EIO if the device broke the
 *  ring (used index ahead of the chains it holds, an id that is not a head it
 *  holds): it is then out of service. */
int vpci_queue_used(struct vpci_dev *d, struct vpci_queue *q, uint16_t *head, uint32_t *len);

/** vpci_queue_reclaim() - after vpci_fail() (the device reset: no more DMA),
 *  take back one chain it still held: true with its @head, false if none. */
bool vpci_queue_reclaim(struct vpci_queue *q, uint16_t *head);

/** vpci_isr() - read (and so clear, which lowers INTx) the ISR status; on a
 *  configuration change, a device saying NEEDS_RESET or FAILED is failed.
 *  Returns the ISR bits (1: queue, 2: configuration). */
uint8_t vpci_isr(struct vpci_dev *d);
/** vpci_isr_ack() - only the read (INTx lowered), nothing else of @d
 *  touched: safe without the driver's lock (hart 0 acknowledges while a
 *  submitter holds it). The caller hands bit 2 to vpci_config_check() under
 *  its lock later. */
uint8_t vpci_isr_ack(struct vpci_dev *d);
/** vpci_config_check() - after a configuration change (ISR bit 2): a device
 *  saying NEEDS_RESET or FAILED is failed. Under the driver's lock. */
void vpci_config_check(struct vpci_dev *d);

/** vpci_fail() - take @d out of service: log @why once, reset it (bounded
 *  wait), then status FAILED. Its requests are then reclaimed by the driver. */
void vpci_fail(struct vpci_dev *d, const char *why);
#endif
