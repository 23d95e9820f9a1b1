/* SPDX-License-Identifier: MIT */
/* Polled virtio-serial driver (virtio-console with MULTIPORT over virtio-mmio
 * version 2): the host management channel. Hart 0 only, no lock, no
 * interrupts (see virtio_console.h).
 *
 * Queues (virtio 1.x 5.3.2): 0/1 port 0 rx/tx, 2/3 control rx/tx, then
 * 2n+2/2n+3 for port n >= 1. All are set up before DRIVER_OK for port ids
 * below VCON_MAX_PORTS; QEMU then announces its ports on the control queue
 * (PORT_ADD), we answer PORT_READY and PORT_OPEN 1 (without the latter QEMU
 * delivers no data), it sends PORT_NAME, and PORT_OPEN 1/0 as host clients
 * come and go. QEMU drops control messages when no control buffer is free,
 * so they are handled (and their buffers given back) at every poll.
 *
 * Each descriptor owns one fixed buffer (descriptor i <-> buffer i), no
 * chains. Used-ring entries are checked before use: a descriptor id must be
 * in range and currently owned by the device (so each buffer comes back at
 * most once), a length is clamped to its buffer, and a used index that runs
 * ahead of what we gave takes the device out of service.
 *
 * Received buffers wait in a per-port FIFO, each tagged with the connection
 * generation it came from (see harvest_gen()), so that a reader can tell one
 * client's bytes from the next one's. */
#include <libfdt.h>
#include <string.h>
#include <console.h>
#include <hart.h>		/* time_now() (inline: the time CSR) */
#include <split_ring.h>
#include <virtio_console.h>
#include <virtio_mmio.h>

#define VIRTIO_CONSOLE_F_MULTIPORT	1
#define VCON_CFG_MAX_NR_PORTS		4	/* config space: le16 cols, rows; le32 max_nr_ports */

/* control events (virtio 1.x 5.3.6.2) */
#define VCON_DEVICE_READY	0
#define VCON_PORT_ADD		1
#define VCON_PORT_REMOVE	2
#define VCON_PORT_READY		3
#define VCON_CONSOLE_PORT	4
#define VCON_RESIZE		5
#define VCON_PORT_OPEN		6
#define VCON_PORT_NAME		7

struct vcon_ctl {
	uint32_t id;
	uint16_t event;
	uint16_t value;
};

#define CTL_RX_BUFS	32	/* QEMU drops control messages when none is free */
#define CTL_RX_SIZE	128	/* header + port name */
#define CTL_TX_BUFS	16
#define CTL_PENDING	32	/* control messages waiting for a free tx buffer */
#define NR_QUEUES	(2 * VCON_MAX_PORTS + 2)
#define SETTLE_MAX_MS	1000	/* init: wait at most this for QEMU to name its ports */

/* One split virtqueue whose descriptor i always points at buffer i. */
struct vq {
	struct sring r;		/* r.num: queue size = descriptors = buffers */
	uint8_t *buf;
	uint32_t buf_size;
	uint16_t index;		/* virtqueue number */
	bool ready;
	bool write;		/* device-writable buffers (rx) */
	bool device_owns[VIRTQ_MAX];
	uint16_t free_ids[VIRTQ_MAX];	/* tx: buffers we may fill */
	uint16_t nr_free;
};

/* A received buffer not yet read, tagged with the connection it came from. */
struct rx_chunk {
	uint16_t id;
	uint16_t len;
	unsigned int gen;
};

struct vcon_port {
	bool present;		/* QEMU announced it (PORT_ADD) */
	bool host_open;		/* a host client is connected */
	bool is_console;	/* virtconsole rather than virtserialport */
	char name[VCON_NAME_MAX];	/* "" until PORT_NAME */
	unsigned int gen;	/* +1 at every host connect and disconnect */
	struct vq rx, tx;
	struct rx_chunk fifo[VCON_BUFS];
	unsigned int fifo_head, fifo_tail;	/* free-running */
	uint32_t fifo_off;	/* bytes of the head chunk already read */
};

static struct virtq_ring rings[NR_QUEUES];
static uint8_t data_bufs[VCON_MAX_PORTS][2][VCON_BUFS][VCON_BUF_SIZE]
	__attribute__((aligned(4096)));
