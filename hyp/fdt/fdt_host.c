/* SPDX-License-Identifier: MIT */
/* Host DT parsing with libfdt: memory, harts, timebase, UART, reserved memory,
 * the interrupt controllers (a PLIC, or an AIA's S-level IMSIC and APLIC), the
 * PCIe host bridge, virtual switches, VMs (with their disks and NICs). */
#include <libfdt.h>
#include <string.h>
#include <errno.h>
#include <fdt_host.h>
#include <names.h>

static uint64_t read_cells(const fdt32_t *p, int cells)
{
	uint64_t v = 0;

	for (int i = 0; i < cells; i++)
		v = (v << 32) | fdt32_to_cpu(p[i]);
	return v;
}

/* #address-cells and #size-cells that apply to @node's reg: from the nearest
 * ancestor that states each (VM nodes under /chosen usually inherit from
 * /chosen); 2 and 1 if none does. One walk up for both: finding a parent
 * rescans the tree from its start. */
static void reg_cells(const void *fdt, int node, int *ac, int *sc)
{
	bool have_ac = false, have_sc = false;

	*ac = 2;
	*sc = 1;
	for (int p = fdt_parent_offset(fdt, node); p >= 0 && !(have_ac && have_sc);
	     p = fdt_parent_offset(fdt, p)) {
		int len;
		const fdt32_t *v = fdt_getprop(fdt, p, "#address-cells", &len);

		if (!have_ac && v && len == 4) {
			*ac = (int)fdt32_to_cpu(*v);
			have_ac = true;
		}
		v = fdt_getprop(fdt, p, "#size-cells", &len);
		if (!have_sc && v && len == 4) {
			*sc = (int)fdt32_to_cpu(*v);
			have_sc = true;
		}
		if (p == 0)
			break;
	}
}

/* Append every (address, size) pair of @node's reg, in @ac + @sc cells, to @out. */
static int read_reg_cells(const void *fdt, int node, int ac, int sc, struct mm_range *out,
			  unsigned int *nr, unsigned int max)
{
	int len;
	const fdt32_t *p = fdt_getprop(fdt, node, "reg", &len);

	if (!p || ac < 1 || ac > 2 || sc < 0 || sc > 2 || len % (4 * (ac + sc)))
		return -HYP_EINVAL;
	for (int i = 0; i < len / (4 * (ac + sc)); i++) {
		if (*nr == max)
			return -HYP_ENOMEM;
		out[*nr].base = read_cells(p + i * (ac + sc), ac);
		out[*nr].size = read_cells(p + i * (ac + sc) + ac, sc);
		(*nr)++;
	}
	return 0;
}

static int read_reg(const void *fdt, int node, struct mm_range *out, unsigned int *nr,
		    unsigned int max)
{
	int ac, sc;

	reg_cells(fdt, node, &ac, &sc);
	return read_reg_cells(fdt, node, ac, sc, out, nr, max);
}

/* A string property, or NULL if absent or not NUL-terminated within its length. */
static const char *get_string(const void *fdt, int node, const char *name)
{
	int len;
	const char *s = fdt_getprop(fdt, node, name, &len);

	return s && len > 0 && memchr(s, '\0', (size_t)len) ? s : NULL;
}

static bool stringlist_has(const void *fdt, int node, const char *prop, const char *s)
{
	return fdt_stringlist_search(fdt, node, prop, s) >= 0;
}

/* The phandle of @cpu's local interrupt controller ("riscv,cpu-intc", one
 * interrupt cell: the cause number), 0 if it has none. */
static uint32_t cpu_intc_phandle(const void *fdt, int cpu)
{
	int node, len;

	fdt_for_each_subnode(node, fdt, cpu) {
		const fdt32_t *cells = fdt_getprop(fdt, node, "#interrupt-cells", &len);

		if (!fdt_node_check_compatible(fdt, node, "riscv,cpu-intc") &&
		    fdt_getprop(fdt, node, "interrupt-controller", NULL) &&
		    (!cells || (len == 4 && fdt32_to_cpu(*cells) == 1)))
			return fdt_get_phandle(fdt, node);
	}
	return 0;
}

/* Zicboz on this hart, and its block: every hart must have both, the same
 * (a block a power of two from 16 to 4 KiB), or none is used. */
static void parse_cboz(const void *fdt, int node, struct host_info *hi, bool first)
{
	const fdt32_t *p;
	uint32_t block = 0;
	int len;

	p = fdt_getprop(fdt, node, "riscv,cboz-block-size", &len);
	if (p && len == 4 && stringlist_has(fdt, node, "riscv,isa-extensions", "zicboz"))
		block = fdt32_to_cpu(*p);
	if (block < 16 || block > 4096 || (block & (block - 1)))
		block = 0;
	if (first)
		hi->cboz_block = block;
	else if (hi->cboz_block != block)
		hi->cboz_block = 0;
}

static int parse_cpus(const void *fdt, struct host_info *hi, const char **err)
{
	int cpus = fdt_path_offset(fdt, "/cpus"), node, len;
	const fdt32_t *tb;

	if (cpus < 0)
		return *err = "no /cpus node", -HYP_EINVAL;
	tb = fdt_getprop(fdt, cpus, "timebase-frequency", &len);
	if (!tb || (len != 4 && len != 8))
		return *err = "no /cpus/timebase-frequency", -HYP_EINVAL;
	hi->timebase_hz = read_cells(tb, len / 4);
	hi->isa_zicfilp = hi->isa_zicfiss = hi->isa_sstc = hi->isa_smstateen = true;
	hi->isa_zimop = hi->isa_zcmop = hi->isa_zbc = hi->isa_ssaia = true;
	hi->cboz_block = 0;
	fdt_for_each_subnode(node, fdt, cpus) {
		const char *type = get_string(fdt, node, "device_type");
		const char *status = get_string(fdt, node, "status");
		const fdt32_t *reg = fdt_getprop(fdt, node, "reg", &len);

		if (!type || strcmp(type, "cpu") || !reg || len < 4)
			continue;
		if (status && strcmp(status, "okay") && strcmp(status, "ok"))
			continue;
		if (hi->nr_harts == HOST_MAX_HARTS)
			return *err = "too many harts", -HYP_ENOMEM;
		hi->intc_phandle[hi->nr_harts] = cpu_intc_phandle(fdt, node);
		hi->hartids[hi->nr_harts++] = read_cells(reg, len / 4 > 1 ? 2 : 1);
		hi->isa_zicfilp &= stringlist_has(fdt, node, "riscv,isa-extensions", "zicfilp");
		hi->isa_zicfiss &= stringlist_has(fdt, node, "riscv,isa-extensions", "zicfiss");
		hi->isa_sstc &= stringlist_has(fdt, node, "riscv,isa-extensions", "sstc");
		hi->isa_smstateen &= stringlist_has(fdt, node, "riscv,isa-extensions", "smstateen");
		hi->isa_zimop &= stringlist_has(fdt, node, "riscv,isa-extensions", "zimop");
		hi->isa_zcmop &= stringlist_has(fdt, node, "riscv,isa-extensions", "zcmop");
		hi->isa_zbc &= stringlist_has(fdt, node, "riscv,isa-extensions", "zbc");
		hi->isa_ssaia &= stringlist_has(fdt, node, "riscv,isa-extensions", "ssaia");
		parse_cboz(fdt, node, hi, hi->nr_harts == 1);
	}
	if (!hi->nr_harts)
		return *err = "no usable cpu nodes", -HYP_EINVAL;
	return 0;
}

