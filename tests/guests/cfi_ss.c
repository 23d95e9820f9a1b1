/* SPDX-License-Identifier: MIT */
/* Zicfiss in the payload's own mode: FWFT SHADOW_STACK, ssp, SS instructions, SS-page faults.
 *
 * The payload runs in VS-mode under Carapace (henvcfg.SSE) and in S-mode on
 * bare QEMU (menvcfg.SSE, set by OpenSBI).
 * Expected behaviour, same in both modes unless noted (Priv/Unpriv spec CFI
 * chapters, docs/cfi.md §9.2, §9.4-§9.6 and §7):
 *  SHADOW_STACK=0 (boot): sspush/sspopchk are no-ops (no trap, even on a
 *    mismatch), ssrdp writes 0, senvcfg.SSE reads 0, csrr/csrw ssp and
 *    ssamoswap.d raise illegal instruction (2). Carapace: the spec's VS
 *    cause is 22 (virtual instruction) and the hypervisor injects 2; bare
 *    S-mode with menvcfg.SSE=0 gets 2 directly.
 *  SHADOW_STACK=1, Sv39 on, ssp at the top of an SS page (xwr=010, A, D):
 *    ssp reads back; ssrdp returns ssp; sspush/sspopchk (x1 and x5) move ssp
 *    by 8 and store/check the value, which an ordinary load can read; a
 *    sspopchk mismatch raises 18 with tval 3 and leaves ssp unchanged;
 *    ssamoswap.d on the SS page swaps; an ordinary store or AMO to the SS
 *    page raises 7; an SS instruction on a read-only page raises 15 (store
 *    page fault) with stval = the address; sspush/sspopchk with ssp not
 *    8-byte aligned raise 7 (if ssp bit 2 is writable; the spec also allows
 *    it to be read-only 0, then the check is reported as such).
 *  QEMU 10.0.2 quirks (expected here, both modes):
 *   Q3: the sepc of a sspopchk mismatch is the start of the translation
 *       block, so it is printed, not checked (resume is by fixup address).
 *   Q7: SS instructions on an ordinary RW page, and with satp Bare, succeed
 *       (spec: 7). With bootarg q7=1 (the default: QEMU 10.0.2) the checks
 *       expect success and say so in their names; q7=0 (the conformant tier,
 *       docs/cfi.md §7.1) expects the spec's store/AMO access fault.
 *  Carapace policy: under `trap` the hypervisor counts each cause 18 before
 *  injecting it (the test prints "INFO: observed lp=N ss=M" to compare);
 *  under `delegate` the guest gets them straight from the hardware; under
 *  `strict` the first sspopchk mismatch (pc printed before it as "first
 *  violation pc") stops the VM. A TB starts at that sspopchk, so even with
 *  Q3 the reported pc is the instruction.
 */
#include "libguest.h"
#include "cfi.h"
#include "mmu.h"

#define T "cfi_ss"
#define POISON	0xdeadbeefcafef00dUL
#define VAL_A	0x1111222233334444UL
#define VAL_B	0x5555666677778888UL
#define VAL_C	0x0123456789abcdefUL

enum { PG_SS, PG_RO, PG_RW, NR_PAGES };

static char pages[NR_PAGES][PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));
static struct cfi_rec rec;
static unsigned long lp_seen, ss_seen;

/* Asm probes; every *_insn label marks the instruction that may trap. */
void ss_push_ra(unsigned long v);
void ss_popchk_ra(unsigned long v);
void ss_push_t0(unsigned long v);
void ss_popchk_t0(unsigned long v);
unsigned long ss_rdp(void);
unsigned long ss_swap(unsigned long addr, unsigned long v);
unsigned long ss_csr_read(void);
void ss_csr_write(unsigned long v);
void plain_store(unsigned long addr, unsigned long v);
unsigned long plain_amoswap(unsigned long addr, unsigned long v);
void call_addr(unsigned long addr);
extern char ss_push_ra_insn[], ss_popchk_ra_insn[], ss_popchk_ra_done[];
extern char ss_push_t0_insn[], ss_popchk_t0_insn[], ss_popchk_t0_done[];
extern char ss_swap_insn[], ss_csr_read_insn[], ss_csr_write_insn[];
extern char plain_store_insn[], plain_amoswap_insn[], call_addr_done[];

