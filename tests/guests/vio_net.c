/* SPDX-License-Identifier: MIT */
/* virtio-net from a guest's side (issue 24), through lib/vio_nic.c: on bare
 * QEMU (virtio-net-device on QEMU user networking) and under Carapace (its
 * device model on a virtual switch). Frames are lib/vio_nic.c's test frames
 * (kind DATA, ECHO, READY or FLOOD).
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
 *                (default 0: its receivers may need to come up): "NET-FLOOD:
 *                tag=T queued=N sent=M us=U" (sent: given back by the
 *                device), then, once the device gave back every frame (at
 *                most a second later), "NET-FLOOD-END: sent=M".
 *   mode=attack  malformed rings, chains and frames on both queues of its
 *                first NIC, its second NIC (on the same switch) sending to it
 *                and receiving from it; races with 2 vCPUs. Each case states
 *                what docs/virtio.md says the device does (NEEDS_RESET, the
 *                chain given back empty and the frame dropped, or taken as
 *                it was at the notify), then the NIC must work after a
 *                reset. delay=S: sleep S seconds first; from=N to=M: cases
 *                N..M; then_flood=1: afterwards send frames for ever.
 * The VMs of one test boot in any order and a frame that reaches a NIC with
 * no receive buffer is dropped (as on a wire), so the listening modes (echo,
 * recv) broadcast a READY frame every READY_EVERY_US all along (a sender
 * may come up after another has started), and the sending modes (ping,
 * send) wait for a READY before their first frame.
 * Every line the harness compares is printed by report_info(). */
#include "libguest.h"
#include "racer.h"
#include "vio.h"
#include "vio_nic.h"

#define T "vio_net"

#define ETHERTYPE_ARP	0x0806
#define KIND_DATA	1
#define KIND_ECHO	2
#define KIND_READY	3	/* "my receive queue is up": see await_peer() */
#define KIND_FLOOD	4	/* counted as data by recv, never echoed */
#define READY_EVERY_US	50000

static struct vio_nic nic;
static struct vio_nic_bufs nic_buf;

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static void send_test(const uint8_t *dst, const uint8_t *src, uint32_t tag, uint32_t seq, uint8_t kind,
		      uint32_t len)
{
	uint16_t slot;
	uint8_t *f = nic_tx_frame(&nic, &slot);

	nic_test_frame(f, dst, src, tag, seq, kind, len);
	nic_tx_send(&nic, slot, len);
}

static bool is_kind(const uint8_t *f, uint32_t len, uint8_t kind)
{
	return nic_is_test(f, len) && f[26] == kind;
}

/* A listener's announcement, every READY_EVERY_US (*@next: when the next
 * is due). */
static void announce_ready(unsigned long *next)
{
	if (rdtime() >= *next) {
		send_test(bcast, nic.mac, 0, 0, KIND_READY, 60);
		*next = rdtime() + us_to_ticks(READY_EVERY_US);
	}
}

/* A sender's wait for some listener on its switch (at most 60 s). */
static void await_peer(void)
{
	unsigned long end = rdtime() + us_to_ticks(60000000);
	bool ready = false;
	uint32_t len;
	uint16_t id;

	while (!ready && rdtime() < end) {
		const uint8_t *f = nic_rx_next(&nic, 10000, &len, &id);

		if (!f)
			continue;
		ready = is_kind(f, len, KIND_READY);
		nic_rx_done(&nic, id);
	}
	check_eq(T, "a listener announced itself", ready, 1);
}

static void mode_arp(void)
{
	uint32_t ip = (uint32_t)bootarg_ulong("ip", 15), len;
	unsigned long end = rdtime() + us_to_ticks(5000000);
	bool got = false;
	uint16_t slot, id;
	uint8_t *f = nic_tx_frame(&nic, &slot);

	memcpy(f, bcast, 6);
	memcpy(f + 6, nic.mac, 6);
	put_be16(f + 12, ETHERTYPE_ARP);
	put_be16(f + 14, 1);		/* Ethernet */
	put_be16(f + 16, 0x0800);	/* IPv4 */
	f[18] = 6;
	f[19] = 4;
	put_be16(f + 20, 1);		/* request */
	memcpy(f + 22, nic.mac, 6);
	f[28] = 10; f[29] = 0; f[30] = 2; f[31] = (uint8_t)ip;
	memset(f + 32, 0, 6);
	f[38] = 10; f[39] = 0; f[40] = 2; f[41] = 2;
	nic_tx_send(&nic, slot, 60);
	while (!got && rdtime() < end) {
		const uint8_t *r = nic_rx_next(&nic, 100000, &len, &id);

		if (!r)
			continue;
		got = len >= 42 && get_be16(r + 12) == ETHERTYPE_ARP && get_be16(r + 20) == 2 &&
		      r[28] == 10 && r[29] == 0 && r[30] == 2 && r[31] == 2 && !memcmp(r + 32, nic.mac, 6);
		nic_rx_done(&nic, id);
	}
	check_eq(T, "ARP reply from 10.0.2.2", got, 1);
}

static void mode_echo(void)
{
	unsigned long end = rdtime() + us_to_ticks(bootarg_ulong("seconds", 5) * 1000000);
	unsigned long echoed = 0, ready_next = rdtime();
	uint32_t len;
	uint16_t id;

	while (rdtime() < end) {
		announce_ready(&ready_next);
		const uint8_t *f = nic_rx_next(&nic, 10000, &len, &id);

		if (!f)
			continue;
		if (is_kind(f, len, KIND_DATA)) {
			send_test(f + 6, nic.mac, nic_test_tag(f), nic_test_seq(f), KIND_ECHO, len);
			echoed++;
		}
		nic_rx_done(&nic, id);
	}
	report_info(T, "NET-ECHO: echoed=%lu", echoed);
}

