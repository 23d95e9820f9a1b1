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
 *   mode=attack    cases from=N to=M (table order) of malformed rings and
 *                  requests, races with a second vCPU, a notify storm, a
 *                  flood: each states what docs/virtio.md says the device
 *                  does (the status byte it writes, DEVICE_NEEDS_RESET, or
 *                  the request as it was at the notify), then the device
 *                  must work again after a reset. delay=S: sleep S seconds
 *                  first; then_flood=1: flood the disk afterwards for ever.
 *   mode=victim    write, read back and verify 4 KiB blocks for seconds=S;
 *                  prints "VIO-RATE: ops=N us=M" (the harness compares rates).
 *   mode=flood     keep the queue full of 64 KiB reads for seconds=S;
 *                  size=B: reads of B bytes; past_end=1: reads past the
 *                  disk's end (the device answers them, no host I/O).
 *   mode=reboot    boot 0: 8 reads of 64 KiB handed to the device, then an
 *                  SBI cold reboot at once; boot 1: those buffers filled
 *                  with 0x5a before any I/O must keep it for seconds=S
 *                  (default 3): no read of the earlier boot lands in the
 *                  new one (the harness makes the host disk slow).
 * The disk's contents are the payload's to overwrite. */
#include "libguest.h"
#include "racer.h"
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

static struct vio_dev dev;
static struct vio_queue vq;
static struct vio_blk_hdr hdr[VIO_QSIZE];
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

	hdr[slot] = (struct vio_blk_hdr){ .type = type, .sector = sector };
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
	/* a queue that faulted gives nothing back: no need to wait it out */
	wait_for(__atomic_load_n(&vq.used->idx, __ATOMIC_ACQUIRE) != vq.used_seen ||
		 vio_needs_reset(&dev), WAIT_US);
	if (!vio_wait_used(&vq, 0, &e))
		return vio_needs_reset(&dev) ? -2 : -1;
	if (e.id != head)
		report_fail(T, "used id %u (want %u)", e.id, head);
	return status[slot];
}

static int request(uint32_t type, uint64_t sector, void *buf, uint32_t len)
{
	return run_chain(build(0, type, sector, buf, len), 0);
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
	pattern_fill(data[0], 3 * 4096, 0x1234);
	h = 0;
	hdr[0] = (struct vio_blk_hdr){ .type = BLK_T_OUT, .sector = 8 };
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
	hdr[0] = (struct vio_blk_hdr){ .type = BLK_T_IN, .sector = 8 };
	status[0] = STATUS_NONE;
	vq.desc[1] = (struct vio_desc){ (uintptr_t)data[3], 8192, VIO_DESC_F_NEXT | VIO_DESC_F_WRITE, 2 };
	vq.desc[2] = (struct vio_desc){ (uintptr_t)data[5], 4096, VIO_DESC_F_NEXT | VIO_DESC_F_WRITE, 3 };
	vq.desc[3] = (struct vio_desc){ (uintptr_t)&status[0], 1, VIO_DESC_F_WRITE, 0 };
	st = run_chain(h, 0);
	check_eq(T, "read of 2 segments", st, BLK_S_OK);
	if (!ro)
		check_eq(T, "read back what was written", pattern_same(data[3], 3 * 4096, 0x1234), 1);

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
		check_eq(T, "read after a reset: the data", pattern_same(data[3], 4096, 0x1234), 1);
	}
}

/* ---- malformed rings (mode=attack) ------------------------------------------------ */

#define NEEDS_RESET	(-2)		/* run_chain(): the device asked for a reset */
#define STORM_NOTIFIES	1000000		/* storm=N: another count */
#define FLOOD_US	5000000
#define TOCTOU_ROUNDS	20
#define RACE_ROUNDS	200
#define PLIC_BASE	0x0c000000UL
#define UART_BASE	0x10000000UL
#define HOLE		0x40000000UL
#define VIO_QUEUE_RESET	0x0c0		/* not offered (VIRTIO_F_RING_RESET): ignored */
#define VIO_F_INDIRECT_DESC	28
#define VIO_F_EVENT_IDX		29
#define INFLIGHT	16		/* VBLK_INFLIGHT: the requests a device holds */
#define FREE_SECTOR	4096		/* from here on the disk is the attacks' */

/* requests the device answers with an error status, counted: the harness
 * compares them with the device's io.errors */
static unsigned long refused;
static uint8_t other_byte __attribute__((aligned(64)));
/* two-page buffers: the notified one, the rewritten one, the disk's original
 * contents, what is read back */
static uint8_t big[4][8192] __attribute__((aligned(4096)));

static const char *outcome(int st)
{
	switch (st) {
	case BLK_S_OK:
		return "OK";
	case BLK_S_IOERR:
		return "IOERR";
	case BLK_S_UNSUPP:
		return "UNSUPP";
	case NEEDS_RESET:
		return "NEEDS_RESET";
	default:
		return "no answer";
	}
}

/* What docs/virtio.md says the device does with this request. */
static void expect(const char *what, int got, int want)
{
	if (want == BLK_S_IOERR || want == BLK_S_UNSUPP)
		refused++;
	if (got == want)
		report_pass(T, "%s: %s", what, outcome(want));
	else
		report_fail(T, "%s (got %s, want %s)", what, outcome(got), outcome(want));
}

