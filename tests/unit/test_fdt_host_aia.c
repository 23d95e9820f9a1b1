/* SPDX-License-Identifier: MIT */
/* hyp/fdt/fdt_host.c on an AIA machine's host DT: tests/unit/aia_host.dts
 * (QEMU 10.0.2 virt, aia=aplic-imsic,aia-guests=3, two harts, after OpenSBI),
 * compiled by dtc at build time and linked in; each test changes a copy with
 * libfdt. What is read: the S-level IMSIC (not the disabled M-level one, nor
 * an enabled one of cause 11), each hart's position in it, the APLIC domain
 * whose msi-parent it is, the bridge's two-cell interrupt-map; and what is
 * refused (the AIA then unused, never fatal). */
#include <string.h>
#include <libfdt.h>
#include <errno.h>
#include <fdt_host.h>
#include "test.h"

/* the fixture's bytes (unit.mk: AIA_HOST_DTB, the dtc output) */
__asm__(".section .rodata\n"
	".balign 8\n"
	"aia_host_dtb:\n"
	".incbin \"" AIA_HOST_DTB "\"\n"
	".previous\n");
extern const char aia_host_dtb[];

static char dtb[32 * 1024] __attribute__((aligned(8)));
static struct host_info hi;

/* A fresh copy of the fixture with room to grow. */
static void *fixture(void)
{
	EXPECT_EQ(fdt_open_into(aia_host_dtb, dtb, sizeof(dtb)), 0);
	return dtb;
}

static int node(void *fdt, const char *path)
{
	int n = fdt_path_offset(fdt, path);

	EXPECT_TRUE(n >= 0);
	return n;
}

#define IMSIC_S	"/soc/interrupt-controller@28000000"
#define IMSIC_M	"/soc/interrupt-controller@24000000"
#define APLIC_S	"/soc/interrupt-controller@d000000"
#define APLIC_M	"/soc/interrupt-controller@c000000"

static void set_u32(void *fdt, const char *path, const char *prop, uint32_t v)
{
	EXPECT_EQ(fdt_setprop_u32(fdt, node(fdt, path), prop, v), 0);
}

static void set_reg(void *fdt, const char *path, uint64_t base, uint64_t size)
{
	int n = node(fdt, path);

	EXPECT_EQ(fdt_setprop_u64(fdt, n, "reg", base), 0);
	EXPECT_EQ(fdt_appendprop_u64(fdt, n, "reg", size), 0);
}

static int parse(void *fdt)
{
	const char *err;

	return fdt_host_parse(fdt, &hi, &err);
}

static uint32_t phandle(void *fdt, const char *path)
{
	return fdt_get_phandle(fdt, node(fdt, path));
}

TEST(fdt_host_aia_qemu_virt)
{
	void *fdt = fixture();

	EXPECT_EQ(parse(fdt), 0);
	EXPECT_TRUE(hi.isa_ssaia);
	EXPECT_FALSE(hi.plic.present);
	EXPECT_TRUE(hi.imsic.present);
	EXPECT_EQ(hi.imsic.base, 0x28000000);
	EXPECT_EQ(hi.imsic.size, 0x8000);
	EXPECT_EQ(hi.imsic.num_ids, 255);
	EXPECT_EQ(hi.imsic.guest_ids, 255);		/* no riscv,num-guest-ids: the same */
	EXPECT_EQ(hi.imsic.guest_bits, 2);
	EXPECT_EQ(hi.imsic.phandle, phandle(fdt, IMSIC_S));
	EXPECT_EQ(hi.imsic_hart_index[0], 0);
	EXPECT_EQ(hi.imsic_hart_index[1], 1);
	EXPECT_EQ(hi.imsic_hart_index[2], IMSIC_NO_HART);
	/* 1 + 3 files a hart, rounded up to 4 pages: hart 1's S file 16 KiB in */
	EXPECT_EQ(imsic_s_file_pa(&hi.imsic, 1), 0x28004000);
	EXPECT_TRUE(hi.aplic.present);
	EXPECT_EQ(hi.aplic.base, 0xd000000);
	EXPECT_EQ(hi.aplic.size, 0x8000);
	EXPECT_EQ(hi.aplic.num_sources, 96);
	EXPECT_EQ(hi.aplic.phandle, phandle(fdt, APLIC_S));
	/* the bridge's map: 16 routes to the APLIC, each (source, level-high) */
	EXPECT_EQ(hi.pci.nr_intx, 16);
	for (unsigned int i = 0; i < hi.pci.nr_intx; i++) {
		EXPECT_EQ(hi.pci.intx[i].parent, hi.aplic.phandle);
		EXPECT_EQ(hi.pci.intx[i].type, HOST_IRQ_LEVEL_HIGH);
	}
	EXPECT_EQ(pci_intx_irq(&hi.pci, 0, 1, 0, 1), 33);	/* slot 1 INTA, as on the PLIC */
	EXPECT_EQ(pci_intx_irq(&hi.pci, 0, 3, 0, 4), 34);
}