static void mode_ping(void)
{
	unsigned long count = bootarg_ulong("count", 100), echoed = 0;
	unsigned long wait_us = bootarg_ulong("wait_ms", 1000) * 1000;
	uint32_t tag = (uint32_t)bootarg_ulong("tag", 1), len;
	unsigned long t0;
	uint16_t id;

	await_peer();
	t0 = rdtime();
	for (uint32_t seq = 0; seq < count; seq++) {
		unsigned long end = rdtime() + us_to_ticks(wait_us);

		send_test(bcast, nic.mac, tag, seq, KIND_DATA, 100 + seq % 1400);
		while (rdtime() < end) {
			const uint8_t *f = nic_rx_next(&nic, 10000, &len, &id);
			bool mine = false;

			if (!f)
				continue;
			if (nic_is_test(f, len) && f[26] == KIND_ECHO)
				mine = nic_test_intact(f, len, tag, seq, 100 + seq % 1400) &&
				       !memcmp(f, nic.mac, 6);
			nic_rx_done(&nic, id);
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
	unsigned long data[8] = { 0 }, echo[8] = { 0 }, other = 0, ready_next = rdtime();
	uint32_t len, tag;
	uint16_t id;

	while (rdtime() < end) {
		announce_ready(&ready_next);
		const uint8_t *f = nic_rx_next(&nic, 10000, &len, &id);

		if (!f)
			continue;
		if (nic_is_test(f, len)) {
			tag = nic_test_tag(f);
			if (f[26] == KIND_DATA || f[26] == KIND_FLOOD)
				data[tag % 8]++;
			else if (f[26] == KIND_ECHO)
				echo[tag % 8]++;
		} else {
			other++;
		}
		nic_rx_done(&nic, id);
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

	await_peer();
	memcpy(src, nic.mac, 6);
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
	uint32_t tag = (uint32_t)bootarg_ulong("tag", 1), len = (uint32_t)bootarg_ulong("len", 1514);
	unsigned long queued = 0, t0, end, done;

	udelay(bootarg_ulong("start_ms", 0) * 1000);
	t0 = rdtime();
	end = t0 + us_to_ticks(bootarg_ulong("seconds", 5) * 1000000);
	if (len < NIC_TEST_HDR || len > 1514)
		len = 1514;
	nic.tx_done = 0;
	while (rdtime() < end) {
		nic_tx_reap(&nic);
		if ((uint16_t)(nic.txq.avail->idx - nic.txq.used_seen) >= NIC_TX_SLOTS - 1)
			continue;	/* full: the device holds them all */
		send_test(bcast, nic.mac, tag, (uint32_t)queued++, KIND_FLOOD, len);
	}
	done = nic.tx_done;
	report_info(T, "NET-FLOOD: tag=%u queued=%lu sent=%lu us=%lu", tag, queued, done,
		    ticks_to_us(rdtime() - t0));
	/* what the device still held goes out meanwhile: never dropped */
	wait_for((nic_tx_reap(&nic), nic.tx_done == queued), 1000000);
	report_info(T, "NET-FLOOD-END: sent=%lu", nic.tx_done);
	check_eq(T, "flood: every queued frame sent", nic.tx_done, queued);
}

/* ---- malformed rings, chains and frames (mode=attack) --------------------------- */

#define ATTACK_TAG	9
#define WAIT_US		2000000
#define QUIET_US	50000		/* a frame to be dropped has had time to arrive */
#define ATT_DESC	40		/* attack chains start here (0..31: the library's buffers) */
#define STORM_NOTIFIES	1000000		/* storm=N: another count */
#define FLOOD_US	5000000
#define RACE_FRAMES	3000
#define RACE_GOOD	20		/* a race goes on until this many frames went through */
#define RACE_US		5000000		/* or this long */
#define PLIC_BASE	0x0c000000UL
#define UART_BASE	0x10000000UL
#define HOLE		0x40000000UL
#define NET_HDR_F_NEEDS_CSUM	1
#define VIO_QUEUE_RESET	0x0c0	/* not offered (VIRTIO_F_RING_RESET): ignored */
#define VIO_F_INDIRECT_DESC	28
#define VIO_F_EVENT_IDX		29
#define VIO_F_RING_PACKED	34

static struct vio_nic helper;		/* the second NIC: sends to the attacked one, receives from it */
static struct vio_nic_bufs helper_buf;
static uint8_t spare[2][4096] __attribute__((aligned(4096)));
static uint8_t piece[34][64] __attribute__((aligned(64)));
static uint32_t seq_next = 1;
/* frames docs/virtio.md says the device drops, counted: the harness compares
 * them with the device's tx.errors and rx.errors */
static unsigned long tx_dropped, rx_dropped;

static unsigned long ram_end(void)
{
	return env.ram_base + env.ram_size;
}

/* The attacked NIC fresh from a device reset, @rx_bufs receive buffers posted. */
static bool fresh(unsigned int rx_bufs)
{
	if (nic_up(&nic, rx_bufs))
		return true;
	report_fail(T, "attacked NIC: bring-up after a reset (got a refusal, want it up)");
	return false;
}

static bool healthy(void)
{
	return !(vio_read(&nic.dev, VIO_STATUS) & (VIO_S_NEEDS_RESET | VIO_S_FAILED));
}

/* Put @head on @q's available ring and notify it. */
static void offer(struct vio_queue *q, uint16_t head)
{
	vio_submit(&nic.dev, q, head);
}

static void expect_fault(const char *what)
{
	check_eq(T, what, wait_for(vio_needs_reset(&nic.dev), WAIT_US), 1);
}

/* Header and test frame @seq of @len bytes, from @src to the helper, at @buf;
 * the chain's length. */
static uint32_t put_frame(uint8_t *buf, const uint8_t *src, uint32_t seq, uint32_t len)
{
	memset(buf, 0, NIC_HDR);
	nic_test_frame(buf + NIC_HDR, helper.mac, src, ATTACK_TAG, seq, KIND_DATA, len);
	return NIC_HDR + len;
}

/* What reached @rx within @us of frame @seq from @src: 1 intact (@len
 * bytes), -1 damaged or from another source, 0 nothing. @only_src: any other
 * source is a FAIL line (a spoofed source got through). */
static int frame_wait(struct vio_nic *rx, const uint8_t *src, bool only_src, uint32_t seq,
		      uint32_t len, unsigned long us)
{
	unsigned long end = rdtime() + us_to_ticks(us);
	int got = 0;

	while (!got && rdtime() < end) {
		const uint8_t *f;
		uint32_t l;
		uint16_t id;

		f = nic_rx_next(rx, 1000, &l, &id);
		if (!f)
			continue;
		if (only_src && memcmp(f + 6, src, 6))
			report_fail(T, "%s: a frame from ..:%02x (want only ..:%02x)",
				    rx == &helper ? "helper" : "nic", f[11], src[5]);
		else if (nic_is_test(f, l) && nic_test_tag(f) == ATTACK_TAG && nic_test_seq(f) == seq)
			got = nic_test_intact(f, l, ATTACK_TAG, seq, len) && !memcmp(f + 6, src, 6) ?
			      1 : -1;
		nic_rx_done(rx, id);
	}
	return got;
}

/* What reached the helper: only the attacked NIC may send to it. */
static int helper_wait(uint32_t seq, uint32_t len, unsigned long us)
{
	return frame_wait(&helper, nic.mac, true, seq, len, us);
}

/* The same for the attacked NIC's standard receive buffers (from the helper). */
static int nic_wait(uint32_t seq, uint32_t len, unsigned long us)
{
	return frame_wait(&nic, helper.mac, false, seq, len, us);
}

static void nic_send(uint32_t seq, uint32_t len)
{
	uint16_t slot;

	nic_test_frame(nic_tx_frame(&nic, &slot), helper.mac, nic.mac, ATTACK_TAG, seq, KIND_DATA, len);
	nic_tx_send(&nic, slot, len);
}

static void helper_send(uint32_t seq, uint32_t len)
{
	uint16_t slot;

	nic_test_frame(nic_tx_frame(&helper, &slot), nic.mac, helper.mac, ATTACK_TAG, seq, KIND_DATA,
		       len);
	nic_tx_send(&helper, slot, len);
}

/* After a case: a device reset brings the NIC back, both ways. */
static void recover(void)
{
	uint32_t s = seq_next++;

	if (!fresh(NIC_RX_BUFS))
		return;
	check_eq(T, "after a reset: healthy", healthy(), 1);
	nic_send(s, 100);
	check_eq(T, "after a reset: a frame sent arrives intact", helper_wait(s, 100, WAIT_US), 1);
	s = seq_next++;
	helper_send(s, 200);
	check_eq(T, "after a reset: a frame arrives intact", nic_wait(s, 200, WAIT_US), 1);
}

/* Chain of @n descriptors from ATT_DESC over @total bytes at @buf (pieces of
 * equal size, the last one the rest), each with @flags; its head. */
static uint16_t split_chain(struct vio_queue *q, uint8_t *buf, uint32_t total, unsigned int n,
			    uint16_t flags)
{
	uint32_t size = total / n;

	for (unsigned int i = 0; i < n; i++)
		q->desc[ATT_DESC + i] = (struct vio_desc){
			(uintptr_t)(buf + size * i), i == n - 1 ? total - size * (n - 1) : size,
			(uint16_t)(flags | (i == n - 1 ? 0 : VIO_DESC_F_NEXT)), (uint16_t)(ATT_DESC + i + 1) };
	return ATT_DESC;
}

/* ---- transmit queue ---- */

/* One transmit descriptor {@addr, @len, @flags, @next}: the queue faults. */
static void tx_one(const char *what, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	if (!fresh(NIC_RX_BUFS))
		return;
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ addr, len, flags, next };
	offer(&nic.txq, ATT_DESC);
	expect_fault(what);
}

static void a_tx_loop(void)
{
	uint32_t s = seq_next++;

	tx_one("tx: a descriptor that is its own next: NEEDS_RESET",
	       (uintptr_t)spare[0], put_frame(spare[0], nic.mac, s, 100), VIO_DESC_F_NEXT, ATT_DESC);
	check_eq(T, "tx loop: no frame", helper_wait(s, 100, QUIET_US), 0);
}

static void a_tx_long(void)
{
	uint32_t s = seq_next++, n;

	/* 32 descriptors, the device's limit: a frame like any other */
	if (!fresh(NIC_RX_BUFS))
		return;
	n = put_frame(spare[0], nic.mac, s, 200);
	offer(&nic.txq, split_chain(&nic.txq, spare[0], n, 32, 0));
	check_eq(T, "tx: a frame in 32 descriptors arrives intact", helper_wait(s, 200, WAIT_US), 1);
	check_eq(T, "tx: 32 descriptors: healthy", healthy(), 1);
	s = seq_next++;
	n = put_frame(spare[0], nic.mac, s, 200);
	offer(&nic.txq, split_chain(&nic.txq, spare[0], n, 33, 0));
	expect_fault("tx: a chain of 33 descriptors: NEEDS_RESET");
	check_eq(T, "tx: 33 descriptors: no frame", helper_wait(s, 200, QUIET_US), 0);
}

/* every descriptor of the queue in one cycle: longer than the queue */
static void a_tx_ring(void)
{
	if (!fresh(NIC_RX_BUFS))
		return;
	for (uint16_t i = 0; i < VIO_QSIZE; i++)
		nic.txq.desc[i] = (struct vio_desc){ (uintptr_t)spare[0], 64, VIO_DESC_F_NEXT,
						     (uint16_t)((i + 1) % VIO_QSIZE) };
	offer(&nic.txq, 0);
	expect_fault("tx: a chain through every descriptor and round again: NEEDS_RESET");
}

static void a_tx_hole(void)
{
	tx_one("tx: a buffer in a hole: NEEDS_RESET", HOLE, 72, 0, 0);
}

static void a_tx_ram_end(void)
{
	tx_one("tx: a buffer across the end of RAM: NEEDS_RESET", ram_end() - 36, 72, 0, 0);
}

static void a_tx_at_end(void)
{
	tx_one("tx: a buffer at the end of RAM: NEEDS_RESET", ram_end(), 72, 0, 0);
}

static void a_tx_below(void)
{
	tx_one("tx: a buffer just below RAM: NEEDS_RESET", env.ram_base - 72, 72, 0, 0);
}

static void a_tx_wrap(void)
{
	tx_one("tx: a buffer wrapping 2^64: NEEDS_RESET", ~0ul - 35, 72, 0, 0);
}

static void a_tx_uart(void)
{
	tx_one("tx: a frame from the UART: NEEDS_RESET", UART_BASE, 72, 0, 0);
}

static void a_tx_self(void)
{
	tx_one("tx: a frame from its own registers: NEEDS_RESET", nic.dev.base, 72, 0, 0);
}

static void a_tx_plic(void)
{
	tx_one("tx: a frame from the PLIC: NEEDS_RESET", PLIC_BASE, 72, 0, 0);
}

static void a_tx_header_mmio(void)
{
	uint32_t s = seq_next++;

	if (!fresh(NIC_RX_BUFS))
		return;
	put_frame(spare[0], nic.mac, s, 100);
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ nic.dev.base + VIO_CONFIG, NIC_HDR, VIO_DESC_F_NEXT,
						    ATT_DESC + 1 };
	nic.txq.desc[ATT_DESC + 1] = (struct vio_desc){ (uintptr_t)spare[0] + NIC_HDR, 100, 0, 0 };
	offer(&nic.txq, ATT_DESC);
	expect_fault("tx: the header in its own config space: NEEDS_RESET");
}

static void a_tx_indirect(void)
{
	tx_one("tx: INDIRECT (not offered): NEEDS_RESET", (uintptr_t)spare[0],
	       put_frame(spare[0], nic.mac, seq_next++, 100), VIO_DESC_F_INDIRECT, 0);
}

static void a_tx_len_zero(void)
{
	tx_one("tx: a zero-length descriptor: NEEDS_RESET", (uintptr_t)spare[0], 0, 0, 0);
}

static void a_tx_next_range(void)
{
	tx_one("tx: next 500 of 128: NEEDS_RESET", (uintptr_t)spare[0], NIC_HDR, VIO_DESC_F_NEXT, 500);
}

/* avail.idx moved by @by: more chains than the queue has entries. */
static void tx_avail_move(const char *what, uint16_t by)
{
	uint32_t s = seq_next++;
	uint16_t idx;

	if (!fresh(NIC_RX_BUFS))
		return;
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0],
						    put_frame(spare[0], nic.mac, s, 100), 0, 0 };
	idx = nic.txq.avail->idx;
	for (uint16_t i = 0; i < VIO_QSIZE; i++)
		nic.txq.avail->ring[i] = ATT_DESC;
	__atomic_store_n(&nic.txq.avail->idx, (uint16_t)(idx + by), __ATOMIC_RELEASE);
	vio_write(&nic.dev, VIO_QUEUE_NOTIFY, 1);
	expect_fault(what);
	check_eq(T, "tx avail.idx moved: no frame", helper_wait(s, 100, QUIET_US), 0);
}

