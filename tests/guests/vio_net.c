/* SPDX-License-Identifier: MIT */
/* virtio-net from a guest's side (issue 24), through lib/vio.c: on bare QEMU
 * (virtio-net-device on QEMU user networking) and under Carapace (its
 * device model on a virtual switch). Test frames carry EtherType 0x88b5
 * (IEEE local experimental) and a payload "CRPC", a tag (bootarg tag=N), a
 * sequence number and a kind (DATA, ECHO or FLOOD).
 *
 * Bootargs: ip=N (this guest is 10.0.2.N, default 15); seconds=S; count=N.
 *   mode=arp     ARP who-has 10.0.2.2 (the uplink's gateway): a reply comes.
 *   mode=echo    answer every DATA frame with an ECHO to its sender, for S s.
 *   mode=ping    send count DATA frames (broadcast), wait for each ECHO (at
 *                most wait_ms=W ms, default 1000): "NET-PING: sent=N
 *                echoed=M us=U"; every frame must be echoed, unless
 *                loss_ok=1 (the harness judges the losses).
 *   mode=recv    count the test frames that arrive in S s, by tag and kind:
 *                "NET-RECV: tag=T data=N echo=M".
 *   mode=send    send count DATA frames to broadcast; spoof=1 sends them
 *                with a source MAC that is not this NIC's; big=1 sends
 *                frames larger than 1514 bytes (both must be dropped).
 *   mode=flood   keep the transmit queue full of FLOOD frames of len=L bytes
 *                (default 1514) to broadcast for S s, after start_ms=W ms
 *                (default 0: its receivers may need to come up): "NET-FLOOD: tag=T
 *                queued=N sent=M us=U" (sent: given back by the device),
 *                then, once the device gave back every frame (at most a
 *                second later), "NET-FLOOD-END: sent=M".
 * Every line the harness compares is printed by report_info(). */
#include "libguest.h"
#include "vio.h"

#define T "vio_net"

#define NET_F_MAC	5
#define NET_F_STATUS	16
#define NET_HDR		12		/* virtio_net_hdr_v1 (VERSION_1: num_buffers) */
#define ETH_HLEN	14
#define FRAME_MAX	1514
#define RX_BUFS		32
#define ETHERTYPE_TEST	0x88b5
#define ETHERTYPE_ARP	0x0806
#define KIND_DATA	1
#define KIND_ECHO	2
#define KIND_FLOOD	3		/* counted as data by recv, never echoed */

static struct vio_dev dev;
static struct vio_queue rxq, txq;
static uint8_t rx_buf[RX_BUFS][2048] __attribute__((aligned(64)));
static uint8_t tx_buf[VIO_QSIZE][NET_HDR + 4096] __attribute__((aligned(64)));
static uint8_t mac[6];
static uint16_t tx_next;
static unsigned long tx_done_seen;

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static void rx_post(uint16_t id)
{
	rxq.desc[id] = (struct vio_desc){ (uintptr_t)rx_buf[id], sizeof(rx_buf[0]), VIO_DESC_F_WRITE, 0 };
	uint16_t idx = rxq.avail->idx;

	rxq.avail->ring[idx % rxq.size] = id;
	__atomic_store_n(&rxq.avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
}

static bool bring_up(void)
{
	uint64_t want = (1ull << VIO_F_VERSION_1) | (1ull << NET_F_MAC) | (1ull << NET_F_STATUS);

	vio_negotiate(&dev, 1ull << VIO_F_VERSION_1);	/* reads the offer */
	if (!(vio_negotiate(&dev, want & (dev.offered | (1ull << VIO_F_VERSION_1))) & VIO_S_FEATURES_OK))
		return false;
	if (vio_queue_setup(&dev, 0, VIO_QSIZE, &rxq) || vio_queue_setup(&dev, 1, VIO_QSIZE, &txq))
		return false;
	for (uint16_t i = 0; i < RX_BUFS; i++)
		rx_post(i);
	vio_driver_ok(&dev);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)vio_config(&dev, (unsigned int)i, 1);
	return true;
}

/* Reclaim sent buffers (used tx elements) so the ring never fills. */
static void tx_reap(void)
{
	struct vio_used_elem e;

	while (vio_wait_used(&txq, 0, &e))
		tx_done_seen++;
}

/* Send @len bytes of frame at tx slot @slot (header prepended, zeroed). */
static void tx_send(uint16_t slot, uint32_t len)
{
	for (int i = 0; i < NET_HDR; i++)
		tx_buf[slot][i] = 0;
	txq.desc[slot] = (struct vio_desc){ (uintptr_t)tx_buf[slot], NET_HDR + len, 0, 0 };
	vio_submit(&dev, &txq, slot);
	tx_reap();
}

