/* SPDX-License-Identifier: MIT */
/* hyp/fdt/fdt_host.c: fdt_host_parse() on host DTs built here with libfdt's
 * sequential-write API, shaped like QEMU virt's (plus OpenSBI's reserved memory
 * and Carapace's /chosen VM nodes). */
#include <stdlib.h>
#include <string.h>
#include <libfdt.h>
#include <errno.h>
#include <fdt_host.h>
#include "test.h"

/* The image a VM description names (the parser registers each VM's modules). */
static const struct host_image *img(const struct host_info *hi, const char *name)
{
	static const struct host_image none;

	for (unsigned int i = 0; i < hi->nr_images; i++)
		if (!strcmp(hi->images[i].name, name))
			return &hi->images[i];
	return &none;
}

#define MAX_SPEC_VMS	10
#define VM_BOOTARGS_MAX	512	/* sizeof(struct vm_desc.bootargs), checked below */
#define NO_VCPUS	(-1)

struct vm_spec {
	const char *node;		/* node name; NULL: "vm@<index>" */
	const char *compatible;		/* NULL: "carapace,vm" */
	const char *name;		/* NULL: no carapace,name */
	int mem_cells;			/* 0: no carapace,memory, else 1 or 2 cells */
	uint64_t memory;
	int vcpus;			/* NO_VCPUS: property absent */
	const char *cfi;		/* NULL: absent */
	const char *irqchip;		/* NULL: absent */
	const char *bootargs;		/* NULL: absent */
	int own_cells;			/* vm node states #address-cells/#size-cells = 1 */
	uint64_t kernel_addr, kernel_size;	/* size 0: no kernel module node */
	uint64_t initrd_addr, initrd_size;	/* size 0: no ramdisk node */
	int kernel_bad_reg;		/* reg of 3 cells */
	int other_module;		/* a module node neither kernel nor ramdisk */
	struct disk_spec {
		int pci;		/* carapace,pci-dev; 0: absent; -1: two cells; -2: <0> */
		int ro;			/* carapace,read-only */
		struct rate_spec {
			int len;	/* bytes of the property: 0 absent, 4 or 8 cells */
			uint64_t v;
		} iops, bw;		/* carapace,iops, carapace,bandwidth */
	} disks[3];
	unsigned int nr_disks;
	struct nic_spec {
		const char *sw;		/* carapace,switch; NULL: absent */
		uint8_t mac[8];
		int mac_len;		/* 0: 6 */
		struct rate_spec pps, bw;	/* carapace,pps, carapace,bandwidth */
	} nics[3];
	unsigned int nr_nics;
};

#define MAX_SPEC_SWITCHES	10
struct switch_spec {
	const char *name;		/* NULL: no carapace,name */
	int uplink;			/* carapace,uplink-pci-dev; 0: absent; -1: two cells; -2: <0> */
};

struct dt_spec {
	int no_cpus, no_timebase, no_cpu_nodes, no_memory, no_reserved, no_chosen;
	int no_serial, no_stdout;
	const char *const *cpu_ext[2];	/* riscv,isa-extensions of cpu@0, cpu@1; NULL: default */
	int cpu1_no_ext;		/* cpu@1 without riscv,isa-extensions at all */
	uint32_t cboz_block[2];		/* riscv,cboz-block-size of cpu@0, cpu@1; 0: absent */
	int cpu2_disabled;		/* add cpu@2, status "disabled", no extensions */
	int extra_cpus;			/* add usable cpu@2.. (after cpu@2 if disabled) */
	int second_memory;		/* add /memory@100000000 */
	int second_uart;		/* add serial@10001000 (reg-shift 2) and point stdout-path there */
	const char *stdout_path;	/* NULL: "/soc/serial@10000000" */
	int timeslice;			/* 0: absent */
	int chosen_other_child;		/* a non-VM child node in /chosen */
	int pcie;			/* add QEMU virt's pcie@30000000 (generic ECAM) */
	uint64_t pcie_ecam_size;	/* 0: QEMU's 256 MiB */
	int pcie_ranges_cut;		/* drop the last cell of ranges */
	int pcie_size_cells;		/* 0: 2 */
	int pcie_mem32_past_4g;		/* the 32-bit window crosses 4 GiB */
	int pcie_mem64_wraps;		/* the 64-bit window's end overflows */
	int pcie_mem32_on_ram;		/* the 32-bit window at 0x80000000 (RAM) */
	int pcie_intx;			/* interrupt-map: 0 none, 1 QEMU's (4 slots x 4 pins),
					 * 2 cut inside the last entry, 3 a parent of 2 cells */
	int plic;			/* plic@c000000 as QEMU virt's (riscv,plic0, phandle 0x20,
					 * both harts' M and S contexts): 1; 2 without riscv,ndev,
					 * 3 reg too short for hart 1's context, 4 an unknown
					 * controller between the harts' entries, 5 reg on RAM */
	struct vm_spec vm[MAX_SPEC_VMS];
	unsigned int nr_vms;
	struct switch_spec sw[MAX_SPEC_SWITCHES];	/* after the VM nodes: order is free */
	unsigned int nr_sw;
};

static const char *const default_ext[] = {
	"i", "m", "a", "f", "d", "c", "h", "zicsr", "zifencei", "zicfilp", "zicfiss",
	"smstateen", "sstc", "svadu", NULL,
};
static const char *const ext_no_zicfiss[] = { "i", "m", "h", "zicfilp", "smstateen", "sstc", NULL };
static const char *const ext_no_sstc[] = { "i", "m", "h", "zicfilp", "zicfiss", "smstateen", NULL };
static const char *const ext_no_smstateen[] = { "h", "zicfilp", "zicfiss", "sstc", NULL };
static const char *const ext_no_zicfilp[] = { "h", "zicfiss", "smstateen", "sstc", NULL };

static char dtb[64 * 1024] __attribute__((aligned(8)));

static void spec_default(struct dt_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->timeslice = 1000;
	s->nr_vms = 1;
	s->vm[0] = (struct vm_spec){
		.name = "a", .mem_cells = 2, .memory = 0x4000000, .vcpus = 2, .cfi = "trap",
		.bootargs = "x=1", .kernel_addr = 0x88000000, .kernel_size = 0x1000,
		.initrd_addr = 0x89000000, .initrd_size = 0x2000,
	};
}

/* a second, minimal VM: 1-cell memory, default vcpus, no cfi/bootargs/initrd */
static struct vm_spec vm_beta(void)
{
	return (struct vm_spec){
		.name = "beta", .mem_cells = 1, .memory = 0x2000000, .vcpus = NO_VCPUS,
		.kernel_addr = 0x8a000000, .kernel_size = 0x3000,
	};
}

static int builder_rc;
#define B(x)                                                                  \
	do {                                                                  \
		int rc_ = (x);                                                \
		if (rc_ && !builder_rc)                                       \
			builder_rc = rc_;                                     \
	} while (0)

static void prop_cells(void *fdt, const char *name, const uint32_t *c, int n)
{
	fdt32_t v[8];

	for (int i = 0; i < n; i++)
		v[i] = cpu_to_fdt32(c[i]);
	B(fdt_property(fdt, name, v, n * 4));
}

/* a rate property as given: absent, one or two cells, or bytes of another length */
static void prop_rate(void *fdt, const char *name, const struct rate_spec *r)
{
	uint32_t c[2] = { (uint32_t)(r->v >> 32), (uint32_t)r->v };
	uint8_t raw[16] = { 0 };

	if (r->len == 4)
		prop_cells(fdt, name, c + 1, 1);
	else if (r->len == 8)
		prop_cells(fdt, name, c, 2);
	else if (r->len)
		B(fdt_property(fdt, name, raw, r->len));
}

static void prop_reg2(void *fdt, uint64_t a, uint64_t s)
{
	uint32_t c[4] = { (uint32_t)(a >> 32), (uint32_t)a, (uint32_t)(s >> 32), (uint32_t)s };

	prop_cells(fdt, "reg", c, 4);
}

static void prop_strings(void *fdt, const char *name, const char *const *list)
{
	char buf[512];
	int len = 0;

	for (; *list; list++) {
		size_t n = strlen(*list) + 1;

		memcpy(buf + len, *list, n);
		len += (int)n;
	}
	B(fdt_property(fdt, name, buf, len));
}

#define INTC_PHANDLE(i)	(0x10u + (uint32_t)(i))
#define PLIC_PHANDLE	0x20u

