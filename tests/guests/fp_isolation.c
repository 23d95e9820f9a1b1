/* SPDX-License-Identifier: MIT */
/* FP state isolation between VMs on one hart: f0-f31 and fcsr stay per VM.
 *
 * Each iteration fills every f register with a value of its own (bootarg
 * marker, the register number and the iteration) and fcsr with frm/fflags
 * of the VM's choosing, spins so that the hypervisor preempts the loop and
 * runs another VM doing the same with another marker, then reads all of it
 * back. A hypervisor that does not switch the FP state with the vCPU (or
 * saves it with FS off, or restores another vCPU's) shows another VM's
 * value or a zero. Bootargs: marker=M (default 0x0f0f0000), iters=N (default
 * 20000), spin=N (default 50), gap_us=N (a pause longer than this counts as
 * "descheduled", default 150), min_gaps=N (default 0; under Carapace the
 * driver asks for many, to prove the loop was preempted).
 */
#include "libguest.h"

#define T "fp_isolation"

/* fp_fill(base): f<n> = base + n; fp_check(base): the first n whose f<n> is
 * not base + n, or 32 when all are. */
void fp_fill(unsigned long base);
unsigned long fp_check(unsigned long base);

#define FP_REGS "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31"

__asm__(
"	.text\n"
"	.globl fp_fill\n"
"fp_fill:\n"
"	.irp n, " FP_REGS "\n"
"	addi	t0, a0, \\n\n"
"	fmv.d.x	f\\n, t0\n"
"	.endr\n"
"	ret\n"
"	.globl fp_check\n"
"fp_check:\n"
"	.irp n, " FP_REGS "\n"
"	fmv.x.d	t0, f\\n\n"
"	addi	t1, a0, \\n\n"
"	li	a1, \\n\n"
"	bne	t0, t1, 1f\n"
"	.endr\n"
"	li	a1, 32\n"
"1:	mv	a0, a1\n"
"	ret\n");

struct loop_stats {
	unsigned long bad, first_iter, first_reg, gaps, max_gap;
	unsigned long first_got_fcsr, first_want_fcsr;
};

void test_main(unsigned long hartid)
{
	unsigned long marker = bootarg_ulong("marker", 0x0f0f0000UL);
	unsigned long iters = bootarg_ulong("iters", 20000);
	unsigned long spins = bootarg_ulong("spin", 50);
	unsigned long limit = us_to_ticks(bootarg_ulong("gap_us", 150));
	/* frm (bits 7:5) and fflags (4:0): a value of this VM's own */
	unsigned long fcsr = (marker >> 24) & 0xff;
	struct loop_stats st = { 0 };
	unsigned long i, prev, start;
	char buf[120];

	(void)hartid;
	if (((fcsr >> 5) & 7) >= 5)
		fcsr &= 0x9f;	/* frm 5 and 6 are reserved, 7 is dynamic: keep 0..4 */
	start = prev = rdtime();
	for (i = 0; i < iters; i++) {
		unsigned long base = marker + ((i & 0xffff) << 8), reg, got;

		fp_fill(base);
		__asm__ volatile("fscsr %0" : : "r"(fcsr));
		for (unsigned long n = spins; n; n--)
			cpu_relax();
		reg = fp_check(base);
		__asm__ volatile("frcsr %0" : "=r"(got));
		if (reg != 32 || got != fcsr) {
			if (!st.bad++) {
				st.first_iter = i;
				st.first_reg = reg;
				st.first_got_fcsr = got;
				st.first_want_fcsr = fcsr;
			}
		}
		{
			unsigned long now = rdtime(), d = now - prev;

			if (d > limit)
				st.gaps++;
			if (d > st.max_gap)
				st.max_gap = d;
			prev = now;
		}
	}
	snprintf(buf, sizeof(buf), "%lu iterations, no FP register or fcsr changed under us",
		 iters);
	if (st.bad)
		report_fail(T, "%s: %lu bad, first at iteration %lu: f%lu (32: all f equal), "
			    "fcsr 0x%lx want 0x%lx", buf, st.bad, st.first_iter, st.first_reg,
			    st.first_got_fcsr, st.first_want_fcsr);
	else
		report_pass(T, "%s", buf);
	report_info(T, "marker 0x%lx: %lu us, descheduled %lu times, longest gap %lu us", marker,
		    ticks_to_us(rdtime() - start), st.gaps, ticks_to_us(st.max_gap));
	check_ge(T, "descheduled at least min_gaps times", st.gaps, bootarg_ulong("min_gaps", 0));
}