static void a_tx_avail_jump(void)
{
	tx_avail_move("tx: avail.idx 129 ahead (queue of 128): NEEDS_RESET", VIO_QSIZE + 1);
	tx_avail_move("tx: avail.idx 1000 ahead: NEEDS_RESET", 1000);
	tx_avail_move("tx: avail.idx one back: NEEDS_RESET", 0xffff);
}

static void a_tx_head_range(void)
{
	uint16_t idx;

	if (!fresh(NIC_RX_BUFS))
		return;
	idx = nic.txq.avail->idx;
	nic.txq.avail->ring[idx % VIO_QSIZE] = 1000;
	__atomic_store_n(&nic.txq.avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
	vio_write(&nic.dev, VIO_QUEUE_NOTIFY, 1);
	expect_fault("tx: head 1000 of 128: NEEDS_RESET");
}

/* A transmit chain with a device-writable part: given back empty, dropped. */
static void a_tx_writable(void)
{
	uint32_t s = seq_next++;
	struct vio_used_elem e;

	if (!fresh(NIC_RX_BUFS))
		return;
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], put_frame(spare[0], nic.mac, s, 100),
						    VIO_DESC_F_NEXT, ATT_DESC + 1 };
	nic.txq.desc[ATT_DESC + 1] = (struct vio_desc){ (uintptr_t)spare[1], 64, VIO_DESC_F_WRITE, 0 };
	offer(&nic.txq, ATT_DESC);
	tx_dropped++;
	check_eq(T, "tx with a writable buffer: given back", vio_wait_used(&nic.txq, WAIT_US, &e), 1);
	check_eq(T, "tx with a writable buffer: 0 bytes written", e.len, 0);
	check_eq(T, "tx with a writable buffer: dropped", helper_wait(s, 100, QUIET_US), 0);
	check_eq(T, "tx with a writable buffer: healthy", healthy(), 1);
	/* the other order: readable after writable */
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[1], 64, VIO_DESC_F_WRITE | VIO_DESC_F_NEXT,
						    ATT_DESC + 1 };
	nic.txq.desc[ATT_DESC + 1] = (struct vio_desc){ (uintptr_t)spare[0], NIC_HDR + 100, 0, 0 };
	offer(&nic.txq, ATT_DESC);
	expect_fault("tx: readable after writable: NEEDS_RESET");
}

