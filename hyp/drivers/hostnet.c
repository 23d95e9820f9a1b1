/* SPDX-License-Identifier: MIT */
/* Host NICs (hostnet.h): virtio-net over virtio_pci.c, receive queue 0 and
 * transmit queue 1, every chain one descriptor. A chain's head is its
 * descriptor, and descriptor i always carries buffer i of its queue, so a
 * completion finds its buffer from the head virtio_pci.c has checked. A
 * transmit buffer is tied to its descriptor (it is free exactly when the
 * descriptor is); a receive buffer is out of the ring while rx() reads it, so
 * receive heads map to buffers through rx_buf_of[].
 *
 * Receive buffers are offered 1526 bytes (the 12-byte header and a 1514-byte
 * frame), the least the device may be given without MRG_RXBUF or offloads
 * (virtio 1.2 5.1.6.3.1): a used length is clamped to that, so a frame is
 * never longer than 1514 bytes. */
#include <atomic.h>
#include <errno.h>
#include <hostnet.h>
#include <log.h>
#include <pci_host.h>
#include <string.h>
#include <virtio_pci.h>

#define VIRTIO_ID_NET		1
#define VIRTIO_NET_F_MAC	5
#define NET_CFG_MAC		0	/* u8[6] */

#define NET_HDR_LEN		12	/* struct virtio_net_hdr_v1 (num_buffers included) */
#define NET_RX_LEN		(NET_HDR_LEN + HOSTNET_FRAME_MAX)
#define NET_BUF_SIZE		1536	/* NET_RX_LEN rounded up to 64 */
#define RX_QUEUE		0
#define TX_QUEUE		1

struct hostnet {
	struct spinlock lock;
	struct vpci_dev dev;
	struct vpci_queue rxq, txq;
	VPCI_RING(HOSTNET_RX_BUFS) rx_ring;
	VPCI_RING(HOSTNET_TX_BUFS) tx_ring;
	uint8_t mac[6];
	void (*rx)(void *ctx, const void *frame, uint32_t len);
	void *rx_ctx;
	uint16_t rx_buf_of[HOSTNET_RX_BUFS];	/* receive chain head -> its buffer */
	unsigned long rx_short;		/* frames dropped, shorter than a header (logged once) */
	uint8_t rx_buf[HOSTNET_RX_BUFS][NET_BUF_SIZE] __attribute__((aligned(64)));
	uint8_t tx_buf[HOSTNET_TX_BUFS][NET_BUF_SIZE] __attribute__((aligned(64)));
};

static struct hostnet nics[HOSTNET_MAX_DEVS];
static unsigned int nr_nics;

struct hostnet *hostnet_by_slot(unsigned int pci_dev)
{
	for (unsigned int i = 0; i < nr_nics; i++)
		if (nics[i].dev.pci->dev == pci_dev && nics[i].dev.pci->fn == 0)
			return &nics[i];
	return NULL;
}

int64_t hostnet_irq(const struct hostnet *n)
{
	return n->dev.pci->int_pin ? n->dev.pci->int_irq : -1;
}

void hostnet_mac(const struct hostnet *n, uint8_t mac[6])
{
	memcpy(mac, n->mac, 6);
}

void hostnet_set_rx(struct hostnet *n, void (*rx)(void *ctx, const void *frame, uint32_t len),
		    void *ctx)
{
	spin_lock(&n->lock);
	n->rx = rx;
	n->rx_ctx = ctx;
	spin_unlock(&n->lock);
}

/* Under the lock: give receive buffer @buf to the device, in the chain of
 * the first free descriptor (the device holds fewer chains than there are
 * buffers, so one is free). */
static void rx_give(struct hostnet *n, uint16_t buf)
{
	struct vpci_buf b = { (hpa_t)(uintptr_t)n->rx_buf[buf], NET_RX_LEN, true };
	uint16_t head = n->rxq.free_head;

	if (!n->rxq.nr_free)
		return;		/* cannot happen: @buf's own chain just came back */
	n->rx_buf_of[head] = buf;
	vpci_queue_add(&n->rxq, &b, 1, &head);
}

/* Under the lock: take back the transmit buffers the device is done with. */
static int tx_reclaim(struct hostnet *n)
{
	uint16_t head;
	uint32_t len;
	int rc;

	while ((rc = vpci_queue_used(&n->dev, &n->txq, &head, &len)) == 1)
		;
	return rc;
}

