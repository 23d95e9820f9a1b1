/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the guest device tree builder, hyp/fdt/fdt_guest.c
 * (docs/fuzzing.md, "More targets"), with libfdt's sequential-write API
 * compiled from Debian's linux-source.
 *
 * One input is one VM configuration, as vm_alloc()/vm_create() or a restore
 * could leave it, and one buffer size. A 56-byte record, then the bootargs:
 *
 *   0   flags: 0x01 host has Zimop, 0x02 Zcmop, 0x04 henvcfg.PBMTE,
 *       0x08 henvcfg.ADUE, 0x10 Zicfilp, 0x20 Zicfiss, 0x40 the VM's
 *       features are byte 16's low bits as they are (a restored VM keeps
 *       the features it was given), 0x80 no timebase change
 *   1   vCPUs (1 + v % 8)     2  CFI policy (v % 4)   3  vs_sv (39/48/57/0)
 *   4   RAM in MiB (u16, rounded up to 2 MiB, at least 8)
 *   6   VM index (u16 % 8)   8  boot count (u32)
 *   12  initrd start, 20 initrd end (u64; end 0: none)
 *   28  buffer size (u64: 0 = VM_FDT_MAX, else v % VM_FDT_MAX)
 *   36  name (16 bytes, cut to 15 and NUL-terminated; "" becomes "vm")
 *   52  timebase (u32)
 *   56  bootargs: the rest, up to 511 bytes, cut at a NUL
 *
 * The DT is written into a heap block of exactly the buffer size, so one
 * byte written past it is an ASan report. Checked: the builder returns 0 or
 * -FDT_ERR_NOSPACE only; with the full VM_FDT_MAX it always succeeds; when it
 * succeeds, fdt_check_full() accepts the blob within the buffer, and reading
 * it back gives the configuration (bootargs, VM name, memory, one cpu node
 * per vCPU with the extension list fdt_guest_isa_extensions() gives and a
 * riscv,isa string made of it, initrd only when there is one, PLIC contexts
 * for every vCPU); a build into VM_FDT_MAX bytes gives the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libfdt.h>
#include <arch/riscv/encoding.h>
#include <cfi.h>
#include <fdt_guest.h>
#include <hart.h>
#include <vm.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define REC	56

struct hart_caps hart_caps;
uint64_t timebase_hz;
struct hart *test_this_hart;

/* referenced by hyp/state/cfi_state.c, never called by the builder */
void vm_stop(struct vm *vm, const char *fmt, ...)
{
	(void)vm;
	(void)fmt;
	abort();
}

void vcpu_redirect_trap(struct vcpu *v, unsigned long cause, unsigned long tval)
{
	(void)v;
	(void)cause;
	(void)tval;
	abort();
}

static struct vm vm;

