/* SPDX-License-Identifier: MIT */
/* Snapshot marker guest (the kvm-unit-tests migration protocol): it sets up
 * CFI and other guest state, prints "SNAPSHOT-READY", and waits wait_ms of
 * guest time with interrupts off. The harness snapshots it then, destroys
 * it, and restores the snapshot as a new VM, which goes on from the wait and
 * checks that everything survived:
 *  - ssp and the contents of its shadow stack (sspopchk of each value);
 *  - FWFT SHADOW_STACK on and locked, LANDING_PAD locked off: both refuse a
 *    change; senvcfg LPE and SSE (VU's CFI) still set;
 *  - FWFT MISALIGNED_EXC_DELEG locked at 0 (snapshot format 8): reads 0,
 *    refuses a change (misaligned=0 leaves it alone: a stream of a format
 *    before 8 cannot carry it);
 *  - a timer deadline that passed during the wait is pending and fires as
 *    soon as interrupts are on;
 *  - vCPU 1, asleep in WFI at the snapshot, wakes on an IPI;
 *  - guest time went on (it never goes back).
 * On bare QEMU (no snapshot) the same checks pass: the guest cannot tell.
 * Bootargs: wait_ms=N (default 3000), misaligned=0|1 (default 1).
 */
#include "libguest.h"
#include "cfi.h"
#include "mmu.h"

#define T "snap"
#define VAL(i)	(0x5a5a000000000000UL | ((unsigned long)(i) << 8) | 0xc3)
#define DEPTH	5

static char sspage[PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));
static volatile unsigned long timer_fired, ipi_seen, other_ready;

static void ss_push(unsigned long v)
{
	asm volatile("mv t0, %0\n\t" SSPUSH_T0 :: "r"(v) : "t0", "memory");
}

static void ss_popchk(unsigned long v)
{
	/* a mismatch is a software-check exception: an unexpected trap, a FAIL */
	asm volatile("mv t0, %0\n\t" SSPOPCHK_T0 :: "r"(v) : "t0", "memory");
}

static void on_timer(unsigned long irq)
{
	(void)irq;
	sbi_set_timer(-1UL);
	WRITE_ONCE(timer_fired, timer_fired + 1);
}

static void on_ipi(unsigned long irq)
{
	(void)irq;
	csr_clear(sip, MIP_SSIP);
	WRITE_ONCE(ipi_seen, 1);
}

static void other_main(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	csr_set(sie, MIP_SSIP);
	csr_set(sstatus, SR_SIE);
	WRITE_ONCE(other_ready, 1);
	while (!READ_ONCE(ipi_seen))
		wfi();		/* asleep here when the snapshot is taken */
	csr_clear(sstatus, SR_SIE);
}