static bool healthy(void)
{
	return !(vio_read(&dev, VIO_STATUS) & (VIO_S_NEEDS_RESET | VIO_S_FAILED));
}

/* After an attack: a reset brings the device back. */
static void expect_recovers(const char *what)
{
	pattern_fill(data[7], 4096, 0x77);
	if (!bring_up()) {
		report_fail(T, "%s: bring-up after a reset (got a refusal, want the device)", what);
		return;
	}
	check_eq(T, "a good write after a reset", request(BLK_T_OUT, 16, data[7], 4096), BLK_S_OK);
}

/* header, one buffer {@addr, @len, @flags}, status: IN if @flags is WRITE */
static int one_desc_then_status(uint64_t addr, uint32_t len, uint16_t flags)
{
	hdr[0] = (struct vio_blk_hdr){ .type = (flags & VIO_DESC_F_WRITE) ? BLK_T_IN : BLK_T_OUT, .sector = 0 };
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
	expect("a descriptor that is its own next", run_chain(0, 0), NEEDS_RESET);
	expect_recovers("loop");
	build(0, BLK_T_IN, 0, data[0], 512);
	vq.desc[2].flags |= VIO_DESC_F_NEXT;	/* status -> header */
	vq.desc[2].next = 0;
	expect("the last descriptor back to the head", run_chain(0, 0), NEEDS_RESET);
}

static uint64_t seg_max(void)
{
	return dev.offered & (1ull << BLK_F_SEG_MAX) ? vio_config(&dev, 12, 4) : 1;
}

/* A read of @nseg segments of 512 bytes: header, data, status. */
static int read_in_segments(unsigned int nseg)
{
	hdr[0] = (struct vio_blk_hdr){ .type = BLK_T_IN };
	status[0] = STATUS_NONE;
	vq.desc[0] = (struct vio_desc){ (uintptr_t)&hdr[0], 16, VIO_DESC_F_NEXT, 1 };
	for (uint16_t i = 1; i <= nseg; i++)
		vq.desc[i] = (struct vio_desc){ (uintptr_t)flood_buf[0] + 512 * (i - 1), 512,
			VIO_DESC_F_NEXT | VIO_DESC_F_WRITE, (uint16_t)(i + 1) };
	vq.desc[nseg + 1] = (struct vio_desc){ (uintptr_t)&status[0], 1, VIO_DESC_F_WRITE, 0 };
	return run_chain(0, 0);
}

static void a_long_chain(void)
{
	/* SEG_MAX data segments: the longest chain the device takes */
	unsigned int n = (unsigned int)seg_max();

	if (!n || n > 254) {
		report_fail(T, "seg_max %u: not 1..254 (docs/virtio.md)", n);
		return;
	}
	if (n + 2 > VIO_QSIZE) {
		/* this driver's queue (128) is shorter than SEG_MAX + 2 (the
		 * device offers up to 254 on its 256): a chain of the whole
		 * queue is the longest there is; past it, a_chain_round() */
		expect("a chain of the whole queue (SEG_MAX above its size - 2)",
		       read_in_segments(VIO_QSIZE - 2), BLK_S_OK);
		return;
	}
	expect("a chain of SEG_MAX data segments", read_in_segments(n), BLK_S_OK);
	if (n + 3 <= VIO_QSIZE) {
		expect("a chain of SEG_MAX + 1 data segments", read_in_segments(n + 1), NEEDS_RESET);
		expect_recovers("long chain");
	}
}

/* every descriptor of the queue in one cycle: longer than the queue */
static void a_chain_round(void)
{
	hdr[0] = (struct vio_blk_hdr){ .type = BLK_T_IN };
	vq.desc[0] = (struct vio_desc){ (uintptr_t)&hdr[0], 16, VIO_DESC_F_NEXT, 1 };
	for (uint16_t i = 1; i < VIO_QSIZE; i++)
		vq.desc[i] = (struct vio_desc){ (uintptr_t)data[0], 512, VIO_DESC_F_NEXT | VIO_DESC_F_WRITE,
						(uint16_t)((i + 1) % VIO_QSIZE) };
	expect("a chain through every descriptor and round again", run_chain(0, 0), NEEDS_RESET);
}

static void a_outside_ram(void)
{
	expect("a buffer in a hole", one_desc_then_status(HOLE, 512, VIO_DESC_F_WRITE), NEEDS_RESET);
}

static void a_ram_end(void)
{
	expect("a buffer across the end of RAM", one_desc_then_status(ram_end() - 256, 512, VIO_DESC_F_WRITE),
	       NEEDS_RESET);
}

static void a_at_ram_end(void)
{
	expect("a buffer at the end of RAM", one_desc_then_status(ram_end(), 512, VIO_DESC_F_WRITE),
	       NEEDS_RESET);
}

static void a_below_ram(void)
{
	expect("a buffer just below RAM", one_desc_then_status(env.ram_base - 512, 512, VIO_DESC_F_WRITE),
	       NEEDS_RESET);
}

