/* SPDX-License-Identifier: MIT */
/* Boot self-tests of the host disks and NICs (hostio_selftest.h), through
 * the real drivers. Tests only, each when the host DT asks.
 *
 * hostio_selftest() (/chosen carapace,selftest-hostio, for
 * tests/guests/test_host_virtio.py) writes to the disks. Boot, hart 0,
 * polling (the drivers' interrupts are not taken yet); each step waits at
 * most ST_WAIT_MS.
 *
 * Disk in slot s, read-write: SELFTEST_SECTORS sectors at SELFTEST_SECTOR are
 * written with pattern(s) in two segments, flushed, read back (two other
 * segments) and compared; a request past the end must be refused. Read-only:
 * a write must be refused, and the first bytes of those sectors are printed.
 * NIC: an ARP request for QEMU user networking's gateway 10.0.2.2, resent
 * every 500 ms; the reply's sender MAC is printed.
 *
 * hostio_selftest_irq() (/chosen carapace,selftest-pci-irq, for
 * tests/guests/test_host_irq.py): reads of sector 0 of the first disk,
 * completed only by its INTx: host_io.c's handler polls the disk, whose
 * done() sends the next read, for IRQ_WINDOW_MS and at least IRQ_REQUESTS
 * reads. The answers come while hart 0 does whatever it does then (runs a
 * guest, sleeps, serves the host); the last one reports where they were
 * taken. A window rather than a count: QEMU answers a read in about 0.2 ms,
 * so 16 of them can all come while hart 0 is still busy starting the boot
 * VMs, and none at a guest exit. */
#include <errno.h>
#include <host_io.h>
#include <hart.h>
#include <host_irq.h>
#include <hostblk.h>
#include <hostio_selftest.h>
#include <hostnet.h>
#include <log.h>
#include <string.h>
#include <vm_lifecycle.h>

#define SELFTEST_SECTOR		8
#define SELFTEST_SECTORS	8
#define ST_BYTES		(SELFTEST_SECTORS * VIRTIO_BLK_SECTOR)
#define ST_WAIT_MS		5000
#define ARP_RESEND_MS		500

static uint8_t wbuf[ST_BYTES] __attribute__((aligned(4096)));
static uint8_t rbuf[ST_BYTES] __attribute__((aligned(4096)));
static struct hostblk_req req;

static uint64_t ms_to_ticks(uint64_t ms)
{
	return timebase_hz * ms / 1000;
}

/* byte k of the pattern for the disk in slot @slot (the test computes it too) */
static uint8_t pattern(unsigned int slot, unsigned int k)
{
	return (uint8_t)((k * 7 + slot * 13 + (k >> 9)) ^ 0x5a);
}

static void st_done(struct hostblk_req *r)
{
	*(volatile bool *)r->owner = true;
}

/* Submit a request over @buf (two segments; none for a flush) and wait for
 * it: 0 and its status, or the submit's error, or -HYP_EBUSY on a timeout. */
static int run(struct hostblk *b, uint32_t type, uint64_t sector, uint8_t *buf, uint8_t *status)
{
	volatile bool done = false;
	uint64_t end = time_now() + ms_to_ticks(ST_WAIT_MS);
	static struct blk_seg seg[2];
	int rc;

	req = (struct hostblk_req){ .type = type, .sector = sector, .done = st_done,
				    .owner = (void *)&done };
	if (buf) {
		seg[0] = (struct blk_seg){ (hpa_t)(uintptr_t)buf, ST_BYTES / 2 };
		seg[1] = (struct blk_seg){ (hpa_t)(uintptr_t)buf + ST_BYTES / 2, ST_BYTES / 2 };
		req.seg = seg;
		req.nr_seg = 2;
	}
	rc = hostblk_submit(b, &req);
	while (!rc && !done && time_now() < end)
		hostblk_poll(b);
	if (!rc && !done)
		return -HYP_EBUSY;
	*status = req.status;
	return rc;
}

