/* SPDX-License-Identifier: MIT */
/* virtio-blk from a guest's side (issue 24), through lib/vio.c: the same
 * payload on bare QEMU (QEMU's virtio-blk-device) and under Carapace (its
 * device model over a host disk), so that the two can be compared.
 *
 * Bootargs:
 *   mode=func      (default) the driver's contract: offer, negotiation,
 *                  config, write/read/verify over several segments, FLUSH,
 *                  GET_ID, requests past the end, unknown types; ro=1: the
 *                  disk is read-only (writes fail). sectors=N: the capacity
 *                  the harness gave the disk.
 *   mode=attack    cases from=N to=M (table order) of malformed rings: each
 *                  must be refused (IOERR/UNSUPP on its status byte, or the
 *                  device set DEVICE_NEEDS_RESET) and the device must work
 *                  again after a reset.
 *   mode=victim    write, read back and verify 4 KiB blocks for seconds=S;
 *                  prints "VIO-RATE: ops=N us=M" (the harness compares rates).
 *   mode=flood     keep the queue full of 64 KiB reads for seconds=S.
 * The disk's contents are the payload's to overwrite. */
#include "libguest.h"
#include "vio.h"

#define T "vio_blk"

#define BLK_T_IN	0
#define BLK_T_OUT	1
#define BLK_T_FLUSH	4
#define BLK_T_GET_ID	8
#define BLK_S_OK	0
#define BLK_S_IOERR	1
#define BLK_S_UNSUPP	2
#define BLK_F_SEG_MAX	2
#define BLK_F_BLK_SIZE	6
#define BLK_F_RO	5
#define BLK_F_FLUSH	9
#define STATUS_NONE	0xa5	/* what the status byte holds until the device writes it */
#define WAIT_US		2000000

struct blk_hdr {
	uint32_t type;
	uint32_t reserved;
	uint64_t sector;
};

static struct vio_dev dev;
static struct vio_queue vq;
static struct blk_hdr hdr[VIO_QSIZE];
static volatile uint8_t status[VIO_QSIZE];
static uint8_t data[16][4096] __attribute__((aligned(4096)));
static uint8_t flood_buf[VIO_QSIZE / 4][65536] __attribute__((aligned(4096)));
static uint64_t capacity;

static uint64_t want_features(void)
{
	return (1ull << VIO_F_VERSION_1) |
	       (dev.offered & ((1ull << BLK_F_SEG_MAX) | (1ull << BLK_F_BLK_SIZE) |
			       (1ull << BLK_F_FLUSH) | (1ull << BLK_F_RO)));
}

static bool bring_up(void)
{
	if (!(vio_negotiate(&dev, (1ull << VIO_F_VERSION_1)) & VIO_S_FEATURES_OK))
		return false;
	if (!(vio_negotiate(&dev, want_features()) & VIO_S_FEATURES_OK))
		return false;
	if (vio_queue_setup(&dev, 0, VIO_QSIZE, &vq))
		return false;
	vio_driver_ok(&dev);
	capacity = vio_config(&dev, 0, 8);
	return true;
}

/* A request at descriptors 3*slot .. 3*slot+2: header, @len bytes at @buf
 * (none if @len is 0), status. */
static uint16_t build(unsigned int slot, uint32_t type, uint64_t sector, void *buf, uint32_t len)
{
	uint16_t h = (uint16_t)(3 * slot), n = h;
	struct vio_desc *d = vq.desc;

	hdr[slot] = (struct blk_hdr){ .type = type, .sector = sector };
	status[slot] = STATUS_NONE;
	d[n] = (struct vio_desc){ (uint64_t)(uintptr_t)&hdr[slot], sizeof(hdr[0]), VIO_DESC_F_NEXT, (uint16_t)(n + 1) };
	n++;
	if (len) {
		d[n] = (struct vio_desc){ (uint64_t)(uintptr_t)buf, len,
			(uint16_t)(VIO_DESC_F_NEXT | (type == BLK_T_OUT ? 0 : VIO_DESC_F_WRITE)), (uint16_t)(n + 1) };
		n++;
	}
	d[n] = (struct vio_desc){ (uint64_t)(uintptr_t)&status[slot], 1, VIO_DESC_F_WRITE, 0 };
	return h;
}

