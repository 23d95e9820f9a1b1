/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the host disk driver and its transport,
 * hyp/drivers/hostblk.c over virtio_pci.c (docs/fuzzing.md, docs/architecture.md
 * "Host virtio drivers"), against a device that may break every rule: the
 * device of tests/unit/fake_vpci.c, driven by the input. One input is a
 * 20-byte header and a script of 8-byte operations:
 *
 *   0  u64 capacity (sectors)       14 u8  features: 1 FLUSH, 2 RO, 4 SEG_MAX,
 *   8  u32 seg_max                         8 BLK_SIZE
 *   12 u16 the device's queue size  15 u8  number of operations (<= 128)
 *   16 u32 blk_size
 *   operation: kind u8, a u8, b u16, c u32
 *
 * Operations: 0 submit (type (a & 7) % 5 of IN, OUT, FLUSH, GET_ID,
 * DISCARD; a >> 3 segments of b & 0x7fff bytes each; sector c; with b bit
 * 15, its done() submits it again); 1 the device completes the
 * next chain it was given with status a and used length c (checking the
 * chain); 2 the device writes the used entry (id b, len c) and adds a % 4 to
 * used.idx; 3 poll; 4 ISR bits a & 3, with NEEDS_RESET in the status if
 * a & 4; 5 the capacity becomes c, with a configuration interrupt and a
 * generation that changes at each of the next a reads.
 *
 * Checked on every input, besides ASan/UBSan:
 *  - a submit's result is the one a model written here from hostblk.h
 *    predicts: -HYP_EIO once the device is out of service, -HYP_EINVAL for
 *    exactly the bad requests, -HYP_EBUSY exactly when the descriptors the
 *    accepted requests hold leave too few, else 0;
 *  - each accepted request completes at most once, with status OK, IOERR or
 *    UNSUPP, never one that was not accepted; done() runs without the lock
 *    (it submits again once in a while);
 *  - a chain the device takes: every index below the queue size, and (until
 *    the device writes used entries of its own) a header of 16 readable
 *    bytes and exactly the layout of a request in flight: its type and
 *    sector, its segments in the right direction, a 1-byte writable status;
 *  - once the device is out of service (status FAILED after a reset), one
 *    poll completes every request it held, with IOERR, and nothing more
 *    reaches the rings. */
#include <stdarg.h>
#include <string.h>
#include <errno.h>
#include <hart.h>
#include <hostblk.h>
#include <log.h>
#include <virtio_pci.h>
#include "fake_vpci.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR		20
#define OP_SIZE		8
#define MAX_OPS		128
#define NR_REQ		8
#define V1		(1ull << VIRTIO_F_VERSION_1)

struct hart harts[HART_MAX];		/* hostblk's drain() asks which hart it runs on */
struct hart *test_this_hart = &harts[0];

uint64_t time_now(void)
{
	return 0;
}

