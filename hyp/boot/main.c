/* SPDX-License-Identifier: MIT */
/* Cold boot on the boot hart, warm boot on the others, then the scheduler.
 * Boot is the one place that knows every part: it wires the hooks through
 * which lower layers reach higher ones (trap vector, host services, guest
 * console output). */
#include <string.h>
#include <arch/riscv/csr.h>
#include <atomic.h>
#include <console.h>
#include <crc32c.h>
#include <dbtr.h>
#include <entropy.h>
#include <fdt_host.h>
#include <hart.h>
#include <host_irq.h>
#include <hostblk.h>
#include <host_io.h>
#include <hostio_selftest.h>
#include <hyp_cfi.h>
#include <hyp_cfi_selftest.h>
#include <host_ipi.h>
#include <imsic.h>
#include <imsic_files.h>
#include <hostnet.h>
#include <hyp_map.h>
#include <mgmt.h>
#include <mm.h>
#include <pci_host.h>
#include <sbi_client.h>
#include <sched.h>
#include <snapshot.h>
#include <tlb.h>
#include <uart.h>
#include <virtio_console.h>
#include <vm.h>
#include <vm_lifecycle.h>
#include <vmops.h>
#include <vsbi.h>
#include <wx_selftest.h>

#define PLATFORM_UART_DEFAULT	0x10000000UL	/* QEMU virt: used only to report a bad DT */

extern char __image_start[], __image_end[], __trap_vector[], __trap_vector_ss[];
static struct host_info host;
static volatile unsigned int harts_online;
static volatile bool vms_ready;

void hyp_boot_map(unsigned long hartid, const void *fdt);
void hyp_main(unsigned long hartid, const void *fdt, unsigned long secondary_entry);
void hyp_secondary_main(void);

/* Ask M-mode for menvcfg.SSE; without it guests can have no shadow stack.
 * The CFI build asked already, in head.S, for the hypervisor's own shadow
 * stack (hyp_cfi.h): this hart's answer is the one for guests too. */
static bool request_shadow_stack(void)
{
	if (!host.isa_zicfiss)
		return false;
	if (HYP_CFI_BUILD)
		return this_hart()->ss_on;
	return sbi_fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0) == SBI_SUCCESS;
}

/* The hypervisor's own map (hyp_map.h): the image, the host DT's RAM, and
 * the device registers it may touch: on QEMU virt all of them sit in the
 * space below RAM, mapped whole with big pages but for its first 2 MiB (a
 * NULL pointer still faults), plus whatever the DT puts elsewhere (the PCIe
 * windows above RAM). */
#define DEVICE_SPACE_START	0x200000UL

static void add_device(struct hyp_map_layout *l, uint64_t base, uint64_t size)
{
	if (!size)
		return;
	if (l->nr_dev == HYP_MAP_MAX_DEV)
		hyp_panic("own address space: more than %u device regions", HYP_MAP_MAX_DEV);
	l->dev[l->nr_dev++] = (struct mm_range){ base, size };
}

static void setup_own_map(void)
{
	static struct hyp_map_layout l;
	uint64_t ram_lo = UINT64_MAX;

	hyp_map_image_layout(&l);
	for (unsigned int i = 0; i < host.nr_mem; i++) {
		l.ram[l.nr_ram++] = host.mem[i];
		ram_lo = MIN(ram_lo, host.mem[i].base);
	}
	if (ram_lo > DEVICE_SPACE_START)
		add_device(&l, DEVICE_SPACE_START, (ram_lo & ~(PAGE_SIZE - 1)) - DEVICE_SPACE_START);
	add_device(&l, host.uart_base, PAGE_SIZE);
	if (host.plic.present)
		add_device(&l, host.plic.base, host.plic.size);
	if (host.imsic.present)
		add_device(&l, host.imsic.base, host.imsic.size);
	if (host.aplic.present)
		add_device(&l, host.aplic.base, host.aplic.size);
	for (unsigned int i = 0; i < host.nr_harts; i++)
		if (host.sswi_setssip[i])
			add_device(&l, host.sswi_setssip[i], 4);
	if (host.pci.present) {
		add_device(&l, host.pci.ecam_base, host.pci.ecam_size);
		add_device(&l, host.pci.mem32.cpu_base, host.pci.mem32.size);
		add_device(&l, host.pci.mem64.cpu_base, host.pci.mem64.size);
	}
	hyp_map_enable(&l);
}