__asm__(
"	.text\n"
"	.option push\n"
"	.option norvc\n"
"	.align 2\n"
"	.globl ss_push_ra, ss_push_ra_insn\n"
"ss_push_ra:\n"
"	mv	t1, ra\n"
"	mv	ra, a0\n"
"ss_push_ra_insn:\n"
	SSPUSH_RA
"	mv	ra, t1\n"
"	ret\n"
"	.globl ss_popchk_ra, ss_popchk_ra_insn, ss_popchk_ra_done\n"
"ss_popchk_ra:\n"
"	mv	t1, ra\n"
"	mv	ra, a0\n"
"	j	ss_popchk_ra_insn\n"	/* a TB starts at the probe (QEMU Q3) */
"ss_popchk_ra_insn:\n"
	SSPOPCHK_RA
"ss_popchk_ra_done:\n"
"	mv	ra, t1\n"
"	ret\n"
"	.globl ss_push_t0, ss_push_t0_insn\n"
"ss_push_t0:\n"
"	mv	t0, a0\n"
"ss_push_t0_insn:\n"
	SSPUSH_T0
"	ret\n"
"	.globl ss_popchk_t0, ss_popchk_t0_insn, ss_popchk_t0_done\n"
"ss_popchk_t0:\n"
"	mv	t0, a0\n"
"	j	ss_popchk_t0_insn\n"
"ss_popchk_t0_insn:\n"
	SSPOPCHK_T0
"ss_popchk_t0_done:\n"
"	ret\n"
"	.globl ss_rdp\n"
"ss_rdp:\n"
"	li	a0, -1\n"
	SSRDP(a0)
"	ret\n"
"	.globl ss_swap, ss_swap_insn\n"
"ss_swap:\n"
"	mv	t0, a0\n"
"	li	a0, -1\n"
"ss_swap_insn:\n"
	SSAMOSWAP_D(a0, a1, t0)
"	ret\n"
"	.globl ss_csr_read, ss_csr_read_insn\n"
"ss_csr_read:\n"
"	li	a0, -1\n"
"ss_csr_read_insn:\n"
"	csrr	a0, 0x011\n"
"	ret\n"
"	.globl ss_csr_write, ss_csr_write_insn\n"
"ss_csr_write:\n"
"ss_csr_write_insn:\n"
"	csrw	0x011, a0\n"
"	ret\n"
"	.globl plain_store, plain_store_insn\n"
"plain_store:\n"
"plain_store_insn:\n"
"	sd	a1, 0(a0)\n"
"	ret\n"
"	.globl plain_amoswap, plain_amoswap_insn\n"
"plain_amoswap:\n"
"	mv	t0, a0\n"
"	li	a0, -1\n"
"plain_amoswap_insn:\n"
"	amoswap.d a0, a1, (t0)\n"
"	ret\n"
	/* jump into @addr (no landing pads are on here); a fault resumes below */
"	.globl call_addr, call_addr_done\n"
"call_addr:\n"
"	mv	t1, ra\n"
"	jalr	ra, 0(a0)\n"
"call_addr_done:\n"
"	mv	ra, t1\n"
"	ret\n"
"	.option pop\n");

static unsigned long page(int i)
{
	return (unsigned long)pages[i];
}

static unsigned long top(int i)
{
	return page(i) + PAGE_SIZE;
}

static void begin(void)
{
	lp_seen += rec.lp;
	ss_seen += rec.ss;
	rec.lp = rec.ss = 0;
	cfi_rec_clear(&rec);
}

/* Nothing trapped since begin(). */
static void expect_none(const char *what)
{
	char buf[120];

	snprintf(buf, sizeof(buf), "%s: no trap", what);
	if (rec.count)
		report_fail(T, "%s (got scause %lu stval 0x%lx at 0x%lx, want none)", buf,
			    rec.scause, rec.stval, rec.sepc);
	else
		report_pass(T, "%s", buf);
}

/* Exactly one trap with @cause, at @pc (0: any) with stval @tval. */
static void expect_trap(const char *what, unsigned long cause, unsigned long pc,
			unsigned long tval)
{
	cfi_expect_fault(T, &rec, what, cause, pc, tval, true);
}

/* Illegal instruction: stval is 0 or the instruction bits. */
static void expect_illegal(const char *what, char *pc)
{
	cfi_expect_illegal(T, &rec, what, (unsigned long)pc, *(uint32_t *)pc, true);
}

