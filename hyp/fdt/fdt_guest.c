/* SPDX-License-Identifier: MIT */
/* Guest device tree: cpus (with exactly the ISA Carapace virtualizes), memory, chosen. */
#include <arch/riscv/encoding.h>
#include <libfdt.h>
#include <string.h>
#include <errno.h>
#include <printf.h>
#include <cfi.h>
#include <fdt_guest.h>
#include <hart.h>
#include <vm.h>

/* Extensions whose state is switched per vCPU. Never list one that is not
 * (e.g. V: there is no vector context switching). */
size_t fdt_guest_isa_extensions(const struct vm *vm, const char **out, size_t max)
{
	static const char *const base[] = { "i", "m", "a", "f", "d", "c", "zicsr", "zifencei",
					    "zicntr", "zaamo", "zalrsc", "zca", "zcd" };
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(base) && n < max; i++)
		out[n++] = base[i];
	/* no state to switch, but only the host's CPU can execute them */
	if (hart_caps.zimop && n < max)
		out[n++] = "zimop";
	if (hart_caps.zcmop && n < max)
		out[n++] = "zcmop";
	if (n < max)
		out[n++] = "sstc";
	if ((vm->cfg.features & VM_FEAT_SVPBMT) && n < max)
		out[n++] = "svpbmt";
	/* both: A/D updating is off at boot and FWFT PTE_AD_HW_UPDATING turns it
	 * on (the DT binding's rule); without Svadu the guest has Svade alone,
	 * which an empty list already means */
	if ((vm->cfg.features & VM_FEAT_SVADU) && n + 1 < max) {
		out[n++] = "svade";
		out[n++] = "svadu";
	}
	if (cfi_vm_has_lp(vm) && n < max)
		out[n++] = "zicfilp";
	if (cfi_vm_has_ss(vm) && n < max)
		out[n++] = "zicfiss";
	/* an AIA VM's IMSIC CSRs (Linux's IMSIC driver wants it); never smaia */
	if (vm_is_aia(vm) && n < max)
		out[n++] = "ssaia";
	return n;
}

/* Where a multi-letter extension goes in an ISA string (the ISA manual's naming
 * rules): Z extensions by the category their second letter names, in the
 * canonical order of single-letter extensions, then S, then X. */
static int multi_letter_rank(const char *e)
{
	static const char order[] = "imafdqlcbkjtpvh";
	const char *p = e[0] == 'z' && e[1] ? strchr(order, e[1]) : NULL;

	return p ? (int)(p - order) : e[0] == 'z' ? 15 : e[0] == 's' ? 16 : 17;
}

static bool multi_letter_before(const char *a, const char *b)
{
	int ra = multi_letter_rank(a), rb = multi_letter_rank(b);

	return ra != rb ? ra < rb : strcmp(a, b) < 0;
}

int fdt_guest_isa_string(const char *const *ext, size_t n, char *buf, size_t len)
{
	static const char single[] = "imafdqlcbkjtpvh";
	const char *multi[32];
	size_t m = 0, pos;

	if (len < 5)
		return -FDT_ERR_NOSPACE;
	memcpy(buf, "rv64", 5);
	pos = 4;
	for (const char *s = single; *s; s++)
		for (size_t i = 0; i < n; i++)
			if (ext[i][0] == *s && !ext[i][1]) {
				if (pos + 2 > len)
					return -FDT_ERR_NOSPACE;
				buf[pos++] = *s;
				buf[pos] = '\0';
			}
	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (!ext[i][1])
			continue;
		if (m == ARRAY_SIZE(multi))
			return -FDT_ERR_NOSPACE;
		for (j = m++; j && multi_letter_before(ext[i], multi[j - 1]); j--)
			multi[j] = multi[j - 1];
		multi[j] = ext[i];
	}
	for (size_t i = 0; i < m; i++) {
		size_t l = strlen(multi[i]);

		if (pos + l + 2 > len)
			return -FDT_ERR_NOSPACE;
		buf[pos++] = '_';
		memcpy(buf + pos, multi[i], l + 1);
		pos += l;
	}
	return 0;
}

#define PHANDLE_CPU_INTC(i)	(1 + (i))
#define PHANDLE_PLIC		0x100
#define PHANDLE_IMSIC		0x101
#define PHANDLE_APLIC		0x102
#define PHANDLE_CPU(i)		(0x200 + (i))

/* The widest VS-stage translation the VM was given (the host CPU's, probed at
 * boot, or what a restored guest had), as QEMU says it. */
