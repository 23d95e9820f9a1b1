/* SPDX-License-Identifier: MIT */
/* Modern virtio-pci transport for the host devices (virtio_pci.h): common
 * configuration, notifications, ISR and device configuration (virtio 1.2
 * 4.1.4), split virtqueues with chains (2.7).
 *
 * What the device returns is checked as virtio_console.c checks the
 * management channel's ring, but stricter: a chain the device did not hold
 * coming back means it no longer follows the protocol, and its DMA into our
 * buffers (and, for a disk, into guest RAM) cannot be predicted, so the
 * device is reset and not used again rather than skipped over. */
#include <errno.h>
#include <log.h>
#include <printf.h>
#include <string.h>
#include <virtio_pci.h>

/* common configuration (virtio 1.2 4.1.4.3) */
#define VPCI_DFSELECT		0x00	/* le32 device_feature_select */
#define VPCI_DF			0x04	/* le32 device_feature */
#define VPCI_GFSELECT		0x08	/* le32 driver_feature_select */
#define VPCI_GF			0x0c	/* le32 driver_feature */
#define VPCI_NUM_QUEUES		0x12	/* le16 */
#define VPCI_STATUS		0x14	/* u8 device_status */
#define VPCI_CFG_GEN		0x15	/* u8 config_generation */
#define VPCI_Q_SELECT		0x16	/* le16 */
#define VPCI_Q_SIZE		0x18	/* le16 */
#define VPCI_Q_ENABLE		0x1c	/* le16 */
#define VPCI_Q_NOFF		0x1e	/* le16 queue_notify_off */
#define VPCI_Q_DESCLO		0x20	/* le64 each, written as two le32 */
#define VPCI_Q_AVAILLO		0x28
#define VPCI_Q_USEDLO		0x30
#define VPCI_COMMON_LEN		0x38	/* everything above */

#define RESET_POLLS		1000000	/* status reads before a reset is given up on */
#define CFG_TRIES		64	/* generation retries before the device is failed */

#ifndef HOST_TEST
static uint64_t io_rd(uintptr_t a, unsigned int width)
{
	virt_io_mb();
	switch (width) {
	case 1: return *(volatile uint8_t *)a;
	case 2: return *(volatile uint16_t *)a;
	default: return *(volatile uint32_t *)a;
	}
}

static void io_wr(uintptr_t a, unsigned int width, uint32_t v)
{
	virt_io_mb();	/* ring memory before the device hears of it */
	switch (width) {
	case 1: *(volatile uint8_t *)a = (uint8_t)v; break;
	case 2: *(volatile uint16_t *)a = (uint16_t)v; break;
	default: *(volatile uint32_t *)a = v; break;
	}
}
#else
/* host unit tests (tests/unit/test_hostio.c) play the device */
uint64_t vpci_test_rd(uintptr_t a, unsigned int width);
void vpci_test_wr(uintptr_t a, unsigned int width, uint32_t v);

static uint64_t io_rd(uintptr_t a, unsigned int width)
{
	return vpci_test_rd(a, width);
}

static void io_wr(uintptr_t a, unsigned int width, uint32_t v)
{
	vpci_test_wr(a, width, v);
}
#endif

static uint8_t status_rd(const struct vpci_dev *d)
{
	return (uint8_t)io_rd(d->common + VPCI_STATUS, 1);
}

static void status_wr(const struct vpci_dev *d, uint8_t s)
{
	io_wr(d->common + VPCI_STATUS, 1, s);
}

/* Write 0 and wait (bounded) until the device reads back 0: from then on it
 * no longer touches our rings or buffers (virtio 1.2 4.1.4.3.2). */
static bool reset(const struct vpci_dev *d)
{
	status_wr(d, 0);
	for (unsigned int i = 0; i < RESET_POLLS; i++)
		if (!status_rd(d))
			return true;
	return false;
}

void vpci_fail(struct vpci_dev *d, const char *why)
{
	if (!d->up)
		return;		/* already out of service (or never in) */
	d->up = false;
	pr_info("host %s: %s: device taken out of service", d->name, why);
	if (!reset(d))
		pr_info("host %s: reset does not complete", d->name);
	status_wr(d, VIRTIO_STATUS_FAILED);
}