static void a_wrap(void)
{
	expect("a buffer wrapping 2^64", one_desc_then_status(~0ul - 255, 512, VIO_DESC_F_WRITE), NEEDS_RESET);
}

static void a_mmio_uart(void)
{
	expect("a read into the UART", one_desc_then_status(UART_BASE, 512, VIO_DESC_F_WRITE), NEEDS_RESET);
}

static void a_mmio_self(void)
{
	expect("a read into its own registers", one_desc_then_status(dev.base, 512, VIO_DESC_F_WRITE),
	       NEEDS_RESET);
}

static void a_mmio_plic(void)
{
	expect("a read into the PLIC", one_desc_then_status(PLIC_BASE, 512, VIO_DESC_F_WRITE), NEEDS_RESET);
}

static void a_write_from_mmio(void)
{
	expect("a write from its own registers", one_desc_then_status(dev.base, 512, 0), NEEDS_RESET);
}

static void a_header_mmio(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h].addr = dev.base;	/* its registers as the header */
	expect("the header in its own registers", run_chain(h, 0), NEEDS_RESET);
}

static void a_status_mmio(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 2].addr = UART_BASE;
	expect("the status byte in the UART", run_chain(h, 0), NEEDS_RESET);
}

static void avail_move(const char *what, uint16_t by)
{
	build(0, BLK_T_IN, 0, data[0], 512);
	for (uint16_t i = 0; i < VIO_QSIZE; i++)
		vq.avail->ring[i] = 0;
	__atomic_store_n(&vq.avail->idx, (uint16_t)(vq.avail->idx + by), __ATOMIC_RELEASE);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
	expect(what, wait_for(vio_needs_reset(&dev), WAIT_US) ? NEEDS_RESET : -1, NEEDS_RESET);
}

static void a_avail_jump(void)
{
	avail_move("avail.idx 129 ahead (queue of 128)", VIO_QSIZE + 1);
	expect_recovers("avail jump");
	avail_move("avail.idx 1000 ahead", 1000);
	expect_recovers("avail jump");
	avail_move("avail.idx one back", 0xffff);
}

static void a_head_range(void)
{
	uint16_t idx = vq.avail->idx;

	vq.avail->ring[idx % vq.size] = 1000;
	__atomic_store_n(&vq.avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
	expect("head 1000 of 128", wait_for(vio_needs_reset(&dev), WAIT_US) ? NEEDS_RESET : -1, NEEDS_RESET);
}

/* the same head twice on the ring while the device holds the first */
static void a_head_busy(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, flood_buf[0], 65536), idx = vq.avail->idx;

	vq.avail->ring[idx % vq.size] = h;
	vq.avail->ring[(idx + 1) % vq.size] = h;
	__atomic_store_n(&vq.avail->idx, (uint16_t)(idx + 2), __ATOMIC_RELEASE);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
	expect("a head the device holds, again", wait_for(vio_needs_reset(&dev), WAIT_US) ? NEEDS_RESET : -1,
	       NEEDS_RESET);
}

static void a_next_range(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 1].next = 500;
	expect("next 500 of 128", run_chain(h, 0), NEEDS_RESET);
}

static void a_status_readonly(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 2].flags = 0;	/* the status byte readable, after writable data */
	expect("the status byte device-readable", run_chain(h, 0), NEEDS_RESET);
}

static void a_no_status(void)
{
	uint16_t h = build(0, BLK_T_OUT, FREE_SECTOR, data[0], 512);

	vq.desc[h + 2].flags = 0;	/* nothing device-writable at all */
	expect("no device-writable byte (no status)", run_chain(h, 0), NEEDS_RESET);
}

static void a_header_short(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h].len = 8;
	expect("an 8-byte header", run_chain(h, 0), BLK_S_IOERR);
}

/* the header over two descriptors is legal (it is copied from both) */
static void a_header_split(void)
{
	pattern_fill(data[13], 4096, 0x5417);
	for (int j = 0; j < 4096; j++)
		data[14][j] = 0;
	check_eq(T, "split header: a write", request(BLK_T_OUT, FREE_SECTOR, data[13], 4096), BLK_S_OK);
	hdr[0] = (struct vio_blk_hdr){ .type = BLK_T_IN, .sector = FREE_SECTOR };
	status[0] = STATUS_NONE;
	vq.desc[0] = (struct vio_desc){ (uintptr_t)&hdr[0], 8, VIO_DESC_F_NEXT, 1 };
	vq.desc[1] = (struct vio_desc){ (uintptr_t)&hdr[0] + 8, 8, VIO_DESC_F_NEXT, 2 };
	vq.desc[2] = (struct vio_desc){ (uintptr_t)data[14], 4096, VIO_DESC_F_NEXT | VIO_DESC_F_WRITE, 3 };
	vq.desc[3] = (struct vio_desc){ (uintptr_t)&status[0], 1, VIO_DESC_F_WRITE, 0 };
	expect("a header over two descriptors", run_chain(0, 0), BLK_S_OK);
	check_eq(T, "split header: the data read", pattern_same(data[14], 4096, 0x5417), 1);
}