static const char *mmu_type(const struct vm *vm)
{
	return vm->cfg.vs_sv == 57 ? "riscv,sv57" : vm->cfg.vs_sv == 48 ? "riscv,sv48"
									 : "riscv,sv39";
}

#define TRY(x) do { int __rc = (x); if (__rc) return __rc; } while (0)

static int prop_u64_pair(void *fdt, const char *name, uint64_t a, uint64_t b)
{
	fdt64_t v[2] = { cpu_to_fdt64(a), cpu_to_fdt64(b) };

	return fdt_property(fdt, name, v, sizeof(v));
}

static int build_cpus(void *fdt, const struct vm *vm)
{
	const char *ext[24];
	size_t n = fdt_guest_isa_extensions(vm, ext, ARRAY_SIZE(ext));
	char list[256], isa[256];
	int len = 0;

	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(ext[i]) + 1;

		if (len + (int)l > (int)sizeof(list))
			return -FDT_ERR_NOSPACE;
		memcpy(list + len, ext[i], l);
		len += (int)l;
	}
	/* the deprecated riscv,isa too: much software reads only that */
	TRY(fdt_guest_isa_string(ext, n, isa, sizeof(isa)));
	TRY(fdt_begin_node(fdt, "cpus"));
	TRY(fdt_property_u32(fdt, "#address-cells", 1));
	TRY(fdt_property_u32(fdt, "#size-cells", 0));
	TRY(fdt_property_u32(fdt, "timebase-frequency", (uint32_t)timebase_hz));
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		char name[16];

		snprintf(name, sizeof(name), "cpu@%u", i);
		TRY(fdt_begin_node(fdt, name));
		TRY(fdt_property_string(fdt, "device_type", "cpu"));
		TRY(fdt_property_u32(fdt, "reg", i));
		TRY(fdt_property_string(fdt, "status", "okay"));
		TRY(fdt_property_string(fdt, "compatible", "riscv"));
		TRY(fdt_property_string(fdt, "riscv,isa", isa));
		TRY(fdt_property_string(fdt, "riscv,isa-base", "rv64i"));
		TRY(fdt_property(fdt, "riscv,isa-extensions", list, len));
		TRY(fdt_property_string(fdt, "mmu-type", mmu_type(vm)));
		/* before the subnode: a property after a child node is outside
		 * the spec's structure, and Linux never reads it (cpu-map's
		 * cores would resolve to no CPU) */
		TRY(fdt_property_u32(fdt, "phandle", PHANDLE_CPU(i)));
		TRY(fdt_begin_node(fdt, "interrupt-controller"));
		TRY(fdt_property_u32(fdt, "#interrupt-cells", 1));
		TRY(fdt_property(fdt, "interrupt-controller", "", 0));
		TRY(fdt_property_string(fdt, "compatible", "riscv,cpu-intc"));
		TRY(fdt_property_u32(fdt, "phandle", PHANDLE_CPU_INTC(i)));
		TRY(fdt_end_node(fdt));
		TRY(fdt_end_node(fdt));
	}
	/* the topology, as QEMU virt gives it: one cluster, a core per hart */
	TRY(fdt_begin_node(fdt, "cpu-map"));
	TRY(fdt_begin_node(fdt, "cluster0"));
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		char name[16];

		snprintf(name, sizeof(name), "core%u", i);
		TRY(fdt_begin_node(fdt, name));
		TRY(fdt_property_u32(fdt, "cpu", PHANDLE_CPU(i)));
		TRY(fdt_end_node(fdt));
	}
	TRY(fdt_end_node(fdt));
	TRY(fdt_end_node(fdt));
	return fdt_end_node(fdt);
}


/* A device's interrupt: one cell (the source) under the PLIC, two (source,
 * 4 = level-high) under the APLIC. */
static int prop_irq(void *fdt, const struct vm *vm, unsigned int irq)
{
	fdt32_t spec[2] = { cpu_to_fdt32(irq), cpu_to_fdt32(4) };

	if (!vm_is_aia(vm)) {
		TRY(fdt_property_u32(fdt, "interrupts", irq));
		return fdt_property_u32(fdt, "interrupt-parent", PHANDLE_PLIC);
	}
	TRY(fdt_property(fdt, "interrupts", spec, sizeof(spec)));
	return fdt_property_u32(fdt, "interrupt-parent", PHANDLE_APLIC);
}

