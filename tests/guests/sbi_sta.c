/* SPDX-License-Identifier: MIT */
/* SBI STA (steal-time accounting): set_shmem's every error, disable,
 * re-enable, the record's content after a set, and what the steal field says
 * while this VM spins and while it sleeps in WFI, on each of two vCPUs.
 *
 * Knobs (bootargs): shared=1: the run puts this VM on one host hart with
 * another busy VM, so spinning vCPUs must see steal grow (at least
 * min_steal_pct, default 25, of the time); without it every vCPU has a hart
 * of its own and steal must stay near zero. spin_ms=N (default 600) how long
 * each steal phase spins.
 *
 * In the shared run (under -icount) the steal field is checked against what
 * the guest sees itself: spinning with interrupts off, a jump in rdtime
 * longer than 1 ms is time this vCPU had no hart, which is what steal counts.
 *
 * Mode-dependent: bare OpenSBI 1.6 has no STA (probe 0, NOT_SUPPORTED), so
 * only that is checked there.
 */
#include <abi/sbi_sta.h>
#include "libguest.h"

#define T "sta"
#define OUTSIDE_RAM	0x40000000UL	/* no RAM and no emulated device */
#define GAP_US		1000
#define PATTERN		0xa5

static struct sbi_sta_record rec[2] __attribute__((aligned(64)));
static struct sbi_sta_record spare __attribute__((aligned(64)));

static bool shared;
static unsigned long spin_ms, min_pct;

/* the secondary vCPU's results (it reports, the primary checks) */
static unsigned long sec_ready, sec_go, sec_done;
static long sec_set_err;
static unsigned long sec_steal_us, sec_gap_us, sec_elapsed_us, sec_seq;

static struct sbiret sta_set(unsigned long lo, unsigned long hi, unsigned long flags)
{
	return SBI_CALL3(SBI_EXT_STA, SBI_STA_STEAL_TIME_SET_SHMEM, lo, hi, flags);
}

/* The steal field under the sequence protocol; *@seq gets the (even) sequence. */
static uint64_t read_steal(volatile struct sbi_sta_record *r, uint32_t *seq)
{
	uint32_t s1, s2;
	uint64_t steal;
	unsigned int tries = 0;

	do {
		s1 = r->sequence;
		__asm__ volatile("fence r, r" ::: "memory");
		steal = r->steal;
		__asm__ volatile("fence r, r" ::: "memory");
		s2 = r->sequence;
	} while (((s1 & 1) || s1 != s2) && ++tries < 100000);
	*seq = s2;
	return steal;
}

static bool all_bytes(const void *p, unsigned char b, unsigned long n)
{
	const unsigned char *c = p;

	for (unsigned long i = 0; i < n; i++)
		if (c[i] != b)
			return false;
	return true;
}

static void err(const char *what, struct sbiret r, long want)
{
	char buf[96];

	check_eq(T, what, r.error, want);
	snprintf(buf, sizeof(buf), "%s: value is 0", what);
	check_eq(T, buf, r.value, 0);
}

static void test_errors(void)
{
	unsigned long ok = (unsigned long)&spare;
	unsigned long ram_end = env.ram_base + env.ram_size;

	check_eq(T, "unknown STA function 1", SBI_CALL0(SBI_EXT_STA, 1).error,
		 SBI_ERR_NOT_SUPPORTED);
	memset(&spare, PATTERN, sizeof(spare));
	err("flags 1", sta_set(ok, 0, 1), SBI_ERR_INVALID_PARAM);
	/* flags is an unsigned long, not a uint32: its upper bits count */
	err("flags 1 << 32", sta_set(ok, 0, 1UL << 32), SBI_ERR_INVALID_PARAM);
	err("flags 1 with the disable pair", sta_set(-1UL, -1UL, 1), SBI_ERR_INVALID_PARAM);
	err("lo 8 bytes past a 64-byte boundary", sta_set(ok + 8, 0, 0), SBI_ERR_INVALID_PARAM);
	err("lo 32 bytes past a 64-byte boundary", sta_set(ok + 32, 0, 0), SBI_ERR_INVALID_PARAM);
	err("lo all-ones, hi 0 (not the disable pair: misaligned)", sta_set(-1UL, 0, 0),
	    SBI_ERR_INVALID_PARAM);
	err("misaligned outside RAM: alignment is checked first",
	    sta_set(OUTSIDE_RAM + 8, 0, 0), SBI_ERR_INVALID_PARAM);
	err("straddling the end of RAM (misaligned)", sta_set(ram_end - 32, 0, 0),
	    SBI_ERR_INVALID_PARAM);
	err("outside RAM", sta_set(OUTSIDE_RAM, 0, 0), SBI_ERR_INVALID_ADDRESS);
	err("the first 64 bytes after RAM", sta_set(ram_end, 0, 0), SBI_ERR_INVALID_ADDRESS);
	err("the 64 bytes below RAM", sta_set(env.ram_base - 64, 0, 0),
	    SBI_ERR_INVALID_ADDRESS);
	err("lo -64 (would wrap)", sta_set(-64UL, 0, 0), SBI_ERR_INVALID_ADDRESS);
	err("hi 1", sta_set(ok, 1, 0), SBI_ERR_INVALID_ADDRESS);
	err("hi all-ones, lo aligned (not the disable pair)", sta_set(ok, -1UL, 0),
	    SBI_ERR_INVALID_ADDRESS);
	check_eq(T, "failed calls left the memory alone", all_bytes(&spare, PATTERN, sizeof(spare)),
		 1);
}