/* Submit chain @head and wait for it: its status byte, or -1 if no used
 * element came, -2 if the device wants a reset. */
static int run_chain(uint16_t head, unsigned int slot)
{
	struct vio_used_elem e;

	vio_submit(&dev, &vq, head);
	if (!vio_wait_used(&vq, WAIT_US, &e))
		return vio_read(&dev, VIO_STATUS) & VIO_S_NEEDS_RESET ? -2 : -1;
	if (e.id != head)
		report_fail(T, "used id %u (want %u)", e.id, head);
	return status[slot];
}

static int request(uint32_t type, uint64_t sector, void *buf, uint32_t len)
{
	return run_chain(build(0, type, sector, buf, len), 0);
}

static void fill(uint8_t *p, uint32_t len, uint64_t seed)
{
	for (uint32_t i = 0; i < len; i += 8)
		*(uint64_t *)(p + i) = mix64(seed + i);
}

static bool same(const uint8_t *p, uint32_t len, uint64_t seed)
{
	for (uint32_t i = 0; i < len; i += 8)
		if (*(const uint64_t *)(p + i) != mix64(seed + i))
			return false;
	return true;
}

/* ---- the driver's contract ------------------------------------------------ */

static void func(void)
{
	bool ro = bootarg_ulong("ro", 0);
	uint64_t sectors = bootarg_ulong("sectors", 0);
	uint16_t h;
	int st;

	check_ge(T, "VERSION_1 offered", (dev.offered >> VIO_F_VERSION_1) & 1, 1);
	check_eq(T, "FLUSH offered", (dev.offered >> BLK_F_FLUSH) & 1, 1);
	check_eq(T, "RO offered as the disk is", (dev.offered >> BLK_F_RO) & 1, ro);
	check_eqx(T, "capacity (sectors)", capacity, sectors);
	if (dev.offered & (1ull << BLK_F_BLK_SIZE))
		check_eq(T, "blk_size", vio_config(&dev, 20, 4), 512);
	if (dev.offered & (1ull << BLK_F_SEG_MAX))
		check_ge(T, "seg_max", vio_config(&dev, 12, 4), 2);

	/* a write over three segments, then a read over two, compared */
	fill(data[0], 3 * 4096, 0x1234);
	h = 0;
	hdr[0] = (struct blk_hdr){ .type = BLK_T_OUT, .sector = 8 };
	status[0] = STATUS_NONE;
	vq.desc[0] = (struct vio_desc){ (uintptr_t)&hdr[0], 16, VIO_DESC_F_NEXT, 1 };
	vq.desc[1] = (struct vio_desc){ (uintptr_t)data[0], 4096, VIO_DESC_F_NEXT, 2 };
	vq.desc[2] = (struct vio_desc){ (uintptr_t)data[1], 4096, VIO_DESC_F_NEXT, 3 };
	vq.desc[3] = (struct vio_desc){ (uintptr_t)data[2], 4096, VIO_DESC_F_NEXT, 4 };
	vq.desc[4] = (struct vio_desc){ (uintptr_t)&status[0], 1, VIO_DESC_F_WRITE, 0 };
	st = run_chain(h, 0);
	check_eq(T, "write of 3 segments", st, ro ? BLK_S_IOERR : BLK_S_OK);
	for (int i = 3; i < 6; i++)
		for (int j = 0; j < 4096; j++)
			data[i][j] = 0;
	hdr[0] = (struct blk_hdr){ .type = BLK_T_IN, .sector = 8 };
	status[0] = STATUS_NONE;
	vq.desc[1] = (struct vio_desc){ (uintptr_t)data[3], 8192, VIO_DESC_F_NEXT | VIO_DESC_F_WRITE, 2 };
	vq.desc[2] = (struct vio_desc){ (uintptr_t)data[5], 4096, VIO_DESC_F_NEXT | VIO_DESC_F_WRITE, 3 };
	vq.desc[3] = (struct vio_desc){ (uintptr_t)&status[0], 1, VIO_DESC_F_WRITE, 0 };
	st = run_chain(h, 0);
	check_eq(T, "read of 2 segments", st, BLK_S_OK);
	if (!ro)
		check_eq(T, "read back what was written", same(data[3], 3 * 4096, 0x1234), 1);

	check_eq(T, "flush", request(BLK_T_FLUSH, 0, NULL, 0), BLK_S_OK);
	check_eq(T, "get_id", request(BLK_T_GET_ID, 0, data[6], 20), BLK_S_OK);
	check_eq(T, "read of the last sector", request(BLK_T_IN, capacity - 1, data[6], 512), BLK_S_OK);
	check_eq(T, "read across the end", request(BLK_T_IN, capacity - 1, data[6], 1024), BLK_S_IOERR);
	check_eq(T, "read past the end", request(BLK_T_IN, capacity, data[6], 512), BLK_S_IOERR);
	check_eq(T, "read at sector 2^64 - 1", request(BLK_T_IN, ~0ull, data[6], 512), BLK_S_IOERR);
	check_eq(T, "unknown request type", request(99, 0, data[6], 512), BLK_S_UNSUPP);
	check_eq(T, "device healthy after all of it",
		 vio_read(&dev, VIO_STATUS) & (VIO_S_NEEDS_RESET | VIO_S_FAILED), 0);
	/* the data survives a device reset (it is on the disk, not in a cache) */
	if (!ro) {
		check_eq(T, "bring-up again", bring_up(), 1);
		for (int j = 0; j < 4096; j++)
			data[3][j] = 0;
		check_eq(T, "read after a reset", request(BLK_T_IN, 8, data[3], 4096), BLK_S_OK);
		check_eq(T, "read after a reset: the data", same(data[3], 4096, 0x1234), 1);
	}
}