static uint32_t cboz_block;	/* the next build_cpu()'s riscv,cboz-block-size; 0: none */

static void build_cpu(void *fdt, int i, const char *const *ext, const char *status)
{
	char name[16];

	memcpy(name, "cpu@0", 6);
	name[4] = (char)('0' + i);
	B(fdt_begin_node(fdt, name));
	B(fdt_property_string(fdt, "device_type", "cpu"));
	B(fdt_property_u32(fdt, "reg", (uint32_t)i));
	B(fdt_property_string(fdt, "status", status));
	B(fdt_property_string(fdt, "compatible", "riscv"));
	B(fdt_property_string(fdt, "riscv,isa-base", "rv64i"));
	if (ext)
		prop_strings(fdt, "riscv,isa-extensions", ext);
	if (cboz_block)
		B(fdt_property_u32(fdt, "riscv,cboz-block-size", cboz_block));
	B(fdt_begin_node(fdt, "interrupt-controller"));
	B(fdt_property_string(fdt, "compatible", "riscv,cpu-intc"));
	B(fdt_property(fdt, "interrupt-controller", "", 0));
	B(fdt_property_u32(fdt, "#interrupt-cells", 1));
	B(fdt_property_u32(fdt, "phandle", INTC_PHANDLE(i)));
	B(fdt_end_node(fdt));
	B(fdt_end_node(fdt));
}

/* The host PLIC: interrupts-extended lists each hart's M (cause 11) and S
 * (cause 9) external interrupt, so hart h's S-mode context is 2h + 1. */
static void build_plic(void *fdt, const struct dt_spec *s)
{
	fdt32_t ie[8];
	const uint32_t cells[8] = { INTC_PHANDLE(0), 11, INTC_PHANDLE(0), 9,
				    s->plic == 4 ? 0x99 : INTC_PHANDLE(1), 11, INTC_PHANDLE(1), 9 };

	for (int i = 0; i < 8; i++)
		ie[i] = cpu_to_fdt32(cells[i]);
	B(fdt_begin_node(fdt, "plic@c000000"));
	B(fdt_property_string(fdt, "compatible", "riscv,plic0"));
	B(fdt_property_u32(fdt, "#address-cells", 0));
	B(fdt_property_u32(fdt, "#interrupt-cells", 1));
	B(fdt_property(fdt, "interrupt-controller", "", 0));
	if (s->plic != 2)
		B(fdt_property_u32(fdt, "riscv,ndev", 95));
	prop_reg2(fdt, s->plic == 5 ? 0x80000000 : 0xc000000, s->plic == 3 ? 0x202000 : 0x600000);
	B(fdt_property(fdt, "interrupts-extended", ie, sizeof(ie)));
	B(fdt_property_u32(fdt, "phandle", PLIC_PHANDLE));
	B(fdt_end_node(fdt));
}

static void build_vm(void *fdt, const struct vm_spec *v, unsigned int idx)
{
	char node[16] = "vm@0";

	node[3] = (char)('0' + idx);
	B(fdt_begin_node(fdt, v->node ? v->node : node));
	B(fdt_property_string(fdt, "compatible", v->compatible ? v->compatible : "carapace,vm"));
	if (v->own_cells) {
		B(fdt_property_u32(fdt, "#address-cells", 1));
		B(fdt_property_u32(fdt, "#size-cells", 1));
	}
	if (v->name)
		B(fdt_property_string(fdt, "carapace,name", v->name));
	if (v->mem_cells == 2)
		B(fdt_property_u64(fdt, "carapace,memory", v->memory));
	else if (v->mem_cells == 1)
		B(fdt_property_u32(fdt, "carapace,memory", (uint32_t)v->memory));
	if (v->vcpus != NO_VCPUS)
		B(fdt_property_u32(fdt, "carapace,vcpus", (uint32_t)v->vcpus));
	if (v->cfi)
		B(fdt_property_string(fdt, "carapace,cfi", v->cfi));
	if (v->irqchip)
		B(fdt_property_string(fdt, "carapace,irqchip", v->irqchip));
	if (v->bootargs)
		B(fdt_property_string(fdt, "bootargs", v->bootargs));
	if (v->kernel_size) {
		B(fdt_begin_node(fdt, "kernel"));
		B(fdt_property_string(fdt, "compatible", "carapace,kernel"));
		if (v->kernel_bad_reg) {
			uint32_t c[3] = { 0, (uint32_t)v->kernel_addr, (uint32_t)v->kernel_size };

			prop_cells(fdt, "reg", c, 3);
		} else if (v->own_cells) {
			uint32_t c[2] = { (uint32_t)v->kernel_addr, (uint32_t)v->kernel_size };

			prop_cells(fdt, "reg", c, 2);
		} else {
			prop_reg2(fdt, v->kernel_addr, v->kernel_size);
		}
		B(fdt_end_node(fdt));
	}
	if (v->other_module) {
		B(fdt_begin_node(fdt, "module@8b000000"));
		B(fdt_property_string(fdt, "compatible", "vendor,firmware"));
		if (v->own_cells) {
			uint32_t c[2] = { 0x8b000000, 0x4000 };

			prop_cells(fdt, "reg", c, 2);
		} else {
			prop_reg2(fdt, 0x8b000000, 0x4000);
		}
		B(fdt_end_node(fdt));
	}
	for (unsigned int i = 0; i < v->nr_disks; i++) {
		char n[8] = "disk@0";

		n[5] = (char)('0' + i);
		B(fdt_begin_node(fdt, n));
		B(fdt_property_string(fdt, "compatible", "carapace,disk"));
		if (v->disks[i].pci > 0) {
			B(fdt_property_u32(fdt, "carapace,pci-dev", (uint32_t)v->disks[i].pci));
		} else if (v->disks[i].pci == -1) {
			B(fdt_property_u64(fdt, "carapace,pci-dev", 3));
		} else if (v->disks[i].pci == -2) {
			B(fdt_property_u32(fdt, "carapace,pci-dev", 0));
		}
		if (v->disks[i].ro)
			B(fdt_property(fdt, "carapace,read-only", "", 0));
		prop_rate(fdt, "carapace,iops", &v->disks[i].iops);
		prop_rate(fdt, "carapace,bandwidth", &v->disks[i].bw);
		B(fdt_end_node(fdt));
	}
	for (unsigned int i = 0; i < v->nr_nics; i++) {
		char n[8] = "nic@0";

		n[4] = (char)('0' + i);
		B(fdt_begin_node(fdt, n));
		B(fdt_property_string(fdt, "compatible", "carapace,nic"));
		if (v->nics[i].sw)
			B(fdt_property_string(fdt, "carapace,switch", v->nics[i].sw));
		B(fdt_property(fdt, "local-mac-address", v->nics[i].mac,
			       v->nics[i].mac_len ? v->nics[i].mac_len : 6));
		prop_rate(fdt, "carapace,pps", &v->nics[i].pps);
		prop_rate(fdt, "carapace,bandwidth", &v->nics[i].bw);
		B(fdt_end_node(fdt));
	}
	if (v->initrd_size) {
		B(fdt_begin_node(fdt, "ramdisk"));
		B(fdt_property_string(fdt, "compatible", "carapace,ramdisk"));
		prop_reg2(fdt, v->initrd_addr, v->initrd_size);
		B(fdt_end_node(fdt));
	}
	B(fdt_end_node(fdt));
}

/* QEMU virt's gpex node (hw/riscv/virt.c): #address-cells 3, I/O, 32-bit and
 * 64-bit windows in ranges, ECAM for 256 buses. */