static int parse_memory(const void *fdt, struct host_info *hi, const char **err)
{
	int node, rmem;

	fdt_for_each_subnode(node, fdt, 0) {
		const char *type = get_string(fdt, node, "device_type");

		if (type && !strcmp(type, "memory") &&
		    read_reg(fdt, node, hi->mem, &hi->nr_mem, MM_MAX_RANGES))
			return *err = "bad /memory reg", -HYP_EINVAL;
	}
	if (!hi->nr_mem)
		return *err = "no memory nodes", -HYP_EINVAL;
	rmem = fdt_path_offset(fdt, "/reserved-memory");
	if (rmem >= 0) {
		fdt_for_each_subnode(node, fdt, rmem) {
			if (fdt_getprop(fdt, node, "reg", NULL) &&
			    read_reg(fdt, node, hi->reserved, &hi->nr_reserved, MM_MAX_RANGES))
				return *err = "bad /reserved-memory entry", -HYP_EINVAL;
		}
	}
	if (hi->nr_reserved == MM_MAX_RANGES)
		return *err = "too many reserved ranges", -HYP_ENOMEM;
	hi->reserved[hi->nr_reserved++] = (struct mm_range){ (uint64_t)(uintptr_t)fdt,
							      fdt_totalsize(fdt) };
	return 0;
}

static int parse_uart(const void *fdt, struct host_info *hi)
{
	int chosen = fdt_path_offset(fdt, "/chosen"), node = -1, len;
	struct mm_range r;
	unsigned int nr = 0;
	const fdt32_t *shift;

	if (chosen >= 0) {
		const char *path = fdt_getprop(fdt, chosen, "stdout-path", &len);

		if (path) {
			const char *colon = memchr(path, ':', (size_t)len);

			node = fdt_path_offset_namelen(fdt, path,
						       colon ? (int)(colon - path) : len - 1);
		}
	}
	if (node < 0)
		node = fdt_node_offset_by_compatible(fdt, -1, "ns16550a");
	if (node < 0 || read_reg(fdt, node, &r, &nr, 1))
		return -HYP_ENOENT;
	hi->uart_base = r.base;
	shift = fdt_getprop(fdt, node, "reg-shift", &len);
	hi->uart_shift = shift && len == 4 ? fdt32_to_cpu(*shift) : 0;
	return 0;
}

/* PCI address space code of a "ranges" entry (phys.hi bits 25:24). */
#define PCI_SPACE_MEM32		2
#define PCI_SPACE_MEM64		3

/* A u32 property of @node, or @dflt if absent or not one cell. */
static uint32_t prop_u32(const void *fdt, int node, const char *name, uint32_t dflt)
{
	int len;
	const fdt32_t *p = fdt_getprop(fdt, node, name, &len);

	return p && len == 4 ? fdt32_to_cpu(*p) : dflt;
}

/* An interrupt parent: its node and cell counts, by phandle. Looking a phandle
 * up walks every property of every node before it (libfdt's
 * fdt_node_offset_by_phandle(): about 0.5 M instructions on QEMU virt's host
 * DT, 16 times over for its interrupt-map, which was 8 M instructions of the
 * Linux boot figure, docs/performance.md): the last answer is kept, since
 * every entry of a map names the same parent. */
struct irq_parent {
	uint32_t phandle;	/* 0: nothing looked up yet */
	int node;
	uint32_t addr_cells, irq_cells;
};

static int irq_parent_get(const void *fdt, struct irq_parent *p, uint32_t phandle)
{
	int node;

	if (p->phandle && p->phandle == phandle)
		return p->node;
	node = fdt_node_offset_by_phandle(fdt, phandle);
	if (node < 0)
		return node;
	*p = (struct irq_parent){ phandle, node, prop_u32(fdt, node, "#address-cells", 0),
				  prop_u32(fdt, node, "#interrupt-cells", 0) };
	return node;
}

/* interrupt-map of the bridge: (phys.hi, mid, lo, pin, parent phandle, the
 * parent's unit address, its interrupt specifier) entries. Understood: parents
 * with one interrupt cell (a PLIC: the source), and the host APLIC's two
 * (source, trigger); an entry that runs past the property, names no node or
 * another kind of parent ends the table there. @intc, @intc_phandle: the
 * host's interrupt controller (parse_plic(), parse_aplic()), the parent known
 * without a lookup; @intc negative if there is none. */