static uint8_t *tx_frame(uint16_t *slot)
{
	*slot = tx_next;
	tx_next = (uint16_t)((tx_next + 1) % VIO_QSIZE);
	wait_for((tx_reap(), 1) && (uint16_t)(txq.avail->idx - txq.used_seen) < VIO_QSIZE - 1, 100000);
	return tx_buf[*slot] + NET_HDR;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void send_test(const uint8_t *dst, const uint8_t *src, uint32_t tag, uint32_t seq, uint8_t kind,
		      uint32_t len)
{
	uint16_t slot;
	uint8_t *f = tx_frame(&slot);

	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, ETHERTYPE_TEST);
	memcpy(f + 14, "CRPC", 4);
	memcpy(f + 18, &tag, 4);
	memcpy(f + 22, &seq, 4);
	f[26] = kind;
	for (uint32_t i = 27; i < len && i < 4096; i++)
		f[i] = (uint8_t)i;
	tx_send(slot, len);
}

/* The next received frame (pointer into its buffer, *@len bytes), or NULL
 * after @us. The buffer goes back to the device by rx_done(). */
static const uint8_t *rx_next(unsigned long us, uint32_t *len, uint16_t *id)
{
	struct vio_used_elem e;

	if (!vio_wait_used(&rxq, us, &e))
		return NULL;
	if (e.id >= RX_BUFS || e.len < NET_HDR + ETH_HLEN || e.len > sizeof(rx_buf[0])) {
		report_fail(T, "rx used element id %u len %u", e.id, e.len);
		return NULL;
	}
	*id = (uint16_t)e.id;
	*len = e.len - NET_HDR;
	return rx_buf[e.id] + NET_HDR;
}

static void rx_done(uint16_t id)
{
	rx_post(id);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
}

static bool is_test(const uint8_t *f, uint32_t len)
{
	return len >= 27 && get16(f + 12) == ETHERTYPE_TEST && !memcmp(f + 14, "CRPC", 4);
}

static void mode_arp(void)
{
	uint32_t ip = (uint32_t)bootarg_ulong("ip", 15), len;
	unsigned long end = rdtime() + us_to_ticks(5000000);
	bool got = false;
	uint16_t slot, id;
	uint8_t *f = tx_frame(&slot);

	memcpy(f, bcast, 6);
	memcpy(f + 6, mac, 6);
	put16(f + 12, ETHERTYPE_ARP);
	put16(f + 14, 1);		/* Ethernet */
	put16(f + 16, 0x0800);		/* IPv4 */
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, 1);		/* request */
	memcpy(f + 22, mac, 6);
	f[28] = 10; f[29] = 0; f[30] = 2; f[31] = (uint8_t)ip;
	memset(f + 32, 0, 6);
	f[38] = 10; f[39] = 0; f[40] = 2; f[41] = 2;
	tx_send(slot, 60);
	while (!got && rdtime() < end) {
		const uint8_t *r = rx_next(100000, &len, &id);

		if (!r)
			continue;
		got = len >= 42 && get16(r + 12) == ETHERTYPE_ARP && get16(r + 20) == 2 &&
		      r[28] == 10 && r[29] == 0 && r[30] == 2 && r[31] == 2 && !memcmp(r + 32, mac, 6);
		rx_done(id);
	}
	check_eq(T, "ARP reply from 10.0.2.2", got, 1);
}

static void mode_echo(void)
{
	unsigned long end = rdtime() + us_to_ticks(bootarg_ulong("seconds", 5) * 1000000);
	unsigned long echoed = 0;
	uint32_t len, tag, seq;
	uint16_t id;

	while (rdtime() < end) {
		const uint8_t *f = rx_next(10000, &len, &id);

		if (!f)
			continue;
		if (is_test(f, len) && f[26] == KIND_DATA) {
			memcpy(&tag, f + 18, 4);
			memcpy(&seq, f + 22, 4);
			send_test(f + 6, mac, tag, seq, KIND_ECHO, len);
			echoed++;
		}
		rx_done(id);
	}
	report_info(T, "NET-ECHO: echoed=%lu", echoed);
}

static void mode_ping(void)
{
	unsigned long count = bootarg_ulong("count", 100), echoed = 0;
	unsigned long wait_us = bootarg_ulong("wait_ms", 1000) * 1000;
	uint32_t tag = (uint32_t)bootarg_ulong("tag", 1), len, got_tag, got_seq;
	unsigned long t0 = rdtime();
	uint16_t id;

	for (uint32_t seq = 0; seq < count; seq++) {
		unsigned long end = rdtime() + us_to_ticks(wait_us);

		send_test(bcast, mac, tag, seq, KIND_DATA, 100 + seq % 1400);
		while (rdtime() < end) {
			const uint8_t *f = rx_next(10000, &len, &id);
			bool mine = false;

			if (!f)
				continue;
			if (is_test(f, len) && f[26] == KIND_ECHO) {
				memcpy(&got_tag, f + 18, 4);
				memcpy(&got_seq, f + 22, 4);
				mine = got_tag == tag && got_seq == seq && !memcmp(f, mac, 6) &&
				       len == 100 + seq % 1400;
			}
			rx_done(id);
			if (mine) {
				echoed++;
				break;
			}
		}
	}
	report_info(T, "NET-PING: sent=%lu echoed=%lu us=%lu", count, echoed, ticks_to_us(rdtime() - t0));
	if (bootarg_ulong("loss_ok", 0))
		check_ge(T, "some frames echoed, intact", echoed, 1);
	else
		check_eq(T, "every frame echoed, intact", echoed, count);
}

