/* SPDX-License-Identifier: MIT */
/* Host disks (hostblk.h): virtio-blk over virtio_pci.c, one request queue of
 * BLK_QUEUE entries per disk. A request is a chain of its header (ours,
 * device-readable), its data segments (the caller's, readable for OUT,
 * writable for IN and GET_ID) and its status byte (ours, writable). The
 * header and status live in a slot indexed by the chain's head, so a
 * completion finds its request from the head virtio_pci.c has checked.
 *
 * The status byte is set to a value no device writes before the request goes
 * out; a completion whose status is not OK, IOERR or UNSUPP is an IOERR.
 * Configuration values are bounded: the block size a power of two
 * 512..65536, seg_max at least 1 (then cut to what a request can carry). */
#include <atomic.h>
#include <errno.h>
#include <hart.h>
#include <hostblk.h>
#include <log.h>
#include <pci_host.h>
#include <string.h>
#include <virtio_pci.h>

#define VIRTIO_ID_BLOCK		2

/* device configuration (virtio 1.2 5.2.4) */
#define BLK_CFG_CAPACITY	0	/* le64, 512-byte sectors */
#define BLK_CFG_SEG_MAX		12	/* le32 */
#define BLK_CFG_BLK_SIZE	20	/* le32 */

#define BLK_QUEUE		VPCI_QUEUE_MAX	/* 256 entries: 6.6 KiB of rings */
#define STATUS_UNSET		0xff

struct blk_hdr {		/* struct virtio_blk_req's header */
	uint32_t type;
	uint32_t reserved;
	uint64_t sector;
};

struct blk_slot {		/* per chain head */
	struct blk_hdr hdr;
	uint8_t status;
	struct hostblk_req *req;
};

struct hostblk {
	struct spinlock lock;
	/* Completions to look at, posted by hostblk_poll() (1) and a
	 * configuration change its ISR read showed (2): whoever holds the lock
	 * next takes them (32 bits: the hart has no byte-wide atomic or). */
	uint32_t wanted;
	/* the harts in drain() on this disk (bit: hart index), see drain() */
	uint32_t draining;
	struct vpci_dev dev;
	struct vpci_queue q;
	VPCI_RING(BLK_QUEUE) ring;
	struct blk_slot slot[BLK_QUEUE];
	struct vpci_buf buf[HOSTBLK_MAX_SEGS + 2];	/* a chain being added (the lock) */
	uint64_t sectors;
	uint32_t blk_size, seg_max;
	bool ro;
};

static struct hostblk disks[HOSTBLK_MAX_DEVS];
static unsigned int nr_disks;

int64_t hostblk_irq(const struct hostblk *b)
{
	return b->dev.pci->int_pin ? b->dev.pci->int_irq : -1;
}

uint64_t hostblk_sectors(const struct hostblk *b)
{
	return READ_ONCE(b->sectors);
}

uint32_t hostblk_blk_size(const struct hostblk *b)
{
	return b->blk_size;
}

uint32_t hostblk_seg_max(const struct hostblk *b)
{
	return b->seg_max;
}

bool hostblk_read_only(const struct hostblk *b)
{
	return b->ro;
}

struct hostblk *hostblk_by_slot(unsigned int pci_dev)
{
	for (unsigned int i = 0; i < nr_disks; i++)
		if (disks[i].dev.pci->dev == pci_dev && disks[i].dev.pci->fn == 0)
			return &disks[i];
	return NULL;
}

/* Which data segments the request's type allows; false: not a request. */
static bool request_ok(const struct hostblk *b, const struct hostblk_req *r)
{
	uint64_t total = 0;

	switch (r->type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT:
		if (!r->nr_seg || r->nr_seg > b->seg_max || (r->type == VIRTIO_BLK_T_OUT && b->ro))
			return false;
		for (unsigned int i = 0; i < r->nr_seg; i++) {
			if (!r->seg[i].len)
				return false;
			total += r->seg[i].len;
		}
		/* no overflow: at most HOSTBLK_MAX_SEGS segments of < 4 GiB */
		return total % VIRTIO_BLK_SECTOR == 0 && r->sector <= b->sectors &&
		       total / VIRTIO_BLK_SECTOR <= b->sectors - r->sector;
	case VIRTIO_BLK_T_FLUSH:
		return !r->nr_seg && vpci_has(&b->dev, VIRTIO_BLK_F_FLUSH);
	case VIRTIO_BLK_T_GET_ID:
		return r->nr_seg == 1 && r->seg[0].len;
	default:
		return false;
	}
}

static void drain(struct hostblk *b);