int hostnet_tx(struct hostnet *n, const void *frame, uint32_t len)
{
	uint16_t head;
	int rc;

	if (len < HOSTNET_FRAME_MIN || len > HOSTNET_FRAME_MAX)
		return -HYP_EINVAL;
	spin_lock(&n->lock);
	rc = tx_reclaim(n);
	if (!rc && !n->txq.nr_free)
		rc = -HYP_EBUSY;
	if (!rc) {
		uint8_t *buf = n->tx_buf[n->txq.free_head];	/* the head the chain gets */
		struct vpci_buf b = { (hpa_t)(uintptr_t)buf, NET_HDR_LEN + len, false };

		memset(buf, 0, NET_HDR_LEN);	/* no offloads: flags, gso_type, csum 0 */
		memcpy(buf + NET_HDR_LEN, frame, len);
		rc = vpci_queue_add(&n->txq, &b, 1, &head);
		vpci_queue_kick(&n->dev, &n->txq);
	}
	spin_unlock(&n->lock);
	return rc;
}

void hostnet_poll(struct hostnet *n)
{
	void (*rx)(void *ctx, const void *frame, uint32_t len);
	void *ctx;

	spin_lock(&n->lock);
	vpci_isr(&n->dev);
	tx_reclaim(n);
	spin_unlock(&n->lock);
	for (unsigned int k = 0; k < n->rxq.r.num; k++) {
		uint16_t head, buf = 0;
		uint32_t len;
		int rc;

		spin_lock(&n->lock);
		rc = vpci_queue_used(&n->dev, &n->rxq, &head, &len);
		if (rc == 1)
			buf = n->rx_buf_of[head];
		rx = n->rx;
		ctx = n->rx_ctx;
		spin_unlock(&n->lock);
		if (rc != 1)
			break;
		/* buffer @buf is ours until rx_give(): the device cannot change it */
		if (len < NET_HDR_LEN + HOSTNET_FRAME_MIN) {
			if (!n->rx_short++)
				pr_info("host %s: received a frame of %u bytes with its header: "
					"dropped (logged once)", n->dev.name, len);
		} else if (rx) {
			rx(ctx, n->rx_buf[buf] + NET_HDR_LEN, len - NET_HDR_LEN);
		}
		spin_lock(&n->lock);
		rx_give(n, buf);
		spin_unlock(&n->lock);
	}
	spin_lock(&n->lock);
	vpci_queue_kick(&n->dev, &n->rxq);
	spin_unlock(&n->lock);
}

/* Bring one virtio-net function into service; false (logged) if it cannot be. */
static bool net_start(struct hostnet *n, const struct pci_func *f)
{
	if (vpci_init(&n->dev, f, "net") || vpci_negotiate(&n->dev, 1ull << VIRTIO_NET_F_MAC))
		return false;
	if (!vpci_has(&n->dev, VIRTIO_NET_F_MAC)) {
		vpci_fail(&n->dev, "no MAC address");
		return false;
	}
	if (vpci_cfg_bytes(&n->dev, NET_CFG_MAC, n->mac, sizeof(n->mac)) ||
	    VPCI_QUEUE_SETUP(&n->dev, &n->rxq, RX_QUEUE, &n->rx_ring) ||
	    VPCI_QUEUE_SETUP(&n->dev, &n->txq, TX_QUEUE, &n->tx_ring))
		return false;
	for (uint16_t i = 0; i < n->rxq.r.num; i++)
		rx_give(n, i);
	if (vpci_start(&n->dev))
		return false;
	vpci_queue_kick(&n->dev, &n->rxq);
	return true;
}

unsigned int hostnet_init(void)
{
	unsigned int nr, up = 0;
	const struct pci_func *f = pci_host_funcs(&nr);

	nr_nics = 0;
	for (unsigned int i = 0; i < nr; i++, f++) {
		struct hostnet *n = &nics[nr_nics];

		if (f->virtio_type != VIRTIO_ID_NET)
			continue;
		if (nr_nics == HOSTNET_MAX_DEVS) {
			pr_info("host net %02x:%02x.%x: not driven (at most %u NICs)", f->bus,
				f->dev, f->fn, HOSTNET_MAX_DEVS);
			continue;
		}
		if (!net_start(n, f))
			continue;
		pr_info("host %s: MAC %02x:%02x:%02x:%02x:%02x:%02x, rx queue %u, tx queue %u",
			n->dev.name, n->mac[0], n->mac[1], n->mac[2], n->mac[3], n->mac[4],
			n->mac[5], n->rxq.r.num, n->txq.r.num);
		nr_nics++;
		up++;
	}
	return up;
}