static void build_pcie(void *fdt, const struct dt_spec *s)
{
	int sc = s->pcie_size_cells ? s->pcie_size_cells : 2;
	uint64_t m32 = s->pcie_mem32_past_4g ? 0xc0010000ull :
		       s->pcie_mem32_on_ram ? 0x80000000ull : 0x40000000ull;
	uint64_t m64 = s->pcie_mem64_wraps ? 0xfffffffff0000000ull : 0x400000000ull;
	uint32_t r[3 * 7], *e = r;
	const uint64_t win[3][3] = {	/* space, address (PCI = CPU), size */
		{ 1, 0x3000000, 0x10000 }, { 2, m32, 0x40000000 }, { 3, m64, 0x400000000ull },
	};

	for (int i = 0; i < 3; i++) {
		*e++ = (uint32_t)win[i][0] << 24;
		*e++ = (uint32_t)(i ? win[i][1] >> 32 : 0);
		*e++ = (uint32_t)(i ? win[i][1] : 0);
		*e++ = (uint32_t)(win[i][1] >> 32);
		*e++ = (uint32_t)win[i][1];
		if (sc == 2)
			*e++ = (uint32_t)(win[i][2] >> 32);
		*e++ = (uint32_t)win[i][2];
	}
	B(fdt_begin_node(fdt, "pci@30000000"));
	B(fdt_property_string(fdt, "compatible", "pci-host-ecam-generic"));
	B(fdt_property_string(fdt, "device_type", "pci"));
	B(fdt_property_u32(fdt, "#address-cells", 3));
	B(fdt_property_u32(fdt, "#size-cells", (uint32_t)sc));
	prop_cells(fdt, "bus-range", (const uint32_t[]){ 0, 0xff }, 2);
	prop_reg2(fdt, 0x30000000, s->pcie_ecam_size ? s->pcie_ecam_size : 0x10000000);
	{
		fdt32_t v[3 * 7];
		int n = (int)(e - r) - (s->pcie_ranges_cut ? 1 : 0);

		for (int i = 0; i < n; i++)
			v[i] = cpu_to_fdt32(r[i]);
		B(fdt_property(fdt, "ranges", v, n * 4));
	}
	if (s->pcie_intx) {
		fdt32_t map[16 * 6];
		int n = 0;

		for (uint32_t slot = 0; slot < 4; slot++)
			for (uint32_t pin = 1; pin <= 4; pin++) {
				const uint32_t e[6] = { slot << 11, 0, 0, pin, s->plic ? PLIC_PHANDLE : 1,
							32 + (slot + pin - 1) % 4 };

				for (int i = 0; i < 6; i++)
					map[n++] = cpu_to_fdt32(e[i]);
			}
		prop_cells(fdt, "interrupt-map-mask", (const uint32_t[]){ 0x1800, 0, 0, 7 }, 4);
		B(fdt_property(fdt, "interrupt-map", map, (n - (s->pcie_intx == 2 ? 1 : 0)) * 4));
	}
	B(fdt_end_node(fdt));
	if (s->pcie_intx && !s->plic) {	/* the PLIC the map points at, phandle 1 */
		B(fdt_begin_node(fdt, "plic@c000000"));
		B(fdt_property_string(fdt, "compatible", "sifive,plic-1.0.0"));
		B(fdt_property_u32(fdt, "#address-cells", 0));
		B(fdt_property_u32(fdt, "#interrupt-cells", s->pcie_intx == 3 ? 2 : 1));
		B(fdt_property_u32(fdt, "phandle", 1));
		B(fdt_end_node(fdt));
	}
}

/* Build the DT described by @s into dtb[]; returns it (a failed build fails the test). */
static const void *build(const struct dt_spec *s)
{
	void *fdt = dtb;

	builder_rc = 0;
	memset(dtb, 0xee, sizeof(dtb));
	B(fdt_create(fdt, sizeof(dtb)));
	B(fdt_add_reservemap_entry(fdt, 0x80000000, 0x40000));
	B(fdt_finish_reservemap(fdt));
	B(fdt_begin_node(fdt, ""));
	B(fdt_property_u32(fdt, "#address-cells", 2));
	B(fdt_property_u32(fdt, "#size-cells", 2));
	B(fdt_property_string(fdt, "compatible", "riscv-virtio"));
	B(fdt_property_string(fdt, "model", "riscv-virtio,qemu"));

	if (!s->no_chosen) {
		B(fdt_begin_node(fdt, "chosen"));
		B(fdt_property_u32(fdt, "#address-cells", 2));
		B(fdt_property_u32(fdt, "#size-cells", 2));
		if (!s->no_stdout)
			B(fdt_property_string(fdt, "stdout-path",
					      s->stdout_path ? s->stdout_path :
					      s->second_uart ? "/soc/serial@10001000" :
							       "/soc/serial@10000000"));
		if (s->timeslice)
			B(fdt_property_u32(fdt, "carapace,timeslice-us", (uint32_t)s->timeslice));
		B(fdt_property_string(fdt, "bootargs", "host args are not a VM's"));
		for (unsigned int i = 0; i < s->nr_vms; i++)
			build_vm(fdt, &s->vm[i], i);
		for (unsigned int i = 0; i < s->nr_sw; i++) {
			char n[12] = "switch@0";

			n[7] = (char)('0' + i);
			B(fdt_begin_node(fdt, n));
			B(fdt_property_string(fdt, "compatible", "carapace,switch"));
			if (s->sw[i].name)
				B(fdt_property_string(fdt, "carapace,name", s->sw[i].name));
			if (s->sw[i].uplink > 0)
				B(fdt_property_u32(fdt, "carapace,uplink-pci-dev",
						   (uint32_t)s->sw[i].uplink));
			else if (s->sw[i].uplink == -1)
				B(fdt_property_u64(fdt, "carapace,uplink-pci-dev", 3));
			else if (s->sw[i].uplink == -2)
				B(fdt_property_u32(fdt, "carapace,uplink-pci-dev", 0));
			B(fdt_end_node(fdt));
		}
		if (s->chosen_other_child) {
			B(fdt_begin_node(fdt, "opensbi-domains"));
			B(fdt_property_string(fdt, "compatible", "opensbi,domain,config"));
			B(fdt_end_node(fdt));
		}
		B(fdt_end_node(fdt));
	}

	if (!s->no_memory) {
		B(fdt_begin_node(fdt, "memory@80000000"));
		B(fdt_property_string(fdt, "device_type", "memory"));
		prop_reg2(fdt, 0x80000000, 0x40000000);
		B(fdt_end_node(fdt));
		if (s->second_memory) {
			B(fdt_begin_node(fdt, "memory@100000000"));
			B(fdt_property_string(fdt, "device_type", "memory"));
			prop_reg2(fdt, 0x100000000, 0x20000000);
			B(fdt_end_node(fdt));
		}
	}

	if (!s->no_reserved) {
		uint32_t two[8] = { 0, 0x80080000, 0, 0x1000, 0, 0x80090000, 0, 0x2000 };

		B(fdt_begin_node(fdt, "reserved-memory"));
		B(fdt_property_u32(fdt, "#address-cells", 2));
		B(fdt_property_u32(fdt, "#size-cells", 2));
		B(fdt_property(fdt, "ranges", "", 0));
		B(fdt_begin_node(fdt, "mmode_resv1@80000000"));
		prop_reg2(fdt, 0x80000000, 0x40000);
		B(fdt_property(fdt, "no-map", "", 0));
		B(fdt_end_node(fdt));
		B(fdt_begin_node(fdt, "mmode_resv0@80040000"));
		prop_reg2(fdt, 0x80040000, 0x20000);
		B(fdt_property(fdt, "no-map", "", 0));
		B(fdt_end_node(fdt));
		B(fdt_begin_node(fdt, "dynamic"));	/* size only: nothing to reserve */
		B(fdt_property_u64(fdt, "size", 0x100000));
		B(fdt_end_node(fdt));
		B(fdt_begin_node(fdt, "two@80080000"));	/* two (address, size) pairs */
		prop_cells(fdt, "reg", two, 8);
		B(fdt_end_node(fdt));
		B(fdt_end_node(fdt));
	}

	if (!s->no_cpus) {
		B(fdt_begin_node(fdt, "cpus"));
		B(fdt_property_u32(fdt, "#address-cells", 1));
		B(fdt_property_u32(fdt, "#size-cells", 0));
		if (!s->no_timebase)
			B(fdt_property_u32(fdt, "timebase-frequency", 10000000));
		if (!s->no_cpu_nodes) {
			cboz_block = s->cboz_block[0];
			build_cpu(fdt, 0, s->cpu_ext[0] ? s->cpu_ext[0] : default_ext, "okay");
			cboz_block = s->cboz_block[1];
			build_cpu(fdt, 1, s->cpu1_no_ext ? NULL :
					  s->cpu_ext[1] ? s->cpu_ext[1] : default_ext, "okay");
			cboz_block = 0;
			if (s->cpu2_disabled)
				build_cpu(fdt, 2, NULL, "disabled");
			for (int i = 0; i < s->extra_cpus; i++)
				build_cpu(fdt, 2 + !!s->cpu2_disabled + i, default_ext, "okay");
		}
		B(fdt_begin_node(fdt, "cpu-map"));
		B(fdt_begin_node(fdt, "cluster0"));
		B(fdt_end_node(fdt));
		B(fdt_end_node(fdt));
		B(fdt_end_node(fdt));
	}

	B(fdt_begin_node(fdt, "soc"));
	B(fdt_property_u32(fdt, "#address-cells", 2));
	B(fdt_property_u32(fdt, "#size-cells", 2));
	B(fdt_property_string(fdt, "compatible", "simple-bus"));
	B(fdt_property(fdt, "ranges", "", 0));
	B(fdt_begin_node(fdt, "rtc@101000"));
	B(fdt_property_string(fdt, "compatible", "google,goldfish-rtc"));
	prop_reg2(fdt, 0x101000, 0x1000);
	B(fdt_end_node(fdt));
	if (!s->no_serial) {
		B(fdt_begin_node(fdt, "serial@10000000"));
		B(fdt_property_string(fdt, "compatible", "ns16550a"));
		prop_reg2(fdt, 0x10000000, 0x100);
		B(fdt_property_u32(fdt, "clock-frequency", 3686400));
		B(fdt_property_u32(fdt, "interrupts", 10));
		B(fdt_end_node(fdt));
	}
	if (s->second_uart) {
		B(fdt_begin_node(fdt, "serial@10001000"));
		B(fdt_property_string(fdt, "compatible", "snps,dw-apb-uart"));
		prop_reg2(fdt, 0x10001000, 0x100);
		B(fdt_property_u32(fdt, "reg-shift", 2));
		B(fdt_end_node(fdt));
	}
	if (s->plic)
		build_plic(fdt, s);
	if (s->pcie)
		build_pcie(fdt, s);
	B(fdt_end_node(fdt));

	B(fdt_end_node(fdt));
	B(fdt_finish(fdt));
	EXPECT_EQ(builder_rc, 0);
	EXPECT_EQ(fdt_check_header(fdt), 0);
	return fdt;
}