/* ---- malformed rings -------------------------------------------------------- */

/* The device refused the request or asked for a reset, never took it. */
static void expect_refused(const char *what, int st)
{
	if (st == BLK_S_IOERR || st == BLK_S_UNSUPP || st == -2)
		report_pass(T, "%s refused (%s)", what, st == -2 ? "NEEDS_RESET" : "status");
	else
		report_fail(T, "%s (got %d, want IOERR, UNSUPP or NEEDS_RESET)", what, st);
}

/* After an attack: a reset brings the device back. */
static void expect_recovers(const char *what)
{
	fill(data[7], 4096, 0x77);
	if (!bring_up()) {
		report_fail(T, "%s: bring-up after a reset", what);
		return;
	}
	check_eq(T, "a good write after a reset", request(BLK_T_OUT, 16, data[7], 4096), BLK_S_OK);
}

static int one_desc_then_status(uint64_t addr, uint32_t len, uint16_t flags)
{
	hdr[0] = (struct blk_hdr){ .type = (flags & VIO_DESC_F_WRITE) ? BLK_T_IN : BLK_T_OUT, .sector = 0 };
	status[0] = STATUS_NONE;
	vq.desc[0] = (struct vio_desc){ (uintptr_t)&hdr[0], 16, VIO_DESC_F_NEXT, 1 };
	vq.desc[1] = (struct vio_desc){ addr, len, (uint16_t)(flags | VIO_DESC_F_NEXT), 2 };
	vq.desc[2] = (struct vio_desc){ (uintptr_t)&status[0], 1, VIO_DESC_F_WRITE, 0 };
	return run_chain(0, 0);
}

static unsigned long ram_end(void)
{
	return env.ram_base + env.ram_size;
}

static void a_loop(void)
{
	build(0, BLK_T_IN, 0, data[0], 512);
	vq.desc[1].next = 1;	/* data -> data -> ... */
	expect_refused("descriptor loop", run_chain(0, 0));
}

