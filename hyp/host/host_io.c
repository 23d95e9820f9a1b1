/* SPDX-License-Identifier: MIT */
/* Switches, uplinks and host device interrupts at boot (host_io.h). */
#include <errno.h>
#include <host_io.h>
#include <host_irq.h>
#include <hostblk.h>
#include <hostnet.h>
#include <log.h>
#include <vm_lifecycle.h>
#include <vswitch.h>

/* An uplink: the switch's port whose frames go to and come from a host NIC. */
struct uplink {
	struct vswitch_port port;
	struct hostnet *nic;
};

static struct uplink uplinks[HOST_MAX_SWITCHES];

/* From the switch to the host NIC: dropped (and counted by the driver) when
 * its ring is full; a switch never waits for the host. */
static void uplink_deliver(void *ctx, const void *frame, uint32_t len)
{
	struct uplink *u = ctx;

	hostnet_tx(u->nic, frame, len);
}

/* From the host NIC into the switch (hart 0, the NIC's interrupt). */
static void uplink_rx(void *ctx, const void *frame, uint32_t len)
{
	struct uplink *u = ctx;

	vswitch_tx(&u->port, frame, len);
}

static void create_switch(const struct host_switch *hs, struct uplink *u)
{
	struct vswitch *sw;
	uint8_t mac[6];
	int rc = vswitch_create(hs->name, &sw);

	if (rc) {
		pr_info("switch %s: not created (%d)", hs->name, rc);
		return;
	}
	if (!hs->uplink_pci) {
		pr_info("switch %s: no uplink", hs->name);
		return;
	}
	u->nic = hostnet_by_slot(hs->uplink_pci);
	if (!u->nic) {
		pr_info("switch %s: no uplink (no virtio-net-pci at 00:%02x.0)", hs->name,
			hs->uplink_pci);
		return;
	}
	hostnet_mac(u->nic, mac);
	vswitch_port_init(&u->port, VSWITCH_PORT_UPLINK, mac, uplink_deliver, u);
	rc = vswitch_attach(sw, &u->port);
	if (rc) {
		pr_info("switch %s: uplink refused (%d)", hs->name, rc);
		return;
	}
	hostnet_set_rx(u->nic, uplink_rx, u);
	pr_info("switch %s: uplink 00:%02x.0, %02x:%02x:%02x:%02x:%02x:%02x", hs->name,
		hs->uplink_pci, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

/* Slots whose interrupt is not routed to a handler: polled by host_io_poll(). */
static uint32_t polled_slots;

static void poll_slot(unsigned int dev)
{
	struct hostblk *b = hostblk_by_slot(dev);
	struct hostnet *n = hostnet_by_slot(dev);

	if (b)
		hostblk_poll(b);
	if (n)
		hostnet_poll(n);
}

/* The devices on each routed line, found once at boot: QEMU virt's bridge
 * shares four lines among all slots, so a line's handler polls each device
 * on it (a poll of a device with nothing done is a read of its used index),
 * from this list rather than a search of every slot on every interrupt. */
struct intx_line {
	int64_t irq;
	unsigned int nr;
	struct hostblk *blk[HOST_PCI_DEV_MAX];
	struct hostnet *net[HOST_PCI_DEV_MAX];
};

static struct intx_line lines[HOST_PCI_DEV_MAX];
static unsigned int nr_lines;

static void intx(void *ctx)
{
	const struct intx_line *l = ctx;
	unsigned int nr = __atomic_load_n(&l->nr, __ATOMIC_ACQUIRE);

	for (unsigned int i = 0; i < nr; i++) {
		if (l->blk[i])
			hostblk_poll(l->blk[i]);
		if (l->net[i])
			hostnet_poll(l->net[i]);
	}
}

/* The phandle of the controller host_irq uses, 0 if none. */
static uint32_t host_intc_phandle(const struct host_info *hi)
{
	switch (host_irq_chip()) {
	case HOST_IRQ_PLIC:
		return hi->plic.phandle;
	case HOST_IRQ_AIA:
		return hi->aplic.phandle;
	default:
		return 0;
	}
}

bool host_io_intx_routed(const struct host_info *hi)
{
	uint32_t intc = host_intc_phandle(hi);

	if (!intc || !hi->pci.nr_intx)
		return false;
	for (unsigned int i = 0; i < hi->pci.nr_intx; i++)
		if (hi->pci.intx[i].parent != intc)
			return false;
	return true;
}

/* The trigger the interrupt-map gives @irq (every route to one source has
 * the same). */
static uint32_t intx_type(const struct host_info *hi, int64_t irq)
{
	for (unsigned int i = 0; i < hi->pci.nr_intx; i++)
		if (hi->pci.intx[i].irq == irq)
			return hi->pci.intx[i].type;
	return HOST_IRQ_LEVEL_HIGH;
}

/* Routed: the device is on the list of @irq's line, whose handler is
 * registered with its first device (docs/architecture.md: shared lines). */
static bool route_irq(const struct host_info *hi, int64_t irq, struct hostblk *b,
		      struct hostnet *n)
{
	struct intx_line *l = NULL;
	int rc;

	if (irq < 0)
		return false;
	for (unsigned int i = 0; i < nr_lines && !l; i++)
		if (lines[i].irq == irq)
			l = &lines[i];
	if (!l)
		l = &lines[nr_lines];
	l->blk[l->nr] = b;
	l->net[l->nr] = n;
	/* listed before it is polled: the handler reads nr first */
	__atomic_store_n(&l->nr, l->nr + 1, __ATOMIC_RELEASE);
	if (l != &lines[nr_lines])
		return true;
	l->irq = irq;
	rc = host_irq_register_type((uint32_t)irq, intx_type(hi, irq), intx, l);
	if (rc) {
		pr_info("host interrupt %ld: not routed (%d)", (long)irq, rc);
		l->nr = 0;
		return false;
	}
	nr_lines++;
	return true;
}

void host_io_init(const struct host_info *hi)
{
	/* the numbers of an interrupt-map that names another controller are
	 * not the sources of the one host_irq uses */
	bool routed = host_io_intx_routed(hi);

	for (unsigned int i = 0; i < hi->nr_switches; i++)
		create_switch(&hi->switches[i], &uplinks[i]);
	for (unsigned int dev = HOST_PCI_DEV_MIN; dev <= HOST_PCI_DEV_MAX; dev++) {
		struct hostblk *b = hostblk_by_slot(dev);
		struct hostnet *n = hostnet_by_slot(dev);
		int64_t irq = b ? hostblk_irq(b) : n ? hostnet_irq(n) : -1;

		if (!b && !n)
			continue;
		if (!routed || !route_irq(hi, irq, b, n)) {
			polled_slots |= 1u << dev;
			pr_info("host device 00:%02x.0: no interrupt (%s): polled every millisecond",
				dev, routed ? "not routed" :
				"the bridge's INTx do not go to the host's interrupt controller");
		}
	}
}

void host_io_poll(void)
{
	for (unsigned int dev = HOST_PCI_DEV_MIN; polled_slots && dev <= HOST_PCI_DEV_MAX; dev++)
		if (polled_slots & 1u << dev)
			poll_slot(dev);
}