static struct host_info hi;

static int parse(const struct dt_spec *s, const char **err)
{
	const void *fdt = build(s);

	memset(&hi, 0x5a, sizeof(hi));	/* fdt_host_parse must clear it */
	*err = NULL;
	return fdt_host_parse(fdt, &hi, err);
}

#define EXPECT_RANGE(r, b, s)                                                 \
	do {                                                                  \
		EXPECT_EQ((r).base, (b));                                     \
		EXPECT_EQ((r).size, (s));                                     \
	} while (0)

TEST(fdt_host_qemu_virt_all_fields)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_STREQ(err, "");

	EXPECT_EQ(hi.nr_mem, 1);
	EXPECT_RANGE(hi.mem[0], 0x80000000, 0x40000000);

	/* /reserved-memory in DT order, the DT itself, then the VM's images */
	EXPECT_EQ(hi.nr_reserved, 7);
	EXPECT_RANGE(hi.reserved[0], 0x80000000, 0x40000);
	EXPECT_RANGE(hi.reserved[1], 0x80040000, 0x20000);
	EXPECT_RANGE(hi.reserved[2], 0x80080000, 0x1000);
	EXPECT_RANGE(hi.reserved[3], 0x80090000, 0x2000);
	EXPECT_RANGE(hi.reserved[4], (uint64_t)(uintptr_t)dtb, fdt_totalsize(dtb));
	EXPECT_TRUE(fdt_totalsize(dtb) > 0x200 && fdt_totalsize(dtb) < sizeof(dtb));
	EXPECT_RANGE(hi.reserved[5], 0x88000000, 0x1000);
	EXPECT_RANGE(hi.reserved[6], 0x89000000, 0x2000);

	EXPECT_EQ(hi.nr_harts, 2);
	EXPECT_EQ(hi.hartids[0], 0);
	EXPECT_EQ(hi.hartids[1], 1);
	EXPECT_EQ(hi.timebase_hz, 10000000);
	EXPECT_EQ(hi.uart_base, 0x10000000);
	EXPECT_EQ(hi.uart_shift, 0);
	EXPECT_EQ(hi.timeslice_us, 1000);
	EXPECT_EQ(hi.isa_zicfilp, true);
	EXPECT_EQ(hi.isa_zicfiss, true);
	EXPECT_EQ(hi.isa_sstc, true);
	EXPECT_EQ(hi.isa_smstateen, true);

	EXPECT_EQ(hi.nr_vms, 1);
	EXPECT_STREQ(hi.vms[0].name, "a");
	EXPECT_EQ(hi.vms[0].memory, 0x4000000);
	EXPECT_EQ(hi.vms[0].vcpus, 2);
	EXPECT_EQ(hi.vms[0].cfi, CFI_POLICY_TRAP);
	EXPECT_STREQ(hi.vms[0].bootargs, "x=1");
	EXPECT_EQ(img(&hi, hi.vms[0].kernel)->addr, 0x88000000);
	EXPECT_EQ(img(&hi, hi.vms[0].kernel)->size, 0x1000);
	EXPECT_EQ(img(&hi, hi.vms[0].initrd)->addr, 0x89000000);
	EXPECT_EQ(img(&hi, hi.vms[0].initrd)->size, 0x2000);
	/* everything past the parsed entries is zero (hi was cleared) */
	EXPECT_EQ(hi.vms[1].name[0], 0);
	EXPECT_EQ(hi.vms[1].kernel[0], 0);
	EXPECT_EQ(hi.hartids[2], 0);
	EXPECT_EQ(hi.reserved[7].size, 0);
}

TEST(fdt_host_two_vms_and_defaults)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.vm[1] = vm_beta();
	s.nr_vms = 2;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_STREQ(err, "");
	EXPECT_EQ(hi.nr_vms, 2);
	EXPECT_STREQ(hi.vms[1].name, "beta");
	EXPECT_EQ(hi.vms[1].memory, 0x2000000);	/* one cell */
	EXPECT_EQ(hi.vms[1].vcpus, 1);			/* default */
	EXPECT_EQ(hi.vms[1].cfi, CFI_POLICY_TRAP);	/* default */
	EXPECT_STREQ(hi.vms[1].bootargs, "");
	EXPECT_EQ(img(&hi, hi.vms[1].kernel)->addr, 0x8a000000);
	EXPECT_EQ(img(&hi, hi.vms[1].kernel)->size, 0x3000);
	EXPECT_STREQ(hi.vms[1].initrd, "");
		/* 4 reserved-memory + DT + a's kernel and initrd + beta's kernel */
	EXPECT_EQ(hi.nr_reserved, 8);
	EXPECT_RANGE(hi.reserved[7], 0x8a000000, 0x3000);
}

TEST(fdt_host_images_and_options)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	EXPECT_EQ(parse(&s, &err), 0);
	/* each VM's modules become images named after it */
	EXPECT_STREQ(hi.vms[0].kernel, "a.kernel");
	EXPECT_STREQ(hi.vms[0].initrd, "a.initrd");
	EXPECT_EQ(img(&hi, "a.kernel")->addr, 0x88000000);
	EXPECT_EQ(hi.persist, false);
	EXPECT_EQ(hi.vmid_bits, 0);
}

TEST(fdt_host_cfi_policies)
{
	static const char *const names[] = { "trap", "delegate", "strict", "off" };
	static const enum cfi_policy want[] = { CFI_POLICY_TRAP, CFI_POLICY_DELEGATE,
						CFI_POLICY_STRICT, CFI_POLICY_OFF };
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	for (unsigned int i = 0; i < 4; i++) {
		s.vm[i] = vm_beta();
		s.vm[i].name = names[i];	/* image names ("NAME.kernel") must differ */
		s.vm[i].cfi = names[i];
	}
	s.nr_vms = 4;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.nr_vms, 4);
	for (unsigned int i = 0; i < 4; i++)
		EXPECT_EQ(hi.vms[i].cfi, want[i]);
}

