/* SPDX-License-Identifier: MIT */
/* hyp/fdt/fdt_guest.c: fdt_guest_build() for a struct vm set up here, read back
 * with libfdt's read API. Linked with hyp/state/cfi_state.c (cfi_vm_has_lp/ss, fake
 * CSRs) and hyp/lib/printf.c (as hyp_snprintf). Defined here: hart_caps and
 * timebase_hz (hyp/arch/hart.c), vm_stop()/vcpu_redirect_trap() (referenced by
 * cfi_state.c). The rng-seed comes from the caller (struct guest_fdt_info). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libfdt.h>
#include <arch/riscv/encoding.h>
#include <cfi.h>
#include <fdt_guest.h>
#include <hart.h>
#include <vm.h>
#include "test.h"

/* ---- stubs ---- */

struct hart_caps hart_caps;
uint64_t timebase_hz;

void vm_stop(struct vm *vm, const char *fmt, ...)
{
	(void)vm;
	(void)fmt;
	abort();	/* fdt_guest_build() has no business stopping a VM */
}

void vcpu_redirect_trap(struct vcpu *v, unsigned long cause, unsigned long tval)
{
	(void)v;
	(void)cause;
	(void)tval;
	abort();
}

/* ---- set-up and helpers ---- */

#define RAM_SIZE	(256UL << 20)
#define TIMEBASE	10000000

static struct vm vm;
static char dtb[VM_FDT_MAX] __attribute__((aligned(8)));

/* a CFI host, a 2-vCPU VM with policy trap, no initrd */
static void setup(unsigned int nr_vcpus)
{
	memset(&vm, 0, sizeof(vm));
	memset(dtb, 0xa5, sizeof(dtb));
	hart_caps = (struct hart_caps){ .sstc = true, .zicfilp = true, .zicfiss = true,
					.zimop = true, .zcmop = true };
	timebase_hz = TIMEBASE;
	strcpy(vm.cfg.name, "guest0");
	vm.index = 0;
	vm.cfg.boot_count = 0;
	vm.cfg.cfi_policy = CFI_POLICY_TRAP;
	vm.cfg.ram_gpa = VM_GUEST_RAM_BASE;
	vm.cfg.ram_size = RAM_SIZE;
	vm.cfg.nr_vcpus = nr_vcpus;
	strcpy(vm.cfg.bootargs, "console=hvc0 earlycon=sbi");
	vm.cfg.features = vm_features(vm.cfg.cfi_policy);
}

static int build(const struct guest_fdt_info *gi)
{
	static const struct guest_fdt_info none;
	int rc;

	vm.cfg.features = vm_features(vm.cfg.cfi_policy);	/* as vm_create() does */
	rc = fdt_guest_build(&vm, gi ? gi : &none, dtb, sizeof(dtb));

	EXPECT_EQ(rc, 0);
	EXPECT_EQ(fdt_check_header(dtb), 0);
	EXPECT_TRUE(fdt_totalsize(dtb) <= sizeof(dtb));
	return rc;
}

static int node(const char *path)
{
	int off = fdt_path_offset(dtb, path);

	if (off < 0)
		printf("  node %s: %s\n", path, fdt_strerror(off));
	return off;
}

/* property length, or -1 if absent */
static int prop_len(int off, const char *name)
{
	int len;

	return fdt_getprop(dtb, off, name, &len) ? len : -1;
}

static uint64_t prop_u32(int off, const char *name)
{
	int len;
	const fdt32_t *p = fdt_getprop(dtb, off, name, &len);

	if (!p || len != 4) {
		printf("  property %s: %s (len %d)\n", name, p ? "not one cell" : "absent", len);
		return ~0ULL;
	}
	return fdt32_ld(p);
}

static uint64_t prop_u64(int off, const char *name)
{
	int len;
	const fdt64_t *p = fdt_getprop(dtb, off, name, &len);

	if (!p || len != 8) {
		printf("  property %s: %s (len %d)\n", name, p ? "not two cells" : "absent", len);
		return ~0ULL;
	}
	return fdt64_ld(p);
}

static const char *prop_str(int off, const char *name)
{
	int len;
	const char *p = fdt_getprop(dtb, off, name, &len);

	/* a string property: NUL-terminated exactly at its end */
	if (!p || len < 1 || p[len - 1] || (int)strlen(p) != len - 1)
		return NULL;
	return p;
}

static bool has_string(int off, const char *prop, const char *s)
{
	return fdt_stringlist_search(dtb, off, prop, s) >= 0;
}

