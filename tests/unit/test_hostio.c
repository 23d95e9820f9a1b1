/* SPDX-License-Identifier: MIT */
/* hyp/drivers/virtio_pci.c, hostblk.c and hostnet.c against the virtio-pci
 * device tests/unit/fake_vpci.c plays. The device can be made to misbehave: a used id out of range or not a chain it holds, a
 * used index running ahead, a used length too big, a configuration
 * generation that never settles, a notify offset outside its structure. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <hart.h>
#include <hostblk.h>
#include <hostnet.h>
#include <log.h>
#include <pci_host.h>
#include <virtio_pci.h>
#include "fake_vpci.h"
#include "test.h"

#define func funcs[0]
_Static_assert(HOSTBLK_MAX_DEVS <= FAKE_MAX_FUNCS && HOSTNET_MAX_DEVS <= FAKE_MAX_FUNCS,
	       "fake_replicate() fills every pool");
static char last_log[256];

void pr_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_log, sizeof(last_log), fmt, ap);
	va_end(ap);
}

/* fake_device(), and no message left from an earlier case */
static void new_device(uint64_t features, unsigned int type)
{
	fake_device(features, type);
	last_log[0] = '\0';
}

#define V1		(1ull << VIRTIO_F_VERSION_1)

/* ---- the transport, on one queue of its own ---- */

static VPCI_RING(VPCI_QUEUE_MAX) ring;
static struct vpci_dev vd;
static struct vpci_queue vq;

static void transport_up(uint16_t qmax)
{
	new_device(V1, 2);
	fd.q[0].max = qmax;
	fake_reset_queues();
	EXPECT_EQ(vpci_init(&vd, &func, "t"), 0);
	EXPECT_EQ(vpci_negotiate(&vd, 0), 0);
	EXPECT_EQ(VPCI_QUEUE_SETUP(&vd, &vq, 0, &ring), 0);
	EXPECT_EQ(vpci_start(&vd), 0);
}

/* A chain of one readable buffer and @nw writable ones of 100 bytes. */
static uint16_t add_chain(unsigned int nw)
{
	struct vpci_buf b[4] = { { 0x1000, 16, false } };
	uint16_t head = 0xffff;

	for (unsigned int i = 1; i <= nw; i++)
		b[i] = (struct vpci_buf){ 0x2000 * i, 100, true };
	EXPECT_EQ(vpci_queue_add(&vq, b, 1 + nw, &head), 0);
	vpci_queue_kick(&vd, &vq);
	return head;
}

static bool failed(void)
{
	return !vd.up && fd.last_status_write == VIRTIO_STATUS_FAILED && fd.resets >= 2;
}

TEST(vpci_used_entry_returns_the_chain)
{
	uint16_t h, head;
	uint32_t len;

	transport_up(256);
	EXPECT_EQ(vq.r.num, VPCI_QUEUE_MAX);
	avail_of(0)->idx = 1;	/* the device wrote the index the driver is about to */
	h = add_chain(2);
	EXPECT_EQ(fd.q[0].notifies, 1);	/* published and notified all the same */
	EXPECT_TRUE(fake_take(0, &head) && head == h);
	EXPECT_EQ(desc_of(0)[h].flags, VIRTQ_DESC_F_NEXT);
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), 0);	/* nothing yet */
	fake_put_used(0, h, 150);
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), 1);
	EXPECT_EQ(head, h);
	EXPECT_EQ(len, 150);
	EXPECT_EQ(vq.nr_free, vq.r.num);
	EXPECT_EQ(vq.in_flight, 0);
	EXPECT_TRUE(vd.up);
}

TEST(vpci_used_id_out_of_range_fails_the_device)
{
	uint16_t head;
	uint32_t len;

	transport_up(256);
	add_chain(1);
	fake_put_used(0, vq.r.num, 1);
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), -HYP_EIO);
	EXPECT_TRUE(failed());
	EXPECT_TRUE(strstr(last_log, "used id out of range") != NULL);
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), -HYP_EIO);	/* stays out */
}

