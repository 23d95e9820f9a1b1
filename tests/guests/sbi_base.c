/* SPDX-License-Identifier: MIT */
/* SBI BASE: every function, extension probes, unknown EID/FID errors.
 *
 * Mode-dependent (decided by /chosen carapace,boot-count):
 *  - impl id: Carapace 0x43415250 ("CARP"); bare OpenSBI 1 (OpenSBI).
 *  - impl version: Carapace CARAPACE_SBI_IMPL_VERSION; bare only printed.
 *  - FWFT, SUSP and STA probes: Carapace must implement them; bare only printed.
 *  - spec version: Carapace exactly 3.0 (OpenSBI 1.6 says 2.0).
 *  - Carapace: every extension it does not implement (docs/sbi.md: the
 *    legacy EIDs 0x00-0x08, PMU, CPPC, NACL, SSE, MPXY; DBTR is sbi_dbtr.c's)
 *    probes 0 and its function 0 gives NOT_SUPPORTED (bare OpenSBI has
 *    most of them, so this is not asked there).
 * Both: spec version >= 2.0; BASE, TIME, IPI, RFENCE, HSM, SRST, DBCN probe
 * non-zero; an unassigned EID, an unused vendor EID and the first and last
 * experimental EIDs (0x08000000-0x08FFFFFF: neither Carapace nor OpenSBI
 * 1.6 has one) probe 0 and calling them gives NOT_SUPPORTED.
 */
#include <abi/sbi_sta.h>
#include "libguest.h"

#define T "base"
#define UNKNOWN_EID	0x12345678UL	/* not assigned by the SBI spec */
#define VENDOR_EID	0x09ABCDEFUL	/* vendor range, nobody's */
#define EXPERIMENTAL_FIRST	0x08000000UL	/* experimental range, none used */
#define EXPERIMENTAL_LAST	0x08FFFFFFUL

static const struct {
	unsigned long eid;
	const char *name;
} required[] = {
	{ SBI_EXT_BASE, "BASE" },	{ SBI_EXT_TIME, "TIME" },
	{ SBI_EXT_IPI, "IPI" },		{ SBI_EXT_RFENCE, "RFENCE" },
	{ SBI_EXT_HSM, "HSM" },		{ SBI_EXT_SRST, "SRST" },
	{ SBI_EXT_DBCN, "DBCN" },
};

static void test_versions(void)
{
	struct sbiret r = SBI_CALL0(SBI_EXT_BASE, SBI_BASE_GET_SPEC_VERSION);
	char what[64];

	check_eq(T, "get_spec_version error", r.error, SBI_SUCCESS);
	report_info(T, "spec version %lu.%lu", (r.value >> 24) & 0x7f,
		    r.value & 0xffffff);
	check_eq(T, "spec version bit 31 is 0", (unsigned long)r.value >> 31, 0);
	check_ge(T, "spec version >= 2.0", r.value, SBI_SPEC_VERSION(2, 0));
	if (env.carapace)
		check_eqx(T, "spec version is 3.0", r.value, SBI_SPEC_VERSION(3, 0));

	r = SBI_CALL0(SBI_EXT_BASE, SBI_BASE_GET_IMPL_ID);
	check_eq(T, "get_impl_id error", r.error, SBI_SUCCESS);
	snprintf(what, sizeof(what), "impl id is %s",
		 env.carapace ? "Carapace" : "OpenSBI");
	check_eqx(T, what, r.value, env.carapace ? CARAPACE_SBI_IMPL_ID : 1);

	r = SBI_CALL0(SBI_EXT_BASE, SBI_BASE_GET_IMPL_VERSION);
	check_eq(T, "get_impl_version error", r.error, SBI_SUCCESS);
	report_info(T, "impl version 0x%lx", r.value);
	if (env.carapace)
		check_eqx(T, "impl version is Carapace's", r.value,
			  CARAPACE_SBI_IMPL_VERSION);
}

static const struct {
	unsigned long eid;
	const char *name;
} absent[] = {
	{ 0x00, "legacy set_timer" },		{ 0x01, "legacy console_putchar" },
	{ 0x02, "legacy console_getchar" },	{ 0x03, "legacy clear_ipi" },
	{ 0x04, "legacy send_ipi" },		{ 0x05, "legacy remote_fence_i" },
	{ 0x06, "legacy remote_sfence_vma" },	{ 0x07, "legacy remote_sfence_vma_asid" },
	{ 0x08, "legacy shutdown" },
	{ 0x43505043, "CPPC" },
	{ 0x4E41434C, "NACL" },
	{ 0x535345, "SSE" },
	{ 0x4D505859, "MPXY" },
};