/* Whoever drops the lock takes what a poller posted meanwhile: the poller
 * found the lock taken and left it (the fences pair with hostblk_poll()'s, so
 * that one of the two always sees the other). */
static void unlock_and_drain(struct hostblk *b)
{
	spin_unlock(&b->lock);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&b->wanted, __ATOMIC_RELAXED))
		drain(b);
}

int hostblk_submit(struct hostblk *b, struct hostblk_req *r)
{
	struct vpci_buf *buf = b->buf;	/* 4 KiB: not on the hart's stack */
	bool data_write = r->type == VIRTIO_BLK_T_IN || r->type == VIRTIO_BLK_T_GET_ID;
	uint16_t head;
	unsigned int n = 0;
	int rc;

	spin_lock(&b->lock);
	if (!b->dev.up) {
		rc = -HYP_EIO;
		goto out;
	}
	if (!request_ok(b, r)) {
		rc = -HYP_EINVAL;
		goto out;
	}
	if (r->nr_seg + 2u > b->q.nr_free) {
		rc = -HYP_EBUSY;
		goto out;
	}
	/* the slot of the head vpci_queue_add() will use: the first free descriptor */
	head = b->q.free_head;
	b->slot[head] = (struct blk_slot){
		.hdr = { .type = r->type, .sector = r->sector },
		.status = STATUS_UNSET, .req = r,
	};
	buf[n++] = (struct vpci_buf){ (hpa_t)(uintptr_t)&b->slot[head].hdr,
				      sizeof(struct blk_hdr), false };
	for (unsigned int i = 0; i < r->nr_seg; i++)
		buf[n++] = (struct vpci_buf){ r->seg[i].hpa, r->seg[i].len, data_write };
	buf[n++] = (struct vpci_buf){ (hpa_t)(uintptr_t)&b->slot[head].status, 1, true };
	rc = vpci_queue_add(&b->q, buf, n, &head);
	if (!rc)
		vpci_queue_kick(&b->dev, &b->q);
out:
	unlock_and_drain(b);
	return rc;
}

/* Under the lock: the next finished request and its status, or NULL. */
static struct hostblk_req *next_done(struct hostblk *b, uint8_t *status)
{
	struct hostblk_req *r;
	struct blk_slot *s;
	uint16_t head;
	uint32_t len;

	if (vpci_queue_used(&b->dev, &b->q, &head, &len) == 1) {
		s = &b->slot[head];
		*status = READ_ONCE(s->status);
		if (*status != VIRTIO_BLK_S_OK && *status != VIRTIO_BLK_S_UNSUPP)
			*status = VIRTIO_BLK_S_IOERR;	/* an error, or never written */
	} else if (!b->dev.up && vpci_queue_reclaim(&b->q, &head)) {
		s = &b->slot[head];	/* the device is reset: it writes nothing more */
		*status = VIRTIO_BLK_S_IOERR;
	} else {
		return NULL;
	}
	r = s->req;
	s->req = NULL;
	return r;
}

/* Capacity, from the device configuration (boot and configuration changes). */
static int read_capacity(struct hostblk *b)
{
	uint64_t v;
	int rc = vpci_cfg_read(&b->dev, BLK_CFG_CAPACITY, 8, &v);

	if (!rc)
		__atomic_store_n(&b->sectors, v, __ATOMIC_RELAXED);
	return rc;
}

/* Complete what the device finished: a queue's worth, and after a failure
 * every chain it held. Never waits for the lock: if another hart holds it
 * (a submit), that hart drains when it lets go (unlock_and_drain()). */
static void drain_loop(struct hostblk *b);

/* A hart in drain() calls requests' done(), and a done() may submit again
 * (the INTx selftest does; so could a device model sending its next
 * request): that submit drained from inside drain(), each completion one
 * level deeper, as long as the device kept answering, until the 16 KiB hart
 * stack overflowed into the bss (tests/guests/test_host_irq.py: its spin
 * guest on one hart, once QEMU's main loop answered faster). The drain()
 * already under way on this hart takes those completions in its loop
 * instead (wanted stays set for it); another disk's is drained as before. */
_Static_assert(HART_MAX <= 32, "draining: a bit per hart");

static void drain(struct hostblk *b)
{
	uint32_t mine = 1U << this_hart()->index;

	if (__atomic_load_n(&b->draining, __ATOMIC_RELAXED) & mine)
		return;
	__atomic_fetch_or(&b->draining, mine, __ATOMIC_RELAXED);
	drain_loop(b);
	__atomic_fetch_and(&b->draining, ~mine, __ATOMIC_RELAXED);
}