static void a_direction(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 1].flags = VIO_DESC_F_NEXT;	/* a read into a device-readable buffer */
	expect("a read into a device-readable buffer", run_chain(h, 0), BLK_S_IOERR);
	h = build(0, BLK_T_OUT, FREE_SECTOR, data[0], 512);
	vq.desc[h + 1].flags |= VIO_DESC_F_WRITE;	/* a write from a device-writable one */
	expect("a write from a device-writable buffer", run_chain(h, 0), BLK_S_IOERR);
	h = build(0, BLK_T_IN, 0, data[0], 512);
	vq.desc[h].flags |= VIO_DESC_F_WRITE;	/* the header device-writable */
	expect("a device-writable header", run_chain(h, 0), BLK_S_IOERR);
}

static void a_indirect(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 1].flags |= VIO_DESC_F_INDIRECT;
	expect("INDIRECT (not offered) on a buffer", run_chain(h, 0), NEEDS_RESET);
	expect_recovers("indirect");
	h = build(0, BLK_T_IN, 0, data[0], 512);
	vq.desc[h].flags |= VIO_DESC_F_INDIRECT;
	expect("INDIRECT (not offered) on the head", run_chain(h, 0), NEEDS_RESET);
}

static void a_len_zero(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, data[0], 512);

	vq.desc[h + 1].len = 0;
	expect("a zero-length buffer", run_chain(h, 0), NEEDS_RESET);
}

static void a_odd_length(void)
{
	expect("a write of 100 bytes", one_desc_then_status((uintptr_t)data[0], 100, 0), BLK_S_IOERR);
	expect("a read of no data", request(BLK_T_IN, 0, NULL, 0), BLK_S_IOERR);
	expect("a flush with data", request(BLK_T_FLUSH, 0, data[0], 512), BLK_S_IOERR);
	expect("a GET_ID of 512 bytes", request(BLK_T_GET_ID, 0, data[0], 512), BLK_S_IOERR);
	expect("an unknown type", request(99, 0, data[0], 512), BLK_S_UNSUPP);
	expect("a read at the capacity", request(BLK_T_IN, capacity, data[0], 512), BLK_S_IOERR);
	expect("a write at sector 2^64 - 1", request(BLK_T_OUT, ~0ull, data[0], 512), BLK_S_IOERR);
}

/* Submit @n 64 KiB reads (slots 1..@n) without waiting: the device is busy
 * and the disk's rate limit drains. */
static void reads_in_flight(unsigned int n)
{
	for (unsigned int s = 1; s <= n; s++)
		vio_submit(&dev, &vq, build(s, BLK_T_IN, 8 * s, flood_buf[s], 65536));
}

/* Wait for @n used elements, any order. */
static bool wait_all(unsigned int n)
{
	struct vio_used_elem e;

	for (unsigned int i = 0; i < n; i++)
		if (!vio_wait_used(&vq, WAIT_US, &e))
			return false;
	return true;
}

/* Header, descriptors and status place rewritten right after the notify,
 * each round behind reads that keep the device busy (so the request may
 * wait for the rate limit before it goes to the disk): what the device does
 * is what was there at the notify (it copied it when it took the chain, in
 * that exit), never the rewritten request nor a mix of the two. */
static void a_toctou(void)
{
	uint64_t a = FREE_SECTOR + 64, b = FREE_SECTOR + 128;

	pattern_fill(big[0], 4096, 0xaa);
	pattern_fill(big[1], 8192, 0xbb);
	for (int round = 0; round < TOCTOU_ROUNDS; round++) {
		uint16_t h;

		pattern_fill(big[2], 8192, 0x0 + round);
		if (request(BLK_T_OUT, a, big[2], 4096) != BLK_S_OK ||
		    request(BLK_T_OUT, b, big[2], 8192) != BLK_S_OK) {
			report_fail(T, "toctou: the disk's original contents (got an error, want OK)");
			return;
		}
		reads_in_flight(INFLIGHT - 1);
		h = build(0, BLK_T_OUT, a, big[0], 4096);
		other_byte = STATUS_NONE;
		vio_submit(&dev, &vq, h);
		/* too late, all of it: */
		hdr[0].sector = b;
		hdr[0].type = BLK_T_IN;
		vq.desc[h + 1] = (struct vio_desc){ (uintptr_t)big[1], 8192, VIO_DESC_F_NEXT | VIO_DESC_F_WRITE,
						    (uint16_t)(h + 2) };
		vq.desc[h + 2].addr = (uintptr_t)&other_byte;
		if (!wait_all(INFLIGHT)) {
			report_fail(T, "toctou round %d: not every request came back", round);
			return;
		}
		if (status[0] != BLK_S_OK || other_byte != STATUS_NONE || !pattern_same(big[1], 8192, 0xbb) ||
		    !pattern_same(big[0], 4096, 0xaa)) {
			report_fail(T, "toctou round %d: status %u, other byte %u, buffers %s (want the "
				    "notified write, its status byte)", round, status[0], other_byte,
				    pattern_same(big[1], 8192, 0xbb) ? "kept" : "read into");
			return;
		}
		if (request(BLK_T_IN, a, big[3], 4096) != BLK_S_OK || !pattern_same(big[3], 4096, 0xaa) ||
		    request(BLK_T_IN, b, big[3], 8192) != BLK_S_OK || !pattern_same(big[3], 8192, 0x0 + round)) {
			report_fail(T, "toctou round %d: the disk (want the notified write at %lu only)",
				    round, (unsigned long)a);
			return;
		}
	}
	report_pass(T, "toctou: %d rounds, each the request as it was at the notify", TOCTOU_ROUNDS);
}