/* The CPU address of structure @c if it is long enough for @need bytes. */
static uintptr_t locate(const struct pci_func *f, enum virtio_pci_cap c, uint32_t need)
{
	const struct virtio_pci_loc *l = &f->cap[c];

	if (!l->found || l->length < need)
		return 0;
	/* pci_virtio_caps() checked offset + length against the assigned BAR */
	return (uintptr_t)(f->bar[l->bar].cpu + l->offset);
}

int vpci_init(struct vpci_dev *d, const struct pci_func *f, const char *kind)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s %02x:%02x.%x", kind, f->bus, f->dev, f->fn);
	d->common = locate(f, VPCI_COMMON, VPCI_COMMON_LEN);
	d->isr = locate(f, VPCI_ISR, 1);
	d->notify = locate(f, VPCI_NOTIFY, 2);
	d->device = locate(f, VPCI_DEVICE, 1);
	if (f->bar_error || !d->common || !d->isr || !d->notify || !d->device) {
		pr_info("host %s: a virtio structure is missing or too short: not used", d->name);
		return -HYP_ENOTSUP;
	}
	d->notify_len = f->cap[VPCI_NOTIFY].length;
	d->notify_mult = f->notify_off_multiplier;
	d->device_len = f->cap[VPCI_DEVICE].length;
	d->pci = f;
	if (!reset(d)) {
		pr_info("host %s: reset does not complete: not used", d->name);
		return -HYP_EIO;
	}
	status_wr(d, VIRTIO_STATUS_ACKNOWLEDGE);
	status_wr(d, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	d->up = true;
	return 0;
}

static int give_up(struct vpci_dev *d, const char *why, int rc)
{
	vpci_fail(d, why);
	return rc;
}

int vpci_negotiate(struct vpci_dev *d, uint64_t wanted)
{
	uint64_t offered, accept;

	io_wr(d->common + VPCI_DFSELECT, 4, 0);
	offered = io_rd(d->common + VPCI_DF, 4);
	io_wr(d->common + VPCI_DFSELECT, 4, 1);
	offered |= io_rd(d->common + VPCI_DF, 4) << 32;
	if (!(offered >> VIRTIO_F_VERSION_1 & 1))
		return give_up(d, "no VIRTIO_F_VERSION_1 (legacy only)", -HYP_ENOTSUP);
	accept = (offered & wanted & ~(1ull << VIRTIO_F_ACCESS_PLATFORM)) |
		 1ull << VIRTIO_F_VERSION_1;
	io_wr(d->common + VPCI_GFSELECT, 4, 0);
	io_wr(d->common + VPCI_GF, 4, (uint32_t)accept);
	io_wr(d->common + VPCI_GFSELECT, 4, 1);
	io_wr(d->common + VPCI_GF, 4, (uint32_t)(accept >> 32));
	status_wr(d, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
		  VIRTIO_STATUS_FEATURES_OK);
	if (!(status_rd(d) & VIRTIO_STATUS_FEATURES_OK))
		return give_up(d, "features refused", -HYP_ENOTSUP);
	d->features = accept;
	return 0;
}

int vpci_queue_setup(struct vpci_dev *d, struct vpci_queue *q, uint16_t index,
		     struct virtq_desc *desc, void *avail, void *used, uint16_t max)
{
	uint16_t dev_max, noff, num = 1;
	uint64_t at;