static void parse_pci_intx(const void *fdt, int node, const struct host_info *hi, int intc,
			   uint32_t intc_phandle, struct pci_host_desc *d)
{
	int len, mlen;
	const fdt32_t *map = fdt_getprop(fdt, node, "interrupt-map", &len);
	const fdt32_t *mask = fdt_getprop(fdt, node, "interrupt-map-mask", &mlen);
	unsigned int cells, pos = 0;
	struct irq_parent parent = { 0 };

	if (!map || !mask || mlen != 16 || len <= 0 || len % 4)
		return;
	if (intc >= 0 && intc_phandle)	/* the usual parent: no lookup at all */
		parent = (struct irq_parent){ intc_phandle, intc,
					      prop_u32(fdt, intc, "#address-cells", 0),
					      prop_u32(fdt, intc, "#interrupt-cells", 0) };
	d->intx_mask_hi = fdt32_to_cpu(mask[0]);
	d->intx_mask_pin = fdt32_to_cpu(mask[3]);
	cells = (unsigned int)len / 4;
	while (d->nr_intx < PCI_MAX_INTX && cells - pos >= 5) {
		const fdt32_t *e = map + pos;
		uint32_t pac, pic;

		if (irq_parent_get(fdt, &parent, fdt32_to_cpu(e[4])) < 0)
			return;
		pac = parent.addr_cells;
		pic = parent.irq_cells;
		if (pac > 3 || cells - pos - 5 < pac + pic ||
		    !(pic == 1 || (pic == 2 && hi->aplic.present &&
				   parent.phandle == hi->aplic.phandle)))
			return;
		d->intx[d->nr_intx++] = (struct pci_intx_route){
			.addr_hi = fdt32_to_cpu(e[0]) & d->intx_mask_hi,
			.pin = fdt32_to_cpu(e[3]) & d->intx_mask_pin,
			.irq = fdt32_to_cpu(e[5 + pac]),
			.type = pic == 2 ? fdt32_to_cpu(e[6 + pac]) : HOST_IRQ_LEVEL_HIGH,
			.parent = parent.phandle,
		};
		pos += 5 + pac + pic;
	}
}

/* True if [base, base + size) meets a /memory range (both ends checked by the caller). */
static bool overlaps_ram(const struct host_info *hi, uint64_t base, uint64_t size)
{
	for (unsigned int i = 0; i < hi->nr_mem; i++)
		if (base < hi->mem[i].base + hi->mem[i].size && hi->mem[i].base < base + size)
			return true;
	return false;
}

/* A node found by compatible, with the cells its reg is written in. */
struct dt_found {
	int node;		/* negative: none */
	int ac, sc;		/* the parent's #address-cells, #size-cells (reg_cells()) */
};

#define HOST_MAX_APLICS	4	/* enabled APLIC domains looked at (QEMU virt: M and S) */

/* The devices the host parse finds by compatible: the PLIC, the S-level
 * IMSIC, the APLIC domains (the one to use is known once the IMSIC is) and
 * the PCIe bridge. */
struct host_nodes {
	struct dt_found plic, plic_sifive, imsic, pci, sswi;
	struct dt_found aplic[HOST_MAX_APLICS];
	unsigned int nr_aplic;
};

#define DT_MAX_DEPTH	16	/* deeper nodes are not looked at */

static void found(const void *fdt, struct dt_found *f, int node, const int *anc, int depth)
{
	bool have_ac = false, have_sc = false;

	if (f->node >= 0)
		return;		/* the first in the tree wins */
	*f = (struct dt_found){ node, 2, 1 };
	for (int d = depth - 1; d >= 0 && !(have_ac && have_sc); d--) {
		int len;
		const fdt32_t *v = fdt_getprop(fdt, anc[d], "#address-cells", &len);

		if (!have_ac && v && len == 4) {
			f->ac = (int)fdt32_to_cpu(*v);
			have_ac = true;
		}
		v = fdt_getprop(fdt, anc[d], "#size-cells", &len);
		if (!have_sc && v && len == 4) {
			f->sc = (int)fdt32_to_cpu(*v);
			have_sc = true;
		}
	}
}

/* status absent, "okay" or "ok": firmware disables what S-mode may not touch
 * (OpenSBI: the M-level IMSIC and APLIC). */
static bool node_enabled(const void *fdt, int node)
{
	const char *status = get_string(fdt, node, "status");

	return !status || !strcmp(status, "okay") || !strcmp(status, "ok");
}

/* interrupts-extended entries per hart's local controller whose cause is 9
 * (supervisor external): the PLIC's S-mode contexts, numbered by position,
 * and the S-level IMSIC's harts. */
#define IRQ_CAUSE_S_EXT	9
#define IRQ_CAUSE_S_SOFT	1

/* An IMSIC node whose first interrupts-extended entry is a cause-9 pair:
 * its files are S-level (the M-level one names cause 11). */
static bool imsic_is_s_level(const void *fdt, int node)
{
	int len;
	const fdt32_t *ie = fdt_getprop(fdt, node, "interrupts-extended", &len);

	return ie && len >= 8 && fdt32_to_cpu(ie[1]) == IRQ_CAUSE_S_EXT;
}

/* One walk over the tree for all of them, each with its parent's cells from
 * the ancestors the walk passed through. Searching by compatible walks the
 * tree, and libfdt finds a node's parent with two more walks: about 0.3 M
 * instructions each on QEMU virt's host DT, 1.4 M for the PLIC and the bridge
 * that way (docs/performance.md). */
static void find_host_nodes(const void *fdt, struct host_nodes *hn)
{
	int anc[DT_MAX_DEPTH], depth = -1;

	hn->plic.node = hn->plic_sifive.node = hn->imsic.node = hn->pci.node = hn->sswi.node = -1;
	hn->nr_aplic = 0;
	for (int node = fdt_next_node(fdt, -1, &depth); node >= 0 && depth >= 0;
	     node = fdt_next_node(fdt, node, &depth)) {
		int len;
		const char *compat;

		if (depth >= DT_MAX_DEPTH)
			continue;
		anc[depth] = node;
		compat = fdt_getprop(fdt, node, "compatible", &len);
		if (!compat)
			continue;
		if (fdt_stringlist_contains(compat, len, "riscv,plic0"))
			found(fdt, &hn->plic, node, anc, depth);
		if (fdt_stringlist_contains(compat, len, "sifive,plic-1.0.0"))
			found(fdt, &hn->plic_sifive, node, anc, depth);
		if (fdt_stringlist_contains(compat, len, "pci-host-ecam-generic"))
			found(fdt, &hn->pci, node, anc, depth);
		if (fdt_stringlist_contains(compat, len, "riscv,imsics") &&
		    node_enabled(fdt, node) && imsic_is_s_level(fdt, node))
			found(fdt, &hn->imsic, node, anc, depth);
		if (fdt_stringlist_contains(compat, len, "riscv,aclint-sswi") &&
		    node_enabled(fdt, node))
			found(fdt, &hn->sswi, node, anc, depth);
		if (fdt_stringlist_contains(compat, len, "riscv,aplic") &&
		    node_enabled(fdt, node) && hn->nr_aplic < HOST_MAX_APLICS) {
			hn->aplic[hn->nr_aplic].node = -1;
			found(fdt, &hn->aplic[hn->nr_aplic++], node, anc, depth);
		}
	}
}

