/* SPDX-License-Identifier: MIT */
/* Snapshot marker guest for device state (issue 25): disks and a NIC across
 * a snapshot and restore (tests/guests/test_snapshot_vio.py).
 *
 * The guest brings up every virtio device it has (up to two disks, one NIC;
 * through lib/vio.c's registers, with rings of its own per device), writes
 * and verifies sectors 0..3 of the first disk, then makes a write of sector
 * 8 available on the first disk WITHOUT notifying it (the request a
 * snapshot must not lose: only the rescan after the restore can find it),
 * prints "SNAPSHOT-READY" and goes on doing I/O until the VM generation ID
 * changes (the restored copy): on the second disk a write of a sector, then
 * its read-back, verified, request after request; on the NIC a broadcast
 * frame after frame, each from the MAC its config space shows. The harness
 * snapshots it in the middle of that and restores the file.
 *
 * The restored copy checks: the parked write completed (OK, its used
 * element there) and sector 8 holds it; the request that was in flight on
 * the second disk at the snapshot completed (the guest was waiting for it);
 * sectors 0..3 still hold what was written; more writes and reads on both
 * disks, and frames on the NIC, all complete. It prints the NIC's MAC before
 * and after (a copy beside its original gets a new one, with a
 * configuration change interrupt: it then sends from the new one) and
 * its summary. Bootargs: max_wait_ms=N (default 120000), after=N (requests and
 * frames after the restore, default 32); move_ms=N: a live migration moves
 * the VM (its generation ID stays): the I/O goes on for N ms, then the same
 * checks (the parked write was served at the destination's start).
 */
#include "libguest.h"
#include "vio.h"

#define T "snap_vio"

#define BLK_T_IN	0
#define BLK_T_OUT	1
#define BLK_S_OK	0
#define STATUS_NONE	0xa5
#define WAIT_US		2000000
#define QSIZE		16
#define NET_HDR		12
#define NET_F_MAC	5
#define NET_F_STATUS	16
#define NET_S_LINK_UP	1
#define ETH_P_TEST	0x88b5		/* IEEE local experimental */
#define VMGENID_GPA	0x10100000UL
#define PARKED_SECTOR	8
#define PARKED_SLOT	4		/* descriptors 12..14 */
#define SEED_PARKED	0x5eed0008ULL
#define RX_BUFS		4

/* Rings of one queue, each part in its own page (lib/vio.c keeps one set
 * per queue index for one device; this guest has several devices). */
static struct vio_rings blk_rings[2], net_rings[2];

struct disk {
	bool present;
	struct vio_dev dev;
	struct vio_queue vq;
	struct vio_blk_hdr hdr[QSIZE];
	volatile uint8_t status[QSIZE];
	uint8_t buf[2][512] __attribute__((aligned(512)));
};

static struct disk disks[2];
static struct vio_dev nic;
static struct vio_queue rxq, txq;
static bool has_nic;
static uint8_t rx_buf[RX_BUFS][2048] __attribute__((aligned(64)));
static uint8_t tx_buf[QSIZE][NET_HDR + 64] __attribute__((aligned(64)));
static unsigned long frames_sent, frames_done, blk_ops;

static uint64_t genid_read(void)
{
	const volatile uint64_t *id = (const volatile uint64_t *)VMGENID_GPA;

	return id[0] ^ id[1];
}

static int queue_setup(struct vio_dev *d, unsigned int q, struct vio_rings *r, struct vio_queue *vq)
{
	for (unsigned int i = 0; i < sizeof(*r); i++)
		((volatile uint8_t *)r)[i] = 0;
	vio_write(d, VIO_QUEUE_SEL, q);
	if (vio_read(d, VIO_QUEUE_NUM_MAX) < QSIZE || vio_read(d, VIO_QUEUE_READY))
		return -1;
	*vq = (struct vio_queue){ q, QSIZE, r->desc, &r->avail, &r->used, 0 };
	return vio_queue_enable(d, vq);
}

static bool disk_up(struct disk *k, unsigned int nth)
{
	if (!vio_find(VIO_ID_BLK, nth, &k->dev))
		return false;
	vio_negotiate(&k->dev, 1ull << VIO_F_VERSION_1);
	if (!(vio_read(&k->dev, VIO_STATUS) & VIO_S_FEATURES_OK) ||
	    queue_setup(&k->dev, 0, &blk_rings[nth], &k->vq))
		return false;
	vio_driver_ok(&k->dev);
	k->present = true;
	return true;
}