	io_wr(d->common + VPCI_Q_SELECT, 2, index);
	dev_max = (uint16_t)io_rd(d->common + VPCI_Q_SIZE, 2);
	if (io_rd(d->common + VPCI_Q_ENABLE, 2))
		return give_up(d, "queue enabled before setup", -HYP_ENOTSUP);
	/* the largest power of two within every limit: free-running indices wrap evenly */
	while ((unsigned int)num * 2 <= MIN(MIN(dev_max, max), (uint16_t)VPCI_QUEUE_MAX))
		num *= 2;
	if (!dev_max || !max)
		return give_up(d, "queue missing", -HYP_ENOTSUP);
	noff = (uint16_t)io_rd(d->common + VPCI_Q_NOFF, 2);
	at = (uint64_t)noff * d->notify_mult;
	if (at > d->notify_len || d->notify_len - at < 2)
		return give_up(d, "queue notify address outside the notify structure",
			       -HYP_ENOTSUP);
	memset(q, 0, sizeof(*q));
	sring_init(&q->r, desc, avail, used, num);
	q->index = index;
	q->notify = d->notify + (uintptr_t)at;
	for (uint16_t i = 0; i < num; i++)
		q->next[i] = (uint16_t)(i + 1);
	q->nr_free = num;
	io_wr(d->common + VPCI_Q_SIZE, 2, num);
	io_wr(d->common + VPCI_Q_DESCLO, 4, (uint32_t)(uintptr_t)desc);
	io_wr(d->common + VPCI_Q_DESCLO + 4, 4, (uint32_t)((uint64_t)(uintptr_t)desc >> 32));
	io_wr(d->common + VPCI_Q_AVAILLO, 4, (uint32_t)(uintptr_t)avail);
	io_wr(d->common + VPCI_Q_AVAILLO + 4, 4, (uint32_t)((uint64_t)(uintptr_t)avail >> 32));
	io_wr(d->common + VPCI_Q_USEDLO, 4, (uint32_t)(uintptr_t)used);
	io_wr(d->common + VPCI_Q_USEDLO + 4, 4, (uint32_t)((uint64_t)(uintptr_t)used >> 32));
	io_wr(d->common + VPCI_Q_ENABLE, 2, 1);
	if (io_rd(d->common + VPCI_Q_ENABLE, 2) != 1)
		return give_up(d, "queue does not enable", -HYP_ENOTSUP);
	return 0;
}