/* Send a chain of one descriptor holding @total bytes of @buf; its frame must
 * arrive (@len, @seq) or, @dropped, not. */
static void tx_frame_case(const char *what, uint8_t *buf, uint32_t total, uint32_t seq, uint32_t len,
			  bool dropped)
{
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)buf, total, 0, 0 };
	offer(&nic.txq, ATT_DESC);
	nic_tx_reap(&nic);
	if (dropped)
		tx_dropped++;
	check_eq(T, what, helper_wait(seq, len, dropped ? QUIET_US : WAIT_US), dropped ? 0 : 1);
}

/* Frames of every size around the limits: 14..1514 bytes pass, others not. */
static void a_tx_sizes(void)
{
	static const struct {
		uint32_t len;
		bool dropped;
	} sizes[] = { { 60, false }, { 1514, false }, { 1515, true }, { 4000, true } };
	uint32_t s;

	if (!fresh(NIC_RX_BUFS))
		return;
	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++) {
		s = seq_next++;
		put_frame(spare[0], nic.mac, s, sizes[i].len);
		tx_frame_case(sizes[i].dropped ? "tx: an oversized frame dropped" : "tx: a frame at the limit arrives",
			      spare[0], NIC_HDR + sizes[i].len, s, sizes[i].len, sizes[i].dropped);
	}
	/* below an Ethernet header: 13 bytes of frame, the header alone, less */
	static const uint32_t runts[] = { NIC_HDR + 13, NIC_HDR, NIC_HDR - 1 };

	for (unsigned int i = 0; i < ARRAY_SIZE(runts); i++) {
		s = seq_next++;
		put_frame(spare[0], nic.mac, s, 60);
		tx_frame_case("tx: a runt frame dropped", spare[0], runts[i], s, 60, true);
	}
	/* 14 bytes: an Ethernet header and nothing else arrives */
	put_frame(spare[0], nic.mac, 0, 60);
	put_be16(spare[0] + NIC_HDR + 12, 0x88b6);
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], NIC_HDR + 14, 0, 0 };
	offer(&nic.txq, ATT_DESC);
	{
		unsigned long end = rdtime() + us_to_ticks(WAIT_US);
		bool got = false;

		while (!got && rdtime() < end) {
			uint32_t l;
			uint16_t id;
			const uint8_t *f = nic_rx_next(&helper, 1000, &l, &id);

			if (f)
				got = l == 14 && get_be16(f + 12) == 0x88b6 && !memcmp(f + 6, nic.mac, 6);
			if (f)
				nic_rx_done(&helper, id);
		}
		check_eq(T, "tx: a 14-byte frame arrives", got, 1);
	}
	/* 1515 bytes over a header descriptor and two more */
	s = seq_next++;
	if (!fresh(NIC_RX_BUFS))
		return;
	put_frame(spare[0], nic.mac, s, 1515);
	offer(&nic.txq, split_chain(&nic.txq, spare[0], NIC_HDR + 1515, 3, 0));
	tx_dropped++;
	check_eq(T, "tx: 1515 bytes in 3 descriptors dropped", helper_wait(s, 1515, QUIET_US), 0);
	check_eq(T, "tx: frame sizes: healthy", healthy(), 1);
}

/* Offload bits in the header (none offered): dropped; other fields: ignored. */
static void a_tx_offload(void)
{
	static const struct {
		unsigned int off;
		uint8_t v;
		bool dropped;
	} cases[] = { { 0, NET_HDR_F_NEEDS_CSUM, true }, { 1, 1, true }, { 1, 0x80, true },
		      { 2, 0xff, false }, { 4, 0xff, false }, { 6, 0xff, false }, { 8, 0xff, false },
		      { 10, 0xff, false } };
	uint32_t s;

	if (!fresh(NIC_RX_BUFS))
		return;
	for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++) {
		s = seq_next++;
		put_frame(spare[0], nic.mac, s, 100);
		spare[0][cases[i].off] = cases[i].v;
		tx_frame_case(cases[i].dropped ? "tx: an offload flag: dropped" :
						 "tx: other header fields: ignored, the frame arrives",
			      spare[0], NIC_HDR + 100, s, 100, cases[i].dropped);
	}
	check_eq(T, "tx offload header: healthy", healthy(), 1);
}

/* Everything rewritten right after the notify: what goes out is what was
 * there at the notify (the device copied it in that exit), never the new
 * header, source, length or buffer, nor a mix. */
static void a_tx_toctou(void)
{
	for (int round = 0; round < 20; round++) {
		uint32_t s = seq_next++, s2 = seq_next++;
		volatile struct vio_desc *d = &nic.txq.desc[ATT_DESC];

		if (!fresh(NIC_RX_BUFS))
			return;
		put_frame(spare[0], nic.mac, s, 100);
		put_frame(spare[1], nic.mac, s2, 1000);
		*d = (struct vio_desc){ (uintptr_t)spare[0], NIC_HDR + 100, 0, 0 };
		offer(&nic.txq, ATT_DESC);
		/* too late: all of it */
		spare[0][0] = NET_HDR_F_NEEDS_CSUM;
		spare[0][NIC_HDR + 11] ^= 0x5a;		/* a source that is not ours */
		spare[0][NIC_HDR + 40] ^= 0xff;		/* the payload */
		d->len = NIC_HDR + 1515;
		d->addr = (uintptr_t)spare[1];
		if (helper_wait(s, 100, WAIT_US) != 1 || helper_wait(s2, 1000, QUIET_US) != 0) {
			report_fail(T, "tx toctou round %d: not the frame of the notify (want it intact)", round);
			return;
		}
	}
	report_pass(T, "tx toctou: 20 rounds, each the frame as it was at the notify");
}

static uint8_t own_last;

/* The second vCPU: source, header flags and length change all the time. */
static void flip_tx(unsigned long i)
{
	volatile uint8_t *f = spare[0];

	f[0] = (i & 1) ? NET_HDR_F_NEEDS_CSUM : 0;
	f[NIC_HDR + 11] = (i & 2) ? own_last ^ 0x5a : own_last;
	nic.txq.desc[ATT_DESC].len = (i & 4) ? NIC_HDR + 1515 : NIC_HDR + 100;
}

/* The helper takes what came: every frame from the attacked NIC intact
 * (@seq, @len) and with its own source; the count. */
static unsigned long helper_drain(uint32_t seq, uint32_t len, unsigned long *bad)
{
	unsigned long n = 0;
	const uint8_t *f;
	uint32_t l;
	uint16_t id;

	while ((f = nic_rx_next(&helper, 0, &l, &id))) {
		if (memcmp(f + 6, nic.mac, 6) || !nic_test_intact(f, l, ATTACK_TAG, seq, len))
			(*bad)++;
		n++;
		nic_rx_done(&helper, id);
	}
	return n;
}