TEST(fdt_host_vm_node_own_cells_and_other_children)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.vm[0].own_cells = 1;		/* kernel reg = <0x88000000 0x1000> */
	s.vm[0].initrd_size = 0;
	s.vm[0].other_module = 1;	/* neither kernel nor ramdisk: ignored */
	s.chosen_other_child = 1;
	s.vm[1] = vm_beta();
	s.vm[1].compatible = "vendor,not-a-vm";	/* ignored */
	s.vm[2] = vm_beta();
	s.vm[2].name = "c";
	s.nr_vms = 3;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.nr_vms, 2);
	EXPECT_STREQ(hi.vms[0].name, "a");
	EXPECT_EQ(img(&hi, hi.vms[0].kernel)->addr, 0x88000000);
	EXPECT_EQ(img(&hi, hi.vms[0].kernel)->size, 0x1000);
	EXPECT_STREQ(hi.vms[0].initrd, "");
		EXPECT_STREQ(hi.vms[1].name, "c");
	/* 4 reserved-memory + DT + a's kernel + c's kernel */
	EXPECT_EQ(hi.nr_reserved, 7);
}

TEST(fdt_host_name_and_bootargs_limits)
{
	struct dt_spec s;
	const char *err;
	static char args[VM_BOOTARGS_MAX + 1];

	EXPECT_EQ(sizeof(hi.vms[0].bootargs), VM_BOOTARGS_MAX);
	EXPECT_EQ(sizeof(hi.vms[0].name), 16);
	spec_default(&s);
	s.vm[0].name = "fifteen-chars-x";	/* 15 + NUL fits name[16] */
	memset(args, 'b', sizeof(args) - 1);
	args[511] = '\0';			/* 511 + NUL fits bootargs[512] */
	s.vm[0].bootargs = args;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_STREQ(hi.vms[0].name, "fifteen-chars-x");
	EXPECT_EQ(strlen(hi.vms[0].bootargs), 511);
}

/* Zicboz for zeroing guest RAM (hyp/mm/mm_zero.c): every hart lists it with
 * the same block, a power of two from 16 to 4 KiB, or it is not used. */
TEST(fdt_host_cboz_block_needs_every_hart_alike)
{
	static const char *const with[] = { "h", "zicfilp", "zicfiss", "smstateen", "sstc",
					     "zicboz", NULL };
	static const struct { uint32_t b0, b1; const char *const *e1; uint32_t want; } c[] = {
		{ 64, 64, with, 64 },		/* QEMU virt's */
		{ 64, 64, default_ext, 0 },	/* cpu@1 does not list zicboz */
		{ 64, 0, with, 0 },		/* cpu@1 says no block */
		{ 64, 128, with, 0 },		/* blocks differ */
		{ 48, 48, with, 0 },		/* not a power of two */
		{ 8, 8, with, 0 },		/* too small */
		{ 8192, 8192, with, 0 },	/* too large */
	};
	struct dt_spec s;
	const char *err;

	for (unsigned int i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		spec_default(&s);
		s.cpu_ext[0] = with;
		s.cpu_ext[1] = c[i].e1;
		s.cboz_block[0] = c[i].b0;
		s.cboz_block[1] = c[i].b1;
		EXPECT_EQ(parse(&s, &err), 0);
		EXPECT_EQ(hi.cboz_block, c[i].want);
	}
	spec_default(&s);	/* the default DT has neither */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.cboz_block, 0);
}

TEST(fdt_host_isa_flags_need_every_hart)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.cpu_ext[1] = ext_no_zicfiss;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.isa_zicfiss, false);
	EXPECT_EQ(hi.isa_zicfilp, true);
	EXPECT_EQ(hi.isa_sstc, true);
	EXPECT_EQ(hi.isa_smstateen, true);

	spec_default(&s);
	s.cpu_ext[0] = ext_no_sstc;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.isa_sstc, false);
	EXPECT_EQ(hi.isa_zicfiss, true);

	spec_default(&s);
	s.cpu_ext[1] = ext_no_smstateen;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.isa_smstateen, false);
	EXPECT_EQ(hi.isa_zicfilp, true);

	spec_default(&s);
	s.cpu_ext[0] = ext_no_zicfilp;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.isa_zicfilp, false);
	EXPECT_EQ(hi.isa_zicfiss, true);

	spec_default(&s);
	s.cpu1_no_ext = 1;		/* no riscv,isa-extensions at all */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.nr_harts, 2);
	EXPECT_EQ(hi.isa_zicfilp, false);
	EXPECT_EQ(hi.isa_zicfiss, false);
	EXPECT_EQ(hi.isa_sstc, false);
	EXPECT_EQ(hi.isa_smstateen, false);
}

TEST(fdt_host_disabled_cpu_ignored)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.cpu2_disabled = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.nr_harts, 2);
	EXPECT_EQ(hi.hartids[2], 0);
	EXPECT_EQ(hi.isa_zicfiss, true);	/* its missing extensions do not count */
	EXPECT_EQ(hi.isa_sstc, true);
}

TEST(fdt_host_max_harts)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.cpu2_disabled = 1;
	s.extra_cpus = HOST_MAX_HARTS - 2;	/* cpu@3..cpu@8 */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.nr_harts, HOST_MAX_HARTS);
	EXPECT_EQ(hi.hartids[2], 3);
	EXPECT_EQ(hi.hartids[HOST_MAX_HARTS - 1], HOST_MAX_HARTS);
	EXPECT_EQ(hi.isa_zicfiss, true);

	s.extra_cpus = HOST_MAX_HARTS - 1;
	EXPECT_EQ(parse(&s, &err), -HYP_ENOMEM);
	EXPECT_STREQ(err, "too many harts");
}

TEST(fdt_host_second_memory_node)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.second_memory = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.nr_mem, 2);
	EXPECT_RANGE(hi.mem[0], 0x80000000, 0x40000000);
	EXPECT_RANGE(hi.mem[1], 0x100000000, 0x20000000);
}

TEST(fdt_host_uart_selection)
{
	struct dt_spec s;
	const char *err;

	/* stdout-path names a different UART than the first ns16550a */
	spec_default(&s);
	s.second_uart = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.uart_base, 0x10001000);
	EXPECT_EQ(hi.uart_shift, 2);

	/* options after ':' */
	spec_default(&s);
	s.second_uart = 1;
	s.stdout_path = "/soc/serial@10001000:115200n8";
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.uart_base, 0x10001000);

	/* no stdout-path: the first ns16550a */
	spec_default(&s);
	s.second_uart = 1;
	s.no_stdout = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.uart_base, 0x10000000);
	EXPECT_EQ(hi.uart_shift, 0);

	/* stdout-path to nowhere: falls back to ns16550a */
	spec_default(&s);
	s.stdout_path = "/soc/serial@deadbeef";
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.uart_base, 0x10000000);

	/* no UART at all: still fine, no console */
	spec_default(&s);
	s.no_serial = 1;
	s.no_stdout = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_STREQ(err, "");
	EXPECT_EQ(hi.uart_base, 0);
}

TEST(fdt_host_no_chosen_no_reserved)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.no_chosen = 1;
	s.no_reserved = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.nr_vms, 0);
	EXPECT_EQ(hi.timeslice_us, 0);
	EXPECT_EQ(hi.uart_base, 0x10000000);	/* by compatible */
	EXPECT_EQ(hi.nr_reserved, 1);		/* only the DT itself */
	EXPECT_RANGE(hi.reserved[0], (uint64_t)(uintptr_t)dtb, fdt_totalsize(dtb));

	spec_default(&s);
	s.timeslice = 0;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.timeslice_us, 0);
}

/* ---- errors: each returns -HYP_E* with its message ---- */

#define EXPECT_PARSE_ERR(s, rc, msg)                                          \
	do {                                                                  \
		const char *e_ = NULL;                                        \
		EXPECT_EQ(parse(s, &e_), rc);                                 \
		EXPECT_STREQ(e_, msg);                                        \
	} while (0)

TEST(fdt_host_err_bad_header)
{
	static char junk[256] __attribute__((aligned(8)));
	const char *err = NULL;

	memset(junk, 0, sizeof(junk));
	EXPECT_EQ(fdt_host_parse(junk, &hi, &err), -HYP_EINVAL);
	EXPECT_STREQ(err, "bad FDT header");
}

TEST(fdt_host_err_no_cpus)
{
	struct dt_spec s;

	spec_default(&s);
	s.no_cpus = 1;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "no /cpus node");
}

TEST(fdt_host_err_no_timebase)
{
	struct dt_spec s;

	spec_default(&s);
	s.no_timebase = 1;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "no /cpus/timebase-frequency");
}

TEST(fdt_host_err_no_cpu_nodes)
{
	struct dt_spec s;

	spec_default(&s);
	s.no_cpu_nodes = 1;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "no usable cpu nodes");
}