static uint64_t get(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void setup(const uint8_t *d, const uint8_t *args, size_t args_len)
{
	static const unsigned int sv[4] = { 39, 48, 57, 0 };
	uint8_t fl = d[0];
	uint64_t mib = get(d + 4, 2);
	size_t n;

	hart_caps = (struct hart_caps){
		.sstc = true, .zimop = fl & 0x01, .zcmop = fl & 0x02,
		.henvcfg_ok = ENVCFG_STCE | ((fl & 0x04) ? ENVCFG_PBMTE : 0) |
			      ((fl & 0x08) ? ENVCFG_ADUE : 0),
		.zicfilp = fl & 0x10, .zicfiss = fl & 0x20, .fw_cfi = true, .vs_sv = 57,
	};
	timebase_hz = (fl & 0x80) ? 10000000 : get(d + 52, 4);
	memset(&vm, 0, sizeof(vm));
	vm.cfg.nr_vcpus = 1 + d[1] % VM_MAX_VCPUS;
	vm.cfg.cfi_policy = (enum cfi_policy)(d[2] % 4);
	vm.cfg.vs_sv = sv[d[3] % 4];
	mib = mib < 8 ? 8 : (mib + 1) & ~1ULL;
	vm.cfg.ram_gpa = VM_GUEST_RAM_BASE;
	vm.cfg.ram_size = mib << 20;
	vm.index = get(d + 6, 2) % VM_MAX;
	vm.cfg.boot_count = (uint32_t)get(d + 8, 4);
	vm.cfg.features = (fl & 0x40) ? d[16] & 0x1f : vm_features(vm.cfg.cfi_policy);
	n = strnlen((const char *)d + 36, 15);
	memcpy(vm.cfg.name, d + 36, n);
	if (!n)
		strcpy(vm.cfg.name, "vm");
	n = strnlen((const char *)args, MIN(args_len, (size_t)VM_BOOTARGS_LEN - 1));
	memcpy(vm.cfg.bootargs, args, n);
}

static const char *str_prop(const void *fdt, int node, const char *name)
{
	int len;
	const char *s = fdt_getprop(fdt, node, name, &len);

	CHECK(s && len > 0 && s[len - 1] == '\0' && strlen(s) == (size_t)len - 1);
	return s;
}

static void check_tree(const void *fdt, size_t bufsize, const struct guest_fdt_info *gi)
{
	const char *ext[32];
	size_t n = fdt_guest_isa_extensions(&vm, ext, ARRAY_SIZE(ext));
	int root, chosen, mem, cpus, node, len, cpu_nodes = 0;
	const void *reg;
	fdt64_t cells[2];
	const fdt32_t *irqs;
	char path[64];

	CHECK(fdt_totalsize(fdt) <= bufsize);
	CHECK(fdt_check_full(fdt, bufsize) == 0);
	root = fdt_path_offset(fdt, "/");
	CHECK(root == 0);
	chosen = fdt_path_offset(fdt, "/chosen");
	CHECK(chosen > 0);
	if (vm.cfg.bootargs[0])
		CHECK(!strcmp(str_prop(fdt, chosen, "bootargs"), vm.cfg.bootargs));
	else
		CHECK(!fdt_getprop(fdt, chosen, "bootargs", NULL));
	CHECK(!strcmp(str_prop(fdt, chosen, "carapace,vm-name"), vm.cfg.name));
	CHECK(!!fdt_getprop(fdt, chosen, "linux,initrd-start", NULL) == !!gi->initrd_end);
	CHECK(fdt_node_offset_by_compatible(fdt, -1, "ns16550a") >= 0);
	CHECK(fdt_path_offset(fdt, str_prop(fdt, chosen, "stdout-path")) > 0);

	snprintf(path, sizeof(path), "/memory@%lx", (unsigned long)vm.cfg.ram_gpa);
	mem = fdt_path_offset(fdt, path);
	CHECK(mem > 0);
	reg = fdt_getprop(fdt, mem, "reg", &len);
	CHECK(reg && len == 16);
	memcpy(cells, reg, sizeof(cells));	/* property values are 4-byte aligned */
	CHECK(fdt64_to_cpu(cells[0]) == vm.cfg.ram_gpa && fdt64_to_cpu(cells[1]) == vm.cfg.ram_size);

	cpus = fdt_path_offset(fdt, "/cpus");
	CHECK(cpus > 0);
	fdt_for_each_subnode(node, fdt, cpus) {
		const char *list, *isa;
		int off = 0;

		if (strncmp(fdt_get_name(fdt, node, NULL), "cpu@", 4))
			continue;
		cpu_nodes++;
		list = fdt_getprop(fdt, node, "riscv,isa-extensions", &len);
		CHECK(list && len > 0);
		for (size_t i = 0; i < n; i++) {
			size_t l = strlen(ext[i]) + 1;

			CHECK(off + (int)l <= len && !memcmp(list + off, ext[i], l));
			off += (int)l;
		}
		CHECK(off == len);
		isa = str_prop(fdt, node, "riscv,isa");
		CHECK(!strncmp(isa, "rv64", 4));
		for (size_t i = 0; i < n; i++)
			CHECK(ext[i][1] ? strstr(isa, ext[i]) != NULL
					: strchr(isa + 4, ext[i][0]) != NULL);
	}
	CHECK(cpu_nodes == (int)vm.cfg.nr_vcpus);

	node = fdt_node_offset_by_compatible(fdt, -1, "riscv,plic0");
	CHECK(node > 0);
	irqs = fdt_getprop(fdt, node, "interrupts-extended", &len);
	CHECK(irqs && len == (int)(8 * vm.cfg.nr_vcpus));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct guest_fdt_info gi;
	size_t bufsize;
	uint8_t *buf, *full;
	int rc;

	if (size < REC)
		return -1;
	setup(data, data + REC, size - REC);
	gi.initrd_start = get(data + 12, 8);
	gi.initrd_end = get(data + 20, 8);
	bufsize = get(data + 28, 8) % VM_FDT_MAX;
	if (!bufsize)
		bufsize = VM_FDT_MAX;

	/* exactly the buffer: a byte past it is an ASan report */
	buf = malloc(bufsize);
	CHECK(buf);
	rc = fdt_guest_build(&vm, &gi, buf, bufsize);
	CHECK(rc == 0 || rc == -FDT_ERR_NOSPACE);
	if (!rc)
		check_tree(buf, bufsize, &gi);

	/* the hypervisor's own buffer always suffices, and gives the same bytes */
	full = malloc(VM_FDT_MAX);
	CHECK(full);
	CHECK(fdt_guest_build(&vm, &gi, full, VM_FDT_MAX) == 0);
	if (rc)
		check_tree(full, VM_FDT_MAX, &gi);
	else
		CHECK(fdt_totalsize(buf) == fdt_totalsize(full) &&
		      !memcmp(buf, full, fdt_totalsize(full)));
	free(full);
	free(buf);
	return 0;
}