int vpci_start(struct vpci_dev *d)
{
	uint8_t s;

	status_wr(d, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
		  VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
	s = status_rd(d);
	if (s & (VIRTIO_STATUS_NEEDS_RESET | VIRTIO_STATUS_FAILED) ||
	    !(s & VIRTIO_STATUS_DRIVER_OK))
		return give_up(d, "device did not take DRIVER_OK", -HYP_EIO);
	return 0;
}

static uint8_t cfg_gen(const struct vpci_dev *d)
{
	return (uint8_t)io_rd(d->common + VPCI_CFG_GEN, 1);
}

int vpci_cfg_read(struct vpci_dev *d, uint32_t off, unsigned int width, uint64_t *val)
{
	if ((width != 1 && width != 2 && width != 4 && width != 8) || off % width ||
	    off > d->device_len || d->device_len - off < width)
		return -HYP_EINVAL;
	for (unsigned int i = 0; i < CFG_TRIES && d->up; i++) {
		uint8_t gen = cfg_gen(d);
		uint64_t v = width == 8 ?
			     io_rd(d->device + off, 4) | io_rd(d->device + off + 4, 4) << 32 :
			     io_rd(d->device + off, width);

		if (cfg_gen(d) == gen) {
			*val = v;
			return 0;
		}
	}
	return give_up(d, "config_generation never settles", -HYP_EIO);
}

int vpci_cfg_bytes(struct vpci_dev *d, uint32_t off, void *buf, uint32_t len)
{
	uint8_t *out = buf;

	if (off > d->device_len || d->device_len - off < len)
		return -HYP_EINVAL;
	for (unsigned int i = 0; i < CFG_TRIES && d->up; i++) {
		uint8_t gen = cfg_gen(d);

		for (uint32_t k = 0; k < len; k++)
			out[k] = (uint8_t)io_rd(d->device + off + k, 1);
		if (cfg_gen(d) == gen)
			return 0;
	}
	return give_up(d, "config_generation never settles", -HYP_EIO);
}

int vpci_queue_add(struct vpci_queue *q, const struct vpci_buf *b, unsigned int nr,
		   uint16_t *head)
{
	uint16_t first = q->free_head, id = first, last = first;
	uint32_t write_len = 0;

	if (!nr)
		return -HYP_EINVAL;
	if (nr > q->nr_free)
		return -HYP_EBUSY;
	for (unsigned int i = 0; i < nr; i++) {
		struct virtq_desc *d = &q->r.desc[id];

		d->addr = b[i].addr;
		d->len = b[i].len;
		d->flags = (uint16_t)((b[i].write ? VIRTQ_DESC_F_WRITE : 0) |
				      (i + 1 < nr ? VIRTQ_DESC_F_NEXT : 0));
		d->next = i + 1 < nr ? q->next[id] : 0;
		if (b[i].write)
			write_len += b[i].len;	/* callers' chains: well below 4 GiB */
		last = id;
		id = q->next[id];
	}
	q->free_head = id;
	q->nr_free = (uint16_t)(q->nr_free - nr);
	q->next[last] = first;		/* unused at the tail: kept for freeing */
	q->chain_len[first] = (uint16_t)nr;
	q->write_len[first] = write_len;
	q->in_flight++;
	sring_offer(&q->r, first);
	*head = first;
	return 0;
}

void vpci_queue_kick(struct vpci_dev *d, struct vpci_queue *q)
{
	if (d->up && sring_publish(&q->r))
		io_wr(q->notify, 2, q->index);	/* after virt_io_mb() */
}

/* Give the chain at @head back to the free list (walked with our own links). */
static void free_chain(struct vpci_queue *q, uint16_t head)
{
	uint16_t id = head;

	for (uint16_t i = 1; i < q->chain_len[head]; i++)
		id = q->next[id];
	q->next[id] = q->free_head;
	q->free_head = head;
	q->nr_free = (uint16_t)(q->nr_free + q->chain_len[head]);
	q->chain_len[head] = 0;
	q->in_flight--;
}

int vpci_queue_used(struct vpci_dev *d, struct vpci_queue *q, uint16_t *head, uint32_t *len)
{
	uint16_t pending;
	uint32_t id, l;

	if (!d->up)
		return -HYP_EIO;
	pending = sring_pending(&q->r);
	if (!pending)
		return 0;
	if (pending > q->in_flight) {
		pr_info("host %s: queue %u: used index %u, %u entries past %u with %u chains out",
			d->name, q->index, (uint16_t)(q->r.last_used + pending), pending,
			q->r.last_used, q->in_flight);
		return give_up(d, "used index ran ahead", -HYP_EIO);
	}
	sring_take(&q->r, &id, &l);
	if (id >= q->r.num) {
		pr_info("host %s: queue %u: used id %u, queue size %u", d->name, q->index, id,
			q->r.num);
		return give_up(d, "used id out of range", -HYP_EIO);
	}
	if (!q->chain_len[id]) {
		pr_info("host %s: queue %u: used id %u", d->name, q->index, id);
		return give_up(d, "used id not a chain the device holds", -HYP_EIO);
	}
	if (l > q->write_len[id]) {
		if (!d->len_clamped++)
			pr_info("host %s: queue %u: used length %u above the %u writable bytes: "
				"clamped (logged once)", d->name, q->index, l, q->write_len[id]);
		l = q->write_len[id];
	}
	free_chain(q, (uint16_t)id);
	*head = (uint16_t)id;
	*len = l;
	return 1;
}

bool vpci_queue_reclaim(struct vpci_queue *q, uint16_t *head)
{
	for (uint16_t id = 0; id < q->r.num && q->in_flight; id++)
		if (q->chain_len[id]) {
			free_chain(q, id);
			*head = id;
			return true;
		}
	return false;
}

uint8_t vpci_isr_ack(struct vpci_dev *d)
{
	if (!READ_ONCE(d->up))
		return 0;
	return (uint8_t)io_rd(d->isr, 1);
}

void vpci_config_check(struct vpci_dev *d)
{
	uint8_t s;

	if (!d->up)
		return;
	s = status_rd(d);
	if (s & VIRTIO_STATUS_NEEDS_RESET)
		vpci_fail(d, "device needs a reset");
	else if (s & VIRTIO_STATUS_FAILED)
		vpci_fail(d, "device status FAILED");
}

uint8_t vpci_isr(struct vpci_dev *d)
{
	uint8_t isr = vpci_isr_ack(d);

	if (isr & 2)
		vpci_config_check(d);
	return isr;
}