/* reg = <addr size> with #address-cells = #size-cells = 2 */
static void expect_reg2(int off, uint64_t addr, uint64_t size)
{
	int len;
	const fdt64_t *p = fdt_getprop(dtb, off, "reg", &len);

	EXPECT_EQ(len, 16);
	if (!p || len != 16)
		return;
	EXPECT_EQ(fdt64_ld(&p[0]), addr);
	EXPECT_EQ(fdt64_ld(&p[1]), size);
}

static int cpu_node(unsigned int i)
{
	char path[64];

	snprintf(path, sizeof(path), "/cpus/cpu@%u", i);
	return node(path);
}

static int cpu_intc(unsigned int i)
{
	char path[80];

	snprintf(path, sizeof(path), "/cpus/cpu@%u/interrupt-controller", i);
	return node(path);
}

static int plic_node(void)
{
	return fdt_node_offset_by_compatible(dtb, -1, "riscv,plic0");
}

static int serial_node(void)
{
	return fdt_node_offset_by_compatible(dtb, -1, "ns16550a");
}

static unsigned int count_cpus(void)
{
	int cpus = node("/cpus"), child;
	unsigned int n = 0;

	fdt_for_each_subnode(child, dtb, cpus) {
		const char *t = prop_str(child, "device_type");

		if (t && !strcmp(t, "cpu"))
			n++;
	}
	return n;
}

/* every vCPU's ISA extensions contain @want (NULL-terminated) and none of @not */
static void expect_isa(const char *const *want, const char *const *not)
{
	for (unsigned int i = 0; i < vm.cfg.nr_vcpus; i++) {
		int cpu = cpu_node(i);

		EXPECT_TRUE(cpu >= 0);
		if (cpu < 0)
			continue;
		EXPECT_TRUE(fdt_stringlist_count(dtb, cpu, "riscv,isa-extensions") > 0);
		for (const char *const *w = want; *w; w++) {
			if (!has_string(cpu, "riscv,isa-extensions", *w))
				printf("  cpu@%u: %s missing\n", i, *w);
			EXPECT_TRUE(has_string(cpu, "riscv,isa-extensions", *w));
		}
		for (const char *const *n = not; *n; n++) {
			if (has_string(cpu, "riscv,isa-extensions", *n))
				printf("  cpu@%u: %s present\n", i, *n);
			EXPECT_FALSE(has_string(cpu, "riscv,isa-extensions", *n));
		}
	}
}

static const char *const ext_common[] = { "i", "m", "a", "f", "d", "c", "zicsr", "zifencei",
					   "zimop", "zcmop", "sstc", NULL };
/* never: no vector context switching, no nested virtualization */
static const char *const ext_never[] = { "v", "h", "zve32x", "zve64d", NULL };

/* ---- the reference VM: 2 vCPUs, CFI host, policy trap ---- */

TEST(fdt_guest_builds_valid_tree)
{
	setup(2);
	if (build(NULL))
		return;
	EXPECT_TRUE(fdt_totalsize(dtb) < sizeof(dtb));
	EXPECT_EQ(prop_u32(0, "#address-cells"), 2);
	EXPECT_EQ(prop_u32(0, "#size-cells"), 2);
	EXPECT_STREQ(prop_str(0, "compatible"), "carapace,virt");
	EXPECT_TRUE(prop_str(0, "model") != NULL);
}

TEST(fdt_guest_cpus)
{
	int cpus;

	setup(2);
	if (build(NULL))
		return;
	cpus = node("/cpus");
	EXPECT_TRUE(cpus >= 0);
	EXPECT_EQ(prop_u32(cpus, "timebase-frequency"), TIMEBASE);
	EXPECT_EQ(prop_u32(cpus, "#address-cells"), 1);
	EXPECT_EQ(prop_u32(cpus, "#size-cells"), 0);
	EXPECT_EQ(count_cpus(), 2);
	EXPECT_TRUE(fdt_path_offset(dtb, "/cpus/cpu@2") < 0);
	for (unsigned int i = 0; i < 2; i++) {
		int cpu = cpu_node(i), intc = cpu_intc(i);

		EXPECT_TRUE(cpu >= 0);
		EXPECT_TRUE(intc >= 0);
		if (cpu < 0 || intc < 0)
			continue;
		EXPECT_STREQ(prop_str(cpu, "device_type"), "cpu");
		EXPECT_EQ(prop_u32(cpu, "reg"), i);
		EXPECT_STREQ(prop_str(cpu, "status"), "okay");
		EXPECT_TRUE(has_string(cpu, "compatible", "riscv"));
		EXPECT_STREQ(prop_str(cpu, "riscv,isa-base"), "rv64i");
		EXPECT_TRUE(prop_str(cpu, "mmu-type") != NULL);
		EXPECT_TRUE(has_string(intc, "compatible", "riscv,cpu-intc"));
		EXPECT_EQ(prop_len(intc, "interrupt-controller"), 0);
		EXPECT_EQ(prop_u32(intc, "#interrupt-cells"), 1);
		EXPECT_NE(fdt_get_phandle(dtb, intc), 0);
	}
	EXPECT_NE(fdt_get_phandle(dtb, cpu_intc(0)), fdt_get_phandle(dtb, cpu_intc(1)));
}