void pr_info(const char *fmt, ...)
{
	va_list ap;

	if (!fuzz_verbose())
		return;
	va_start(ap, fmt);
	fputs("carapace: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static const uint32_t types[5] = { VIRTIO_BLK_T_IN, VIRTIO_BLK_T_OUT, VIRTIO_BLK_T_FLUSH,
				   VIRTIO_BLK_T_GET_ID, 11 /* DISCARD: never offered */ };

static struct {
	struct hostblk_req r;
	struct blk_seg seg[32];	/* a >> 3 of them */
	bool in_flight;
	unsigned int descs;	/* what it holds in the ring */
} req[NR_REQ];

static struct hostblk *blk;
static uint64_t sectors;
static uint32_t seg_max;
static uint16_t qnum;
static bool ro, flush, resubmit_once;
static bool device_lied;	/* it wrote used entries of its own (operation 2) */
static unsigned int held;	/* descriptors the accepted requests hold */

static bool device_failed(void)
{
	return fd.last_status_write == VIRTIO_STATUS_FAILED;
}

static bool model_valid(const struct hostblk_req *r)
{
	unsigned __int128 total = 0;

	switch (r->type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT:
		if (!r->nr_seg || r->nr_seg > seg_max || (r->type == VIRTIO_BLK_T_OUT && ro))
			return false;
		for (unsigned int i = 0; i < r->nr_seg; i++) {
			if (!r->seg[i].len)
				return false;
			total += r->seg[i].len;
		}
		return total % 512 == 0 &&
		       (unsigned __int128)r->sector + total / 512 <= sectors;
	case VIRTIO_BLK_T_FLUSH:
		return !r->nr_seg && flush;
	case VIRTIO_BLK_T_GET_ID:
		return r->nr_seg == 1 && r->seg[0].len;
	default:
		return false;
	}
}

static unsigned int nr_accepted, nr_done, nr_refused[4];	/* EINVAL, EBUSY, EIO, other */

static void submit(unsigned int k);

static void done(struct hostblk_req *r)
{
	unsigned int k = (unsigned int)(uintptr_t)r->owner;

	CHECK(k < NR_REQ && r == &req[k].r);
	CHECK(req[k].in_flight);
	CHECK(r->status == VIRTIO_BLK_S_OK || r->status == VIRTIO_BLK_S_IOERR ||
	      r->status == VIRTIO_BLK_S_UNSUPP);
	CHECK(!device_failed() || r->status == VIRTIO_BLK_S_IOERR);
	req[k].in_flight = false;
	held -= req[k].descs;
	nr_done++;
	if (resubmit_once) {	/* the lock is not held: a submit goes through */
		resubmit_once = false;
		submit(k);
	}
}

/* Submit request slot @k as it is (or as the model says it comes back). */
static void submit(unsigned int k)
{
	struct hostblk_req *r = &req[k].r;
	bool valid = model_valid(r);
	unsigned int need = r->nr_seg + 2u;
	int rc, want;

	if (req[k].in_flight)
		return;
	if (device_failed())
		want = -HYP_EIO;
	else if (!valid)
		want = -HYP_EINVAL;
	else if (need > (unsigned int)qnum - held)
		want = -HYP_EBUSY;
	else
		want = 0;
	r->done = done;
	r->owner = (void *)(uintptr_t)k;
	/* in flight before the call: the submit itself completes what a poll
	 * posted meanwhile (hostblk.h), which may be this very request */
	if (!want) {
		nr_accepted++;
		req[k].in_flight = true;
		req[k].descs = need;
		held += need;
	}
	rc = hostblk_submit(blk, r);
	CHECK(rc == want);
	CHECK(device_failed() ||
	      (hostblk_sectors(blk) == sectors && hostblk_seg_max(blk) == seg_max));
	nr_refused[rc == -HYP_EINVAL ? 0 : rc == -HYP_EBUSY ? 1 : rc == -HYP_EIO ? 2 : 3] += !!rc;
}

static void op_submit(uint8_t a, uint16_t b, uint32_t c)
{
	unsigned int k = 0;
	struct hostblk_req *r;

	while (k < NR_REQ && req[k].in_flight)
		k++;
	if (k == NR_REQ)
		return;
	r = &req[k].r;
	memset(r, 0, sizeof(*r));
	r->type = types[(a & 7) % 5];
	r->sector = c;
	r->nr_seg = (uint16_t)(a >> 3);
	r->seg = req[k].seg;
	for (unsigned int i = 0; i < r->nr_seg; i++)
		req[k].seg[i] = (struct blk_seg){ 0x100000000ull + 0x10000ull * i, b & 0x7fffu };
	submit(k);
}

/* Does the chain at @head carry request @r: its header (type, sector), its
 * segments in the right direction, then a 1-byte writable status? */
static bool chain_is(uint16_t head, const struct hostblk_req *r)
{
	const struct virtq_desc *d = desc_of(0);
	const struct { uint32_t type, reserved; uint64_t sector; } *h =
		(const void *)(uintptr_t)d[head].addr;
	bool data_write = r->type == VIRTIO_BLK_T_IN || r->type == VIRTIO_BLK_T_GET_ID;
	uint16_t id = head;

	if (h->type != r->type || h->sector != r->sector)
		return false;
	for (unsigned int i = 0; i < r->nr_seg; i++) {
		if (!(d[id].flags & VIRTQ_DESC_F_NEXT))
			return false;
		id = d[id].next;
		CHECK(id < qnum);
		if (d[id].addr != r->seg[i].hpa || d[id].len != r->seg[i].len ||
		    !!(d[id].flags & VIRTQ_DESC_F_WRITE) != data_write)
			return false;
	}
	if (!(d[id].flags & VIRTQ_DESC_F_NEXT))
		return false;
	id = d[id].next;
	CHECK(id < qnum);
	return d[id].len == 1 && d[id].flags == VIRTQ_DESC_F_WRITE;
}

/* A chain the device takes: a head below the queue size, and (while the
 * device has only ever returned what it took) a header and exactly the
 * layout of a request in flight. */
static void check_chain(uint16_t head)
{
	const struct virtq_desc *d = desc_of(0);
	bool found = false;

	CHECK(head < qnum);
	if (device_lied)
		return;	/* an offer it skipped may name descriptors used again since */
	CHECK(d[head].len == 16 && (d[head].flags & VIRTQ_DESC_F_NEXT) &&
	      !(d[head].flags & VIRTQ_DESC_F_WRITE));
	for (unsigned int k = 0; k < NR_REQ && !found; k++)
		found = req[k].in_flight && chain_is(head, &req[k].r);
	CHECK(found);
}

static void op_complete(uint8_t status, uint32_t len)
{
	const struct virtq_desc *d = desc_of(0);
	uint16_t head, id;

	if (device_failed() || !fake_take(0, &head))
		return;
	check_chain(head);
	for (id = head; d[id].flags & VIRTQ_DESC_F_NEXT; id = d[id].next)
		;
	*(uint8_t *)(uintptr_t)d[id].addr = status;
	fake_put_used(0, head, len);
}

/* hostblk_poll(), and a device that asked for a reset is out of service */
static void poll(void)
{
	bool must_fail = (fd.isr & 2) && (fd.status & VIRTIO_STATUS_NEEDS_RESET);

	hostblk_poll(blk);
	CHECK(!must_fail || device_failed());
}

static void op_poll(void)
{
	bool was_failed = device_failed();

	poll();
	if (device_failed()) {
		/* everything it held came back, with IOERR (checked in done()) */
		for (unsigned int k = 0; k < NR_REQ; k++)
			CHECK(!req[k].in_flight);
		CHECK(held == 0);
		if (!was_failed)
			CHECK(fd.resets >= 2);	/* the reset before FAILED */
	}
}

static void setup(const uint8_t *h)
{
	uint64_t cap;
	uint32_t bsize;
	uint8_t feat = h[14];
	bool bsize_ok;

	memcpy(&cap, h, 8);
	memcpy(&seg_max, h + 8, 4);
	memcpy(&qnum, h + 12, 2);
	memcpy(&bsize, h + 16, 4);
	fake_device(V1 | (feat & 1 ? 1ull << 9 : 0) | (feat & 2 ? 1ull << 5 : 0) |
		    (feat & 4 ? 1ull << 2 : 0) | (feat & 8 ? 1ull << 6 : 0), 2);
	fd.q[0].max = qnum;
	fake_reset_queues();
	memcpy(fd.cfg, &cap, 8);
	memcpy(fd.cfg + 12, &seg_max, 4);
	memcpy(fd.cfg + 20, &bsize, 4);
	bsize_ok = !(feat & 8) || (bsize >= 512 && bsize <= 65536 && !(bsize & (bsize - 1)));
	memset(req, 0, sizeof(req));
	held = 0;
	device_lied = false;
	nr_accepted = nr_done = 0;
	memset(nr_refused, 0, sizeof(nr_refused));
	if (hostblk_init() != 1) {
		blk = NULL;
		CHECK(!bsize_ok || qnum < 4 || (feat & 4 && !seg_max));	/* 2: too small */
		if (fuzz_verbose())
			fprintf(stderr, "fuzz_hostio: disk refused at probe\n");
		return;
	}
	blk = hostblk_by_slot(SLOT);
	CHECK(blk != NULL);
	sectors = hostblk_sectors(blk);
	CHECK(sectors == cap);
	qnum = fd.q[0].size;
	CHECK(qnum >= 3 && qnum <= VPCI_QUEUE_MAX && !(qnum & (qnum - 1)));
	seg_max = hostblk_seg_max(blk);
	CHECK(seg_max >= 1 && seg_max <= HOSTBLK_MAX_SEGS && seg_max <= qnum - 2u);
	CHECK(bsize_ok && hostblk_blk_size(blk) == (feat & 8 ? bsize : 512));
	ro = hostblk_read_only(blk);
	CHECK(ro == !!(feat & 2));
	flush = feat & 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int nr_ops;

	if (size < HDR)
		return 0;
	setup(data);
	if (!blk)
		return 0;
	nr_ops = data[15] < MAX_OPS ? data[15] : MAX_OPS;
	for (unsigned int i = 0; i < nr_ops && HDR + (i + 1) * OP_SIZE <= size; i++) {
		const uint8_t *o = data + HDR + i * OP_SIZE;
		uint8_t a = o[1];
		uint64_t old_sectors;
		uint16_t b;
		uint32_t c;

		memcpy(&b, o + 2, 2);
		memcpy(&c, o + 4, 4);
		switch (o[0] % 6) {
		case 0:
			resubmit_once = b & 0x8000;
			op_submit(a, b, c);
			break;
		case 1:
			op_complete(a, c);
			break;
		case 2:
			device_lied = true;
			if (!device_failed()) {
				used_of(0)->ring[used_of(0)->idx % qnum] =
					(struct virtq_used_elem){ b, c };
				used_of(0)->idx = (uint16_t)(used_of(0)->idx + a % 4);
			}
			break;
		case 3:
			op_poll();
			break;
		case 4:
			fd.isr = a & 3;
			if (a & 4)
				fd.status |= VIRTIO_STATUS_NEEDS_RESET;
			break;
		case 5:
			memcpy(fd.cfg, &c, 4);
			memset(fd.cfg + 4, 0, 4);
			fd.isr |= 2;
			fd.unsettled = a;	/* 128 or more: never settles in 64 tries */
			old_sectors = sectors;
			sectors = c;	/* read at the poll's start, before any done() */
			poll();
			if (device_failed()) {	/* before or after the read */
				CHECK(hostblk_sectors(blk) == c || hostblk_sectors(blk) == old_sectors);
				sectors = hostblk_sectors(blk);
			}
			CHECK(hostblk_sectors(blk) == sectors);
			break;
		}
	}
	op_poll();
	if (fuzz_verbose())
		fprintf(stderr, "fuzz_hostio: queue %u, seg_max %u: %u accepted, %u done, refused "
			"%u EINVAL %u EBUSY %u EIO; device %s\n", qnum, seg_max, nr_accepted,
			nr_done, nr_refused[0], nr_refused[1], nr_refused[2],
			device_failed() ? "out of service" : "in service");
	return 0;
}