/* Which IMSIC: the S-level one, wherever the M-level one is and whatever its status. */
TEST(fdt_host_aia_passes_over_the_m_level_imsic)
{
	void *fdt = fixture();

	EXPECT_EQ(fdt_delprop(fdt, node(fdt, IMSIC_M), "status"), 0);	/* no firmware fixup */
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_EQ(hi.imsic.base, 0x28000000);
	EXPECT_EQ(hi.aplic.base, 0xd000000);	/* the M domain's msi-parent is the M IMSIC */
	fdt = fixture();
	EXPECT_EQ(fdt_setprop_string(fdt, node(fdt, IMSIC_S), "status", "disabled"), 0);
	EXPECT_EQ(parse(fdt), 0);		/* still boots: no AIA host interrupts */
	EXPECT_FALSE(hi.imsic.present);
	EXPECT_FALSE(hi.aplic.present);
	EXPECT_EQ(hi.pci.nr_intx, 0);		/* two cells of no known controller: no routes */
	EXPECT_EQ(hi.imsic_hart_index[0], IMSIC_NO_HART);
}

TEST(fdt_host_aia_imsic_refusals)
{
	static const struct {
		const char *prop;
		uint32_t v;
	} bad[] = {
		{ "riscv,num-ids", 256 }, { "riscv,num-ids", 62 }, { "riscv,num-ids", 2048 },
		{ "riscv,num-ids", 0 }, { "riscv,num-guest-ids", 100 },
		{ "riscv,guest-index-bits", 7 }, { "riscv,group-index-bits", 1 },
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
		void *fdt = fixture();

		set_u32(fdt, IMSIC_S, bad[i].prop, bad[i].v);
		EXPECT_EQ(parse(fdt), 0);
		EXPECT_FALSE(hi.imsic.present);
		EXPECT_FALSE(hi.aplic.present);	/* its msi-parent is no usable IMSIC */
	}
	{	/* the largest legal values parse */
		void *fdt = fixture();

		set_u32(fdt, IMSIC_S, "riscv,num-ids", 2047);
		set_u32(fdt, IMSIC_S, "riscv,num-guest-ids", 63);
		set_u32(fdt, IMSIC_S, "riscv,group-index-bits", 0);
		EXPECT_EQ(parse(fdt), 0);
		EXPECT_TRUE(hi.imsic.present);
		EXPECT_EQ(hi.imsic.num_ids, 2047);
		EXPECT_EQ(hi.imsic.guest_ids, 63);
	}
}

