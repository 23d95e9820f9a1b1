/* SPDX-License-Identifier: MIT */
/* CFI state isolation between VMs on one hart: ssp and senvcfg stay per VM.
 *
 * Two roles (bootarg role=):
 *  role=1 (VMs "a" and "d"): FWFT SHADOW_STACK=1, senvcfg = SSE|LPE (SSE
 *    only with bootarg lpe=0); each iteration writes a new ssp (bootarg
 *    marker, default 0xa5a5a5a0000, plus 8 * (i % 256)), spins, then
 *    requires csrr ssp and ssrdp to return it and senvcfg to be unchanged.
 *    Two such VMs with different markers and senvcfg catch a hypervisor
 *    that does not switch ssp/senvcfg with the vCPU.
 *  role=2 (VM "b", cfi=off, or VM "c", shadow stacks left off): senvcfg = 0;
 *    each iteration requires `csrr ssp` to trap with illegal instruction (2)
 *    without writing rd (never a value of VM a), ssrdp to write 0 and
 *    senvcfg to stay 0. With bootarg cfi_off=1, FWFT SHADOW_STACK must be
 *    NOT_SUPPORTED (-2), else it must read 0.
 * Bootargs: iters=N (default 20000), spin=N (busy loop per iteration,
 * default 50), gap_us=N (a pause longer than this between iterations
 * counts as "descheduled", default 150), min_gaps=N (default 0: the
 * reference run has nobody to share the hart with; under Carapace the
 * driver asks for many, to prove the loop was preempted many times).
 * Same expectations on bare QEMU and under Carapace (cause 2 for the ssp
 * read in both: bare S-mode with menvcfg.SSE=0, Carapace injects 2 for the
 * spec's virtual-instruction cause 22).
 */
#include "libguest.h"
#include "cfi.h"

#define T "cfi_isolation"
#define MARKER_A	0x00000a5a5a5a0000UL	/* low 11 bits: the iteration */
#define POISON		0x5050505050505050UL

static struct cfi_rec rec;

/* a0 = ssp, or POISON if the read trapped (the vector skips it). */
unsigned long iso_csrr_ssp(void);
unsigned long iso_ssrdp(void);
extern char iso_csrr_ssp_insn[];

__asm__(
"	.text\n"
"	.option push\n"
"	.option norvc\n"
"	.align 2\n"
"	.globl iso_csrr_ssp, iso_csrr_ssp_insn\n"
"iso_csrr_ssp:\n"
"	li	a0, " __stringify(POISON) "\n"
"iso_csrr_ssp_insn:\n"
"	csrr	a0, 0x011\n"
"	ret\n"
"	.globl iso_ssrdp\n"
"iso_ssrdp:\n"
"	li	a0, -1\n"
	SSRDP(a0)
"	ret\n"
"	.option pop\n");

struct loop_stats {
	unsigned long bad, first_iter, first_got, first_want;
	const char *first_what;
	unsigned long gaps, max_gap, ticks;
};

static void note_bad(struct loop_stats *st, unsigned long i, const char *what,
		     unsigned long got, unsigned long want)
{
	if (!st->bad++) {
		st->first_iter = i;
		st->first_what = what;
		st->first_got = got;
		st->first_want = want;
	}
}

static void spin(unsigned long n)
{
	while (n--)
		cpu_relax();
}

static void report_loop(const char *role, unsigned long iters, struct loop_stats *st)
{
	char buf[120];

	snprintf(buf, sizeof(buf), "%s: %lu iterations, no CFI state changed under us", role,
		 iters);
	if (st->bad)
		report_fail(T, "%s: %lu bad, first at iteration %lu: %s (got 0x%lx, want 0x%lx)",
			    buf, st->bad, st->first_iter, st->first_what, st->first_got,
			    st->first_want);
	else
		report_pass(T, "%s", buf);
	report_info(T, "%s: %lu us, descheduled %lu times (gap > %lu us), longest gap %lu us",
		    role, ticks_to_us(st->ticks), st->gaps, bootarg_ulong("gap_us", 150),
		    ticks_to_us(st->max_gap));
	snprintf(buf, sizeof(buf), "%s: descheduled at least min_gaps times", role);
	check_ge(T, buf, st->gaps, bootarg_ulong("min_gaps", 0));
}

/* Track pauses between iterations: each long one is a preemption. */
static void gap(struct loop_stats *st, unsigned long *prev, unsigned long limit)
{
	unsigned long now = rdtime(), d = now - *prev;

	if (d > limit)
		st->gaps++;
	if (d > st->max_gap)
		st->max_gap = d;
	*prev = now;
}

