/* SPDX-License-Identifier: MIT */
/* The checks CFI payloads make of the exceptions cfi_trap_vector recorded:
 * one PASS or FAIL line per property, each named "<what>: ...". */
#include "libguest.h"
#include "cfi.h"

bool cfi_expect_traps(const char *test, const struct cfi_rec *rec, const char *what,
		      unsigned long n)
{
	char buf[120];

	snprintf(buf, sizeof(buf), "%s: %s", what, n ? "traps once" : "no trap");
	if (check_eq(test, buf, rec->count, n))
		return true;
	report_info(test, "%s: last trap scause %lu stval 0x%lx sepc 0x%lx", what,
		    rec->scause, rec->stval, rec->sepc);
	return false;
}

static void expect_from(const char *test, const struct cfi_rec *rec, const char *what,
			bool from_s)
{
	char buf[120];

	snprintf(buf, sizeof(buf), "%s: from %s", what, from_s ? "S (SPP=1)" : "U (SPP=0)");
	check_eq(test, buf, !!(rec->sstatus & SR_SPP), from_s);
}

void cfi_expect_fault(const char *test, const struct cfi_rec *rec, const char *what,
		      unsigned long cause, unsigned long pc, unsigned long tval, bool from_s)
{
	char buf[120];

	if (!cfi_expect_traps(test, rec, what, 1))
		return;
	snprintf(buf, sizeof(buf), "%s: scause %lu", what, cause);
	check_eq(test, buf, rec->scause, cause);
	if (pc) {
		snprintf(buf, sizeof(buf), "%s: sepc is the instruction", what);
		check_eqx(test, buf, rec->sepc, pc);
	}
	snprintf(buf, sizeof(buf), "%s: stval 0x%lx", what, tval);
	check_eqx(test, buf, rec->stval, tval);
	expect_from(test, rec, what, from_s);
}

void cfi_expect_illegal(const char *test, const struct cfi_rec *rec, const char *what,
			unsigned long pc, uint32_t insn, bool from_s)
{
	char buf[120];

	if (!cfi_expect_traps(test, rec, what, 1))
		return;
	snprintf(buf, sizeof(buf), "%s: illegal instruction (2)", what);
	check_eq(test, buf, rec->scause, EXC_ILLEGAL_INST);
	snprintf(buf, sizeof(buf), "%s: sepc is the instruction", what);
	check_eqx(test, buf, rec->sepc, pc);
	snprintf(buf, sizeof(buf), "%s: stval is 0 or the instruction", what);
	if (rec->stval == 0 || rec->stval == insn)
		report_pass(test, "%s", buf);
	else
		report_fail(test, "%s (got 0x%lx, want 0 or 0x%x)", buf, rec->stval, insn);
	expect_from(test, rec, what, from_s);
}