static uint8_t ctl_rx_bufs[CTL_RX_BUFS][CTL_RX_SIZE] __attribute__((aligned(16)));
static struct vcon_ctl ctl_tx_bufs[CTL_TX_BUFS] __attribute__((aligned(16)));

static struct {
	uintptr_t base;		/* 0: no device */
	bool up;
	int64_t irq;		/* its interrupt in the DT (-1: none), and the parent's */
	uint32_t irq_parent;	/* phandle */
	uint32_t irq_type;	/* a two-cell specifier's trigger; one cell: 0 */
	uint32_t isr_taken;	/* interrupt status the handler acknowledged */
	uint64_t timebase;	/* time_now() ticks per second */
	uint64_t isr_read;	/* time_now() of vcon_poll()'s last look at the status */
	uint32_t max_ports;
	struct vq ctl_rx, ctl_tx;
	struct vcon_ctl pending[CTL_PENDING];
	unsigned int pending_head, pending_tail;
	unsigned long bad_used;		/* used entries rejected or clamped (logged once) */
	unsigned long ctl_lost;		/* control messages we could not send (logged once) */
	uint64_t logged_ports;		/* log_once_per_port() */
	struct vcon_port port[VCON_MAX_PORTS];
} vc;

#ifndef HOST_TEST
static inline uint32_t rd(unsigned int off)
{
	return *(volatile uint32_t *)(vc.base + off);
}

static inline void wr(unsigned int off, uint32_t v)
{
	*(volatile uint32_t *)(vc.base + off) = v;
}
#else
/* host unit tests (tests/unit/test_vcon.c) play the device behind the registers */
uint32_t vcon_test_rd(unsigned int off);
void vcon_test_wr(unsigned int off, uint32_t v);

static inline uint32_t rd(unsigned int off)
{
	return vcon_test_rd(off);
}

static inline void wr(unsigned int off, uint32_t v)
{
	vcon_test_wr(off, v);
}
#endif

static unsigned int rx_queue(unsigned int port)
{
	return port ? 2 * port + 2 : 0;
}

/* --- virtqueues --------------------------------------------------------------- */

static bool vq_setup(struct vq *q, unsigned int index, uint8_t *buf, uint32_t buf_size,
		     uint16_t num, bool write)
{
	struct virtq_ring *r = &rings[index];
	uint32_t max;

	wr(VIRTIO_MMIO_QUEUE_SEL, index);
	max = rd(VIRTIO_MMIO_QUEUE_NUM_MAX);
	if (!max || rd(VIRTIO_MMIO_QUEUE_READY))
		return false;
	while (num > max)	/* keep a power of two */
		num /= 2;
	memset(q, 0, sizeof(*q));
	sring_init(&q->r, r->desc, &r->avail, &r->used, num);
	q->buf = buf;
	q->buf_size = buf_size;
	q->index = (uint16_t)index;
	q->write = write;
	for (uint16_t i = 0; i < num; i++)
		q->free_ids[q->nr_free++] = (uint16_t)(num - 1 - i);
	virt_io_mb();	/* rings cleared before the device may look at them */
	wr(VIRTIO_MMIO_QUEUE_NUM, num);
	wr(VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)(uintptr_t)r->desc);
	wr(VIRTIO_MMIO_QUEUE_DESC_HIGH, (uint32_t)((uint64_t)(uintptr_t)r->desc >> 32));
	wr(VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)(uintptr_t)&r->avail);
	wr(VIRTIO_MMIO_QUEUE_DRIVER_HIGH, (uint32_t)((uint64_t)(uintptr_t)&r->avail >> 32));
	wr(VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)(uintptr_t)&r->used);
	wr(VIRTIO_MMIO_QUEUE_DEVICE_HIGH, (uint32_t)((uint64_t)(uintptr_t)&r->used >> 32));
	wr(VIRTIO_MMIO_QUEUE_READY, 1);
	q->ready = rd(VIRTIO_MMIO_QUEUE_READY) == 1;
	return q->ready;
}

/* Give buffer @id (its first @len bytes) to the device; vq_kick() publishes. */
static void vq_add(struct vq *q, uint16_t id, uint32_t len)
{
	struct virtq_desc *d = &q->r.desc[id];

	d->addr = (uint64_t)(uintptr_t)(q->buf + (size_t)id * q->buf_size);
	d->len = len;
	d->flags = q->write ? VIRTQ_DESC_F_WRITE : 0;
	d->next = 0;
	sring_offer(&q->r, id);
	q->device_owns[id] = true;
}