TEST(fdt_host_err_no_memory)
{
	struct dt_spec s;

	spec_default(&s);
	s.no_memory = 1;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "no memory nodes");
}

TEST(fdt_host_err_vm_without_name)
{
	struct dt_spec s;

	spec_default(&s);
	s.vm[0].name = NULL;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "vm node without a valid carapace,name");
	s.vm[0].name = "";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "vm node without a valid carapace,name");
	s.vm[0].name = "sixteen-chars-xx";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "vm node without a valid carapace,name");
}

TEST(fdt_host_err_vm_without_kernel)
{
	struct dt_spec s;

	spec_default(&s);
	s.vm[0].kernel_size = 0;	/* the ramdisk alone is not enough */
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "vm node without a kernel module");
}

TEST(fdt_host_err_vm_bad_module_reg)
{
	struct dt_spec s;

	spec_default(&s);
	s.vm[0].kernel_bad_reg = 1;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "bad module reg");
}

TEST(fdt_host_err_unknown_cfi_policy)
{
	struct dt_spec s;

	spec_default(&s);
	s.vm[0].cfi = "bogus";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "unknown carapace,cfi policy");
	s.vm[0].cfi = "Trap";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "unknown carapace,cfi policy");
	s.vm[0].cfi = "";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "unknown carapace,cfi policy");
}

/* carapace,irqchip: "plic" or absent is the PLIC, "aia" the AIA; nothing else */
TEST(fdt_host_vm_irqchip)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.vms[0].irqchip, VM_IRQCHIP_PLIC);
	s.vm[0].irqchip = "aia";
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.vms[0].irqchip, VM_IRQCHIP_AIA);
	s.vm[0].irqchip = "plic";
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.vms[0].irqchip, VM_IRQCHIP_PLIC);
	s.vm[0].irqchip = "AIA";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "unknown carapace,irqchip (plic or aia)");
	s.vm[0].irqchip = "";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "unknown carapace,irqchip (plic or aia)");
}

TEST(fdt_host_err_bootargs_too_long)
{
	struct dt_spec s;
	static char args[VM_BOOTARGS_MAX + 1];

	spec_default(&s);
	memset(args, 'b', VM_BOOTARGS_MAX);
	args[VM_BOOTARGS_MAX] = '\0';		/* 512 characters */
	s.vm[0].bootargs = args;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "bootargs too long");
}

TEST(fdt_host_err_vm_without_memory)
{
	struct dt_spec s;

	spec_default(&s);
	s.vm[0].mem_cells = 0;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "vm node without carapace,memory");
}

TEST(fdt_host_err_second_vm_bad)
{
	struct dt_spec s;

	spec_default(&s);
	s.vm[1] = vm_beta();
	s.vm[1].cfi = "nope";
	s.nr_vms = 2;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "unknown carapace,cfi policy");
	EXPECT_EQ(hi.nr_vms, 1);		/* the good one was counted */
}

TEST(fdt_host_err_too_many_vms)
{
	struct dt_spec s;

	static const char *const names[] = { "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8" };

	spec_default(&s);
	for (unsigned int i = 0; i < HOST_MAX_VMS; i++) {
		s.vm[i] = vm_beta();
		s.vm[i].name = names[i];
	}
	s.nr_vms = HOST_MAX_VMS;
	EXPECT_PARSE_ERR(&s, 0, "");
	EXPECT_EQ(hi.nr_vms, HOST_MAX_VMS);
	s.vm[HOST_MAX_VMS] = vm_beta();
	s.vm[HOST_MAX_VMS].name = names[HOST_MAX_VMS];
	s.nr_vms = HOST_MAX_VMS + 1;
	EXPECT_PARSE_ERR(&s, -HYP_ENOMEM, "too many VMs");
}

TEST(fdt_host_pcie_qemu_virt)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_FALSE(hi.pci.present);		/* no bridge: no PCI, still boots */
	s.pcie = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_TRUE(hi.pci.present);
	EXPECT_EQ(hi.pci.ecam_base, 0x30000000);
	EXPECT_EQ(hi.pci.ecam_size, 0x10000000);
	EXPECT_EQ(hi.pci.bus_start, 0);
	EXPECT_EQ(hi.pci.bus_end, 255);
	EXPECT_EQ(hi.pci.mem32.pci_base, 0x40000000);
	EXPECT_EQ(hi.pci.mem32.cpu_base, 0x40000000);
	EXPECT_EQ(hi.pci.mem32.size, 0x40000000);
	EXPECT_EQ(hi.pci.mem64.cpu_base, 0x400000000ull);
	EXPECT_EQ(hi.pci.mem64.size, 0x400000000ull);
	EXPECT_EQ(hi.pci.mem32.used, 0);
}

TEST(fdt_host_pcie_small_ecam_limits_buses)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.pcie = 1;
	s.pcie_ecam_size = 0x200000;		/* two buses' worth */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_TRUE(hi.pci.present);
	EXPECT_EQ(hi.pci.bus_end, 1);
	s.pcie_ecam_size = 0x1000;		/* not even one bus */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_FALSE(hi.pci.present);
}

TEST(fdt_host_pcie_bad_ranges_ignored)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.pcie = 1;
	s.pcie_ranges_cut = 1;			/* not a whole number of entries */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_FALSE(hi.pci.present);
	s.pcie_ranges_cut = 0;
	s.pcie_size_cells = 1;			/* 1-cell sizes parse too */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_TRUE(hi.pci.present);
	EXPECT_EQ(hi.pci.mem32.size, 0x40000000);
	EXPECT_EQ(hi.pci.mem64.size, 0);	/* 16 GiB does not fit one cell: truncated to 0 */
	s.pcie_size_cells = 0;
	s.pcie_mem32_past_4g = 1;		/* 32-bit BARs could not reach its end */
	s.pcie_mem64_wraps = 1;			/* its end overflows 64 bits */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.pci.mem32.size, 0);
	EXPECT_EQ(hi.pci.mem64.size, 0);
	EXPECT_FALSE(hi.pci.present);
}

TEST(fdt_host_pcie_interrupt_map)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.pcie = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.pci.nr_intx, 0);
	s.pcie_intx = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.pci.nr_intx, 16);
	EXPECT_EQ(hi.pci.intx_mask_hi, 0x1800);
	EXPECT_EQ(pci_intx_irq(&hi.pci, 0, 1, 0, 1), 33);	/* QEMU's swizzle */
	EXPECT_EQ(pci_intx_irq(&hi.pci, 0, 9, 0, 1), 33);	/* slot 9 masked to 1 */
	EXPECT_EQ(pci_intx_irq(&hi.pci, 0, 3, 0, 4), 34);
	s.pcie_intx = 2;					/* last entry cut short */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_TRUE(hi.pci.present);
	EXPECT_EQ(hi.pci.nr_intx, 15);
	s.pcie_intx = 3;					/* a parent we do not understand */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_TRUE(hi.pci.present);
	EXPECT_EQ(hi.pci.nr_intx, 0);
}

TEST(fdt_host_pcie_window_on_ram_dropped)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.pcie = 1;
	s.pcie_mem32_on_ram = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_TRUE(hi.pci.present);		/* the 64-bit window is still there */
	EXPECT_EQ(hi.pci.mem32.size, 0);
	EXPECT_EQ(hi.pci.mem64.size, 0x400000000ull);
}

/* libfdt's phandle lookup walks the whole tree: counted (unit.mk wraps it) */
int __real_fdt_node_offset_by_phandle(const void *fdt, uint32_t phandle);
int __wrap_fdt_node_offset_by_phandle(const void *fdt, uint32_t phandle);
static unsigned int phandle_lookups;

int __wrap_fdt_node_offset_by_phandle(const void *fdt, uint32_t phandle)
{
	phandle_lookups++;
	return __real_fdt_node_offset_by_phandle(fdt, phandle);
}

TEST(fdt_host_pcie_interrupt_map_parent_looked_up_once)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.pcie = 1;
	s.pcie_intx = 1;		/* 16 entries, one parent (no usable PLIC: no reg) */
	phandle_lookups = 0;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.pci.nr_intx, 16);
	EXPECT_EQ(phandle_lookups, 1);
	s.plic = 1;			/* the parent is the host PLIC: known, no lookup */
	phandle_lookups = 0;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.pci.nr_intx, 16);
	EXPECT_EQ(phandle_lookups, 0);
	EXPECT_EQ(pci_intx_irq(&hi.pci, 0, 1, 0, 1), 33);
	for (unsigned int i = 0; i < hi.pci.nr_intx; i++)
		EXPECT_EQ(hi.pci.intx[i].parent, PLIC_PHANDLE);
}

