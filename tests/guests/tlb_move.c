/* SPDX-License-Identifier: MIT */
/* Translation caches as a guest sees them while its vCPUs move between harts.
 *
 * Every round, the boot vCPU makes a shared page read-only (local sfence.vma,
 * then SBI RFENCE to the others, as Linux does), and every other vCPU must
 * take a store page fault on it, whichever hart it runs on by then. Between
 * rounds all vCPUs sleep on their timers, so the scheduler places them anew
 * (run with more vCPUs than host harts, and another VM beside it). Then the
 * page is made writable again and every vCPU must be able to store to it.
 *
 * With the debug extension (debug=1) it also checks dirty tracking from a
 * hart that ran the VM earlier: after a write-protect, a store by each vCPU
 * is counted dirty.
 *
 * QEMU flushes a hart's whole TLB on every change of virtualization mode, so
 * on QEMU these checks pass even without the hypervisor's flushes; they pin
 * the behaviour (the decision logic is unit-tested in tests/unit/test_tlb.c).
 * Bootargs: rounds=N (default 12).
 */
#include "libguest.h"
#include "mmu.h"

#define T "tlb_move"

static uint64_t page[512] __attribute__((aligned(4096)));
/* What the others do next: 0 wait, 1 quit; from 10 on, a new phase each time,
 * even numbers expect the store to fault, odd ones expect it to work. */
static volatile unsigned long phase;
static volatile unsigned long done_count;	/* others that finished the phase */
static volatile unsigned long faults, stores_ok;

#define PH_WAIT		0
#define PH_QUIT		1
#define PH_DIRTY	1001

static void nap(unsigned long us)
{
	sbi_set_timer(csr_read(time) + us_to_ticks(us));
	csr_set(sie, MIP_STIP);
	wfi();
	csr_clear(sie, MIP_STIP);
	sbi_set_timer(-1UL);
}

static void store_once(unsigned long want_fault)
{
	struct trap_record r;

	trap_arm();
	WRITE_ONCE(page[8 + current_hartid()], 0x5a5a0000UL | current_hartid());
	trap_disarm(&r);
	if (want_fault) {
		if (r.count == 1 && (r.scause == EXC_STORE_PAGE_FAULT))
			__atomic_fetch_add(&faults, 1, __ATOMIC_SEQ_CST);
	} else if (!r.count) {
		__atomic_fetch_add(&stores_ok, 1, __ATOMIC_SEQ_CST);
	}
}

static void other_main(unsigned long hartid, unsigned long opaque)
{
	unsigned long seen = 0;

	(void)hartid;
	(void)opaque;
	mmu_enable();
	for (;;) {
		unsigned long p = READ_ONCE(phase);

		if (p == PH_QUIT)
			break;
		if (p == seen || p == PH_WAIT) {
			nap(300);	/* leave the hart: the next phase may find us elsewhere */
			continue;
		}
		seen = p;
		store_once(!(p & 1));
		__atomic_fetch_add(&done_count, 1, __ATOMIC_SEQ_CST);
	}
	mmu_disable();
}

/* Run one phase on every other vCPU and wait for all of them. */
static void run_phase(unsigned long p, unsigned long others)
{
	WRITE_ONCE(done_count, 0);
	WRITE_ONCE(phase, p);
	wait_for(READ_ONCE(done_count) == others, 5000000);
	WRITE_ONCE(phase, PH_WAIT);
}

static void dirty_from_every_vcpu(unsigned long others)
{
	struct sbiret wp, d;

	if (!sbi_probe(SBI_EXT_CARAPACE_DEBUG).value) {
		report_skip(T, "dirty tracking checks need the debug extension (debug=1)");
		return;
	}
	/* the page is in one 2 MiB chunk; only the others write after this */
	wp = SBI_CALL0(SBI_EXT_CARAPACE_DEBUG, SBI_CARAPACE_WRITE_PROTECT);
	check_eq(T, "write-protect", wp.error, SBI_SUCCESS);
	run_phase(PH_DIRTY, others);
	d = SBI_CALL0(SBI_EXT_CARAPACE_DEBUG, SBI_CARAPACE_DIRTY_CHUNKS);
	check_ge(T, "stores by vCPUs that ran on other harts are counted dirty", d.value, 1);
}

void test_main(unsigned long self)
{
	unsigned long rounds = bootarg_ulong("rounds", 12), others = 0;
	unsigned long va = (unsigned long)page;

	mmu_init();
	mmu_map(va, sizeof(page), MMU_RW);
	mmu_enable();
	for (unsigned long i = 0; i < env.nr_harts; i++) {
		if (env.hartids[i] == self)
			continue;
		if (check_eq(T, "start a vCPU", hart_start(env.hartids[i], other_main, 0),
			     SBI_SUCCESS))
			others++;
	}
	if (!others) {
		report_skip(T, "needs 2 or more vCPUs");
		return;
	}
	for (unsigned long r = 0; r < rounds; r++) {
		WRITE_ONCE(faults, 0);
		WRITE_ONCE(stores_ok, 0);
		/* read-only: local fence (mmu_map), then the others' TLBs */
		mmu_map(va, sizeof(page), MMU_RO);
		check_eq(T, "rfence sfence.vma to all", sbi_ecall(SBI_EXT_RFENCE,
			 SBI_RFENCE_SFENCE_VMA, 0, -1UL, 0, -1UL, 0, 0).error, SBI_SUCCESS);
		run_phase(2 * r + 10, others);	/* even: expect a fault */
		if (!check_eq(T, "every other vCPU faulted on the read-only page",
			      READ_ONCE(faults), others))
			break;
		mmu_map(va, sizeof(page), MMU_RW);
		check_eq(T, "rfence sfence.vma to all", sbi_ecall(SBI_EXT_RFENCE,
			 SBI_RFENCE_SFENCE_VMA, 0, -1UL, 0, -1UL, 0, 0).error, SBI_SUCCESS);
		WRITE_ONCE(phase, PH_WAIT);
		nap(200);
		run_phase(2 * r + 11, others);	/* odd: expect the store to work */
		if (!check_eq(T, "every other vCPU stored to the writable page",
			      READ_ONCE(stores_ok), others))
			break;
		nap(500);	/* everybody sleeps: the next round starts placed anew */
	}
	report_info(T, "%lu rounds with %lu other vCPUs", rounds, others);
	dirty_from_every_vcpu(others);
	WRITE_ONCE(phase, PH_QUIT);
	for (unsigned long i = 0; i < env.nr_harts; i++)
		if (env.hartids[i] != self)
			hart_wait_state(env.hartids[i], SBI_HSM_STATE_STOPPED, 2000000);
	mmu_disable();
}
