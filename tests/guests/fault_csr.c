/* SPDX-License-Identifier: MIT */
/* CSRs and instructions a guest may not use must trap to its own stvec with
 * scause 2 (illegal instruction), sepc at the instruction and SPP = S.
 *
 * Mode-dependent: under Carapace the guest runs in VS-mode, so hypervisor
 * CSRs (hstatus, hgatp), VS CSRs (vsstatus) and hypervisor instructions
 * (hfence.gvma, hlv.d) must raise illegal instruction in the guest. On bare
 * QEMU the payload runs in HS-mode where those are legal: it checks that
 * they do NOT trap. M-mode CSRs trap with cause 2 in both modes.
 */
#include "libguest.h"

#define T "fault_csr"

/* Run one instruction at a known pc; the handler skips it if it traps. */
#define TRY(name, insn)							\
static unsigned long name(unsigned long *pc)				\
{									\
	unsigned long v = 0;						\
	__asm__ volatile(".option push\n\t"				\
			 ".option norvc\n\t"				\
			 ".option arch, +h\n"				\
			 "1:\t" insn "\n\t"				\
			 ".option pop\n\t"				\
			 "lla %0, 1b"					\
			 : "=&r"(*pc), "+&r"(v) :: "memory");		\
	return v;							\
}

TRY(read_mstatus, "csrr %1, mstatus")
TRY(write_mscratch, "csrw mscratch, %1")
TRY(read_mhartid, "csrr %1, mhartid")
TRY(read_hstatus, "csrr %1, hstatus")
TRY(read_hgatp, "csrr %1, hgatp")
TRY(read_vsstatus, "csrr %1, vsstatus")
TRY(do_hfence_gvma, "hfence.gvma zero, zero")
TRY(do_hlv_d, "hlv.d %1, (sp)")

struct attempt {
	const char *name;
	unsigned long (*fn)(unsigned long *pc);
	bool hyp_only;	/* legal in HS-mode (bare), illegal in VS-mode */
};

static const struct attempt attempts[] = {
	{ "csrr mstatus", read_mstatus, false },
	{ "csrw mscratch", write_mscratch, false },
	{ "csrr mhartid", read_mhartid, false },
	{ "csrr hstatus", read_hstatus, true },
	{ "csrr hgatp", read_hgatp, true },
	{ "csrr vsstatus", read_vsstatus, true },
	{ "hfence.gvma", do_hfence_gvma, true },
	{ "hlv.d", do_hlv_d, true },
};

static void expect_illegal(const char *name, unsigned long pc,
			   unsigned long n, const struct trap_record *tr)
{
	char what[80];

	snprintf(what, sizeof(what), "%s traps once", name);
	if (!check_eq(T, what, n, 1))
		return;
	snprintf(what, sizeof(what), "%s: scause is illegal instruction", name);
	check_eq(T, what, tr->scause, EXC_ILLEGAL_INST);
	snprintf(what, sizeof(what), "%s: sepc is the instruction", name);
	check_eqx(T, what, tr->sepc, pc);
	snprintf(what, sizeof(what), "%s: sstatus.SPP is S", name);
	check_eq(T, what, !!(tr->sstatus & SR_SPP), 1);
	/* The spec allows stval = 0 or the faulting instruction's bits. */
	if (tr->stval == 0 || tr->stval == tr->insn)
		report_pass(T, "%s: stval is 0 or the instruction", name);
	else
		report_fail(T, "%s: stval (got 0x%lx, want 0 or 0x%lx)", name,
			    tr->stval, tr->insn);
}

void test_main(unsigned long hartid)
{
	unsigned long i;

	(void)hartid;
	for (i = 0; i < ARRAY_SIZE(attempts); i++) {
		const struct attempt *a = &attempts[i];
		struct trap_record tr;
		unsigned long pc, n, v;
		char what[80];

		trap_arm();
		v = a->fn(&pc);
		n = trap_disarm(&tr);
		if (a->hyp_only && !env.carapace) {
			snprintf(what, sizeof(what), "%s is legal in HS-mode (bare)",
				 a->name);
			check_eq(T, what, n, 0);
			report_info(T, "%s = 0x%lx", a->name, v);
			continue;
		}
		expect_illegal(a->name, pc, n, &tr);
	}
	check_eq(T, "SBI still answers after the faults",
		 SBI_CALL0(SBI_EXT_BASE, SBI_BASE_GET_SPEC_VERSION).error,
		 SBI_SUCCESS);
}
