/* SPDX-License-Identifier: MIT */
/*
 * Fairness under abuse (scripts/bench.py step `fairness`): one payload, two
 * roles, run as two VMs on the same host harts.
 *
 * role=victim (1 vCPU): always busy. It arms its own timer (Sstc stimecmp)
 * for a deadline 0.5-1.5 periods ahead (a fixed pseudo-random sequence, so
 * deadlines do not lock onto the host's time slice), and until the interrupt
 * comes it runs a fixed loop, counting iterations. Per sample it records the
 * latency from the deadline to its handler's rdtime, in timebase ticks (under
 * -icount shift=0 one tick is 100 instructions of any privilege level).
 * After settle_ms (the other VM gets going) it takes samples=N samples and
 * prints
 *   FAIR lat_median_ticks / lat_p99_ticks / lat_max_ticks / lat_mean_x100
 *   FAIR iters_per_s   (loop iterations per second of guest time)
 *   FAIR end
 * and shuts its VM down.
 *
 * role=abuser (every vCPU of its VM, started by the boot vCPU) does one of,
 * forever, as fast as it can:
 *   abuse=console  UART THR writes (a 64-byte line, byte by byte, no LSR
 *                  check) and DBCN writes (a 200-byte line), alternately
 *   abuse=ipi      SBI IPI to every vCPU of its VM (itself included)
 *   abuse=spin     sstatus.SIE=0, sie=0, no WFI: a plain loop
 *   abuse=rfence   SBI RFENCE remote sfence.vma (whole space) to every vCPU
 *   abuse=busy     no abuse, the reference: a plain loop with interrupts on
 *                  and a 1 ms timer tick, as a busy kernel would run
 * bootargs: role=, abuse=, samples= (500), period_us= (1000), settle_ms= (30).
 */
#include "libguest.h"

#define UART_THR	0x10000000UL
#define MAX_SAMPLES	2000

enum abuse { ABUSE_CONSOLE, ABUSE_IPI, ABUSE_SPIN, ABUSE_RFENCE, ABUSE_BUSY };

static volatile unsigned long irq_at, irq_seen;
static unsigned long lat[MAX_SAMPLES];

static void on_timer(unsigned long irq)
{
	(void)irq;
	irq_at = rdtime();
	csr_write(CSR_STIMECMP, -1UL);
	irq_seen = 1;
}

/* The value of bootargs word "@key..." (e.g. "abuse="), or NULL. */
static const char *strstr_bootarg(const char *key)
{
	size_t klen = strlen(key);
	const char *p = env.bootargs;

	while (*p) {
		while (*p == ' ')
			p++;
		if (!strncmp(p, key, klen))
			return p + klen;
		while (*p && *p != ' ')
			p++;
	}
	return NULL;
}

static void sort(unsigned long *a, unsigned long n)
{
	for (unsigned long i = 1; i < n; i++) {
		unsigned long x = a[i], j = i;

		for (; j && a[j - 1] > x; j--)
			a[j] = a[j - 1];
		a[j] = x;
	}
}

