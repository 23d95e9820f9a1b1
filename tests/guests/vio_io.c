/* SPDX-License-Identifier: MIT */
/* A guest doing disk and network I/O at once (issue 24), through lib/vio.c
 * and lib/vio_nic.c: its first virtio-blk device and its virtio-net devices.
 * Frames are lib/vio_nic.c's test frames: one that arrives damaged, or
 * from someone else, is seen.
 *
 * Bootargs:
 *   mode=victim  seconds=S, tag=T: a disk operation (write 4 KiB, read it
 *                back, verify) and a network round (a frame from its first
 *                NIC to its second, on one switch, received and verified),
 *                again and again for S seconds; every 250 ms
 *                "VICTIM: ms=T disk=D net=N bad=B other=O", cumulative. bad
 *                counts a request that failed, data or a frame that came back
 *                wrong, a frame lost, and a frame that claims the first NIC's
 *                MAC but is not the one it sent (a spoof that got through).
 *   mode=ring    ring=I ring_n=N count=C (1 <= I <= N): one of N VMs on a
 *                switch, its NIC's MAC 02:ca:fe:00:00:I. It sends C frames
 *                to VM I % N + 1, each again every 20 ms until that VM echoes
 *                it back intact; echoes the frames of VM I - 1; and does a
 *                disk operation at each turn. "NET-RING: ..." and checks:
 *                every frame echoed, every frame of its predecessor received
 *                intact, no unicast meant for another VM, no request failed.
 * The disk's contents are the payload's to overwrite. */
#include "libguest.h"
#include "vio.h"
#include "vio_nic.h"

#define T "vio_io"

#define BLK_T_IN	0
#define BLK_T_OUT	1
#define BLK_T_FLUSH	4
#define BLK_S_OK	0
#define WAIT_US		2000000
#define KIND_DATA	1
#define KIND_ECHO	2
#define REPORT_US	250000
#define RING_RESEND_US	20000
#define RING_TIMEOUT_US	90000000UL
#define RING_LINGER_US	2000000

static struct vio_dev blk;
static struct vio_queue blkq;
static struct vio_blk_hdr hdr;
static volatile uint8_t status;
static uint8_t data[4][4096] __attribute__((aligned(4096)));
static struct vio_nic nic[2];
static struct vio_nic_bufs nic_bufs[2];

/* ---- disk ------------------------------------------------------------------ */

static bool disk_up(void)
{
	uint64_t want = (1ull << VIO_F_VERSION_1);

	if (!vio_find(VIO_ID_BLK, 0, &blk))
		return false;
	if (!(vio_negotiate(&blk, want) & VIO_S_FEATURES_OK))
		return false;
	if (vio_queue_setup(&blk, 0, 8, &blkq))
		return false;
	vio_driver_ok(&blk);
	return true;
}

/* One request over @nseg buffers of 4 KiB (data[0..]); its status, or -1 if
 * the device gave nothing back within WAIT_US. */
static int disk_rw(uint32_t type, uint64_t sector, unsigned int nseg)
{
	uint16_t data_flags = VIO_DESC_F_NEXT | (type == BLK_T_IN ? VIO_DESC_F_WRITE : 0);
	struct vio_used_elem e;
	unsigned int i;

	hdr = (struct vio_blk_hdr){ .type = type, .sector = sector };
	status = 0xa5;
	blkq.desc[0] = (struct vio_desc){ (uintptr_t)&hdr, sizeof(hdr), VIO_DESC_F_NEXT, 1 };
	for (i = 0; i < nseg; i++)
		blkq.desc[1 + i] = (struct vio_desc){ (uintptr_t)data[i], 4096, data_flags,
						      (uint16_t)(2 + i) };
	blkq.desc[1 + i] = (struct vio_desc){ (uintptr_t)&status, 1, VIO_DESC_F_WRITE, 0 };
	vio_submit(&blk, &blkq, 0);
	if (!vio_wait_used(&blkq, WAIT_US, &e) || e.id != 0)
		return -1;
	return status;
}

/* Write 4 KiB at a sector that depends on @k, read it back, compare: the
 * number of things that went wrong (0..3). */
static unsigned long disk_op(unsigned long k)
{
	uint64_t sector = 64 + 8 * (k % 128), seed = 0x5eed0000 + k;
	unsigned long bad = 0;

	pattern_fill(data[0], 4096, seed);
	bad += disk_rw(BLK_T_OUT, sector, 1) != BLK_S_OK;
	for (int j = 0; j < 4096; j++)
		data[0][j] = 0;
	bad += disk_rw(BLK_T_IN, sector, 1) != BLK_S_OK;
	bad += !pattern_same(data[0], 4096, seed);
	return bad;
}