/* Publish what vq_add() queued and notify the device unless it said not to. */
static void vq_kick(struct vq *q)
{
	if (!sring_publish(&q->r))
		return;
	virt_io_mb();	/* the index before the notification (device output) */
	wr(VIRTIO_MMIO_QUEUE_NOTIFY, q->index);
}

/* The device broke the ring protocol: stop using it (a reset also stops its
 * DMA into our buffers); the hypervisor goes on without a channel. */
static void vcon_broken(const char *why)
{
	if (!vc.up)
		return;
	pr_info("vcon: device error (%s): management channel down", why);
	vc.up = false;
	wr(VIRTIO_MMIO_STATUS, 0);
}

static void bad_used(const struct vq *q, const char *what, uint32_t v)
{
	if (!vc.bad_used++)
		pr_info("vcon: queue %u: device returned a bad used entry (%s: %u), ignored "
			"(logged once)", q->index, what, v);
}

/* Next buffer the device gave back: its id and length (clamped to the buffer).
 * Entries naming a descriptor the device does not own are skipped. */
static bool vq_next_used(struct vq *q, uint16_t *id, uint32_t *len)
{
	uint16_t pending;

	while ((pending = sring_pending(&q->r))) {
		uint32_t eid, elen;

		if (pending > q->r.num) {
			/* more entries than buffers we gave: the ring is corrupt */
			vcon_broken("used index ran ahead");
			return false;
		}
		sring_take(&q->r, &eid, &elen);
		if (eid >= q->r.num || !q->device_owns[eid]) {
			bad_used(q, "unknown buffer id", eid);
			continue;
		}
		q->device_owns[eid] = false;
		if (elen > q->buf_size) {
			bad_used(q, "length too big", elen);
			elen = q->buf_size;
		}
		*id = (uint16_t)eid;
		*len = elen;
		return true;
	}
	return false;
}

/* --- control queue ------------------------------------------------------------- */

static void ctl_tx_reclaim(void)
{
	struct vq *q = &vc.ctl_tx;
	uint16_t id;
	uint32_t len;

	while (vq_next_used(q, &id, &len))
		q->free_ids[q->nr_free++] = id;
}

/* Send queued control messages while tx buffers are free. */
static void ctl_flush(void)
{
	struct vq *q = &vc.ctl_tx;

	ctl_tx_reclaim();
	while (vc.pending_head != vc.pending_tail && q->nr_free) {
		uint16_t id = q->free_ids[--q->nr_free];

		ctl_tx_bufs[id] = vc.pending[vc.pending_head++ % CTL_PENDING];
		vq_add(q, id, sizeof(struct vcon_ctl));
	}
	vq_kick(q);
}

static void ctl_send(uint32_t id, uint16_t event, uint16_t value)
{
	if (vc.pending_tail - vc.pending_head == CTL_PENDING) {
		if (!vc.ctl_lost++)
			pr_info("vcon: control messages lost: device does not take them (logged once)");
		return;
	}
	vc.pending[vc.pending_tail++ % CTL_PENDING] =
		(struct vcon_ctl){ .id = id, .event = event, .value = value };
	ctl_flush();
}

/* Which connection do bytes collected now belong to? Data reaches the rx
 * ring only while a client is connected, and QEMU puts a client's PORT_OPEN 1
 * on the control ring before that client's data (and a leaving client's data
 * before its PORT_OPEN 0). So, looking at control messages not yet handled
 * (read after the data): if a connect for this port is pending, the bytes may
 * be the new client's (they cannot be told apart from a leaving client's last
 * bytes) and go to the newest pending connection, so that a client that
 * reconnects at once never loses its first request; otherwise they belong to
 * the connection of @fallback. Counting starts from @gen/@open. */
static unsigned int harvest_gen(unsigned int port, unsigned int gen, bool open,
				unsigned int fallback)
{
	const struct vq *q = &vc.ctl_rx;
	uint16_t pending = sring_pending(&q->r);
	unsigned int newest = fallback;

	for (uint16_t i = q->r.last_used, n = 0; n < pending && n < q->r.num; i++, n++) {
		const struct virtq_used_elem *e = &q->r.used->ring[i % q->r.num];
		uint32_t eid = READ_ONCE(e->id);
		struct vcon_ctl c;
		bool now_open;

		if (eid >= q->r.num || !q->device_owns[eid] || READ_ONCE(e->len) < sizeof(c))
			continue;
		memcpy(&c, q->buf + (size_t)eid * q->buf_size, sizeof(c));
		if (c.id != port || (c.event != VCON_PORT_OPEN && c.event != VCON_PORT_REMOVE))
			continue;
		now_open = c.event == VCON_PORT_OPEN && c.value;
		if (now_open != open) {
			gen++;
			open = now_open;
		}
		if (now_open)
			newest = gen;
	}
	return newest;
}