static void test_disabled(const char *when)
{
	char buf[96];
	unsigned long v;

	snprintf(buf, sizeof(buf), "%s: csrr ssp", when);
	begin();
	v = ss_csr_read();
	expect_illegal(buf, ss_csr_read_insn);
	snprintf(buf, sizeof(buf), "%s: csrr ssp leaves rd alone", when);
	check_eqx(T, buf, v, -1UL);

	snprintf(buf, sizeof(buf), "%s: csrw ssp", when);
	begin();
	ss_csr_write(top(PG_SS));
	expect_illegal(buf, ss_csr_write_insn);

	snprintf(buf, sizeof(buf), "%s: ssamoswap.d", when);
	begin();
	v = ss_swap(page(PG_RW), VAL_A);
	expect_illegal(buf, ss_swap_insn);

	snprintf(buf, sizeof(buf), "%s: ssrdp", when);
	begin();
	v = ss_rdp();
	expect_none(buf);
	snprintf(buf, sizeof(buf), "%s: ssrdp writes 0", when);
	check_eqx(T, buf, v, 0);

	snprintf(buf, sizeof(buf), "%s: sspush x1 + mismatching sspopchk x1", when);
	begin();
	ss_push_ra(VAL_A);
	ss_popchk_ra(VAL_B);
	expect_none(buf);
	snprintf(buf, sizeof(buf), "%s: sspush x5 + mismatching sspopchk x5", when);
	begin();
	ss_push_t0(VAL_A);
	ss_popchk_t0(VAL_B);
	expect_none(buf);

	csr_set(CSR_SENVCFG, ENVCFG_SSE);
	snprintf(buf, sizeof(buf), "%s: senvcfg.SSE reads 0", when);
	check_eq(T, buf, !!(csr_read(CSR_SENVCFG) & ENVCFG_SSE), 0);
}

static void test_push_pop(void)
{
	unsigned long t = top(PG_SS);

	begin();
	ss_csr_write(t);
	check_eqx(T, "ssp reads back what was written", csr_read(CSR_SSP), t);
	check_eqx(T, "ssrdp returns ssp", ss_rdp(), t);
	expect_none("csrw/csrr ssp, ssrdp");

	begin();
	ss_push_ra(VAL_A);
	check_eqx(T, "sspush x1: ssp -= 8", csr_read(CSR_SSP), t - 8);
	check_eqx(T, "sspush x1: ordinary load sees the value",
		  *(volatile unsigned long *)(t - 8), VAL_A);
	ss_popchk_ra(VAL_A);
	check_eqx(T, "sspopchk x1 (match): ssp += 8", csr_read(CSR_SSP), t);
	expect_none("sspush/sspopchk x1 match");

	begin();
	ss_push_t0(VAL_B);
	check_eqx(T, "sspush x5: ssp -= 8", csr_read(CSR_SSP), t - 8);
	check_eqx(T, "sspush x5: ordinary load sees the value",
		  *(volatile unsigned long *)(t - 8), VAL_B);
	ss_popchk_t0(VAL_B);
	check_eqx(T, "sspopchk x5 (match): ssp += 8", csr_read(CSR_SSP), t);
	expect_none("sspush/sspopchk x5 match");
}

static void test_mismatch(void)
{
	unsigned long t = top(PG_SS);

	/* policy strict stops the VM here: the driver matches this pc */
	report_info(T, "first violation pc 0x%lx", (unsigned long)ss_popchk_ra_insn);
	begin();
	ss_push_ra(VAL_A);
	rec.fixup = (unsigned long)ss_popchk_ra_done;
	ss_popchk_ra(VAL_B);
	expect_trap("sspopchk x1 mismatch", EXC_SW_CHECK, 0, SWCHECK_TVAL_SHADOW_STACK);
	report_info(T, "sspopchk x1 mismatch: sepc 0x%lx, insn at 0x%lx (QEMU Q3: TB start)",
		    rec.sepc, (unsigned long)ss_popchk_ra_insn);
	check_eqx(T, "sspopchk x1 mismatch: ssp unchanged", csr_read(CSR_SSP), t - 8);
	begin();
	ss_popchk_ra(VAL_A);
	expect_none("sspopchk x1 of the real value after a mismatch");
	check_eqx(T, "ssp back at the top", csr_read(CSR_SSP), t);

	begin();
	ss_push_t0(VAL_C);
	rec.fixup = (unsigned long)ss_popchk_t0_done;
	ss_popchk_t0(VAL_A);
	expect_trap("sspopchk x5 mismatch", EXC_SW_CHECK, 0, SWCHECK_TVAL_SHADOW_STACK);
	check_eqx(T, "sspopchk x5 mismatch: ssp unchanged", csr_read(CSR_SSP), t - 8);
	begin();
	ss_popchk_t0(VAL_C);
	expect_none("sspopchk x5 of the real value after a mismatch");
}

