/* SPDX-License-Identifier: MIT */
/* SBI SUSP: system_suspend's error codes (reserved and platform-specific
 * sleep types, a bad resume address, another hart not STOPPED), then two
 * suspends to RAM woken by a timer armed before them: each resumes at
 * resume_addr with a0 = hart id, a1 = opaque, satp = 0, sstatus.SIE = 0, and
 * not before the timer's deadline. The second passes a sleep type with upper
 * bits set: it is a uint32, so it is SUSPEND_TO_RAM.
 *
 * Mode-dependent: bare OpenSBI on QEMU virt has no system-suspend device, so
 * SUSP probes 0 there and only the NOT_SUPPORTED answer is checked. Under
 * Carapace SUSP must be present. The bad resume address is one outside guest
 * RAM under Carapace, OpenSBI's own region on bare (as in sbi_hsm.c).
 * Needs 2 harts for the DENIED checks (skipped with one).
 * bootargs sleep_ms=N: the first suspend sleeps N ms (default 200), and
 * "SUSPENDING" is printed before it (tests/guests/test_snapshot_susp.py
 * snapshots the VM meanwhile); sleep_ms=0: no timer, only the host's
 * `carapace-ctl wake` can end it (test_snapshot_susp.py too).
 */
#include "libguest.h"
#include "mmu.h"

#define T "susp"
#define OPAQUE_1	0x0123456789abcdefUL
#define OPAQUE_2	0xfedcba9876543210UL
#define SUSPEND_US	200000	/* the second suspend's, and the first's default */

static unsigned long self, target;
static unsigned long deadline;	/* the wake-up timer of the current suspend */
static unsigned long started;

static struct sbiret system_suspend(unsigned long type, unsigned long addr,
				    unsigned long opaque)
{
	return SBI_CALL3(SBI_EXT_SUSP, SBI_SUSP_SYSTEM_SUSPEND, type, addr, opaque);
}

/* A refused call must return; if one suspended instead, we land here. */
static void unexpected_resume(unsigned long hartid, unsigned long opaque)
{
	report_fail(T, "hart %lu resumed from a suspend that should have been refused "
		    "(got resume with a1 0x%lx, want an error return)", hartid, opaque);
	report_done();
}

static void expect_refused(const char *what, unsigned long type, unsigned long addr,
			   long want)
{
	hart_set_entry(unexpected_resume);
	check_eq(T, what, system_suspend(type, addr, 0).error, want);
}

static void test_errors(unsigned long bad_addr)
{
	static const unsigned long reserved[] = { 0x1, 0x2, 0x7fffffff };
	static const unsigned long platform[] = { 0x80000000, 0xffffffff };
	unsigned long entry = (unsigned long)_hart_entry;
	char what[80];
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(reserved); i++) {
		snprintf(what, sizeof(what), "sleep type 0x%lx is reserved", reserved[i]);
		expect_refused(what, reserved[i], entry, SBI_ERR_INVALID_PARAM);
	}
	for (i = 0; i < ARRAY_SIZE(platform); i++) {
		snprintf(what, sizeof(what),
			 "sleep type 0x%lx: platform-specific, not implemented", platform[i]);
		expect_refused(what, platform[i], entry, SBI_ERR_INVALID_PARAM);
	}
	expect_refused("sleep type (1 << 32) | 1 truncates to reserved 1",
		       (1UL << 32) | 1, entry, SBI_ERR_INVALID_PARAM);
	expect_refused("suspend to a bad resume address", 0, bad_addr,
		       SBI_ERR_INVALID_ADDRESS);
	if (env.carapace)
		expect_refused("suspend to the first byte after RAM", 0,
			       env.ram_base + env.ram_size, SBI_ERR_INVALID_ADDRESS);
	hart_set_entry(unexpected_resume);
	check_eq(T, "unknown SUSP function 1",
		 SBI_CALL3(SBI_EXT_SUSP, 1, 0, entry, 0).error, SBI_ERR_NOT_SUPPORTED);
}

static unsigned long stop_cmd;

static void other_main(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	WRITE_ONCE(started, 1);
	while (!READ_ONCE(stop_cmd))
		cpu_relax();
	sbi_hart_stop();
	report_fail(T, "hart_stop returned (got return, want none)");
	for (;;)
		wfi();
}

/* Every other hart must be STOPPED: one that runs gets DENIED; once it has
 * stopped, the suspend goes ahead (suspend_to_ram). */
static void test_denied(void)
{
	unsigned long entry = (unsigned long)_hart_entry;

	if (!check_eq(T, "hart_start(other)", hart_start(target, other_main, 0), SBI_SUCCESS))
		return;
	check_eq(T, "other hart runs", wait_for(READ_ONCE(started), 1000000), 1);
	expect_refused("suspend while another hart is STARTED", 0, entry, SBI_ERR_DENIED);
	WRITE_ONCE(stop_cmd, 1);
	check_eq(T, "other hart stops", hart_wait_state(target, SBI_HSM_STATE_STOPPED,
							1000000), 1);
}

