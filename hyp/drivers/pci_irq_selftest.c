/* SPDX-License-Identifier: MIT */
/* A host PCI INTx, end to end (tests/guests/test_host_irq.py): one read of
 * sector 0 from the first virtio-blk device, whose completion QEMU signals on
 * INTx (no MSI-X is enabled), routed by the bridge's interrupt-map to a PLIC
 * source. NR_REQUESTS times, each sent from the last one's handler, so the
 * answers come while hart 0 does whatever it does then (runs a guest, sleeps,
 * serves the host); the last handler reports where they were taken. Debug
 * hook: a minimal driver (one queue of 4, one request at a time, the device
 * reset afterwards), never used outside the test. */
#include <log.h>
#include <string.h>
#include <errno.h>
#include <host_irq.h>
#include <pci_irq_selftest.h>
#include <virtio_mmio.h>

/* virtio-pci common configuration (virtio 1.2 4.1.4.3) */
#define VPCI_DFSELECT		0x00
#define VPCI_DF			0x04
#define VPCI_GFSELECT		0x08
#define VPCI_GF			0x0c
#define VPCI_STATUS		0x14	/* u8 */
#define VPCI_Q_SELECT		0x16	/* le16 */
#define VPCI_Q_SIZE		0x18
#define VPCI_Q_ENABLE		0x1c
#define VPCI_Q_NOFF		0x1e
#define VPCI_Q_DESC		0x20	/* le64 each */
#define VPCI_Q_AVAIL		0x28
#define VPCI_Q_USED		0x30
#define VPCI_COMMON_LEN		0x38

#define VIRTIO_ID_BLOCK		2
#define QSIZE			4

struct blk_req_hdr {
	uint32_t type;		/* 0: read */
	uint32_t reserved;
	uint64_t sector;
};

static struct {
	struct virtq_desc desc[QSIZE] __attribute__((aligned(16)));
	struct virtq_avail avail __attribute__((aligned(2)));
	struct virtq_used used __attribute__((aligned(4)));
	struct blk_req_hdr hdr;
	uint8_t data[512];
	volatile uint8_t status;
} q __attribute__((aligned(4096)));

/* each sent from the last one's handler; more than one host_irq_handle()
 * call takes (HOST_IRQ_MAX_CLAIMS), so some answers come after that call */
#define NR_REQUESTS	16

static const struct pci_func *dev;
static uintptr_t common, isr, notify;
static unsigned int answered, bad, at_exit, in_loop;

static void w8(uintptr_t a, uint8_t v) { *(volatile uint8_t *)a = v; }
static void w16(uintptr_t a, uint16_t v) { *(volatile uint16_t *)a = v; }
static void w32(uintptr_t a, uint32_t v) { *(volatile uint32_t *)a = v; }
static uint8_t r8(uintptr_t a) { return *(volatile uint8_t *)a; }
static uint16_t r16(uintptr_t a) { return *(volatile uint16_t *)a; }
static uint32_t r32(uintptr_t a) { return *(volatile uint32_t *)a; }

static void w64(uintptr_t a, uint64_t v)
{
	w32(a, (uint32_t)v);
	w32(a + 4, (uint32_t)(v >> 32));
}

static uintptr_t cap_addr(const struct pci_func *f, enum virtio_pci_cap c)
{
	return (uintptr_t)(f->bar[f->cap[c].bar].cpu + f->cap[c].offset);
}

/* Request @n (1-based): read sector 0 into q.data, descriptors 0-2. */
static void send(unsigned int n)
{
	q.status = 0xff;
	memset(q.data, 0, sizeof(q.data));
	q.avail.ring[(n - 1) % QSIZE] = 0;
	asm volatile("fence w, w" ::: "memory");
	q.avail.idx = (uint16_t)n;
	asm volatile("fence w, o" ::: "memory");	/* the ring before the doorbell */
	w16(notify, 0);
}

static void on_irq(void *ctx)
{
	const struct pci_func *f = ctx;
	uint8_t why = r8(isr);	/* reading clears it: the line drops */
	uint16_t used = *(volatile uint16_t *)&q.used.idx;

	if (!(why & 1) || used != answered + 1)
		return;		/* not a used-buffer interrupt, or nothing new */
	answered++;
	bad += q.status != 0;
	if (host_irq_polling())
		in_loop++;
	else
		at_exit++;
	if (answered < NR_REQUESTS) {
		send(answered + 1);
		return;
	}
	w8(common + VPCI_STATUS, 0);	/* reset: the device is left as it was found */
	/* sector 0's first bytes: the device wrote our buffer (DMA) */
	pr_info("pci irq selftest: %02x:%02x.%x INT%c irq %ld: %u requests answered, %u with "
		"an error, data %02x%02x%02x%02x; taken at a guest exit %u, in the scheduler's "
		"loop %u", f->bus, f->dev, f->fn, 'A' + f->int_pin - 1, (long)f->int_irq, answered,
		bad, q.data[0], q.data[1], q.data[2], q.data[3], at_exit, in_loop);
}