TEST(fdt_guest_isa_cfi)
{
	static const char *const cfi[] = { "zicfilp", "zicfiss", NULL };

	setup(2);
	if (build(NULL))
		return;
	expect_isa(ext_common, ext_never);
	expect_isa(cfi, ext_never);
}

/* Zimop/Zcmop only where the host has them (issue 12 item 5) */
TEST(fdt_guest_isa_mop_only_from_the_host)
{
	static const char *const mop[] = { "zimop", "zcmop", NULL };
	static const char *const none[] = { NULL };

	setup(1);
	hart_caps.zimop = hart_caps.zcmop = false;
	if (build(NULL))
		return;
	expect_isa(none, mop);
	setup(1);
	hart_caps.zcmop = false;
	if (build(NULL))
		return;
	{
		static const char *const zimop[] = { "zimop", NULL };
		static const char *const zcmop[] = { "zcmop", NULL };

		expect_isa(zimop, zcmop);
	}
}

/* riscv,isa (deprecated, but read by much software: issue 13) names the same
 * extensions as riscv,isa-extensions, in the ISA manual's canonical order */
TEST(fdt_guest_isa_string_matches_the_list)
{
	const char *ext[32];
	char buf[256];
	int cpu;

	setup(1);
	if (build(NULL))
		return;
	cpu = cpu_node(0);
	EXPECT_STREQ(fdt_getprop(dtb, cpu, "riscv,isa", NULL),
		     "rv64imafdc_zicfilp_zicfiss_zicntr_zicsr_zifencei_zimop_zaamo_zalrsc_zca_zcd_"
		     "zcmop_sstc");
	EXPECT_EQ(fdt_guest_isa_string(ext, fdt_guest_isa_extensions(&vm, ext, ARRAY_SIZE(ext)),
				       buf, sizeof(buf)), 0);
	EXPECT_STREQ(buf, fdt_getprop(dtb, cpu, "riscv,isa", NULL));
	/* cfi=off, no Zimop on the host: neither appears */
	setup(1);
	hart_caps.zimop = hart_caps.zcmop = false;
	vm.cfg.cfi_policy = CFI_POLICY_OFF;
	vm.cfg.features = vm_features(CFI_POLICY_OFF);
	if (build(NULL))
		return;
	EXPECT_STREQ(fdt_getprop(dtb, cpu_node(0), "riscv,isa", NULL),
		     "rv64imafdc_zicntr_zicsr_zifencei_zaamo_zalrsc_zca_zcd_sstc");
	/* too small a buffer is an error, never a cut string */
	{
		static const char *const two[] = { "i", "zicsr" };

		EXPECT_EQ(fdt_guest_isa_string(two, 2, buf, 8), -FDT_ERR_NOSPACE);
		EXPECT_EQ(fdt_guest_isa_string(two, 2, buf, 12), 0);
		EXPECT_STREQ(buf, "rv64i_zicsr");
	}
}

/* A/D updating: with Svadu the guest gets svade and svadu (updating off at
 * boot, FWFT PTE_AD_HW_UPDATING turns it on); without it neither (Svade).
 * Svpbmt where the VM has it. */
TEST(fdt_guest_isa_svadu_svpbmt)
{
	setup(1);
	hart_caps.zimop = hart_caps.zcmop = false;
	vm.cfg.cfi_policy = CFI_POLICY_OFF;
	hart_caps.henvcfg_ok = ENVCFG_ADUE | ENVCFG_PBMTE;
	if (build(NULL))
		return;
	EXPECT_STREQ(fdt_getprop(dtb, cpu_node(0), "riscv,isa", NULL),
		     "rv64imafdc_zicntr_zicsr_zifencei_zaamo_zalrsc_zca_zcd_sstc_svade_svadu_svpbmt");
	setup(1);
	hart_caps.zimop = hart_caps.zcmop = false;
	vm.cfg.cfi_policy = CFI_POLICY_OFF;
	hart_caps.henvcfg_ok = ENVCFG_PBMTE;
	if (build(NULL))
		return;
	EXPECT_STREQ(fdt_getprop(dtb, cpu_node(0), "riscv,isa", NULL),
		     "rv64imafdc_zicntr_zicsr_zifencei_zaamo_zalrsc_zca_zcd_sstc_svpbmt");
}