static void a_tx_toctou_race(void)
{
	uint32_t s = seq_next++;
	unsigned long got = 0, bad = 0, rounds, sent, end;
	struct vio_used_elem e;

	if (!fresh(NIC_RX_BUFS))
		return;
	own_last = nic.mac[5];
	put_frame(spare[0], nic.mac, s, 100);
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], NIC_HDR + 100, 0, 0 };
	if (!racer_start(T, flip_tx))
		return;
	/* the vCPUs may share a hart, the flips then in bursts: long enough
	 * for some frames to go in a good state */
	end = rdtime() + us_to_ticks(RACE_US);
	for (sent = 0; sent < RACE_FRAMES || (got < RACE_GOOD && rdtime() < end); sent++) {
		offer(&nic.txq, ATT_DESC);
		if (!vio_wait_used(&nic.txq, WAIT_US, &e))
			break;
		got += helper_drain(s, 100, &bad);
	}
	rounds = racer_stop();
	got += helper_drain(s, 100, &bad);
	report_info(T, "tx toctou race: %lu frames, %lu arrived, %lu flips", sent, got, rounds);
	check_eq(T, "tx toctou race: every frame that arrived was whole, with our source", bad, 0);
	check_ge(T, "tx toctou race: some frames arrived", got, 1);
	check_eq(T, "tx toctou race: healthy", healthy(), 1);
}

/* Write queue @qi's configuration registers from @q and set it ready. */
static void reprogram(unsigned int qi, const struct vio_queue *q)
{
	unsigned long a;

	vio_write(&nic.dev, VIO_QUEUE_SEL, qi);
	vio_write(&nic.dev, VIO_QUEUE_NUM, q->size);
	a = (uintptr_t)q->desc;
	vio_write(&nic.dev, VIO_QUEUE_DESC_LO, (uint32_t)a);
	vio_write(&nic.dev, VIO_QUEUE_DESC_HI, (uint32_t)(a >> 32));
	a = (uintptr_t)q->avail;
	vio_write(&nic.dev, VIO_QUEUE_DRIVER_LO, (uint32_t)a);
	vio_write(&nic.dev, VIO_QUEUE_DRIVER_HI, (uint32_t)(a >> 32));
	a = (uintptr_t)q->used;
	vio_write(&nic.dev, VIO_QUEUE_DEVICE_LO, (uint32_t)a);
	vio_write(&nic.dev, VIO_QUEUE_DEVICE_HI, (uint32_t)(a >> 32));
	vio_write(&nic.dev, VIO_QUEUE_READY, 1);
}

/* A queue starts again from index 0 after a reset; the driver's side too
 * (the other vCPU goes on adding to it meanwhile). */
static void restart_indices(struct vio_queue *q)
{
	__atomic_store_n(&q->avail->idx, 0, __ATOMIC_RELEASE);
}

/* The second vCPU resets queue @qi (QueueReady 0) and sets it up again,
 * over and over. */
static void reset_queue(unsigned int qi, struct vio_queue *q)
{
	vio_write(&nic.dev, VIO_QUEUE_SEL, qi);
	vio_write(&nic.dev, VIO_QUEUE_READY, 0);
	restart_indices(q);
	reprogram(qi, q);
}

static void reset_txq(unsigned long i)
{
	(void)i;
	reset_queue(1, &nic.txq);
}

static void reset_rxq(unsigned long i)
{
	(void)i;
	reset_queue(0, &nic.rxq);
}

/* The second vCPU resets the whole device (Status 0) and brings it up again
 * (registers only), over and over. */
static void reset_dev(unsigned long i)
{
	(void)i;
	vio_write(&nic.dev, VIO_STATUS, 0);
	vio_write(&nic.dev, VIO_STATUS, VIO_S_ACK | VIO_S_DRIVER);
	vio_write(&nic.dev, VIO_DRV_FEATURES_SEL, 0);
	vio_write(&nic.dev, VIO_DRV_FEATURES, (1u << NIC_F_MAC) | (1u << NIC_F_STATUS));
	vio_write(&nic.dev, VIO_DRV_FEATURES_SEL, 1);
	vio_write(&nic.dev, VIO_DRV_FEATURES, 1u << (VIO_F_VERSION_1 - 32));
	vio_write(&nic.dev, VIO_STATUS, VIO_S_ACK | VIO_S_DRIVER | VIO_S_FEATURES_OK);
	restart_indices(&nic.rxq);
	restart_indices(&nic.txq);
	reprogram(0, &nic.rxq);
	reprogram(1, &nic.txq);
	vio_write(&nic.dev, VIO_STATUS, VIO_S_ACK | VIO_S_DRIVER | VIO_S_FEATURES_OK | VIO_S_DRIVER_OK);
}

/* Frames out and in while the second vCPU resets a queue or the device:
 * whatever arrives is whole (or the helper says otherwise). */
static void reset_race(const char *what, void (*fn)(unsigned long))
{
	uint32_t s = seq_next++, s_in = seq_next++;
	unsigned long got = 0, bad = 0, rounds;

	if (!fresh(NIC_RX_BUFS))
		return;
	put_frame(spare[0], nic.mac, s, 100);
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], NIC_HDR + 100, 0, 0 };
	for (uint16_t i = 0; i < VIO_QSIZE; i++)
		nic.txq.avail->ring[i] = ATT_DESC;
	if (!racer_start(T, fn))
		return;
	for (int i = 0; i < RACE_FRAMES; i++) {
		__atomic_store_n(&nic.txq.avail->idx, (uint16_t)(nic.txq.avail->idx + 1), __ATOMIC_RELEASE);
		vio_write(&nic.dev, VIO_QUEUE_NOTIFY, 1);
		helper_send(s_in, 100);
		/* the attacked NIC's receive ring: a buffer back each round, what
		 * came not looked at (a reset restarts the device's indices) */
		nic.rxq.used_seen = nic.rxq.used->idx;
		nic_rx_done(&nic, (uint16_t)(i % NIC_RX_BUFS));
		got += helper_drain(s, 100, &bad);
	}
	rounds = racer_stop();
	got += helper_drain(s, 100, &bad);
	report_info(T, "%s: %d rounds, %lu frames arrived, %lu resets", what, RACE_FRAMES, got, rounds);
	check_eq(T, "reset race: every frame that arrived was whole", bad, 0);
}

static void a_tx_reset_race(void)
{
	reset_race("tx queue reset race", reset_txq);
}

static void a_rx_reset_race(void)
{
	reset_race("rx queue reset race", reset_rxq);
}

static void a_dev_reset_race(void)
{
	reset_race("device reset race", reset_dev);
}

/* ---- receive queue: the chain is taken when a frame comes ---- */

/* A receive chain from ATT_DESC (already written) on the ring of a NIC with
 * no other buffer; the helper sends a frame; the queue must fault. */
static void rx_offer_and_fault(const char *what)
{
	uint32_t s = seq_next++;

	offer(&nic.rxq, ATT_DESC);
	helper_send(s, 100);
	expect_fault(what);
}

static void rx_one(const char *what, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	if (!fresh(0))
		return;
	nic.rxq.desc[ATT_DESC] = (struct vio_desc){ addr, len, flags, next };
	rx_offer_and_fault(what);
}

static void a_rx_loop(void)
{
	rx_one("rx: a descriptor that is its own next: NEEDS_RESET", (uintptr_t)spare[0], 64,
	       VIO_DESC_F_WRITE | VIO_DESC_F_NEXT, ATT_DESC);
}