static const char *start(const struct pci_func *f)
{
	uintptr_t c = cap_addr(f, VPCI_COMMON);
	uint16_t size;

	if (f->cap[VPCI_COMMON].length < VPCI_COMMON_LEN || !f->cap[VPCI_ISR].found ||
	    !f->cap[VPCI_NOTIFY].found)
		return "virtio structures missing";
	w8(c + VPCI_STATUS, 0);
	w8(c + VPCI_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	w32(c + VPCI_DFSELECT, 1);
	if (!(r32(c + VPCI_DF) & 1))
		return "no VIRTIO_F_VERSION_1";
	w32(c + VPCI_GFSELECT, 0);
	w32(c + VPCI_GF, 0);
	w32(c + VPCI_GFSELECT, 1);
	w32(c + VPCI_GF, 1);	/* VERSION_1 and nothing else */
	w8(c + VPCI_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
			    VIRTIO_STATUS_FEATURES_OK);
	if (!(r8(c + VPCI_STATUS) & VIRTIO_STATUS_FEATURES_OK))
		return "features refused";
	w16(c + VPCI_Q_SELECT, 0);
	size = r16(c + VPCI_Q_SIZE);
	if (size < QSIZE)
		return "queue 0 too small";
	w16(c + VPCI_Q_SIZE, QSIZE);
	memset(&q, 0, sizeof(q));
	w64(c + VPCI_Q_DESC, (uintptr_t)q.desc);
	w64(c + VPCI_Q_AVAIL, (uintptr_t)&q.avail);
	w64(c + VPCI_Q_USED, (uintptr_t)&q.used);
	w16(c + VPCI_Q_ENABLE, 1);
	w8(c + VPCI_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
			    VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
	/* header (device reads), data and status (device writes) */
	q.hdr = (struct blk_req_hdr){ 0, 0, 0 };
	q.desc[0] = (struct virtq_desc){ (uintptr_t)&q.hdr, sizeof(q.hdr), VIRTQ_DESC_F_NEXT, 1 };
	q.desc[1] = (struct virtq_desc){ (uintptr_t)q.data, sizeof(q.data),
					 VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 2 };
	q.desc[2] = (struct virtq_desc){ (uintptr_t)&q.status, 1, VIRTQ_DESC_F_WRITE, 0 };
	notify = cap_addr(f, VPCI_NOTIFY) +
		 (uintptr_t)r16(c + VPCI_Q_NOFF) * f->notify_off_multiplier;
	send(1);
	return NULL;
}

void pci_irq_selftest_start(uint32_t plic_phandle, const struct pci_host_desc *desc)
{
	unsigned int nr;
	const struct pci_func *funcs = pci_host_funcs(&nr);
	const char *why = NULL;
	int rc;

	for (unsigned int i = 0; i < nr && !dev; i++)
		if (funcs[i].virtio_type == VIRTIO_ID_BLOCK && !funcs[i].bar_error)
			dev = &funcs[i];
	if (!dev) {
		pr_info("pci irq selftest: no virtio-blk device");
		return;
	}
	for (unsigned int i = 0; i < desc->nr_intx; i++)
		if (desc->intx[i].parent != plic_phandle)
			why = "the bridge's INTx do not go to the host PLIC";
	if (!why && dev->int_irq < 0)
		why = "its INTx is not routed";
	rc = why ? 0 : host_irq_register((uint32_t)dev->int_irq, on_irq, (void *)dev);
	if (rc)
		why = rc == -HYP_ENOENT ? "no host PLIC context" : "cannot register its source";
	if (!why) {
		common = cap_addr(dev, VPCI_COMMON);
		isr = cap_addr(dev, VPCI_ISR);
		why = start(dev);
	}
	if (why)
		pr_info("pci irq selftest: %02x:%02x.%x: %s", dev->bus, dev->dev, dev->fn, why);
	else
		pr_info("pci irq selftest: %02x:%02x.%x INT%c irq %ld registered, request sent",
			dev->bus, dev->dev, dev->fn, 'A' + dev->int_pin - 1, (long)dev->int_irq);
}
