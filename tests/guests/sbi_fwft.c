/* SPDX-License-Identifier: MIT */
/* SBI FWFT get/set: the spec's error codes, and a harmless set round-trip.
 *
 * Spec-defined behaviour in both modes; which CFI features a VM gets (its
 * policy) is printed, not checked. PTE_AD_HW_UPDATING is checked by what a
 * page table does, and against the DT. Under Carapace only: reset values and
 * MISALIGNED_EXC_DELEG's reset value 1, a set to 0 and back (locked last).
 */
#include "libguest.h"
#include "mmu.h"

#define T "fwft"
#define RESERVED_FEATURE	0x6UL		/* first unassigned standard id */
#define LAST_RESERVED		0x3fffffffUL
#define PLATFORM_FEATURE	0x40000000UL	/* platform range, none defined */
#define GLOBAL_RESERVED		0x80000000UL	/* global, reserved: ..0xbfffffff */
#define GLOBAL_RESERVED_LAST	0xbfffffffUL
#define GLOBAL_PLATFORM		0xc0000000UL	/* global, platform: ..0xffffffff */
#define GLOBAL_PLATFORM_LAST	0xffffffffUL

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

/* Global feature IDs: none is defined, so the reserved ones and the
 * platform-specific ones (neither Carapace nor OpenSBI 1.6 on QEMU virt
 * implements one) give DENIED to get and set alike (SBI 3.0). */
static void test_global(void)
{
	static const struct {
		unsigned long f;
		const char *name;
	} ids[] = {
		{ GLOBAL_RESERVED, "reserved global feature 0x80000000" },
		{ GLOBAL_RESERVED_LAST, "reserved global feature 0xbfffffff" },
		{ GLOBAL_PLATFORM, "unimplemented platform global feature 0xc0000000" },
		{ GLOBAL_PLATFORM_LAST, "unimplemented platform global feature 0xffffffff" },
	};
	char what[96];
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		snprintf(what, sizeof(what), "get %s", ids[i].name);
		check_eq(T, what, fwft_get(ids[i].f).error, SBI_ERR_DENIED);
		snprintf(what, sizeof(what), "set %s", ids[i].name);
		check_eq(T, what, fwft_set(ids[i].f, 0, 0).error, SBI_ERR_DENIED);
	}
	check_eq(T, "set reserved global feature 0x80000000 with LOCK",
		 fwft_set(GLOBAL_RESERVED, 1, SBI_FWFT_SET_FLAG_LOCK).error,
		 SBI_ERR_DENIED);
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

/* Does hart 0's riscv,isa-extensions name @ext? */
static bool dt_has_ext(const char *ext)
{
	int cpus = fdt_path_offset("/cpus"), node, len;

	for (node = cpus < 0 ? -1 : fdt_first_child(cpus); node >= 0; node = fdt_next_sibling(node)) {
		const char *p = fdt_getprop(node, "riscv,isa-extensions", &len);

		for (int i = 0; p && i < len; i += (int)strlen(p + i) + 1)
			if (!strcmp(p + i, ext))
				return true;
		if (p)
			break;
	}
	return false;
}

static unsigned long ad_page[512] __attribute__((aligned(4096)));

/* Load from ad_page with its PTE's A and D bits cleared: the exception cause,
 * or 0 if there was none; *pte is the PTE after the load. */
static unsigned long load_with_a_clear(unsigned long *pte)
{
	unsigned long *ptep = mmu_leaf_ptep((unsigned long)ad_page);
	struct trap_record r;

	*ptep &= ~(PTE_A | PTE_D);
	asm volatile("sfence.vma" ::: "memory");
	trap_arm();
	(void)*(volatile unsigned long *)ad_page;
	*pte = *ptep;
	return trap_disarm(&r) ? r.scause : 0;
}

/* PTE_AD_HW_UPDATING does what it says: with 0 a page whose A bit is clear
 * faults (Svade), with 1 the hardware sets A. Offered exactly where the DT
 * lists svadu (with svade beside it under Carapace: off at boot). */
