/* SPDX-License-Identifier: MIT */
/* A guest virtio-net device (virtio 1.2 section 5.1) over the virtio-mmio
 * transport (vio_mmio.h), a port of a virtual switch; the rules:
 * docs/virtio.md, "virtio-net". No offloads, no mergeable buffers, one
 * queue pair: queue 0 receives, queue 1 transmits.
 *
 * A transmitted frame is copied whole into hypervisor memory, its chain
 * given back, and the copy handed to the switch port (vnet_port_ops.tx); the
 * switch delivers frames with vnet_rx_deliver(), on any hart. */
#ifndef HYP_VNET_H
#define HYP_VNET_H
#include <types.h>
#include <vio_mmio.h>

#define VIRTIO_NET_F_MAC	5
#define VIRTIO_NET_F_STATUS	16
#define VIRTIO_NET_S_LINK_UP	1

#define VNET_HDR_SIZE		12	/* struct virtio_net_hdr_v1 */
#define VNET_FRAME_MIN		14	/* an Ethernet header */
#define VNET_FRAME_MAX		1514	/* header and 1500 bytes, no FCS */
#define VNET_QUEUE_SIZE		256
#define VNET_RXQ		0
#define VNET_TXQ		1
/* Frames a kick sends (vnet_kick(), on the host hart): enough to give the
 * guest transmit completions, so that it sends the rest itself, on its own
 * hart; the host hart's work for another VM's NIC stays bounded. */
#define VNET_KICK_BUDGET	8

/* The switch's side of a port. */
struct vnet_port_ops {
	/** tx() - a frame the guest sent (@len bytes, 14..1514, a copy only
	 *  valid during the call). Called without any lock of vnet's held. */
	void (*tx)(void *port, const void *frame, uint32_t len);
	/** may_send() - optional: may the guest send a frame of @len bytes now
	 *  (the port's rate limit, charged if so)? false: the frame stays in
	 *  the guest's transmit queue, untaken, with every one after it, until
	 *  vnet_kick() (or the guest's next notify). Under vnet's lock. */
	bool (*may_send)(void *port, uint32_t len);
};

/* Guest-visible: plain data. */
struct vnet_state {
	uint8_t mac[6];
	uint16_t link;			/* config status: VIRTIO_NET_S_LINK_UP */
	struct vio_stats tx, rx;	/* frames sent by the guest, to it */
};

struct vnet {
	struct vio_dev dev;		/* first: the transport */
	struct vnet_state n;
	/* host side */
	const struct vnet_port_ops *ops;	/* NULL: detached from the switch */
	void *port;
};

/** vio_attach_net() - give @vm a virtio-net device in @slot with address
 *  @mac, attached to the switch port (@ops, @port) with the link up (VM
 *  creation, before the first boot). -HYP_ENOMEM, or as vio_mmio_attach(). */
int vio_attach_net(struct vm *vm, unsigned int slot, const uint8_t mac[6],
		   const struct vnet_port_ops *ops, void *port);
/** vnet_rx_deliver() - the switch gives @vnet a frame: into the next
 *  receive buffer (header with num_buffers 1, then the frame), else dropped
 *  and counted. Any hart; @frame is read during the call only. */
void vnet_rx_deliver(struct vnet *vnet, const void *frame, uint32_t len);
/** vnet_port_detach() - the switch lets the port go: the link goes down (a
 *  configuration change notification) and nothing is sent any more. */
void vnet_port_detach(struct vnet *vnet);
/** vnet_port_attach() - give @vnet a port again (after vnet_port_detach()):
 *  the link comes up, with a configuration change notification. */
void vnet_port_attach(struct vnet *vnet, const struct vnet_port_ops *ops, void *port);
/** vnet_set_mac() - give @vnet the address @mac (a restored copy beside its
 *  original: hyp/snap/snap_vio.c): the config space shows it, with a
 *  configuration change notification. */
void vnet_set_mac(struct vnet *vnet, const uint8_t mac[6]);
/* What a kick left (vnet_kick()). */
#define VNET_TX_DONE	0	/* nothing waits, or the rate limit held the rest back */
#define VNET_TX_MORE	1	/* frames wait: the budget ran out, or the lock was taken */
#define VNET_TX_BUSY	2	/* the device's lock was taken: nothing sent */
/** vnet_kick() - send what the port's rate limit held back (it has tokens
 *  again), as a notify would, but at most VNET_KICK_BUDGET frames. Never
 *  waits for the device's lock. VNET_TX_*: the caller kicks again later
 *  unless DONE. */
int vnet_kick(struct vm *vm, unsigned int slot);
/** vnet_of() - the virtio-net device in @slot of @vm, or NULL. */
struct vnet *vnet_of(struct vm *vm, unsigned int slot);
#endif