static void test_ss_page_access(void)
{
	unsigned long t = top(PG_SS), slot = t - 8, old;

	begin();
	ss_push_ra(VAL_A);
	old = ss_swap(slot, VAL_B);
	expect_none("ssamoswap.d on the SS page");
	check_eqx(T, "ssamoswap.d returns the old value", old, VAL_A);
	check_eqx(T, "ssamoswap.d stored the new value",
		  *(volatile unsigned long *)slot, VAL_B);
	ss_popchk_ra(VAL_B);
	expect_none("sspopchk sees the swapped-in value");

	begin();
	plain_store(slot, VAL_C);
	expect_trap("ordinary store to the SS page", EXC_STORE_ACCESS,
		    (unsigned long)plain_store_insn, slot);
	check_eqx(T, "ordinary store to the SS page: memory unchanged",
		  *(volatile unsigned long *)slot, VAL_B);

	begin();
	old = plain_amoswap(slot, VAL_C);
	expect_trap("amoswap.d to the SS page", EXC_STORE_ACCESS,
		    (unsigned long)plain_amoswap_insn, slot);
	check_eqx(T, "amoswap.d to the SS page: memory unchanged",
		  *(volatile unsigned long *)slot, VAL_B);

	begin();
	rec.fixup = (unsigned long)call_addr_done;
	call_addr(page(PG_SS));
	expect_trap("instruction fetch from the SS page", EXC_INST_ACCESS,
		    page(PG_SS), page(PG_SS));
}

static void test_ro_page(void)
{
	unsigned long t = top(PG_RO);

	ss_csr_write(t);
	begin();
	ss_push_ra(VAL_A);
	expect_trap("sspush to a read-only page", EXC_STORE_PAGE_FAULT,
		    (unsigned long)ss_push_ra_insn, t - 8);
	check_eqx(T, "sspush to a read-only page: ssp unchanged", csr_read(CSR_SSP), t);

	ss_csr_write(t - 8);
	begin();
	rec.fixup = (unsigned long)ss_popchk_t0_done;
	ss_popchk_t0(0);	/* the page holds zeroes: only the access faults */
	expect_trap("sspopchk from a read-only page", EXC_STORE_PAGE_FAULT, 0, t - 8);
	check_eqx(T, "sspopchk from a read-only page: ssp unchanged",
		  csr_read(CSR_SSP), t - 8);

	begin();
	ss_swap(t - 8, VAL_A);
	expect_trap("ssamoswap.d on a read-only page", EXC_STORE_PAGE_FAULT,
		    (unsigned long)ss_swap_insn, t - 8);
}

static void test_misaligned(void)
{
	unsigned long t = top(PG_SS), got;

	ss_csr_write(t - 4);
	got = csr_read(CSR_SSP);
	if (got == t - 8) {
		/* ssp[2] read-only 0 is allowed for RV64-only harts */
		report_pass(T, "ssp bit 2 is read-only 0: no misaligned ssp possible");
		report_pass(T, "sspush with misaligned ssp: not applicable");
		report_pass(T, "sspopchk with misaligned ssp: not applicable");
		return;
	}
	check_eqx(T, "ssp keeps bit 2 (bits 1:0 are 0)", got, t - 4);
	begin();
	ss_push_ra(VAL_A);
	expect_trap("sspush with misaligned ssp", EXC_STORE_ACCESS,
		    (unsigned long)ss_push_ra_insn, t - 12);
	begin();
	rec.fixup = (unsigned long)ss_popchk_ra_done;
	ss_popchk_ra(0);
	expect_trap("sspopchk with misaligned ssp", EXC_STORE_ACCESS, 0, t - 4);
}