/* The free ranges (a boot-time set the DT sizes), then the page allocator
 * over them. A set too fragmented for its slots is a boot failure: a range
 * it could not reserve would be handed out. */
static void setup_memory(void)
{
	static struct mm_ranges free;
	int rc = 0;

	for (unsigned int i = 0; i < host.nr_mem && !rc; i++)
		rc = mm_ranges_add(&free, host.mem[i].base, host.mem[i].size);
	/* firmware below us, the image itself, reserved-memory, the DT, guest images */
	if (!rc)
		rc = mm_ranges_reserve(&free, host.mem[0].base,
				       (uint64_t)(uintptr_t)__image_end - host.mem[0].base);
	for (unsigned int i = 0; i < host.nr_reserved && !rc; i++)
		rc = mm_ranges_reserve(&free, host.reserved[i].base, host.reserved[i].size);
	if (rc)
		hyp_panic("host memory layout: more than %u free ranges, or overlapping memory "
			  "nodes (error %d)", MM_MAX_RANGES, rc);
	mm_pool_init(&host_pool, &free);
	pr_info("memory: %lu MiB free for guests and tables",
		(unsigned long)(mm_pool_free_bytes(&host_pool) >> 20));
}

/* Zicboz for mm_zero(): only if every hart has it with one block size and a
 * probe here zeroes exactly its block (the firmware may not have set
 * menvcfg.CBZE: then cbo.zero traps, caught by the probe). */
unsigned long __cbo_zero_probe(void *p);

static void enable_cbo_zero(void)
{
	unsigned long block = host.cboz_block, cause;
	uint8_t *buf;
	bool ok = true;

	if (!block)
		return;
	buf = (uint8_t *)(uintptr_t)mm_alloc_raw(3 * block, block);
	if (!buf)
		return;
	memset(buf, 0xa5, 3 * block);
	cause = __cbo_zero_probe(buf + block);
	for (unsigned long i = 0; i < 3 * block && !cause; i++)
		ok &= buf[i] == ((i >= block && i < 2 * block) ? 0 : 0xa5);
	mm_free((hpa_t)(uintptr_t)buf, 3 * block);
	if (cause || !ok) {
		pr_info("Zicboz: cbo.zero %s: not used", cause ? "traps (firmware leaves it off)" :
			"zeroed the wrong bytes");
		return;
	}
	mm_zero_use_cbo(block);
}

/* Ticks the CRC32C of the image's first CRC_PROBE_BYTES takes, the best of
 * CRC_PROBE_RUNS (a busy host may preempt any one run). */
#define CRC_PROBE_BYTES	16384
#define CRC_PROBE_RUNS	3
static uint64_t crc32c_probe(void)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < CRC_PROBE_RUNS; i++) {
		uint64_t t = time_now();
		volatile uint32_t crc = crc32c(__image_start, CRC_PROBE_BYTES);

		(void)crc;
		best = MIN(best, time_now() - t);
	}
	return best;
}

/* Every byte of a stream is checksummed on hart 0. Zbc's products take 1.4
 * instructions a byte, the tables 7, but an instruction is not a fixed
 * time: QEMU's TCG runs each product as a 64-step loop, and there the
 * tables are 2-3 times faster in host time, the stream's bound
 * (docs/performance.md, "Stream throughput"). So both are timed, as Linux
 * picks its XOR and RAID routines, and the faster kept. Under -icount time
 * is instructions: the products. */
static void choose_crc32c(void)
{
	uint64_t tables, products;

	tables = crc32c_probe();
	if (!crc32c_use_clmul(true)) {
		pr_info("crc32c: Zbc products disagree with the tables: tables used");
		return;
	}
	products = crc32c_probe();
	if (products <= tables)
		return;
	crc32c_use_clmul(false);
	pr_info("crc32c: tables, faster here than Zbc products (%lu against %lu ticks "
		"per %u KiB)", (unsigned long)tables, (unsigned long)products,
		CRC_PROBE_BYTES / 1024);
}

