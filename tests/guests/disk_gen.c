/* SPDX-License-Identifier: MIT */
/* A guest whose disks must agree with its memory (issue 25): moved while it
 * writes them (tests/guests/test_migration_disks.py, make bench disk_move).
 *
 * Each disk (one or two) is cut into 4 KiB units. The guest keeps, in its
 * RAM, a generation number per unit; it writes one unit after another, at
 * random, each time with the unit's next generation (every 8-byte word a
 * hash of disk, unit, generation and word), and counts the generation up
 * once the write completed. After run_ms of that it reads every unit back:
 * each must hold exactly the generation its RAM says (0: all zeroes, never
 * written). A migration that copied a block of an instant other than the
 * memory's, lost a write, or wrote a block it should not have, fails that.
 * Nothing tells the guest it moved: the check is the same on any host. A
 * restored copy (a snapshot's) sees a new VM generation ID and checks at
 * once, before its own writes cover what the snapshot left.
 *
 * With a NIC it also sends a broadcast test frame after every write (a
 * guest busy on its disk and its network at once, as make bench moves it).
 *
 * Bootargs: run_ms=N (writing time, default 10000), units=N (units a disk
 * used from its start, default: all of it, at most MAX_UNITS),
 * seq=1 (the units one after the other, wrapping: a log's pattern, rather
 * than at random), rate_kib=N (writes paced at N KiB per second of guest time; default 0: as
 * fast as the I/O path goes), idle=1 (no write at all: a baseline),
 * win_ms=N (print "DISKGEN-RATE <writes> <ticks>" at the end of every N ms
 * window of guest time; 0: none).
 * Prints DISKGEN-READY when it begins writing, and at the end the writes,
 * bytes and elapsed time (INFO), then the verdict per disk.
 */
#include "libguest.h"
#include "vio.h"
#include "vio_nic.h"

#define T "disk_gen"

#define BLK_T_IN	0
#define BLK_T_OUT	1
#define BLK_S_OK	0
#define STATUS_NONE	0xa5
#define WAIT_US		5000000
#define QSIZE		16
#define UNIT		4096
#define UNIT_SECTORS	(UNIT / 512)
#define MAX_UNITS	8192		/* 32 MiB a disk */
#define VMGENID_GPA	0x10100000UL	/* the VM generation ID device (snap_vio.c too) */

struct disk {
	bool present;
	struct vio_dev dev;
	struct vio_queue vq;
	uint64_t units;
	struct vio_blk_hdr hdr;
	volatile uint8_t status;
	uint32_t gen[MAX_UNITS];	/* what each unit holds: the state that moves */
};

static struct vio_rings rings[2];
static struct disk disks[2];
static uint8_t buf[UNIT] __attribute__((aligned(UNIT)));
static struct vio_nic nic;
static struct vio_nic_bufs nic_bufs;
static bool has_nic;
static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* One test frame to everyone on the switch, tagged with the write count. */
static void frame_send(uint64_t seq)
{
	uint16_t slot;
	uint8_t *f = nic_tx_frame(&nic, &slot);

	nic_test_frame(f, broadcast, nic.mac, 0xd15c, (uint32_t)seq, 0, 64);
	nic_tx_send(&nic, slot, 64);
}

static uint64_t word(unsigned int d, uint64_t unit, uint32_t gen, unsigned int i)
{
	return mix64(((uint64_t)d << 60) ^ (unit << 32) ^ ((uint64_t)gen << 8) ^ i);
}

static uint64_t genid_read(void)
{
	const volatile uint64_t *id = (const volatile uint64_t *)VMGENID_GPA;

	return env.carapace ? id[0] ^ id[1] : 0;
}

static bool disk_up(struct disk *k, unsigned int nth, uint64_t want_units)
{
	uint64_t sectors;

	if (!vio_find(VIO_ID_BLK, nth, &k->dev))
		return false;
	vio_negotiate(&k->dev, 1ull << VIO_F_VERSION_1);
	if (!(vio_read(&k->dev, VIO_STATUS) & VIO_S_FEATURES_OK))
		return false;
	vio_write(&k->dev, VIO_QUEUE_SEL, 0);
	if (vio_read(&k->dev, VIO_QUEUE_NUM_MAX) < QSIZE)
		return false;
	k->vq = (struct vio_queue){ 0, QSIZE, rings[nth].desc, &rings[nth].avail,
				    &rings[nth].used, 0 };
	if (vio_queue_enable(&k->dev, &k->vq))
		return false;
	vio_driver_ok(&k->dev);
	sectors = vio_config(&k->dev, 0, 8);
	k->units = sectors / UNIT_SECTORS;
	if (k->units > MAX_UNITS)
		k->units = MAX_UNITS;
	if (want_units && want_units < k->units)
		k->units = want_units;
	k->present = k->units > 0;
	return k->present;
}