/* The hart whose riscv,cpu-intc has phandle @ph (parse_cpus() found them),
 * or nr_harts: an interrupts-extended entry naming anything else. */
static unsigned int hart_of_intc(const struct host_info *hi, uint32_t ph)
{
	unsigned int h = 0;

	while (h < hi->nr_harts && (!ph || hi->intc_phandle[h] != ph))
		h++;
	return h;
}

/* The host PLIC ("riscv,plic0", or "sifive,plic-1.0.0" alone): its reg, its
 * sources (riscv,ndev, 1..1023) and each hart's S-mode context, read from
 * interrupts-extended as (controller phandle, cause) pairs. Every controller
 * named must be a hart's riscv,cpu-intc (one cell, parse_cpus() found them):
 * an entry naming anything else cannot be sized and ends the walk (the
 * contexts before it stand). A context counts only if its registers lie
 * inside reg; reg may not overlap RAM. A PLIC that does not parse is left out
 * (no host interrupts), not fatal. Returns its node, or a negative value. */
static int parse_plic(const void *fdt, struct host_info *hi, const struct host_nodes *hn)
{
	struct plic_host_desc *d = &hi->plic;
	const struct dt_found *f = hn->plic.node >= 0 ? &hn->plic : &hn->plic_sifive;
	int node = f->node, len;
	const fdt32_t *ie;
	struct mm_range r;
	unsigned int nr = 0, n;

	for (unsigned int i = 0; i < HOST_MAX_HARTS; i++)
		hi->plic_s_context[i] = PLIC_NO_CONTEXT;
	if (node < 0 || read_reg_cells(fdt, node, f->ac, f->sc, &r, &nr, 1) || !r.size ||
	    r.base > UINT64_MAX - r.size || overlaps_ram(hi, r.base, r.size))
		return -1;
	d->ndev = prop_u32(fdt, node, "riscv,ndev", 0);
	if (!d->ndev || d->ndev >= PLIC_MAX_SOURCES) {
		d->ndev = 0;
		return -1;
	}
	d->base = r.base;
	d->size = r.size;
	d->phandle = fdt_get_phandle(fdt, node);
	d->present = true;
	ie = fdt_getprop(fdt, node, "interrupts-extended", &len);
	n = ie && len > 0 ? (unsigned int)len / 8 : 0;
	for (unsigned int ctx = 0; ctx < n && ctx < PLIC_MAX_CONTEXTS; ctx++) {
		uint32_t ph = fdt32_to_cpu(ie[2 * ctx]), cause = fdt32_to_cpu(ie[2 * ctx + 1]);
		unsigned int h = hart_of_intc(hi, ph);

		if (h == hi->nr_harts)
			break;		/* not a hart's controller: its entries' size is unknown */
		if (cause != IRQ_CAUSE_S_EXT || hi->plic_s_context[h] != PLIC_NO_CONTEXT)
			continue;
		if (PLIC_CLAIM(ctx) + 4 <= d->size && PLIC_ENABLE(ctx, PLIC_MAX_SOURCES - 1) + 4 <= d->size)
			hi->plic_s_context[h] = ctx;
	}
	return node;
}

/* One register range, nonzero, not wrapping, not RAM: a controller's reg. */
static bool device_reg(const void *fdt, const struct host_info *hi, const struct dt_found *f,
		       struct mm_range *r)
{
	struct mm_range two[2];
	unsigned int nr = 0;

	if (read_reg_cells(fdt, f->node, f->ac, f->sc, two, &nr, 2) || nr != 1)
		return false;
	*r = two[0];
	return r->size && r->base <= UINT64_MAX - r->size && !overlaps_ram(hi, r->base, r->size);
}

/* riscv,num-ids and riscv,num-guest-ids: 63..2047, a multiple of 64 less one. */
static bool imsic_ids_ok(uint32_t n)
{
	return n >= IMSIC_MIN_IDS && n <= IMSIC_MAX_IDS && (n & 63) == 63;
}

/* The S-level IMSIC ("riscv,imsics", enabled, cause 9): one group (one reg
 * range, no riscv,group-index-bits above 0), its identities, its guest
 * index bits, and each hart's position in interrupts-extended, as
 * parse_plic() reads contexts: every entry must name a hart's
 * riscv,cpu-intc with cause 9, and that hart's S file must lie inside reg.
 * One that does not parse is left out (no AIA host interrupts), not fatal.
 * Returns its node, or a negative value. */
static int parse_imsic(const void *fdt, struct host_info *hi, const struct host_nodes *hn)
{
	struct imsic_host_desc *d = &hi->imsic;
	int node = hn->imsic.node, len;
	const fdt32_t *ie;
	struct mm_range r;
	unsigned int n;
	bool any = false;

	for (unsigned int i = 0; i < HOST_MAX_HARTS; i++)
		hi->imsic_hart_index[i] = IMSIC_NO_HART;
	if (node < 0 || !device_reg(fdt, hi, &hn->imsic, &r) || r.base % IMSIC_FILE_SIZE ||
	    prop_u32(fdt, node, "riscv,group-index-bits", 0))
		return -1;
	*d = (struct imsic_host_desc){
		.base = r.base, .size = r.size,
		.num_ids = prop_u32(fdt, node, "riscv,num-ids", 0),
		.guest_bits = prop_u32(fdt, node, "riscv,guest-index-bits", 0),
		.phandle = fdt_get_phandle(fdt, node),
	};
	d->guest_ids = prop_u32(fdt, node, "riscv,num-guest-ids", d->num_ids);
	if (!imsic_ids_ok(d->num_ids) || !imsic_ids_ok(d->guest_ids) ||
	    d->guest_bits > IMSIC_MAX_GUEST_BITS || !d->phandle)
		return -1;
	ie = fdt_getprop(fdt, node, "interrupts-extended", &len);
	n = ie && len > 0 ? (unsigned int)len / 8 : 0;
	for (unsigned int pos = 0; pos < n; pos++) {
		uint32_t ph = fdt32_to_cpu(ie[2 * pos]), cause = fdt32_to_cpu(ie[2 * pos + 1]);
		unsigned int h = hart_of_intc(hi, ph);

		if (h == hi->nr_harts || cause != IRQ_CAUSE_S_EXT)
			break;		/* not a hart's S-level entry: the rest cannot be trusted */
		if (hi->imsic_hart_index[h] == IMSIC_NO_HART &&
		    imsic_s_file_pa(d, pos) - d->base + IMSIC_FILE_SIZE <= d->size) {
			hi->imsic_hart_index[h] = pos;
			any = true;
		}
	}
	d->present = any;
	return any ? node : -1;
}