static void report_cfi_caps(bool ss_granted)
{
	char own[128];

	pr_info("hypervisor CFI: %s", hyp_cfi_summary(own, sizeof(own)));
	pr_info("hart caps: sstc %s, vmid bits %u, smstateen %s, zbc %s, cbo.zero %lu, ssaia %s, "
		"geilen %u", hart_caps.sstc ? "yes" : "no", hart_caps.vmid_bits,
		hart_caps.smstateen ? "yes" : "no", host.isa_zbc ? "yes" : "no",
		mm_zero_cbo_block(), hart_caps.ssaia ? "yes" : "no", hart_caps.geilen);
	pr_info("firmware FWFT SET SHADOW_STACK: %s",
		ss_granted ? (HYP_CFI_BUILD ? "granted (menvcfg.SSE=1, at boot for the hypervisor)" :
			      "granted (menvcfg.SSE=1)") :
		host.isa_zicfiss ? "REFUSED by firmware (needs OpenSBI >= 1.6)" :
				   "not requested (CPU has no Zicfiss)");
	if (!hart_caps.fw_cfi && (host.isa_zicfilp || host.isa_zicfiss))
		pr_info("firmware has no FWFT LANDING_PAD (OpenSBI < 1.6): no CFI for guests");
	pr_info("CFI for guests: landing pads (Zicfilp) %s, shadow stacks (Zicfiss) %s",
		hart_caps.zicfilp ? "available" : "NOT available",
		hart_caps.zicfiss ? "available" : "NOT available");
	cfi_spelp_report();
}

/* The position of @hartid in the host DT's cpu list (host.hartids), the
 * index every per-hart array of host_info uses. */
static unsigned int dt_hart(unsigned long hartid)
{
	unsigned int i = 0;

	while (i < host.nr_harts && host.hartids[i] != hartid)
		i++;
	return i;
}

/* Hart index @i's S-level IMSIC file, 0 if it has none (or no Ssaia). */
static uint64_t imsic_s_file(unsigned int i)
{
	unsigned int h = dt_hart(harts[i].hartid);
	uint32_t pos = h < host.nr_harts ? host.imsic_hart_index[h] : IMSIC_NO_HART;
	uint64_t pa;

	if (!hart_caps.ssaia || !host.imsic.present || pos == IMSIC_NO_HART)
		return 0;
	pa = imsic_s_file_pa(&host.imsic, pos);
	return pa - host.imsic.base < host.imsic.size ? pa : 0;
}

/* Host IPIs through the ACLINT SSWI when every hart has one (one store, no
 * firmware call), else through the IMSIC when every hart has an S file (one
 * store, the AIA machine), else through SBI. By hart index, as harts[] orders
 * them. Before the other harts start: each enables the IPI's identity in
 * its own file (setup_imsic_file()). */
static void setup_host_ipis(void)
{
	unsigned long ids[HART_MAX];
	uint64_t sswi[HART_MAX], s_file[HART_MAX];

	for (unsigned int i = 0; i < nr_harts; i++) {
		unsigned int h = dt_hart(harts[i].hartid);

		ids[i] = harts[i].hartid;
		sswi[i] = h < host.nr_harts ? host.sswi_setssip[h] : 0;
		s_file[i] = imsic_s_file(i);
	}
	host_ipi_init(ids, sswi, nr_harts);
	if (host_ipi_sswi())
		pr_info("host IPIs: ACLINT SSWI at 0x%lx", (unsigned long)sswi[0]);
	else if (host_ipi_use_imsic(s_file, nr_harts))
		pr_info("host IPIs: IMSIC, identity %u of each hart's S file (hart 0's at 0x%lx)",
			HOST_IPI_EIID, (unsigned long)s_file[0]);
	else
		pr_info("host IPIs: SBI (no ACLINT SSWI or S-level IMSIC file for every hart "
			"in the DT)");
}