TEST(fdt_host_aia_imsic_reg_refusals)
{
	void *fdt = fixture();
	int n;

	set_reg(fdt, IMSIC_S, 0x80000000, 0x8000);		/* on RAM */
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_FALSE(hi.imsic.present);
	fdt = fixture();
	set_reg(fdt, IMSIC_S, 0x28000800, 0x8000);		/* not page-aligned */
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_FALSE(hi.imsic.present);
	fdt = fixture();					/* two ranges: two groups */
	n = node(fdt, IMSIC_S);
	EXPECT_EQ(fdt_appendprop_u64(fdt, n, "reg", 0x29000000), 0);
	EXPECT_EQ(fdt_appendprop_u64(fdt, n, "reg", 0x8000), 0);
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_FALSE(hi.imsic.present);
	fdt = fixture();
	set_reg(fdt, IMSIC_S, 0x28000000, 0x4000);		/* room for hart 0's files only */
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_TRUE(hi.imsic.present);
	EXPECT_EQ(hi.imsic_hart_index[0], 0);
	EXPECT_EQ(hi.imsic_hart_index[1], IMSIC_NO_HART);
}

/* interrupts-extended: every entry a hart's controller with cause 9, or the
 * walk ends there (the entries after it cannot be sized). */
TEST(fdt_host_aia_imsic_harts)
{
	void *fdt = fixture();
	uint32_t intc0 = phandle(fdt, "/cpus/cpu@0/interrupt-controller");
	uint32_t intc1 = phandle(fdt, "/cpus/cpu@1/interrupt-controller");
	int n = node(fdt, IMSIC_S);

	/* hart 1 first: positions follow the property, not the cpu nodes */
	EXPECT_EQ(fdt_setprop_u32(fdt, n, "interrupts-extended", intc1), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", 9), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", intc0), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", 9), 0);
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_EQ(hi.imsic_hart_index[0], 1);
	EXPECT_EQ(hi.imsic_hart_index[1], 0);
	fdt = fixture();
	n = node(fdt, IMSIC_S);
	EXPECT_EQ(fdt_setprop_u32(fdt, n, "interrupts-extended", intc0), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", 9), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", 0x777), 0);	/* no hart's */
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", 9), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", intc1), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", 9), 0);
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_EQ(hi.imsic_hart_index[0], 0);
	EXPECT_EQ(hi.imsic_hart_index[1], IMSIC_NO_HART);
	fdt = fixture();			/* an M-level entry: not an S-level IMSIC */
	n = node(fdt, IMSIC_S);
	EXPECT_EQ(fdt_setprop_u32(fdt, n, "interrupts-extended", intc0), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", 11), 0);
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_FALSE(hi.imsic.present);
}

TEST(fdt_host_aia_aplic_refusals)
{
	void *fdt = fixture();

	set_u32(fdt, APLIC_S, "msi-parent", phandle(fdt, IMSIC_M));	/* MSIs to M files */
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_TRUE(hi.imsic.present);
	EXPECT_FALSE(hi.aplic.present);
	EXPECT_EQ(hi.pci.nr_intx, 0);		/* the map's parent is no controller of ours */
	fdt = fixture();
	set_reg(fdt, APLIC_S, 0xd000000, 0x2000);		/* short of an MSI domain's registers */
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_FALSE(hi.aplic.present);
	fdt = fixture();
	set_reg(fdt, APLIC_S, 0x80000000, 0x8000);		/* on RAM */
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_FALSE(hi.aplic.present);
	fdt = fixture();
	set_u32(fdt, APLIC_S, "riscv,num-sources", 1024);
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_FALSE(hi.aplic.present);
	fdt = fixture();
	EXPECT_EQ(fdt_setprop_string(fdt, node(fdt, APLIC_S), "status", "disabled"), 0);
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_FALSE(hi.aplic.present);
}

TEST(fdt_host_aia_ssaia_needs_every_hart)
{
	void *fdt = fixture();

	EXPECT_EQ(fdt_setprop(fdt, node(fdt, "/cpus/cpu@1"), "riscv,isa-extensions",
			      "i\0m\0h\0sstc", 11), 0);
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_FALSE(hi.isa_ssaia);
	EXPECT_TRUE(hi.imsic.present);		/* the DT's side stands; boot asks both */
}