/* A request at descriptors 3*slot..3*slot+2: header, 512 bytes, status. */
static uint16_t blk_build(struct disk *k, unsigned int slot, uint32_t type, uint64_t sector,
			  void *buf)
{
	uint16_t h = (uint16_t)(3 * slot);
	struct vio_desc *d = k->vq.desc;

	k->hdr[slot] = (struct vio_blk_hdr){ .type = type, .sector = sector };
	k->status[slot] = STATUS_NONE;
	d[h] = (struct vio_desc){ (uintptr_t)&k->hdr[slot], sizeof(k->hdr[0]), VIO_DESC_F_NEXT,
				  (uint16_t)(h + 1) };
	d[h + 1] = (struct vio_desc){ (uintptr_t)buf, 512,
		(uint16_t)(VIO_DESC_F_NEXT | (type == BLK_T_IN ? VIO_DESC_F_WRITE : 0)), (uint16_t)(h + 2) };
	d[h + 2] = (struct vio_desc){ (uintptr_t)&k->status[slot], 1, VIO_DESC_F_WRITE, 0 };
	return h;
}

/* Submit and wait: the status byte, or -1 if no used element came. */
static int blk_request(struct disk *k, uint32_t type, uint64_t sector, void *buf)
{
	uint16_t h = blk_build(k, 0, type, sector, buf);
	struct vio_used_elem e;

	vio_submit(&k->dev, &k->vq, h);
	if (!vio_wait_used(&k->vq, WAIT_US, &e) || e.id != h)
		return -1;
	return k->status[0];
}

static void fill(uint8_t *p, uint64_t seed)
{
	for (unsigned int i = 0; i < 512; i += 8)
		*(uint64_t *)(p + i) = mix64(seed + i);
}

static bool same(const uint8_t *p, uint64_t seed)
{
	for (unsigned int i = 0; i < 512; i += 8)
		if (*(const uint64_t *)(p + i) != mix64(seed + i))
			return false;
	return true;
}

/* Write sector @s with @seed and read it back: true if all went right. */
static bool write_verify(struct disk *k, uint64_t s, uint64_t seed)
{
	fill(k->buf[0], seed);
	if (blk_request(k, BLK_T_OUT, s, k->buf[0]) != BLK_S_OK)
		return false;
	for (unsigned int i = 0; i < 512; i++)
		k->buf[1][i] = 0;
	if (blk_request(k, BLK_T_IN, s, k->buf[1]) != BLK_S_OK)
		return false;
	blk_ops++;
	return same(k->buf[1], seed);
}

/* The parked write: descriptors of slot 4 (12..14 of 16), on the available ring, and no
 * notify (vio_submit() would notify). */
