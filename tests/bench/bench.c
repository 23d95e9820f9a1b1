/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmarks run as a guest (under Carapace) and as an S-mode kernel on
 * bare QEMU + OpenSBI (the baseline). Under `-icount shift=0` one timebase
 * tick (10 MHz) is 100 instructions, so rdtime deltas count instructions of
 * every privilege level. Prints `BENCH <name> <instructions x10>` lines.
 *
 * bootargs: mode=micro (default) or mode=switch (vCPU switch ping-pong with
 * another VM on the same hart), iters=N, fwft_ss=1 (turn the shadow stack on
 * first, to measure the CFI state switch).
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

/* Ping-pong with another VM on the same hart: a retentive suspend with a timer
 * already pending (STIE set, SIE clear) gives the hart away and comes back at
 * once, so every call is one SBI exit plus one switch to the other vCPU. */
static void bench_switch(unsigned long n)
{
	unsigned long t0;

	csr_write(CSR_STIMECMP, 0);
	csr_set(CSR_SIE, MIP_STIP);
	t0 = rdtime();
	for (unsigned long i = 0; i < n; i++)
		sbi_hart_suspend(SBI_HSM_SUSPEND_RET_DEFAULT, 0, 0);
	report_bench("suspend_switch_pair", rdtime() - t0, n);
	csr_clear(CSR_SIE, MIP_STIP);
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
	if (mode_switch) {
		bench_switch(n);
	} else {
		bench_sbi(n);
		bench_mmio(n);
		bench_timer(n / 100 ? n / 100 : 1);
		bench_ipi(n / 100 ? n / 100 : 1);
	}
	report_done();
}