static void blk_selftest(unsigned int slot, struct hostblk *b)
{
	const char *what = "write";
	uint8_t st = 0xff;
	int rc, past;

	if (hostblk_read_only(b)) {
		rc = run(b, VIRTIO_BLK_T_OUT, SELFTEST_SECTOR, wbuf, &st);
		if (rc != -HYP_EINVAL) {
			pr_info("hostio selftest: blk slot %u: read-only, but a write gave %d", slot,
				rc);
			return;
		}
		rc = run(b, VIRTIO_BLK_T_IN, SELFTEST_SECTOR, rbuf, &st);
		if (rc || st != VIRTIO_BLK_S_OK) {
			pr_info("hostio selftest: blk slot %u: read failed (%d, status %u)", slot, rc,
				st);
			return;
		}
		pr_info("hostio selftest: blk slot %u: read-only: write refused; sector %u starts "
			"%02x%02x%02x%02x%02x%02x%02x%02x", slot, SELFTEST_SECTOR, rbuf[0], rbuf[1],
			rbuf[2], rbuf[3], rbuf[4], rbuf[5], rbuf[6], rbuf[7]);
		return;
	}
	for (unsigned int k = 0; k < ST_BYTES; k++)
		wbuf[k] = pattern(slot, k);
	memset(rbuf, 0, sizeof(rbuf));
	rc = run(b, VIRTIO_BLK_T_OUT, SELFTEST_SECTOR, wbuf, &st);
	if (!rc && st == VIRTIO_BLK_S_OK) {
		what = "flush";
		rc = run(b, VIRTIO_BLK_T_FLUSH, 0, NULL, &st);
	}
	if (!rc && st == VIRTIO_BLK_S_OK) {
		what = "read";
		rc = run(b, VIRTIO_BLK_T_IN, SELFTEST_SECTOR, rbuf, &st);
	}
	if (rc || st != VIRTIO_BLK_S_OK) {
		pr_info("hostio selftest: blk slot %u: %s failed (%d, status %u)", slot, what, rc,
			st);
		return;
	}
	past = run(b, VIRTIO_BLK_T_IN, hostblk_sectors(b) - SELFTEST_SECTORS + 1, rbuf + 0, &st);
	pr_info("hostio selftest: blk slot %u: wrote %u sectors at %u, flushed, read back %s; "
		"past the end %s", slot, SELFTEST_SECTORS, SELFTEST_SECTOR,
		memcmp(wbuf, rbuf, ST_BYTES) ? "DIFFERENT" : "equal",
		past == -HYP_EINVAL ? "refused" : "NOT refused");
}

/* --- ARP for 10.0.2.2 ---------------------------------------------------------- */

#define ARP_LEN		42
static const uint8_t gateway_ip[4] = { 10, 0, 2, 2 }, our_ip[4] = { 10, 0, 2, 15 };

struct arp_wait {
	uint8_t mac[6];		/* ours */
	bool replied;
	uint8_t from[6];	/* the gateway's, from the reply */
};

static void arp_rx(void *ctx, const void *frame, uint32_t len)
{
	struct arp_wait *w = ctx;
	const uint8_t *f = frame;

	/* Ethernet type ARP, IPv4 over Ethernet, a reply from the gateway to us */
	if (len < ARP_LEN || f[12] != 0x08 || f[13] != 0x06 || f[20] != 0 || f[21] != 2 ||
	    memcmp(f + 28, gateway_ip, 4) || memcmp(f + 32, w->mac, 6))
		return;
	memcpy(w->from, f + 22, 6);
	w->replied = true;
}

static void arp_request(uint8_t *f, const uint8_t mac[6])
{
	static const uint8_t head[] = { 0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 1 };

	memset(f, 0xff, 6);			/* broadcast */
	memcpy(f + 6, mac, 6);
	memcpy(f + 12, head, sizeof(head));	/* type ARP; Ethernet, IPv4, 6, 4, request */
	memcpy(f + 22, mac, 6);
	memcpy(f + 28, our_ip, 4);
	memset(f + 32, 0, 6);
	memcpy(f + 38, gateway_ip, 4);
}

static void net_selftest(unsigned int slot, struct hostnet *n)
{
	static uint8_t frame[HOSTNET_FRAME_MAX + 1];
	struct arp_wait w = { 0 };
	uint64_t end = time_now() + ms_to_ticks(ST_WAIT_MS), next = 0;
	int big;

	hostnet_mac(n, w.mac);
	big = hostnet_tx(n, frame, sizeof(frame));
	arp_request(frame, w.mac);
	hostnet_set_rx(n, arp_rx, &w);
	while (!w.replied && time_now() < end) {
		if (time_now() >= next) {
			hostnet_tx(n, frame, ARP_LEN);
			next = time_now() + ms_to_ticks(ARP_RESEND_MS);
		}
		hostnet_poll(n);
	}
	hostnet_set_rx(n, NULL, NULL);
	if (!w.replied) {
		pr_info("hostio selftest: net slot %u: no ARP reply from 10.0.2.2", slot);
		return;
	}
	pr_info("hostio selftest: net slot %u: ARP reply from 10.0.2.2 at "
		"%02x:%02x:%02x:%02x:%02x:%02x; a %u-byte frame %s", slot, w.from[0], w.from[1],
		w.from[2], w.from[3], w.from[4], w.from[5], HOSTNET_FRAME_MAX + 1,
		big == -HYP_EINVAL ? "refused" : "NOT refused");
}

