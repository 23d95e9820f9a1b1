/* SPDX-License-Identifier: MIT */
/* hyp/fdt/fdt_host.c on the PLIC machine with QEMU's aclint=on:
 * tests/unit/aclint_host.dts, compiled by dtc at build time and linked in;
 * each test changes a copy with libfdt. What is read: each hart's ACLINT
 * SSWI register, by its position in the node's interrupts-extended; and
 * when none is used (host IPIs then through SBI): a hart without one, an
 * entry of another cause, a register outside reg, reg in RAM, the node
 * disabled. */
#include <string.h>
#include <libfdt.h>
#include <errno.h>
#include <fdt_host.h>
#include "test.h"

/* the fixture's bytes (unit.mk: ACLINT_HOST_DTB, the dtc output) */
__asm__(".section .rodata\n"
	".balign 8\n"
	"aclint_host_dtb:\n"
	".incbin \"" ACLINT_HOST_DTB "\"\n"
	".previous\n");
extern const char aclint_host_dtb[];

static char dtb[16 * 1024] __attribute__((aligned(8)));
static struct host_info hi;

#define SSWI	"/soc/sswi@2f00000"
#define INTC0	"/cpus/cpu@0/interrupt-controller"
#define INTC1	"/cpus/cpu@1/interrupt-controller"

static void *fixture(void)
{
	EXPECT_EQ(fdt_open_into(aclint_host_dtb, dtb, sizeof(dtb)), 0);
	return dtb;
}

static int node(void *fdt, const char *path)
{
	int n = fdt_path_offset(fdt, path);

	EXPECT_TRUE(n >= 0);
	return n;
}

static int parse(void *fdt)
{
	const char *err;

	return fdt_host_parse(fdt, &hi, &err);
}

/* interrupts-extended of the SSWI: (@a's intc, @ca), (@b's intc, @cb) */
static void set_entries(void *fdt, const char *a, uint32_t ca, const char *b, uint32_t cb)
{
	int n = node(fdt, SSWI);

	EXPECT_EQ(fdt_setprop_u32(fdt, n, "interrupts-extended",
				  fdt_get_phandle(fdt, node(fdt, a))), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", ca), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended",
				     fdt_get_phandle(fdt, node(fdt, b))), 0);
	EXPECT_EQ(fdt_appendprop_u32(fdt, n, "interrupts-extended", cb), 0);
}

static void set_reg(void *fdt, uint64_t base, uint64_t size)
{
	int n = node(fdt, SSWI);

	EXPECT_EQ(fdt_setprop_u64(fdt, n, "reg", base), 0);
	EXPECT_EQ(fdt_appendprop_u64(fdt, n, "reg", size), 0);
}

static void expect_none(void)
{
	for (unsigned int h = 0; h < HOST_MAX_HARTS; h++)
		EXPECT_EQ(hi.sswi_setssip[h], 0);
}

TEST(fdt_host_aclint_qemu_virt)
{
	EXPECT_EQ(parse(fixture()), 0);
	EXPECT_EQ(hi.nr_harts, 2);
	EXPECT_EQ(hi.sswi_setssip[0], 0x2f00000);
	EXPECT_EQ(hi.sswi_setssip[1], 0x2f00004);
	EXPECT_EQ(hi.sswi_setssip[2], 0);
	EXPECT_TRUE(hi.plic.present);		/* the rest as on the machine without it */
}

/* A hart's register is at its position in interrupts-extended, not its DT order. */
TEST(fdt_host_aclint_register_by_position)
{
	void *fdt = fixture();

	set_entries(fdt, INTC1, 1, INTC0, 1);
	EXPECT_EQ(parse(fdt), 0);
	EXPECT_EQ(hi.sswi_setssip[0], 0x2f00004);
	EXPECT_EQ(hi.sswi_setssip[1], 0x2f00000);
}

/* Every hart has one, or none is used. */
TEST(fdt_host_aclint_refusals)
{
	void *fdt = fixture();

	set_entries(fdt, INTC0, 1, INTC0, 1);		/* hart 1 has none */
	EXPECT_EQ(parse(fdt), 0);
	expect_none();
	fdt = fixture();
	set_entries(fdt, INTC0, 1, INTC1, 3);		/* hart 1's is an M-level one */
	EXPECT_EQ(parse(fdt), 0);
	expect_none();
	fdt = fixture();
	set_reg(fdt, 0x2f00000, 4);			/* hart 1's register outside reg */
	EXPECT_EQ(parse(fdt), 0);
	expect_none();
	fdt = fixture();
	set_reg(fdt, 0x80000000, 0x4000);		/* RAM */
	EXPECT_EQ(parse(fdt), 0);
	expect_none();
	fdt = fixture();
	set_reg(fdt, 0x2f00002, 0x4000);		/* misaligned */
	EXPECT_EQ(parse(fdt), 0);
	expect_none();
	fdt = fixture();
	EXPECT_EQ(fdt_setprop_string(fdt, node(fdt, SSWI), "status", "disabled"), 0);
	EXPECT_EQ(parse(fdt), 0);
	expect_none();
	fdt = fixture();
	EXPECT_EQ(fdt_setprop_string(fdt, node(fdt, SSWI), "compatible", "riscv,aclint-mswi"), 0);
	EXPECT_EQ(parse(fdt), 0);			/* an MSWI is M-mode's */
	expect_none();
}