static void test_pte_ad(void)
{
	struct sbiret r = fwft_get(SBI_FWFT_PTE_AD_HW_UPDATING);
	unsigned long pte, cause;

	check_eq(T, "pte_ad_hw_updating offered exactly where the DT lists svadu",
		 r.error == SBI_SUCCESS, dt_has_ext("svadu"));
	if (env.carapace) {
		check_eq(T, "pte_ad_hw_updating reads its reset value 0", r.value, 0);
		check_eq(T, "the DT lists svade beside svadu", dt_has_ext("svade"),
			 dt_has_ext("svadu"));
	}
	if (r.error) {
		report_info(T, "pte_ad_hw_updating not supported: no A/D check");
		return;
	}
	mmu_init();
	if (mmu_map((unsigned long)ad_page, sizeof(ad_page), MMU_RW)) {
		report_fail(T, "mmu_map of the A/D page");
		return;
	}
	mmu_enable();
	check_eq(T, "set pte_ad_hw_updating 0", fwft_set(SBI_FWFT_PTE_AD_HW_UPDATING, 0, 0).error,
		 SBI_SUCCESS);
	cause = load_with_a_clear(&pte);
	check_eq(T, "A/D updating off: a load of a page with A=0 faults", cause,
		 EXC_LOAD_PAGE_FAULT);
	check_eq(T, "set pte_ad_hw_updating 1", fwft_set(SBI_FWFT_PTE_AD_HW_UPDATING, 1, 0).error,
		 SBI_SUCCESS);
	check_eq(T, "pte_ad_hw_updating reads 1", fwft_get(SBI_FWFT_PTE_AD_HW_UPDATING).value, 1);
	cause = load_with_a_clear(&pte);
	check_eq(T, "A/D updating on: the load does not fault", cause, 0);
	check_eq(T, "A/D updating on: the hardware set A", pte & PTE_A, PTE_A);
	check_eq(T, "set pte_ad_hw_updating 2", fwft_set(SBI_FWFT_PTE_AD_HW_UPDATING, 2, 0).error,
		 SBI_ERR_INVALID_PARAM);
	check_eq(T, "set pte_ad_hw_updating 0 again",
		 fwft_set(SBI_FWFT_PTE_AD_HW_UPDATING, 0, 0).error, SBI_SUCCESS);
	cause = load_with_a_clear(&pte);
	check_eq(T, "off again: the load faults again", cause, EXC_LOAD_PAGE_FAULT);
	mmu_disable();
}

/* Carapace delegates misaligned exceptions to the guest at reset (value 1)
 * and emulates them on request (0: tests/guests/misaligned.c checks the
 * accesses); LOCK holds the value. */
static void test_misaligned_carapace(void)
{
	if (!env.carapace)
		return;
	check_eq(T, "misaligned_exc_deleg reads 1", fwft_get(SBI_FWFT_MISALIGNED_EXC_DELEG).value, 1);
	check_eq(T, "set misaligned_exc_deleg 0 succeeds",
		 fwft_set(SBI_FWFT_MISALIGNED_EXC_DELEG, 0, 0).error, SBI_SUCCESS);
	check_eq(T, "misaligned_exc_deleg reads 0", fwft_get(SBI_FWFT_MISALIGNED_EXC_DELEG).value, 0);
	check_eq(T, "set misaligned_exc_deleg 1 with LOCK",
		 fwft_set(SBI_FWFT_MISALIGNED_EXC_DELEG, 1, SBI_FWFT_SET_FLAG_LOCK).error, SBI_SUCCESS);
	check_eq(T, "locked misaligned_exc_deleg: set 1 is DENIED_LOCKED",
		 fwft_set(SBI_FWFT_MISALIGNED_EXC_DELEG, 1, 0).error, SBI_ERR_DENIED_LOCKED);
	check_eq(T, "locked misaligned_exc_deleg: set 0 is DENIED_LOCKED",
		 fwft_set(SBI_FWFT_MISALIGNED_EXC_DELEG, 0, 0).error, SBI_ERR_DENIED_LOCKED);
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
	test_global();
	test_set();
	test_pte_ad();
	test_misaligned_carapace();
}