static void role_a(unsigned long iters, unsigned long spins, unsigned long limit)
{
	struct loop_stats st = { 0 };
	unsigned long marker = bootarg_ulong("marker", MARKER_A) & ~0x7ffUL;
	unsigned long bits = ENVCFG_SSE | (bootarg_ulong("lpe", 1) ? ENVCFG_LPE : 0);
	unsigned long want_env, i, start, prev;

	check_eq(T, "role 1: FWFT set shadow_stack=1",
		 fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0).error, SBI_SUCCESS);
	csr_clear(CSR_SENVCFG, ENVCFG_SSE | ENVCFG_LPE);
	csr_set(CSR_SENVCFG, bits);
	want_env = csr_read(CSR_SENVCFG);
	check_eqx(T, "role 1: senvcfg has the chosen SSE/LPE",
		  want_env & (ENVCFG_SSE | ENVCFG_LPE), bits);
	report_info(T, "role 1: ssp marker 0x%lx, senvcfg 0x%lx", marker, want_env);

	start = prev = rdtime();
	for (i = 0; i < iters; i++) {
		unsigned long v = marker + ((i & 0xff) << 3), got;

		csr_write(CSR_SSP, v);
		spin(spins);
		got = csr_read(CSR_SSP);
		if (got != v)
			note_bad(&st, i, "role 1: csrr ssp", got, v);
		got = iso_ssrdp();
		if (got != v)
			note_bad(&st, i, "role 1: ssrdp", got, v);
		got = csr_read(CSR_SENVCFG);
		if (got != want_env)
			note_bad(&st, i, "role 1: senvcfg", got, want_env);
		gap(&st, &prev, limit);
	}
	st.ticks = rdtime() - start;
	check_eq(T, "role 1: no traps in the loop", rec.count, 0);
	report_loop("role 1", iters, &st);
	check_eq(T, "role 1: FWFT shadow_stack still 1", fwft_get(SBI_FWFT_SHADOW_STACK).value, 1);
}

static void role_b(unsigned long iters, unsigned long spins, unsigned long limit)
{
	struct loop_stats st = { 0 };
	unsigned long i, start, prev;
	struct sbiret r = fwft_get(SBI_FWFT_SHADOW_STACK);

	if (bootarg_ulong("cfi_off", 0)) {
		check_eq(T, "role 2: FWFT shadow_stack is NOT_SUPPORTED (cfi=off)", r.error,
			 SBI_ERR_NOT_SUPPORTED);
	} else {
		check_eq(T, "role 2: FWFT get shadow_stack succeeds", r.error, SBI_SUCCESS);
		check_eq(T, "role 2: FWFT shadow_stack is 0", r.value, 0);
	}
	csr_write(CSR_SENVCFG, 0);
	check_eqx(T, "role 2: senvcfg is 0", csr_read(CSR_SENVCFG), 0);

	start = prev = rdtime();
	for (i = 0; i < iters; i++) {
		unsigned long got;

		cfi_rec_clear(&rec);
		got = iso_csrr_ssp();
		if (rec.count != 1)
			note_bad(&st, i, "role 2: csrr ssp trap count", rec.count, 1);
		else if (rec.scause != EXC_ILLEGAL_INST)
			note_bad(&st, i, "role 2: csrr ssp scause", rec.scause, EXC_ILLEGAL_INST);
		else if (rec.sepc != (unsigned long)iso_csrr_ssp_insn)
			note_bad(&st, i, "role 2: csrr ssp sepc", rec.sepc,
				 (unsigned long)iso_csrr_ssp_insn);
		if (got != POISON)
			note_bad(&st, i, "role 2: csrr ssp wrote rd", got, POISON);
		got = iso_ssrdp();
		if (got != 0)
			note_bad(&st, i, "role 2: ssrdp", got, 0);
		got = csr_read(CSR_SENVCFG);
		if (got != 0)
			note_bad(&st, i, "role 2: senvcfg", got, 0);
		spin(spins);
		gap(&st, &prev, limit);
	}
	st.ticks = rdtime() - start;
	report_loop("role 2", iters, &st);
}

void test_main(unsigned long hartid)
{
	unsigned long old_stvec = csr_read(CSR_STVEC);
	unsigned long role = bootarg_ulong("role", 1);
	unsigned long iters = bootarg_ulong("iters", 20000);
	unsigned long spins = bootarg_ulong("spin", 50);
	unsigned long limit = us_to_ticks(bootarg_ulong("gap_us", 150));

	(void)hartid;
	cfi_trap_install(&rec);
	if (role == 1)
		role_a(iters, spins, limit);
	else if (role == 2)
		role_b(iters, spins, limit);
	else
		report_fail(T, "bootarg role (got %lu, want 1 or 2)", role);
	cfi_trap_remove(old_stvec);
	check_eq(T, "no interrupts while the CFI vector was in place", rec.irqs, 0);
	printf("INFO: observed lp=%lu ss=%lu\n", rec.lp, rec.ss);
}
