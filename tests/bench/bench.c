/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmarks run as a guest (under Carapace) and as an S-mode kernel on
 * bare QEMU + OpenSBI (the baseline). Under `-icount shift=0` one timebase
 * tick (10 MHz) is 100 instructions, so rdtime deltas count instructions of
 * every privilege level. Prints `BENCH <name> <instructions x10>` lines.
 *
 * bootargs: mode=micro (default) or mode=switch (vCPU switch ping-pong with
 * another VM on the same hart), iters=N, fwft_ss=1 (turn the shadow stack on
 * first, to measure the CFI state switch), cost=1 (the largest work one exit
 * of each kind can ask of the hypervisor: docs/performance.md, "Work per
 * exit"), reboot=1 (print the time, then reboot the VM: the reset's cost is
 * the time from one boot's REBOOT line to the next boot's BOOT line),
 * imsic_ipi=1 (only the IPI ping-pong, sent through the IMSIC: an AIA VM, or
 * bare QEMU virt with aia=aplic-imsic).
 */
#include "libguest.h"

#define INSNS_PER_TICK	100
#define UART_LSR	0x10000005UL

static void report_bench(const char *name, unsigned long ticks, unsigned long n)
{
	/* instructions per operation, one decimal */
	unsigned long x10 = ticks * INSNS_PER_TICK * 10 / n;

	printf("BENCH %s %lu.%lu\n", name, x10 / 10, x10 % 10);
}

static void bench_sbi(unsigned long n)
{
	unsigned long t0 = rdtime();

	/* the ecall inline, as a kernel's hot SBI call would be: the loop adds ~5 */
	for (unsigned long i = 0; i < n; i++) {
		register unsigned long a0 asm("a0");
		register unsigned long a1 asm("a1");
		register unsigned long a6 asm("a6") = SBI_BASE_GET_SPEC_VERSION;
		register unsigned long a7 asm("a7") = SBI_EXT_BASE;

		asm volatile("ecall" : "=r"(a0), "=r"(a1) : "r"(a6), "r"(a7) : "memory");
	}
	report_bench("sbi_roundtrip", rdtime() - t0, n);
}

static void bench_mmio(unsigned long n)
{
	volatile uint8_t *lsr = (volatile uint8_t *)UART_LSR;
	unsigned long t0 = rdtime();

	for (unsigned long i = 0; i < n; i++)
		(void)*lsr;
	report_bench("mmio_uart_read", rdtime() - t0, n);
}

static volatile unsigned long irq_at, irq_seen;

static void on_timer(unsigned long irq)
{
	(void)irq;
	irq_at = rdtime();
	csr_write(CSR_STIMECMP, -1UL);
	irq_seen = 1;
}

/* From the programmed deadline to the first instruction of the handler. */
static void bench_timer(unsigned long n)
{
	unsigned long total = 0;

	trap_set_irq(IRQ_S_TIMER, on_timer);
	csr_set(CSR_SIE, MIP_STIP);
	csr_set(CSR_SSTATUS, SR_SIE);
	for (unsigned long i = 0; i < n; i++) {
		unsigned long deadline = rdtime() + 200;

		irq_seen = 0;
		csr_write(CSR_STIMECMP, deadline);
		while (!READ_ONCE(irq_seen))
			cpu_relax();
		total += irq_at - deadline;
	}
	csr_clear(CSR_SSTATUS, SR_SIE);
	report_bench("timer_irq_latency", total, n);
}

static volatile unsigned long pongs, other_ready;
static unsigned long me_hart, other_hart;

/* Either side: take the IPI, and the target answers at once. */
static void on_ipi(unsigned long irq)
{
	(void)irq;
	csr_clear(CSR_SIP, MIP_SSIP);
	if (current_hartid() == other_hart)
		sbi_send_ipi(1UL << me_hart, 0);
	else
		WRITE_ONCE(pongs, pongs + 1);
}

static void ipi_target(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	csr_set(CSR_SIE, MIP_SSIP);
	csr_set(CSR_SSTATUS, SR_SIE);
	WRITE_ONCE(other_ready, 1);
	for (;;)	/* asleep, as an idle kernel would be */
		wfi();
}

/* IPI ping-pong between two harts that sleep in WFI while they wait (a
 * spinning waiter would measure QEMU's round-robin, not delivery): half the
 * round trip is the send-to-handler latency. */