/* An AIA VM's controllers (docs/design-aia.md 3.1), named and compatible as
 * QEMU virt's aia=aplic-imsic: one IMSIC node for every vCPU's file page
 * (position in interrupts-extended = hart index = vCPU id), no guest files
 * for the guest; an APLIC domain in MSI mode sending to it. */
static int build_aia(void *fdt, const struct vm *vm)
{
	fdt32_t ext[2 * VM_MAX_VCPUS];
	char name[40];

	snprintf(name, sizeof(name), "interrupt-controller@%lx", VIMSIC_BASE);
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property(fdt, "compatible", "qemu,imsics\0riscv,imsics",
			 sizeof("qemu,imsics\0riscv,imsics")));
	TRY(prop_u64_pair(fdt, "reg", VIMSIC_BASE, vm->cfg.nr_vcpus * VIMSIC_PAGE));
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		ext[2 * i] = cpu_to_fdt32(PHANDLE_CPU_INTC(i));
		ext[2 * i + 1] = cpu_to_fdt32(IRQ_S_EXT);
	}
	TRY(fdt_property(fdt, "interrupts-extended", ext,
			 (int)(2 * vm->cfg.nr_vcpus * sizeof(fdt32_t))));
	TRY(fdt_property_u32(fdt, "riscv,num-ids", vm->cfg.imsic_ids));
	TRY(fdt_property(fdt, "msi-controller", "", 0));
	TRY(fdt_property(fdt, "interrupt-controller", "", 0));
	TRY(fdt_property_u32(fdt, "#interrupt-cells", 0));
	TRY(fdt_property_u32(fdt, "phandle", PHANDLE_IMSIC));
	TRY(fdt_end_node(fdt));

	snprintf(name, sizeof(name), "interrupt-controller@%lx", VAPLIC_BASE);
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property(fdt, "compatible", "qemu,aplic\0riscv,aplic",
			 sizeof("qemu,aplic\0riscv,aplic")));
	TRY(prop_u64_pair(fdt, "reg", VAPLIC_BASE, VAPLIC_SIZE));
	TRY(fdt_property_u32(fdt, "msi-parent", PHANDLE_IMSIC));
	TRY(fdt_property_u32(fdt, "riscv,num-sources", VAPLIC_NR_SRC - 1));
	TRY(fdt_property(fdt, "interrupt-controller", "", 0));
	TRY(fdt_property_u32(fdt, "#interrupt-cells", 2));
	TRY(fdt_property_u32(fdt, "#address-cells", 0));
	TRY(fdt_property_u32(fdt, "phandle", PHANDLE_APLIC));
	return fdt_end_node(fdt);
}

/* The PLIC (one S-mode context per vCPU) and the devices wired to it. */
static int build_plic(void *fdt, const struct vm *vm)
{
	fdt32_t ext[2 * VM_MAX_VCPUS];
	char name[40];

	snprintf(name, sizeof(name), "plic@%lx", VPLIC_BASE);	/* QEMU virt's name */
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property(fdt, "compatible", "sifive,plic-1.0.0\0riscv,plic0",
			 sizeof("sifive,plic-1.0.0\0riscv,plic0")));
	TRY(prop_u64_pair(fdt, "reg", VPLIC_BASE, VPLIC_SIZE));
	TRY(fdt_property_u32(fdt, "#address-cells", 0));
	TRY(fdt_property_u32(fdt, "#interrupt-cells", 1));
	TRY(fdt_property(fdt, "interrupt-controller", "", 0));
	TRY(fdt_property_u32(fdt, "riscv,ndev", VPLIC_NR_SRC - 1));
	for (unsigned int i = 0; i < vm->cfg.nr_vcpus; i++) {
		ext[2 * i] = cpu_to_fdt32(PHANDLE_CPU_INTC(i));
		ext[2 * i + 1] = cpu_to_fdt32(IRQ_S_EXT);
	}
	TRY(fdt_property(fdt, "interrupts-extended", ext,
			 (int)(2 * vm->cfg.nr_vcpus * sizeof(fdt32_t))));
	TRY(fdt_property_u32(fdt, "phandle", PHANDLE_PLIC));
	return fdt_end_node(fdt);
}