static void a_long_chain(void)
{
	/* every descriptor of the queue in one chain: legal while its data
	 * segments are within the SEG_MAX offered, refused past it */
	uint64_t seg_max = dev.offered & (1ull << BLK_F_SEG_MAX) ? vio_config(&dev, 12, 4) : ~0ull;
	int st;

	hdr[0] = (struct blk_hdr){ .type = BLK_T_IN };
	vq.desc[0] = (struct vio_desc){ (uintptr_t)&hdr[0], 16, VIO_DESC_F_NEXT, 1 };
	for (uint16_t i = 1; i < VIO_QSIZE - 1; i++)
		vq.desc[i] = (struct vio_desc){ (uintptr_t)data[0], 512, VIO_DESC_F_NEXT | VIO_DESC_F_WRITE,
			(uint16_t)(i + 1) };
	status[0] = STATUS_NONE;
	vq.desc[VIO_QSIZE - 1] = (struct vio_desc){ (uintptr_t)&status[0], 1, VIO_DESC_F_WRITE, 0 };
	st = run_chain(0, 0);
	if (VIO_QSIZE - 2 <= seg_max)
		check_eq(T, "a chain as long as the queue, within SEG_MAX", st, BLK_S_OK);
	else
		expect_refused("a chain longer than SEG_MAX", st);
}

static void a_outside_ram(void)
{
	expect_refused("buffer in a hole", one_desc_then_status(0x40000000UL, 512, VIO_DESC_F_WRITE));
}

static void a_ram_end(void)
{
	expect_refused("buffer across the end of RAM", one_desc_then_status(ram_end() - 256, 512, VIO_DESC_F_WRITE));
}

static void a_wrap(void)
{
	expect_refused("buffer wrapping 2^64", one_desc_then_status(~0ul - 255, 512, VIO_DESC_F_WRITE));
}

static void a_mmio_uart(void)
{
	expect_refused("read into the UART", one_desc_then_status(0x10000000UL, 512, VIO_DESC_F_WRITE));
}

static void a_mmio_self(void)
{
	/* a device write into its own register window */
	expect_refused("read into its own window", one_desc_then_status(dev.base, 512, VIO_DESC_F_WRITE));
}

static void a_avail_jump(void)
{
	build(0, BLK_T_IN, 0, data[0], 512);
	vq.avail->ring[vq.avail->idx % vq.size] = 0;
	__atomic_store_n(&vq.avail->idx, (uint16_t)(vq.avail->idx + 200), __ATOMIC_RELEASE);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
	check_eq(T, "avail.idx 200 ahead: NEEDS_RESET",
		 wait_for(vio_read(&dev, VIO_STATUS) & VIO_S_NEEDS_RESET, WAIT_US) ? 1 : 0, 1);
}

static void a_head_range(void)
{
	uint16_t idx = vq.avail->idx;

	vq.avail->ring[idx % vq.size] = 1000;
	__atomic_store_n(&vq.avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
	check_eq(T, "head 1000 of 64: NEEDS_RESET",
		 wait_for(vio_read(&dev, VIO_STATUS) & VIO_S_NEEDS_RESET, WAIT_US) ? 1 : 0, 1);
}

static void a_status_readonly(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 2].flags = 0;	/* the status byte not device-writable */
	expect_refused("status byte read-only", run_chain(h, 0));
}

static void a_header_short(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h].len = 8;
	expect_refused("an 8-byte header", run_chain(h, 0));
}

static void a_direction(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 1].flags = VIO_DESC_F_NEXT;	/* a read into a device-readable buffer */
	expect_refused("read into a device-readable buffer", run_chain(h, 0));
}

static void a_indirect(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 1].flags |= VIO_DESC_F_INDIRECT;
	expect_refused("INDIRECT without the feature", run_chain(h, 0));
}

static void a_len_zero(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 1].len = 0;
	expect_refused("a zero-length buffer", run_chain(h, 0));
}

static void a_odd_length(void)
{
	expect_refused("a write of 100 bytes", one_desc_then_status((uintptr_t)data[0], 100, 0));
}

/* The header and the descriptors rewritten right after the notify: what the
 * device does is what was there at the notify (it copied), never a mix. */