static void mode_recv(void)
{
	unsigned long end = rdtime() + us_to_ticks(bootarg_ulong("seconds", 5) * 1000000);
	unsigned long data[8] = { 0 }, echo[8] = { 0 }, other = 0;
	uint32_t len, tag;
	uint16_t id;

	while (rdtime() < end) {
		const uint8_t *f = rx_next(10000, &len, &id);

		if (!f)
			continue;
		if (is_test(f, len)) {
			memcpy(&tag, f + 18, 4);
			if (f[26] == KIND_ECHO)
				echo[tag % 8]++;
			else
				data[tag % 8]++;
		} else {
			other++;
		}
		rx_done(id);
	}
	for (int t = 0; t < 8; t++)
		if (data[t] || echo[t])
			report_info(T, "NET-RECV: tag=%d data=%lu echo=%lu", t, data[t], echo[t]);
	report_info(T, "NET-RECV: other=%lu", other);
	report_pass(T, "receiver ran");
}

static void mode_send(void)
{
	unsigned long count = bootarg_ulong("count", 100);
	uint32_t tag = (uint32_t)bootarg_ulong("tag", 1);
	uint8_t src[6];

	memcpy(src, mac, 6);
	if (bootarg_ulong("spoof", 0))
		src[5] ^= 0x5a;		/* some other NIC's address */
	for (uint32_t seq = 0; seq < count; seq++) {
		send_test(bcast, src, tag, seq, KIND_DATA, bootarg_ulong("big", 0) ? 4000 : 200);
		udelay(1000);
	}
	report_info(T, "NET-SENT: tag=%u count=%lu", tag, count);
	report_pass(T, "sender ran");
}

static void mode_flood(void)
{
	uint32_t tag = (uint32_t)bootarg_ulong("tag", 1), len = (uint32_t)bootarg_ulong("len", FRAME_MAX);
	unsigned long queued = 0, t0, end, done;

	udelay(bootarg_ulong("start_ms", 0) * 1000);
	t0 = rdtime();
	end = t0 + us_to_ticks(bootarg_ulong("seconds", 5) * 1000000);

	if (len < 27 || len > FRAME_MAX)
		len = FRAME_MAX;
	while (rdtime() < end) {
		tx_reap();
		if ((uint16_t)(txq.avail->idx - txq.used_seen) >= VIO_QSIZE - 1)
			continue;	/* full: the device holds them all */
		send_test(bcast, mac, tag, (uint32_t)queued++, KIND_FLOOD, len);
	}
	done = tx_done_seen;
	report_info(T, "NET-FLOOD: tag=%u queued=%lu sent=%lu us=%lu", tag, queued, done,
		    ticks_to_us(rdtime() - t0));
	/* what the device still held goes out meanwhile: never dropped */
	wait_for((tx_reap(), tx_done_seen == queued), 1000000);
	report_info(T, "NET-FLOOD-END: sent=%lu", tx_done_seen);
	check_eq(T, "flood: every queued frame sent", tx_done_seen, queued);
}

void test_main(unsigned long hartid)
{
	const char *m = env.bootargs;
	unsigned long mode = 0;

	(void)hartid;
	if (!vio_find(VIO_ID_NET, 0, &dev)) {
		report_fail(T, "no virtio-net device in the eight virtio-mmio slots");
		report_done();
	}
	if (!bring_up()) {
		report_fail(T, "bring-up (features 0x%lx)", (unsigned long)dev.offered);
		report_done();
	}
	report_info(T, "virtio-net in slot %u, mac %02x:%02x:%02x:%02x:%02x:%02x, status %lu", dev.slot,
		    mac[0], mac[1], mac[2], mac[3], mac[4], mac[5],
		    (unsigned long)(dev.offered & (1ull << NET_F_STATUS) ? vio_config(&dev, 6, 2) : 1));
	check_eq(T, "MAC offered", (dev.offered >> NET_F_MAC) & 1, 1);
	for (; *m; m++)
		if (!memcmp(m, "mode=", 5)) {
			mode = (unsigned long)m[5] << 8 | (unsigned long)m[6];
			break;
		}
	switch (mode) {
	case 'a' << 8 | 'r':
		mode_arp();
		break;
	case 'e' << 8 | 'c':
		mode_echo();
		break;
	case 'p' << 8 | 'i':
		mode_ping();
		break;
	case 'r' << 8 | 'e':
		mode_recv();
		break;
	case 'f' << 8 | 'l':
		mode_flood();
		break;
	default:
		mode_send();
	}
	report_done();
}