/* The spec: SS instructions off SS pages, and with satp Bare, raise 7. */
static void test_ss_off_ss_pages(void)
{
	unsigned long t = top(PG_RW);

	ss_csr_write(t);
	begin();
	ss_push_ra(VAL_A);
	expect_trap("sspush to an RW page", EXC_STORE_ACCESS, (unsigned long)ss_push_ra_insn,
		    t - 8);
	check_eqx(T, "sspush to an RW page: ssp unchanged", csr_read(CSR_SSP), t);
	ss_csr_write(t - 8);
	begin();
	rec.fixup = (unsigned long)ss_popchk_ra_done;
	ss_popchk_ra(0);
	expect_trap("sspopchk from an RW page", EXC_STORE_ACCESS, 0, t - 8);
	begin();
	ss_swap(t - 8, VAL_B);
	expect_trap("ssamoswap.d on an RW page", EXC_STORE_ACCESS, (unsigned long)ss_swap_insn,
		    t - 8);

	mmu_disable();
	ss_csr_write(t);
	begin();
	ss_push_ra(VAL_C);
	expect_trap("sspush with satp Bare", EXC_STORE_ACCESS, (unsigned long)ss_push_ra_insn,
		    t - 8);
	mmu_enable();
}

/* QEMU 10.0.2 (Q7): no access fault for SS instructions off SS pages. */
static void test_qemu_q7(void)
{
	unsigned long t = top(PG_RW);

	if (!bootarg_ulong("q7", 1)) {
		test_ss_off_ss_pages();
		return;
	}

	ss_csr_write(t);
	begin();
	ss_push_ra(VAL_A);
	expect_none("Q7: sspush to an RW page succeeds on QEMU 10.0.2 (spec: 7)");
	check_eqx(T, "Q7: value landed on the RW page", *(volatile unsigned long *)(t - 8),
		  VAL_A);
	ss_popchk_ra(VAL_A);
	expect_none("Q7: sspopchk from an RW page succeeds on QEMU 10.0.2 (spec: 7)");
	begin();
	ss_swap(t - 8, VAL_B);
	expect_none("Q7: ssamoswap.d on an RW page succeeds on QEMU 10.0.2 (spec: 7)");

	mmu_disable();
	begin();
	ss_push_ra(VAL_C);
	ss_popchk_ra(VAL_C);
	expect_none("Q7: sspush/sspopchk with satp Bare succeed on QEMU 10.0.2 (spec: 7)");
	mmu_enable();
}

void test_main(unsigned long hartid)
{
	unsigned long old_stvec = csr_read(CSR_STVEC);
	struct sbiret r;

	(void)hartid;
	mmu_init();
	if (mmu_map(page(PG_SS), PAGE_SIZE, MMU_SS) ||
	    mmu_map(page(PG_RO), PAGE_SIZE, MMU_RO) ||
	    mmu_map(page(PG_RW), PAGE_SIZE, MMU_RW)) {
		report_fail(T, "page tables (got no room, want mapped)");
		return;
	}
	cfi_trap_install(&rec);

	r = fwft_get(SBI_FWFT_SHADOW_STACK);
	check_eq(T, "FWFT shadow_stack is 0 at boot", r.value, 0);
	test_disabled("shadow_stack=0");

	mmu_enable();
	check_eq(T, "FWFT set shadow_stack=1",
		 fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0).error, SBI_SUCCESS);
	csr_set(CSR_SENVCFG, ENVCFG_SSE);
	check_eq(T, "shadow_stack=1: senvcfg.SSE is writable",
		 !!(csr_read(CSR_SENVCFG) & ENVCFG_SSE), 1);
	csr_clear(CSR_SENVCFG, ENVCFG_SSE);
	test_push_pop();
	test_mismatch();
	test_ss_page_access();
	test_ro_page();
	test_misaligned();
	test_qemu_q7();
	mmu_disable();

	check_eq(T, "FWFT set shadow_stack=0",
		 fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0).error, SBI_SUCCESS);
	test_disabled("shadow_stack=0 again");

	begin();
	cfi_trap_remove(old_stvec);
	check_eq(T, "no interrupts while the CFI vector was in place", rec.irqs, 0);
	printf("INFO: observed lp=%lu ss=%lu\n", lp_seen, ss_seen);
}