static void bench_ipi(unsigned long n)
{
	unsigned long t0;

	me_hart = current_hartid();
	other_hart = other_hartid();
	if (other_hart == -1UL) {
		printf("INFO: ipi latency needs 2 harts\n");
		return;
	}
	trap_set_irq(IRQ_S_SOFT, on_ipi);
	if (hart_start(other_hart, ipi_target, 0) || !wait_for(READ_ONCE(other_ready), 1000000)) {
		printf("INFO: hart %lu did not start\n", other_hart);
		return;
	}
	csr_set(CSR_SIE, MIP_SSIP);
	t0 = rdtime();
	for (unsigned long i = 0; i < n; i++) {
		unsigned long want = pongs + 1;

		sbi_send_ipi(1UL << other_hart, 0);
		/* sleep with SIE=0 (wfi still wakes), then let the handler run */
		while (READ_ONCE(pongs) != want) {
			wfi();
			csr_set(CSR_SSTATUS, SR_SIE);
			csr_clear(CSR_SSTATUS, SR_SIE);
		}
	}
	report_bench("ipi_latency", (rdtime() - t0) / 2, n);
}

/* ---- the same ping-pong through the IMSIC (imsic_ipi=1) ----
 * As a Linux kernel with an IMSIC sends its IPIs: a 32-bit store of identity 1
 * to the target's S-level interrupt file page, taken as an external interrupt
 * and claimed through stopei. QEMU virt's S files (bare) and an AIA VM's
 * (docs/design-aia.md 3.1) both start at 0x28000000, hart ids 0.. being the
 * files' positions on both; a hart's stride is 4 KiB << the node's
 * riscv,guest-index-bits (bare QEMU with aia-guests: a hart's guest files
 * follow its S file; an AIA VM's has none). */
#define IMSIC_S_BASE	0x28000000UL
#define IMSIC_PAGE	0x1000UL
#define ISEL_EIDELIVERY	0x70
#define ISEL_EITHRESHOLD 0x72
#define ISEL_EIE0	0xc0
#define IMSIC_IPI_ID	1

static void imsic_ireg_write(unsigned long isel, unsigned long v)
{
	csr_write(CSR_SISELECT, isel);
	csr_write(CSR_SIREG, v);
}

static unsigned long imsic_stride = IMSIC_PAGE;

/* the S-level IMSIC node's stride between harts; false if there is none */
static bool imsic_find(void)
{
	int soc = fdt_path_offset("/soc");

	for (int n = soc < 0 ? -1 : fdt_first_child(soc); n >= 0; n = fdt_next_sibling(n)) {
		const void *bits;
		int len;

		if (strcmp(fdt_node_name(n), "interrupt-controller@28000000"))
			continue;
		bits = fdt_getprop(n, "riscv,guest-index-bits", &len);
		if (bits && len == 4)
			imsic_stride = IMSIC_PAGE << fdt_read_cells(bits, 1);
		return true;
	}
	return false;
}

static void imsic_send_ipi(unsigned long hart)
{
	/* as a kernel's writel(): its stores before the IPI first */
	asm volatile("fence w, o" ::: "memory");
	*(volatile uint32_t *)(IMSIC_S_BASE + hart * imsic_stride) = IMSIC_IPI_ID;
}

/* this hart's file: delivering, identity 1 enabled, sie.SEIE */
static void imsic_file_init(void)
{
	imsic_ireg_write(ISEL_EIDELIVERY, 1);
	imsic_ireg_write(ISEL_EITHRESHOLD, 0);
	imsic_ireg_write(ISEL_EIE0, 1UL << IMSIC_IPI_ID);
	csr_set(CSR_SIE, MIP_SEIP);
}

static void on_imsic(unsigned long irq)
{
	unsigned long id;

	(void)irq;
	/* csrrw: read and claim in one instruction */
	for (;;) {
		asm volatile("csrrw %0, " __stringify(CSR_STOPEI) ", zero" : "=r"(id) :: "memory");
		id >>= 16;
		if (!id)
			break;
		if (id != IMSIC_IPI_ID)
			continue;
		if (current_hartid() == other_hart)
			imsic_send_ipi(me_hart);
		else
			WRITE_ONCE(pongs, pongs + 1);
	}
}

static void imsic_ipi_target(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	imsic_file_init();
	csr_set(CSR_SSTATUS, SR_SIE);
	WRITE_ONCE(other_ready, 1);
	for (;;)
		wfi();
}

/* bench_ipi()'s ping-pong, each IPI one store to the other hart's file */
static void bench_ipi_imsic(unsigned long n)
{
	unsigned long t0;

	me_hart = current_hartid();
	other_hart = other_hartid();
	if (other_hart == -1UL) {
		printf("INFO: ipi latency needs 2 harts\n");
		return;
	}
	if (!imsic_find()) {
		printf("INFO: no S-level IMSIC at 0x%lx\n", IMSIC_S_BASE);
		return;
	}
	trap_set_irq(IRQ_S_EXT, on_imsic);
	if (hart_start(other_hart, imsic_ipi_target, 0) ||
	    !wait_for(READ_ONCE(other_ready), 1000000)) {
		printf("INFO: hart %lu did not start\n", other_hart);
		return;
	}
	imsic_file_init();
	t0 = rdtime();
	for (unsigned long i = 0; i < n; i++) {
		unsigned long want = pongs + 1;

		imsic_send_ipi(other_hart);
		while (READ_ONCE(pongs) != want) {
			wfi();
			csr_set(CSR_SSTATUS, SR_SIE);
			csr_clear(CSR_SSTATUS, SR_SIE);
		}
	}
	report_bench("ipi_latency_imsic", (rdtime() - t0) / 2, n);
}

