/* SPDX-License-Identifier: MIT */
/* Host PCIe: scan the first bus of the generic ECAM bridge, assign memory BARs
 * from the DT's windows (on QEMU virt no firmware does), turn on decode and bus
 * mastering, and find each virtio-pci device's structures (virtio 1.2 4.1.4).
 *
 * Config space is device data. The capability walk visits each dword at most
 * once (a list that loops ends), starts no capability below 0x40 and reads no
 * field past 256 bytes; a virtio capability is used only if its BAR is an
 * assigned memory BAR and offset + length lies inside it. A BAR is placed only
 * if its size is a power of two that fits its window, with no overflow. */
#include <errno.h>
#include <log.h>
#include <printf.h>
#include <pci_host.h>

#define PCI_ID			0x00
#define PCI_COMMAND		0x04	/* low half; status in the high half */
#define  PCI_CMD_IO		(1u << 0)
#define  PCI_CMD_MEM		(1u << 1)
#define  PCI_CMD_MASTER		(1u << 2)
#define  PCI_STATUS_CAPS	(1u << (16 + 4))
#define PCI_CLASS		0x08	/* class code in bits 31:8 */
#define PCI_HEADER		0x0c	/* header type in bits 23:16 */
#define  PCI_HEADER_MULTI	0x80
#define PCI_BAR0		0x10
#define  PCI_BAR_IO		(1u << 0)
#define  PCI_BAR_TYPE		(3u << 1)
#define  PCI_BAR_TYPE_64	(2u << 1)
#define  PCI_BAR_PREFETCH	(1u << 3)
#define PCI_SUBSYS		0x2c	/* subsystem ID in bits 31:16 */
#define PCI_CAP_PTR		0x34
#define PCI_INT_PIN		0x3d	/* byte: 0 none, 1..4 INTA..INTD */
#define PCI_CAP_FIRST		0x40	/* capabilities live after the header */
#define PCI_CAP_VENDOR		0x09

/* struct virtio_pci_cap (virtio 1.2 4.1.4): id, next, len, cfg_type; bar, id,
 * padding; offset; length; the notify capability adds a multiplier. */
#define VPCI_CAP_LEN		16
#define VPCI_NOTIFY_CAP_LEN	20
#define VPCI_COMMON_NUM_QUEUES	0x12	/* le16 in the common configuration */

#define FOUR_GIB		(1ull << 32)

static uint32_t cfg_rd(const struct pci_cfg *c, unsigned int off)
{
	return c->read32(c->ctx, off & ~3u);
}

static void cfg_wr(const struct pci_cfg *c, unsigned int off, uint32_t v)
{
	c->write32(c->ctx, off & ~3u, v);
}

static uint8_t cfg_rd8(const struct pci_cfg *c, unsigned int off)
{
	return (uint8_t)(cfg_rd(c, off) >> (8 * (off & 3)));
}

static void set_command(const struct pci_cfg *c, uint16_t set, uint16_t clear)
{
	/* the status half is write-1-to-clear: write zeros there */
	uint16_t cmd = (uint16_t)cfg_rd(c, PCI_COMMAND);

	cfg_wr(c, PCI_COMMAND, (uint16_t)((cmd & ~clear) | set));
}

int pci_window_alloc(struct pci_window *w, uint64_t size, uint64_t *addr)
{
	uint64_t start;

	if (!w->size || !size || (size & (size - 1)) || w->used > w->size)
		return -HYP_ENOMEM;
	if (w->pci_base + w->used > UINT64_MAX - (size - 1))
		return -HYP_ENOMEM;
	start = ALIGN_UP(w->pci_base + w->used, size);
	/* start >= pci_base: the window's end is pci_base + size, no overflow (DT) */
	if (start - w->pci_base > w->size || size > w->size - (start - w->pci_base))
		return -HYP_ENOMEM;
	w->used = start - w->pci_base + size;
	*addr = start;
	return 0;
}

/* The size a memory BAR decodes, from its read-back @mask (type bits
 * cleared, upper 32 bits all ones for a 32-bit BAR); 0 if not implemented
 * or not a power of two. */
static uint64_t bar_size(uint64_t mask, bool is64)
{
	uint64_t size;

	if (!(is64 ? mask : mask & 0xffffffffull))
		return 0;
	size = ~mask + 1;
	return size & (size - 1) ? 0 : size;
}

static bool place_bar(struct pci_bar *b, struct pci_window *mem32, struct pci_window *mem64)
{
	struct pci_window *w = NULL;
	uint64_t addr;

	if (b->is64 && !pci_window_alloc(mem64, b->size, &addr))
		w = mem64;
	else if (!pci_window_alloc(mem32, b->size, &addr))
		w = mem32;
	/* a 32-bit BAR cannot hold an address at or above 4 GiB */
	if (!w || (!b->is64 && (addr >= FOUR_GIB || b->size > FOUR_GIB - addr)))
		return false;
	b->addr = addr;
	b->cpu = w->cpu_base + (addr - w->pci_base);
	return true;
}