static void drain_loop(struct hostblk *b)
{
	for (unsigned int n = 0; n <= BLK_QUEUE; n++) {
		struct hostblk_req *r;
		uint32_t wanted;
		uint8_t status;

		if (!spin_trylock(&b->lock))
			return;		/* wanted is set: the holder drains */
		wanted = __atomic_exchange_n(&b->wanted, 0, __ATOMIC_RELAXED);
		if (wanted & 2) {
			vpci_config_check(&b->dev);
			if (b->dev.up)
				read_capacity(b);	/* a resize: requests are checked against it */
		}
		r = next_done(b, &status);
		if (r)	/* more may follow: still wanted, whoever looks next */
			__atomic_fetch_or(&b->wanted, 1U, __ATOMIC_RELAXED);
		spin_unlock(&b->lock);
		if (r) {
			r->status = status;
			r->done(r);
			continue;
		}
		/* none left, unless a poll came while the lock was held here */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&b->wanted, __ATOMIC_RELAXED))
			return;
	}
	/* the bound: the rest stays wanted, for the next poll or submit */
}

void hostblk_poll(struct hostblk *b)
{
	/* the ISR first (it lowers INTx), without the lock */
	uint32_t post = 1 | (vpci_isr_ack(&b->dev) & 2);

	__atomic_fetch_or(&b->wanted, post, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	drain(b);
}

/* Bring one virtio-blk function into service; false (logged) if it cannot be. */
static bool blk_start(struct hostblk *b, const struct pci_func *f)
{
	uint64_t v;

	if (vpci_init(&b->dev, f, "blk"))
		return false;
	if (vpci_negotiate(&b->dev, 1ull << VIRTIO_BLK_F_SEG_MAX | 1ull << VIRTIO_BLK_F_RO |
			   1ull << VIRTIO_BLK_F_BLK_SIZE | 1ull << VIRTIO_BLK_F_FLUSH) ||
	    read_capacity(b))
		return false;
	b->blk_size = VIRTIO_BLK_SECTOR;
	if (vpci_has(&b->dev, VIRTIO_BLK_F_BLK_SIZE)) {
		if (vpci_cfg_read(&b->dev, BLK_CFG_BLK_SIZE, 4, &v))
			return false;
		if (v < VIRTIO_BLK_SECTOR || v > 65536 || (v & (v - 1))) {
			vpci_fail(&b->dev, "block size not a power of two in 512..65536");
			return false;
		}
		b->blk_size = (uint32_t)v;
	}
	if (VPCI_QUEUE_SETUP(&b->dev, &b->q, 0, &b->ring))
		return false;
	if (b->q.r.num < 3) {
		vpci_fail(&b->dev, "request queue too small");
		return false;
	}
	b->seg_max = MIN((uint32_t)HOSTBLK_MAX_SEGS, b->q.r.num - 2u);
	if (vpci_has(&b->dev, VIRTIO_BLK_F_SEG_MAX)) {
		if (vpci_cfg_read(&b->dev, BLK_CFG_SEG_MAX, 4, &v))
			return false;
		if (!v) {
			vpci_fail(&b->dev, "seg_max 0");
			return false;
		}
		b->seg_max = (uint32_t)MIN((uint64_t)b->seg_max, v);
	}
	b->ro = vpci_has(&b->dev, VIRTIO_BLK_F_RO);
	return !vpci_start(&b->dev);
}

unsigned int hostblk_init(void)
{
	unsigned int nr, up = 0;
	const struct pci_func *f = pci_host_funcs(&nr);

	nr_disks = 0;
	for (unsigned int i = 0; i < nr; i++, f++) {
		struct hostblk *b = &disks[nr_disks];

		if (f->virtio_type != VIRTIO_ID_BLOCK)
			continue;
		if (nr_disks == HOSTBLK_MAX_DEVS) {
			pr_info("host blk %02x:%02x.%x: not driven (at most %u disks)", f->bus,
				f->dev, f->fn, HOSTBLK_MAX_DEVS);
			continue;
		}
		if (!blk_start(b, f))
			continue;
		pr_info("host %s: %lu sectors (%lu MiB), block %u, seg_max %u, queue %u, %s%s",
			b->dev.name, (unsigned long)b->sectors, (unsigned long)(b->sectors >> 11),
			b->blk_size, b->seg_max, b->q.r.num, b->ro ? "read-only" : "read-write",
			vpci_has(&b->dev, VIRTIO_BLK_F_FLUSH) ? ", flush" : "");
		nr_disks++;
		up++;
	}
	return up;
}