/* mmu-type is the mode the VM was given (a restored guest keeps its own) */
TEST(fdt_guest_mmu_type_is_the_vms)
{
	static const struct { unsigned int sv; const char *type; } cases[] = {
		{ 39, "riscv,sv39" }, { 48, "riscv,sv48" }, { 57, "riscv,sv57" } };

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		setup(1);
		vm.cfg.features = vm_features(vm.cfg.cfi_policy);
		vm.cfg.vs_sv = cases[i].sv;
		if (fdt_guest_build(&vm, &(struct guest_fdt_info){ 0 }, dtb, sizeof(dtb)))
			continue;
		EXPECT_STREQ(fdt_getprop(dtb, cpu_node(0), "mmu-type", NULL), cases[i].type);
	}
}

/* riscv,isa-extensions is exactly what fdt_guest_isa_extensions() lists */
TEST(fdt_guest_isa_matches_list)
{
	const char *ext[32];
	size_t n;
	int cpu;

	setup(1);
	n = fdt_guest_isa_extensions(&vm, ext, ARRAY_SIZE(ext));
	if (build(NULL))
		return;
	cpu = cpu_node(0);
	EXPECT_EQ(fdt_stringlist_count(dtb, cpu, "riscv,isa-extensions"), n);
	for (size_t i = 0; i < n; i++)
		EXPECT_STREQ(fdt_stringlist_get(dtb, cpu, "riscv,isa-extensions", (int)i, NULL),
			     ext[i]);
	/* a short array gets a prefix, never more than fits */
	EXPECT_EQ(fdt_guest_isa_extensions(&vm, ext, 3), 3);
	EXPECT_EQ(fdt_guest_isa_extensions(&vm, ext, 0), 0);
}

TEST(fdt_guest_memory)
{
	int mem;

	setup(2);
	if (build(NULL))
		return;
	mem = node("/memory@80000000");
	EXPECT_TRUE(mem >= 0);
	if (mem < 0)
		return;
	EXPECT_STREQ(prop_str(mem, "device_type"), "memory");
	expect_reg2(mem, 0x80000000, RAM_SIZE);
}

TEST(fdt_guest_memory_other_size)
{
	setup(1);
	vm.cfg.ram_size = 3UL << 30;
	if (build(NULL))
		return;
	expect_reg2(node("/memory@80000000"), 0x80000000, 3UL << 30);
}

TEST(fdt_guest_chosen)
{
	struct guest_fdt_info gi = { .initrd_start = 0x8f000000, .initrd_end = 0x8f123456 };
	int chosen, len;
	const void *seed;

	for (unsigned int i = 0; i < sizeof(gi.rng_seed); i++)
		gi.rng_seed[i] = (uint8_t)(0x40 + i);
	setup(2);
	vm.cfg.boot_count = 3;
	if (build(&gi))
		return;
	chosen = node("/chosen");
	EXPECT_TRUE(chosen >= 0);
	if (chosen < 0)
		return;
	EXPECT_STREQ(prop_str(chosen, "bootargs"), "console=hvc0 earlycon=sbi");
	EXPECT_EQ(prop_u64(chosen, "linux,initrd-start"), 0x8f000000);
	EXPECT_EQ(prop_u64(chosen, "linux,initrd-end"), 0x8f123456);
	EXPECT_EQ(prop_u32(chosen, "carapace,boot-count"), 3);
	EXPECT_STREQ(prop_str(chosen, "carapace,vm-name"), "guest0");
	EXPECT_STREQ(prop_str(chosen, "stdout-path"), "/soc/serial@10000000");
	/* the seed the boot drew (vm_boot(): entropy_fresh()), as it is */
	seed = fdt_getprop(dtb, chosen, "rng-seed", &len);
	EXPECT_EQ(len, 32);
	EXPECT_TRUE(seed && len == 32 && !memcmp(seed, gi.rng_seed, 32));
}

/* stdout-path (a full path, as QEMU virt gives it) and the serial0 alias both
 * lead to the UART node */