void pci_assign_bars(const struct pci_cfg *cfg, struct pci_func *f,
		     struct pci_window *mem32, struct pci_window *mem64)
{
	uint32_t orig[PCI_NR_BARS];

	set_command(cfg, 0, PCI_CMD_IO | PCI_CMD_MEM | PCI_CMD_MASTER);	/* no decode while sizing */
	for (unsigned int i = 0; i < PCI_NR_BARS; i++)
		orig[i] = cfg_rd(cfg, PCI_BAR0 + 4 * i);
	for (unsigned int i = 0; i < PCI_NR_BARS; i++) {
		struct pci_bar *b = &f->bar[i];
		unsigned int reg = PCI_BAR0 + 4 * i;
		uint64_t mask;

		if (orig[i] & PCI_BAR_IO) {
			b->io = true;		/* port I/O: not used on RISC-V */
			continue;
		}
		if ((orig[i] & PCI_BAR_TYPE) && (orig[i] & PCI_BAR_TYPE) != PCI_BAR_TYPE_64) {
			f->bar_error = "BAR of a reserved type";
			break;
		}
		b->is64 = (orig[i] & PCI_BAR_TYPE) == PCI_BAR_TYPE_64;
		b->prefetch = orig[i] & PCI_BAR_PREFETCH;
		if (b->is64 && i == PCI_NR_BARS - 1) {
			f->bar_error = "64-bit BAR in the last slot";
			break;
		}
		cfg_wr(cfg, reg, 0xffffffffu);
		mask = cfg_rd(cfg, reg) & ~0xfull;
		cfg_wr(cfg, reg, orig[i]);
		if (b->is64) {
			cfg_wr(cfg, reg + 4, 0xffffffffu);
			mask |= (uint64_t)cfg_rd(cfg, reg + 4) << 32;
			cfg_wr(cfg, reg + 4, orig[i + 1]);
		} else {
			mask |= 0xffffffffull << 32;
		}
		b->size = bar_size(mask, b->is64);
		if (b->size && !place_bar(b, mem32, mem64)) {
			f->bar_error = "BAR does not fit its window";
			b->size = 0;
			break;
		}
		if (b->size) {
			cfg_wr(cfg, reg, (uint32_t)b->addr | (orig[i] & 0xfu));
			if (b->is64)
				cfg_wr(cfg, reg + 4, (uint32_t)(b->addr >> 32));
		}
		if (b->is64)
			i++;		/* the upper half is not a BAR of its own */
	}
	if (f->bar_error) {
		for (unsigned int i = 0; i < PCI_NR_BARS; i++)
			f->bar[i].size = 0;
		return;
	}
	set_command(cfg, PCI_CMD_MEM | PCI_CMD_MASTER, 0);
}

/* A virtio capability's structure, if it lies inside an assigned memory BAR. */
static bool vcap_usable(const struct pci_func *f, uint8_t bar, uint32_t off, uint32_t len)
{
	return bar < PCI_NR_BARS && f->bar[bar].size && !f->bar[bar].io &&
	       (uint64_t)off + len <= f->bar[bar].size;
}

static void virtio_cap(const struct pci_cfg *cfg, struct pci_func *f, unsigned int pos)
{
	uint32_t head = cfg_rd(cfg, pos);
	uint8_t len = (uint8_t)(head >> 16), type = (uint8_t)(head >> 24);
	struct virtio_pci_loc *loc;
	uint8_t bar;
	uint32_t off, length;

	if (type < 1 || type > VPCI_NR_CAPS || len < VPCI_CAP_LEN || pos + len > PCI_CFG_SIZE)
		return;		/* another structure (PCI cfg access...), or cut off */
	loc = &f->cap[type - 1];
	if (loc->found)
		return;		/* the first usable one counts (virtio 1.2 4.1.4) */
	bar = cfg_rd8(cfg, pos + 4);
	off = cfg_rd(cfg, pos + 8);
	length = cfg_rd(cfg, pos + 12);
	if (!vcap_usable(f, bar, off, length))
		return;
	if (type - 1 == VPCI_NOTIFY) {
		if (len < VPCI_NOTIFY_CAP_LEN)
			return;
		f->notify_off_multiplier = cfg_rd(cfg, pos + 16);
	}
	*loc = (struct virtio_pci_loc){ .found = true, .bar = bar, .offset = off, .length = length };
}