static bool all(const uint8_t *p, uint32_t len, uint8_t v)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void a_rx_long(void)
{
	uint32_t s = seq_next++;
	struct vio_used_elem e;
	uint8_t got[NIC_HDR + 200];

	/* 32 writable descriptors of 64 bytes: the frame lands across them */
	if (!fresh(0))
		return;
	memset(piece, 0xee, sizeof(piece));
	for (unsigned int i = 0; i < 32; i++)
		nic.rxq.desc[ATT_DESC + i] = (struct vio_desc){ (uintptr_t)piece[i], 64,
			(uint16_t)(VIO_DESC_F_WRITE | (i < 31 ? VIO_DESC_F_NEXT : 0)), (uint16_t)(ATT_DESC + i + 1) };
	offer(&nic.rxq, ATT_DESC);
	helper_send(s, 200);
	if (check_eq(T, "rx: a chain of 32 descriptors gets the frame", vio_wait_used(&nic.rxq, WAIT_US, &e), 1)) {
		for (unsigned int i = 0; i < sizeof(got); i++)
			got[i] = piece[i / 64][i % 64];
		check_eq(T, "rx: 32 descriptors: 12 + 200 bytes written", e.len, NIC_HDR + 200);
		check_eq(T, "rx: 32 descriptors: the frame intact",
			 nic_test_intact(got + NIC_HDR, 200, ATTACK_TAG, s, 200), 1);
		check_eq(T, "rx: 32 descriptors: nothing past it", all(&piece[0][0] + sizeof(got),
								       sizeof(piece) - sizeof(got), 0xee), 1);
	}
	/* 33: one more than the device takes */
	if (!fresh(0))
		return;
	for (unsigned int i = 0; i < 33; i++)
		nic.rxq.desc[ATT_DESC + i] = (struct vio_desc){ (uintptr_t)piece[i], 64,
			(uint16_t)(VIO_DESC_F_WRITE | (i < 32 ? VIO_DESC_F_NEXT : 0)), (uint16_t)(ATT_DESC + i + 1) };
	rx_offer_and_fault("rx: a chain of 33 descriptors: NEEDS_RESET");
}

static void a_rx_ring(void)
{
	if (!fresh(0))
		return;
	for (uint16_t i = 0; i < VIO_QSIZE; i++)
		nic.rxq.desc[i] = (struct vio_desc){ (uintptr_t)piece[0], 16, VIO_DESC_F_WRITE | VIO_DESC_F_NEXT,
						     (uint16_t)((i + 1) % VIO_QSIZE) };
	offer(&nic.rxq, 0);
	helper_send(seq_next++, 100);
	expect_fault("rx: a chain through every descriptor and round again: NEEDS_RESET");
}

static void a_rx_hole(void)
{
	rx_one("rx: a buffer in a hole: NEEDS_RESET", HOLE, 2048, VIO_DESC_F_WRITE, 0);
}

static void a_rx_ram_end(void)
{
	rx_one("rx: a buffer across the end of RAM: NEEDS_RESET", ram_end() - 1024, 2048, VIO_DESC_F_WRITE, 0);
}

static void a_rx_at_end(void)
{
	rx_one("rx: a buffer at the end of RAM: NEEDS_RESET", ram_end(), 2048, VIO_DESC_F_WRITE, 0);
}

static void a_rx_below(void)
{
	rx_one("rx: a buffer just below RAM: NEEDS_RESET", env.ram_base - 2048, 2048, VIO_DESC_F_WRITE, 0);
}

static void a_rx_wrap(void)
{
	rx_one("rx: a buffer wrapping 2^64: NEEDS_RESET", ~0ul - 1023, 2048, VIO_DESC_F_WRITE, 0);
}

static void a_rx_uart(void)
{
	rx_one("rx: a frame into the UART: NEEDS_RESET", UART_BASE, 2048, VIO_DESC_F_WRITE, 0);
}

static void a_rx_self(void)
{
	rx_one("rx: a frame into its own registers: NEEDS_RESET", nic.dev.base, 2048, VIO_DESC_F_WRITE, 0);
}

static void a_rx_plic(void)
{
	rx_one("rx: a frame into the PLIC: NEEDS_RESET", PLIC_BASE, 2048, VIO_DESC_F_WRITE, 0);
}

static void a_rx_indirect(void)
{
	rx_one("rx: INDIRECT (not offered): NEEDS_RESET", (uintptr_t)spare[0], 2048,
	       VIO_DESC_F_WRITE | VIO_DESC_F_INDIRECT, 0);
}

static void a_rx_len_zero(void)
{
	rx_one("rx: a zero-length descriptor: NEEDS_RESET", (uintptr_t)spare[0], 0, VIO_DESC_F_WRITE, 0);
}

static void a_rx_next_range(void)
{
	rx_one("rx: next 500 of 128: NEEDS_RESET", (uintptr_t)spare[0], 64,
	       VIO_DESC_F_WRITE | VIO_DESC_F_NEXT, 500);
}

static void rx_avail_move(const char *what, uint16_t by)
{
	uint16_t idx;

	if (!fresh(0))
		return;
	nic.rxq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], 2048, VIO_DESC_F_WRITE, 0 };
	for (uint16_t i = 0; i < VIO_QSIZE; i++)
		nic.rxq.avail->ring[i] = ATT_DESC;
	idx = nic.rxq.avail->idx;
	__atomic_store_n(&nic.rxq.avail->idx, (uint16_t)(idx + by), __ATOMIC_RELEASE);
	vio_write(&nic.dev, VIO_QUEUE_NOTIFY, 0);
	helper_send(seq_next++, 100);
	expect_fault(what);
}

static void a_rx_avail_jump(void)
{
	rx_avail_move("rx: avail.idx 129 ahead (queue of 128): NEEDS_RESET", VIO_QSIZE + 1);
	rx_avail_move("rx: avail.idx one back: NEEDS_RESET", 0xffff);
}

static void a_rx_head_range(void)
{
	uint16_t idx;

	if (!fresh(0))
		return;
	idx = nic.rxq.avail->idx;
	nic.rxq.avail->ring[idx % VIO_QSIZE] = 1000;
	__atomic_store_n(&nic.rxq.avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
	helper_send(seq_next++, 100);
	expect_fault("rx: head 1000 of 128: NEEDS_RESET");
}

/* A receive chain the device may not write, or too small: given back with
 * nothing written, the frame dropped. */
static void rx_refused(const char *what, uint32_t len, uint16_t flags)
{
	uint32_t s = seq_next++;
	struct vio_used_elem e;

	if (!fresh(0))
		return;
	memset(spare[0], 0xee, sizeof(spare[0]));
	nic.rxq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], len, flags, 0 };
	offer(&nic.rxq, ATT_DESC);
	helper_send(s, 100);
	rx_dropped++;
	if (!check_eq(T, what, vio_wait_used(&nic.rxq, WAIT_US, &e), 1))
		return;
	check_eq(T, "refused rx buffer: 0 bytes written", e.len, 0);
	check_eq(T, "refused rx buffer: untouched", all(spare[0], sizeof(spare[0]), 0xee), 1);
	check_eq(T, "refused rx buffer: healthy", healthy(), 1);
}

static void a_rx_readable(void)
{
	rx_refused("rx: a device-readable buffer given back", 2048, 0);
	/* writable, then readable: out of order */
	if (!fresh(0))
		return;
	nic.rxq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], 1024, VIO_DESC_F_WRITE | VIO_DESC_F_NEXT,
						    ATT_DESC + 1 };
	nic.rxq.desc[ATT_DESC + 1] = (struct vio_desc){ (uintptr_t)spare[1], 1024, 0, 0 };
	rx_offer_and_fault("rx: readable after writable: NEEDS_RESET");
}