TEST(fdt_guest_stdout_alias_resolves)
{
	int via_path, via_alias;

	setup(1);
	if (build(NULL))
		return;
	via_path = fdt_path_offset(dtb, prop_str(node("/chosen"), "stdout-path"));
	via_alias = fdt_path_offset(dtb, "serial0");
	EXPECT_TRUE(via_path >= 0);
	EXPECT_EQ(via_path, serial_node());
	EXPECT_EQ(via_alias, via_path);
	EXPECT_EQ(via_path, node("/soc/serial@10000000"));
}

TEST(fdt_guest_chosen_without_initrd_and_bootargs)
{
	int chosen;

	setup(1);
	vm.cfg.bootargs[0] = '\0';
	if (build(NULL))
		return;
	chosen = node("/chosen");
	EXPECT_EQ(prop_len(chosen, "bootargs"), -1);
	EXPECT_EQ(prop_len(chosen, "linux,initrd-start"), -1);
	EXPECT_EQ(prop_len(chosen, "linux,initrd-end"), -1);
	EXPECT_EQ(prop_u32(chosen, "carapace,boot-count"), 0);
	EXPECT_EQ(prop_len(chosen, "rng-seed"), 32);
	EXPECT_STREQ(prop_str(chosen, "stdout-path"), "/soc/serial@10000000");
}

/* a maximal command line survives whole */
TEST(fdt_guest_long_bootargs)
{
	setup(1);
	memset(vm.cfg.bootargs, 'x', VM_BOOTARGS_LEN - 1);
	vm.cfg.bootargs[VM_BOOTARGS_LEN - 1] = '\0';
	if (build(NULL))
		return;
	EXPECT_EQ(prop_len(node("/chosen"), "bootargs"), VM_BOOTARGS_LEN);
	EXPECT_TRUE(prop_str(node("/chosen"), "bootargs") != NULL);
}

/* ---- PLIC and UART ---- */

static void expect_plic(unsigned int nr_vcpus)
{
	int plic, len;
	const fdt32_t *ie;

	plic = plic_node();
	EXPECT_TRUE(plic >= 0);
	if (plic < 0)
		return;
	EXPECT_EQ(plic, node("/soc/plic@c000000"));	/* QEMU virt's node name */
	EXPECT_TRUE(has_string(plic, "compatible", "riscv,plic0"));
	EXPECT_TRUE(has_string(plic, "compatible", "sifive,plic-1.0.0"));
	expect_reg2(plic, 0x0c000000, 0x4000000);
	EXPECT_EQ(prop_len(plic, "interrupt-controller"), 0);
	EXPECT_EQ(prop_u32(plic, "#interrupt-cells"), 1);
	EXPECT_EQ(prop_u32(plic, "#address-cells"), 0);
	EXPECT_EQ(prop_u32(plic, "riscv,ndev"), VPLIC_NR_SRC - 1);
	EXPECT_NE(fdt_get_phandle(dtb, plic), 0);
	ie = fdt_getprop(dtb, plic, "interrupts-extended", &len);
	EXPECT_TRUE(ie != NULL);
	EXPECT_EQ(len, 2 * 4 * nr_vcpus);
	if (!ie || len != (int)(2 * 4 * nr_vcpus))
		return;
	for (unsigned int i = 0; i < nr_vcpus; i++) {
		uint32_t ph = fdt_get_phandle(dtb, cpu_intc(i));

		EXPECT_NE(ph, 0);
		EXPECT_EQ(fdt32_ld(&ie[2 * i]), ph);
		EXPECT_EQ(fdt32_ld(&ie[2 * i + 1]), 9);	/* S-mode external */
		/* the phandle leads back to exactly that vCPU's controller */
		EXPECT_EQ(fdt_node_offset_by_phandle(dtb, ph), cpu_intc(i));
	}
}

TEST(fdt_guest_plic_two_vcpus)
{
	setup(2);
	if (build(NULL))
		return;
	expect_plic(2);
}

TEST(fdt_guest_plic_one_and_max_vcpus)
{
	setup(1);
	if (!build(NULL))
		expect_plic(1);
	setup(VM_MAX_VCPUS);
	if (build(NULL))
		return;
	EXPECT_EQ(count_cpus(), VM_MAX_VCPUS);
	expect_plic(VM_MAX_VCPUS);
}

TEST(fdt_guest_soc_bus)
{
	int soc;

	setup(1);
	if (build(NULL))
		return;
	soc = node("/soc");
	EXPECT_TRUE(soc >= 0);
	EXPECT_EQ(prop_u32(soc, "#address-cells"), 2);
	EXPECT_EQ(prop_u32(soc, "#size-cells"), 2);
	EXPECT_TRUE(has_string(soc, "compatible", "simple-bus"));
	EXPECT_EQ(prop_len(soc, "ranges"), 0);
}