void pci_virtio_caps(const struct pci_cfg *cfg, struct pci_func *f)
{
	uint64_t seen = 0;		/* one bit per dword of config space */
	unsigned int pos;

	if (!(cfg_rd(cfg, PCI_COMMAND) & PCI_STATUS_CAPS))
		return;
	for (pos = cfg_rd8(cfg, PCI_CAP_PTR) & ~3u; pos; ) {
		uint32_t head;

		if (pos < PCI_CAP_FIRST) {
			f->cap_error = "capability inside the header";
			return;
		}
		if (seen & (1ull << (pos / 4))) {
			f->cap_error = "capability list loops";
			return;
		}
		seen |= 1ull << (pos / 4);
		head = cfg_rd(cfg, pos);
		if ((head & 0xff) == PCI_CAP_VENDOR && f->virtio_type)
			virtio_cap(cfg, f, pos);
		pos = (head >> 8) & 0xfc;
	}
}

unsigned int pci_virtio_type(uint16_t vendor, uint16_t device, uint16_t subsys)
{
	if (vendor != PCI_VENDOR_VIRTIO)
		return 0;
	if (device >= 0x1040 && device <= 0x107f)
		return device - 0x1040u;		/* modern: 0x1040 + type */
	if (device >= 0x1000 && device <= 0x103f)
		return subsys;				/* transitional: subsystem ID */
	return 0;
}

int64_t pci_intx_irq(const struct pci_host_desc *desc, unsigned int bus, unsigned int dev,
		     unsigned int fn, unsigned int pin)
{
	uint32_t hi = (bus << 16 | dev << 11 | fn << 8) & desc->intx_mask_hi;

	pin &= desc->intx_mask_pin;
	for (unsigned int i = 0; i < desc->nr_intx && i < PCI_MAX_INTX; i++)
		if (desc->intx[i].addr_hi == hi && desc->intx[i].pin == pin)
			return desc->intx[i].irq;
	return -1;
}

void pci_probe_func(const struct pci_cfg *cfg, struct pci_func *f,
		    struct pci_window *mem32, struct pci_window *mem64)
{
	uint32_t id = cfg_rd(cfg, PCI_ID);

	f->vendor = (uint16_t)id;
	f->device = (uint16_t)(id >> 16);
	f->class_code = cfg_rd(cfg, PCI_CLASS) >> 8;
	f->header_type = (cfg_rd8(cfg, PCI_HEADER + 2)) & 0x7f;
	f->int_pin = cfg_rd8(cfg, PCI_INT_PIN);
	if (f->int_pin > 4)
		f->int_pin = 0;		/* not a pin */
	if (f->header_type != 0)
		return;		/* bridges: what is behind them is not scanned */
	f->virtio_type = pci_virtio_type(f->vendor, f->device,
					 (uint16_t)(cfg_rd(cfg, PCI_SUBSYS) >> 16));
	pci_assign_bars(cfg, f, mem32, mem64);
	if (!f->bar_error)
		pci_virtio_caps(cfg, f);
}

#ifndef HOST_TEST
static struct pci_func funcs[PCI_MAX_FUNCS];
static unsigned int nr_funcs;

struct ecam_fn {
	uintptr_t base;		/* this function's 4 KiB of ECAM */
};

static uint32_t ecam_rd(void *ctx, unsigned int off)
{
	return *(volatile uint32_t *)(((struct ecam_fn *)ctx)->base + off);
}

static void ecam_wr(void *ctx, unsigned int off, uint32_t v)
{
	*(volatile uint32_t *)(((struct ecam_fn *)ctx)->base + off) = v;
}

static const char *const virtio_names[] = {
	[1] = "virtio-net", [2] = "virtio-blk", [3] = "virtio-console", [4] = "virtio-rng",
	[5] = "virtio-balloon", [8] = "virtio-scsi", [9] = "virtio-9p", [16] = "virtio-gpu",
	[18] = "virtio-input", [19] = "virtio-vsock",
};

static const char *func_name(const struct pci_func *f)
{
	if (f->virtio_type)
		return f->virtio_type < ARRAY_SIZE(virtio_names) && virtio_names[f->virtio_type] ?
		       virtio_names[f->virtio_type] : "virtio (other)";
	if (f->vendor == PCI_VENDOR_VIRTIO)
		return "virtio (unknown ID)";
	if (f->class_code >> 8 == 0x0600)
		return "host bridge";
	if (f->class_code >> 8 == 0x0604)
		return "PCI bridge (not scanned behind)";
	return "device";
}

