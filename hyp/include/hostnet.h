/* SPDX-License-Identifier: MIT */
/* Host NICs: QEMU virtio-net-pci devices the hypervisor drives, the uplinks
 * of the guests' switches (docs/virtio.md, "The I/O path"). Only VERSION_1
 * and MAC are negotiated: no offloads, no MRG_RXBUF, so every frame is one
 * buffer of a 12-byte virtio_net_hdr_v1 and at most 1514 bytes of Ethernet
 * frame. Frames are copied both ways through the driver's own buffers (the
 * device never sees guest memory). The device's answers are checked as
 * virtio_pci.h says; a received length is clamped to its buffer, and a
 * frame shorter than an Ethernet header is dropped.
 *
 * Locking: hostnet_tx() may be called on any hart (the device's lock);
 * hostnet_poll() calls rx() without that lock, so rx() may call
 * hostnet_tx() (of this NIC too), but not hostnet_poll(). */
#ifndef HYP_HOSTNET_H
#define HYP_HOSTNET_H
#include <types.h>

#define HOSTNET_FRAME_MAX	1514	/* Ethernet header + 1500, no FCS */
#define HOSTNET_FRAME_MIN	14	/* an Ethernet header */
/* NICs driven: one per switch with an uplink, at most one switch per VM. */
#define HOSTNET_MAX_DEVS	8
/* Buffers of 1536 bytes (header + frame, rounded up) per queue. */
#define HOSTNET_RX_BUFS		32
#define HOSTNET_TX_BUFS		32

struct hostnet;

/** hostnet_init() - boot, hart 0, after pci_host_init(): drive every
 *  virtio-net function found (at most HOSTNET_MAX_DEVS), one log line each.
 *  Returns how many are in service. */
unsigned int hostnet_init(void);

/** hostnet_by_slot() - the NIC at function 0 of device number @pci_dev on
 *  the first bus, or NULL (none there, not virtio-net, or it failed at boot). */
struct hostnet *hostnet_by_slot(unsigned int pci_dev);

/** hostnet_irq() - the host interrupt of the NIC's INTx, -1 if none (see
 *  hostblk_irq(): lines are shared). */
int64_t hostnet_irq(const struct hostnet *n);

/** hostnet_mac() - the device's MAC address (its configuration, read at boot). */
void hostnet_mac(const struct hostnet *n, uint8_t mac[6]);

/** hostnet_tx() - send the Ethernet frame @frame of @len bytes (copied; the
 *  driver prepends a zeroed virtio_net_hdr_v1). 0: queued; -HYP_EBUSY: every
 *  tx buffer is in flight, retry after a hostnet_poll(); -HYP_EINVAL: @len
 *  below 14 or above 1514; -HYP_EIO: the device is out of service. */
int hostnet_tx(struct hostnet *n, const void *frame, uint32_t len);

/** hostnet_set_rx() - where received frames go (NULL: dropped). */
void hostnet_set_rx(struct hostnet *n, void (*rx)(void *ctx, const void *frame, uint32_t len),
		    void *ctx);

/** hostnet_poll() - take back sent buffers, hand each received frame
 *  (14..1514 bytes, valid only during the call) to rx(), give its buffer back
 *  to the device; at most a queue's worth of frames a call. Also reads
 *  (clears) the ISR: the interrupt handler calls this. */
void hostnet_poll(struct hostnet *n);
#endif