/* Move the port's received buffers into its read FIFO; empty ones go
 * straight back. @gen/@open/@fallback: see harvest_gen(). */
static void rx_collect(unsigned int port, unsigned int gen, bool open, unsigned int fallback)
{
	struct vcon_port *p = &vc.port[port];
	unsigned int from = p->fifo_tail, tag;
	uint16_t id;
	uint32_t len;

	while (vq_next_used(&p->rx, &id, &len)) {
		if (!len || p->fifo_tail - p->fifo_head >= VCON_BUFS) {
			vq_add(&p->rx, id, p->rx.buf_size);
			continue;
		}
		p->fifo[p->fifo_tail++ % VCON_BUFS] =
			(struct rx_chunk){ .id = id, .len = (uint16_t)len };
	}
	vq_kick(&p->rx);
	if (from == p->fifo_tail)
		return;
	virt_rmb();	/* the data before the control ring */
	tag = harvest_gen(port, gen, open, fallback);
	for (unsigned int i = from; i != p->fifo_tail; i++)
		p->fifo[i % VCON_BUFS].gen = tag;
}

static void rx_harvest(unsigned int port)
{
	const struct vcon_port *p = &vc.port[port];

	rx_collect(port, p->gen, p->host_open, p->gen);
}

static void tx_reclaim(struct vcon_port *p)
{
	uint16_t id;
	uint32_t len;

	while (vq_next_used(&p->tx, &id, &len))
		p->tx.free_ids[p->tx.nr_free++] = id;
}

/* The host side connected or disconnected (or the port went away). */
static void port_set_host_open(unsigned int port, bool open)
{
	struct vcon_port *p = &vc.port[port];

	if (p->host_open == open)
		return;
	if (!open) {
		/* the leaving client's bytes are all in the ring now */
		rx_collect(port, p->gen + 1, false, p->gen);
		/* QEMU dropped every tx buffer at the close, but the one it held
		 * while the client was not reading is detached, never returned
		 * (virtio_serial_close -> discard_throttle_data): take them all
		 * back, or each such close would lose a buffer for good. */
		tx_reclaim(p);
		for (uint16_t id = 0; id < p->tx.r.num; id++)
			if (p->tx.device_owns[id]) {
				p->tx.device_owns[id] = false;
				p->tx.free_ids[p->tx.nr_free++] = id;
			}
	}
	p->host_open = open;
	p->gen++;
}

/* Rate limit for messages about a port: once per port id (ids >= 63 share one). */
static bool log_once_per_port(uint32_t id)
{
	uint64_t bit = 1ull << MIN(id, 63u);
	bool first = !(vc.logged_ports & bit);

	vc.logged_ports |= bit;
	return first;
}

static void port_set_name(unsigned int id, struct vcon_port *p, const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	bool ok = len > 0 && len < VCON_NAME_MAX;

	for (size_t i = 0; ok && i < len; i++)
		ok = s[i] > ' ' && s[i] < 0x7f;
	if (!ok) {
		p->name[0] = '\0';
		if (log_once_per_port(id))
			pr_info("vcon: port %u: name ignored (empty, too long or not printable)", id);
		return;
	}
	memcpy(p->name, s, len);
	p->name[len] = '\0';
}

