/* SPDX-License-Identifier: MIT */
/* SBI FWFT get/set: the spec's error codes, and a harmless set round-trip.
 *
 * Only spec-defined behaviour is checked; which features a VM gets (landing
 * pads, shadow stacks: the VM's CFI policy) is printed, not checked. Nothing
 * is locked. Same expectations in both modes.
 */
#include "libguest.h"

#define T "fwft"
#define RESERVED_FEATURE	0x6UL		/* first unassigned standard id */
#define LAST_RESERVED		0x3fffffffUL
#define PLATFORM_FEATURE	0x40000000UL	/* platform range, none defined */

static const char *const names[] = {
	"misaligned_exc_deleg", "landing_pad", "shadow_stack", "double_trap",
	"pte_ad_hw_updating", "pointer_masking_pmlen",
};

static struct sbiret fwft_get(unsigned long feature)
{
	return SBI_CALL1(SBI_EXT_FWFT, SBI_FWFT_GET, feature);
}

static struct sbiret fwft_set(unsigned long feature, unsigned long value,
			      unsigned long flags)
{
	return SBI_CALL3(SBI_EXT_FWFT, SBI_FWFT_SET, feature, value, flags);
}

static void test_features(void)
{
	unsigned long f;

	for (f = 0; f < ARRAY_SIZE(names); f++) {
		struct sbiret r = fwft_get(f);
		char what[64];

		snprintf(what, sizeof(what), "get %s: SUCCESS or NOT_SUPPORTED",
			 names[f]);
		if (r.error == SBI_SUCCESS || r.error == SBI_ERR_NOT_SUPPORTED)
			report_pass(T, "%s", what);
		else
			report_fail(T, "%s (got %ld, want 0 or -2)", what,
				    r.error);
		report_info(T, "%s: error %ld value %ld", names[f], r.error,
			    r.value);
	}
}

static void test_errors(void)
{
	check_eq(T, "get reserved feature 6", fwft_get(RESERVED_FEATURE).error,
		 SBI_ERR_DENIED);
	check_eq(T, "get reserved feature 0x3fffffff",
		 fwft_get(LAST_RESERVED).error, SBI_ERR_DENIED);
	check_eq(T, "get unimplemented platform feature",
		 fwft_get(PLATFORM_FEATURE).error, SBI_ERR_DENIED);
	check_eq(T, "set reserved feature 6",
		 fwft_set(RESERVED_FEATURE, 0, 0).error, SBI_ERR_DENIED);
	check_eq(T, "unknown FWFT function 2", SBI_CALL0(SBI_EXT_FWFT, 2).error,
		 SBI_ERR_NOT_SUPPORTED);
}

/* MISALIGNED_EXC_DELEG takes 0 or 1; setting what it holds changes nothing. */
static void test_set(void)
{
	struct sbiret r = fwft_get(SBI_FWFT_MISALIGNED_EXC_DELEG);

	if (r.error) {
		report_skip(T, "misaligned_exc_deleg not supported (error %ld)",
			    r.error);
		return;
	}
	check_le(T, "misaligned_exc_deleg value is 0 or 1", r.value, 1);
	check_eq(T, "set misaligned_exc_deleg to its value",
		 fwft_set(SBI_FWFT_MISALIGNED_EXC_DELEG, r.value, 0).error,
		 SBI_SUCCESS);
	check_eq(T, "value reads back",
		 fwft_get(SBI_FWFT_MISALIGNED_EXC_DELEG).value, r.value);
	check_eq(T, "set misaligned_exc_deleg to 2",
		 fwft_set(SBI_FWFT_MISALIGNED_EXC_DELEG, 2, 0).error,
		 SBI_ERR_INVALID_PARAM);
	check_eq(T, "set with reserved flag bit 1",
		 fwft_set(SBI_FWFT_MISALIGNED_EXC_DELEG, r.value, 2).error,
		 SBI_ERR_INVALID_PARAM);
}

void test_main(unsigned long hartid)
{
	(void)hartid;
	if (!sbi_probe(SBI_EXT_FWFT).value) {
		report_skip(T, "FWFT not available");
		return;
	}
	test_features();
	test_errors();
	test_set();
}
