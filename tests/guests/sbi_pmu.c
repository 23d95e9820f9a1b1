/* SPDX-License-Identifier: MIT */
/* SBI PMU: every function and the spec's error codes.
 *
 * Both modes (bare QEMU + OpenSBI has a PMU too, with other counters): the
 * checks the spec fixes, on counters found through get_info and
 * config_matching: invalid indexes and reserved start/stop flag bits,
 * ALREADY_STARTED / ALREADY_STOPPED, the snapshot flags without shared memory
 * (NO_SHMEM), cycle and instret frozen while stopped and counting from their
 * initial value, fw_read on a hardware counter.
 * Under Carapace only: its counter layout (docs/sbi.md), reserved
 * config_matching flags (OpenSBI 1.6 ignores them), the events it refuses,
 * filter flags, SKIP_MATCH/CLEAR_VALUE/AUTO_START, mask 0, a start of an
 * unconfigured counter, snapshot_set_shmem NOT_SUPPORTED, the firmware
 * events (OpenSBI 1.6 faults in M-mode when one is started on QEMU virt),
 * event_get_info's answers and shared-memory checks.
 */
#include "libguest.h"

#define T "pmu"
#define EV_CYCLES	SBI_PMU_HW_CPU_CYCLES		/* type 0 */
#define EV_INSNS	SBI_PMU_HW_INSTRUCTIONS
#define EV_CACHE_REF	3				/* type 0, not offered by Carapace */
#define EV_FW(code)	((15UL << 16) | (code))
#define CFG_RESERVED	(1UL << 8)
#define ALL		(~0UL)
#define CARAPACE_COUNTERS	11
#define CARAPACE_FW_FIRST	3

static struct sbiret pmu(unsigned long fid, unsigned long a0, unsigned long a1,
			 unsigned long a2, unsigned long a3, unsigned long a4)
{
	return sbi_ecall(SBI_EXT_PMU, fid, a0, a1, a2, a3, a4, 0);
}

static struct sbiret cfg(unsigned long base, unsigned long mask, unsigned long flags,
			 unsigned long event)
{
	return pmu(SBI_PMU_COUNTER_CONFIG_MATCHING, base, mask, flags, event, 0);
}

static long start(unsigned long idx, unsigned long flags, unsigned long init)
{
	return pmu(SBI_PMU_COUNTER_START, idx, 1, flags, init, 0).error;
}

static long stop(unsigned long idx, unsigned long flags)
{
	return pmu(SBI_PMU_COUNTER_STOP, idx, 1, flags, 0, 0).error;
}

static unsigned long nr_counters, fw_first = -1UL;

static unsigned long read_ctr(unsigned long csr)
{
	return csr == 0xc00 ? csr_read(cycle) : csr_read(instret);
}

static void spin(unsigned long n)
{
	for (volatile unsigned long i = 0; i < n; i++)
		;
}