static void a_rx_small(void)
{
	uint32_t s = seq_next++;
	struct vio_used_elem e;

	rx_refused("rx: a buffer one byte too small given back", NIC_HDR + 99, VIO_DESC_F_WRITE);
	/* exactly large enough */
	if (!fresh(0))
		return;
	nic.rxq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], NIC_HDR + 100, VIO_DESC_F_WRITE, 0 };
	offer(&nic.rxq, ATT_DESC);
	helper_send(s, 100);
	if (check_eq(T, "rx: a buffer of exactly 12 + 100 bytes gets the frame",
		     vio_wait_used(&nic.rxq, WAIT_US, &e), 1))
		check_eq(T, "rx: exact buffer: the frame intact", e.len == NIC_HDR + 100 &&
			 nic_test_intact(spare[0] + NIC_HDR, 100, ATTACK_TAG, s, 100), 1);
}

/* The second vCPU moves the receive buffer between two places and changes
 * its length while frames come: each frame lands whole in one of them, or
 * (too small at the take) in none; never split between them. */
static void flip_rx(unsigned long i)
{
	volatile struct vio_desc *d = &nic.rxq.desc[ATT_DESC];

	d->addr = (uintptr_t)spare[i & 1];
	d->len = (i & 2) ? 8 : 2048;
}

static void a_rx_toctou_race(void)
{
	unsigned long whole = 0, none = 0, bad = 0, end;
	struct vio_used_elem e;

	if (!fresh(0))
		return;
	nic.rxq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], 2048, VIO_DESC_F_WRITE, 0 };
	if (!racer_start(T, flip_rx))
		return;
	end = rdtime() + us_to_ticks(RACE_US);
	for (int round = 0; round < 300 || (whole < RACE_GOOD && rdtime() < end); round++) {
		uint32_t s = seq_next++;
		bool in0, in1, clean0, clean1;

		memset(spare, 0xee, sizeof(spare));
		offer(&nic.rxq, ATT_DESC);
		helper_send(s, 100);
		if (!vio_wait_used(&nic.rxq, WAIT_US, &e) || e.id != ATT_DESC) {
			bad++;
			break;
		}
		in0 = nic_test_intact(spare[0] + NIC_HDR, 100, ATTACK_TAG, s, 100);
		in1 = nic_test_intact(spare[1] + NIC_HDR, 100, ATTACK_TAG, s, 100);
		clean0 = all(spare[0], sizeof(spare[0]), 0xee);
		clean1 = all(spare[1], sizeof(spare[1]), 0xee);
		if (e.len == 0 && clean0 && clean1)
			none++;
		else if (e.len == NIC_HDR + 100 && ((in0 && clean1) || (in1 && clean0)))
			whole++;
		else
			bad++;
	}
	racer_stop();
	report_info(T, "rx toctou race: %lu frames whole in one buffer, %lu refused, %lu else", whole,
		    none, bad);
	check_eq(T, "rx toctou race: never split, never written past a refusal", bad, 0);
	check_ge(T, "rx toctou race: some frames landed", whole, 1);
}

/* ---- the transport ---- */

static void a_notify_storm(void)
{
	unsigned long t0, n = bootarg_ulong("storm", STORM_NOTIFIES);

	if (!fresh(NIC_RX_BUFS))
		return;
	t0 = rdtime();
	for (unsigned long i = 0; i < n; i++)
		vio_write(&nic.dev, VIO_QUEUE_NOTIFY, (uint32_t)(i % 8));
	report_info(T, "%lu notifies (queues 0..7, nothing to take) in %lu us", n,
		    ticks_to_us(rdtime() - t0));
	check_eq(T, "notify storm: healthy", healthy(), 1);
}

static void a_flood(void)
{
	unsigned long end, sent = 0, got = 0, bad = 0;
	uint32_t s = seq_next++;

	if (!fresh(NIC_RX_BUFS))
		return;
	end = rdtime() + us_to_ticks(FLOOD_US);
	while (rdtime() < end) {
		nic_send(s, NIC_FRAME_MAX);
		sent++;
		got += helper_drain(s, NIC_FRAME_MAX, &bad);
	}
	report_info(T, "flood: %lu frames of 1514 bytes sent, %lu arrived", sent, got);
	check_eq(T, "flood: every frame that arrived was whole", bad, 0);
	check_ge(T, "flood: frames arrived", got, 1);
}

/* A queue configuration the device must refuse at QueueReady. */
static void bad_queue(const char *what, unsigned int qi, uint32_t num, uint64_t desc, uint64_t avail,
		      uint64_t used)
{
	vio_negotiate(&nic.dev, (1ull << VIO_F_VERSION_1));
	vio_write(&nic.dev, VIO_QUEUE_SEL, qi);
	vio_write(&nic.dev, VIO_QUEUE_NUM, num);
	vio_write(&nic.dev, VIO_QUEUE_DESC_LO, (uint32_t)desc);
	vio_write(&nic.dev, VIO_QUEUE_DESC_HI, (uint32_t)(desc >> 32));
	vio_write(&nic.dev, VIO_QUEUE_DRIVER_LO, (uint32_t)avail);
	vio_write(&nic.dev, VIO_QUEUE_DRIVER_HI, (uint32_t)(avail >> 32));
	vio_write(&nic.dev, VIO_QUEUE_DEVICE_LO, (uint32_t)used);
	vio_write(&nic.dev, VIO_QUEUE_DEVICE_HI, (uint32_t)(used >> 32));
	vio_write(&nic.dev, VIO_QUEUE_READY, 1);
	check_eq(T, what, vio_read(&nic.dev, VIO_QUEUE_READY) == 0 && vio_needs_reset(&nic.dev), 1);
}

static void a_bad_config(void)
{
	uint64_t d = (uintptr_t)nic.txq.desc, a = (uintptr_t)nic.txq.avail, u = (uintptr_t)nic.txq.used;

	bad_queue("config: the descriptor table in its own registers: refused", 1, 128, nic.dev.base, a, u);
	bad_queue("config: the used ring across the end of RAM: refused", 1, 128, d, a, ram_end() - 512);
	bad_queue("config: the available ring in a hole: refused", 0, 128, d, HOLE, u);
	bad_queue("config: the used ring in the PLIC: refused", 0, 128, d, a, PLIC_BASE);
	bad_queue("config: the table wrapping 2^64: refused", 1, 128, ~0ull - 1023, a, u);
	bad_queue("config: QueueNum 3: refused", 1, 3, d, a, u);
	bad_queue("config: QueueNum 0: refused", 1, 0, d, a, u);
	bad_queue("config: QueueNum 512 (max 256): refused", 1, 512, d, a, u);
	bad_queue("config: QueueNum 65536: refused", 1, 65536, d, a, u);
	bad_queue("config: a table 8-byte aligned: refused", 1, 128, d + 8, a, u);
}

static void a_features(void)
{
	static const struct {
		const char *what;
		uint64_t f;
	} cases[] = {
		{ "features: INDIRECT_DESC (not offered): FEATURES_OK refused",
		  (1ull << VIO_F_VERSION_1) | (1ull << VIO_F_INDIRECT_DESC) },
		{ "features: EVENT_IDX (not offered): FEATURES_OK refused",
		  (1ull << VIO_F_VERSION_1) | (1ull << VIO_F_EVENT_IDX) },
		{ "features: RING_PACKED (not offered): FEATURES_OK refused",
		  (1ull << VIO_F_VERSION_1) | (1ull << VIO_F_RING_PACKED) },
		{ "features: no VERSION_1 (legacy): FEATURES_OK refused", 1ull << NIC_F_MAC },
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++)
		check_eq(T, cases[i].what, vio_negotiate(&nic.dev, cases[i].f) & VIO_S_FEATURES_OK, 0);
}

