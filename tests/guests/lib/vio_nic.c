/* SPDX-License-Identifier: MIT */
/* A polled virtio-net NIC for the payloads (vio_nic.h). */
#include "vio_nic.h"
#include "report.h"
#include "timer.h"

bool nic_find(struct vio_nic *n, unsigned int nth, struct vio_nic_bufs *buf)
{
	n->buf = buf;
	n->tx_next = 0;
	return vio_find(VIO_ID_NET, nth, &n->dev);
}

void nic_rx_post(struct vio_nic *n, uint16_t id)
{
	uint16_t idx = n->rxq.avail->idx;

	n->rxq.desc[id] = (struct vio_desc){ (uintptr_t)n->buf->rx[id], NIC_RX_BUF, VIO_DESC_F_WRITE, 0 };
	n->rxq.avail->ring[idx % n->rxq.size] = id;
	__atomic_store_n(&n->rxq.avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
}

bool nic_up(struct vio_nic *n, unsigned int rx_bufs)
{
	uint64_t want = (1ull << VIO_F_VERSION_1) | (1ull << NIC_F_MAC) | (1ull << NIC_F_STATUS);

	vio_negotiate(&n->dev, 1ull << VIO_F_VERSION_1);	/* reads the offer */
	if (!(vio_negotiate(&n->dev, want & (n->dev.offered | (1ull << VIO_F_VERSION_1))) &
	      VIO_S_FEATURES_OK))
		return false;
	if (vio_queue_setup(&n->dev, 0, VIO_QSIZE, &n->rxq) ||
	    vio_queue_setup(&n->dev, 1, VIO_QSIZE, &n->txq))
		return false;
	for (uint16_t i = 0; i < rx_bufs && i < NIC_RX_BUFS; i++)
		nic_rx_post(n, i);
	vio_driver_ok(&n->dev);
	vio_write(&n->dev, VIO_QUEUE_NOTIFY, 0);
	for (int i = 0; i < 6; i++)
		n->mac[i] = (uint8_t)vio_config(&n->dev, (unsigned int)i, 1);
	n->tx_next = 0;
	return true;
}

void nic_tx_reap(struct vio_nic *n)
{
	struct vio_used_elem e;

	while (vio_wait_used(&n->txq, 0, &e))
		n->tx_done++;
}

uint8_t *nic_tx_frame(struct vio_nic *n, uint16_t *slot)
{
	*slot = n->tx_next;
	n->tx_next = (uint16_t)((n->tx_next + 1) % NIC_TX_SLOTS);
	wait_for((nic_tx_reap(n), 1) &&
		 (uint16_t)(n->txq.avail->idx - n->txq.used_seen) < NIC_TX_SLOTS - 1, 100000);
	return n->buf->tx[*slot] + NIC_HDR;
}

void nic_tx_send(struct vio_nic *n, uint16_t slot, uint32_t len)
{
	for (int i = 0; i < NIC_HDR; i++)
		n->buf->tx[slot][i] = 0;
	n->txq.desc[slot] = (struct vio_desc){ (uintptr_t)n->buf->tx[slot], NIC_HDR + len, 0, 0 };
	vio_submit(&n->dev, &n->txq, slot);
	nic_tx_reap(n);
}

const uint8_t *nic_rx_next(struct vio_nic *n, unsigned long us, uint32_t *len, uint16_t *id)
{
	struct vio_used_elem e;

	if (!vio_wait_used(&n->rxq, us, &e))
		return NULL;
	if (e.id >= NIC_RX_BUFS || e.len < NIC_HDR + NIC_ETH_HLEN || e.len > NIC_RX_BUF) {
		report_fail("vio_nic", "rx used element id %u len %u (want a buffer below %u, "
			    "%u..%u bytes)", e.id, e.len, NIC_RX_BUFS, NIC_HDR + NIC_ETH_HLEN, NIC_RX_BUF);
		return NULL;
	}
	*id = (uint16_t)e.id;
	*len = e.len - NIC_HDR;
	return n->buf->rx[e.id] + NIC_HDR;
}

void nic_rx_done(struct vio_nic *n, uint16_t id)
{
	nic_rx_post(n, id);
	vio_write(&n->dev, VIO_QUEUE_NOTIFY, 0);
}

static uint8_t pattern(uint32_t tag, uint32_t seq, uint32_t i)
{
	uint64_t k = mix64((uint64_t)tag << 32 | seq);

	return (uint8_t)((uint8_t)(k >> (8 * (i & 7))) + (uint8_t)(i >> 3));
}

void nic_test_frame(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint32_t tag,
		    uint32_t seq, uint8_t kind, uint32_t len)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put_be16(f + 12, NIC_ETHERTYPE_TEST);
	memcpy(f + 14, "CRPC", 4);
	memcpy(f + 18, &tag, 4);
	memcpy(f + 22, &seq, 4);
	f[26] = kind;
	for (uint32_t i = NIC_TEST_HDR; i < len; i++)
		f[i] = pattern(tag, seq, i);
}

bool nic_is_test(const uint8_t *f, uint32_t len)
{
	return len >= NIC_TEST_HDR && get_be16(f + 12) == NIC_ETHERTYPE_TEST &&
	       !memcmp(f + 14, "CRPC", 4);
}

uint32_t nic_test_tag(const uint8_t *f)
{
	uint32_t v;

	memcpy(&v, f + 18, 4);
	return v;
}

uint32_t nic_test_seq(const uint8_t *f)
{
	uint32_t v;

	memcpy(&v, f + 22, 4);
	return v;
}

bool nic_test_intact(const uint8_t *f, uint32_t len, uint32_t tag, uint32_t seq, uint32_t want_len)
{
	if (len != want_len || !nic_is_test(f, len) || nic_test_tag(f) != tag || nic_test_seq(f) != seq)
		return false;
	for (uint32_t i = NIC_TEST_HDR; i < len; i++)
		if (f[i] != pattern(tag, seq, i))
			return false;
	return true;
}