/* The last 64 bytes of RAM are a valid record (they hold the end of our DT
 * area: saved and put back). */
static void test_last_record_in_ram(void)
{
	unsigned long last = env.ram_base + env.ram_size - 64;
	unsigned char save[64];

	memcpy(save, (void *)last, sizeof(save));
	err("the last 64 bytes of RAM", sta_set(last, 0, 0), SBI_SUCCESS);
	check_eq(T, "the last 64 bytes of RAM were zeroed", all_bytes((void *)last, 0, 64), 1);
	err("disable after the RAM-end record", sta_set(-1UL, -1UL, 0), SBI_SUCCESS);
	memcpy((void *)last, save, sizeof(save));
}

static void check_fresh(const char *how, volatile struct sbi_sta_record *r)
{
	char what[96];
	uint32_t seq;

	snprintf(what, sizeof(what), "%s: the whole record is zeroed", how);
	check_eq(T, what, all_bytes((const void *)r, 0, sizeof(*r)), 1);
	snprintf(what, sizeof(what), "%s: steal reads 0", how);
	check_eq(T, what, read_steal(r, &seq), 0);
	snprintf(what, sizeof(what), "%s: sequence is even", how);
	check_eq(T, what, seq & 1, 0);
}

static void test_set_disable_reenable(void)
{
	volatile struct sbi_sta_record *r = &rec[0];

	memset(&rec[0], PATTERN, sizeof(rec[0]));
	err("set_shmem", sta_set((unsigned long)&rec[0], 0, 0), SBI_SUCCESS);
	check_fresh("after set", r);
	err("set_shmem again (same record)", sta_set((unsigned long)&rec[0], 0, 0), SBI_SUCCESS);
	err("disable (lo and hi all-ones)", sta_set(-1UL, -1UL, 0), SBI_SUCCESS);
	err("disable while disabled", sta_set(-1UL, -1UL, 0), SBI_SUCCESS);
	memset(&rec[0], PATTERN, sizeof(rec[0]));
	err("re-enable", sta_set((unsigned long)&rec[0], 0, 0), SBI_SUCCESS);
	check_fresh("after re-enable", r);
}

/* Spin with interrupts off for @ms; returns the time in rdtime jumps longer
 * than GAP_US (time without a hart) and the elapsed time, both in us. */
static void spin(unsigned long ms, unsigned long *gap_us, unsigned long *elapsed_us)
{
	unsigned long gap = us_to_ticks(GAP_US), start, end, last, now, gaps = 0;
	unsigned long sie = csr_read(sie);

	csr_clear(sstatus, SR_SIE);
	csr_write(sie, 0);
	start = rdtime();
	end = start + us_to_ticks(ms * 1000);
	for (last = start; (now = rdtime()) < end; last = now)
		if (now - last > gap)
			gaps += now - last;
	csr_write(sie, sie);
	*gap_us = ticks_to_us(gaps);
	*elapsed_us = ticks_to_us(now - start);
}

/* One steal phase on this vCPU: spin, and what steal did meanwhile. */
static unsigned long steal_phase(volatile struct sbi_sta_record *r, unsigned long *gap_us,
				 unsigned long *elapsed_us, uint32_t *seq)
{
	uint64_t before = read_steal(r, seq), after;

	spin(spin_ms, gap_us, elapsed_us);
	after = read_steal(r, seq);
	return after >= before ? (unsigned long)((after - before) / 1000) : -1UL;
}

static void check_steal(const char *who, unsigned long steal_us, unsigned long gap_us,
			unsigned long elapsed_us, uint32_t seq)
{
	char what[112];
	unsigned long slack = elapsed_us / 10 + 2000;	/* 10% + 2 ms */

	report_info(T, "%s: spun %lu us, steal grew %lu us, rdtime gaps %lu us", who,
		    elapsed_us, steal_us, gap_us);
	snprintf(what, sizeof(what), "%s: steal never goes back", who);
	check_ne(T, what, steal_us, -1L);
	snprintf(what, sizeof(what), "%s: sequence even after the phase", who);
	check_eq(T, what, seq & 1, 0);
	snprintf(what, sizeof(what), "%s: steal at most the elapsed time (us)", who);
	check_le(T, what, steal_us, elapsed_us + 2000);
	if (shared) {
		snprintf(what, sizeof(what), "%s: sharing a hart, steal grew by >= %lu%% (us)",
			 who, min_pct);
		check_ge(T, what, steal_us, elapsed_us * min_pct / 100);
	} else {
		snprintf(what, sizeof(what), "%s: a hart of its own, steal stays near 0 (us)", who);
		check_le(T, what, steal_us, elapsed_us / 100 + 1000);
	}
	if (!shared)
		return;
	/* the two views of the same lost time agree (shared runs use -icount:
	 * without it a busy host machine makes rdtime jump too, which no
	 * hypervisor sees) */
	snprintf(what, sizeof(what), "%s: steal at least the rdtime gaps - 10%% (us)", who);
	check_ge(T, what, steal_us + slack, gap_us);
	snprintf(what, sizeof(what), "%s: steal at most the rdtime gaps + 10%% (us)", who);
	check_le(T, what, steal_us, gap_us + slack);
}