TEST(fdt_host_plic_qemu_virt)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_FALSE(hi.plic.present);		/* no PLIC: no host interrupts, still boots */
	EXPECT_EQ(hi.plic_s_context[0], PLIC_NO_CONTEXT);
	s.plic = 1;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_TRUE(hi.plic.present);
	EXPECT_EQ(hi.plic.base, 0xc000000);
	EXPECT_EQ(hi.plic.size, 0x600000);
	EXPECT_EQ(hi.plic.ndev, 95);
	EXPECT_EQ(hi.plic.phandle, PLIC_PHANDLE);
	EXPECT_EQ(hi.intc_phandle[0], INTC_PHANDLE(0));
	EXPECT_EQ(hi.plic_s_context[0], 1);	/* entries: hart 0 M, hart 0 S, hart 1 M, ... */
	EXPECT_EQ(hi.plic_s_context[1], 3);
	EXPECT_EQ(hi.plic_s_context[2], PLIC_NO_CONTEXT);
}

TEST(fdt_host_plic_refusals)
{
	struct dt_spec s;
	const char *err;

	spec_default(&s);
	s.plic = 2;				/* no riscv,ndev: how many sources is unknown */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_FALSE(hi.plic.present);
	EXPECT_EQ(hi.plic_s_context[0], PLIC_NO_CONTEXT);
	s.plic = 3;				/* hart 1's context registers lie past reg */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_TRUE(hi.plic.present);
	EXPECT_EQ(hi.plic_s_context[0], 1);
	EXPECT_EQ(hi.plic_s_context[1], PLIC_NO_CONTEXT);
	s.plic = 4;				/* a controller that is no hart's: the walk ends */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_TRUE(hi.plic.present);
	EXPECT_EQ(hi.plic_s_context[0], 1);
	EXPECT_EQ(hi.plic_s_context[1], PLIC_NO_CONTEXT);
	s.plic = 5;				/* on RAM */
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_FALSE(hi.plic.present);
}

/* ---- switches, disks and NICs ---------------------------------------------- */

static const uint8_t MAC_A0[6] = { 0x52, 0x54, 0x00, 0xaa, 0x00, 0x01 };
static const uint8_t MAC_A1[6] = { 0x52, 0x54, 0x00, 0xaa, 0x00, 0x02 };
static const uint8_t MAC_B0[6] = { 0x52, 0x54, 0x00, 0xbb, 0x00, 0x01 };

/* lan (uplink at 00:03.0) and dmz (none); a: disks at 1 (read-only) and 2,
 * NICs on lan and dmz; beta: a NIC on lan */
static void spec_devices(struct dt_spec *s)
{
	spec_default(s);
	s->nr_sw = 2;
	s->sw[0] = (struct switch_spec){ .name = "lan", .uplink = 3 };
	s->sw[1] = (struct switch_spec){ .name = "dmz" };
	s->vm[0].nr_disks = 2;
	s->vm[0].disks[0] = (struct disk_spec){ .pci = 1, .ro = 1 };
	s->vm[0].disks[1] = (struct disk_spec){ .pci = 2 };
	s->vm[0].nr_nics = 2;
	s->vm[0].nics[0].sw = "lan";
	memcpy(s->vm[0].nics[0].mac, MAC_A0, 6);
	s->vm[0].nics[1].sw = "dmz";
	memcpy(s->vm[0].nics[1].mac, MAC_A1, 6);
	s->vm[1] = vm_beta();
	s->vm[1].nr_nics = 1;
	s->vm[1].nics[0].sw = "lan";
	memcpy(s->vm[1].nics[0].mac, MAC_B0, 6);
	s->nr_vms = 2;
}

TEST(fdt_host_switches_disks_nics)
{
	struct dt_spec s;
	const char *err;

	spec_devices(&s);
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_STREQ(err, "");
	EXPECT_EQ(hi.nr_switches, 2);
	EXPECT_STREQ(hi.switches[0].name, "lan");
	EXPECT_EQ(hi.switches[0].uplink_pci, 3);
	EXPECT_STREQ(hi.switches[1].name, "dmz");
	EXPECT_EQ(hi.switches[1].uplink_pci, 0);
	EXPECT_EQ(hi.switches[2].name[0], 0);
	EXPECT_EQ(hi.vms[0].nr_disks, 2);
	EXPECT_EQ(hi.vms[0].disks[0].pci_dev, 1);
	EXPECT_EQ(hi.vms[0].disks[0].read_only, true);
	EXPECT_EQ(hi.vms[0].disks[1].pci_dev, 2);
	EXPECT_EQ(hi.vms[0].disks[1].read_only, false);
	EXPECT_EQ(hi.vms[0].nr_nics, 2);
	EXPECT_STREQ(hi.vms[0].nics[0].sw, "lan");
	EXPECT_EQ(memcmp(hi.vms[0].nics[0].mac, MAC_A0, 6), 0);
	EXPECT_STREQ(hi.vms[0].nics[1].sw, "dmz");
	EXPECT_EQ(memcmp(hi.vms[0].nics[1].mac, MAC_A1, 6), 0);
	EXPECT_EQ(hi.vms[1].nr_disks, 0);
	EXPECT_EQ(hi.vms[1].nr_nics, 1);
	EXPECT_STREQ(hi.vms[1].nics[0].sw, "lan");
	EXPECT_EQ(memcmp(hi.vms[1].nics[0].mac, MAC_B0, 6), 0);
	/* the device nodes have no reg: not taken for modules */
	EXPECT_EQ(hi.nr_images, 3);
	/* one MAC on two switches is two ports of two networks: fine */
	memcpy(s.vm[1].nics[0].mac, MAC_A1, 6);
	EXPECT_EQ(parse(&s, &err), 0);
	/* every slot up to 31, no uplink */
	s.sw[0].uplink = 0;
	s.vm[0].disks[0].pci = 31;
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.vms[0].disks[0].pci_dev, 31);
	EXPECT_EQ(hi.switches[0].uplink_pci, 0);
}

/* Rate limits: absent, the defaults; 0, none; one or two cells. */
TEST(fdt_host_device_rate_limits)
{
	struct dt_spec s;
	const char *err;

	spec_devices(&s);
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_EQ(hi.vms[0].disks[0].iops, VM_DISK_IOPS_DEFAULT);
	EXPECT_EQ(hi.vms[0].disks[0].bandwidth, VM_DISK_BANDWIDTH_DEFAULT);
	EXPECT_EQ(hi.vms[0].nics[0].pps, VM_NIC_PPS_DEFAULT);
	EXPECT_EQ(hi.vms[0].nics[0].bandwidth, VM_NIC_BANDWIDTH_DEFAULT);
	s.vm[0].disks[0].iops = (struct rate_spec){ 4, 500 };
	s.vm[0].disks[0].bw = (struct rate_spec){ 8, 8ull << 20 };
	s.vm[0].disks[1].iops = (struct rate_spec){ 4, 0 };
	s.vm[0].disks[1].bw = (struct rate_spec){ 4, 0 };
	s.vm[0].nics[0].pps = (struct rate_spec){ 8, 1000 };
	s.vm[0].nics[0].bw = (struct rate_spec){ 4, 4096 };
	s.vm[1].nics[0].pps = (struct rate_spec){ 4, 0 };
	s.vm[1].nics[0].bw = (struct rate_spec){ 8, VM_IO_RATE_MAX };
	EXPECT_EQ(parse(&s, &err), 0);
	EXPECT_STREQ(err, "");
	EXPECT_EQ(hi.vms[0].disks[0].iops, 500);
	EXPECT_EQ(hi.vms[0].disks[0].bandwidth, 8ull << 20);
	EXPECT_EQ(hi.vms[0].disks[1].iops, 0);
	EXPECT_EQ(hi.vms[0].disks[1].bandwidth, 0);
	EXPECT_EQ(hi.vms[0].nics[0].pps, 1000);
	EXPECT_EQ(hi.vms[0].nics[0].bandwidth, 4096);
	EXPECT_EQ(hi.vms[0].nics[1].pps, VM_NIC_PPS_DEFAULT);	/* not given: the default */
	EXPECT_EQ(hi.vms[1].nics[0].pps, 0);
	EXPECT_EQ(hi.vms[1].nics[0].bandwidth, VM_IO_RATE_MAX);
}

