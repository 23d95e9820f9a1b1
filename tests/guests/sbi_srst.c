/* SPDX-License-Identifier: MIT */
/* SBI SRST: reserved type/reason errors, cold then warm reboot, shutdown.
 *
 * Mode-dependent:
 *  - Carapace (/chosen carapace,boot-count present): boot 0 starts the other
 *    hart, dirties .data and cold-reboots; boot 1 checks the reset (other
 *    hart STOPPED, .data reloaded) and warm-reboots; boot 2 shuts down. The
 *    log therefore holds the error checks three times and one DONE line.
 *    That last shutdown gives reason 0xE0000000 (SBI implementation
 *    specific, which Carapace takes as reason 0): the driver checks the VM
 *    ended as a plain shutdown.
 *  - bare QEMU: reboot would restart this payload forever (nothing counts
 *    boots), so it is SKIPped; only the error checks and shutdown run.
 * The final shutdown itself is checked by the driver (clean exit, DONE).
 */
#include "libguest.h"

#define T "srst"
#define DATA_MAGIC	0x600dda7aUL
#define SRST_REASON_SBI_IMPL	0xe0000000UL	/* 0xE0000000-0xEFFFFFFF */

/* In .data on purpose: a reboot must bring back the image's value. */
static volatile unsigned long data_marker = DATA_MAGIC;

static void spin_main(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	for (;;)
		cpu_relax();
}

static void test_errors(void)
{
	static const struct {
		unsigned long type, reason;
		const char *what;
	} bad[] = {
		{ 3, SBI_SRST_REASON_NONE, "reserved type 3" },
		{ 0xefffffff, SBI_SRST_REASON_NONE, "reserved type 0xefffffff" },
		{ SBI_SRST_TYPE_SHUTDOWN, 2, "reserved reason 2" },
		{ SBI_SRST_TYPE_COLD_REBOOT, 0xdfffffff,
		  "reserved reason 0xdfffffff" },
		/* SBI 3.0: platform-specific and unimplemented is INVALID_PARAM too */
		{ 0xf0000000, SBI_SRST_REASON_NONE, "unimplemented vendor type 0xf0000000" },
		{ 0xffffffff, SBI_SRST_REASON_NONE, "unimplemented vendor type 0xffffffff" },
	};
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		check_eq(T, bad[i].what,
			 sbi_system_reset(bad[i].type, bad[i].reason).error,
			 SBI_ERR_INVALID_PARAM);
	check_eq(T, "unknown SRST function 1", SBI_CALL0(SBI_EXT_SRST, 1).error,
		 SBI_ERR_NOT_SUPPORTED);
	/* a platform-specific reason Carapace does not define (the spec:
	 * INVALID_PARAM); not asked of bare OpenSBI, which may shut down */
	if (env.carapace)
		check_eq(T, "unimplemented platform-specific reason 0xf0000000",
			 sbi_system_reset(SBI_SRST_TYPE_SHUTDOWN, 0xf0000000).error,
			 SBI_ERR_INVALID_PARAM);
}

static void reboot(unsigned long type, const char *name)
{
	struct sbiret r;

	if (report_failures())
		return;	/* report the failures instead of hiding them */
	report_info(T, "boot %u: %s reboot", env.boot_count, name);
	r = sbi_system_reset(type, SBI_SRST_REASON_NONE);
	report_fail(T, "%s reboot returned (got %ld, want no return)", name,
		    r.error);
}

static void check_fresh(void)
{
	unsigned long other = other_hartid();

	check_eqx(T, ".data is reloaded by the reboot", data_marker, DATA_MAGIC);
	if (other != -1UL) {
		struct sbiret r = sbi_hart_status(other);

		check_eq(T, "other hart is STOPPED after reboot",
			 r.error ? r.error : r.value, SBI_HSM_STATE_STOPPED);
	}
}

void test_main(unsigned long hartid)
{
	unsigned long other = other_hartid();

	(void)hartid;
	test_errors();
	if (!env.carapace) {
		report_skip(T, "reboot: bare QEMU cannot tell one boot from the next");
		return;
	}
	switch (env.boot_count) {
	case 0:
		if (other != -1UL)
			hart_start(other, spin_main, 0);
		data_marker = 0;
		reboot(SBI_SRST_TYPE_COLD_REBOOT, "cold");
		break;
	case 1:
		report_pass(T, "cold reboot came back with boot-count 1");
		check_fresh();
		data_marker = 0;
		reboot(SBI_SRST_TYPE_WARM_REBOOT, "warm");
		break;
	case 2:
		report_pass(T, "warm reboot came back with boot-count 2");
		check_fresh();
		/* an SBI-implementation-specific reason: Carapace takes it as
		 * reason 0, so the VM must end as a plain shutdown (the driver
		 * checks), neither refused nor "failed" */
		report_info(T, "boot 2: shutdown with reason 0x%lx",
			    SRST_REASON_SBI_IMPL);
		report_done_reason(SRST_REASON_SBI_IMPL);
	default:
		report_fail(T, "too many boots (got boot-count %u, want <= 2)",
			    env.boot_count);
	}
}