TEST(vpci_used_id_inside_a_chain_fails_the_device)
{
	uint16_t h, head;
	uint32_t len;

	transport_up(256);
	h = add_chain(2);
	fake_put_used(0, desc_of(0)[h].next, 1);	/* the chain's second descriptor, not its head */
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), -HYP_EIO);
	EXPECT_TRUE(failed());
	EXPECT_TRUE(strstr(last_log, "not a chain the device holds") != NULL);
}

TEST(vpci_used_id_returned_twice_fails_the_device)
{
	uint16_t a, head;
	uint32_t len;

	transport_up(256);
	a = add_chain(1);
	add_chain(1);
	fake_put_used(0, a, 1);
	fake_put_used(0, a, 1);	/* again, while the other chain is still out */
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), 1);
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), -HYP_EIO);
	EXPECT_TRUE(failed());
}

TEST(vpci_used_idx_running_ahead_fails_the_device)
{
	uint16_t h, head;
	uint32_t len;

	transport_up(256);
	h = add_chain(1);
	fake_put_used(0, h, 1);
	used_of(0)->idx = 2;	/* two entries, one chain out */
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), -HYP_EIO);
	EXPECT_TRUE(failed());
	EXPECT_TRUE(strstr(last_log, "used index ran ahead") != NULL);
	EXPECT_EQ(vq.in_flight, 1);	/* nothing taken from it */
}

TEST(vpci_used_len_is_clamped_to_the_writable_bytes)
{
	uint16_t h, head;
	uint32_t len;

	transport_up(256);
	h = add_chain(2);		/* 200 writable bytes */
	fake_put_used(0, h, 5000);
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), 1);
	EXPECT_EQ(len, 200);
	EXPECT_TRUE(vd.up);
	h = add_chain(0);		/* nothing writable */
	fake_put_used(0, h, 1);
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), 1);
	EXPECT_EQ(len, 0);
}

TEST(vpci_queue_full_is_busy_and_frees_on_use)
{
	struct vpci_buf b[3] = { { 0x1000, 16, false }, { 0x2000, 8, true }, { 0x3000, 1, true } };
	uint16_t heads[VPCI_QUEUE_MAX], head;
	uint32_t len;
	unsigned int n = 0;

	transport_up(8);
	EXPECT_EQ(vq.r.num, 8);
	while (vpci_queue_add(&vq, b, 3, &heads[n]) == 0)
		n++;
	EXPECT_EQ(n, 2);		/* 6 of 8 descriptors */
	EXPECT_EQ(vpci_queue_add(&vq, b, 3, &head), -HYP_EBUSY);
	EXPECT_EQ(vpci_queue_add(&vq, b, 2, &head), 0);
	vpci_queue_kick(&vd, &vq);
	fake_put_used(0, heads[0], 9);
	EXPECT_EQ(vpci_queue_used(&vd, &vq, &head, &len), 1);
	EXPECT_EQ(vq.nr_free, 3);
	EXPECT_EQ(vpci_queue_add(&vq, b, 3, &head), 0);
	EXPECT_EQ(head, heads[0]);	/* its descriptors came back */
}

TEST(vpci_queue_size_is_a_power_of_two_within_every_limit)
{
	transport_up(100);
	EXPECT_EQ(vq.r.num, 64);
}

TEST(vpci_notify_offset_outside_its_structure_is_refused)
{
	new_device(V1, 2);
	fd.q[0].noff = 0x1000 / 4;	/* offset * 4 == the structure's length */
	EXPECT_EQ(vpci_init(&vd, &func, "t"), 0);
	EXPECT_EQ(vpci_negotiate(&vd, 0), 0);
	EXPECT_EQ(VPCI_QUEUE_SETUP(&vd, &vq, 0, &ring), -HYP_ENOTSUP);
	EXPECT_TRUE(failed());
}