/* A bad rate limit stops the boot with its reason: the property's length,
 * a rate above 2^40, a bandwidth below a page a second. */
TEST(fdt_host_err_device_rate_limits)
{
	struct dt_spec s;

	spec_devices(&s);
	s.vm[0].disks[1].iops = (struct rate_spec){ 3, 0 };
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "carapace,iops: not one or two cells");
	s.vm[0].disks[1].iops = (struct rate_spec){ 12, 0 };
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "carapace,iops: not one or two cells");
	s.vm[0].disks[1].iops = (struct rate_spec){ 8, VM_IO_RATE_MAX + 1 };
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE, "carapace,iops: above 2^40 requests a second");
	s.vm[0].disks[1].iops = (struct rate_spec){ 8, ~0ull };
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE, "carapace,iops: above 2^40 requests a second");
	s.vm[0].disks[1].iops = (struct rate_spec){ 8, VM_IO_RATE_MAX };
	EXPECT_PARSE_ERR(&s, 0, "");
	s.vm[0].disks[1].bw = (struct rate_spec){ 4, 4095 };
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE,
			 "carapace,bandwidth: not 0 (no limit) or 4096..2^40 bytes a second");
	s.vm[0].disks[1].bw = (struct rate_spec){ 4, 1 };
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE,
			 "carapace,bandwidth: not 0 (no limit) or 4096..2^40 bytes a second");
	s.vm[0].disks[1].bw = (struct rate_spec){ 8, VM_IO_RATE_MAX + 1 };
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE,
			 "carapace,bandwidth: not 0 (no limit) or 4096..2^40 bytes a second");
	s.vm[0].disks[1].bw = (struct rate_spec){ 2, 0 };
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "carapace,bandwidth: not one or two cells");
	spec_devices(&s);
	s.vm[1].nics[0].pps = (struct rate_spec){ 1, 0 };
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "carapace,pps: not one or two cells");
	s.vm[1].nics[0].pps = (struct rate_spec){ 8, VM_IO_RATE_MAX + 1 };
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE, "carapace,pps: above 2^40 frames a second");
	s.vm[1].nics[0].pps = (struct rate_spec){ 4, 1 };
	s.vm[1].nics[0].bw = (struct rate_spec){ 4, 100 };
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE,
			 "carapace,bandwidth: not 0 (no limit) or 4096..2^40 bytes a second");
	s.vm[1].nics[0].bw = (struct rate_spec){ 16, 0 };
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "carapace,bandwidth: not one or two cells");
}

TEST(fdt_host_err_switch_names)
{
	struct dt_spec s;

	spec_devices(&s);
	s.sw[1].name = NULL;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "switch node without a valid carapace,name");
	s.sw[1].name = "";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "switch node without a valid carapace,name");
	s.sw[1].name = "DMZ";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "switch node without a valid carapace,name");
	s.sw[1].name = "d,z";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "switch node without a valid carapace,name");
	s.sw[1].name = "sixteen-chars-xx";
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "switch node without a valid carapace,name");
	s.sw[1].name = "lan";
	EXPECT_PARSE_ERR(&s, -HYP_EEXIST, "two switches with the same name");
	s.sw[1].name = "fifteen-chars-x";
	s.vm[0].nics[1].sw = "fifteen-chars-x";
	EXPECT_PARSE_ERR(&s, 0, "");
}

TEST(fdt_host_err_too_many_switches)
{
	struct dt_spec s;
	static const char *const names[] = { "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8" };

	spec_default(&s);
	for (unsigned int i = 0; i < HOST_MAX_SWITCHES; i++)
		s.sw[i].name = names[i];
	s.nr_sw = HOST_MAX_SWITCHES;
	EXPECT_PARSE_ERR(&s, 0, "");
	EXPECT_EQ(hi.nr_switches, HOST_MAX_SWITCHES);
	s.sw[HOST_MAX_SWITCHES].name = names[HOST_MAX_SWITCHES];
	s.nr_sw = HOST_MAX_SWITCHES + 1;
	EXPECT_PARSE_ERR(&s, -HYP_ENOMEM, "too many switches");
}

TEST(fdt_host_err_pci_device_numbers)
{
	struct dt_spec s;

	spec_devices(&s);
	s.sw[0].uplink = 32;
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE, "PCI device number out of range (1..31)");
	s.sw[0].uplink = -2;	/* 00:00.0 is the host bridge */
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE, "PCI device number out of range (1..31)");
	s.sw[0].uplink = -1;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "disk or uplink without a one-cell PCI device number");
	spec_devices(&s);
	s.vm[0].disks[1].pci = 0;	/* absent */
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "disk or uplink without a one-cell PCI device number");
	s.vm[0].disks[1].pci = -1;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "disk or uplink without a one-cell PCI device number");
	s.vm[0].disks[1].pci = 32;
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE, "PCI device number out of range (1..31)");
	s.vm[0].disks[1].pci = -2;
	EXPECT_PARSE_ERR(&s, -HYP_ERANGE, "PCI device number out of range (1..31)");
	/* one number, two devices: twice in a VM, in two VMs, a disk and an uplink */
	s.vm[0].disks[1].pci = 1;
	EXPECT_PARSE_ERR(&s, -HYP_EEXIST, "PCI device number used twice");
	spec_devices(&s);
	s.vm[1].nr_disks = 1;
	s.vm[1].disks[0].pci = 2;
	EXPECT_PARSE_ERR(&s, -HYP_EEXIST, "PCI device number used twice");
	s.vm[1].disks[0].pci = 3;
	EXPECT_PARSE_ERR(&s, -HYP_EEXIST, "PCI device number used twice");
	s.vm[1].disks[0].pci = 4;
	EXPECT_PARSE_ERR(&s, 0, "");
	spec_devices(&s);
	s.sw[1].uplink = 3;
	EXPECT_PARSE_ERR(&s, -HYP_EEXIST, "PCI device number used twice");
}

TEST(fdt_host_err_too_many_devices)
{
	struct dt_spec s;

	spec_devices(&s);
	s.vm[0].nr_disks = 3;
	s.vm[0].disks[2].pci = 9;
	EXPECT_PARSE_ERR(&s, -HYP_ENOMEM, "too many disks in a vm node");
	spec_devices(&s);
	s.vm[0].nr_nics = 3;
	s.vm[0].nics[2].sw = "lan";
	memcpy(s.vm[0].nics[2].mac, MAC_A0, 6);
	s.vm[0].nics[2].mac[5] = 9;
	EXPECT_PARSE_ERR(&s, -HYP_ENOMEM, "too many NICs in a vm node");
}

TEST(fdt_host_err_nics)
{
	struct dt_spec s;

	spec_devices(&s);
	s.vm[1].nics[0].sw = "wan";
	EXPECT_PARSE_ERR(&s, -HYP_ENOENT, "NIC on an unknown switch");
	s.vm[1].nics[0].sw = NULL;
	EXPECT_PARSE_ERR(&s, -HYP_ENOENT, "NIC on an unknown switch");
	spec_devices(&s);
	s.vm[1].nics[0].mac_len = 5;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "NIC without a 6-byte local-mac-address");
	s.vm[1].nics[0].mac_len = 7;
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "NIC without a 6-byte local-mac-address");
	s.vm[1].nics[0].mac_len = 0;
	s.vm[1].nics[0].mac[0] = 0x53;		/* group bit */
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "NIC MAC is multicast or zero");
	memset(s.vm[1].nics[0].mac, 0xff, 6);
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "NIC MAC is multicast or zero");
	memset(s.vm[1].nics[0].mac, 0, 6);
	EXPECT_PARSE_ERR(&s, -HYP_EINVAL, "NIC MAC is multicast or zero");
	/* one MAC twice on lan: in two VMs, in one VM */
	memcpy(s.vm[1].nics[0].mac, MAC_A0, 6);
	EXPECT_PARSE_ERR(&s, -HYP_EEXIST, "two NICs with the same MAC on one switch");
	spec_devices(&s);
	s.vm[0].nics[1].sw = "lan";
	memcpy(s.vm[0].nics[1].mac, MAC_A0, 6);
	EXPECT_PARSE_ERR(&s, -HYP_EEXIST, "two NICs with the same MAC on one switch");
}