void hostio_selftest(void)
{
	for (unsigned int slot = HOST_PCI_DEV_MIN; slot <= HOST_PCI_DEV_MAX; slot++) {
		struct hostblk *b = hostblk_by_slot(slot);
		struct hostnet *n = hostnet_by_slot(slot);

		if (b)
			blk_selftest(slot, b);
		if (n)
			net_selftest(slot, n);
	}
	pr_info("hostio selftest: done");
}

/* --- a disk's INTx, end to end ----------------------------------------------- */

/* more than one host_irq_handle() call takes (HOST_IRQ_MAX_CLAIMS), so some
 * answers come after the call that took the first ones */
#define IRQ_REQUESTS		16
/* well inside the guest-exit test's 1.5 s spin: the report comes before its
 * VM ends (and with it, Carapace) */
#define IRQ_WINDOW_MS		500

static struct {
	struct hostblk *disk;
	unsigned int slot;
	int64_t irq;
	uint64_t until;		/* reads go on until then (time_now()) */
	unsigned int answered, bad, at_exit, in_loop;
	bool in_done, resend;	/* irq_done() running; an answer inside it wants the next read */
	struct hostblk_req req;
	struct blk_seg seg;
	uint8_t data[VIRTIO_BLK_SECTOR] __attribute__((aligned(64)));
} irq_st;

static void irq_done(struct hostblk_req *r);

static int irq_send(void)
{
	memset(irq_st.data, 0, sizeof(irq_st.data));
	irq_st.req = (struct hostblk_req){
		.type = VIRTIO_BLK_T_IN, .sector = 0, .nr_seg = 1, .done = irq_done,
		.seg = &irq_st.seg,
	};
	irq_st.seg = (struct blk_seg){ (hpa_t)(uintptr_t)irq_st.data, sizeof(irq_st.data) };
	return hostblk_submit(irq_st.disk, &irq_st.req);
}

/* From hostblk_poll(), which only the disk's interrupt handler calls now. */
static void irq_done(struct hostblk_req *r)
{
	const uint8_t *d = irq_st.data;
	int rc;

	irq_st.answered++;
	irq_st.bad += r->status != VIRTIO_BLK_S_OK;
	if (host_irq_polling())
		irq_st.in_loop++;
	else
		irq_st.at_exit++;
	if (irq_st.answered < IRQ_REQUESTS || time_now() < irq_st.until) {
		/* A read QEMU answers at once is taken by the submit's own drain,
		 * which calls this again: sent from here, every answer would nest
		 * one level deeper for the whole window, far past the hart's stack
		 * (it overran into .bss). The nested call only asks; this one sends. */
		if (irq_st.in_done) {
			irq_st.resend = true;
			return;
		}
		irq_st.in_done = true;
		do {
			irq_st.resend = false;
			rc = irq_send();
			if (rc)
				pr_info("hostio selftest: irq: blk slot %u: request %u not sent (%d)",
					irq_st.slot, irq_st.answered + 1, rc);
		} while (!rc && irq_st.resend);
		irq_st.in_done = false;
		return;
	}
	/* sector 0's first bytes: the device wrote our buffer (DMA) */
	pr_info("hostio selftest: irq: blk slot %u irq %ld: %u requests answered, %u with an "
		"error, data %02x%02x%02x%02x; taken at a guest exit %u, in the scheduler's "
		"loop %u", irq_st.slot, (long)irq_st.irq, irq_st.answered, irq_st.bad, d[0], d[1],
		d[2], d[3], irq_st.at_exit, irq_st.in_loop);
}

void hostio_selftest_irq(const struct host_info *hi)
{
	const char *why = NULL;
	int rc;

	for (unsigned int slot = HOST_PCI_DEV_MIN; slot <= HOST_PCI_DEV_MAX && !irq_st.disk;
	     slot++) {
		irq_st.disk = hostblk_by_slot(slot);
		irq_st.slot = slot;
	}
	if (!irq_st.disk) {
		pr_info("hostio selftest: irq: no host disk");
		return;
	}
	irq_st.irq = hostblk_irq(irq_st.disk);
	if (!host_io_intx_routed(hi))
		why = "the bridge's INTx do not go to the host's interrupt controller";
	else if (irq_st.irq < 0)
		why = "its INTx is not routed";
	irq_st.until = time_now() + ms_to_ticks(IRQ_WINDOW_MS);
	if (!why && (rc = irq_send()))
		why = rc == -HYP_EIO ? "the disk is out of service" : "the request is refused";
	if (why)
		pr_info("hostio selftest: irq: blk slot %u: %s", irq_st.slot, why);
	else
		pr_info("hostio selftest: irq: blk slot %u irq %ld: request sent", irq_st.slot,
			(long)irq_st.irq);
}