static volatile uint64_t race_addr[2];

/* The second vCPU moves the data buffer of a write and changes its length. */
static void flip_data(unsigned long i)
{
	volatile struct vio_desc *d = &vq.desc[1];

	d->addr = race_addr[i & 1];
	d->len = (i & 2) ? 4608 : 4096;
}

/* Each write lands as one of the states the descriptor had: its first 4 KiB
 * from one buffer, and the ninth sector from the same one or untouched. */
static void a_toctou_race(void)
{
	unsigned long rounds, bad = 0, long_ones = 0;

	pattern_fill(big[0], 8192, 0xa1);
	pattern_fill(big[1], 8192, 0xb2);
	race_addr[0] = (uintptr_t)big[0];
	race_addr[1] = (uintptr_t)big[1];
	build(0, BLK_T_OUT, 0, big[0], 4096);
	if (!racer_start(T, flip_data))
		return;
	for (int round = 0; round < RACE_ROUNDS; round++) {
		uint64_t sector = FREE_SECTOR + 256 + 16 * (uint64_t)round;
		int st;

		hdr[0] = (struct vio_blk_hdr){ .type = BLK_T_OUT, .sector = sector };
		status[0] = STATUS_NONE;
		st = run_chain(0, 0);
		if (st != BLK_S_OK) {
			report_fail(T, "toctou race round %d: %s (want OK)", round, outcome(st));
			bad++;
			break;
		}
	}
	rounds = racer_stop();
	for (int round = 0; round < RACE_ROUNDS && !bad; round++) {
		uint64_t sector = FREE_SECTOR + 256 + 16 * (uint64_t)round;
		bool a, b;

		for (int j = 0; j < 4608; j++)
			big[3][j] = 0;
		if (request(BLK_T_IN, sector, big[3], 4608) != BLK_S_OK) {
			bad++;
			break;
		}
		a = pattern_same(big[3], 4096, 0xa1);
		b = pattern_same(big[3], 4096, 0xb2);
		if ((a && pattern_same(big[3], 4608, 0xa1)) || (b && pattern_same(big[3], 4608, 0xb2)))
			long_ones++;
		else if (!(a || b) || big[3][4096] || big[3][4607])
			bad++;	/* a mix, or a ninth sector from elsewhere */
	}
	report_info(T, "toctou race: %d writes, %lu of 9 sectors, %lu flips", RACE_ROUNDS, long_ones, rounds);
	check_eq(T, "toctou race: every write one state of the descriptor, whole", bad, 0);
}

/* A reset (of the device, or of the queue) with the device holding INFLIGHT
 * requests, at the host disk: a request right after it is done (once they
 * free a slot), and no used element of theirs reaches the ring set up
 * after it. */
static void reset_in_flight(const char *what, bool whole_device)
{
	struct vio_used_elem e;

	/* 16 writes of 192 KiB: 3 MiB, what the rate limit lets out at once,
	 * so all 16 may be at the host disk (on a busy host they are) */
	for (unsigned int s = 0; s < INFLIGHT; s++)
		vio_submit(&dev, &vq, build(s, BLK_T_OUT, FREE_SECTOR + 384 * s,
					    &flood_buf[0][0] + 112 * 1024 * s, 192 * 1024));
	if (whole_device) {
		vio_reset(&dev);
		check_eq(T, "reset in flight: status reads 0", vio_read(&dev, VIO_STATUS), 0);
		if (!bring_up()) {
			report_fail(T, "%s: bring-up (got a refusal, want the device)", what);
			return;
		}
	} else {
		vio_write(&dev, VIO_QUEUE_SEL, 0);
		vio_write(&dev, VIO_QUEUE_READY, 0);
		check_eq(T, "queue reset in flight: QueueReady reads 0", vio_read(&dev, VIO_QUEUE_READY), 0);
		if (vio_queue_setup(&dev, 0, VIO_QSIZE, &vq)) {
			report_fail(T, "%s: the queue again (got a refusal, want it ready)", what);
			return;
		}
	}
	/* at once, while the host disk may still hold all 16: it waits for
	 * the first slot they free */
	check_eq(T, "a read right after it", request(BLK_T_IN, 0, data[0], 512), BLK_S_OK);
	udelay(300000);
	check_eq(T, "no used element of the requests before the reset", vio_wait_used(&vq, 1000, &e), 0);
}

static void a_reset_in_flight(void)
{
	reset_in_flight("device reset in flight", true);
}

static void a_queue_reset_in_flight(void)
{
	reset_in_flight("queue reset (QueueReady 0) in flight", false);
}