/* ---- frames ----------------------------------------------------------------- */

/* A length in 60..1514 that depends on @seq. */
static uint32_t frame_len(uint32_t seq)
{
	return 60 + (seq * 97) % (NIC_FRAME_MAX - 60 + 1);
}

static void send_test(struct vio_nic *n, const uint8_t *dst, uint32_t tag, uint32_t seq,
		      uint8_t kind)
{
	uint16_t slot;
	uint8_t *f = nic_tx_frame(n, &slot);

	nic_test_frame(f, dst, n->mac, tag, seq, kind, frame_len(seq));
	nic_tx_send(n, slot, frame_len(seq));
}

static bool intact(const uint8_t *f, uint32_t len, uint32_t tag, uint32_t seq)
{
	return nic_test_intact(f, len, tag, seq, frame_len(seq));
}

/* ---- the victim -------------------------------------------------------------- */

static void victim(void)
{
	unsigned long t0 = rdtime(), end = t0 + us_to_ticks(bootarg_ulong("seconds", 10) * 1000000);
	unsigned long next_report = t0, disk = 0, net = 0, bad = 0, other = 0;
	uint32_t tag = (uint32_t)bootarg_ulong("tag", 7), seq = 0;
	struct vio_nic *a = &nic[0], *b = &nic[1];

	while (rdtime() < end) {
		unsigned long until;
		bool got = false;

		bad += disk_op(disk);
		disk++;
		send_test(a, b->mac, tag, seq, KIND_DATA);
		/* delivered in a's notify already: waiting is only for safety */
		until = rdtime() + us_to_ticks(200000);
		while (!got && rdtime() < until) {
			uint32_t len;
			uint16_t id;
			const uint8_t *f = nic_rx_next(b, 1000, &len, &id);

			if (!f)
				continue;
			if (!memcmp(f + 6, a->mac, 6)) {
				got = intact(f, len, tag, seq) && !memcmp(f, b->mac, 6);
				bad += !got;	/* damaged, or not ours: a spoof */
			} else {
				other++;	/* another port's broadcast */
			}
			nic_rx_done(b, id);
		}
		bad += !got;
		net += got;
		seq++;
		if (rdtime() >= next_report) {
			report_info(T, "VICTIM: ms=%lu disk=%lu net=%lu bad=%lu other=%lu",
				    ticks_to_us(rdtime() - t0) / 1000, disk, net, bad, other);
			next_report += us_to_ticks(REPORT_US);
		}
	}
	report_info(T, "VICTIM: ms=%lu disk=%lu net=%lu bad=%lu other=%lu",
		    ticks_to_us(rdtime() - t0) / 1000, disk, net, bad, other);
	check_eq(T, "victim: every request, read and frame right", bad, 0);
	check_ge(T, "victim: disk operations done", disk, 1);
	check_ge(T, "victim: frames done", net, 1);
}

/* ---- a ring of VMs ------------------------------------------------------------- */

static void ring_mac(uint8_t *mac, unsigned long i)
{
	static const uint8_t prefix[5] = { 0x02, 0xca, 0xfe, 0x00, 0x00 };

	memcpy(mac, prefix, 5);
	mac[5] = (uint8_t)i;
}