static uint16_t park(struct disk *k)
{
	static uint8_t data[512] __attribute__((aligned(512)));
	uint16_t h, idx = k->vq.avail->idx;

	fill(data, SEED_PARKED);
	h = blk_build(k, PARKED_SLOT, BLK_T_OUT, PARKED_SECTOR, data);
	k->vq.avail->ring[idx % k->vq.size] = h;
	__atomic_store_n(&k->vq.avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
	return h;
}

static bool nic_up(void)
{
	uint64_t want = (1ull << VIO_F_VERSION_1) | (1ull << NET_F_MAC) | (1ull << NET_F_STATUS);

	if (!vio_find(VIO_ID_NET, 0, &nic))
		return false;
	if (!(vio_negotiate(&nic, want) & VIO_S_FEATURES_OK) ||
	    queue_setup(&nic, 0, &net_rings[0], &rxq) || queue_setup(&nic, 1, &net_rings[1], &txq))
		return false;
	for (uint16_t i = 0; i < RX_BUFS; i++) {
		rxq.desc[i] = (struct vio_desc){ (uintptr_t)rx_buf[i], sizeof(rx_buf[0]),
						 VIO_DESC_F_WRITE, 0 };
		rxq.avail->ring[i] = i;
	}
	__atomic_store_n(&rxq.avail->idx, (uint16_t)RX_BUFS, __ATOMIC_RELEASE);
	vio_driver_ok(&nic);
	has_nic = true;
	return true;
}

static void nic_mac(uint8_t mac[6])
{
	for (unsigned int i = 0; i < 6; i++)
		mac[i] = (uint8_t)vio_config(&nic, i, 1);
}

/* One broadcast frame from the MAC the config space shows now; the used
 * elements of earlier ones reaped. */
static void frame_send(void)
{
	uint16_t slot = (uint16_t)(frames_sent % QSIZE);
	uint8_t *f = tx_buf[slot] + NET_HDR;
	struct vio_used_elem e;

	while (vio_wait_used(&txq, 0, &e))
		frames_done++;
	if (frames_sent - frames_done >= QSIZE - 1)
		return;		/* the ring is full: the device has not caught up */
	for (unsigned int i = 0; i < NET_HDR; i++)
		tx_buf[slot][i] = 0;
	for (unsigned int i = 0; i < 6; i++)
		f[i] = 0xff;
	nic_mac(f + 6);
	f[12] = ETH_P_TEST >> 8;
	f[13] = ETH_P_TEST & 0xff;
	for (unsigned int i = 14; i < 60; i++)
		f[i] = (uint8_t)(frames_sent + i);
	txq.desc[slot] = (struct vio_desc){ (uintptr_t)tx_buf[slot], NET_HDR + 60, 0, 0 };
	vio_submit(&nic, &txq, slot);
	frames_sent++;
}

static bool frames_all_done(void)
{
	struct vio_used_elem e;

	while (vio_wait_used(&txq, 0, &e))
		frames_done++;
	return frames_done == frames_sent;
}

static void mac_text(const uint8_t m[6], char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

void test_main(unsigned long self)
{
	unsigned long limit = us_to_ticks(bootarg_ulong("max_wait_ms", 120000) * 1000);
	unsigned long move = us_to_ticks(bootarg_ulong("move_ms", 0) * 1000);
	unsigned long after = bootarg_ulong("after", 32), t0, i;
	uint64_t genid, sector = 16;
	uint8_t mac_before[6], mac_after[6];
	char text[2][18];
	struct vio_used_elem e;
	uint16_t parked = 0;
	bool changed = false, loop_ok = true;

	(void)self;
	if (!env.carapace) {
		report_skip(T, "needs Carapace (a snapshot, a generation ID)");
		return;
	}
	genid = genid_read();
	disk_up(&disks[0], 0);
	disk_up(&disks[1], 1);
	nic_up();
	report_info(T, "disks %d, NIC %d", disks[0].present + disks[1].present, has_nic);
	if (disks[0].present) {
		bool ok = true;

		for (uint64_t s = 0; s < 4; s++)
			ok &= write_verify(&disks[0], s, 0x1000 + s);
		check_eq(T, "before: sectors 0..3 written and read back", ok, 1);
		parked = park(&disks[0]);
	}
	if (has_nic)
		nic_mac(mac_before);
	printf("SNAPSHOT-READY\n");

	/* mid-I/O until the restored copy runs (the original is destroyed or
	 * keeps going: it never sees a new generation ID) */
	t0 = rdtime();
	while (rdtime() - t0 < limit) {
		if (genid_read() != genid || (move && rdtime() - t0 >= move)) {
			changed = true;
			break;
		}
		if (disks[1].present && !write_verify(&disks[1], sector, mix64(sector))) {
			loop_ok = false;
			break;
		}
		sector = 16 + (sector + 1) % 64;
		if (has_nic)
			frame_send();
		udelay(200);
	}
	if (!check_eq(T, "I/O went right up to the snapshot (and through it)", loop_ok, 1) ||
	    !check_eq(T, move ? "moved: the I/O ran its time" : "restored: a new VM generation ID",
		      changed, 1))
		return;
	if (move)
		check_eq(T, "moved: the same VM generation ID", genid_read() == genid, 1);

	if (disks[0].present) {
		struct disk *k = &disks[0];

		check_eq(T, "restored: the write made available before the snapshot completed",
			 vio_wait_used(&k->vq, WAIT_US, &e), 1);
		check_eq(T, "restored: its used element is that chain", e.id, parked);
		check_eq(T, "restored: its status is OK", k->status[PARKED_SLOT], BLK_S_OK);
		check_eq(T, "restored: sector 8 holds it",
			 blk_request(k, BLK_T_IN, PARKED_SECTOR, k->buf[1]) == BLK_S_OK &&
			 same(k->buf[1], SEED_PARKED), 1);
		for (uint64_t s = 0; s < 4; s++) {
			if (blk_request(k, BLK_T_IN, s, k->buf[1]) != BLK_S_OK ||
			    !same(k->buf[1], 0x1000 + s)) {
				report_fail(T, "restored: sector %lu lost what was written", (unsigned long)s);
				return;
			}
		}
		report_pass(T, "restored: sectors 0..3 hold what was written before");
	}
	for (unsigned int d = 0; d < 2; d++) {
		bool ok = true;

		if (!disks[d].present)
			continue;
		for (i = 0; i < after; i++)
			ok &= write_verify(&disks[d], 100 + i, 0x2000 + d * 1000 + i);
		check_eq(T, d ? "restored: disk 1 goes on (writes and reads back)" :
			       "restored: disk 0 goes on (writes and reads back)", ok, 1);
	}
	if (has_nic) {
		nic_mac(mac_after);
		mac_text(mac_before, text[0]);
		mac_text(mac_after, text[1]);
		printf("INFO: " T ": mac before %s after %s\n", text[0], text[1]);
		check_eq(T, "restored: the NIC's link is up",
			 vio_config(&nic, 6, 2) & NET_S_LINK_UP, NET_S_LINK_UP);
		t0 = frames_sent;
		for (i = 0; i < after; i++) {
			frame_send();
			udelay(500);
		}
		check_eq(T, "restored: every frame sent went out (used)",
			 wait_for(frames_all_done(), WAIT_US), 1);
		check_ge(T, "restored: frames sent after the restore", frames_sent - t0, after / 2);
	}
	printf("INFO: " T ": %lu disk operations, %lu frames\n", blk_ops, frames_sent);
}