/* The interrupt controllers and the devices wired to them. */
static int build_soc(void *fdt, const struct vm *vm)
{
	char name[40];

	TRY(fdt_begin_node(fdt, "soc"));
	TRY(fdt_property_u32(fdt, "#address-cells", 2));
	TRY(fdt_property_u32(fdt, "#size-cells", 2));
	TRY(fdt_property_string(fdt, "compatible", "simple-bus"));
	TRY(fdt_property(fdt, "ranges", "", 0));
	TRY(vm_is_aia(vm) ? build_aia(fdt, vm) : build_plic(fdt, vm));

	snprintf(name, sizeof(name), "serial@%lx", VUART_BASE);
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property_string(fdt, "compatible", "ns16550a"));
	TRY(prop_u64_pair(fdt, "reg", VUART_BASE, VUART_SIZE));
	TRY(fdt_property_u32(fdt, "clock-frequency", 3686400));
	TRY(prop_irq(fdt, vm, VUART_IRQ));
	TRY(fdt_end_node(fdt));

	/* a restored VM gets a new generation ID and this interrupt */
	snprintf(name, sizeof(name), "vmgenid@%lx", VMGENID_BASE);
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property_string(fdt, "compatible", "microsoft,vmgenid"));
	TRY(prop_u64_pair(fdt, "reg", VMGENID_BASE, 16));
	TRY(prop_irq(fdt, vm, VMGENID_IRQ));
	TRY(fdt_end_node(fdt));

	/* a node per virtio device, as QEMU virt names its slots; none if the
	 * VM has no device */
	for (unsigned int i = 0; i < VIO_MMIO_SLOTS; i++) {
		unsigned long base = VIO_MMIO_BASE + i * VIO_MMIO_STRIDE;

		if (!vm->vio[i])
			continue;
		snprintf(name, sizeof(name), "virtio_mmio@%lx", base);
		TRY(fdt_begin_node(fdt, name));
		TRY(fdt_property_string(fdt, "compatible", "virtio,mmio"));
		TRY(prop_u64_pair(fdt, "reg", base, VIO_MMIO_STRIDE));
		TRY(prop_irq(fdt, vm, VIO_MMIO_IRQ(i)));
		TRY(fdt_end_node(fdt));
	}
	return fdt_end_node(fdt);
}

int fdt_guest_build(const struct vm *vm, const struct guest_fdt_info *gi, void *buf,
		    size_t size)
{
	void *fdt = buf;
	char name[32];

	TRY(fdt_create(fdt, (int)size));
	TRY(fdt_finish_reservemap(fdt));
	TRY(fdt_begin_node(fdt, ""));
	TRY(fdt_property_u32(fdt, "#address-cells", 2));
	TRY(fdt_property_u32(fdt, "#size-cells", 2));
	TRY(fdt_property_string(fdt, "compatible", "carapace,virt"));
	TRY(fdt_property_string(fdt, "model", "Carapace virtual machine"));

	TRY(fdt_begin_node(fdt, "chosen"));
	if (vm->cfg.bootargs[0])
		TRY(fdt_property_string(fdt, "bootargs", vm->cfg.bootargs));
	if (gi->initrd_end) {
		TRY(fdt_property_u64(fdt, "linux,initrd-start", gi->initrd_start));
		TRY(fdt_property_u64(fdt, "linux,initrd-end", gi->initrd_end));
	}
	TRY(fdt_property_u32(fdt, "carapace,boot-count", vm->cfg.boot_count));
	snprintf(name, sizeof(name), "/soc/serial@%lx", VUART_BASE);
	TRY(fdt_property_string(fdt, "stdout-path", name));	/* as QEMU virt says it */
	TRY(fdt_property(fdt, "rng-seed", gi->rng_seed, sizeof(gi->rng_seed)));
	TRY(fdt_property_string(fdt, "carapace,vm-name", vm->cfg.name));
	TRY(fdt_end_node(fdt));

	snprintf(name, sizeof(name), "memory@%lx", (unsigned long)vm->cfg.ram_gpa);
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property_string(fdt, "device_type", "memory"));
	TRY(prop_u64_pair(fdt, "reg", vm->cfg.ram_gpa, vm->cfg.ram_size));
	TRY(fdt_end_node(fdt));

	TRY(fdt_begin_node(fdt, "aliases"));
	snprintf(name, sizeof(name), "/soc/serial@%lx", VUART_BASE);
	TRY(fdt_property_string(fdt, "serial0", name));
	TRY(fdt_end_node(fdt));

	TRY(build_cpus(fdt, vm));
	TRY(build_soc(fdt, vm));
	TRY(fdt_end_node(fdt));
	TRY(fdt_finish(fdt));
	return 0;
}