static void test_absent(void)
{
	char what[64];
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(absent); i++) {
		snprintf(what, sizeof(what), "probe %s is 0", absent[i].name);
		check_eq(T, what, sbi_probe(absent[i].eid).value, 0);
		snprintf(what, sizeof(what), "call %s is NOT_SUPPORTED", absent[i].name);
		check_eq(T, what, SBI_CALL0(absent[i].eid, 0).error, SBI_ERR_NOT_SUPPORTED);
	}
}

static void test_probes(void)
{
	char what[64];
	struct sbiret r;
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(required); i++) {
		r = sbi_probe(required[i].eid);
		snprintf(what, sizeof(what), "probe %s error", required[i].name);
		check_eq(T, what, r.error, SBI_SUCCESS);
		snprintf(what, sizeof(what), "probe %s is available",
			 required[i].name);
		check_ne(T, what, r.value, 0);
	}

	r = sbi_probe(SBI_EXT_FWFT);
	check_eq(T, "probe FWFT error", r.error, SBI_SUCCESS);
	if (env.carapace)
		check_ne(T, "probe FWFT is available", r.value, 0);
	else
		report_info(T, "probe FWFT = %ld", r.value);

	r = sbi_probe(SBI_EXT_SUSP);
	check_eq(T, "probe SUSP error", r.error, SBI_SUCCESS);
	if (env.carapace)
		check_ne(T, "probe SUSP is available", r.value, 0);
	else
		report_info(T, "probe SUSP = %ld", r.value);

	r = sbi_probe(SBI_EXT_STA);
	check_eq(T, "probe STA error", r.error, SBI_SUCCESS);
	if (env.carapace)
		check_ne(T, "probe STA is available", r.value, 0);
	else
		report_info(T, "probe STA = %ld", r.value);

	r = sbi_probe(UNKNOWN_EID);
	check_eq(T, "probe unassigned EID error", r.error, SBI_SUCCESS);
	check_eq(T, "probe unassigned EID is 0", r.value, 0);
	r = sbi_probe(VENDOR_EID);
	check_eq(T, "probe unused vendor EID is 0", r.value, 0);
	r = sbi_probe(EXPERIMENTAL_FIRST);
	check_eq(T, "probe experimental EID 0x08000000 error", r.error, SBI_SUCCESS);
	check_eq(T, "probe experimental EID 0x08000000 is 0", r.value, 0);
	r = sbi_probe(EXPERIMENTAL_LAST);
	check_eq(T, "probe experimental EID 0x08ffffff is 0", r.value, 0);
}

static void test_machine_ids(void)
{
	static const char *const names[] = { "mvendorid", "marchid", "mimpid" };
	char what[64];
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		struct sbiret r = SBI_CALL0(SBI_EXT_BASE,
					    SBI_BASE_GET_MVENDORID + i);

		snprintf(what, sizeof(what), "get_%s error", names[i]);
		check_eq(T, what, r.error, SBI_SUCCESS);
		report_info(T, "%s = 0x%lx", names[i], r.value);
	}
}

static void test_unknown(void)
{
	struct sbiret r;

	r = SBI_CALL0(SBI_EXT_BASE, 7);
	check_eq(T, "unknown BASE function 7", r.error, SBI_ERR_NOT_SUPPORTED);
	r = SBI_CALL0(SBI_EXT_BASE, 0x100);
	check_eq(T, "unknown BASE function 0x100", r.error,
		 SBI_ERR_NOT_SUPPORTED);
	r = SBI_CALL0(UNKNOWN_EID, 0);
	check_eq(T, "call to unassigned EID", r.error, SBI_ERR_NOT_SUPPORTED);
	r = SBI_CALL0(VENDOR_EID, 0);
	check_eq(T, "call to unused vendor EID", r.error,
		 SBI_ERR_NOT_SUPPORTED);
	r = SBI_CALL0(EXPERIMENTAL_FIRST, 0);
	check_eq(T, "call to experimental EID 0x08000000", r.error,
		 SBI_ERR_NOT_SUPPORTED);
	r = SBI_CALL0(EXPERIMENTAL_LAST, 1);
	check_eq(T, "call to experimental EID 0x08ffffff", r.error,
		 SBI_ERR_NOT_SUPPORTED);
}

void test_main(unsigned long hartid)
{
	(void)hartid;
	test_versions();
	test_probes();
	if (env.carapace)
		test_absent();
	test_machine_ids();
	test_unknown();
}
