/* SPDX-License-Identifier: MIT */
/* A polled virtio-net NIC for the payloads (virtio 1.2 section 5.1), over
 * lib/vio.c: bring-up, send a frame, take a received one. Its buffers are
 * the caller's (struct vio_nic_bufs), so payloads without a NIC pay nothing;
 * the rings stay reachable (n->rxq, n->txq) for payloads that write anything
 * into them. */
#ifndef GUEST_VIO_NIC_H
#define GUEST_VIO_NIC_H

#include "vio.h"

#define NIC_HDR		12		/* virtio_net_hdr_v1 (VERSION_1: num_buffers) */
#define NIC_ETH_HLEN	14
#define NIC_FRAME_MAX	1514
#define NIC_RX_BUFS	32		/* receive buffers, descriptors 0..31 */
#define NIC_RX_BUF	2048
#define NIC_TX_SLOTS	32		/* transmit buffers, descriptors 0..31 */
#define NIC_TX_BUF	(NIC_HDR + 4096)	/* room for oversized test frames */
#define NIC_F_MAC	5
#define NIC_F_STATUS	16

struct vio_nic_bufs {
	uint8_t rx[NIC_RX_BUFS][NIC_RX_BUF] __attribute__((aligned(64)));
	uint8_t tx[NIC_TX_SLOTS][NIC_TX_BUF] __attribute__((aligned(64)));
};

struct vio_nic {
	struct vio_dev dev;
	struct vio_queue rxq, txq;
	uint8_t mac[6];
	struct vio_nic_bufs *buf;
	uint16_t tx_next;
	unsigned long tx_done;		/* transmit buffers the device gave back */
};

/* The @nth (0-based) virtio-net device, with buffers @buf; false if none. */
bool nic_find(struct vio_nic *n, unsigned int nth, struct vio_nic_bufs *buf);
/* Reset, negotiate VERSION_1 (and MAC, STATUS if offered), set up both
 * queues, post receive buffers 0..@rx_bufs-1, DRIVER_OK, read the MAC. */
bool nic_up(struct vio_nic *n, unsigned int rx_bufs);
/* The frame area (after the header) of the next transmit buffer, once the
 * device holds fewer than NIC_TX_SLOTS - 1 of them (or 100 ms passed). */
uint8_t *nic_tx_frame(struct vio_nic *n, uint16_t *slot);
/* Send @len frame bytes of buffer @slot behind a zeroed header. */
void nic_tx_send(struct vio_nic *n, uint16_t slot, uint32_t len);
/* Take back the transmit buffers the device returned. */
void nic_tx_reap(struct vio_nic *n);
/* The next received frame (*@len bytes, in buffer *@id) within @us, or NULL;
 * a used element that names no receive buffer or a length out of range is a
 * FAIL line. Give the buffer back with nic_rx_done(). */
const uint8_t *nic_rx_next(struct vio_nic *n, unsigned long us, uint32_t *len, uint16_t *id);
/* Put receive buffer @id on the available ring (no notify). */
void nic_rx_post(struct vio_nic *n, uint16_t id);
/* Post it and notify the receive queue (2.7.13: the driver notifies). */
void nic_rx_done(struct vio_nic *n, uint16_t id);

/* Test frames: EtherType 0x88b5 (IEEE local experimental), "CRPC", a tag, a
 * sequence number, a kind, then bytes that depend on tag, sequence number
 * and offset, so a frame that arrives damaged or mixed with another is seen. */
#define NIC_ETHERTYPE_TEST	0x88b5
#define NIC_TEST_HDR		27	/* Ethernet header, "CRPC", tag, seq, kind */

/* Write test frame @tag/@seq/@kind of @len (>= NIC_TEST_HDR) bytes at @f. */
void nic_test_frame(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint32_t tag,
		    uint32_t seq, uint8_t kind, uint32_t len);
bool nic_is_test(const uint8_t *f, uint32_t len);
uint32_t nic_test_tag(const uint8_t *f);
uint32_t nic_test_seq(const uint8_t *f);
/* @f is test frame @tag/@seq, @want_len bytes, every byte as written. */
bool nic_test_intact(const uint8_t *f, uint32_t len, uint32_t tag, uint32_t seq, uint32_t want_len);

/* Big-endian 16-bit fields of Ethernet frames. */
static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}
#endif
