/* SPDX-License-Identifier: MIT */
/* A shadow-stack violation by the guest kernel's own landing-pad handler,
 * while the hypervisor re-delivers that landing-pad fault (the "window" of
 * hyp/cfi/lp_redeliver.c, on CPUs whose sret loses SPELP: QEMU 10.0.2).
 *
 * User mode (senvcfg.LPE=1) jumps to a target without an lpad. The kernel's
 * vector, entered for that fault (cause 18, tval 2), makes a sspopchk
 * mismatch (cause 18, tval 3: delegated to it inside the window) and, in the
 * vector entered for that, an ebreak before it returns. The hypervisor must
 * still see the shadow-stack violation: under strict it stops the VM (a
 * violation in VS), under trap it counts it (lp 1, ss 1). Had the ebreak gone
 * to the guest directly, it would have overwritten vscause before the window
 * closed and the violation would have gone unseen.
 *
 * Prints "first violation pc 0x..." (the sspopchk) before the run; under
 * trap it ends with DONE after the ebreak comes back to its handler.
 * Sv39 on: the shadow stack on a shadow-stack page, the user code on a U
 * page. Runs only under Carapace. */
#include "libguest.h"
#include "cfi.h"
#include "mmu.h"

#define T "cfi_window_ss"

void win_vector(void);
void win_user(void);
void win_popchk(void);
unsigned long win_seen[4];	/* [0] lp faults, [1] ss faults, [2] breakpoints, [3] other */
static unsigned long ss_area[PAGE_SIZE / 8] __attribute__((aligned(PAGE_SIZE)));
static unsigned long ustack[256] __attribute__((aligned(16)));

__asm__(".text\n"
	".align 2\n"
	".globl win_vector\n"
	"win_vector:\n"
	"	csrr t0, scause\n"
	"	li t1, 18\n"
	"	bne t0, t1, 3f\n"
	"	csrr t0, stval\n"
	"	li t1, 2\n"
	"	bne t0, t1, 2f\n"
	/* the landing-pad fault: count it, then break the shadow stack */
	"	la t0, win_seen\n"
	"	ld t1, 0(t0)\n"
	"	addi t1, t1, 1\n"
	"	sd t1, 0(t0)\n"
	"	li ra, 1\n"
	SSPUSH_RA
	"	li t0, 2\n"
	"	j win_popchk\n"	/* a translation block starts there (Q3) */
	".globl win_popchk\n"
	"win_popchk:\n"
	SSPOPCHK_T0
	"	j win_done\n"
	/* the shadow-stack fault, inside the handler: another trap first */
	"2:	la t0, win_seen\n"
	"	ld t1, 8(t0)\n"
	"	addi t1, t1, 1\n"
	"	sd t1, 8(t0)\n"
	"	ebreak\n"
	"	j win_done\n"
	"3:	li t1, 3\n"
	"	bne t0, t1, 4f\n"
	"	la t0, win_seen\n"
	"	ld t1, 16(t0)\n"
	"	addi t1, t1, 1\n"
	"	sd t1, 16(t0)\n"
	"	j win_done\n"
	"4:	la t0, win_seen\n"
	"	ld t1, 24(t0)\n"
	"	addi t1, t1, 1\n"
	"	sd t1, 24(t0)\n"
	"win_done:\n"
	"	j win_done_c\n"
	/* user code on a page of its own (mapped U, so not executable in S) */
	".pushsection .text.win_user, \"ax\"\n"
	".balign 4096\n"
	".globl win_user\n"
	"win_user:\n"
	"	la a5, 5f\n"
	"	jalr x0, 0(a5)\n"	/* a5: expects a landing pad */
	".align 2\n"
	"5:	j 5b\n"
	".balign 4096\n"
	".popsection\n");

void win_done_c(void);
void __attribute__((noreturn)) win_done_c(void)
{
	printf("INFO: observed lp=%lu ss=%lu\n", win_seen[0], win_seen[1]);
	check_eq(T, "one landing-pad fault reached the handler", win_seen[0], 1);
	check_eq(T, "the shadow-stack fault reached the handler", win_seen[1], 1);
	check_eq(T, "the ebreak reached the handler", win_seen[2], 1);
	check_eq(T, "no other trap", win_seen[3], 0);
	report_done();
}

void test_main(unsigned long hartid)
{
	struct sbiret r;

	(void)hartid;
	r = fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0);
	check_eq(T, "FWFT SHADOW_STACK on", r.error, 0);
	/* Sv39: a shadow-stack page (the spec faults SS accesses with satp
	 * Bare; QEMU 10.0.2 lets them through, Q7) and the user page */
	mmu_init();
	if (mmu_map((unsigned long)ss_area, PAGE_SIZE, MMU_SS) ||
	    mmu_map((unsigned long)win_user, PAGE_SIZE, MMU_RX | MMU_U)) {
		report_fail(T, "cannot build the page tables");
		report_done();
	}
	mmu_enable();
	csr_write(CSR_SSP, (unsigned long)&ss_area[PAGE_SIZE / 8]);
	csr_set(CSR_SENVCFG, ENVCFG_LPE);
	check_eq(T, "senvcfg.LPE is writable", !!(csr_read(CSR_SENVCFG) & ENVCFG_LPE), 1);
	csr_clear(sstatus, SR_SIE);
	csr_write(stvec, (unsigned long)win_vector);
	printf("first violation pc 0x%lx\n", (unsigned long)win_popchk);
	/* to U at win_user, on a stack of its own */
	csr_clear(sstatus, SR_SPP);
	csr_write(sepc, (unsigned long)win_user);
	__asm__ volatile("mv sp, %0\n\tsret" :: "r"(&ustack[256]) : "memory");
	__builtin_unreachable();
}