static void report(const struct pci_func *f)
{
	static const char *const cap_names[VPCI_NR_CAPS] = { "common", "notify", "isr", "device" };
	char line[320];
	int n = snprintf(line, sizeof(line), "pci %02x:%02x.%x %s (%04x:%04x) class %06x",
			 f->bus, f->dev, f->fn, func_name(f), f->vendor, f->device, f->class_code);

	for (unsigned int i = 0; i < PCI_NR_BARS && n < (int)sizeof(line); i++)
		if (f->bar[i].size)
			n += snprintf(line + n, sizeof(line) - (size_t)n, ", BAR%u 0x%lx+0x%lx%s", i,
				      (unsigned long)f->bar[i].cpu, (unsigned long)f->bar[i].size,
				      f->bar[i].is64 ? " 64-bit" : "");
	if (f->bar_error && n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, ", BARs unassigned: %s",
			      f->bar_error);
	for (unsigned int c = 0; f->virtio_type && c < VPCI_NR_CAPS && n < (int)sizeof(line); c++)
		n += f->cap[c].found ?
		     snprintf(line + n, sizeof(line) - (size_t)n, ", %s BAR%u+0x%x", cap_names[c],
			      f->cap[c].bar, f->cap[c].offset) :
		     snprintf(line + n, sizeof(line) - (size_t)n, ", %s MISSING", cap_names[c]);
	if (f->int_pin && n < (int)sizeof(line))
		n += f->int_irq >= 0 ?
		     snprintf(line + n, sizeof(line) - (size_t)n, ", INT%c irq %lu",
			      'A' + f->int_pin - 1, (unsigned long)f->int_irq) :
		     snprintf(line + n, sizeof(line) - (size_t)n, ", INT%c not routed",
			      'A' + f->int_pin - 1);
	if (f->cap[VPCI_NOTIFY].found && n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, ", notify multiplier %u",
			      f->notify_off_multiplier);
	/* one read through the assigned BAR: proves decode is on and HS-mode reaches it */
	if (f->cap[VPCI_COMMON].found && f->cap[VPCI_COMMON].length >= VPCI_COMMON_NUM_QUEUES + 2 &&
	    n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, ", %u queues",
			      *(volatile uint16_t *)(uintptr_t)(f->bar[f->cap[VPCI_COMMON].bar].cpu +
							       f->cap[VPCI_COMMON].offset +
							       VPCI_COMMON_NUM_QUEUES));
	if (f->cap_error && n < (int)sizeof(line))
		snprintf(line + n, sizeof(line) - (size_t)n, ", capabilities cut: %s", f->cap_error);
	pr_info("%s", line);
}

unsigned int pci_host_init(const struct pci_host_desc *desc)
{
	struct pci_window mem32 = desc->mem32, mem64 = desc->mem64;
	unsigned int bus = desc->bus_start;	/* QEMU virt puts every device on it */

	nr_funcs = 0;
	if (!desc->present)
		return 0;
	pr_info("pci: ECAM 0x%lx+0x%lx, buses %u-%u, mem32 0x%lx+0x%lx, mem64 0x%lx+0x%lx",
		(unsigned long)desc->ecam_base, (unsigned long)desc->ecam_size, desc->bus_start,
		desc->bus_end, (unsigned long)mem32.cpu_base, (unsigned long)mem32.size,
		(unsigned long)mem64.cpu_base, (unsigned long)mem64.size);
	for (unsigned int dev = 0; dev < 32; dev++) {
		for (unsigned int fn = 0; fn < 8 && nr_funcs < PCI_MAX_FUNCS; fn++) {
			/* ECAM: bus relative to bus-range start, 1 MiB a bus, 4 KiB a function */
			struct ecam_fn e = { desc->ecam_base + ((uint64_t)(bus - desc->bus_start) << 20) +
					     ((uint64_t)dev << 15) + ((uint64_t)fn << 12) };
			struct pci_cfg cfg = { ecam_rd, ecam_wr, &e };
			struct pci_func *f = &funcs[nr_funcs];
			uint32_t id = cfg_rd(&cfg, PCI_ID);
			bool multi;

			if ((uint16_t)id == 0xffff || (uint16_t)id == 0) {
				if (!fn)
					break;	/* no function 0: no device */
				continue;	/* functions 1-7 may have gaps */
			}
			multi = cfg_rd8(&cfg, PCI_HEADER + 2) & PCI_HEADER_MULTI;
			*f = (struct pci_func){ .bus = (uint8_t)bus, .dev = (uint8_t)dev, .fn = (uint8_t)fn };
			pci_probe_func(&cfg, f, &mem32, &mem64);
			f->int_irq = f->int_pin ? pci_intx_irq(desc, bus, dev, fn, f->int_pin) : -1;
			report(f);
			nr_funcs++;
			if (!fn && !multi)
				break;
		}
	}
	return nr_funcs;
}

const struct pci_func *pci_host_funcs(unsigned int *nr)
{
	*nr = nr_funcs;
	return funcs;
}
#endif
