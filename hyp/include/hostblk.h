/* SPDX-License-Identifier: MIT */
/* Host disks: QEMU virtio-blk-pci devices the hypervisor drives (one request
 * queue each), for the guests' virtio-blk device models (docs/virtio.md,
 * "The I/O path"). A request's header and status byte are the driver's own
 * memory (the guest never sees them); its data segments are host-physical
 * ranges the caller has checked (guest RAM). The device's answers are checked
 * as virtio_pci.h says; a device that breaks its ring is out of service and
 * every request it held completes with VIRTIO_BLK_S_IOERR.
 *
 * Locking: hostblk_submit() may be called on any hart (the device's lock);
 * done() runs on whoever calls hostblk_poll(), without that lock, so it may
 * submit again. A poll never waits for the lock: if a submit holds it, the
 * submit runs the done() calls the poll left, after it lets the lock go and
 * before it returns (perhaps that of the very request it submitted). */
#ifndef HYP_HOSTBLK_H
#define HYP_HOSTBLK_H
#include <types.h>
#include <virtio_blk.h>


/* Data segments a request may have (hostblk_seg_max() may say fewer): a
 * request takes that many descriptors plus two of the queue (at most
 * VPCI_QUEUE_MAX = 256 entries; no indirect descriptors). */
#define HOSTBLK_MAX_SEGS	254
/* Disks driven: one per guest disk, at most 8 VMs with two each. */
#define HOSTBLK_MAX_DEVS	16

struct hostblk;

struct hostblk_req {
	uint32_t type;		/* VIRTIO_BLK_T_IN/OUT/FLUSH/GET_ID */
	uint64_t sector;	/* in 512-byte units, whatever the block size */
	const struct blk_seg *seg;	/* nr_seg of them, read by hostblk_submit() only */
	uint16_t nr_seg;
	uint8_t status;		/* VIRTIO_BLK_S_*, set before done() */
	void (*done)(struct hostblk_req *r);
	void *owner;		/* the caller's */
};

/** hostblk_init() - boot, hart 0, after pci_host_init(): drive every
 *  virtio-blk function found (at most HOSTBLK_MAX_DEVS), one log line each.
 *  Returns how many are in service. */
unsigned int hostblk_init(void);

/** hostblk_by_slot() - the disk at function 0 of device number @pci_dev on
 *  the first bus, or NULL (none there, not virtio-blk, or it failed at boot).
 *  A disk taken out of service later is still returned (its submits fail). */
struct hostblk *hostblk_by_slot(unsigned int pci_dev);

/** hostblk_irq() - the host interrupt (PLIC source) of the disk's INTx, from
 *  the bridge's interrupt-map; -1 if it has none. Several functions may share
 *  one (QEMU virt: slot s on 32 + s % 4): its handler calls hostblk_poll()
 *  of each. */
int64_t hostblk_irq(const struct hostblk *b);

/** hostblk_sectors() - capacity in 512-byte sectors (re-read on a
 *  configuration change). */
uint64_t hostblk_sectors(const struct hostblk *b);
/** hostblk_blk_size() - the device's block size (512 if it does not say):
 *  a power of two 512..65536. */
uint32_t hostblk_blk_size(const struct hostblk *b);
/** hostblk_seg_max() - data segments a request may have: 1..HOSTBLK_MAX_SEGS. */
uint32_t hostblk_seg_max(const struct hostblk *b);
/** hostblk_read_only() - the device offers VIRTIO_BLK_F_RO. */
bool hostblk_read_only(const struct hostblk *b);

/** hostblk_submit() - queue @r. 0: queued, done() will follow; -HYP_EBUSY:
 *  the ring is full, retry after a done(); -HYP_EIO: the device is out of
 *  service; -HYP_EINVAL: a bad request (unknown type; FLUSH without
 *  VIRTIO_BLK_F_FLUSH; IN/OUT with no segment, more than hostblk_seg_max(), a
 *  segment of length 0, a total not a multiple of 512 or past the capacity;
 *  GET_ID without exactly one segment; FLUSH with a segment; OUT to a
 *  read-only disk). */
int hostblk_submit(struct hostblk *b, struct hostblk_req *r);

/** hostblk_poll() - complete what the device finished (at most a queue's
 *  worth per call): set each request's status, call its done() without the
 *  lock. Also reads (clears) the ISR: the interrupt handler calls this.
 *  Never waits for the lock (see above). */
void hostblk_poll(struct hostblk *b);
#endif