TEST(vpci_needs_version_1_and_never_accepts_access_platform)
{
	new_device(1ull << 5, 2);
	EXPECT_EQ(vpci_init(&vd, &func, "t"), 0);
	EXPECT_EQ(vpci_negotiate(&vd, 1ull << 5), -HYP_ENOTSUP);
	EXPECT_TRUE(failed());
	new_device(V1 | 1ull << VIRTIO_F_ACCESS_PLATFORM | 1ull << 5 | 1ull << 6, 2);
	EXPECT_EQ(vpci_init(&vd, &func, "t"), 0);
	EXPECT_EQ(vpci_negotiate(&vd, 1ull << 5 | 1ull << VIRTIO_F_ACCESS_PLATFORM), 0);
	EXPECT_EQ(fd.driver_features, V1 | 1ull << 5);
	EXPECT_TRUE(vpci_has(&vd, 5) && !vpci_has(&vd, 6));
	new_device(V1, 2);
	fd.refuse_features = true;
	EXPECT_EQ(vpci_init(&vd, &func, "t"), 0);
	EXPECT_EQ(vpci_negotiate(&vd, 0), -HYP_ENOTSUP);
	EXPECT_TRUE(failed());
	EXPECT_TRUE(strstr(last_log, "features refused") != NULL);
}

TEST(vpci_missing_or_short_structure_is_not_used)
{
	new_device(V1, 2);
	func.cap[VPCI_COMMON].length = 0x37;	/* the queue addresses need 0x38 */
	EXPECT_EQ(vpci_init(&vd, &func, "t"), -HYP_ENOTSUP);
	new_device(V1, 2);
	func.cap[VPCI_ISR].found = false;
	EXPECT_EQ(vpci_init(&vd, &func, "t"), -HYP_ENOTSUP);
}