static void ring(void)
{
	unsigned long me = bootarg_ulong("ring", 1), n = bootarg_ulong("ring_n", 2);
	unsigned long count = bootarg_ulong("count", 50), t0 = rdtime();
	unsigned long resend_at = 0, done_at = 0, sends = 0, disk = 0, disk_bad = 0;
	unsigned long echoed = 0, got = 0, stray = 0, bad = 0, other = 0;
	static uint8_t seen[256];
	uint8_t self[6], next[6], prev[6];
	struct vio_nic *a = &nic[0];

	ring_mac(self, me);
	ring_mac(next, me % n + 1);
	ring_mac(prev, (me + n - 2) % n + 1);
	if (!check_eq(T, "ring: this NIC's MAC is 02:ca:fe:00:00:<ring>", memcmp(a->mac, self, 6), 0))
		return;
	if (count > sizeof(seen))
		count = sizeof(seen);
	/* a request over three segments, read back over three */
	for (int i = 0; i < 3; i++)
		pattern_fill(data[i], 4096, 0x1234 + 4096 * i);
	check_eq(T, "ring: a write of 3 segments", disk_rw(BLK_T_OUT, 8, 3), BLK_S_OK);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4096; j++)
			data[i][j] = 0;
	check_eq(T, "ring: a read of 3 segments", disk_rw(BLK_T_IN, 8, 3), BLK_S_OK);
	check_eq(T, "ring: read back what was written",
		 pattern_same(data[0], 4096, 0x1234) && pattern_same(data[1], 4096, 0x1234 + 4096) &&
		 pattern_same(data[2], 4096, 0x1234 + 8192), 1);
	check_eq(T, "ring: flush", disk_rw(BLK_T_FLUSH, 0, 0), BLK_S_OK);

	while (rdtime() - t0 < us_to_ticks(RING_TIMEOUT_US)) {
		unsigned long now = rdtime();
		const uint8_t *f;
		uint32_t len;
		uint16_t id;

		if (echoed == count && got == count) {
			if (!done_at)
				done_at = now;
			else if (now - done_at > us_to_ticks(RING_LINGER_US))
				break;	/* the predecessor had time to see its last echo */
		}
		if (echoed < count && now >= resend_at) {
			send_test(a, next, (uint32_t)me, (uint32_t)echoed, KIND_DATA);
			resend_at = now + us_to_ticks(RING_RESEND_US);
			sends++;
		}
		disk_bad += disk_op(disk++);
		while ((f = nic_rx_next(a, 0, &len, &id))) {
			bool for_me = !memcmp(f, self, 6), group = f[0] & 1;

			if (!for_me && !group) {
				stray++;	/* a unicast meant for another port */
			} else if (!nic_is_test(f, len)) {
				other++;	/* the uplink's side of the network */
			} else if (f[26] == KIND_DATA && !memcmp(f + 6, prev, 6) && for_me) {
				uint32_t seq = nic_test_seq(f);

				if (!intact(f, len, (uint32_t)((me + n - 2) % n + 1), seq) || seq >= count) {
					bad++;
				} else {
					got += !seen[seq];
					seen[seq] = 1;
					send_test(a, prev, (uint32_t)((me + n - 2) % n + 1), seq, KIND_ECHO);
				}
			} else if (f[26] == KIND_ECHO && !memcmp(f + 6, next, 6) && for_me) {
				uint32_t seq = nic_test_seq(f);

				if (!intact(f, len, (uint32_t)me, seq))
					bad++;
				else if (seq == echoed) {
					echoed++;
					resend_at = 0;	/* the next frame at once */
				}
			} else {
				stray++;	/* a test frame nobody should send us */
			}
			nic_rx_done(a, id);
		}
	}
	report_info(T, "NET-RING: ring=%lu sent=%lu echoed=%lu got=%lu sends=%lu stray=%lu bad=%lu "
		    "other=%lu disk=%lu", me, count, echoed, got, sends, stray, bad, other, disk);
	check_eq(T, "ring: every frame echoed back intact", echoed, count);
	check_eq(T, "ring: every frame of the predecessor received intact", got, count);
	check_eq(T, "ring: no unicast of another VM, no stray test frame", stray, 0);
	check_eq(T, "ring: no damaged frame", bad, 0);
	check_eq(T, "ring: every disk operation right", disk_bad, 0);
}

void test_main(unsigned long hartid)
{
	const char *m = env.bootargs;
	unsigned long mode = 0, nics = 0;

	(void)hartid;
	if (!disk_up()) {
		report_fail(T, "no usable virtio-blk device");
		report_done();
	}
	for (unsigned int i = 0; i < 2; i++) {
		if (!nic_find(&nic[i], i, &nic_bufs[i]))
			break;
		nics++;
		if (!nic_up(&nic[i], NIC_RX_BUFS)) {
			report_fail(T, "NIC %u: bring-up (features 0x%lx)", i,
				    (unsigned long)nic[i].dev.offered);
			report_done();
		}
		report_info(T, "virtio-net %u in slot %u, mac %02x:%02x:%02x:%02x:%02x:%02x", i,
			    nic[i].dev.slot, nic[i].mac[0], nic[i].mac[1], nic[i].mac[2],
			    nic[i].mac[3], nic[i].mac[4], nic[i].mac[5]);
	}
	for (; *m; m++)
		if (!memcmp(m, "mode=", 5)) {
			mode = (unsigned long)m[5];
			break;
		}
	if (mode == 'v') {
		if (nics < 2) {
			report_fail(T, "victim: wants two NICs (got one or none)");
			report_done();
		}
		victim();
	} else {
		if (!nics) {
			report_fail(T, "ring: wants a NIC (got none)");
			report_done();
		}
		ring();
	}
	report_done();
}