/* Calls before the timed ones: the other VM starts on this hart at the same
 * time, and its start (zeroing its .bss, its first console lines: 113 k
 * instructions, 139 k once lib/vio.c's page-aligned rings grew every
 * payload's .bss) happens inside this VM's first call. Timed, it added 56,
 * then 69, to the figure of 2000 calls. */
#define SWITCH_WARMUP	100

/* Ping-pong with another VM on the same hart: a retentive suspend with a timer
 * already pending (STIE set, SIE clear) gives the hart away and comes back at
 * once, so every call is one SBI exit plus one switch to the other vCPU. */
static void bench_switch(unsigned long n)
{
	unsigned long t0;

	csr_write(CSR_STIMECMP, 0);
	csr_set(CSR_SIE, MIP_STIP);
	for (unsigned long i = 0; i < SWITCH_WARMUP; i++)
		sbi_hart_suspend(SBI_HSM_SUSPEND_RET_DEFAULT, 0, 0);
	t0 = rdtime();
	for (unsigned long i = 0; i < n; i++)
		sbi_hart_suspend(SBI_HSM_SUSPEND_RET_DEFAULT, 0, 0);
	report_bench("suspend_switch_pair", rdtime() - t0, n);
	csr_clear(CSR_SIE, MIP_STIP);
}

/* ---- the most work one exit can ask for (cost=1) ---- */

#define COST_EVENTS	4096		/* event_get_info's limit (hyp/vsbi/vsbi_pmu.c) */
#define COST_DBCN	(64 * 1024)	/* far more than one DBCN call takes */

static uint32_t cost_events[COST_EVENTS][4] __attribute__((aligned(16)));
static char cost_dbcn[COST_DBCN];

static void cost_report(const char *name, unsigned long t0, unsigned long n)
{
	report_bench(name, rdtime() - t0, n);
}

/* One exit per call, each with every argument at its most expensive. */
static void bench_cost_sbi(unsigned long n)
{
	unsigned long t0, all = -1UL, i;

	t0 = rdtime();
	for (i = 0; i < n; i++)
		SBI_CALL0(SBI_EXT_BASE, SBI_BASE_GET_SPEC_VERSION);
	cost_report("cost_sbi_base", t0, n);

	/* every vCPU of the VM (base -1), the caller included */
	t0 = rdtime();
	for (i = 0; i < n; i++)
		sbi_send_ipi(0, all);
	cost_report("cost_ipi_all", t0, n);
	csr_clear(CSR_SIP, MIP_SSIP);

	/* the whole address space, every vCPU */
	t0 = rdtime();
	for (i = 0; i < n; i++)
		sbi_ecall(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA, 0, all, 0, all, 0, 0);
	cost_report("cost_rfence_all", t0, n);
	t0 = rdtime();
	for (i = 0; i < n; i++)
		sbi_ecall(SBI_EXT_RFENCE, SBI_RFENCE_FENCE_I, 0, all, 0, 0, 0, 0);
	cost_report("cost_fence_i_all", t0, n);

	/* every counter: a configure no counter can take (scans them all),
	 * then start and stop of every firmware counter */
	t0 = rdtime();
	for (i = 0; i < n; i++)
		sbi_ecall(SBI_EXT_PMU, SBI_PMU_COUNTER_CONFIG_MATCHING, 0, 0x7fd, 0,
			  0x10000, 0, 0);
	cost_report("cost_pmu_config_all", t0, n);
	sbi_ecall(SBI_EXT_PMU, SBI_PMU_COUNTER_CONFIG_MATCHING, 3, 0xff,
		  SBI_PMU_CFG_FLAG_SKIP_MATCH, (15UL << 16) | SBI_PMU_FW_IPI_SENT, 0, 0);
	t0 = rdtime();
	for (i = 0; i < n; i++) {
		sbi_ecall(SBI_EXT_PMU, SBI_PMU_COUNTER_START, 3, 1, 0, 0, 0, 0);
		sbi_ecall(SBI_EXT_PMU, SBI_PMU_COUNTER_STOP, 3, 1, 0, 0, 0, 0);
	}
	cost_report("cost_pmu_start_stop", t0, 2 * n);

	/* the most entries, each an event no counter counts (all scanned) */
	for (i = 0; i < COST_EVENTS; i++)
		cost_events[i][0] = 0x10000;	/* a cache event: none */
	t0 = rdtime();
	for (i = 0; i < n / 100 + 1; i++)
		sbi_ecall(SBI_EXT_PMU, SBI_PMU_EVENT_GET_INFO, (unsigned long)cost_events, 0,
			  COST_EVENTS, 0, 0, 0);
	cost_report("cost_pmu_event_info_max", t0, n / 100 + 1);

	/* a DBCN write of more than one call takes: every byte a newline,
	 * each an empty line on the host console */
	for (i = 0; i < COST_DBCN; i++)
		cost_dbcn[i] = '\n';
	t0 = rdtime();
	for (i = 0; i < n / 100 + 1; i++)
		sbi_dbcn_write(COST_DBCN, (unsigned long)cost_dbcn, 0);
	cost_report("cost_dbcn_write_max", t0, n / 100 + 1);
	for (i = 0; i < COST_DBCN; i++)
		cost_dbcn[i] = 'x';
	t0 = rdtime();
	for (i = 0; i < n / 100 + 1; i++)
		sbi_dbcn_write(COST_DBCN, (unsigned long)cost_dbcn, 0);
	cost_report("cost_dbcn_write_text", t0, n / 100 + 1);
}

