/* SPDX-License-Identifier: MIT */
/* The host's PCIe root complex (generic ECAM, QEMU virt's gpex): the devices on
 * its first bus, their memory BARs assigned from the DT's windows, and where a
 * virtio-pci device keeps its four structures (virtio 1.2 4.1.4). Boot only,
 * hart 0. Everything read from config space is device data: every value is
 * bounded before use (docs/architecture.md, "Host PCIe"). */
#ifndef HYP_PCI_HOST_H
#define HYP_PCI_HOST_H
#include <types.h>

/* One MMIO window of the bridge's "ranges": PCI bus address -> CPU address. */
struct pci_window {
	uint64_t pci_base;
	uint64_t cpu_base;
	uint64_t size;		/* 0: no such window */
	uint64_t used;		/* bytes from pci_base already handed out (bump) */
};

/* One interrupt-map entry: INTx of a (masked) device number to an interrupt
 * of the bridge's parent controller (QEMU virt: a PLIC source). */
struct pci_intx_route {
	uint32_t addr_hi;	/* phys.hi, already masked (bus/device/function bits) */
	uint32_t pin;		/* 1..4 = INTA..INTD, already masked */
	uint32_t irq;		/* the parent's first interrupt cell: its source */
	uint32_t type;		/* a two-cell parent's second (HOST_IRQ_*), else level-high */
	uint32_t parent;	/* the parent's phandle (the host PLIC's or APLIC's) */
};

#define PCI_MAX_INTX	32

/* What the host DT says about the bridge (fdt_host.c fills it). */
struct pci_host_desc {
	bool present;
	uint64_t ecam_base, ecam_size;
	uint32_t bus_start, bus_end;	/* bus-range */
	struct pci_window mem32;	/* non-prefetchable, below 4 GiB */
	struct pci_window mem64;	/* 64-bit (QEMU virt: the high window) */
	uint32_t intx_mask_hi, intx_mask_pin;	/* interrupt-map-mask: phys.hi, pin */
	struct pci_intx_route intx[PCI_MAX_INTX];	/* interrupt-map (nr_intx 0: none read) */
	unsigned int nr_intx;
};

/* Config space of one function, as the scan sees it: ECAM on the machine, a
 * fake in the unit tests. Offsets are dword-aligned and below 4096. */
struct pci_cfg {
	uint32_t (*read32)(void *ctx, unsigned int off);
	void (*write32)(void *ctx, unsigned int off, uint32_t v);
	void *ctx;
};

#define PCI_NR_BARS		6
#define PCI_CFG_SIZE		256	/* conventional config space: where capabilities live */
#define PCI_VENDOR_VIRTIO	0x1af4

enum virtio_pci_cap {		/* cfg_type of a virtio vendor capability, minus one */
	VPCI_COMMON, VPCI_NOTIFY, VPCI_ISR, VPCI_DEVICE, VPCI_NR_CAPS
};

struct pci_bar {
	uint64_t addr;		/* PCI bus address (== CPU address minus window offset) */
	uint64_t cpu;		/* CPU physical address */
	uint64_t size;		/* 0: unimplemented or not assigned */
	bool is64, prefetch, io;
};

struct virtio_pci_loc {
	bool found;
	uint8_t bar;
	uint32_t offset, length;
};

struct pci_func {
	uint8_t bus, dev, fn;
	uint8_t int_pin;		/* 0: none, 1..4 INTA..INTD (config 0x3d) */
	int64_t int_irq;		/* its parent interrupt from interrupt-map, -1: none */
	uint16_t vendor, device;
	uint32_t class_code;		/* base class, subclass, prog-if */
	uint8_t header_type;		/* without the multi-function bit */
	struct pci_bar bar[PCI_NR_BARS];
	const char *bar_error;		/* non-NULL: BARs left unassigned, decode off */
	unsigned int virtio_type;	/* virtio device ID (1 net, 2 blk ...), 0: not virtio */
	struct virtio_pci_loc cap[VPCI_NR_CAPS];
	uint32_t notify_off_multiplier;
	const char *cap_error;		/* non-NULL: the capability list was cut short */
};

#define PCI_MAX_FUNCS	64

/** pci_window_alloc() - @size bytes (a power of two) aligned to @size from @w.
 *  Returns 0 and the PCI address in @addr, or -HYP_ENOMEM if it does not fit. */
int pci_window_alloc(struct pci_window *w, uint64_t size, uint64_t *addr);

/** pci_assign_bars() - size every BAR of the type-0 function @f behind @cfg,
 *  place memory BARs in @mem32 (32-bit BARs) or @mem64 (64-bit ones; @mem32 if
 *  @mem64 is empty and the BAR fits below 4 GiB), program them and turn on
 *  memory decode and bus mastering. On a BAR that fits nowhere, decode stays
 *  off and @f->bar_error says why. */
void pci_assign_bars(const struct pci_cfg *cfg, struct pci_func *f,
		     struct pci_window *mem32, struct pci_window *mem64);

/** pci_virtio_caps() - walk @f's capability list (bounded: no loop, nothing
 *  past config space) and record the first usable virtio common, notify, ISR
 *  and device capability, each checked to lie inside an assigned BAR. */
void pci_virtio_caps(const struct pci_cfg *cfg, struct pci_func *f);

/** pci_virtio_type() - the virtio device ID (modern 0x1040 + ID, or a
 *  transitional 0x1000..0x103f with the ID in @subsys), 0 if not virtio. */
unsigned int pci_virtio_type(uint16_t vendor, uint16_t device, uint16_t subsys);

/** pci_probe_func() - @f's identity from @cfg; for a type-0 header, its BARs
 *  (pci_assign_bars()) and, if virtio, its structures (pci_virtio_caps()).
 *  Bridges are recorded, not configured. */
void pci_probe_func(const struct pci_cfg *cfg, struct pci_func *f,
		    struct pci_window *mem32, struct pci_window *mem64);

/** pci_intx_irq() - the parent interrupt @desc's interrupt-map gives INTx
 *  @pin (1..4) of device @dev, function @fn on bus @bus; -1 if none. */
int64_t pci_intx_irq(const struct pci_host_desc *desc, unsigned int bus, unsigned int dev,
		     unsigned int fn, unsigned int pin);

/** pci_host_init() - scan the bus of @desc, assign BARs, print one line per
 *  function. Returns how many functions were found. */
unsigned int pci_host_init(const struct pci_host_desc *desc);

/** pci_host_funcs() - what the last pci_host_init() found. */
const struct pci_func *pci_host_funcs(unsigned int *nr);
#endif