TEST(fdt_guest_serial)
{
	int uart, plic;

	setup(2);
	if (build(NULL))
		return;
	uart = serial_node();
	plic = plic_node();
	EXPECT_TRUE(uart >= 0);
	EXPECT_TRUE(plic >= 0);
	if (uart < 0 || plic < 0)
		return;
	EXPECT_EQ(uart, node("/soc/serial@10000000"));
	expect_reg2(uart, 0x10000000, 0x100);
	EXPECT_EQ(prop_u32(uart, "interrupts"), 10);
	EXPECT_EQ(prop_u32(uart, "interrupt-parent"), fdt_get_phandle(dtb, plic));
	EXPECT_NE(prop_u32(uart, "clock-frequency"), 0);
}

/* every phandle in the tree is unique */
TEST(fdt_guest_phandles_unique)
{
	uint32_t seen[64];
	unsigned int n = 0;
	int off;

	setup(VM_MAX_VCPUS);
	if (build(NULL))
		return;
	for (off = fdt_next_node(dtb, -1, NULL); off >= 0; off = fdt_next_node(dtb, off, NULL)) {
		uint32_t ph = fdt_get_phandle(dtb, off);

		if (!ph)
			continue;
		for (unsigned int i = 0; i < n; i++)
			EXPECT_NE(seen[i], ph);
		if (n < ARRAY_SIZE(seen))
			seen[n++] = ph;
	}
	/* a cpu node and its intc per vCPU, and the PLIC (libfdt, as Linux,
	 * reads a node's properties only before its first child) */
	EXPECT_EQ(n, 2 * VM_MAX_VCPUS + 1);
}

/* every core of cpu-map names a cpu node a consumer can find (Linux:
 * "Can't get CPU for leaf core" otherwise) */
TEST(fdt_guest_cpu_map_resolves)
{
	char path[64];

	setup(VM_MAX_VCPUS);
	if (build(NULL))
		return;
	for (unsigned int i = 0; i < VM_MAX_VCPUS; i++) {
		int core, cpu;

		snprintf(path, sizeof(path), "/cpus/cpu-map/cluster0/core%u", i);
		core = fdt_path_offset(dtb, path);
		EXPECT_TRUE(core >= 0);
		if (core < 0)
			continue;
		cpu = fdt_node_offset_by_phandle(dtb, prop_u32(core, "cpu"));
		snprintf(path, sizeof(path), "cpu@%u", i);
		EXPECT_TRUE(cpu >= 0);
		if (cpu >= 0)
			EXPECT_STREQ(fdt_get_name(dtb, cpu, NULL), path);
	}
}

/* ---- CFI policy and host capabilities ---- */

TEST(fdt_guest_cfi_policy_off)
{
	static const char *const none[] = { "zicfilp", "zicfiss", "v", NULL };

	setup(2);
	vm.cfg.cfi_policy = CFI_POLICY_OFF;
	if (build(NULL))
		return;
	expect_isa(ext_common, none);
}

TEST(fdt_guest_cfi_policy_delegate_strict)
{
	static const char *const cfi[] = { "zicfilp", "zicfiss", NULL };

	setup(2);
	vm.cfg.cfi_policy = CFI_POLICY_DELEGATE;
	if (!build(NULL))
		expect_isa(cfi, ext_never);
	setup(2);
	vm.cfg.cfi_policy = CFI_POLICY_STRICT;
	if (!build(NULL))
		expect_isa(cfi, ext_never);
}

TEST(fdt_guest_host_without_zicfiss)
{
	static const char *const want[] = { "zicfilp", "zimop", "zcmop", "sstc", NULL };
	static const char *const not[] = { "zicfiss", "v", NULL };

	setup(2);
	hart_caps.zicfiss = false;
	if (build(NULL))
		return;
	expect_isa(want, not);
}

TEST(fdt_guest_host_without_zicfilp)
{
	static const char *const want[] = { "zicfiss", "zimop", "zcmop", NULL };
	static const char *const not[] = { "zicfilp", "v", NULL };

	setup(2);
	hart_caps.zicfilp = false;
	if (build(NULL))
		return;
	expect_isa(want, not);
}

TEST(fdt_guest_host_without_cfi)
{
	static const char *const not[] = { "zicfilp", "zicfiss", "v", NULL };

	setup(1);
	hart_caps.zicfilp = hart_caps.zicfiss = false;
	if (build(NULL))
		return;
	expect_isa(ext_common, not);
}