static void victim(void)
{
	unsigned long n = bootarg_ulong("samples", 500);
	unsigned long period = us_to_ticks(bootarg_ulong("period_us", 1000));
	unsigned long settle = us_to_ticks(bootarg_ulong("settle_ms", 30) * 1000);
	unsigned long seed = 12345, iters = 0, sum = 0, t0, t1;
	volatile unsigned long work = 1;

	if (n > MAX_SAMPLES)
		n = MAX_SAMPLES;
	trap_set_irq(IRQ_S_TIMER, on_timer);
	csr_write(CSR_STIMECMP, -1UL);
	csr_set(CSR_SIE, MIP_STIP);
	csr_set(CSR_SSTATUS, SR_SIE);
	t0 = rdtime();
	while (rdtime() - t0 < settle)
		cpu_relax();
	t0 = rdtime();
	for (unsigned long i = 0; i < n; i++) {
		unsigned long deadline;

		seed = seed * 6364136223846793005UL + 1442695040888963407UL;
		deadline = rdtime() + period / 2 + (seed >> 33) % period;
		WRITE_ONCE(irq_seen, 0);
		csr_write(CSR_STIMECMP, deadline);
		while (!READ_ONCE(irq_seen)) {
			work = work * 3 + 1;	/* the fixed loop whose rate is measured */
			iters++;
		}
		lat[i] = irq_at - deadline;
		sum += lat[i];
	}
	t1 = rdtime();
	csr_clear(CSR_SSTATUS, SR_SIE);
	sort(lat, n);
	printf("FAIR samples %lu\n", n);
	printf("FAIR lat_median_ticks %lu\n", lat[n / 2]);
	printf("FAIR lat_p99_ticks %lu\n", lat[(n * 99) / 100]);
	printf("FAIR lat_max_ticks %lu\n", lat[n - 1]);
	printf("FAIR lat_mean_x100 %lu\n", sum * 100 / n);
	printf("FAIR iters_per_s %lu\n", iters * timebase_hz() / (t1 - t0));
	printf("FAIR elapsed_ticks %lu\n", t1 - t0);
	printf("FAIR end\n");
	report_done();
}

static const char line64[] =
	"fairness console flood: UART THR 0123456789abcdefghijklmnopqrs\n";
static char line200[201];

static void on_tick(unsigned long irq)
{
	(void)irq;
	csr_write(CSR_STIMECMP, rdtime() + us_to_ticks(1000));
}

static void abuse_loop(unsigned long hartid, unsigned long kind)
{
	unsigned long all = (1UL << env.nr_harts) - 1;

	(void)hartid;
	csr_clear(sstatus, SR_SIE);
	csr_write(sie, 0);
	if (kind == ABUSE_BUSY) {
		trap_set_irq(IRQ_S_TIMER, on_tick);
		csr_write(CSR_STIMECMP, rdtime() + us_to_ticks(1000));
		csr_set(CSR_SIE, MIP_STIP);
		csr_set(CSR_SSTATUS, SR_SIE);
	}
	for (;;) {
		switch (kind) {
		case ABUSE_CONSOLE:
			for (unsigned long i = 0; i < sizeof(line64) - 1; i++)
				*(volatile uint8_t *)UART_THR = (uint8_t)line64[i];
			sbi_dbcn_write(sizeof(line200) - 1, (unsigned long)line200, 0);
			break;
		case ABUSE_IPI:
			sbi_send_ipi(all, 0);
			break;
		case ABUSE_RFENCE:
			SBI_CALL3(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA, all, 0, 0);
			break;
		default:
			break;	/* spin: nothing but the loop */
		}
	}
}

static void abuser(void)
{
	static const char *const names[] = { "console", "ipi", "spin", "rfence", "busy" };
	unsigned long kind = ABUSE_SPIN, self = current_hartid();
	const char *arg = strstr_bootarg("abuse=");

	for (unsigned long k = 0; k < ARRAY_SIZE(names); k++)
		if (arg && !strncmp(arg, names[k], strlen(names[k])))
			kind = k;
	for (unsigned long i = 0; i < sizeof(line200) - 2; i++)
		line200[i] = (char)('a' + i % 26);
	line200[sizeof(line200) - 2] = '\n';
	printf("INFO: abuser: %s on %lu vCPUs\n", names[kind], env.nr_harts);
	for (unsigned long i = 0; i < env.nr_harts; i++)
		if (env.hartids[i] != self)
			hart_start(env.hartids[i], abuse_loop, kind);
	abuse_loop(self, kind);
}

void test_main(unsigned long hartid)
{
	const char *role = strstr_bootarg("role=");

	(void)hartid;
	if (role && !strncmp(role, "abuser", 6))
		abuser();
	victim();
}