TEST(vpci_config_read_retries_until_the_generation_settles)
{
	uint64_t v = 0;
	uint8_t mac[6];

	transport_up(256);
	memcpy(fd.cfg, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	fd.unsettled = 3;
	EXPECT_EQ(vpci_cfg_read(&vd, 0, 8, &v), 0);
	EXPECT_EQ(v, 0x8877665544332211ull);
	EXPECT_EQ(fd.unsettled, 0);
	EXPECT_EQ(vpci_cfg_read(&vd, DEVCFG_LEN, 4, &v), -HYP_EINVAL);	/* past the end */
	EXPECT_EQ(vpci_cfg_read(&vd, DEVCFG_LEN - 4, 8, &v), -HYP_EINVAL);
	EXPECT_EQ(vpci_cfg_bytes(&vd, DEVCFG_LEN - 4, mac, 6), -HYP_EINVAL);
	EXPECT_EQ(vpci_cfg_bytes(&vd, DEVCFG_LEN - 6, mac, 6), 0);
	EXPECT_EQ(vpci_cfg_read(&vd, 2, 4, &v), -HYP_EINVAL);		/* misaligned */
	EXPECT_TRUE(vd.up);
	fd.unsettled = 1000;
	EXPECT_EQ(vpci_cfg_read(&vd, 0, 4, &v), -HYP_EIO);
	EXPECT_TRUE(failed());
}

TEST(vpci_config_bytes_read_in_one_generation)
{
	uint8_t mac[6];

	transport_up(256);
	memcpy(fd.cfg, "\x52\x54\x00\x12\x34\x56", 6);
	fd.unsettled = 2;
	EXPECT_EQ(vpci_cfg_bytes(&vd, 0, mac, 6), 0);
	EXPECT_EQ(memcmp(mac, fd.cfg, 6), 0);
	EXPECT_EQ(fd.unsettled, 0);
	fd.unsettled = 1000;
	EXPECT_EQ(vpci_cfg_bytes(&vd, 0, mac, 6), -HYP_EIO);
	EXPECT_TRUE(failed());
}

TEST(vpci_needs_reset_on_a_config_change_fails_the_device)
{
	transport_up(256);
	fd.isr = 1;
	EXPECT_EQ(vpci_isr(&vd), 1);
	EXPECT_TRUE(vd.up);
	fd.isr = 2;
	fd.status |= VIRTIO_STATUS_NEEDS_RESET;
	EXPECT_EQ(vpci_isr(&vd), 2);
	EXPECT_TRUE(failed());
}

/* ---- hostblk ---- */

#define BLK_F_SEG_MAX	(1ull << 2)
#define BLK_F_RO	(1ull << 5)
#define BLK_F_FLUSH	(1ull << 9)
#define DISK_SECTORS	1000

struct hart harts[HART_MAX];		/* hostblk's drain() asks which hart it runs on */
struct hart *test_this_hart = &harts[0];

static unsigned int nr_done;
static struct hostblk_req *done_order[8];
static struct hostblk *resubmit_to;
static struct hostblk_req resubmit;

static void blk_done(struct hostblk_req *r)
{
	if (nr_done < 8)
		done_order[nr_done] = r;
	nr_done++;
	if (resubmit_to) {	/* done() runs without the lock: it may submit */
		struct hostblk *b = resubmit_to;

		resubmit_to = NULL;
		EXPECT_EQ(hostblk_submit(b, &resubmit), 0);
	}
}

static struct hostblk *disk(uint64_t extra, uint32_t seg_max)
{
	uint64_t cap = DISK_SECTORS;

	new_device(V1 | BLK_F_FLUSH | BLK_F_SEG_MAX | extra, 2);
	memcpy(&fd.cfg[0], &cap, 8);
	memcpy(&fd.cfg[12], &seg_max, 4);
	nr_done = 0;
	resubmit_to = NULL;
	fake_replicate(HOSTBLK_MAX_DEVS);
	EXPECT_EQ(hostblk_init(), HOSTBLK_MAX_DEVS);
	return hostblk_by_slot(SLOT);
}

/* the segments of the last rw_req() (hostblk_submit() reads them only while
 * it runs) */
static struct blk_seg rw_seg[HOSTBLK_MAX_SEGS + 1];

static struct hostblk_req rw_req(uint32_t type, uint64_t sector, unsigned int segs)
{
	struct hostblk_req r = { .type = type, .sector = sector, .nr_seg = (uint16_t)segs,
				 .seg = rw_seg, .done = blk_done };

	for (unsigned int i = 0; i < segs; i++)
		rw_seg[i] = (struct blk_seg){ 0x100000 + 0x1000 * i, 512 };
	return r;
}

/* The device completes chain @head with @status in its last descriptor. */
static void blk_complete(uint16_t head, uint8_t status)
{
	struct virtq_desc *d = desc_of(0);
	uint16_t id = head;

	while (d[id].flags & VIRTQ_DESC_F_NEXT)
		id = d[id].next;
	*(uint8_t *)(uintptr_t)d[id].addr = status;
	fake_put_used(0, head, 1);
}

TEST(hostblk_probe_reads_the_configuration)
{
	struct hostblk *b = disk(0, 10);

	EXPECT_TRUE(b != NULL);
	EXPECT_TRUE(hostblk_by_slot(SLOT - 1) == NULL);
	EXPECT_EQ(hostblk_sectors(b), DISK_SECTORS);
	EXPECT_EQ(hostblk_blk_size(b), 512);
	EXPECT_EQ(hostblk_seg_max(b), 10);
	EXPECT_FALSE(hostblk_read_only(b));
	EXPECT_TRUE(fd.status & VIRTIO_STATUS_DRIVER_OK);
	EXPECT_EQ(hostblk_irq(b), 35);
	b = disk(0, 1000);		/* cut to what a request carries */
	EXPECT_EQ(hostblk_seg_max(b), HOSTBLK_MAX_SEGS);
	new_device(V1 | BLK_F_SEG_MAX, 2);	/* seg_max 0 */
	EXPECT_EQ(hostblk_init(), 0);
	EXPECT_TRUE(hostblk_by_slot(SLOT) == NULL);
	new_device(V1 | 1ull << 6, 2);	/* BLK_SIZE 1000: not a power of two */
	fd.cfg[20] = 0xe8;
	fd.cfg[21] = 0x03;
	EXPECT_EQ(hostblk_init(), 0);
}

TEST(hostblk_request_chain_is_header_data_status)
{
	struct hostblk *b = disk(0, 8);
	struct hostblk_req r = rw_req(VIRTIO_BLK_T_IN, 7, 2);
	struct virtq_desc *d = desc_of(0);
	const uint32_t *hdr;
	uint16_t head, id;

	EXPECT_EQ(hostblk_submit(b, &r), 0);
	EXPECT_TRUE(fake_take(0, &head));
	hdr = (const uint32_t *)(uintptr_t)d[head].addr;
	EXPECT_EQ(d[head].len, 16);
	EXPECT_EQ(d[head].flags, VIRTQ_DESC_F_NEXT);
	EXPECT_EQ(hdr[0], VIRTIO_BLK_T_IN);
	EXPECT_EQ(*(const uint64_t *)(hdr + 2), 7);
	id = d[head].next;
	EXPECT_EQ(d[id].addr, 0x100000);
	EXPECT_EQ(d[id].flags, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE);
	id = d[d[id].next].next;
	EXPECT_EQ(d[id].len, 1);
	EXPECT_EQ(d[id].flags, VIRTQ_DESC_F_WRITE);
	EXPECT_EQ(*(uint8_t *)(uintptr_t)d[id].addr, 0xff);	/* no device writes that */
	EXPECT_EQ(fd.q[0].notifies, 1);
}

TEST(hostblk_refuses_bad_requests)
{
	struct hostblk *b = disk(0, 4);
	struct hostblk_req r;

	r = rw_req(VIRTIO_BLK_T_IN, 0, 5);		/* above seg_max */
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	r = rw_req(VIRTIO_BLK_T_IN, 0, 0);
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	r = rw_req(VIRTIO_BLK_T_OUT, DISK_SECTORS - 1, 2);	/* one sector past the end */
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	r = rw_req(VIRTIO_BLK_T_OUT, UINT64_MAX, 1);		/* sector + length wraps */
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	r = rw_req(VIRTIO_BLK_T_IN, 0, 1);
	rw_seg[0].len = 100;				/* not whole sectors */
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	rw_seg[0].len = 0;
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	r = rw_req(VIRTIO_BLK_T_FLUSH, 0, 1);		/* a flush carries no data */
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	r = rw_req(VIRTIO_BLK_T_GET_ID, 0, 2);
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	r = rw_req(11, 0, 1);				/* DISCARD: not offered */
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	EXPECT_EQ(avail_of(0)->idx, 0);			/* nothing reached the device */
	r = rw_req(VIRTIO_BLK_T_OUT, DISK_SECTORS - 2, 2);	/* the last two sectors */
	EXPECT_EQ(hostblk_submit(b, &r), 0);
	b = disk(BLK_F_RO, 4);
	EXPECT_TRUE(hostblk_read_only(b));
	r = rw_req(VIRTIO_BLK_T_OUT, 0, 1);
	EXPECT_EQ(hostblk_submit(b, &r), -HYP_EINVAL);
	r = rw_req(VIRTIO_BLK_T_IN, 0, 1);
	EXPECT_EQ(hostblk_submit(b, &r), 0);
	new_device(V1, 2);					/* no FLUSH offered */
	EXPECT_EQ(hostblk_init(), 1);
	r = rw_req(VIRTIO_BLK_T_FLUSH, 0, 0);
	EXPECT_EQ(hostblk_submit(hostblk_by_slot(SLOT), &r), -HYP_EINVAL);
}

TEST(hostblk_completion_status_is_bounded)
{
	struct hostblk *b = disk(0, 4);
	struct hostblk_req r[4];
	uint16_t head[4];
	static const uint8_t written[4] = { VIRTIO_BLK_S_OK, VIRTIO_BLK_S_UNSUPP, 0x7f, 0xff };

	for (unsigned int i = 0; i < 4; i++) {
		r[i] = rw_req(VIRTIO_BLK_T_IN, i, 1);
		r[i].status = 0x55;
		EXPECT_EQ(hostblk_submit(b, &r[i]), 0);
		EXPECT_TRUE(fake_take(0, &head[i]));
	}
	for (unsigned int i = 0; i < 4; i++)
		blk_complete(head[i], written[i]);	/* 0xff: as if never written */
	hostblk_poll(b);
	EXPECT_EQ(nr_done, 4);
	EXPECT_EQ(r[0].status, VIRTIO_BLK_S_OK);
	EXPECT_EQ(r[1].status, VIRTIO_BLK_S_UNSUPP);
	EXPECT_EQ(r[2].status, VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(r[3].status, VIRTIO_BLK_S_IOERR);
}

TEST(hostblk_full_ring_is_busy_until_a_completion)
{
	struct hostblk *b = disk(0, 1000);
	struct hostblk_req r[3];
	uint16_t head;

	/* HOSTBLK_MAX_SEGS + 2 descriptors: the whole 256-entry ring */
	r[0] = rw_req(VIRTIO_BLK_T_OUT, 0, HOSTBLK_MAX_SEGS);
	EXPECT_EQ(hostblk_submit(b, &r[0]), 0);
	r[1] = rw_req(VIRTIO_BLK_T_OUT, 0, HOSTBLK_MAX_SEGS + 1);	/* one more: refused */
	EXPECT_EQ(hostblk_submit(b, &r[1]), -HYP_EINVAL);
	r[2] = rw_req(VIRTIO_BLK_T_OUT, 0, 1);
	EXPECT_EQ(hostblk_submit(b, &r[2]), -HYP_EBUSY);
	EXPECT_EQ(hostblk_sectors(b), DISK_SECTORS);	/* no slot written past the ring's */
	EXPECT_EQ(hostblk_seg_max(b), HOSTBLK_MAX_SEGS);
	EXPECT_TRUE(fake_take(0, &head));
	blk_complete(head, VIRTIO_BLK_S_OK);
	resubmit_to = b;		/* done() submits r[2] */
	resubmit = r[2];
	hostblk_poll(b);
	EXPECT_EQ(nr_done, 1);
	EXPECT_TRUE(done_order[0] == &r[0]);
	EXPECT_TRUE(resubmit_to == NULL);
}

TEST(hostblk_broken_device_fails_every_request_it_held)
{
	struct hostblk *b = disk(0, 4);
	struct hostblk_req r[3];
	uint16_t head;

	for (unsigned int i = 0; i < 3; i++) {
		r[i] = rw_req(VIRTIO_BLK_T_IN, i, 1);
		EXPECT_EQ(hostblk_submit(b, &r[i]), 0);
	}
	EXPECT_TRUE(fake_take(0, &head));
	fake_put_used(0, head + 1, 1);	/* the header's successor: not a head */
	hostblk_poll(b);
	EXPECT_EQ(nr_done, 3);
	for (unsigned int i = 0; i < 3; i++)
		EXPECT_EQ(r[i].status, VIRTIO_BLK_S_IOERR);
	EXPECT_EQ(fd.last_status_write, VIRTIO_STATUS_FAILED);
	r[0] = rw_req(VIRTIO_BLK_T_IN, 0, 1);
	EXPECT_EQ(hostblk_submit(b, &r[0]), -HYP_EIO);
	hostblk_poll(b);
	EXPECT_EQ(nr_done, 3);
}

/* hart 0's interrupt while another hart submits (its kick, the lock held):
 * the poll acknowledges the interrupt and returns at once, and the
 * submitter completes the request when it lets the lock go. Before, the
 * poll waited for the lock: a hart whose holder was preempted spun for it
 * (docs/performance.md, "A disk flood beside a victim"); here it would
 * never return. */
static struct hostblk *poll_in_kick;
static uint16_t poll_in_kick_head;
static unsigned int done_in_kick;

static void poll_during_kick(unsigned int qi)
{
	EXPECT_EQ(qi, 0);
	if (!poll_in_kick)
		return;
	blk_complete(poll_in_kick_head, VIRTIO_BLK_S_OK);
	fd.isr = 1;
	hostblk_poll(poll_in_kick);
	EXPECT_EQ(fd.isr, 0);		/* INTx lowered at once */
	done_in_kick = nr_done;
	poll_in_kick = NULL;
}

TEST(hostblk_poll_never_waits_for_a_submitter)
{
	struct hostblk *b = disk(0, 4);
	struct hostblk_req r[2];

	unit_deadline(10);			/* a poll that waits for the lock never returns */
	r[0] = rw_req(VIRTIO_BLK_T_IN, 0, 1);
	EXPECT_EQ(hostblk_submit(b, &r[0]), 0);
	EXPECT_TRUE(fake_take(0, &poll_in_kick_head));
	poll_in_kick = b;
	fd.on_notify = poll_during_kick;
	r[1] = rw_req(VIRTIO_BLK_T_IN, 1, 1);
	EXPECT_EQ(hostblk_submit(b, &r[1]), 0);
	fd.on_notify = NULL;
	unit_deadline(0);
	EXPECT_TRUE(poll_in_kick == NULL);
	EXPECT_EQ(done_in_kick, 0);	/* not during the kick: its lock was held */
	EXPECT_EQ(nr_done, 1);		/* by the submitter, as it let go */
	EXPECT_TRUE(done_order[0] == &r[0]);
	EXPECT_EQ(r[0].status, VIRTIO_BLK_S_OK);
	hostblk_poll(b);
	EXPECT_EQ(nr_done, 1);
}

/* A device that answers at once (QEMU's main loop can, between two of our
 * instructions) and a done() that submits the next request, as the INTx
 * selftest's does: each answer is taken by the drain() under way, never one
 * level deeper (before, 300 answers were 300 nested drains: on a 16 KiB
 * hart stack, an overflow). */
static struct hostblk *chain_disk;
static struct hostblk_req chain_req;
static unsigned int chain_left, chain_depth, chain_max_depth, chain_done_count;

static void answer_now(unsigned int qi)
{
	uint16_t head;

	while (fake_take(qi, &head))
		blk_complete(head, VIRTIO_BLK_S_OK);
}

static void chain_done(struct hostblk_req *r)
{
	(void)r;
	chain_depth++;
	chain_done_count++;
	if (chain_depth > chain_max_depth)
		chain_max_depth = chain_depth;
	if (chain_left) {
		chain_left--;
		EXPECT_EQ(hostblk_submit(chain_disk, &chain_req), 0);
	}
	chain_depth--;
}

TEST(hostblk_done_that_submits_again_never_nests)
{
	struct hostblk *b = disk(0, 4);

	chain_disk = b;
	chain_left = 300;		/* more than one drain's bound (BLK_QUEUE) */
	chain_req = rw_req(VIRTIO_BLK_T_IN, 0, 1);
	chain_req.done = chain_done;
	fd.on_notify = answer_now;
	EXPECT_EQ(hostblk_submit(b, &chain_req), 0);
	for (unsigned int i = 0; i < 10 && chain_left; i++)
		hostblk_poll(b);		/* the interrupts: the rest of a bounded drain */
	hostblk_poll(b);
	fd.on_notify = NULL;
	EXPECT_EQ(chain_left, 0);
	EXPECT_EQ(chain_done_count, 301);
	EXPECT_EQ(chain_max_depth, 1);
}

TEST(hostblk_config_change_rereads_the_capacity)
{
	struct hostblk *b = disk(0, 4);
	uint64_t cap = 5000;

	memcpy(&fd.cfg[0], &cap, 8);
	hostblk_poll(b);
	EXPECT_EQ(hostblk_sectors(b), DISK_SECTORS);	/* no configuration interrupt yet */
	fd.isr = 2;
	hostblk_poll(b);
	EXPECT_EQ(hostblk_sectors(b), 5000);
}

/* ---- hostnet ---- */

#define NET_F_MAC	(1ull << 5)

static uint8_t got[2048];
static uint32_t got_len;
static unsigned int got_frames;

static void net_rx(void *ctx, const void *frame, uint32_t len)
{
	EXPECT_EQ((uintptr_t)ctx, 0x1234);
	memcpy(got, frame, len <= sizeof(got) ? len : sizeof(got));
	got_len = len;
	got_frames++;
}

static struct hostnet *nic(void)
{
	struct hostnet *n;

	new_device(V1 | NET_F_MAC | 1ull << 0 /* CSUM: not taken */, 1);
	memcpy(fd.cfg, "\x52\x54\x00\x12\x34\x56", 6);
	fake_replicate(HOSTNET_MAX_DEVS);
	EXPECT_EQ(hostnet_init(), HOSTNET_MAX_DEVS);
	n = hostnet_by_slot(SLOT);
	EXPECT_TRUE(n != NULL);
	EXPECT_EQ(fd.driver_features, V1 | NET_F_MAC);
	got_len = 0;
	got_frames = 0;
	hostnet_set_rx(n, net_rx, (void *)0x1234);
	return n;
}

/* The device fills receive chain @head: 12-byte header, then @len bytes of 0xab,
 * and reports @used_len. */
static void net_receive(uint16_t head, uint32_t len, uint32_t used_len)
{
	uint8_t *buf = (uint8_t *)(uintptr_t)desc_of(0)[head].addr;

	memset(buf, 0, 12);
	memset(buf + 12, 0xab, len);
	fake_put_used(0, head, used_len);
}

TEST(hostnet_probe_offers_its_rx_buffers)
{
	struct hostnet *n = nic();
	uint8_t mac[6];
	uint16_t head;
	unsigned int k = 0;

	EXPECT_EQ(hostnet_irq(n), -1);	/* no INTx pin */
	hostnet_mac(n, mac);
	EXPECT_EQ(memcmp(mac, "\x52\x54\x00\x12\x34\x56", 6), 0);
	while (fake_take(0, &head)) {
		EXPECT_EQ(desc_of(0)[head].len, 1526);
		EXPECT_EQ(desc_of(0)[head].flags, VIRTQ_DESC_F_WRITE);
		k++;
	}
	EXPECT_EQ(k, HOSTNET_RX_BUFS);
	new_device(V1, 1);			/* no MAC */
	EXPECT_EQ(hostnet_init(), 0);
}

TEST(hostnet_rx_length_is_bounded)
{
	struct hostnet *n = nic();
	uint16_t a, b, c;

	EXPECT_TRUE(fake_take(0, &a) && fake_take(0, &b) && fake_take(0, &c));
	net_receive(a, 60, 5000);		/* says more than the buffer holds */
	hostnet_poll(n);
	EXPECT_EQ(got_frames, 1);
	EXPECT_EQ(got_len, HOSTNET_FRAME_MAX);
	net_receive(b, 10, 12 + 10);		/* shorter than an Ethernet header */
	net_receive(c, 60, 12 + 60);
	hostnet_poll(n);
	EXPECT_EQ(got_frames, 2);
	EXPECT_EQ(got_len, 60);
	EXPECT_EQ(got[0], 0xab);
	EXPECT_TRUE(strstr(last_log, "dropped") != NULL);
	/* every buffer went back to the device: the 29 never taken and these 3 */
	EXPECT_EQ((uint16_t)(avail_of(0)->idx - fd.q[0].next_avail), HOSTNET_RX_BUFS);
}

TEST(hostnet_tx_prepends_a_zero_header_and_bounds_the_frame)
{
	struct hostnet *n = nic();
	uint8_t frame[HOSTNET_FRAME_MAX + 1];
	const uint8_t *buf;
	uint16_t head;

	memset(frame, 0xcd, sizeof(frame));
	EXPECT_EQ(hostnet_tx(n, frame, HOSTNET_FRAME_MAX + 1), -HYP_EINVAL);
	EXPECT_EQ(hostnet_tx(n, frame, 13), -HYP_EINVAL);
	EXPECT_EQ(hostnet_tx(n, frame, 60), 0);
	EXPECT_TRUE(fake_take(1, &head));
	EXPECT_EQ(desc_of(1)[head].len, 72);
	EXPECT_EQ(desc_of(1)[head].flags, 0);
	buf = (const uint8_t *)(uintptr_t)desc_of(1)[head].addr;
	for (unsigned int i = 0; i < 12; i++)
		EXPECT_EQ(buf[i], 0);
	EXPECT_EQ(buf[12], 0xcd);
	EXPECT_EQ(fd.q[1].notifies, 1);
	for (unsigned int i = 1; i < HOSTNET_TX_BUFS; i++)
		EXPECT_EQ(hostnet_tx(n, frame, 60), 0);
	EXPECT_EQ(hostnet_tx(n, frame, 60), -HYP_EBUSY);
	/* the device scribbles over the header it was only to read: the buffer
	 * it comes back in still starts with a zero header when used again */
	memset((void *)(uintptr_t)desc_of(1)[head].addr, 0xee, 12);
	fake_put_used(1, head, 0);
	EXPECT_EQ(hostnet_tx(n, frame, 60), 0);	/* reclaimed on the way */
	for (unsigned int i = 0; i < 12; i++)
		EXPECT_EQ(buf[i], 0);
}

TEST(hostnet_broken_rx_ring_takes_the_nic_out)
{
	struct hostnet *n = nic();
	uint8_t frame[60] = { 0 };

	fake_put_used(0, VPCI_QUEUE_MAX + 7, 100);
	hostnet_poll(n);
	EXPECT_EQ(got_frames, 0);
	EXPECT_EQ(fd.last_status_write, VIRTIO_STATUS_FAILED);
	EXPECT_EQ(hostnet_tx(n, frame, sizeof(frame)), -HYP_EIO);
}