/* AIA host interrupts: the CPU has the S-level AIA CSRs and the DT an
 * S-level IMSIC with an APLIC domain sending to it. */
static bool host_uses_aia(void)
{
	return hart_caps.ssaia && host.imsic.present && host.aplic.present;
}

/* Host interrupts are taken on hart 0 only (docs/architecture.md, "Host
 * interrupts"): through the AIA when the host has it (the APLIC's MSIs to
 * this hart's S file), else the host PLIC's S-mode context of this, the boot
 * hart. False if there are none. */
static bool setup_host_irqs(unsigned long hartid)
{
	unsigned int h = dt_hart(hartid);
	uint32_t ctx = h < host.nr_harts ? host.plic_s_context[h] : PLIC_NO_CONTEXT;
	uint32_t pos = h < host.nr_harts ? host.imsic_hart_index[h] : IMSIC_NO_HART;
	const char *why;

	if (host_uses_aia()) {
		if (!host_irq_init_aia(&host.aplic, &host.imsic, pos)) {
			pr_info("host interrupts: AIA (APLIC 0x%lx in MSI mode, %u sources, to hart "
				"index %u's S-level IMSIC file at 0x%lx, %u identities)",
				(unsigned long)host.aplic.base, host.aplic.num_sources, pos,
				(unsigned long)imsic_s_file_pa(&host.imsic, pos), host.imsic.num_ids);
			return true;
		}
		why = pos == IMSIC_NO_HART ? "the boot hart has no S-level IMSIC file" :
		      "the APLIC domain is not in MSI mode";
	} else if (!host_irq_init_plic(&host.plic, ctx)) {
		pr_info("host interrupts: PLIC 0x%lx, S-mode context %u", (unsigned long)host.plic.base,
			ctx);
		return true;
	} else {
		why = host.plic.present ? "no S-mode PLIC context for the boot hart" :
		      host.imsic.present && !hart_caps.ssaia ? "an IMSIC but no Ssaia on the CPU" :
		      host.imsic.present ? "no APLIC domain sending MSIs to the S-level IMSIC" :
		      "no usable PLIC or IMSIC in the DT";
	}
	pr_info("host interrupts: none (%s)", why);
	return false;
}

/* This hart's S-level interrupt file (AIA): cleared; delivering on hart 0,
 * the one that takes host interrupts, and on every hart when host IPIs come
 * through it (then with the IPI's identity enabled). */
static void setup_imsic_file(bool boot_hart)
{
	if (host_uses_aia() || host_ipi_imsic())
		imsic_host_hart_init(host.imsic.num_ids, boot_hart || host_ipi_imsic());
	host_ipi_hart_init();
	/* a parked guest file's signal (SGEI) wakes its waiting vCPU */
	if (imsic_gfiles_nr(this_hart()->index))
		csr_set(CSR_HIE, MIP_SGEIP);
}

/* Each hart's guest interrupt files (docs/design-aia.md 3.3): the pages
 * after its S file that GEILEN and the IMSIC node allow, for the vCPUs of
 * AIA VMs; none without the host AIA (they run in software then). */
static void setup_guest_files(void)
{
	unsigned int nr = 0;

	for (unsigned int i = 0; host_uses_aia() && i < nr_harts; i++) {
		unsigned int h = dt_hart(harts[i].hartid);
		uint32_t pos = h < host.nr_harts ? host.imsic_hart_index[h] : IMSIC_NO_HART;
		unsigned int n = imsic_gfiles_setup(i, &host.imsic, pos, hart_caps.geilen);

		nr = i ? MIN(nr, n) : n;
	}
	imsic_files_init(nr ? host.imsic.guest_ids : 0);
	if (nr)
		pr_info("guest interrupt files: %u per hart, %u identities each (GEILEN %u)", nr,
			host.imsic.guest_ids, hart_caps.geilen);
	else if (host_uses_aia())
		pr_info("guest interrupt files: none (GEILEN %u): AIA VMs' IMSICs in software",
			hart_caps.geilen);
}

