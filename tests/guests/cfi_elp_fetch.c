/* SPDX-License-Identifier: MIT */
/* ELP across a fetch fault the guest takes itself (issue 12 item 1).
 *
 * With landing pads on, an indirect jump (through a5, so ELP becomes
 * expected) goes to a target on a page the guest's own page table maps as a
 * shadow-stack page (xwr=010, valid with FWFT SHADOW_STACK on): the fetch
 * there takes an instruction access fault (Zicfiss: instruction fetches from
 * shadow-stack pages fault). The trap is taken with the ELP of the jump, so
 * the handler must find sstatus.SPELP = 1 (Priv spec, Zicfilp: the trap saves
 * ELP in xPELP): if it were 0, a handler that fixes the page and returns
 * would run the non-lpad target without the landing-pad check.
 * Control case: the same jump through x7 (a software-guarded branch does not
 * set ELP) must fault with SPELP = 0.
 * On bare QEMU + OpenSBI the access fault goes to M-mode and OpenSBI hands it
 * to S with SPELP from MPELP; under Carapace it must arrive the same way.
 */
#include "libguest.h"
#include "cfi.h"
#include "mmu.h"

#define T "cfi_elp_fetch"

static struct cfi_rec rec;

/* elp_jump(target, via_x7): landing pads on (FWFT, by ecall), one indirect
 * jump to @target, whose fault resumes at elp_jump_back (rec.fixup), landing
 * pads off. All asm: no C runs while landing pads are enforced. */
void elp_jump(unsigned long target, unsigned long via_x7);
extern char elp_jump_back[], elp_page[];

__asm__(".pushsection .text.elp_jump, \"ax\"\n"
	".option push\n"
	".option norvc\n"
	".balign 4\n"
	".globl elp_jump\n"
	"elp_jump:\n"
	"	addi	sp, sp, -32\n"
	"	sd	ra, 0(sp)\n"
	"	sd	s0, 8(sp)\n"
	"	sd	s1, 16(sp)\n"
	"	mv	s0, a0\n"
	"	mv	s1, a1\n"
	FWFT_SET_LP(1)
	"	mv	a5, s0\n"
	"	bnez	s1, 1f\n"
	"	jalr	x0, 0(a5)\n"	/* ELP = expected */
	"	j	elp_jump_back\n"
	"1:	mv	t2, s0\n"
	"	jalr	x0, 0(t2)\n"	/* x7: ELP stays clear */
	".globl elp_jump_back\n"
	"elp_jump_back:\n"
	FWFT_SET_LP(0)
	"	ld	ra, 0(sp)\n"
	"	ld	s0, 8(sp)\n"
	"	ld	s1, 16(sp)\n"
	"	addi	sp, sp, 32\n"
	"	ret\n"
	".option pop\n"
	".popsection\n"
	/* the target, alone on its page: not an lpad */
	".pushsection .text.elp_page, \"ax\"\n"
	".balign 4096\n"
	".globl elp_page\n"
	"elp_page:\n"
	"	addi	t3, t3, 1\n"
	"	j	elp_jump_back\n"
	".balign 4096\n"
	".popsection\n");

/* Up to TRIES runs of a case that wants SPELP = 1: on QEMU 10.0.2 a host
 * interrupt taken at the vector, before it reads sstatus, overwrites the
 * guest's SPELP with the current ELP (docs/cfi.md §7, Q4; issue 12 item 3).
 * A delivery that loses ELP itself loses it every time. */
#define TRIES	5

static void one_case(const char *name, unsigned long via_x7, unsigned long want_spelp)
{
	unsigned int tries = 0;

	do {
		cfi_rec_clear(&rec);
		rec.fixup = (unsigned long)elp_jump_back;
		elp_jump((unsigned long)elp_page, via_x7);
		tries++;
	} while (want_spelp && !(rec.sstatus & SR_SPELP) && tries < TRIES);
	report_info(T, "%s: %lu exception(s), scause %lu, stval 0x%lx, sepc 0x%lx, SPELP %lu "
		    "(run %u)", name, rec.count, rec.scause, rec.stval, rec.sepc,
		    (rec.sstatus & SR_SPELP) ? 1UL : 0UL, tries);
	check_eq(T, "one exception", rec.count, 1);
	check_eq(T, "an instruction access fault (fetch from a shadow-stack page)", rec.scause,
		 EXC_INST_ACCESS);
	check_eq(T, "at the target", rec.sepc, (unsigned long)elp_page);
	check_eq(T, want_spelp ? "sstatus.SPELP = 1: the jump's ELP reached the handler" :
				 "sstatus.SPELP = 0 after a jump through x7",
		 (rec.sstatus & SR_SPELP) ? 1UL : 0UL, want_spelp);
}

void test_main(unsigned long self)
{
	unsigned long old_stvec = csr_read(CSR_STVEC), lp, ss;
	struct sbiret r;

	(void)self;
	r = fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0);
	if (r.error) {
		report_skip(T, "no shadow stacks for this guest (FWFT error %ld)", r.error);
		return;
	}
	mmu_init();
	if (mmu_map((unsigned long)elp_page, PAGE_SIZE, MMU_SS)) {
		report_fail(T, "cannot map the target page as a shadow-stack page");
		return;
	}
	mmu_enable();
	r = fwft_set(SBI_FWFT_LANDING_PAD, 1, 0);
	fwft_set(SBI_FWFT_LANDING_PAD, 0, 0);
	if (r.error) {
		mmu_disable();
		report_skip(T, "no landing pads for this guest (FWFT error %ld)", r.error);
		return;
	}
	cfi_trap_install(&rec);
	one_case("jalr through a5", 0, 1);
	lp = rec.lp;
	ss = rec.ss;
	one_case("jalr through x7", 1, 0);
	/* no software-check exception: the target never ran */
	printf("INFO: observed lp=%lu ss=%lu\n", lp + rec.lp, ss + rec.ss);
	cfi_trap_remove(old_stvec);
	mmu_disable();
	fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0);
}