static volatile unsigned long spinner_up;

static void spinner(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	WRITE_ONCE(spinner_up, 1);
	for (;;)	/* busy on its hart: a fence must wait for its exit */
		cpu_relax();
}

/* A remote fence to a vCPU that runs on another hart: the call returns once
 * that hart has taken the IPI and fenced (hyp/state/vcpu_request.c). */
static void bench_cost_rfence_running(unsigned long n)
{
	unsigned long other = other_hartid(), t0;

	if (other == -1UL || hart_start(other, spinner, 0) ||
	    !wait_for(READ_ONCE(spinner_up), 1000000)) {
		printf("INFO: no second vCPU running\n");
		return;
	}
	t0 = rdtime();
	for (unsigned long i = 0; i < n; i++)
		sbi_ecall(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA, 1UL << other, 0, 0, -1UL, 0, 0);
	cost_report("cost_rfence_running", t0, n);
}

/* Device exits: a UART byte that ends a full line (the host prints it). */
static void bench_cost_mmio(unsigned long n)
{
	volatile uint8_t *thr = (volatile uint8_t *)0x10000000UL;
	unsigned long t0 = rdtime();

	for (unsigned long i = 0; i < n; i++)
		*thr = '\n';
	cost_report("cost_uart_newline", t0, n);
}

/* The first touch of a 2 MiB chunk of guest RAM: zeroed and mapped. */
static void bench_cost_first_touch(void)
{
	unsigned long first = env.ram_base + 32 * 0x200000UL, n = 0, t0;
	unsigned long end = env.ram_base + env.ram_size - 2 * 0x200000UL;

	t0 = rdtime();
	for (unsigned long a = first; a < end && n < 64; a += 0x200000UL, n++)
		(void)*(volatile unsigned long *)a;
	if (n)
		cost_report("cost_first_touch", t0, n);
}

/* cost=1 reboot=1: the time of each boot, then a reboot at once. */
static void bench_reboot(void)
{
	printf("REBOOT %lu boot %u\n", rdtime(), env.boot_count);
	sbi_system_reset(SBI_SRST_TYPE_WARM_REBOOT, SBI_SRST_REASON_NONE);
	report_done();
}

void test_main(unsigned long hartid)
{
	unsigned long n = bootarg_ulong("iters", 20000);
	unsigned long mode_switch = bootarg_ulong("switch", 0);

	(void)hartid;
	if (bootarg_ulong("fwft_ss", 0)) {
		struct sbiret r = SBI_CALL3(SBI_EXT_FWFT, SBI_FWFT_SET, SBI_FWFT_SHADOW_STACK, 1, 0);

		printf("INFO: FWFT SET SHADOW_STACK=1: %ld\n", r.error);
	}
	if (bootarg_ulong("reboot", 0)) {
		printf("BOOT %lu boot %u\n", rdtime(), env.boot_count);
		if (env.boot_count < bootarg_ulong("reboots", 5))
			bench_reboot();
	} else if (bootarg_ulong("cost", 0)) {
		bench_cost_sbi(n);
		bench_cost_mmio(n / 100 + 1);
		bench_cost_first_touch();
		bench_cost_rfence_running(n / 10 + 1);
	} else if (bootarg_ulong("imsic_ipi", 0)) {
		bench_ipi_imsic(n / 100 ? n / 100 : 1);
	} else if (mode_switch) {
		bench_switch(n);
	} else {
		bench_sbi(n);
		bench_mmio(n);
		bench_timer(n / 100 ? n / 100 : 1);
		bench_ipi(n / 100 ? n / 100 : 1);
	}
	report_done();
}