/* The ACLINT SSWI ("riscv,aclint-sswi"; QEMU virt with aclint=on): one
 * SETSSIP register per hart, at reg + 4 * its position in
 * interrupts-extended (each entry a hart's riscv,cpu-intc with cause 1), a
 * store of 1 to which sets that hart's sip.SSIP: a host IPI without the
 * firmware. Used only if every hart has one inside reg (else none is:
 * sswi_setssip[] all 0). */
static void parse_sswi(const void *fdt, struct host_info *hi, const struct host_nodes *hn)
{
	int len;
	const fdt32_t *ie;
	struct mm_range r;
	unsigned int n, found = 0;

	if (hn->sswi.node < 0 || !device_reg(fdt, hi, &hn->sswi, &r) || r.base % 4)
		return;
	ie = fdt_getprop(fdt, hn->sswi.node, "interrupts-extended", &len);
	n = ie && len > 0 ? (unsigned int)len / 8 : 0;
	for (unsigned int pos = 0; pos < n && (uint64_t)pos * 4 + 4 <= r.size; pos++) {
		uint32_t ph = fdt32_to_cpu(ie[2 * pos]), cause = fdt32_to_cpu(ie[2 * pos + 1]);
		unsigned int h = hart_of_intc(hi, ph);

		if (h == hi->nr_harts || cause != IRQ_CAUSE_S_SOFT)
			break;		/* not a hart's S-level entry: the rest cannot be trusted */
		if (!hi->sswi_setssip[h]) {
			hi->sswi_setssip[h] = r.base + 4ull * pos;
			found++;
		}
	}
	if (found != hi->nr_harts)
		memset(hi->sswi_setssip, 0, sizeof(hi->sswi_setssip));
}

/* The APLIC domain whose MSIs go to the S-level IMSIC (msi-parent names it):
 * enabled, one reg range covering an MSI-mode domain's registers, not RAM,
 * riscv,num-sources 1..1023. None: no AIA host interrupts. */
static int parse_aplic(const void *fdt, struct host_info *hi, const struct host_nodes *hn)
{
	struct aplic_host_desc *d = &hi->aplic;

	if (!hi->imsic.present)
		return -1;
	for (unsigned int i = 0; i < hn->nr_aplic; i++) {
		const struct dt_found *f = &hn->aplic[i];
		struct mm_range r;
		uint32_t sources = prop_u32(fdt, f->node, "riscv,num-sources", 0);

		if (prop_u32(fdt, f->node, "msi-parent", 0) != hi->imsic.phandle)
			continue;
		if (!device_reg(fdt, hi, f, &r) || r.size < APLIC_MIN_SIZE || !sources ||
		    sources >= APLIC_MAX_SOURCES || !fdt_get_phandle(fdt, f->node))
			return -1;
		*d = (struct aplic_host_desc){ true, r.base, r.size, sources,
					       fdt_get_phandle(fdt, f->node) };
		return f->node;
	}
	return -1;
}

/* The generic ECAM host bridge (QEMU virt's gpex): its ECAM, bus-range and the
 * memory windows of its ranges. Nothing here is trusted further than the DT:
 * cell counts, property lengths and every window's end are checked, and
 * neither ECAM nor a window may overlap RAM (parse_memory() ran first). A bridge
 * that does not parse is left out (the host runs without PCI), not fatal. */
static void parse_pci(const void *fdt, struct host_info *hi, const struct host_nodes *hn,
		      int intc, uint32_t intc_phandle)
{
	struct pci_host_desc *d = &hi->pci;
	int node = hn->pci.node;
	int pac = hn->pci.ac, psc = hn->pci.sc, len = 0, entry, sc;	/* pac, psc: the parent's */
	const fdt32_t *ac = node >= 0 ? fdt_getprop(fdt, node, "#address-cells", &len) : NULL;
	const fdt32_t *p;
	struct mm_range r;
	unsigned int nr = 0;

	if (node < 0 || !ac || len != 4 || fdt32_to_cpu(*ac) != 3)
		return;
	p = fdt_getprop(fdt, node, "#size-cells", &len);
	sc = p && len == 4 ? (int)fdt32_to_cpu(*p) : 0;
	if (sc < 1 || sc > 2 || pac < 1 || pac > 2 ||
	    read_reg_cells(fdt, node, pac, psc, &r, &nr, 1) ||
	    !r.size || r.base > UINT64_MAX - r.size || overlaps_ram(hi, r.base, r.size))
		return;
	d->ecam_base = r.base;
	d->ecam_size = r.size;
	d->bus_start = 0;
	d->bus_end = 255;
	p = fdt_getprop(fdt, node, "bus-range", &len);
	if (p && len == 8) {
		d->bus_start = fdt32_to_cpu(p[0]);
		d->bus_end = fdt32_to_cpu(p[1]);
	}
	/* ECAM gives each bus 1 MiB: the window must cover the first one at least */
	if (d->bus_start > d->bus_end || d->bus_end > 255 || d->ecam_size < (1u << 20))
		return;
	if ((uint64_t)(d->bus_end - d->bus_start + 1) << 20 > d->ecam_size)
		d->bus_end = d->bus_start + (uint32_t)(d->ecam_size >> 20) - 1;
	p = fdt_getprop(fdt, node, "ranges", &len);
	entry = 3 + pac + sc;
	if (!p || len <= 0 || len % (4 * entry))
		return;
	for (int i = 0; i < len / (4 * entry); i++) {
		const fdt32_t *e = p + i * entry;
		unsigned int space = (fdt32_to_cpu(e[0]) >> 24) & 3;
		struct pci_window w = {
			.pci_base = read_cells(e + 1, 2),
			.cpu_base = read_cells(e + 3, pac),
			.size = read_cells(e + 3 + pac, sc),
		};
		struct pci_window *slot = space == PCI_SPACE_MEM32 ? &d->mem32 :
					  space == PCI_SPACE_MEM64 ? &d->mem64 : NULL;

		/* the I/O window is ignored: no port I/O on RISC-V */
		if (!slot || slot->size || !w.size || w.pci_base > UINT64_MAX - w.size ||
		    w.cpu_base > UINT64_MAX - w.size || overlaps_ram(hi, w.cpu_base, w.size))
			continue;	/* BARs there would shadow RAM */
		if (space == PCI_SPACE_MEM32 && w.pci_base + w.size > (1ull << 32))
			continue;	/* 32-bit BARs cannot reach it */
		*slot = w;
	}
	d->present = d->mem32.size || d->mem64.size;
	if (d->present)
		parse_pci_intx(fdt, node, hi, intc, intc_phandle, d);
}