/* The management device's interrupt wakes hart 0 when a stream's buffers
 * come back or a request arrives (its work is still polled). Its specifier
 * has one cell under a PLIC and two (source, trigger) under the APLIC. */
static void route_vcon_irq(void)
{
	uint32_t parent, type;
	int64_t irq = vcon_irq(&parent, &type);
	bool aia = host_irq_chip() == HOST_IRQ_AIA;
	uint32_t intc = aia ? host.aplic.phandle : host.plic.phandle;

	if (irq < 0 || parent != intc || (aia && !type) ||
	    host_irq_register_type((uint32_t)irq, aia ? type : HOST_IRQ_LEVEL_HIGH,
				   vcon_interrupt, NULL))
		pr_info("management channel: no interrupt (polled)");
}

static void create_boot_vms(void)
{
	for (unsigned int i = 0; i < host.nr_images; i++)
		image_register(host.images[i].name, host.images[i].addr, host.images[i].size);
	if (!host.nr_vms)
		pr_info("no VMs described in /chosen%s", host.persist ?
			": waiting for VMs from the management channel" : ": nothing to run");
	for (unsigned int i = 0; i < host.nr_vms; i++) {
		const char *why;
		struct vm *vm;

		if (vm_create(&host.vms[i], &vm, &why) && why) {
			pr_info("vm %s: not created: %s", host.vms[i].name, why);
			host_note_failure();
		}
	}
}

/* This hart's trap vector (run/vcpu_switch.S): the CFI build's copy that
 * swaps ssp where head.S turned the hart's shadow stack on. */
static unsigned long trap_vector(void)
{
#ifdef CARAPACE_CFI_BUILD
	if (this_hart()->ss_on)
		return (unsigned long)__trap_vector_ss;
#endif
	return (unsigned long)__trap_vector;
}

/* The boot hart's first step, before the other harts start: the host DT,
 * the console and the hypervisor's own map. It returns (head.S then turns
 * the CFI build's shadow stack on: its pages need the map) before hyp_main(). */
void hyp_boot_map(unsigned long hartid, const void *fdt)
{
	const char *err;

	if (fdt_host_parse(fdt, &host, &err)) {
		uart_init(PLATFORM_UART_DEFAULT, 0);
		hyp_panic("cannot use the host device tree: %s", err);
	}
	uart_init(host.uart_base, host.uart_shift);
	pr_info("Carapace hypervisor, HS-mode, boot hart %lu of %u", hartid, host.nr_harts);
	setup_own_map();
}

