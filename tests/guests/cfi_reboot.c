/* SPDX-License-Identifier: MIT */
/* A guest reboot resets its CFI state (issue 12 item 5).
 *
 * Boot 0: two landing-pad violations (indirect jumps to a target that is not
 * an lpad, with FWFT LANDING_PAD on), then SHADOW_STACK on and locked,
 * LANDING_PAD locked off, senvcfg.LPE and SSE set for VU; prints
 * "CFI-REBOOT boot 0: 2 violations" and asks SBI SRST for a cold reboot.
 * Boot 1: everything is as at power-on: FWFT SHADOW_STACK and LANDING_PAD
 * read 0 and are not locked (setting them works), senvcfg reads 0; it prints
 * "CFI-REBOOT boot 1 ready", waits wait_ms (the harness reads the host's
 * counters: this boot's are 0, the VM's totals still 2), and ends.
 * Needs Carapace: on bare QEMU a reboot gives no boot count to tell the two
 * boots apart (a SKIP there). Bootargs: wait_ms=N (default 2000).
 */
#include "libguest.h"
#include "cfi.h"

#define T "cfi_reboot"

static struct cfi_rec rec;

/* lp_violate(target): landing pads on (FWFT, by ecall), one jump through a5
 * to @target, whose landing-pad fault resumes at lp_back (rec.fixup),
 * landing pads off. All asm: no C runs while landing pads are enforced. */
void lp_violate(unsigned long target);
extern char lp_back[], lp_target[];

__asm__(".pushsection .text.lp_violate, \"ax\"\n"
	".option push\n"
	".option norvc\n"
	".balign 4\n"
	".globl lp_violate\n"
	"lp_violate:\n"
	"	addi	sp, sp, -16\n"
	"	sd	ra, 0(sp)\n"
	"	sd	s0, 8(sp)\n"
	"	mv	s0, a0\n"
	FWFT_SET_LP(1)
	"	mv	a5, s0\n"
	"	jalr	x0, 0(a5)\n"
	".globl lp_back\n"
	"lp_back:\n"
	FWFT_SET_LP(0)
	"	ld	ra, 0(sp)\n"
	"	ld	s0, 8(sp)\n"
	"	addi	sp, sp, 16\n"
	"	ret\n"
	".globl lp_target\n"
	"lp_target:\n"			/* not an lpad: must never run */
	"	addi	t3, t3, 1\n"
	"	j	lp_back\n"
	".option pop\n"
	".popsection\n");

static void boot0(void)
{
	unsigned long old_stvec = csr_read(CSR_STVEC);
	struct sbiret r;

	cfi_trap_install(&rec);
	for (int i = 0; i < 2; i++) {
		rec.fixup = (unsigned long)lp_back;
		lp_violate((unsigned long)lp_target);
	}
	cfi_trap_remove(old_stvec);
	check_eq(T, "boot 0: two landing-pad faults", rec.lp, 2);
	r = fwft_set(SBI_FWFT_SHADOW_STACK, 1, SBI_FWFT_SET_FLAG_LOCK);
	check_eq(T, "boot 0: SHADOW_STACK on and locked", (unsigned long)r.error, 0);
	r = fwft_set(SBI_FWFT_LANDING_PAD, 0, SBI_FWFT_SET_FLAG_LOCK);
	check_eq(T, "boot 0: LANDING_PAD locked off", (unsigned long)r.error, 0);
	csr_set(CSR_SENVCFG, ENVCFG_LPE | ENVCFG_SSE);
	check_eq(T, "boot 0: senvcfg LPE and SSE set",
		 csr_read(CSR_SENVCFG) & (ENVCFG_LPE | ENVCFG_SSE), ENVCFG_LPE | ENVCFG_SSE);
	printf("CFI-REBOOT boot 0: %lu violations\n", rec.lp);
	sbi_system_reset(SBI_SRST_TYPE_COLD_REBOOT, SBI_SRST_REASON_NONE);
	report_fail(T, "the reboot returned");
}

static void boot1(void)
{
	struct sbiret r;

	r = fwft_get(SBI_FWFT_SHADOW_STACK);
	check_eq(T, "boot 1: SHADOW_STACK reads 0", r.value, 0);
	r = fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0);
	check_eq(T, "boot 1: SHADOW_STACK not locked (set 1)", (unsigned long)r.error, 0);
	r = fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0);
	check_eq(T, "boot 1: SHADOW_STACK set 0 again", (unsigned long)r.error, 0);
	r = fwft_get(SBI_FWFT_LANDING_PAD);
	check_eq(T, "boot 1: LANDING_PAD reads 0", r.value, 0);
	r = fwft_set(SBI_FWFT_LANDING_PAD, 0, 0);
	check_eq(T, "boot 1: LANDING_PAD not locked (set 0)", (unsigned long)r.error, 0);
	check_eq(T, "boot 1: senvcfg LPE and SSE clear",
		 csr_read(CSR_SENVCFG) & (ENVCFG_LPE | ENVCFG_SSE), 0);
	printf("CFI-REBOOT boot 1 ready\n");
	udelay(bootarg_ulong("wait_ms", 2000) * 1000);
	printf("INFO: observed lp=0 ss=0\n");
}

void test_main(unsigned long self)
{
	struct sbiret r;

	(void)self;
	if (!env.carapace) {
		report_skip(T, "needs Carapace (a boot count to tell the boots apart)");
		return;
	}
	r = fwft_get(SBI_FWFT_LANDING_PAD);
	if (r.error || fwft_get(SBI_FWFT_SHADOW_STACK).error) {
		report_skip(T, "no CFI for this guest (FWFT error %ld)", r.error);
		return;
	}
	if (env.boot_count == 0)
		boot0();
	else
		boot1();
}