/* ---- buffer sizes ---- */

/* Every size below what the tree needs fails (in a heap buffer of exactly that
 * size, so ASan catches a write past it); the size it needs works. */
TEST(fdt_guest_buffer_too_small)
{
	static const struct guest_fdt_info gi = { .initrd_start = 0x90000000,
						  .initrd_end = 0x90100000 };
	unsigned int need, fails = 0;

	setup(VM_MAX_VCPUS);
	if (build(&gi))
		return;
	need = fdt_totalsize(dtb);
	EXPECT_TRUE(need > 1024);
	for (unsigned int size = 0; size < need; size++) {
		void *buf = malloc(size ? size : 1);
		int rc = fdt_guest_build(&vm, &gi, buf, size);

		if (rc >= 0)
			printf("  size %u of %u: rc %d\n", size, need, rc);
		fails += rc < 0;
		free(buf);
	}
	EXPECT_EQ(fails, need);
	{
		void *buf = malloc(need);

		EXPECT_EQ(fdt_guest_build(&vm, &gi, buf, need), 0);
		EXPECT_EQ(fdt_check_header(buf), 0);
		EXPECT_EQ(memcmp(buf, dtb, need), 0);
		free(buf);
	}
}

TEST(fdt_guest_buffer_too_small_error)
{
	static const struct guest_fdt_info none;
	char small[256] __attribute__((aligned(8)));

	int rc;

	setup(2);
	rc = fdt_guest_build(&vm, &none, small, sizeof(small));
	EXPECT_NE(rc, 0);
	EXPECT_TRUE(rc < 0);
}

/* ---- virtio devices: a "virtio,mmio" node per attached slot, none without ---- */

static unsigned int count_virtio(void)
{
	unsigned int n = 0;

	for (int off = fdt_node_offset_by_compatible(dtb, -1, "virtio,mmio"); off >= 0;
	     off = fdt_node_offset_by_compatible(dtb, off, "virtio,mmio"))
		n++;
	return n;
}

TEST(fdt_guest_no_virtio_node_without_devices)
{
	setup(2);
	build(NULL);
	EXPECT_EQ(count_virtio(), 0);
}

TEST(fdt_guest_virtio_node_per_slot)
{
	static struct vio_dev *const attached = (struct vio_dev *)&vm;	/* only tested non-NULL */
	int off;

	setup(2);
	vm.vio[0] = attached;
	vm.vio[5] = attached;
	build(NULL);
	EXPECT_EQ(count_virtio(), 2);
	off = node("/soc/virtio_mmio@10001000");
	EXPECT_TRUE(off >= 0);
	expect_reg2(off, VIO_MMIO_BASE, VIO_MMIO_STRIDE);
	EXPECT_EQ(prop_u32(off, "interrupts"), 1);
	EXPECT_EQ(prop_u32(off, "interrupt-parent"),
		  prop_u32(plic_node(), "phandle"));
	off = node("/soc/virtio_mmio@10006000");
	EXPECT_TRUE(off >= 0);
	expect_reg2(off, VIO_MMIO_BASE + 5 * VIO_MMIO_STRIDE, VIO_MMIO_STRIDE);
	EXPECT_EQ(prop_u32(off, "interrupts"), 6);
	EXPECT_TRUE(prop_str(off, "compatible") != NULL);
}

/* ---- AIA VMs (docs/design-aia.md 3.1) ---- */

static void setup_aia(unsigned int nr_vcpus)
{
	setup(nr_vcpus);
	hart_caps.ssaia = true;
	vm.cfg.irqchip = VM_IRQCHIP_AIA;
	vm.cfg.imsic_ids = 255;
}

/* a two-cell specifier <@src 4> whose parent is the APLIC */
static void expect_aplic_irq(int off, uint32_t src, int aplic)
{
	int len;
	const fdt32_t *p = fdt_getprop(dtb, off, "interrupts", &len);

	EXPECT_EQ(len, 8);
	if (!p || len != 8)
		return;
	EXPECT_EQ(fdt32_ld(&p[0]), src);
	EXPECT_EQ(fdt32_ld(&p[1]), 4);	/* level-high */
	EXPECT_EQ(prop_u32(off, "interrupt-parent"), fdt_get_phandle(dtb, aplic));
}