void hyp_main(unsigned long hartid, const void *fdt, unsigned long secondary_entry)
{
	bool ss, irqs;

	(void)fdt;	/* parsed by hyp_boot_map() */
	/* landing pads (CFI build), and what head.S did with the shadow stack */
	hyp_cfi_hart_init(true);
	harts[0].hartid = hartid;
	nr_harts = 1;
	for (unsigned int i = 0; i < host.nr_harts && nr_harts < HART_MAX; i++) {
		if (host.hartids[i] == hartid)
			continue;
		harts[nr_harts].hartid = host.hartids[i];
		harts[nr_harts].index = nr_harts;
		nr_harts++;
	}
	timebase_hz = host.timebase_hz;
	entropy_init(host.rng_seed, host.rng_seed_len);
	console_set_partial_flush(host.partial_flush_ms);
	hart_caps.smstateen = host.isa_smstateen;
	hart_caps.ssaia = host.isa_ssaia;
	hart_caps.zimop = host.isa_zimop;
	hart_caps.zcmop = host.isa_zcmop;
	setup_host_ipis();	/* (the IMSIC's needs Ssaia) */
	/* before any other hart runs: the streams' checksums */
	if (host.isa_zbc)
		choose_crc32c();
	setup_memory();
	enable_cbo_zero();

	ss = request_shadow_stack();
	hart_probe_caps();
	hart_caps.fw_cfi = sbi_ecall(SBI_EXT_FWFT, SBI_FWFT_GET, SBI_FWFT_LANDING_PAD, 0, 0,
				     0).error == SBI_SUCCESS;
	/* Honest capabilities: without firmware CFI support (OpenSBI 1.5.1) cause 18
	 * is not delegated to us and ELP is lost on redirect: offer no CFI at all. */
	if (!host.isa_zicfilp || !hart_caps.fw_cfi)
		hart_caps.zicfilp = false;
	if (!ss || !hart_caps.fw_cfi)
		hart_caps.zicfiss = false;
	cfi_spelp_selftest();	/* what the CPU does with a guest's SPELP */
	if (!hart_caps.sstc)
		hyp_panic("the CPU lacks Sstc, which Carapace requires (QEMU: sstc=true)");
	hart_init_csrs(trap_vector());
	dbtr_host_probe();	/* before the other harts start: they follow it */
	setup_guest_files();
	setup_imsic_file(true);
	if (host.vmid_bits && host.vmid_bits < hart_caps.vmid_bits)
		hart_caps.vmid_bits = host.vmid_bits;	/* boot option: narrower */
	vmid_init(hart_caps.vmid_bits);
	if (host.stream_stall_ms)
		snap_stall_ms = host.stream_stall_ms;
	if (host.timeslice_us)
		sched_slice_ticks = host.timebase_hz * host.timeslice_us / 1000000;
	sched_wfi_traps = host.wfi_traps;

	HYP_ASSERT(vsbi_init());	/* the SBI lookup, from the one table */
	harts_online = 1;
	for (unsigned int i = 1; i < nr_harts; i++) {
		long rc = sbi_hart_start(harts[i].hartid, secondary_entry,
					 (unsigned long)&harts[i]);

		if (rc)
			pr_info("hart %lu did not start (SBI error %ld)", harts[i].hartid, rc);
	}
	/* every hart must have asked for menvcfg.SSE before a guest may rely on it */
	for (uint64_t end = time_now() + timebase_hz; time_now() < end;)
		if (atomic_load(&harts_online) == nr_harts)
			break;
	report_cfi_caps(hart_caps.zicfiss);
	pr_info("%u harts online, timeslice %lu us%s", atomic_load(&harts_online),
		(unsigned long)(sched_slice_ticks * 1000000 / timebase_hz),
		sched_wfi_traps ? ", every guest WFI exits" : "");

	vm_console_out = console_vm_write;
	sched_host_poll = host_poll;
	host_set_persist(host.persist);
	if (mgmt_init(fdt))
		pr_info("management channel: virtio-serial port org.carapace.control");
	else
		pr_info("no management device: carapace-ctl cannot reach this host");
	snap_port_init();
	if (host.pci.present && pci_host_init(&host.pci)) {
		hostblk_init();
		hostnet_init();
	}
	irqs = setup_host_irqs(hartid);
	if (irqs)
		route_vcon_irq();
	host_io_init(&host);
	if (host.selftest_hostio)
		hostio_selftest();
	if (host.selftest_pci_irq && irqs)
		hostio_selftest_irq(&host);
	if (host.selftest_wx)
		wx_selftest(host.selftest_wx == HOST_SELFTEST_WX_EXEC);
	if (host.selftest_cfi)
		hyp_cfi_selftest(host.selftest_cfi);	/* returns only if refused */
	create_boot_vms();
	if (host.incoming)
		mgmt_arm_incoming(host.incoming_disks, host.incoming_copy);
	if (nr_vms)
		pr_info("console: input goes to vm %s; press Ctrl-] for the monitor "
			"(switch VM, list, counters, CFI state, pause/resume)", vms[0].cfg.name);
	atomic_store(&vms_ready, true);
	sched_loop();
}

void hyp_secondary_main(void)
{
	bool ss;

	hyp_cfi_hart_init(false);
	ss = request_shadow_stack();
	if (hart_caps.zicfiss && !ss) {
		pr_info("hart %lu: firmware refused SHADOW_STACK: no guest shadow stacks",
			this_hart()->hartid);
		hart_caps.zicfiss = false;
	}
	hart_init_csrs(trap_vector());
	dbtr_hart_init();
	setup_imsic_file(false);
	atomic_add(&harts_online, 1);
	while (!atomic_load(&vms_ready))
		;
	sched_loop();
}