static int parse_cfi_policy(const char *s, enum cfi_policy *p)
{
	static const char *const names[] = { "trap", "delegate", "strict", "off" };

	for (unsigned int i = 0; i < ARRAY_SIZE(names); i++) {
		if (!strcmp(s, names[i])) {
			*p = (enum cfi_policy)i;
			return 0;
		}
	}
	return -HYP_EINVAL;
}

static int add_image(struct host_info *hi, const char *vm, const char *suffix,
		     const struct mm_range *r, const char **err)
{
	struct host_image *im;
	size_t a = strlen(vm), b = strlen(suffix);

	if (hi->nr_images == HOST_MAX_IMAGES)
		return *err = "too many images", -HYP_ENOMEM;
	if (a + b + 1 > sizeof(im->name) || !r->size)
		return *err = "bad image name or size", -HYP_EINVAL;
	for (unsigned int i = 0; i < hi->nr_images; i++)
		if (strlen(hi->images[i].name) == a + b && !memcmp(hi->images[i].name, vm, a) &&
		    !memcmp(hi->images[i].name + a, suffix, b))
			return *err = "two images with the same name", -HYP_EINVAL;
	if (hi->nr_reserved == MM_MAX_RANGES)
		return *err = "too many reserved ranges", -HYP_ENOMEM;
	/* images stay where QEMU loaded them: keep them out of the allocator */
	hi->reserved[hi->nr_reserved++] = *r;
	im = &hi->images[hi->nr_images++];
	memcpy(im->name, vm, a);
	memcpy(im->name + a, suffix, b + 1);
	im->addr = r->base;
	im->size = r->size;
	return 0;
}

/* [a-z0-9_-]{1,15}: a switch's name (vswitch_create() takes no other). */
static bool switch_name_ok(const char *s)
{
	return name_ok(s, VSWITCH_NAME_LEN);
}

static const struct host_switch *find_switch(const struct host_info *hi, const char *name)
{
	for (unsigned int i = 0; i < hi->nr_switches; i++)
		if (!strcmp(hi->switches[i].name, name))
			return &hi->switches[i];
	return NULL;
}

/* A device number on host PCIe bus 0 from one u32 property; each number names
 * one device, so a number given twice (two disks, a disk and an uplink) is
 * refused. @used: a bit per number taken so far. */
static int claim_pci_dev(const void *fdt, int node, const char *prop, uint32_t *used,
			 uint8_t *out, const char **err)
{
	int len;
	const fdt32_t *v = fdt_getprop(fdt, node, prop, &len);
	uint32_t n;

	if (!v || len != 4)
		return *err = "disk or uplink without a one-cell PCI device number", -HYP_EINVAL;
	n = fdt32_to_cpu(*v);
	if (n < HOST_PCI_DEV_MIN || n > HOST_PCI_DEV_MAX)
		return *err = "PCI device number out of range (1..31)", -HYP_ERANGE;
	if (*used & (1U << n))
		return *err = "PCI device number used twice", -HYP_EEXIST;
	*used |= 1U << n;
	*out = (uint8_t)n;
	return 0;
}

/* One "carapace,switch" node under /chosen. */
static int parse_switch(const void *fdt, int node, struct host_info *hi, uint32_t *pci_used,
			const char **err)
{
	const char *name = get_string(fdt, node, "carapace,name");
	struct host_switch *sw;

	if (hi->nr_switches == HOST_MAX_SWITCHES)
		return *err = "too many switches", -HYP_ENOMEM;
	if (!name || !switch_name_ok(name))
		return *err = "switch node without a valid carapace,name", -HYP_EINVAL;
	if (find_switch(hi, name))
		return *err = "two switches with the same name", -HYP_EEXIST;
	sw = &hi->switches[hi->nr_switches];
	memcpy(sw->name, name, strlen(name) + 1);
	if (fdt_getprop(fdt, node, "carapace,uplink-pci-dev", NULL)) {
		int rc = claim_pci_dev(fdt, node, "carapace,uplink-pci-dev", pci_used,
				       &sw->uplink_pci, err);

		if (rc)
			return rc;
	}
	hi->nr_switches++;
	return 0;
}

/* A rate limit property of a device node and what is said when it is bad. */
struct rate_prop {
	const char *name;
	uint64_t min;			/* the least nonzero value */
	const char *bad_cells, *bad_value;
};

static const struct rate_prop disk_iops = {
	"carapace,iops", 1, "carapace,iops: not one or two cells",
	"carapace,iops: above 2^40 requests a second",
};
static const struct rate_prop nic_pps = {
	"carapace,pps", 1, "carapace,pps: not one or two cells",
	"carapace,pps: above 2^40 frames a second",
};
static const struct rate_prop bandwidth = {
	"carapace,bandwidth", VM_IO_BANDWIDTH_MIN, "carapace,bandwidth: not one or two cells",
	"carapace,bandwidth: not 0 (no limit) or 4096..2^40 bytes a second",
};

/* A device's rate limit: @def when the property is absent, else its one or
 * two cells: 0 (no limit) or p->min..VM_IO_RATE_MAX. */
static int parse_rate(const void *fdt, int node, const struct rate_prop *p, uint64_t def,
		      uint64_t *out, const char **err)
{
	int len;
	const fdt32_t *v = fdt_getprop(fdt, node, p->name, &len);

	if (!v) {
		*out = def;
		return 0;
	}
	if (len != 4 && len != 8)
		return *err = p->bad_cells, -HYP_EINVAL;
	*out = read_cells(v, len / 4);
	if (*out && (*out < p->min || *out > VM_IO_RATE_MAX))
		return *err = p->bad_value, -HYP_ERANGE;
	return 0;
}