static void ctl_handle(const uint8_t *msg, uint32_t len)
{
	struct vcon_ctl c;
	struct vcon_port *p;

	if (len < sizeof(c))
		return;
	memcpy(&c, msg, sizeof(c));
	if (c.id >= VCON_MAX_PORTS || c.id >= vc.max_ports ||
	    !vc.port[c.id].rx.ready || !vc.port[c.id].tx.ready) {
		if (c.event == VCON_PORT_ADD && log_once_per_port(c.id))
			pr_info("vcon: port %u ignored (%s)", c.id,
				c.id < VCON_MAX_PORTS && c.id < vc.max_ports ?
				"its queues failed" : "only ports 0-4 are used");
		return;
	}
	p = &vc.port[c.id];
	if (c.event == VCON_PORT_ADD) {
		if (p->present)
			return;
		p->present = true;
		p->host_open = false;
		p->is_console = false;
		p->name[0] = '\0';
		ctl_send(c.id, VCON_PORT_READY, 1);
		/* "guest open": without it QEMU passes no host data to us */
		ctl_send(c.id, VCON_PORT_OPEN, 1);
		return;
	}
	if (!p->present)
		return;
	switch (c.event) {
	case VCON_PORT_REMOVE:
		port_set_host_open(c.id, false);
		p->present = false;
		p->name[0] = '\0';
		break;
	case VCON_CONSOLE_PORT:
		p->is_console = true;
		break;
	case VCON_PORT_OPEN:
		port_set_host_open(c.id, c.value != 0);
		break;
	case VCON_PORT_NAME:
		port_set_name(c.id, p, (const char *)msg + sizeof(c), len - sizeof(c));
		break;
	default:	/* RESIZE, anything newer */
		break;
	}
}

/* Handle the control messages waiting; each buffer goes back to the device
 * before the message is acted on, so the replies it provokes find room. The
 * device may fill a buffer again as soon as it has it back (a client that
 * connects and leaves in a loop makes a message each time), so one call
 * handles at most a queue's worth; the rest waits for the next call. */
static void ctl_poll(void)
{
	struct vq *q = &vc.ctl_rx;
	uint8_t msg[CTL_RX_SIZE];
	uint16_t id;
	uint32_t len;

	for (unsigned int n = 0; n < q->r.num && vq_next_used(q, &id, &len); n++) {
		memcpy(msg, q->buf + (size_t)id * q->buf_size, len);
		vq_add(q, id, q->buf_size);
		vq_kick(q);
		ctl_handle(msg, len);
	}
}

/* --- device discovery and start ------------------------------------------------- */

static bool vcon_fail(const char *why)
{
	pr_info("vcon: virtio-serial at 0x%lx: %s: not used", (unsigned long)vc.base, why);
	wr(VIRTIO_MMIO_STATUS, 0);	/* reset: the device forgets our rings */
	memset(&vc, 0, sizeof(vc));
	return false;
}

static uint32_t read_max_ports(void)
{
	uint32_t gen, v;

	do {
		gen = rd(VIRTIO_MMIO_CONFIG_GENERATION);
		v = rd(VIRTIO_MMIO_CONFIG + VCON_CFG_MAX_NR_PORTS);
	} while (gen != rd(VIRTIO_MMIO_CONFIG_GENERATION));
	return v;
}