/* One request of a unit, submitted and waited for: its status, -1 if none. */
static int unit_io(struct disk *k, uint32_t type, uint64_t unit)
{
	struct vio_desc *d = k->vq.desc;
	struct vio_used_elem e;

	k->hdr = (struct vio_blk_hdr){ .type = type, .sector = unit * UNIT_SECTORS };
	k->status = STATUS_NONE;
	d[0] = (struct vio_desc){ (uintptr_t)&k->hdr, sizeof(k->hdr), VIO_DESC_F_NEXT, 1 };
	d[1] = (struct vio_desc){ (uintptr_t)buf, UNIT,
		(uint16_t)(VIO_DESC_F_NEXT | (type == BLK_T_IN ? VIO_DESC_F_WRITE : 0)), 2 };
	d[2] = (struct vio_desc){ (uintptr_t)&k->status, 1, VIO_DESC_F_WRITE, 0 };
	vio_submit(&k->dev, &k->vq, 0);
	if (!vio_wait_used(&k->vq, WAIT_US, &e) || e.id != 0)
		return -1;
	return k->status;
}

static bool write_next(unsigned int d, uint64_t unit)
{
	struct disk *k = &disks[d];
	uint32_t gen = k->gen[unit] + 1;

	for (unsigned int i = 0; i < UNIT / 8; i++)
		((uint64_t *)buf)[i] = word(d, unit, gen, i);
	if (unit_io(k, BLK_T_OUT, unit) != BLK_S_OK)
		return false;
	k->gen[unit] = gen;	/* done: from now on the disk holds it */
	return true;
}

/* Every unit of disk @d against its generation: the units that differ. */
static uint64_t verify(unsigned int d, uint64_t *io_errors)
{
	struct disk *k = &disks[d];
	uint64_t bad = 0;

	for (uint64_t u = 0; u < k->units; u++) {
		bool ok = true;

		if (unit_io(k, BLK_T_IN, u) != BLK_S_OK) {
			(*io_errors)++;
			continue;
		}
		for (unsigned int i = 0; i < UNIT / 8 && ok; i++)
			ok = ((uint64_t *)buf)[i] ==
			     (k->gen[u] ? word(d, u, k->gen[u], i) : 0);
		if (!ok && bad++ < 4)
			printf("INFO: " T ": disk %u unit %lu: not generation %u\n", d,
			       (unsigned long)u, k->gen[u]);
	}
	return bad;
}

void test_main(unsigned long self)
{
	unsigned long run = us_to_ticks(bootarg_ulong("run_ms", 10000) * 1000);
	unsigned long rate = bootarg_ulong("rate_kib", 0), idle = bootarg_ulong("idle", 0);
	unsigned long seq = bootarg_ulong("seq", 0);
	unsigned long win = us_to_ticks(bootarg_ulong("win_ms", 0) * 1000);
	/* ticks between two writes at rate_kib (0: none) */
	unsigned long every = rate ? timebase_hz() * (UNIT / 1024) / rate : 0;
	uint64_t want_units = bootarg_ulong("units", 0), writes = 0, seed = 0x5eed, win_writes = 0;
	unsigned long t0, elapsed, win_start;
	uint64_t genid;
	unsigned int n = 0;
	bool ok = true;

	(void)self;
	for (unsigned int d = 0; d < 2; d++)
		n += disk_up(&disks[d], d, want_units);
	if (!check_ge(T, "a disk to write", n, 1))
		return;
	has_nic = nic_find(&nic, 0, &nic_bufs) && nic_up(&nic, 4);
	report_info(T, "disks %u, NIC %d, rate %lu KiB/s%s", n, has_nic, rate,
		    idle ? ", idle" : "");
	genid = genid_read();
	printf("DISKGEN-READY\n");
	t0 = win_start = rdtime();
	while (ok && rdtime() - t0 < run) {
		if (genid_read() != genid) {
			report_info(T, "restored (a new VM generation ID): checking now");
			break;
		}
		unsigned int d = disks[1].present ? (unsigned int)(writes & 1) : 0;
		unsigned long now = rdtime();

		if (win && now - win_start >= win) {
			printf("DISKGEN-RATE %lu %lu\n", (unsigned long)win_writes,
			       now - win_start);
			win_writes = 0;
			win_start = now;
		}
		if (idle || (every && now - t0 < writes * every))
			continue;	/* the next write is not due yet */
		seed = seq ? writes / (disks[1].present ? 2 : 1) : mix64(seed + writes);
		ok = write_next(d, seed % disks[d].units);
		writes++;
		win_writes++;
		if (has_nic) {
			nic_tx_reap(&nic);
			frame_send(writes);
		}
	}
	elapsed = ticks_to_us(rdtime() - t0);
	check_eq(T, "every write completed OK", ok, 1);
	printf("INFO: " T ": %lu writes, %lu bytes in %lu us\n", (unsigned long)writes,
	       (unsigned long)(writes * UNIT), elapsed);
	for (unsigned int d = 0; d < 2; d++) {
		uint64_t io_errors = 0, bad;

		if (!disks[d].present)
			continue;
		bad = verify(d, &io_errors);
		check_eq(T, d ? "disk 1: every read of the check OK" :
			       "disk 0: every read of the check OK", (long)io_errors, 0);
		check_eq(T, d ? "disk 1: every unit holds what memory says" :
			       "disk 0: every unit holds what memory says", (long)bad, 0);
	}
}