static void a_toctou(void)
{
	struct vio_used_elem e;
	uint16_t h;

	fill(data[8], 4096, 0xaa);
	fill(data[9], 4096, 0xbb);
	check_eq(T, "toctou: sector 40 holds B", request(BLK_T_OUT, 40, data[9], 4096), BLK_S_OK);
	check_eq(T, "toctou: sector 48 holds B", request(BLK_T_OUT, 48, data[9], 4096), BLK_S_OK);
	h = build(1, BLK_T_OUT, 40, data[8], 4096);
	vio_submit(&dev, &vq, h);
	hdr[1].sector = 48;		/* too late: copied */
	vq.desc[h + 1].addr = (uintptr_t)data[9];
	if (!vio_wait_used(&vq, WAIT_US, &e)) {
		report_fail(T, "toctou: no completion");
		return;
	}
	check_eq(T, "toctou: request done", status[1], BLK_S_OK);
	check_eq(T, "toctou: read 40", request(BLK_T_IN, 40, data[10], 4096), BLK_S_OK);
	check_eq(T, "toctou: sector 40 got A (the notified request)", same(data[10], 4096, 0xaa), 1);
	check_eq(T, "toctou: read 48", request(BLK_T_IN, 48, data[10], 4096), BLK_S_OK);
	check_eq(T, "toctou: sector 48 kept B", same(data[10], 4096, 0xbb), 1);
}

/* A device reset while a request is in flight: nothing is written into the
 * rings after the reset (the new queue starts clean) and the device works. */
static void a_reset_in_flight(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, flood_buf[0], 65536);
	struct vio_used_elem e;

	vio_submit(&dev, &vq, h);
	vio_reset(&dev);
	check_eq(T, "reset took", vio_read(&dev, VIO_STATUS), 0);
	if (!bring_up()) {
		report_fail(T, "bring-up after a reset in flight");
		return;
	}
	udelay(200000);
	check_eq(T, "no stale used element in the new ring", vio_wait_used(&vq, 1000, &e), 0);
	expect_recovers("reset in flight");
}

static void a_notify_storm(void)
{
	unsigned long t0 = rdtime();

	for (int i = 0; i < 100000; i++)
		vio_write(&dev, VIO_QUEUE_NOTIFY, i & 7);
	report_info(T, "100000 empty notifies in %lu us", ticks_to_us(rdtime() - t0));
	check_eq(T, "device healthy after a notify storm",
		 vio_read(&dev, VIO_STATUS) & (VIO_S_NEEDS_RESET | VIO_S_FAILED), 0);
	check_eq(T, "a good read after the storm", request(BLK_T_IN, 0, data[0], 512), BLK_S_OK);
}

static void a_bad_queue_config(void)
{
	vio_reset(&dev);
	vio_negotiate(&dev, want_features());
	vio_write(&dev, VIO_QUEUE_SEL, 0);
	vio_write(&dev, VIO_QUEUE_NUM, 3);	/* not a power of two */
	vio_write(&dev, VIO_QUEUE_DESC_LO, (uint32_t)(uintptr_t)vq.desc);
	vio_write(&dev, VIO_QUEUE_DESC_HI, 0);
	vio_write(&dev, VIO_QUEUE_DRIVER_LO, (uint32_t)(uintptr_t)vq.avail);
	vio_write(&dev, VIO_QUEUE_DRIVER_HI, 0);
	vio_write(&dev, VIO_QUEUE_DEVICE_LO, 0x40000000u);	/* no RAM */
	vio_write(&dev, VIO_QUEUE_DEVICE_HI, 0);
	vio_write(&dev, VIO_QUEUE_READY, 1);
	vio_write(&dev, VIO_STATUS, vio_read(&dev, VIO_STATUS) | VIO_S_DRIVER_OK);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
	udelay(10000);
	report_info(T, "bad queue config: ready %u status 0x%x", vio_read(&dev, VIO_QUEUE_READY),
		    vio_read(&dev, VIO_STATUS));
	report_pass(T, "bad queue configuration survived");
}