/* A "carapace,disk" child of a VM node. */
static int parse_disk(const void *fdt, int node, struct vm_desc *d, uint32_t *pci_used,
		      const char **err)
{
	struct vm_disk_desc *disk;
	int rc;

	if (d->nr_disks == VM_MAX_DISKS)
		return *err = "too many disks in a vm node", -HYP_ENOMEM;
	disk = &d->disks[d->nr_disks];
	rc = claim_pci_dev(fdt, node, "carapace,pci-dev", pci_used, &disk->pci_dev, err);
	if (!rc)
		rc = parse_rate(fdt, node, &disk_iops, VM_DISK_IOPS_DEFAULT, &disk->iops, err);
	if (!rc)
		rc = parse_rate(fdt, node, &bandwidth, VM_DISK_BANDWIDTH_DEFAULT, &disk->bandwidth,
				err);
	if (rc)
		return rc;
	disk->read_only = fdt_getprop(fdt, node, "carapace,read-only", NULL) != NULL;
	d->nr_disks++;
	return 0;
}

/* true if a NIC on switch @sw already has @mac: among the VMs parsed so far
 * and @d's own NICs */
static bool mac_taken(const struct host_info *hi, const struct vm_desc *d, const char *sw,
		      const uint8_t *mac)
{
	for (unsigned int v = 0; v <= hi->nr_vms && v < HOST_MAX_VMS; v++) {
		const struct vm_desc *o = v < hi->nr_vms ? &hi->vms[v] : d;

		for (unsigned int i = 0; i < o->nr_nics; i++)
			if (!strcmp(o->nics[i].sw, sw) && !memcmp(o->nics[i].mac, mac, ETH_ALEN))
				return true;
	}
	return false;
}

/* A "carapace,nic" child of a VM node: its switch must be declared (switch
 * nodes are read first), its MAC a unicast one no other NIC of that switch has. */
static int parse_nic(const void *fdt, int node, struct vm_desc *d, const struct host_info *hi,
		     const char **err)
{
	static const uint8_t zero[ETH_ALEN];
	const char *sw = get_string(fdt, node, "carapace,switch");
	const uint8_t *mac;
	struct vm_nic_desc *nic;
	uint64_t pps, bw;
	int len, rc;

	if (d->nr_nics == VM_MAX_NICS)
		return *err = "too many NICs in a vm node", -HYP_ENOMEM;
	if (!sw || !find_switch(hi, sw))
		return *err = "NIC on an unknown switch", -HYP_ENOENT;
	mac = fdt_getprop(fdt, node, "local-mac-address", &len);
	if (!mac || len != ETH_ALEN)
		return *err = "NIC without a 6-byte local-mac-address", -HYP_EINVAL;
	if ((mac[0] & 1) || !memcmp(mac, zero, ETH_ALEN))
		return *err = "NIC MAC is multicast or zero", -HYP_EINVAL;
	if (mac_taken(hi, d, sw, mac))
		return *err = "two NICs with the same MAC on one switch", -HYP_EEXIST;
	rc = parse_rate(fdt, node, &nic_pps, VM_NIC_PPS_DEFAULT, &pps, err);
	if (!rc)
		rc = parse_rate(fdt, node, &bandwidth, VM_NIC_BANDWIDTH_DEFAULT, &bw, err);
	if (rc)
		return rc;
	nic = &d->nics[d->nr_nics++];
	memcpy(nic->sw, sw, strlen(sw) + 1);
	memcpy(nic->mac, mac, ETH_ALEN);
	nic->pps = pps;
	nic->bandwidth = bw;
	return 0;
}

/* One "carapace,vm" node under /chosen (see docs/user-guide.md). */
static int parse_vm(const void *fdt, int node, struct vm_desc *d, struct host_info *hi,
		    uint32_t *pci_used, const char **err)
{
	const char *name = get_string(fdt, node, "carapace,name");
	const char *cfi = get_string(fdt, node, "carapace,cfi");
	const char *args = get_string(fdt, node, "bootargs");
	const char *irqchip = get_string(fdt, node, "carapace,irqchip");
	const fdt32_t *mem, *cpus;
	int len, child;

	memset(d, 0, sizeof(*d));
	if (!name || !*name || strlen(name) >= sizeof(d->name))
		return *err = "vm node without a valid carapace,name", -HYP_EINVAL;
	memcpy(d->name, name, strlen(name) + 1);
	mem = fdt_getprop(fdt, node, "carapace,memory", &len);
	if (!mem || (len != 4 && len != 8))
		return *err = "vm node without carapace,memory", -HYP_EINVAL;
	d->memory = read_cells(mem, len / 4);
	d->debug = fdt_getprop(fdt, node, "carapace,debug", NULL) != NULL;
	cpus = fdt_getprop(fdt, node, "carapace,vcpus", &len);
	d->vcpus = cpus && len == 4 ? fdt32_to_cpu(*cpus) : 1;
	if (cfi && parse_cfi_policy(cfi, &d->cfi))
		return *err = "unknown carapace,cfi policy", -HYP_EINVAL;
	if (irqchip && !strcmp(irqchip, "aia"))
		d->irqchip = VM_IRQCHIP_AIA;
	else if (irqchip && strcmp(irqchip, "plic"))
		return *err = "unknown carapace,irqchip (plic or aia)", -HYP_EINVAL;
	if (args) {
		if (strlen(args) >= sizeof(d->bootargs))
			return *err = "bootargs too long", -HYP_EINVAL;
		memcpy(d->bootargs, args, strlen(args) + 1);
	}
	fdt_for_each_subnode(child, fdt, node) {
		struct mm_range r;
		unsigned int nr = 0;
		int rc = 0;

		/* devices have no reg: told apart before the modules' check */
		if (!fdt_node_check_compatible(fdt, child, "carapace,disk")) {
			rc = parse_disk(fdt, child, d, pci_used, err);
			if (rc)
				return rc;
			continue;
		}
		if (!fdt_node_check_compatible(fdt, child, "carapace,nic")) {
			rc = parse_nic(fdt, child, d, hi, err);
			if (rc)
				return rc;
			continue;
		}
		if (read_reg(fdt, child, &r, &nr, 1))
			return *err = "bad module reg", -HYP_EINVAL;
		if (!fdt_node_check_compatible(fdt, child, "carapace,kernel")) {
			rc = add_image(hi, d->name, ".kernel", &r, err);
			if (!rc)
				memcpy(d->kernel, hi->images[hi->nr_images - 1].name, sizeof(d->kernel));
		} else if (!fdt_node_check_compatible(fdt, child, "carapace,ramdisk")) {
			rc = add_image(hi, d->name, ".initrd", &r, err);
			if (!rc)
				memcpy(d->initrd, hi->images[hi->nr_images - 1].name, sizeof(d->initrd));
		}
		if (rc)
			return rc;
	}
	if (!d->kernel[0])
		return *err = "vm node without a kernel module", -HYP_EINVAL;
	return 0;
}