TEST(fdt_guest_aia_imsic_node)
{
	const fdt32_t *ie;
	int imsic, len;

	setup_aia(3);
	if (build(NULL))
		return;
	imsic = node("/soc/interrupt-controller@28000000");
	EXPECT_TRUE(imsic >= 0);
	if (imsic < 0)
		return;
	EXPECT_TRUE(has_string(imsic, "compatible", "qemu,imsics"));
	EXPECT_TRUE(has_string(imsic, "compatible", "riscv,imsics"));
	expect_reg2(imsic, 0x28000000, 3 * 0x1000);	/* a page per vCPU */
	EXPECT_EQ(prop_u32(imsic, "riscv,num-ids"), 255);
	EXPECT_EQ(prop_len(imsic, "msi-controller"), 0);
	EXPECT_EQ(prop_len(imsic, "interrupt-controller"), 0);
	EXPECT_EQ(prop_u32(imsic, "#interrupt-cells"), 0);
	EXPECT_EQ(prop_len(imsic, "riscv,guest-index-bits"), -1);	/* no files for the guest */
	EXPECT_NE(fdt_get_phandle(dtb, imsic), 0);
	ie = fdt_getprop(dtb, imsic, "interrupts-extended", &len);
	EXPECT_EQ(len, 2 * 4 * 3);
	if (!ie || len != 2 * 4 * 3)
		return;
	for (unsigned int i = 0; i < 3; i++) {	/* position = hart index = vCPU id */
		EXPECT_EQ(fdt32_ld(&ie[2 * i]), fdt_get_phandle(dtb, cpu_intc(i)));
		EXPECT_EQ(fdt32_ld(&ie[2 * i + 1]), 9);
	}
}

TEST(fdt_guest_aia_aplic_node_and_devices)
{
	static struct vio_dev *const attached = (struct vio_dev *)&vm;
	int aplic, imsic, off;

	setup_aia(2);
	vm.vio[2] = attached;
	if (build(NULL))
		return;
	EXPECT_TRUE(plic_node() < 0);	/* the APLIC instead */
	aplic = node("/soc/interrupt-controller@d000000");
	imsic = node("/soc/interrupt-controller@28000000");
	EXPECT_TRUE(aplic >= 0 && imsic >= 0);
	if (aplic < 0 || imsic < 0)
		return;
	EXPECT_TRUE(has_string(aplic, "compatible", "qemu,aplic"));
	EXPECT_TRUE(has_string(aplic, "compatible", "riscv,aplic"));
	expect_reg2(aplic, 0x0d000000, 0x8000);
	EXPECT_EQ(prop_u32(aplic, "msi-parent"), fdt_get_phandle(dtb, imsic));
	EXPECT_EQ(prop_u32(aplic, "riscv,num-sources"), 31);
	EXPECT_EQ(prop_u32(aplic, "#interrupt-cells"), 2);
	EXPECT_EQ(prop_u32(aplic, "#address-cells"), 0);
	EXPECT_EQ(prop_len(aplic, "interrupt-controller"), 0);
	EXPECT_EQ(prop_len(aplic, "interrupts-extended"), -1);	/* MSI mode: no IDCs */
	expect_aplic_irq(serial_node(), 10, aplic);
	expect_aplic_irq(node("/soc/vmgenid@10100000"), 11, aplic);
	off = node("/soc/virtio_mmio@10003000");
	EXPECT_TRUE(off >= 0);
	if (off >= 0)
		expect_aplic_irq(off, 3, aplic);
}

TEST(fdt_guest_aia_isa_ssaia_only_for_aia)
{
	static const char *const ssaia[] = { "ssaia", NULL }, *const none[] = { NULL };
	static const char *const never[] = { "smaia", NULL };
	char isa[256];
	int cpu;

	setup_aia(2);
	if (build(NULL))
		return;
	expect_isa(ssaia, never);
	cpu = cpu_node(1);
	EXPECT_TRUE(cpu >= 0 && prop_str(cpu, "riscv,isa") != NULL);
	if (cpu >= 0 && prop_str(cpu, "riscv,isa")) {
		snprintf(isa, sizeof(isa), "%s", prop_str(cpu, "riscv,isa"));
		EXPECT_TRUE(strstr(isa, "_ssaia") != NULL);
	}
	/* a PLIC VM on the same Ssaia host: no ssaia, the PLIC as before */
	setup(2);
	hart_caps.ssaia = true;
	if (build(NULL))
		return;
	expect_isa(none, ssaia);
	expect_plic(2);
	EXPECT_TRUE(node("/soc/interrupt-controller@28000000") < 0);
	EXPECT_EQ(prop_u32(serial_node(), "interrupts"), 10);	/* one cell */
}