struct attack {
	const char *name;
	void (*fn)(void);
};

static const struct attack attacks[] = {
	{ "loop", a_loop },
	{ "long_chain", a_long_chain },
	{ "outside_ram", a_outside_ram },
	{ "ram_end", a_ram_end },
	{ "wrap", a_wrap },
	{ "mmio_uart", a_mmio_uart },
	{ "mmio_self", a_mmio_self },
	{ "avail_jump", a_avail_jump },
	{ "head_range", a_head_range },
	{ "status_readonly", a_status_readonly },
	{ "header_short", a_header_short },
	{ "direction", a_direction },
	{ "indirect", a_indirect },
	{ "len_zero", a_len_zero },
	{ "odd_length", a_odd_length },
	{ "toctou", a_toctou },
	{ "reset_in_flight", a_reset_in_flight },
	{ "notify_storm", a_notify_storm },
	{ "bad_queue_config", a_bad_queue_config },
};

static void attack(void)
{
	unsigned long from = bootarg_ulong("from", 0), to = bootarg_ulong("to", ARRAY_SIZE(attacks) - 1);

	for (unsigned long i = from; i <= to && i < ARRAY_SIZE(attacks); i++) {
		report_info(T, "ATTACK-BEGIN: %lu %s", i, attacks[i].name);
		attacks[i].fn();
		expect_recovers(attacks[i].name);
		report_info(T, "ATTACK-END: %lu %s", i, attacks[i].name);
	}
}

/* ---- load -------------------------------------------------------------------- */

static void victim(void)
{
	unsigned long end = rdtime() + us_to_ticks(bootarg_ulong("seconds", 5) * 1000000), t0 = rdtime();
	unsigned long ops = 0, bad = 0;

	while (rdtime() < end) {
		uint64_t sector = 64 + 8 * (ops % 128);

		fill(data[11], 4096, ops);
		bad += request(BLK_T_OUT, sector, data[11], 4096) != BLK_S_OK;
		bad += request(BLK_T_IN, sector, data[12], 4096) != BLK_S_OK;
		bad += !same(data[12], 4096, ops);
		ops++;
	}
	report_info(T, "VIO-RATE: ops=%lu us=%lu", ops, ticks_to_us(rdtime() - t0));
	check_eq(T, "victim: every request done and verified", bad, 0);
	check_ge(T, "victim: some requests done", ops, 1);
}

static void flood(void)
{
	unsigned long end = rdtime() + us_to_ticks(bootarg_ulong("seconds", 5) * 1000000);
	unsigned long done = 0, slots = VIO_QSIZE / 4;
	struct vio_used_elem e;

	for (unsigned int s = 0; s < slots; s++)
		vio_submit(&dev, &vq, build(s, BLK_T_IN, 8 * s, flood_buf[s], 65536));
	while (rdtime() < end) {
		if (!vio_wait_used(&vq, WAIT_US, &e))
			break;
		done++;
		vio_submit(&dev, &vq, (uint16_t)e.id);	/* straight back in */
	}
	report_info(T, "flood: %lu requests of 64 KiB", done);
	check_ge(T, "flood: requests done", done, 1);
}

void test_main(unsigned long hartid)
{
	unsigned long mode;
	const char *m = env.bootargs;

	(void)hartid;
	if (!vio_find(VIO_ID_BLK, 0, &dev)) {
		report_fail(T, "no virtio-blk device in the eight virtio-mmio slots");
		report_done();
	}
	report_info(T, "virtio-blk in slot %u", dev.slot);
	if (!bring_up()) {
		report_fail(T, "bring-up (features 0x%lx)", (unsigned long)dev.offered);
		report_done();
	}
	mode = 0;
	for (; *m; m++)
		if (!memcmp(m, "mode=", 5)) {
			mode = m[5];
			break;
		}
	switch (mode) {
	case 'a':
		attack();
		break;
	case 'v':
		victim();
		break;
	case 'f':
		flood();
		break;
	default:
		func();
	}
	report_done();
}