/* QueueReset (not offered) with a request in flight: ignored. */
static void a_queue_reset_reg(void)
{
	uint16_t h = build(0, BLK_T_IN, 0, flood_buf[0], 65536);
	struct vio_used_elem e;

	vio_submit(&dev, &vq, h);
	vio_write(&dev, VIO_QUEUE_SEL, 0);
	vio_write(&dev, VIO_QUEUE_RESET, 1);
	check_eq(T, "QueueReset (not offered): the queue stays ready", vio_read(&dev, VIO_QUEUE_READY), 1);
	check_eq(T, "QueueReset (not offered): the request completes",
		 vio_wait_used(&vq, WAIT_US, &e) && e.id == h && status[0] == BLK_S_OK, 1);
}

/* A queue configuration the device must refuse at QueueReady. */
static void bad_queue(const char *what, uint32_t num, uint64_t desc, uint64_t avail, uint64_t used)
{
	vio_negotiate(&dev, want_features());
	vio_write(&dev, VIO_QUEUE_SEL, 0);
	vio_write(&dev, VIO_QUEUE_NUM, num);
	vio_write(&dev, VIO_QUEUE_DESC_LO, (uint32_t)desc);
	vio_write(&dev, VIO_QUEUE_DESC_HI, (uint32_t)(desc >> 32));
	vio_write(&dev, VIO_QUEUE_DRIVER_LO, (uint32_t)avail);
	vio_write(&dev, VIO_QUEUE_DRIVER_HI, (uint32_t)(avail >> 32));
	vio_write(&dev, VIO_QUEUE_DEVICE_LO, (uint32_t)used);
	vio_write(&dev, VIO_QUEUE_DEVICE_HI, (uint32_t)(used >> 32));
	vio_write(&dev, VIO_QUEUE_READY, 1);
	vio_write(&dev, VIO_STATUS, vio_read(&dev, VIO_STATUS) | VIO_S_DRIVER_OK);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
	check_eq(T, what, vio_read(&dev, VIO_QUEUE_READY) == 0 && vio_needs_reset(&dev), 1);
}

static void a_bad_queue_config(void)
{
	uint64_t d = (uintptr_t)vq.desc, a = (uintptr_t)vq.avail, u = (uintptr_t)vq.used;

	bad_queue("config: QueueNum 3, used ring in a hole: refused", 3, d, a, HOLE);
	bad_queue("config: the used ring in a hole: refused", 128, d, a, HOLE);
	bad_queue("config: the descriptor table in its own registers: refused", 128, dev.base, a, u);
	bad_queue("config: the available ring across the end of RAM: refused", 128, d, ram_end() - 100, u);
	bad_queue("config: the used ring in the UART: refused", 128, d, a, UART_BASE);
	bad_queue("config: the table wrapping 2^64: refused", 128, ~0ull - 1023, a, u);
	bad_queue("config: QueueNum 512 (max 256): refused", 512, d, a, u);
	bad_queue("config: QueueNum 0: refused", 0, d, a, u);
	bad_queue("config: a used ring 2-byte aligned: refused", 128, d, a, u + 2);
}

static void a_features(void)
{
	check_eq(T, "features: INDIRECT_DESC (not offered): FEATURES_OK refused",
		 vio_negotiate(&dev, want_features() | (1ull << VIO_F_INDIRECT_DESC)) & VIO_S_FEATURES_OK, 0);
	check_eq(T, "features: EVENT_IDX (not offered): FEATURES_OK refused",
		 vio_negotiate(&dev, want_features() | (1ull << VIO_F_EVENT_IDX)) & VIO_S_FEATURES_OK, 0);
	check_eq(T, "features: no VERSION_1 (legacy): FEATURES_OK refused",
		 vio_negotiate(&dev, 1ull << BLK_F_FLUSH) & VIO_S_FEATURES_OK, 0);
}

/* A request notified before DRIVER_OK is not taken; after DRIVER_OK it is. */
static void a_before_driver_ok(void)
{
	struct vio_used_elem e;
	uint16_t h;

	vio_negotiate(&dev, want_features());
	if (vio_queue_setup(&dev, 0, VIO_QSIZE, &vq)) {
		report_fail(T, "before DRIVER_OK: queue setup (got a refusal, want the queue)");
		return;
	}
	h = build(0, BLK_T_IN, 0, data[0], 512);
	vio_submit(&dev, &vq, h);
	check_eq(T, "a notify before DRIVER_OK: nothing taken", vio_wait_used(&vq, 200000, &e), 0);
	vio_driver_ok(&dev);
	vio_write(&dev, VIO_QUEUE_NOTIFY, 0);
	check_eq(T, "after DRIVER_OK the request is done",
		 vio_wait_used(&vq, WAIT_US, &e) && e.id == h && status[0] == BLK_S_OK, 1);
}

/* The second vCPU resets the queue (QueueReady 0) and sets it up again, or
 * the whole device, over and over, while the first keeps the queue full. */