/* Work before DRIVER_OK: nothing taken; DRIVER_OK without FEATURES_OK: not kept. */
static void a_early(void)
{
	uint32_t s = seq_next++;

	vio_reset(&nic.dev);
	vio_write(&nic.dev, VIO_STATUS, VIO_S_ACK | VIO_S_DRIVER | VIO_S_DRIVER_OK);
	check_eq(T, "DRIVER_OK without FEATURES_OK: not kept",
		 vio_read(&nic.dev, VIO_STATUS) & VIO_S_DRIVER_OK, 0);
	vio_negotiate(&nic.dev, (1ull << VIO_F_VERSION_1) | (1ull << NIC_F_MAC));
	if (vio_queue_setup(&nic.dev, 0, VIO_QSIZE, &nic.rxq) || vio_queue_setup(&nic.dev, 1, VIO_QSIZE, &nic.txq)) {
		report_fail(T, "early: queue setup (got a refusal, want the queues)");
		return;
	}
	nic.txq.desc[ATT_DESC] = (struct vio_desc){ (uintptr_t)spare[0], put_frame(spare[0], nic.mac, s, 100),
						    0, 0 };
	offer(&nic.txq, ATT_DESC);
	check_eq(T, "a notify before DRIVER_OK: nothing sent", helper_wait(s, 100, QUIET_US), 0);
	vio_driver_ok(&nic.dev);
	vio_write(&nic.dev, VIO_QUEUE_NOTIFY, 1);
	check_eq(T, "after DRIVER_OK the frame goes", helper_wait(s, 100, WAIT_US), 1);
}

/* QueueReset (not offered) mid-use: ignored, the queue goes on. */
static void a_queue_reset_reg(void)
{
	uint32_t s = seq_next++;

	if (!fresh(NIC_RX_BUFS))
		return;
	vio_write(&nic.dev, VIO_QUEUE_SEL, 1);
	vio_write(&nic.dev, VIO_QUEUE_RESET, 1);
	check_eq(T, "QueueReset (not offered): the queue stays ready", vio_read(&nic.dev, VIO_QUEUE_READY), 1);
	nic_send(s, 100);
	check_eq(T, "QueueReset (not offered): frames go on", helper_wait(s, 100, WAIT_US), 1);
}

struct net_attack {
	const char *name;
	void (*fn)(void);
};

static const struct net_attack net_attacks[] = {
	{ "tx_loop", a_tx_loop },
	{ "tx_long_chain", a_tx_long },
	{ "tx_chain_round_the_queue", a_tx_ring },
	{ "tx_outside_ram", a_tx_hole },
	{ "tx_ram_end", a_tx_ram_end },
	{ "tx_at_ram_end", a_tx_at_end },
	{ "tx_below_ram", a_tx_below },
	{ "tx_wrap", a_tx_wrap },
	{ "tx_mmio_uart", a_tx_uart },
	{ "tx_mmio_self", a_tx_self },
	{ "tx_mmio_plic", a_tx_plic },
	{ "tx_header_mmio", a_tx_header_mmio },
	{ "tx_indirect", a_tx_indirect },
	{ "tx_len_zero", a_tx_len_zero },
	{ "tx_next_range", a_tx_next_range },
	{ "tx_avail_jump", a_tx_avail_jump },
	{ "tx_head_range", a_tx_head_range },
	{ "tx_direction", a_tx_writable },
	{ "tx_oversized", a_tx_sizes },
	{ "tx_offload_header", a_tx_offload },
	{ "tx_toctou", a_tx_toctou },
	{ "tx_toctou_race", a_tx_toctou_race },
	{ "rx_loop", a_rx_loop },
	{ "rx_long_chain", a_rx_long },
	{ "rx_chain_round_the_queue", a_rx_ring },
	{ "rx_outside_ram", a_rx_hole },
	{ "rx_ram_end", a_rx_ram_end },
	{ "rx_at_ram_end", a_rx_at_end },
	{ "rx_below_ram", a_rx_below },
	{ "rx_wrap", a_rx_wrap },
	{ "rx_mmio_uart", a_rx_uart },
	{ "rx_mmio_self", a_rx_self },
	{ "rx_mmio_plic", a_rx_plic },
	{ "rx_indirect", a_rx_indirect },
	{ "rx_len_zero", a_rx_len_zero },
	{ "rx_next_range", a_rx_next_range },
	{ "rx_avail_jump", a_rx_avail_jump },
	{ "rx_head_range", a_rx_head_range },
	{ "rx_direction", a_rx_readable },
	{ "rx_small_buffer", a_rx_small },
	{ "rx_toctou_race", a_rx_toctou_race },
	{ "tx_queue_reset_race", a_tx_reset_race },
	{ "rx_queue_reset_race", a_rx_reset_race },
	{ "device_reset_race", a_dev_reset_race },
	{ "queue_reset_register", a_queue_reset_reg },
	{ "bad_queue_config", a_bad_config },
	{ "features_not_offered", a_features },
	{ "before_driver_ok", a_early },
	{ "notify_storm", a_notify_storm },
	{ "flood", a_flood },
};

static void net_attack(void)
{
	unsigned long from = bootarg_ulong("from", 0), to = bootarg_ulong("to", ARRAY_SIZE(net_attacks) - 1);

	if (!nic_find(&helper, 1, &helper_buf) || !nic_up(&helper, NIC_RX_BUFS)) {
		report_fail(T, "attack: no second NIC to send and receive with (want one on the same switch)");
		return;
	}
	sleep_us(bootarg_ulong("delay", 0) * 1000000);
	report_info(T, "ATTACKS: %lu", to - from + 1);
	for (unsigned long i = from; i <= to && i < ARRAY_SIZE(net_attacks); i++) {
		report_info(T, "ATTACK-BEGIN: %lu %s", i, net_attacks[i].name);
		net_attacks[i].fn();
		recover();
		report_info(T, "ATTACK-END: %lu %s", i, net_attacks[i].name);
	}
	report_info(T, "ATTACKS-DONE: tx_dropped=%lu rx_dropped=%lu", tx_dropped, rx_dropped);
	if (bootarg_ulong("then_flood", 0)) {
		uint32_t s = seq_next++;
		unsigned long bad = 0;

		for (;;) {		/* until the VM is destroyed */
			nic_send(s, NIC_FRAME_MAX);
			helper_drain(s, NIC_FRAME_MAX, &bad);
		}
	}
}

void test_main(unsigned long hartid)
{
	const char *m = env.bootargs;
	unsigned long mode = 0;

	(void)hartid;
	if (!nic_find(&nic, 0, &nic_buf)) {
		report_fail(T, "no virtio-net device in the eight virtio-mmio slots");
		report_done();
	}
	if (!nic_up(&nic, NIC_RX_BUFS)) {
		report_fail(T, "bring-up (features 0x%lx)", (unsigned long)nic.dev.offered);
		report_done();
	}
	report_info(T, "virtio-net in slot %u, mac %02x:%02x:%02x:%02x:%02x:%02x, status %lu", nic.dev.slot,
		    nic.mac[0], nic.mac[1], nic.mac[2], nic.mac[3], nic.mac[4], nic.mac[5],
		    (unsigned long)(nic.dev.offered & (1ull << NIC_F_STATUS) ? vio_config(&nic.dev, 6, 2) : 1));
	check_eq(T, "MAC offered", (nic.dev.offered >> NIC_F_MAC) & 1, 1);
	for (; *m; m++)
		if (!memcmp(m, "mode=", 5)) {
			mode = (unsigned long)m[5] << 8 | (unsigned long)m[6];
			break;
		}
	switch (mode) {
	case 'a' << 8 | 'r':
		mode_arp();
		break;
	case 'a' << 8 | 't':
		net_attack();
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