static void test_info(void)
{
	struct sbiret r = pmu(SBI_PMU_NUM_COUNTERS, 0, 0, 0, 0, 0);
	unsigned long hw = 0, fw = 0;

	check_eq(T, "num_counters error", r.error, SBI_SUCCESS);
	check_ge(T, "num_counters >= 3", r.value, 3);
	nr_counters = r.value;
	for (unsigned long i = 0; i < nr_counters; i++) {
		r = pmu(SBI_PMU_COUNTER_GET_INFO, i, 0, 0, 0, 0);
		if (r.error)
			continue;
		if ((unsigned long)r.value >> 63) {
			fw++;
			if (fw_first == -1UL)
				fw_first = i;
		} else {
			hw++;
		}
	}
	report_info(T, "%lu counters: %lu hardware, %lu firmware, first firmware %lu",
		    nr_counters, hw, fw, fw_first);
	check_ge(T, "some firmware counter exists", fw, 1);
	check_eq(T, "get_info(num_counters) is INVALID_PARAM",
		 pmu(SBI_PMU_COUNTER_GET_INFO, nr_counters, 0, 0, 0, 0).error,
		 SBI_ERR_INVALID_PARAM);
	check_eq(T, "get_info(-1) is INVALID_PARAM",
		 pmu(SBI_PMU_COUNTER_GET_INFO, ALL, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	if (!env.carapace)
		return;
	check_eq(T, "num_counters is 11", nr_counters, CARAPACE_COUNTERS);
	check_eqx(T, "counter 0 is cycle, 64 bits",
		  pmu(SBI_PMU_COUNTER_GET_INFO, 0, 0, 0, 0, 0).value, 0xc00 | (63 << 12));
	check_eq(T, "counter 1 (time) is INVALID_PARAM",
		 pmu(SBI_PMU_COUNTER_GET_INFO, 1, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eqx(T, "counter 2 is instret, 64 bits",
		  pmu(SBI_PMU_COUNTER_GET_INFO, 2, 0, 0, 0, 0).value, 0xc02 | (63 << 12));
	check_eq(T, "counters 3..10 are firmware counters", fw == 8 && fw_first == 3, 1);
}

/* A hardware counter for @event, its whole life: the checks are spec-level. */
static void test_hw(const char *name, unsigned long event, unsigned long csr)
{
	char what[96];
	/* every hardware counter but 1 (time: a hole under Carapace) */
	struct sbiret r = cfg(0, (ALL >> (64 - fw_first)) & ~2UL, 0, event);
	unsigned long idx, a, b, c, d;

	snprintf(what, sizeof(what), "config_matching(%s)", name);
	if (!check_eq(T, what, r.error, SBI_SUCCESS))
		return;
	idx = r.value;
	report_info(T, "%s: counter %lu", name, idx);
	if (pmu(SBI_PMU_COUNTER_GET_INFO, idx, 0, 0, 0, 0).value != (long)(csr | (63 << 12))) {
		/* another CSR (an hpmcounter on bare OpenSBI): no fixed-name read */
		report_info(T, "%s: counter %lu is not the 64-bit CSR 0x%lx: values not read",
			    name, idx, csr);
		stop(idx, SBI_PMU_STOP_RESET);	/* release it (it never started) */
		return;
	}
	if (env.carapace) {
		snprintf(what, sizeof(what), "%s got counter %lu", name, csr - 0xc00);
		check_eq(T, what, idx, csr - 0xc00);
	}
	/* OpenSBI leaves cycle and instret counting at boot; a caller that
	 * configured one stops it first (Linux stops every counter at boot) */
	stop(idx, 0);
	snprintf(what, sizeof(what), "start %s with initial value 1000000", name);
	check_eq(T, what, start(idx, SBI_PMU_START_SET_INIT_VALUE, 1000000), SBI_SUCCESS);
	a = read_ctr(csr);
	spin(1000);
	b = read_ctr(csr);
	spin(10000);
	c = read_ctr(csr);
	snprintf(what, sizeof(what), "%s counts from its initial value", name);
	check_ge(T, what, a, 1000000);
	snprintf(what, sizeof(what), "%s: initial value plus the run so far", name);
	check_le(T, what, a, 1000000 + (1UL << 40));
	snprintf(what, sizeof(what), "%s increases while started", name);
	check_ge(T, what, b, a + 1);
	/* without -icount QEMU's counters follow the host clock: a busy host
	 * can stretch the short loop, so only "it goes on counting" is checked */
	snprintf(what, sizeof(what), "%s goes on increasing", name);
	check_ge(T, what, c, b + 1);
	report_info(T, "%s: 1000 iterations %lu, 10000 iterations %lu", name, b - a, c - b);
	snprintf(what, sizeof(what), "start %s again is ALREADY_STARTED", name);
	check_eq(T, what, start(idx, 0, 0), SBI_ERR_ALREADY_STARTED);
	snprintf(what, sizeof(what), "stop %s", name);
	check_eq(T, what, stop(idx, 0), SBI_SUCCESS);
	a = read_ctr(csr);
	spin(10000);
	b = read_ctr(csr);
	snprintf(what, sizeof(what), "%s is frozen while stopped", name);
	check_eq(T, what, b, a);
	snprintf(what, sizeof(what), "stop %s again is ALREADY_STOPPED", name);
	check_eq(T, what, stop(idx, 0), SBI_ERR_ALREADY_STOPPED);
	snprintf(what, sizeof(what), "start %s without SET_INIT_VALUE", name);
	check_eq(T, what, start(idx, 0, 0), SBI_SUCCESS);
	spin(1000);
	d = read_ctr(csr);
	snprintf(what, sizeof(what), "%s goes on from its stopped value", name);
	check_eq(T, what, d > b && d < b + (1UL << 40), 1);
	snprintf(what, sizeof(what), "stop %s with RESET", name);
	check_eq(T, what, stop(idx, SBI_PMU_STOP_RESET), SBI_SUCCESS);
	if (env.carapace) {
		snprintf(what, sizeof(what), "start of the reset %s counter is INVALID_PARAM",
			 name);
		check_eq(T, what, start(idx, 0, 0), SBI_ERR_INVALID_PARAM);
		snprintf(what, sizeof(what), "stop of the reset %s counter is ALREADY_STOPPED",
			 name);
		check_eq(T, what, stop(idx, 0), SBI_ERR_ALREADY_STOPPED);
	}
}

/* Errors the spec names for every counter set and flag word. */
static void test_errors(void)
{
	struct sbiret r;
	unsigned long idx;

	check_eq(T, "config_matching on counter num_counters",
		 cfg(nr_counters, 1, 0, EV_CYCLES).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "config_matching on base 1, mask bit 63 (wraps)",
		 cfg(1, 1UL << 63, 0, EV_CYCLES).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "start on counter num_counters",
		 pmu(SBI_PMU_COUNTER_START, nr_counters, 1, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "stop on counter num_counters",
		 pmu(SBI_PMU_COUNTER_STOP, nr_counters, 1, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "unknown PMU function 9", pmu(9, 0, 0, 0, 0, 0).error,
		 SBI_ERR_NOT_SUPPORTED);

	r = cfg(0, 1, 0, EV_CYCLES);
	if (!check_eq(T, "config_matching(cycles) on counter 0", r.error, SBI_SUCCESS))
		return;
	idx = r.value;
	stop(idx, 0);	/* bare OpenSBI: counting since boot */
	/* OpenSBI 1.6 ignores reserved start/stop flag bits (and acts) */
	if (env.carapace)
		check_eq(T, "start with reserved flag bit 2", start(idx, 1UL << 2, 0),
			 SBI_ERR_INVALID_PARAM);
	check_eq(T, "start with INIT_SNAPSHOT and no shared memory",
		 start(idx, SBI_PMU_START_INIT_SNAPSHOT, 0), SBI_ERR_NO_SHMEM);
	check_eq(T, "start counter 0", start(idx, SBI_PMU_START_SET_INIT_VALUE, 0), SBI_SUCCESS);
	if (env.carapace)
		check_eq(T, "stop with reserved flag bit 2", stop(idx, 1UL << 2),
			 SBI_ERR_INVALID_PARAM);
	check_eq(T, "stop with TAKE_SNAPSHOT and no shared memory",
		 stop(idx, SBI_PMU_STOP_TAKE_SNAPSHOT), SBI_ERR_NO_SHMEM);
	check_eq(T, "stop counter 0 with RESET", stop(idx, SBI_PMU_STOP_RESET), SBI_SUCCESS);
	check_eq(T, "fw_read of hardware counter 0",
		 pmu(SBI_PMU_COUNTER_FW_READ, 0, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "fw_read of counter num_counters",
		 pmu(SBI_PMU_COUNTER_FW_READ, nr_counters, 0, 0, 0, 0).error,
		 SBI_ERR_INVALID_PARAM);
	if (env.carapace)	/* OpenSBI 1.6 answers 0 */
		check_eq(T, "fw_read_hi of hardware counter 0",
			 pmu(SBI_PMU_COUNTER_FW_READ_HI, 0, 0, 0, 0, 0).error,
			 SBI_ERR_INVALID_PARAM);
}

/* A firmware counter counting @code: @n events made by @fn land in it exactly. */
static void test_fw(const char *name, unsigned long code, void (*fn)(void), unsigned long n)
{
	char what[96];
	struct sbiret r = cfg(fw_first, ALL >> (64 - (nr_counters - fw_first)), 0, EV_FW(code));
	unsigned long idx;

	snprintf(what, sizeof(what), "config_matching(fw %s)", name);
	if (!check_eq(T, what, r.error, SBI_SUCCESS))
		return;
	idx = r.value;
	snprintf(what, sizeof(what), "start fw %s at 5", name);
	check_eq(T, what, start(idx, SBI_PMU_START_SET_INIT_VALUE, 5), SBI_SUCCESS);
	for (unsigned long i = 0; i < n; i++)
		fn();
	r = pmu(SBI_PMU_COUNTER_FW_READ, idx, 0, 0, 0, 0);
	snprintf(what, sizeof(what), "fw %s counted %lu events", name, n);
	check_eq(T, what, r.error ? -1 : r.value, 5 + n);
	check_eq(T, "stop", stop(idx, 0), SBI_SUCCESS);
	fn();
	r = pmu(SBI_PMU_COUNTER_FW_READ, idx, 0, 0, 0, 0);
	snprintf(what, sizeof(what), "fw %s does not count while stopped", name);
	check_eq(T, what, r.value, 5 + n);
	r = pmu(SBI_PMU_COUNTER_FW_READ_HI, idx, 0, 0, 0, 0);
	check_eq(T, "fw_read_hi is 0 on RV64", r.error || r.value, 0);
	/* as KVM: the counter is released even though it was stopped already */
	check_eq(T, "stop with RESET of the stopped counter is ALREADY_STOPPED",
		 stop(idx, SBI_PMU_STOP_RESET), SBI_ERR_ALREADY_STOPPED);
	check_eq(T, "... and released it: fw_read is INVALID_PARAM",
		 pmu(SBI_PMU_COUNTER_FW_READ, idx, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
}

static void do_set_timer(void)
{
	sbi_set_timer(-1UL);
}

static void do_ipi_self(void)
{
	sbi_send_ipi(1, current_hartid());
	csr_clear(sip, 1UL << 1);	/* SSIP: SIE is off, nothing is taken */
}

static void do_fence_i_self(void)
{
	SBI_CALL2(SBI_EXT_RFENCE, SBI_RFENCE_FENCE_I, 1, current_hartid());
}

static void do_sfence_self(void)
{
	sbi_ecall(SBI_EXT_RFENCE, SBI_RFENCE_SFENCE_VMA, 1, current_hartid(), 0, 0, 0, 0);
}

/* hpmcounter3 is no counter Carapace gives: the read becomes an illegal
 * instruction the hypervisor raises (the ILLEGAL_INSN firmware event). */
static void do_illegal(void)
{
	struct trap_record r;

	trap_arm();
	(void)csr_read(0xc03);
	trap_disarm(&r);
}

/* What one read of cycle costs, direct and trapped (printed: under -icount a
 * time tick is 100 instructions, docs/sbi.md quotes it). */
static void time_reads(const char *how)
{
	unsigned long t0 = csr_read(time);

	for (int i = 0; i < 1000; i++)
		(void)csr_read(cycle);
	report_info(T, "1000 reads of cycle, %s: %lu time ticks", how, csr_read(time) - t0);
}

/* Does instret count the hypervisor's work during an SBI call? Printed: under
 * -icount the per-call figure is the guest's ecall sequence plus Carapace's
 * exit handling (docs/sbi.md quotes it). */
static void instret_per_sbi_call(void)
{
	unsigned long a, b;

	if (cfg(2, 1, SBI_PMU_CFG_FLAG_AUTO_START, EV_INSNS).error)
		return;
	a = csr_read(instret);
	for (int i = 0; i < 100; i++)
		sbi_ecall(SBI_EXT_BASE, SBI_BASE_GET_SPEC_VERSION, 0, 0, 0, 0, 0, 0);
	b = csr_read(instret);
	report_info(T, "instret per BASE get_spec_version call: %lu", (b - a) / 100);
	stop(2, SBI_PMU_STOP_RESET);
}

/* A vCPU's cycle counts only while it is on a hart: across a 20 ms retentive
 * suspend (the vCPU leaves its hart until the timer) it advances by far less
 * than in 20 ms of spinning. */
static void test_off_cpu(void)
{
	unsigned long t0, c0, spin_t, spin, idle_t, idle;

	if (!check_eq(T, "config_matching(cycles) with AUTO_START",
		      cfg(0, 1, SBI_PMU_CFG_FLAG_AUTO_START, EV_CYCLES).error, SBI_SUCCESS))
		return;
	t0 = rdtime();
	c0 = csr_read(cycle);
	udelay(20000);
	spin_t = rdtime() - t0;
	spin = csr_read(cycle) - c0;
	csr_set(sie, MIP_STIP);
	t0 = rdtime();
	c0 = csr_read(cycle);
	sbi_set_timer(t0 + us_to_ticks(20000));
	sbi_hart_suspend(SBI_HSM_SUSPEND_RET_DEFAULT, 0, 0);
	idle_t = rdtime() - t0;
	idle = csr_read(cycle) - c0;
	sbi_set_timer(-1UL);
	csr_clear(sie, MIP_STIP);
	stop(0, SBI_PMU_STOP_RESET);
	report_info(T, "cycle: spinning %lu in %lu ticks, suspended %lu in %lu ticks", spin,
		    spin_t, idle, idle_t);
	check_ge(T, "the suspend lasted its 20 ms", idle_t, us_to_ticks(20000));
	check_le(T, "cycle does not count while the vCPU is off its hart (< 1/4 of spinning)",
		 idle * 4, spin / spin_t * idle_t);
}

/* A counter the guest has not configured (or released) reads its last value
 * and does not advance: never the host's counter, which leaked the host's
 * activity and jumped when the vCPU moved to another hart or another host
 * (issue 22; hcounteren has only TM, as under KVM). */
static void test_released_counters_frozen(void)
{
	unsigned long c0 = csr_read(cycle), i0 = csr_read(instret);

	udelay(2000);
	check_eq(T, "a released cycle counter does not advance", csr_read(cycle), c0);
	check_eq(T, "an unconfigured instret does not advance", csr_read(instret), i0);
}

static void test_carapace_only(void)
{
	struct sbiret r;
	unsigned long fwmask = ALL >> (64 - 8);

	/* OpenSBI 1.6 accepts it (and ignores the bit) */
	check_eq(T, "config_matching with reserved flag bit 8",
		 cfg(0, 1, CFG_RESERVED, EV_CYCLES).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "config_matching(cache references) is NOT_SUPPORTED",
		 cfg(0, 0x7fd, 0, EV_CACHE_REF).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "config_matching(cache event type 1) is NOT_SUPPORTED",
		 cfg(0, 0x7fd, 0, 1UL << 16).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "config_matching(raw event type 3) is NOT_SUPPORTED",
		 cfg(0, 0x7fd, 0, 3UL << 16).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "config_matching(fw platform event) is NOT_SUPPORTED",
		 cfg(3, fwmask, 0, EV_FW(0xffff)).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "config_matching(fw IPI_RECEIVED) is NOT_SUPPORTED",
		 cfg(3, fwmask, 0, EV_FW(SBI_PMU_FW_IPI_RECEIVED)).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "config_matching(event_idx bit 20) is NOT_SUPPORTED",
		 cfg(0, 1, 0, (1UL << 20) | EV_CYCLES).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "config_matching(cycles) on the instret counter is NOT_SUPPORTED",
		 cfg(2, 1, 0, EV_CYCLES).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "config_matching on the time hole (1) is INVALID_PARAM",
		 cfg(1, 1, 0, EV_CYCLES).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "config_matching with mask 0 is INVALID_PARAM",
		 cfg(0, 0, 0, EV_CYCLES).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "start with mask 0 is INVALID_PARAM",
		 pmu(SBI_PMU_COUNTER_START, 0, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "SINH (cannot filter S-mode) is NOT_SUPPORTED",
		 cfg(0, 1, SBI_PMU_CFG_FLAG_SET_SINH, EV_CYCLES).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "UINH is NOT_SUPPORTED",
		 cfg(0, 1, SBI_PMU_CFG_FLAG_SET_UINH, EV_CYCLES).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "MINH is NOT_SUPPORTED",
		 cfg(0, 1, SBI_PMU_CFG_FLAG_SET_MINH, EV_CYCLES).error, SBI_ERR_NOT_SUPPORTED);
	check_eq(T, "snapshot_set_shmem is NOT_SUPPORTED",
		 pmu(SBI_PMU_SNAPSHOT_SET_SHMEM, 0x80000000UL, 0, 0, 0, 0).error,
		 SBI_ERR_NOT_SUPPORTED);

	/* VSINH|VUINH (perf's default exclude_guest) accepted; AUTO_START, CLEAR_VALUE */
	r = cfg(0, 1, SBI_PMU_CFG_FLAG_SET_VSINH | SBI_PMU_CFG_FLAG_SET_VUINH |
			      SBI_PMU_CFG_FLAG_CLEAR_VALUE, EV_CYCLES);
	check_eq(T, "VSINH|VUINH with CLEAR_VALUE: counter 0", r.error ? -1 : r.value, 0);
	check_eq(T, "CLEAR_VALUE: a configured, unstarted cycle reads 0", csr_read(cycle), 0);
	check_eq(T, "cycle taken: matching it again is NOT_SUPPORTED",
		 cfg(0, 1, 0, EV_CYCLES).error, SBI_ERR_NOT_SUPPORTED);
	r = cfg(0, 1, SBI_PMU_CFG_FLAG_SKIP_MATCH | SBI_PMU_CFG_FLAG_AUTO_START, EV_CYCLES);
	check_eq(T, "SKIP_MATCH reconfigures the caller's counter 0", r.error ? -1 : r.value, 0);
	check_eq(T, "AUTO_START: start is ALREADY_STARTED", start(0, 0, 0), SBI_ERR_ALREADY_STARTED);
	check_eq(T, "SKIP_MATCH on a started counter is NOT_SUPPORTED",
		 cfg(0, 1, SBI_PMU_CFG_FLAG_SKIP_MATCH, EV_CYCLES).error, SBI_ERR_NOT_SUPPORTED);
	check_ne(T, "AUTO_START: cycle counts", csr_read(cycle), 0);
	time_reads("configured (each one an exit)");
	check_eq(T, "stop and reset counter 0", stop(0, SBI_PMU_STOP_RESET), SBI_SUCCESS);
	time_reads("not configured (an exit too)");
	test_released_counters_frozen();
	check_eq(T, "start of counters 0 and 2, both unconfigured, is INVALID_PARAM",
		 pmu(SBI_PMU_COUNTER_START, 0, 5, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "fw_read of an unconfigured firmware counter is INVALID_PARAM",
		 pmu(SBI_PMU_COUNTER_FW_READ, 3, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "start with both SET_INIT_VALUE and INIT_SNAPSHOT is INVALID_PARAM",
		 start(3, 3, 0), SBI_ERR_INVALID_PARAM);
	instret_per_sbi_call();
	test_off_cpu();
	test_fw("fence_i_sent", SBI_PMU_FW_FENCE_I_SENT, do_fence_i_self, 2);
	test_fw("sfence_vma_sent", SBI_PMU_FW_SFENCE_VMA_SENT, do_sfence_self, 2);
	test_fw("illegal_insn", SBI_PMU_FW_ILLEGAL_INSN, do_illegal, 3);
}

/* 16-byte entries: event_idx, output, event_data lo/hi */
static volatile uint32_t info[8][4] __attribute__((aligned(16)));

static void test_event_info(void)
{
	static const uint32_t ev[8] = {
		EV_CYCLES, EV_INSNS, EV_CACHE_REF, EV_FW(SBI_PMU_FW_SET_TIMER),
		EV_FW(SBI_PMU_FW_IPI_SENT), EV_FW(0xffff), 1UL << 16, EV_FW(SBI_PMU_FW_ILLEGAL_INSN),
	};
	static const uint32_t want[8] = { 1, 1, 0, 1, 1, 0, 0, 1 };
	unsigned long pa = (unsigned long)info;
	struct sbiret r;

	for (int i = 0; i < 8; i++) {
		info[i][0] = ev[i];
		info[i][1] = 0xdead;
		info[i][2] = info[i][3] = 0;
	}
	r = pmu(SBI_PMU_EVENT_GET_INFO, pa, 0, 8, 0, 0);
	report_info(T, "event_get_info: error %ld", r.error);
	if (!env.carapace)
		return;
	check_eq(T, "event_get_info of 8 events", r.error, SBI_SUCCESS);
	for (int i = 0; i < 8; i++) {
		char what[64];

		snprintf(what, sizeof(what), "event_get_info: event 0x%x supported=%u",
			 ev[i], want[i]);
		check_eq(T, what, info[i][1], want[i]);
	}
	check_eq(T, "event_get_info with flags 1",
		 pmu(SBI_PMU_EVENT_GET_INFO, pa, 0, 8, 1, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "event_get_info at an 8-byte aligned address",
		 pmu(SBI_PMU_EVENT_GET_INFO, pa + 8, 0, 1, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "event_get_info of 0 entries",
		 pmu(SBI_PMU_EVENT_GET_INFO, pa, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eq(T, "event_get_info with hi 1",
		 pmu(SBI_PMU_EVENT_GET_INFO, pa, 1, 1, 0, 0).error, SBI_ERR_INVALID_ADDRESS);
	check_eq(T, "event_get_info outside RAM",
		 pmu(SBI_PMU_EVENT_GET_INFO, 0x1000, 0, 1, 0, 0).error, SBI_ERR_INVALID_ADDRESS);
	check_eq(T, "event_get_info straddling the end of RAM",
		 pmu(SBI_PMU_EVENT_GET_INFO, env.ram_base + env.ram_size - 16, 0, 2, 0, 0).error,
		 SBI_ERR_INVALID_ADDRESS);
	check_eq(T, "event_get_info whose size wraps",
		 pmu(SBI_PMU_EVENT_GET_INFO, pa, 0, 1UL << 60, 0, 0).error,
		 SBI_ERR_INVALID_ADDRESS);
	info[0][1] = 0xdead;
	info[1][0] = 1UL << 20 | EV_INSNS;	/* a reserved bit */
	check_eq(T, "event_get_info with a reserved event_idx bit",
		 pmu(SBI_PMU_EVENT_GET_INFO, pa, 0, 2, 0, 0).error, SBI_ERR_INVALID_PARAM);
	check_eqx(T, "... and no entry was written", info[0][1], 0xdead);
}

void test_main(unsigned long hartid)
{
	struct sbiret r = sbi_probe(SBI_EXT_PMU);

	(void)hartid;
	if (env.carapace)
		check_ne(T, "probe PMU is available", r.value, 0);
	if (!r.value) {
		report_skip(T, "PMU not available");
		return;
	}
	test_info();
	if (fw_first == -1UL)
		return;
	test_hw("cycles", EV_CYCLES, 0xc00);
	test_hw("instructions", EV_INSNS, 0xc02);
	test_errors();
	/* OpenSBI 1.6 on QEMU virt takes a store fault in M-mode (and stops)
	 * when a firmware counter is started: firmware counters only here */
	if (!env.carapace) {
		report_info(T, "bare OpenSBI: firmware counters not exercised");
		return;
	}
	test_fw("set_timer", SBI_PMU_FW_SET_TIMER, do_set_timer, 3);
	test_fw("ipi_sent", SBI_PMU_FW_IPI_SENT, do_ipi_self, 2);
	test_carapace_only();
	test_event_info();
}