static void reprogram_queue(void)
{
	unsigned long a;

	vio_write(&dev, VIO_QUEUE_SEL, 0);
	vio_write(&dev, VIO_QUEUE_NUM, vq.size);
	a = (uintptr_t)vq.desc;
	vio_write(&dev, VIO_QUEUE_DESC_LO, (uint32_t)a);
	vio_write(&dev, VIO_QUEUE_DESC_HI, (uint32_t)(a >> 32));
	a = (uintptr_t)vq.avail;
	vio_write(&dev, VIO_QUEUE_DRIVER_LO, (uint32_t)a);
	vio_write(&dev, VIO_QUEUE_DRIVER_HI, (uint32_t)(a >> 32));
	a = (uintptr_t)vq.used;
	vio_write(&dev, VIO_QUEUE_DEVICE_LO, (uint32_t)a);
	vio_write(&dev, VIO_QUEUE_DEVICE_HI, (uint32_t)(a >> 32));
	__atomic_store_n(&vq.avail->idx, 0, __ATOMIC_RELEASE);	/* a queue starts again at 0 */
	vio_write(&dev, VIO_QUEUE_READY, 1);
}

static void reset_queue(unsigned long i)
{
	(void)i;
	vio_write(&dev, VIO_QUEUE_SEL, 0);
	vio_write(&dev, VIO_QUEUE_READY, 0);
	reprogram_queue();
}

static void reset_device(unsigned long i)
{
	(void)i;
	vio_write(&dev, VIO_STATUS, 0);
	vio_write(&dev, VIO_STATUS, VIO_S_ACK | VIO_S_DRIVER);
	vio_write(&dev, VIO_DRV_FEATURES_SEL, 0);
	vio_write(&dev, VIO_DRV_FEATURES, (uint32_t)want_features());
	vio_write(&dev, VIO_DRV_FEATURES_SEL, 1);
	vio_write(&dev, VIO_DRV_FEATURES, (uint32_t)(want_features() >> 32));
	vio_write(&dev, VIO_STATUS, VIO_S_ACK | VIO_S_DRIVER | VIO_S_FEATURES_OK);
	reprogram_queue();
	vio_write(&dev, VIO_STATUS, VIO_S_ACK | VIO_S_DRIVER | VIO_S_FEATURES_OK | VIO_S_DRIVER_OK);
}

static void reset_race(const char *what, void (*fn)(unsigned long))
{
	unsigned long t_end, rounds, submitted = 0;

	for (unsigned int s = 0; s < INFLIGHT * 2; s++)
		build(s, s & 1 ? BLK_T_IN : BLK_T_OUT, FREE_SECTOR + 128 * s, flood_buf[s], 65536);
	if (!racer_start(T, fn))
		return;
	t_end = rdtime() + us_to_ticks(2000000);
	while (rdtime() < t_end) {
		/* requests on the ring whatever the device did with the others */
		vio_submit(&dev, &vq, (uint16_t)(3 * (submitted % (INFLIGHT * 2))));
		submitted++;
		vq.used_seen = vq.used->idx;
	}
	rounds = racer_stop();
	report_info(T, "%s: %lu requests offered, %lu resets", what, submitted, rounds);
	report_pass(T, "%s: the hypervisor answered throughout", what);
}

static void a_queue_reset_race(void)
{
	reset_race("queue reset race", reset_queue);
}

static void a_device_reset_race(void)
{
	reset_race("device reset race", reset_device);
}

static void a_notify_storm(void)
{
	unsigned long t0 = rdtime(), n = bootarg_ulong("storm", STORM_NOTIFIES);

	for (unsigned long i = 0; i < n; i++)
		vio_write(&dev, VIO_QUEUE_NOTIFY, (uint32_t)(i % 8));
	report_info(T, "%lu empty notifies (queues 0..7) in %lu us", n, ticks_to_us(rdtime() - t0));
	check_eq(T, "device healthy after a notify storm", healthy(), 1);
	check_eq(T, "a good read after the storm", request(BLK_T_IN, 0, data[0], 512), BLK_S_OK);
}

/* Keep the queue full of 64 KiB requests (reads, or writes) for @us. */
static unsigned long flood_for(unsigned long us, uint32_t type)
{
	unsigned long end = rdtime() + us_to_ticks(us), done = 0, slots = VIO_QSIZE / 4;
	struct vio_used_elem e;

	for (unsigned int s = 0; s < slots; s++)
		vio_submit(&dev, &vq, build(s, type, FREE_SECTOR + 128 * s, flood_buf[s], 65536));
	while (!us || rdtime() < end) {
		if (!vio_wait_used(&vq, WAIT_US, &e))
			break;
		done++;
		vio_submit(&dev, &vq, (uint16_t)e.id);	/* straight back in */
	}
	return done;
}

static void a_flood(void)
{
	unsigned long done = flood_for(FLOOD_US, BLK_T_IN);

	report_info(T, "flood: %lu reads of 64 KiB", done);
	check_ge(T, "flood of reads: requests done", done, 1);
	expect_recovers("flood");
	done = flood_for(FLOOD_US, BLK_T_OUT);
	report_info(T, "flood: %lu writes of 64 KiB", done);
	check_ge(T, "flood of writes: requests done", done, 1);
}

struct attack {
	const char *name;
	void (*fn)(void);
};