static void resumed_checks(unsigned long hartid, unsigned long opaque, unsigned long want,
			   const char *how)
{
	/* read before anything can change them */
	unsigned long satp = csr_read(satp), sie_bit = csr_read(sstatus) & SR_SIE;
	unsigned long now = rdtime();
	char what[80];

	snprintf(what, sizeof(what), "%s: resumed at resume_addr", how);
	report_pass(T, "%s", what);
	snprintf(what, sizeof(what), "%s: a0 is the hart id", how);
	check_eq(T, what, hartid, self);
	snprintf(what, sizeof(what), "%s: a1 is the opaque value", how);
	check_eqx(T, what, opaque, want);
	snprintf(what, sizeof(what), "%s: satp is 0", how);
	check_eqx(T, what, satp, 0);
	snprintf(what, sizeof(what), "%s: sstatus.SIE is 0", how);
	check_eq(T, what, !!sie_bit, 0);
	if (deadline) {
		snprintf(what, sizeof(what), "%s: woke at the timer, not before", how);
		check_ge(T, what, now, deadline);
	} else {
		report_info(T, "%s: woken with no interrupt enabled: by the host", how);
	}
	timer_disarm_wakeup();
	if (target != -1UL) {
		snprintf(what, sizeof(what), "%s: other hart still STOPPED", how);
		check_eq(T, what, sbi_hart_status(target).value, SBI_HSM_STATE_STOPPED);
	}
	snprintf(what, sizeof(what), "%s: get_status(self) is STARTED", how);
	check_eq(T, what, sbi_hart_status(self).value, SBI_HSM_STATE_STARTED);
}

/* Suspend with the MMU on and sstatus.SIE set, so that the resume state
 * (satp 0, SIE 0) shows it was set by the resume. No printing in between:
 * the identity map covers RAM only, not the UART. */
static void suspend_to_ram(unsigned long type, unsigned long opaque, unsigned long us,
			   void (*resumed)(unsigned long, unsigned long))
{
	struct sbiret r;

	hart_set_entry(resumed);
	if (us) {
		deadline = timer_arm_wakeup(us);
	} else {
		timer_disarm_wakeup();	/* nothing in sie: no interrupt can wake us */
		deadline = 0;
	}
	mmu_enable();
	csr_set(sstatus, SR_SIE);
	r = system_suspend(type, (unsigned long)_hart_entry, opaque);
	csr_clear(sstatus, SR_SIE);
	mmu_disable();
	report_fail(T, "system_suspend returned (got error %ld, want no return)", r.error);
	report_done();
}

static void resumed_2(unsigned long hartid, unsigned long opaque)
{
	resumed_checks(hartid, opaque, OPAQUE_2, "type (1 << 32) | 0");
	report_done();
}

static void resumed_1(unsigned long hartid, unsigned long opaque)
{
	resumed_checks(hartid, opaque, OPAQUE_1, "suspend to RAM");
	/* sleep_type is a uint32: the upper half of a0 is ignored */
	suspend_to_ram((1UL << 32) | SBI_SUSP_SLEEP_TYPE_SUSPEND_TO_RAM, OPAQUE_2, SUSPEND_US,
		       resumed_2);
}

void test_main(unsigned long hartid)
{
	struct sbiret r = sbi_probe(SBI_EXT_SUSP);
	unsigned long bad_addr;

	self = hartid;
	target = other_hartid();
	check_eq(T, "probe SUSP error", r.error, SBI_SUCCESS);
	if (!r.value) {
		if (env.carapace)
			check_ne(T, "probe SUSP is available", r.value, 0);
		else
			report_skip(T, "SUSP absent on this firmware (probe 0)");
		check_eq(T, "absent SUSP: call is NOT_SUPPORTED",
			 SBI_CALL3(SBI_EXT_SUSP, 0, 1, 0, 0).error, SBI_ERR_NOT_SUPPORTED);
		return;
	}
	report_pass(T, "probe SUSP is available");
	bad_addr = env.carapace ? 0x40000000UL : env.ram_base;
	test_errors(bad_addr);
	if (target == -1UL) {
		report_skip(T, "DENIED needs 2 harts");
	} else {
		test_denied();
	}
	mmu_init();
	printf("SUSPENDING\n");
	suspend_to_ram(SBI_SUSP_SLEEP_TYPE_SUSPEND_TO_RAM, OPAQUE_1,
		       bootarg_ulong("sleep_ms", SUSPEND_US / 1000) * 1000, resumed_1);
}