void test_main(unsigned long self)
{
	unsigned long wait = us_to_ticks(bootarg_ulong("wait_ms", 3000) * 1000);
	unsigned long other = other_hartid(), ssp, t_ready, t_after;
	bool misaligned = bootarg_ulong("misaligned", 1), ss_on;

	(void)self;
	trap_set_irq(IRQ_S_TIMER, on_timer);
	trap_set_irq(IRQ_S_SOFT, on_ipi);
	mmu_init();
	if (mmu_map((unsigned long)sspage, PAGE_SIZE, MMU_SS)) {
		report_fail(T, "page tables (got no room, want mapped)");
		return;
	}
	mmu_enable();
	/* not the reset value (1 under Carapace), so that a restore that lost it shows */
	if (misaligned)
		check_eq(T, "lock misaligned_exc_deleg at 0",
			 fwft_set(SBI_FWFT_MISALIGNED_EXC_DELEG, 0, SBI_FWFT_SET_FLAG_LOCK).error,
			 SBI_SUCCESS);
	ss_on = fwft_set(SBI_FWFT_SHADOW_STACK, 1, SBI_FWFT_SET_FLAG_LOCK).error == SBI_SUCCESS;
	if (!ss_on) {
		report_skip(T, "no shadow stacks on this platform");
		mmu_disable();
		return;
	}
	check_eq(T, "lock landing pads off", fwft_set(SBI_FWFT_LANDING_PAD, 0,
		 SBI_FWFT_SET_FLAG_LOCK).error, SBI_SUCCESS);
	csr_set(CSR_SENVCFG, ENVCFG_LPE | ENVCFG_SSE);
	csr_write(CSR_SSP, (unsigned long)sspage + PAGE_SIZE);
	for (unsigned int i = 0; i < DEPTH; i++)
		ss_push(VAL(i));
	ssp = csr_read(CSR_SSP);
	if (other != -1UL) {
		check_eq(T, "start vCPU 1", hart_start(other, other_main, 0), SBI_SUCCESS);
		wait_for(READ_ONCE(other_ready), 1000000);
	}

	/* a deadline inside the wait, with interrupts off: pending at the end */
	csr_set(sie, MIP_STIP | MIP_SSIP);
	t_ready = rdtime();
	sbi_set_timer(t_ready + wait / 3);
	printf("SNAPSHOT-READY ssp=0x%lx\n", ssp);
	while (rdtime() - t_ready < wait)
		cpu_relax();
	t_after = rdtime();

	check_ge(T, "guest time went on through the wait", t_after - t_ready, wait);
	check_eqx(T, "ssp as before the snapshot", csr_read(CSR_SSP), ssp);
	for (unsigned int i = DEPTH; i-- > 0;)
		ss_popchk(VAL(i));
	report_pass(T, "shadow stack contents: every sspopchk matched");
	check_eqx(T, "ssp back at the top", csr_read(CSR_SSP), (unsigned long)sspage + PAGE_SIZE);
	check_eq(T, "FWFT shadow_stack still 1", fwft_get(SBI_FWFT_SHADOW_STACK).value, 1);
	/* SBI 3.0 says DENIED_LOCKED; OpenSBI 1.6 (bare) still says DENIED */
	check_eq(T, "FWFT shadow_stack still locked", fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0).error,
		 env.carapace ? SBI_ERR_DENIED_LOCKED : SBI_ERR_DENIED);
	check_eq(T, "FWFT landing_pad still locked off", fwft_set(SBI_FWFT_LANDING_PAD, 1, 0).error,
		 env.carapace ? SBI_ERR_DENIED_LOCKED : SBI_ERR_DENIED);
	if (misaligned) {
		check_eq(T, "FWFT misaligned_exc_deleg still 0",
			 fwft_get(SBI_FWFT_MISALIGNED_EXC_DELEG).value, 0);
		check_eq(T, "FWFT misaligned_exc_deleg still locked",
			 fwft_set(SBI_FWFT_MISALIGNED_EXC_DELEG, 1, 0).error,
			 env.carapace ? SBI_ERR_DENIED_LOCKED : SBI_ERR_DENIED);
	}
	check_eq(T, "senvcfg LPE and SSE still set",
		 csr_read(CSR_SENVCFG) & (ENVCFG_LPE | ENVCFG_SSE), ENVCFG_LPE | ENVCFG_SSE);
	check_eq(T, "timer not taken while interrupts were off", READ_ONCE(timer_fired), 0);
	csr_set(sstatus, SR_SIE);
	wait_for(READ_ONCE(timer_fired), 100000);
	check_eq(T, "the deadline that passed fires at once", READ_ONCE(timer_fired), 1);
	if (other != -1UL) {
		sbi_send_ipi(1, other);
		check_eq(T, "vCPU 1 asleep in WFI wakes on an IPI",
			 wait_for(READ_ONCE(ipi_seen), 1000000), 1);
		hart_wait_state(other, SBI_HSM_STATE_STARTED, 1000);
	}
	csr_clear(sstatus, SR_SIE);
	csr_clear(sie, MIP_STIP | MIP_SSIP);
	mmu_disable();
}