static const struct attack attacks[] = {
	{ "loop", a_loop },
	{ "long_chain", a_long_chain },
	{ "chain_round_the_queue", a_chain_round },
	{ "outside_ram", a_outside_ram },
	{ "ram_end", a_ram_end },
	{ "at_ram_end", a_at_ram_end },
	{ "below_ram", a_below_ram },
	{ "wrap", a_wrap },
	{ "mmio_uart", a_mmio_uart },
	{ "mmio_self", a_mmio_self },
	{ "mmio_plic", a_mmio_plic },
	{ "write_from_mmio", a_write_from_mmio },
	{ "header_mmio", a_header_mmio },
	{ "status_mmio", a_status_mmio },
	{ "avail_jump", a_avail_jump },
	{ "head_range", a_head_range },
	{ "head_busy", a_head_busy },
	{ "next_range", a_next_range },
	{ "status_readonly", a_status_readonly },
	{ "no_status", a_no_status },
	{ "header_short", a_header_short },
	{ "header_split", a_header_split },
	{ "direction", a_direction },
	{ "indirect", a_indirect },
	{ "len_zero", a_len_zero },
	{ "bad_requests", a_odd_length },
	{ "toctou", a_toctou },
	{ "toctou_race", a_toctou_race },
	{ "reset_in_flight", a_reset_in_flight },
	{ "queue_reset_in_flight", a_queue_reset_in_flight },
	{ "queue_reset_register", a_queue_reset_reg },
	{ "queue_reset_race", a_queue_reset_race },
	{ "device_reset_race", a_device_reset_race },
	{ "bad_queue_config", a_bad_queue_config },
	{ "features_not_offered", a_features },
	{ "before_driver_ok", a_before_driver_ok },
	{ "notify_storm", a_notify_storm },
	{ "flood", a_flood },
};

static void attack(void)
{
	unsigned long from = bootarg_ulong("from", 0), to = bootarg_ulong("to", ARRAY_SIZE(attacks) - 1);

	sleep_us(bootarg_ulong("delay", 0) * 1000000);
	report_info(T, "ATTACKS: %lu", (to < ARRAY_SIZE(attacks) ? to + 1 : ARRAY_SIZE(attacks)) - from);
	for (unsigned long i = from; i <= to && i < ARRAY_SIZE(attacks); i++) {
		report_info(T, "ATTACK-BEGIN: %lu %s", i, attacks[i].name);
		attacks[i].fn();
		expect_recovers(attacks[i].name);
		report_info(T, "ATTACK-END: %lu %s", i, attacks[i].name);
	}
	report_info(T, "ATTACKS-DONE: refused=%lu", refused);
	if (bootarg_ulong("then_flood", 0))
		for (;;)	/* until the VM is destroyed */
			flood_for(0, BLK_T_IN);
}

/* ---- load -------------------------------------------------------------------- */

static void victim(void)
{
	unsigned long end = rdtime() + us_to_ticks(bootarg_ulong("seconds", 5) * 1000000), t0 = rdtime();
	unsigned long ops = 0, bad = 0;

	while (rdtime() < end) {
		uint64_t sector = 64 + 8 * (ops % 128);

		pattern_fill(data[11], 4096, ops);
		bad += request(BLK_T_OUT, sector, data[11], 4096) != BLK_S_OK;
		bad += request(BLK_T_IN, sector, data[12], 4096) != BLK_S_OK;
		bad += !pattern_same(data[12], 4096, ops);
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
	uint32_t size = (uint32_t)bootarg_ulong("size", 65536) & ~511u;
	uint64_t first = bootarg_ulong("past_end", 0) ? capacity : 0;
	struct vio_used_elem e;

	if (!size || size > sizeof(flood_buf[0]))
		size = sizeof(flood_buf[0]);
	for (unsigned int s = 0; s < slots; s++)
		vio_submit(&dev, &vq, build(s, BLK_T_IN, first + 8 * s, flood_buf[s], size));
	while (rdtime() < end) {
		if (!vio_wait_used(&vq, WAIT_US, &e))
			break;
		done++;
		vio_submit(&dev, &vq, (uint16_t)e.id);	/* straight back in */
	}
	report_info(T, "flood: %lu requests of %u bytes", done, size);
	check_ge(T, "flood: requests done", done, 1);
}

static void reboot_race(void)
{
	const unsigned int n = 8;
	unsigned long bad = 0;

	if (!env.boot_count) {
		for (unsigned int s = 0; s < n; s++)
			vio_submit(&dev, &vq, build(s, BLK_T_IN, 128 * s, flood_buf[s],
						    sizeof(flood_buf[0])));
		report_info(T, "reboot: %u reads handed to the device, rebooting", n);
		sbi_system_reset(1, 0);		/* cold reboot */
		report_fail(T, "reboot: the SBI reset returned");
		return;
	}
	memset(flood_buf, 0x5a, n * sizeof(flood_buf[0]));
	udelay(bootarg_ulong("seconds", 3) * 1000000);
	for (unsigned int s = 0; s < n; s++)
		for (unsigned int i = 0; i < sizeof(flood_buf[0]); i++)
			bad += flood_buf[s][i] != 0x5a;
	report_info(T, "reboot: boot %u, %lu bytes of its buffers overwritten", env.boot_count, bad);
	check_eq(T, "reboot: no read of the earlier boot lands in the new one", bad, 0);
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
	case 'r':
		reboot_race();
		break;
	default:
		func();
	}
	report_done();
}