/* /chosen carapace,selftest-cfi = "ret" | "call" (HOST_SELFTEST_CFI_*). */
static uint8_t selftest_cfi(const void *fdt, int chosen)
{
	int len;
	const char *v = fdt_getprop(fdt, chosen, "carapace,selftest-cfi", &len);

	if (!v)
		return HOST_SELFTEST_CFI_NONE;
	if (len == 4 && !memcmp(v, "ret", 4))
		return HOST_SELFTEST_CFI_RET;
	if (len == 5 && !memcmp(v, "call", 5))
		return HOST_SELFTEST_CFI_CALL;
	return HOST_SELFTEST_CFI_BAD;
}

static int parse_chosen(const void *fdt, struct host_info *hi, const char **err)
{
	int chosen = fdt_path_offset(fdt, "/chosen"), node, len, rc;
	uint32_t pci_used = 0;		/* bus 0 device numbers taken (disks, uplinks) */
	const fdt32_t *ts;
	const void *seed, *wx;

	hi->partial_flush_ms = 20;
	if (chosen < 0)
		return 0;
	ts = fdt_getprop(fdt, chosen, "carapace,timeslice-us", &len);
	if (ts && len == 4)
		hi->timeslice_us = fdt32_to_cpu(*ts);
	ts = fdt_getprop(fdt, chosen, "carapace,partial-flush-ms", &len);
	if (ts && len == 4)
		hi->partial_flush_ms = fdt32_to_cpu(*ts);
	seed = fdt_getprop(fdt, chosen, "rng-seed", &len);
	if (seed && len > 0) {
		hi->rng_seed_len = MIN((unsigned int)len, (unsigned int)sizeof(hi->rng_seed));
		memcpy(hi->rng_seed, seed, hi->rng_seed_len);
	}
	hi->persist = fdt_getprop(fdt, chosen, "carapace,persist", NULL) != NULL;
	hi->wfi_traps = fdt_getprop(fdt, chosen, "carapace,wfi-traps", NULL) != NULL;
	hi->selftest_pci_irq = fdt_getprop(fdt, chosen, "carapace,selftest-pci-irq", NULL) != NULL;
	hi->selftest_cfi = selftest_cfi(fdt, chosen);
	hi->incoming = fdt_getprop(fdt, chosen, "carapace,incoming", NULL) != NULL;
	hi->persist |= hi->incoming;
	ts = fdt_getprop(fdt, chosen, "carapace,incoming-disks", &len);
	for (int i = 0; ts && i < len / 4 && i < (int)ARRAY_SIZE(hi->incoming_disks); i++) {
		uint32_t pci = fdt32_to_cpu(ts[i]);

		/* another number is no host disk: 0, as sent (the bind refuses) */
		if (pci >= HOST_PCI_DEV_MIN && pci <= HOST_PCI_DEV_MAX)
			hi->incoming_disks[i] = (uint8_t)pci;
	}
	hi->incoming_copy = fdt_getprop(fdt, chosen, "carapace,incoming-copy-disks", NULL) != NULL;
	hi->selftest_hostio = fdt_getprop(fdt, chosen, "carapace,selftest-hostio", NULL) != NULL;
	wx = fdt_getprop(fdt, chosen, "carapace,selftest-wx", &len);
	if (wx)		/* "exec": jump into data; anything else: store to text */
		hi->selftest_wx = len == 5 && !memcmp(wx, "exec", 5) ? HOST_SELFTEST_WX_EXEC :
				  HOST_SELFTEST_WX_STORE;
	ts = fdt_getprop(fdt, chosen, "carapace,vmid-bits", &len);
	if (ts && len == 4)
		hi->vmid_bits = fdt32_to_cpu(*ts);
	ts = fdt_getprop(fdt, chosen, "carapace,stream-stall-ms", &len);
	if (ts && len == 4)
		hi->stream_stall_ms = fdt32_to_cpu(*ts);
	/* switches first: a VM's NIC names one, wherever its node is */
	fdt_for_each_subnode(node, fdt, chosen) {
		if (!fdt_node_check_compatible(fdt, node, "carapace,switch")) {
			rc = parse_switch(fdt, node, hi, &pci_used, err);
			if (rc)
				return rc;
		}
	}
	fdt_for_each_subnode(node, fdt, chosen) {
		if (!fdt_node_check_compatible(fdt, node, "carapace,image")) {
			const char *name = get_string(fdt, node, "carapace,name");
			struct mm_range r;
			unsigned int nr = 0;

			if (!name || !*name || read_reg(fdt, node, &r, &nr, 1))
				return *err = "image node without a name or reg", -HYP_EINVAL;
			rc = add_image(hi, name, "", &r, err);
			if (rc)
				return rc;
			continue;
		}
		if (fdt_node_check_compatible(fdt, node, "carapace,vm"))
			continue;
		if (hi->nr_vms == HOST_MAX_VMS)
			return *err = "too many VMs", -HYP_ENOMEM;
		rc = parse_vm(fdt, node, &hi->vms[hi->nr_vms], hi, &pci_used, err);
		if (rc)
			return rc;
		hi->nr_vms++;
	}
	return 0;
}

int fdt_host_parse(const void *fdt, struct host_info *hi, const char **err)
{
	int rc;

	memset(hi, 0, sizeof(*hi));
	*err = "";
	if (fdt_check_header(fdt))
		return *err = "bad FDT header", -HYP_EINVAL;
	rc = parse_cpus(fdt, hi, err);
	if (!rc)
		rc = parse_memory(fdt, hi, err);
	if (!rc && parse_uart(fdt, hi))
		hi->uart_base = 0;	/* no console: still run, silently */
	if (!rc) {
		struct host_nodes hn;
		int plic, aplic;

		find_host_nodes(fdt, &hn);
		plic = parse_plic(fdt, hi, &hn);	/* the bridge's usual interrupt parent */
		parse_imsic(fdt, hi, &hn);
		aplic = parse_aplic(fdt, hi, &hn);	/* or, on an AIA machine, this */
		parse_sswi(fdt, hi, &hn);
		if (plic >= 0)
			parse_pci(fdt, hi, &hn, plic, hi->plic.phandle);
		else
			parse_pci(fdt, hi, &hn, aplic, hi->aplic.phandle);
	}
	if (!rc)
		rc = parse_chosen(fdt, hi, err);
	return rc;
}