static bool vcon_start(uintptr_t base)
{
	uint32_t status, feat_lo, feat_hi;
	unsigned int nr_ports;

	memset(&vc, 0, sizeof(vc));
	vc.base = base;
	wr(VIRTIO_MMIO_STATUS, 0);
	for (unsigned int i = 0; rd(VIRTIO_MMIO_STATUS); i++)
		if (i == 1000000)
			return vcon_fail("reset does not complete");
	status = VIRTIO_STATUS_ACKNOWLEDGE;
	wr(VIRTIO_MMIO_STATUS, status);
	status |= VIRTIO_STATUS_DRIVER;
	wr(VIRTIO_MMIO_STATUS, status);

	wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	feat_lo = rd(VIRTIO_MMIO_DEVICE_FEATURES);
	wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	feat_hi = rd(VIRTIO_MMIO_DEVICE_FEATURES);
	if (!(feat_hi & (1u << (VIRTIO_F_VERSION_1 - 32))))
		return vcon_fail("no VIRTIO_F_VERSION_1");
	if (!(feat_lo & (1u << VIRTIO_CONSOLE_F_MULTIPORT)))
		return vcon_fail("no MULTIPORT (max_ports=1?)");
	wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(VIRTIO_MMIO_DRIVER_FEATURES, 1u << VIRTIO_CONSOLE_F_MULTIPORT);
	wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(VIRTIO_MMIO_DRIVER_FEATURES, 1u << (VIRTIO_F_VERSION_1 - 32));
	status |= VIRTIO_STATUS_FEATURES_OK;
	wr(VIRTIO_MMIO_STATUS, status);
	if (!(rd(VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK))
		return vcon_fail("features refused");

	vc.max_ports = read_max_ports();
	if (!vc.max_ports)
		return vcon_fail("max_nr_ports is 0");
	if (!vq_setup(&vc.ctl_rx, 2, &ctl_rx_bufs[0][0], CTL_RX_SIZE, CTL_RX_BUFS, true) ||
	    !vq_setup(&vc.ctl_tx, 3, (uint8_t *)ctl_tx_bufs, sizeof(struct vcon_ctl),
		      CTL_TX_BUFS, false))
		return vcon_fail("no control queues");
	nr_ports = MIN(vc.max_ports, (uint32_t)VCON_MAX_PORTS);
	for (unsigned int n = 0; n < nr_ports; n++) {
		struct vcon_port *p = &vc.port[n];

		/* a port whose queues fail is ignored when QEMU announces it */
		if (vq_setup(&p->rx, rx_queue(n), &data_bufs[n][0][0][0], VCON_BUF_SIZE,
			     VCON_BUFS, true))
			vq_setup(&p->tx, rx_queue(n) + 1, &data_bufs[n][1][0][0],
				 VCON_BUF_SIZE, VCON_BUFS, false);
	}

	/* every receive buffer goes to the device before DRIVER_OK */
	for (uint16_t i = 0; i < vc.ctl_rx.r.num; i++)
		vq_add(&vc.ctl_rx, i, vc.ctl_rx.buf_size);
	for (unsigned int n = 0; n < nr_ports; n++)
		for (uint16_t i = 0; vc.port[n].rx.ready && i < vc.port[n].rx.r.num; i++)
			vq_add(&vc.port[n].rx, i, vc.port[n].rx.buf_size);
	virt_io_mb();
	status |= VIRTIO_STATUS_DRIVER_OK;
	wr(VIRTIO_MMIO_STATUS, status);
	if (rd(VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET)
		return vcon_fail("device needs reset");
	vq_kick(&vc.ctl_rx);
	for (unsigned int n = 0; n < nr_ports; n++)
		if (vc.port[n].rx.ready)
			vq_kick(&vc.port[n].rx);
	vc.up = true;
	ctl_send(0, VCON_DEVICE_READY, 1);
	return true;
}

/* Poll until the control queue is quiet: QEMU has taken back every control
 * message we sent (DEVICE_READY, PORT_READY, PORT_OPEN; it answers each while
 * taking it: PORT_ADD for every port, PORT_NAME, PORT_OPEN when a client is
 * connected) and we have handled all it sent. Notifications are asynchronous
 * (QEMU's ioeventfd, TCG too), so this takes a few main-loop rounds. */
static void vcon_settle(uint64_t timebase)
{
	uint64_t start = time_now(), max = timebase * SETTLE_MAX_MS / 1000;

	while (vc.up && time_now() - start < max) {
		ctl_poll();
		ctl_flush();
		if (vc.pending_head == vc.pending_tail && vc.ctl_tx.nr_free == vc.ctl_tx.r.num &&
		    !sring_pending(&vc.ctl_rx.r))
			return;
		/* memory only, no MMIO: QEMU's main loop needs its big lock */
		for (uint64_t t = time_now(); time_now() - t < timebase / 20000;)
			;
	}
}

static bool node_reg(const void *fdt, int node, uint64_t *base, uint64_t *size)
{
	int parent = fdt_parent_offset(fdt, node);
	int ac = parent >= 0 ? fdt_address_cells(fdt, parent) : -1;
	int sc = parent >= 0 ? fdt_size_cells(fdt, parent) : -1;
	int len;
	const fdt32_t *p = fdt_getprop(fdt, node, "reg", &len);

	if (!p || ac < 1 || ac > 2 || sc < 1 || sc > 2 || len < 4 * (ac + sc))
		return false;
	*base = ac == 2 ? (uint64_t)fdt32_to_cpu(p[0]) << 32 | fdt32_to_cpu(p[1]) :
			  fdt32_to_cpu(p[0]);
	p += ac;
	*size = sc == 2 ? (uint64_t)fdt32_to_cpu(p[0]) << 32 | fdt32_to_cpu(p[1]) :
			  fdt32_to_cpu(p[0]);
	return true;
}

/* "interrupts" and its "interrupt-parent" (this node's or an ancestor's), as
 * QEMU virt's virtio-mmio nodes have them: one cell (the source) for a PLIC,
 * two (source, trigger) for an APLIC. Which the parent takes is boot's to
 * check (it knows the host's controller). */
static void node_irq(const void *fdt, int node)
{
	int len;
	const fdt32_t *irq = fdt_getprop(fdt, node, "interrupts", &len);
	const fdt32_t *parent = NULL;

	vc.irq = irq && (len == 4 || len == 8) ? (int64_t)fdt32_to_cpu(irq[0]) : -1;
	vc.irq_type = vc.irq >= 0 && len == 8 ? fdt32_to_cpu(irq[1]) : 0;
	vc.irq_parent = 0;
	for (int n = node; n >= 0 && !parent; n = fdt_parent_offset(fdt, n))
		parent = fdt_getprop(fdt, n, "interrupt-parent", &len);
	if (parent && len == 4)
		vc.irq_parent = fdt32_to_cpu(parent[0]);
}

bool vcon_init(const void *fdt, uint64_t timebase)
{
	for (int node = fdt_node_offset_by_compatible(fdt, -1, "virtio,mmio"); node >= 0;
	     node = fdt_node_offset_by_compatible(fdt, node, "virtio,mmio")) {
		int len;
		const char *status = fdt_getprop(fdt, node, "status", &len);
		uint64_t base, size;
		volatile uint32_t *regs;

		if (status && len > 0 && strncmp(status, "okay", (size_t)len) &&
		    strncmp(status, "ok", (size_t)len))
			continue;
		if (!node_reg(fdt, node, &base, &size) || size < VIRTIO_MMIO_CONFIG + 8 ||
		    base % 4)
			continue;
		regs = (volatile uint32_t *)(uintptr_t)base;
		if (regs[VIRTIO_MMIO_MAGIC_VALUE / 4] != VIRTIO_MMIO_MAGIC ||
		    regs[VIRTIO_MMIO_DEVICE_ID / 4] != VIRTIO_ID_CONSOLE)
			continue;
		if (regs[VIRTIO_MMIO_VERSION / 4] != VIRTIO_MMIO_VERSION_MODERN) {
			pr_info("vcon: virtio console at 0x%lx is legacy (version %u): not used "
				"(QEMU: -global virtio-mmio.force-legacy=false)",
				(unsigned long)base, regs[VIRTIO_MMIO_VERSION / 4]);
			continue;
		}
		if (!vcon_start((uintptr_t)base))
			continue;
		vc.timebase = timebase;
		node_irq(fdt, node);
		vcon_settle(timebase);
		if (!vc.up)
			continue;
		pr_info("vcon: virtio-serial at 0x%lx, max %u ports", (unsigned long)base,
			vc.max_ports);
		for (unsigned int n = 0; n < VCON_MAX_PORTS; n++)
			if (vc.port[n].present)
				pr_info("vcon: port %u %s%s%s%s, %s", n,
					vc.port[n].name[0] ? "\"" : "",
					vc.port[n].name[0] ? vc.port[n].name : "(no name)",
					vc.port[n].name[0] ? "\"" : "",
					vc.port[n].is_console ? " (console)" : "",
					vc.port[n].host_open ? "client connected" : "no client");
		return true;
	}
	return false;
}

/* --- API ----------------------------------------------------------------------- */

/* The device's interrupt status, acknowledged: its line goes low. */
static uint32_t ack_interrupt(void)
{
	uint32_t isr = rd(VIRTIO_MMIO_INTERRUPT_STATUS);

	if (isr)
		wr(VIRTIO_MMIO_INTERRUPT_ACK, isr);
	return isr;
}

void vcon_poll(void)
{
	uint32_t isr;

	if (!vc.up)
		return;
	ctl_poll();
	ctl_flush();
	for (unsigned int n = 0; n < VCON_MAX_PORTS; n++) {
		if (!vc.port[n].present)
			continue;
		tx_reclaim(&vc.port[n]);
		rx_harvest(n);
	}
	/* Notice a device that gave up (config change + NEEDS_RESET): from what
	 * the handler acknowledged, else by a look at the status, which lowers
	 * the line too. That look is an exit into the device model, under
	 * QEMU's big lock, which its I/O thread needs to move the port's bytes:
	 * a restore polls here without pause, and a look at every poll took the
	 * lock tens of thousands of times a second, away from the thread
	 * feeding the stream. So at most once a millisecond (an interrupt
	 * wakes hart 0 all the same, and its handler acknowledges it). */
	isr = vc.isr_taken;
	vc.isr_taken = 0;
	if (time_now() - vc.isr_read >= vc.timebase / 1000) {
		vc.isr_read = time_now();
		isr |= ack_interrupt();
	}
	if (!isr)
		return;
	if ((isr & 2) && (rd(VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_NEEDS_RESET)) {
		pr_info("vcon: device needs a reset: management channel down");
		vc.up = false;
	}
}

void vcon_interrupt(void *ctx)
{
	(void)ctx;
	if (!vc.base)
		return;
	/* acknowledged even when the device is out of service: a line left
	 * high would interrupt hart 0 without end */
	vc.isr_taken |= ack_interrupt();	/* vcon_poll() looks at what it said */
}

int64_t vcon_irq(uint32_t *parent, uint32_t *type)
{
	*parent = vc.irq_parent;
	*type = vc.irq_type;
	return vc.up ? vc.irq : -1;
}

static struct vcon_port *port_get(int port)
{
	if (!vc.up || port < 0 || port >= VCON_MAX_PORTS || !vc.port[port].present)
		return NULL;
	return &vc.port[port];
}

int vcon_port_find(const char *name)
{
	for (int n = 0; vc.up && n < VCON_MAX_PORTS; n++)
		if (vc.port[n].present && vc.port[n].name[0] && !strcmp(vc.port[n].name, name))
			return n;
	return -1;
}

bool vcon_port_connected(int port)
{
	if (vc.up)
		ctl_poll();
	return port_get(port) && vc.port[port].host_open;
}

unsigned int vcon_port_generation(int port)
{
	if (vc.up)
		ctl_poll();
	return port_get(port) ? vc.port[port].gen : 0;
}

unsigned int vcon_read_generation(int port)
{
	struct vcon_port *p = port_get(port);

	if (!p)
		return 0;
	rx_harvest((unsigned int)port);
	if (p->fifo_head != p->fifo_tail)
		return p->fifo[p->fifo_head % VCON_BUFS].gen;
	return p->gen;
}

size_t vcon_read(int port, void *buf, size_t len)
{
	struct vcon_port *p = port_get(port);
	uint8_t *out = buf;
	unsigned int gen;
	size_t n = 0;

	if (!p || !len || p->fifo_head == p->fifo_tail)
		return 0;
	gen = p->fifo[p->fifo_head % VCON_BUFS].gen;
	while (n < len && p->fifo_head != p->fifo_tail) {
		struct rx_chunk *c = &p->fifo[p->fifo_head % VCON_BUFS];
		size_t k;

		if (c->gen != gen)
			break;
		k = MIN((size_t)(c->len - p->fifo_off), len - n);
		memcpy(out + n, p->rx.buf + (size_t)c->id * p->rx.buf_size + p->fifo_off, k);
		n += k;
		p->fifo_off += (uint32_t)k;
		if (p->fifo_off == c->len) {
			vq_add(&p->rx, c->id, p->rx.buf_size);
			p->fifo_head++;
			p->fifo_off = 0;
		}
	}
	vq_kick(&p->rx);
	return n;
}

bool vcon_port_tx_buffers(int port, void *bufs, uint32_t size)
{
	struct vcon_port *p = port_get(port);

	if (!p || !bufs || !size)
		return false;
	tx_reclaim(p);
	if (p->tx.nr_free != p->tx.r.num)
		return false;	/* the device may still read the old ones */
	p->tx.buf = bufs;
	p->tx.buf_size = size;
	return true;
}

size_t vcon_write(int port, const void *buf, size_t len)
{
	struct vcon_port *p = port_get(port);
	const uint8_t *in = buf;
	size_t n = 0;

	if (!p || !len)
		return 0;
	/* With no client QEMU drops whatever we send, so do we (a fresh look
	 * at the control ring first: a client may just have connected). */
	ctl_poll();
	if (!p->host_open)
		return len;
	tx_reclaim(p);
	while (n < len && p->tx.nr_free) {
		uint16_t id = p->tx.free_ids[--p->tx.nr_free];
		size_t k = MIN(len - n, (size_t)p->tx.buf_size);

		memcpy(p->tx.buf + (size_t)id * p->tx.buf_size, in + n, k);
		vq_add(&p->tx, id, (uint32_t)k);
		n += k;
	}
	vq_kick(&p->tx);
	return n;
}