static void secondary(unsigned long hartid, unsigned long opaque)
{
	uint32_t seq;

	(void)hartid;
	(void)opaque;
	sec_set_err = sta_set((unsigned long)&rec[1], 0, 0).error;
	WRITE_ONCE(sec_ready, 1);
	while (!READ_ONCE(sec_go))
		cpu_relax();
	sec_steal_us = steal_phase(&rec[1], &sec_gap_us, &sec_elapsed_us, &seq);
	sec_seq = seq;
	sta_set(-1UL, -1UL, 0);
	WRITE_ONCE(sec_done, 1);
	sbi_hart_stop();
	for (;;)
		wfi();
}

static void test_steal_spinning(void)
{
	unsigned long target = other_hartid(), gap_us, elapsed_us, steal_us;
	uint32_t seq;
	bool two = false;

	if (target == -1UL) {
		report_skip(T, "second vCPU: needs 2 harts");
	} else if (check_eq(T, "start the second vCPU", hart_start(target, secondary, 0),
			    SBI_SUCCESS)) {
		two = check_eq(T, "second vCPU: runs", wait_for(READ_ONCE(sec_ready), 2000000), 1) &&
		      check_eq(T, "second vCPU: set_shmem of its own record", sec_set_err,
			       SBI_SUCCESS);
	}
	WRITE_ONCE(sec_go, 1);
	steal_us = steal_phase(&rec[0], &gap_us, &elapsed_us, &seq);
	check_steal("vcpu 0", steal_us, gap_us, elapsed_us, seq);
	check_eq(T, "vcpu 0: preempted is 0 while it runs", rec[0].preempted, 0);
	if (!two)
		return;
	if (check_eq(T, "second vCPU: finished", wait_for(READ_ONCE(sec_done), 10000000), 1))
		check_steal("vcpu 1", sec_steal_us, sec_gap_us, sec_elapsed_us, sec_seq);
}

/* Sleeping in WFI is idle, not steal, even while the other VM has the hart. */
static void test_wfi_is_not_steal(void)
{
	unsigned long sleep_us = 300000, until;
	uint64_t before, after;
	uint32_t seq;

	before = read_steal(&rec[0], &seq);
	csr_clear(sstatus, SR_SIE);
	csr_set(sie, MIP_STIP);
	until = rdtime() + us_to_ticks(sleep_us);
	sbi_set_timer(until);
	while (rdtime() < until)
		wfi();
	sbi_set_timer(-1UL);
	csr_clear(sie, MIP_STIP);
	after = read_steal(&rec[0], &seq);
	report_info(T, "WFI for %lu us: steal grew %lu us", sleep_us,
		    (unsigned long)((after - before) / 1000));
	/* at most the wake-up's wait for the hart: a slice or two */
	check_le(T, "WFI: steal grew by at most 10% of the sleep (us)",
		 (unsigned long)((after - before) / 1000), sleep_us / 10);
	check_eq(T, "WFI: sequence even", seq & 1, 0);
}

/* After a disable the record is never written again, even when time is stolen. */
static void test_disabled_record_untouched(void)
{
	unsigned long gap_us, elapsed_us;

	err("disable before the untouched check", sta_set(-1UL, -1UL, 0), SBI_SUCCESS);
	memset(&rec[0], PATTERN, sizeof(rec[0]));
	spin(spin_ms / 2, &gap_us, &elapsed_us);
	report_info(T, "disabled: spun %lu us, rdtime gaps %lu us", elapsed_us, gap_us);
	check_eq(T, "disabled: the record was not written",
		 all_bytes(&rec[0], PATTERN, sizeof(rec[0])), 1);
}

void test_main(unsigned long hartid)
{
	long probe = sbi_probe(SBI_EXT_STA).value;

	(void)hartid;
	shared = bootarg_ulong("shared", 0);
	spin_ms = bootarg_ulong("spin_ms", 600);
	min_pct = bootarg_ulong("min_steal_pct", 25);
	if (!env.carapace) {
		check_eq(T, "bare OpenSBI 1.6: probe STA is 0", probe, 0);
		check_eq(T, "bare OpenSBI 1.6: set_shmem is NOT_SUPPORTED",
			 sta_set((unsigned long)&rec[0], 0, 0).error, SBI_ERR_NOT_SUPPORTED);
		return;
	}
	if (!check_eq(T, "probe STA is 1", probe, 1))
		return;
	report_info(T, "%s", shared ? "sharing one host hart with a busy VM" :
		    "every vCPU has a host hart of its own");
	test_errors();
	test_last_record_in_ram();
	test_set_disable_reenable();
	test_steal_spinning();
	test_wfi_is_not_steal();
	test_disabled_record_untouched();
}
