/* SPDX-License-Identifier: MIT */
/* Malicious AIA guest (docs/design-aia.md 6, 7 "attacks"): attacks on the
 * IMSIC files and the APLIC an AIA VM gets, run beside a victim AIA VM
 * (victim_aia.c) by tests/guests/test_attacks_aia.py. Same protocol as
 * attack.c: bootargs from=N to=M run cases N..M in table order, each between
 * "ATTACK-BEGIN: N name" and "ATTACK-END: N name" with its PASS/FAIL checks;
 * a .stops case must be the last its VM runs. Needs vcpus=2 and an AIA VM.
 *
 * Every check is on what the guest itself sees (the fault it takes, values
 * read back, the pending bits of both vCPUs' files), never on how the
 * hypervisor got there: a vCPU's page may be emulated (its file in
 * software) or mapped to a hardware guest file, and the guest must not be
 * able to tell. Where the AIA spec leaves a choice that QEMU's hardware
 * file and the software file make differently (reserved IMSIC registers
 * and eip/eie words past the identities: illegal instruction or read-only
 * zero; eithreshold above the identities: kept or 0), either answer passes
 * and nothing else does.
 *
 * Interrupt files are read through siselect/sireg with delivery off (no
 * interrupt is taken); vCPU 1's file is read by vCPU 1 (on_other()).
 * Bootargs: storm_ms=N (the MSI storm's length, default 6000).
 */
#include "libguest.h"
#include "cfi.h"

#define T "attack_aia"

#define IMSIC_BASE	0x28000000UL
#define IMSIC_PAGE	0x1000UL
#define IMSIC_WINDOW	(8 * IMSIC_PAGE)	/* a page per possible vCPU */
#define APLIC_BASE	0x0d000000UL
#define APLIC_SIZE	0x8000UL
#define PLIC_BASE	0x0c000000UL
#define NR_VCPUS	2
#define WORDS		4			/* eip0/2/4/6: identities 0..255 */

#define ISEL_EIDELIVERY	0x70
#define ISEL_EITHRESHOLD 0x72
#define ISEL_EIP0	0x80
#define ISEL_EIE0	0xc0

/* APLIC registers (AdvPLIC.adoc, MSI mode) */
#define A_DOMAINCFG	0x0000
#define A_SOURCECFG(i)	(4UL * (i))
#define A_SETIP		0x1c00
#define A_SETIPNUM	0x1cdc
#define A_IN_CLRIP	0x1d00
#define A_SETIE		0x1e00
#define A_SETIENUM	0x1edc
#define A_SETIPNUM_LE	0x2000
#define A_GENMSI	0x3000
#define A_TARGET(i)	(0x3000UL + 4UL * (i))
#define DOMAINCFG_IE	(1U << 8)
#define DOMAINCFG_RO	0x80000004U	/* bit 31, DM (MSI mode) */
#define TARGET_MASK	0xfffc07ffU	/* hart index, EIID: guest index / Busy read 0 */
#define HART(h)		((uint32_t)(h) << 18)
#define SM_DETACHED	1
#define SM_EDGE		4
#define SM_LEVEL	6
#define UART_SRC	10

struct attack {
	const char *name;
	void (*fn)(void);
	bool stops;
	const char *expect;
};

struct file_state {
	unsigned long eidelivery, eithreshold, eip[WORDS], eie[WORDS];
};

static struct cfi_rec recs[MAX_HARTS];
static volatile unsigned long storm_stop, storm_stores, storm_bad_ids;
static volatile unsigned long claims[256], claims_bad;
static struct file_state other_file;

/* ---- the interrupt files -------------------------------------------------- */

static unsigned long ireg_read(unsigned long isel)
{
	csr_write(CSR_SISELECT, isel);
	return csr_read(CSR_SIREG);
}

static void ireg_write(unsigned long isel, unsigned long v)
{
	csr_write(CSR_SISELECT, isel);
	csr_write(CSR_SIREG, v);
}

static void file_read(struct file_state *f)
{
	f->eidelivery = ireg_read(ISEL_EIDELIVERY);
	f->eithreshold = ireg_read(ISEL_EITHRESHOLD);
	for (unsigned long w = 0; w < WORDS; w++) {
		f->eip[w] = ireg_read(ISEL_EIP0 + 2 * w);
		f->eie[w] = ireg_read(ISEL_EIE0 + 2 * w);
	}
}

/* delivery off, nothing pending or enabled, threshold 0 */
static void file_clear(void)
{
	ireg_write(ISEL_EIDELIVERY, 0);
	ireg_write(ISEL_EITHRESHOLD, 0);
	for (unsigned long w = 0; w < WORDS; w++) {
		ireg_write(ISEL_EIP0 + 2 * w, 0);
		ireg_write(ISEL_EIE0 + 2 * w, 0);
	}
}

enum other_op { OP_READ, OP_CLEAR };

static void other_fn(unsigned long hartid, unsigned long op)
{
	(void)hartid;
	if (op == OP_CLEAR)
		file_clear();
	file_read(&other_file);
}

/* Run @op on vCPU 1 and wait until it stopped again. */
static bool on_other(hart_fn fn, unsigned long opaque)
{
	unsigned long h = other_hartid();

	if (h == -1UL) {
		report_fail(T, "a second vCPU (got 1, want vcpus=2)");
		return false;
	}
	if (!hart_wait_state(h, SBI_HSM_STATE_STOPPED, 5000000) || hart_start(h, fn, opaque)) {
		report_fail(T, "start vCPU 1 (got busy, want STOPPED then started)");
		return false;
	}
	return hart_wait_state(h, SBI_HSM_STATE_STOPPED, 5000000);
}

static void files_clear(void)
{
	file_clear();
	on_other(other_fn, OP_CLEAR);
}

/* Both vCPUs' pending words equal @want0 and @want1 (NULL: all zero). */
static void check_pending(const char *what, const unsigned long *want0, const unsigned long *want1)
{
	static const unsigned long zero[WORDS];
	struct file_state f0;
	char w[120];

	file_read(&f0);
	on_other(other_fn, OP_READ);
	want0 = want0 ? want0 : zero;
	want1 = want1 ? want1 : zero;
	for (unsigned long i = 0; i < WORDS; i++) {
		snprintf(w, sizeof(w), "%s: vCPU 0 eip%lu", what, 2 * i);
		check_eqx(T, w, f0.eip[i], want0[i]);
		snprintf(w, sizeof(w), "%s: vCPU 1 eip%lu", what, 2 * i);
		check_eqx(T, w, other_file.eip[i], want1[i]);
	}
}

static void imsic_store(unsigned long page, unsigned long off, uint32_t v)
{
	*(volatile uint32_t *)(IMSIC_BASE + page * IMSIC_PAGE + off) = v;
}

/* ---- one access, its fault -------------------------------------------------- */

/* One access at a known pc; the library vector skips it if it traps. */
#define TRYA(name, insn)						\
static unsigned long name(unsigned long addr, unsigned long *pc)	\
{									\
	unsigned long v = 0x5a5a5a5aUL;					\
	__asm__ volatile(".option push\n\t.option norvc\n"		\
			 "1:\t" insn "\n\t.option pop\n\t"		\
			 "lla %0, 1b"					\
			 : "=&r"(*pc), "+&r"(v) : "r"(addr) : "memory");	\
	return v;							\
}

TRYA(ld_b, "lb %1, 0(%2)")
TRYA(ld_h, "lh %1, 0(%2)")
TRYA(ld_w, "lw %1, 0(%2)")
TRYA(ld_d, "ld %1, 0(%2)")
TRYA(st_b, "sb %1, 0(%2)")
TRYA(st_h, "sh %1, 0(%2)")
TRYA(st_w, "sw %1, 0(%2)")
TRYA(st_d, "sd %1, 0(%2)")

typedef unsigned long (*try_fn)(unsigned long, unsigned long *);

/* @fn at @addr takes exactly one trap, at its pc, with @cause (or @cause2)
 * and, unless -1, stval @tval. */
static void expect_trap(const char *what, try_fn fn, unsigned long addr, unsigned long cause,
			unsigned long cause2, unsigned long tval)
{
	struct trap_record tr;
	unsigned long pc, n;
	char w[120];

	trap_arm();
	fn(addr, &pc);
	n = trap_disarm(&tr);
	snprintf(w, sizeof(w), "%s 0x%lx: one trap at the access", what, addr);
	if (!check_eq(T, w, n == 1 && tr.sepc == pc, 1))
		return;
	snprintf(w, sizeof(w), "%s 0x%lx: scause %lu", what, addr, tr.scause);
	check_eq(T, w, tr.scause == cause || tr.scause == cause2, 1);
	if (tval != -1UL) {
		snprintf(w, sizeof(w), "%s 0x%lx: stval", what, addr);
		check_eqx(T, w, tr.stval, tval);
	}
}

/* A misaligned 64-bit access at @addr: one fault, as expect_trap(), or (a
 * hardware guest file under QEMU 10.0.2, which splits it into two 32-bit
 * accesses at offsets 4 and 8, both ignored) none, a load reading 0. The
 * callers then check no file changed. */
static void expect_trap_or_split(const char *what, try_fn fn, unsigned long addr,
				 unsigned long cause)
{
	struct trap_record tr;
	unsigned long pc, n, v;
	char w[120];

	trap_arm();
	v = fn(addr, &pc);
	n = trap_disarm(&tr);
	snprintf(w, sizeof(w), "%s 0x%lx: one trap at the access, or none reading 0", what, addr);
	if (!check_eq(T, w, (n == 1 && tr.sepc == pc) || (n == 0 && (fn == st_d || v == 0)), 1) || !n)
		return;
	snprintf(w, sizeof(w), "%s 0x%lx: scause %lu", what, addr, tr.scause);
	check_eq(T, w, tr.scause == cause, 1);
}

/* @fn at @addr takes no trap; returns what it read. */
static unsigned long expect_no_trap(const char *what, try_fn fn, unsigned long addr)
{
	struct trap_record tr;
	unsigned long pc, v;
	char w[120];

	trap_arm();
	v = fn(addr, &pc);
	snprintf(w, sizeof(w), "%s 0x%lx: no trap", what, addr);
	check_eq(T, w, trap_disarm(&tr), 0);
	return v;
}

/* Fetch from @target; the cfi vector resumes at the label after the jump. */
static void fetch_try(unsigned long target)
{
	struct cfi_rec *rec = &recs[current_hartid()];
	unsigned long old = csr_read(CSR_STVEC);
	char w[80];

	cfi_trap_install(rec);
	__asm__ volatile("lla t0, 1f\n\t"
			 "sd t0, %1(%0)\n\t"
			 "jalr zero, 0(%2)\n"
			 "1:\n"
			 :: "r"(rec), "i"(CR_FIXUP), "r"(target) : "t0", "memory");
	cfi_trap_remove(old);
	snprintf(w, sizeof(w), "fetch from 0x%lx: one trap", target);
	if (!check_eq(T, w, rec->count, 1))
		return;
	snprintf(w, sizeof(w), "fetch from 0x%lx: instruction access fault", target);
	check_eq(T, w, rec->scause, EXC_INST_ACCESS);
	snprintf(w, sizeof(w), "fetch from 0x%lx: stval", target);
	check_eqx(T, w, rec->stval, target);
}

/* sireg through siselect @isel, a read or (@write) a csrrw of @val: the
 * traps taken (0 or 1), the value read in *@out, the trap's cause in *@cause. */
static unsigned long ireg_try(unsigned long isel, bool write, unsigned long val,
			      unsigned long *out, unsigned long *cause)
{
	struct trap_record tr;
	unsigned long v = 0x5a5a5a5aUL, n;

	csr_write(CSR_SISELECT, isel);
	trap_arm();
	if (write)
		__asm__ volatile("csrrw %0, " __stringify(CSR_SIREG) ", %1"
				 : "+&r"(v) : "r"(val) : "memory");
	else
		__asm__ volatile("csrr %0, " __stringify(CSR_SIREG) : "+r"(v) :: "memory");
	n = trap_disarm(&tr);
	*out = v;
	*cause = n ? tr.scause : 0;
	return n;
}

static void expect_illegal(const char *what, unsigned long isel)
{
	unsigned long out, cause, n;
	char w[100];

	for (int write = 0; write < 2; write++) {
		n = ireg_try(isel, write, ~0UL, &out, &cause);
		snprintf(w, sizeof(w), "siselect 0x%lx (%s), %s: illegal instruction", isel, what,
			 write ? "write" : "read");
		check_eq(T, w, n == 1 && cause == EXC_ILLEGAL_INST, 1);
	}
}

/* A register the spec lets be illegal or read-only zero: either, whole. */
static void expect_illegal_or_zero(const char *what, unsigned long isel)
{
	unsigned long out, cause, n, n2, out2;
	char w[100];

	n = ireg_try(isel, true, ~0UL, &out, &cause);
	n2 = ireg_try(isel, false, 0, &out2, &cause);
	snprintf(w, sizeof(w), "siselect 0x%lx (%s): illegal, or reads 0 after a write of ~0",
		 isel, what);
	check_eq(T, w, (n == 1 && n2 == 1 && cause == EXC_ILLEGAL_INST) ||
		       (n == 0 && n2 == 0 && out == 0 && out2 == 0), 1);
}

/* ---- the vIMSIC window ---------------------------------------------------- */

static void a_imsic_pages_past_vcpus(void)
{
	unsigned long want[WORDS] = { 1UL << 9 };
	static const unsigned long offs[] = { 0, 4, 8, 0x800, 0xffc };
	char w[80];

	files_clear();
	/* pages of vCPUs the VM lacks: read 0, stores ignored, never a fault */
	for (unsigned long page = NR_VCPUS; page < IMSIC_WINDOW / IMSIC_PAGE; page++)
		for (unsigned long k = 0; k < ARRAY_SIZE(offs); k++) {
			unsigned long a = IMSIC_BASE + page * IMSIC_PAGE + offs[k];

			snprintf(w, sizeof(w), "page %lu", page);
			check_eqx(T, "a page past the vCPUs reads 0", expect_no_trap(w, ld_w, a), 0);
			trap_arm();
			imsic_store(page, offs[k], 9);
			imsic_store(page, offs[k], 255);
			check_eq(T, "a store to a page past the vCPUs: no fault", trap_disarm(NULL), 0);
		}
	/* offsets other than 0 of the VM's own pages: ignored too */
	for (unsigned long page = 0; page < NR_VCPUS; page++)
		for (unsigned long k = 1; k < ARRAY_SIZE(offs); k++)
			imsic_store(page, offs[k], 9);
	check_pending("stores past the vCPUs and to offsets other than 0", NULL, NULL);
	/* the control: offset 0 of each page raises 9 in that vCPU's file */
	imsic_store(0, 0, 9);
	imsic_store(1, 0, 9);
	check_pending("identity 9 stored to each vCPU's page", want, want);
	files_clear();
}

static void a_imsic_identities(void)
{
	static const uint32_t bad[] = { 0, 256, 257, 1024, 2047, 2048, 0xffff, 0x80000001,
					0xffffff01, 0xffffffff };
	unsigned long want0[WORDS] = { 1UL << 1, 0, 0, 1UL << 63 };
	unsigned long want1[WORDS] = { 1UL << 2, 0, 0, 1UL << 63 };

	files_clear();
	for (unsigned long i = 0; i < ARRAY_SIZE(bad); i++)
		for (unsigned long page = 0; page < NR_VCPUS; page++)
			imsic_store(page, 0, bad[i]);
	check_pending("identities 0, 256, 2047, ~0 and others past 255", NULL, NULL);
	/* the last identity there is, and a low one: exactly those bits */
	imsic_store(0, 0, 255);
	imsic_store(0, 0, 1);
	imsic_store(1, 0, 255);
	imsic_store(1, 0, 2);
	check_pending("identities 255 and 1 (2 for vCPU 1)", want0, want1);
	files_clear();
}

static void a_imsic_widths(void)
{
	static const unsigned long pages[] = { 0, 1, 7 };
	static const struct { const char *name; try_fn fn; bool store; } acc[] = {
		{ "lb", ld_b, false }, { "lh", ld_h, false }, { "ld", ld_d, false },
		{ "sb", st_b, true }, { "sh", st_h, true }, { "sd", st_d, true },
	};

	files_clear();
	for (unsigned long p = 0; p < ARRAY_SIZE(pages); p++)
		for (unsigned long off = 0; off <= 4; off += 4)
			for (unsigned long k = 0; k < ARRAY_SIZE(acc); k++) {
				unsigned long a = IMSIC_BASE + pages[p] * IMSIC_PAGE + off;

				unsigned long cause = acc[k].store ? EXC_STORE_ACCESS : EXC_LOAD_ACCESS;

				/* the stores would write 0x5a5a5a5a: no identity either way */
				if (off && acc[k].fn == (acc[k].store ? st_d : ld_d))
					expect_trap_or_split(acc[k].name, acc[k].fn, a, cause);
				else
					expect_trap(acc[k].name, acc[k].fn, a, cause, cause, a);
			}
	/* misaligned words: one fault, access or misaligned */
	expect_trap("misaligned lw", ld_w, IMSIC_BASE + 2, EXC_LOAD_ACCESS, EXC_LOAD_MISALIGNED, -1UL);
	expect_trap("misaligned sw", st_w, IMSIC_BASE + IMSIC_PAGE + 2, EXC_STORE_ACCESS,
		    EXC_STORE_MISALIGNED, -1UL);
	/* an sd whose low word is a valid identity: a fault, not a store of it */
	{
		struct trap_record tr;
		volatile uint64_t *p = (volatile uint64_t *)(IMSIC_BASE + IMSIC_PAGE);

		trap_arm();
		*p = 5;
		check_eq(T, "sd of identity 5 to vCPU 1's page: one trap", trap_disarm(&tr), 1);
		check_eq(T, "  ... a store access fault", tr.scause, EXC_STORE_ACCESS);
	}
	check_eqx(T, "lw of vCPU 1's page reads 0", expect_no_trap("lw", ld_w, IMSIC_BASE + IMSIC_PAGE), 0);
	check_eqx(T, "lw of its own page at 0xffc reads 0",
		  expect_no_trap("lw", ld_w, IMSIC_BASE + 0xffc), 0);
	check_pending("after every faulting width", NULL, NULL);
}

static void a_fetch_aia(void)
{
	fetch_try(IMSIC_BASE);
	fetch_try(IMSIC_BASE + IMSIC_PAGE);
	fetch_try(IMSIC_BASE + 7 * IMSIC_PAGE + 0xffc);
	fetch_try(APLIC_BASE);
	fetch_try(APLIC_BASE + A_GENMSI);
}

/* ---- the IMSIC CSRs ------------------------------------------------------- */

static void a_csr_select(void)
{
	static const unsigned long reserved[] = { 0x00, 0x01, 0x2f, 0x40, 0x6f, 0x100, 0x1ff,
						  0xfff, ~0UL };
	static const unsigned long odd[] = { ISEL_EIP0 + 1, ISEL_EIP0 + 63, ISEL_EIE0 + 1,
					     ISEL_EIE0 + 63 };
	struct file_state before, after;
	unsigned long out, cause, i;
	char w[100];

	csr_clear(sstatus, SR_SIE);
	file_clear();
	/* a state of its own to keep: delivery on (SIE off), a threshold, bits */
	ireg_write(ISEL_EIDELIVERY, 1);
	ireg_write(ISEL_EITHRESHOLD, 3);
	ireg_write(ISEL_EIE0, 0xf0);
	ireg_write(ISEL_EIP0 + 2, 0x5a5a5a5a00000001UL);
	ireg_write(ISEL_EIE0 + 6, 1UL << 63);
	file_read(&before);
	for (i = 0; i < ARRAY_SIZE(odd); i++)
		expect_illegal("odd eip/eie", odd[i]);
	for (i = 0; i < ARRAY_SIZE(reserved); i++)
		expect_illegal("reserved", reserved[i]);
	/* iprio0..15: even ones read 0 whatever was written, odd ones illegal */
	for (i = 0x30; i <= 0x3f; i++) {
		if (i & 1) {
			expect_illegal("odd iprio", i);
			continue;
		}
		snprintf(w, sizeof(w), "iprio 0x%lx: write ~0, read 0", i);
		check_eq(T, w, ireg_try(i, true, ~0UL, &out, &cause) == 0 &&
			       ireg_try(i, false, 0, &out, &cause) == 0 && out == 0, 1);
	}
	/* reserved IMSIC registers, and words past identity 255 */
	expect_illegal_or_zero("0x71", 0x71);
	for (i = 0x73; i <= 0x7f; i++)
		expect_illegal_or_zero("0x73..0x7f", i);
	for (i = 2 * WORDS; i < 64; i += 2) {
		expect_illegal_or_zero("eip past 255", ISEL_EIP0 + i);
		expect_illegal_or_zero("eie past 255", ISEL_EIE0 + i);
	}
	file_read(&after);
	check_eq(T, "the garbage changed nothing in its file",
		 !memcmp(&before, &after, sizeof(before)), 1);
	/* the registers that exist keep only what they hold */
	ireg_write(ISEL_EIDELIVERY, ~0UL);
	check_eqx(T, "eidelivery written ~0 reads 1", ireg_read(ISEL_EIDELIVERY), 1);
	ireg_write(ISEL_EIP0, 1);
	ireg_write(ISEL_EIE0, 1);
	check_eqx(T, "eip0 bit 0 (no identity) stays 0", ireg_read(ISEL_EIP0) & 1, 0);
	check_eqx(T, "eie0 bit 0 stays 0", ireg_read(ISEL_EIE0) & 1, 0);
	ireg_write(ISEL_EITHRESHOLD, ~0UL);
	out = ireg_read(ISEL_EITHRESHOLD);
	check_eq(T, "eithreshold written ~0 reads 0 or at most 2047", out <= 2047, 1);
	/* ... and masks nothing: identity 5 pending and enabled is the top */
	ireg_write(ISEL_EIP0, 1UL << 5);
	ireg_write(ISEL_EIE0, 1UL << 5);
	check_eqx(T, "eithreshold above the identities: stopei names 5", csr_read(CSR_STOPEI),
		  (5UL << 16) | 5);
	file_clear();
}

static void a_stopei(void)
{
	unsigned long want[WORDS] = { 0, 1UL << 6, 0, 1UL << 8 };
	unsigned long v;

	csr_clear(sstatus, SR_SIE);
	file_clear();
	ireg_write(ISEL_EIDELIVERY, 1);
	/* nothing pending: reads 0, writes claim nothing */
	check_eqx(T, "stopei with nothing pending reads 0", csr_read(CSR_STOPEI), 0);
	csr_write(CSR_STOPEI, ~0UL);
	__asm__ volatile("csrrw %0, " __stringify(CSR_STOPEI) ", %1" : "=r"(v) : "r"(~0UL) : "memory");
	check_eqx(T, "csrrw stopei with nothing pending reads 0", v, 0);
	check_pending("stopei writes with nothing pending", NULL, NULL);
	/* 10 pending and enabled; 70 pending, not enabled; 200 enabled, above
	 * the threshold: only 10 is the top, claimed once */
	ireg_write(ISEL_EITHRESHOLD, 100);
	ireg_write(ISEL_EIE0, 1UL << 10);
	ireg_write(ISEL_EIE0 + 6, 1UL << 8);
	imsic_store(0, 0, 10);
	imsic_store(0, 0, 70);
	imsic_store(0, 0, 200);
	check_eqx(T, "stopei: 10 is the top", csr_read(CSR_STOPEI), (10UL << 16) | 10);
	__asm__ volatile("csrrs %0, " __stringify(CSR_STOPEI) ", zero" : "=r"(v) :: "memory");
	check_eqx(T, "csrrs stopei, x0 reads 10 and claims nothing", csr_read(CSR_STOPEI),
		  (10UL << 16) | 10);
	csr_write(CSR_STOPEI, 0x12345678UL);	/* the value is ignored: a claim */
	check_eqx(T, "after one claim stopei reads 0", csr_read(CSR_STOPEI), 0);
	csr_write(CSR_STOPEI, ~0UL);
	csr_write(CSR_STOPEI, 0);
	check_pending("claims with only masked identities pending keep 70 and 200", want, NULL);
	/* the threshold lifted: 200 is the top (70 not enabled) */
	ireg_write(ISEL_EITHRESHOLD, 0);
	__asm__ volatile("csrrci %0, " __stringify(CSR_STOPEI) ", 1" : "=r"(v) :: "memory");
	check_eqx(T, "csrrci stopei claims 200", v, (200UL << 16) | 200);
	check_eqx(T, "70 stays pending, not enabled", ireg_read(ISEL_EIP0 + 2), 1UL << 6);
	file_clear();
}

/* The hypervisor's and M-mode's AIA CSRs from VS: illegal instructions (a
 * virtual-instruction exit the hypervisor must not take for its own IMSIC
 * emulation). Each one csrrw with a garbage value, so a wrongly emulated one
 * writes something. */
#define TRYC(name, csr)							\
static void name(unsigned long *pc)					\
{									\
	unsigned long v = ~0UL;						\
	__asm__ volatile(".option push\n\t.option norvc\n"		\
			 "1:\tcsrrw %1, " #csr ", %1\n\t.option pop\n\t"	\
			 "lla %0, 1b" : "=&r"(*pc), "+&r"(v) :: "memory");	\
}

TRYC(c_hvien, 0x608)
TRYC(c_hvictl, 0x609)
TRYC(c_hviprio1, 0x646)
TRYC(c_hgeie, 0x607)
TRYC(c_hgeip, 0xe12)
TRYC(c_vsiselect, 0x250)
TRYC(c_vsireg, 0x251)
TRYC(c_vstopei, 0x25c)
TRYC(c_vstopi, 0xeb0)
TRYC(c_miselect, 0x350)
TRYC(c_mireg, 0x351)
TRYC(c_mtopei, 0x35c)
TRYC(c_mtopi, 0xfb0)

static void a_csr_aia_hyp(void)
{
	static const struct { const char *name; void (*fn)(unsigned long *); } cs[] = {
		{ "hvien", c_hvien }, { "hvictl", c_hvictl }, { "hviprio1", c_hviprio1 },
		{ "hgeie", c_hgeie }, { "hgeip", c_hgeip }, { "vsiselect", c_vsiselect },
		{ "vsireg", c_vsireg }, { "vstopei", c_vstopei }, { "vstopi", c_vstopi },
		{ "miselect", c_miselect }, { "mireg", c_mireg }, { "mtopei", c_mtopei },
		{ "mtopi", c_mtopi },
	};
	char w[80];

	csr_clear(sstatus, SR_SIE);
	files_clear();
	for (unsigned long i = 0; i < ARRAY_SIZE(cs); i++) {
		struct trap_record tr;
		unsigned long pc, n;

		csr_write(CSR_SISELECT, ISEL_EIP0);	/* a wrong emulation would hit eip0 */
		trap_arm();
		cs[i].fn(&pc);
		n = trap_disarm(&tr);
		snprintf(w, sizeof(w), "VS csrrw %s: one illegal-instruction trap at the pc", cs[i].name);
		check_eq(T, w, n == 1 && tr.scause == EXC_ILLEGAL_INST && tr.sepc == pc, 1);
	}
	check_pending("after the hypervisor's AIA CSRs", NULL, NULL);
	check_eqx(T, "eidelivery still 0", ireg_read(ISEL_EIDELIVERY), 0);
}

/* U-mode snippets: one IMSIC CSR access, then ecall back (a0 = 0x55). */
#define UFN(name, insn)							\
	void name(void);						\
	__asm__(".pushsection .text\n.option push\n.option norvc\n"	\
		".balign 4\n.globl " #name "\n" #name ":\n\t"		\
		insn "\n\tli a0, 0x55\n\tecall\n.option pop\n.popsection");

UFN(u_siselect, "csrw 0x150, zero")
UFN(u_sireg, "csrr t0, 0x151")
UFN(u_stopei, "csrrw t0, 0x15c, zero")
UFN(u_stopi, "csrr t0, 0xdb0")

static unsigned long ustack[512] __attribute__((aligned(16)));

static void a_csr_aia_from_vu(void)
{
	static const struct { const char *name; void (*fn)(void); } us[] = {
		{ "siselect", u_siselect }, { "sireg", u_sireg }, { "stopei", u_stopei },
		{ "stopi", u_stopi },
	};
	struct cfi_rec *rec = &recs[current_hartid()];
	unsigned long want[WORDS] = { 1UL << 12 };
	char w[96];

	csr_clear(sstatus, SR_SIE);
	files_clear();
	/* something for a wrongly emulated stopei to claim */
	ireg_write(ISEL_EIE0, 1UL << 12);
	ireg_write(ISEL_EIDELIVERY, 1);
	imsic_store(0, 0, 12);
	csr_write(CSR_SISELECT, ISEL_EIE0);
	for (unsigned long i = 0; i < ARRAY_SIZE(us); i++) {
		unsigned long old = csr_read(CSR_STVEC), ret;

		cfi_trap_install(rec);
		ret = cfi_enter_user((unsigned long)us[i].fn, (unsigned long)&ustack[512], 0, 0, 0);
		cfi_trap_remove(old);
		snprintf(w, sizeof(w), "VU %s: one illegal-instruction trap from U", us[i].name);
		check_eq(T, w, rec->count == 1 && rec->scause == EXC_ILLEGAL_INST &&
			       !(rec->sstatus & SR_SPP), 1);
		snprintf(w, sizeof(w), "VU %s: U code ran on to its ecall", us[i].name);
		check_eqx(T, w, ret, 0x55);
	}
	check_eqx(T, "siselect as VS left it", csr_read(CSR_SISELECT), ISEL_EIE0);
	ireg_write(ISEL_EIDELIVERY, 0);
	check_pending("VU's accesses claimed nothing", want, NULL);
	files_clear();
}

/* ---- the vAPLIC ------------------------------------------------------------ */

static void aplic_w(unsigned long off, uint32_t v)
{
	*(volatile uint32_t *)(APLIC_BASE + off) = v;
}

static uint32_t aplic_r(unsigned long off)
{
	return *(volatile uint32_t *)(APLIC_BASE + off);
}

static void aplic_clear(void)
{
	aplic_w(A_DOMAINCFG, 0);
	for (unsigned long i = 1; i < 32; i++)
		aplic_w(A_SOURCECFG(i), 0);	/* inactive: pending, enable, target 0 */
}

static void a_aplic_targets(void)
{
	static const uint32_t dropped[] = { HART(2) | 12, HART(7) | 12, HART(0x3fff) | 12,
					    HART(0) | 0, HART(1) | 0, HART(0) | 256,
					    HART(1) | 0x7ff, 0xffffffffU };
	unsigned long want0[WORDS] = { 1UL << 14 }, want1[WORDS] = { 1UL << 13 };
	char w[100];

	files_clear();
	aplic_clear();
	aplic_w(A_SOURCECFG(1), SM_DETACHED);
	aplic_w(A_SETIENUM, 1);
	aplic_w(A_DOMAINCFG, DOMAINCFG_IE);
	for (unsigned long i = 0; i < ARRAY_SIZE(dropped); i++) {
		aplic_w(A_TARGET(1), dropped[i]);
		snprintf(w, sizeof(w), "target 0x%x reads back without the guest index", dropped[i]);
		check_eqx(T, w, aplic_r(A_TARGET(1)), dropped[i] & TARGET_MASK);
		aplic_w(A_SETIPNUM, 1);
		snprintf(w, sizeof(w), "target 0x%x: the MSI left (not pending)", dropped[i]);
		check_eqx(T, w, aplic_r(A_SETIP), 0);
	}
	check_pending("MSIs to harts past the vCPUs, EIID 0 or past 255: dropped", NULL, NULL);
	/* a guest index reads 0: the MSI goes to the hart's (only) file */
	aplic_w(A_TARGET(1), HART(1) | (5U << 12) | 13);
	check_eqx(T, "guest index 5 reads 0", aplic_r(A_TARGET(1)), HART(1) | 13);
	aplic_w(A_SETIPNUM, 1);
	aplic_w(A_TARGET(1), HART(0) | 14);
	aplic_w(A_SETIPNUM, 1);
	check_pending("the controls: EIID 13 to vCPU 1, 14 to vCPU 0", want0, want1);
	aplic_clear();
	files_clear();
}

static void a_aplic_sourcecfg(void)
{
	static const uint32_t inactive[] = { 0x400 | SM_EDGE, 0x400 | SM_DETACHED, 2, 3, 8,
					     0xffffffffU, 0x400 };
	static const struct { uint32_t in, out; } kept[] = {
		{ 1, 1 }, { 4, 4 }, { 5, 5 }, { 6, 6 }, { 7, 7 }, { 0xf0000005U, 5 },
	};
	static const uint32_t nums[] = { 0, 32, 1023, 1024, 0xffffffffU };
	char w[100];

	files_clear();
	aplic_clear();
	for (unsigned long i = 0; i < ARRAY_SIZE(inactive); i++) {
		aplic_w(A_SOURCECFG(3), inactive[i]);
		snprintf(w, sizeof(w), "sourcecfg 0x%x (delegate bit or reserved mode) reads 0",
			 inactive[i]);
		check_eqx(T, w, aplic_r(A_SOURCECFG(3)), 0);
		aplic_w(A_TARGET(3), HART(1) | 20);
		aplic_w(A_SETIENUM, 3);
		aplic_w(A_SETIPNUM, 3);
		check_eqx(T, "  ... its target stays 0", aplic_r(A_TARGET(3)), 0);
		check_eqx(T, "  ... it is neither enabled nor pending",
			  (aplic_r(A_SETIE) | aplic_r(A_SETIP)) & (1U << 3), 0);
	}
	for (unsigned long i = 0; i < ARRAY_SIZE(kept); i++) {
		aplic_w(A_SOURCECFG(3), kept[i].in);
		snprintf(w, sizeof(w), "sourcecfg 0x%x reads 0x%x", kept[i].in, kept[i].out);
		check_eqx(T, w, aplic_r(A_SOURCECFG(3)), kept[i].out);
	}
	/* sources that do not exist (0, 32..1023) */
	aplic_w(A_SOURCECFG(32), SM_EDGE);
	aplic_w(A_SOURCECFG(1023), SM_EDGE);
	check_eqx(T, "sourcecfg 32 and 1023 read 0",
		  aplic_r(A_SOURCECFG(32)) | aplic_r(A_SOURCECFG(1023)), 0);
	/* every source active as an edge (a Level0 one above pended with its
	 * line low: inactive first), then numbers that name none */
	aplic_clear();
	for (unsigned long i = 1; i < 32; i++)
		aplic_w(A_SOURCECFG(i), SM_EDGE);
	for (unsigned long i = 0; i < ARRAY_SIZE(nums); i++) {
		aplic_w(A_SETIPNUM, nums[i]);
		aplic_w(A_SETIPNUM_LE, nums[i]);
		aplic_w(A_SETIENUM, nums[i]);
	}
	check_eqx(T, "setipnum/setienum 0, 32, 1023, ~0: nothing pending", aplic_r(A_SETIP), 0);
	check_eqx(T, "  ... nothing enabled", aplic_r(A_SETIE), 0);
	check_eqx(T, "  ... setip[1] reads 0", aplic_r(A_SETIP + 4), 0);
	/* a level source whose line is low (the UART, IER 0) is never pending */
	aplic_w(A_SOURCECFG(UART_SRC), SM_LEVEL);
	aplic_w(A_SETIPNUM, UART_SRC);
	aplic_w(A_SETIP, 1U << UART_SRC);
	check_eqx(T, "level source with its line low: setip leaves it not pending",
		  aplic_r(A_SETIP) & (1U << UART_SRC), 0);
	check_eqx(T, "  ... its rectified input reads 0", aplic_r(A_IN_CLRIP) & (1U << UART_SRC), 0);
	aplic_clear();
	check_pending("sourcecfg garbage", NULL, NULL);
}

static void a_aplic_genmsi(void)
{
	static const uint32_t dropped[] = { HART(2) | 15, HART(0x3fff) | 15, 0, HART(1),
					    HART(1) | 256, HART(1) | 0x7ff, 0xffffffffU,
					    HART(8) | 1 };
	unsigned long want0[WORDS] = { 1UL << 18 }, want1[WORDS] = { (1UL << 16) | (1UL << 17) };
	char w[100];

	files_clear();
	aplic_clear();	/* IE off: genmsi sends anyway */
	for (unsigned long i = 0; i < ARRAY_SIZE(dropped); i++) {
		aplic_w(A_GENMSI, dropped[i]);
		snprintf(w, sizeof(w), "genmsi 0x%x reads back its hart index and EIID, Busy 0",
			 dropped[i]);
		check_eqx(T, w, aplic_r(A_GENMSI), dropped[i] & TARGET_MASK);
	}
	check_pending("genmsi to no file: dropped", NULL, NULL);
	aplic_w(A_GENMSI, HART(1) | 16);
	aplic_w(A_GENMSI, HART(1) | (1U << 12) | 17);	/* Busy written: read-only */
	aplic_w(A_GENMSI, HART(0) | 18);
	check_eqx(T, "genmsi: Busy never reads 1", aplic_r(A_GENMSI) & (1U << 12), 0);
	check_pending("the controls: 16 and 17 to vCPU 1, 18 to vCPU 0", want0, want1);
	aplic_w(A_GENMSI, 0);
	files_clear();
}

/* What every register reads after the sweeps below: the domain's fixed bits
 * and IE, and genmsi's last value; everything else 0 (no source active). */
static uint32_t expected(unsigned long off, uint32_t domaincfg, uint32_t genmsi)
{
	if (off == A_DOMAINCFG)
		return domaincfg;
	return off == A_GENMSI ? genmsi : 0;
}

static void sweep_check(const char *what, uint32_t domaincfg, uint32_t genmsi)
{
	unsigned long bad = 0, first = -1UL;
	uint32_t got = 0;
	char w[120];

	for (unsigned long off = 0; off < APLIC_SIZE; off += 4) {
		uint32_t v = aplic_r(off);

		if (v != expected(off, domaincfg, genmsi)) {
			if (!bad++) {
				first = off;
				got = v;
			}
		}
	}
	snprintf(w, sizeof(w), "%s: every register reads as it must (first bad 0x%lx: 0x%x)", what,
		 first, got);
	check_eq(T, w, bad, 0);
}

static void a_aplic_every_offset(void)
{
	static const unsigned long offs[] = { A_DOMAINCFG, A_SETIP, A_GENMSI, A_TARGET(1), 0x4000 };
	static const struct { const char *name; try_fn fn; bool store; } acc[] = {
		{ "lb", ld_b, false }, { "lh", ld_h, false }, { "ld", ld_d, false },
		{ "sb", st_b, true }, { "sh", st_h, true }, { "sd", st_d, true },
	};

	files_clear();
	aplic_clear();
	/* ~0 to every word of the window: IE on, sources inactive (D set),
	 * genmsi to hart 16383 (dropped); nothing else sticks */
	for (unsigned long off = 0; off < APLIC_SIZE; off += 4)
		aplic_w(off, 0xffffffffU);
	sweep_check("~0 everywhere", DOMAINCFG_RO | DOMAINCFG_IE, TARGET_MASK);
	/* every source active (edge), then ~0 to every word above sourcecfg:
	 * pending set and cleared, enabled set and cleared, targets hart 16383 */
	for (unsigned long i = 1; i < 32; i++)
		aplic_w(A_SOURCECFG(i), SM_EDGE);
	for (unsigned long off = A_SETIP; off < APLIC_SIZE; off += 4)
		aplic_w(off, 0xffffffffU);
	check_eqx(T, "active sources: targets read hart 16383, EIID 2047", aplic_r(A_TARGET(31)),
		  TARGET_MASK);
	check_eqx(T, "  ... clrie ~0 left nothing enabled", aplic_r(A_SETIE), 0);
	aplic_w(A_SETIE, 0xffffffffU);
	aplic_w(A_SETIP, 0xffffffffU);	/* 31 MSIs to hart 16383 */
	check_eqx(T, "31 MSIs to hart 16383 left (none pending)", aplic_r(A_SETIP), 0);
	check_eqx(T, "  ... all 31 enabled", aplic_r(A_SETIE), 0xfffffffeU);
	check_pending("MSIs to no hart", NULL, NULL);
	/* 0 everywhere: back to reset, genmsi 0 (EIID 0: no MSI) */
	for (unsigned long off = 0; off < APLIC_SIZE; off += 4)
		aplic_w(off, 0);
	sweep_check("0 everywhere", DOMAINCFG_RO, 0);
	/* other widths: the window's fault */
	for (unsigned long i = 0; i < ARRAY_SIZE(offs); i++)
		for (unsigned long k = 0; k < ARRAY_SIZE(acc); k++)
			expect_trap(acc[k].name, acc[k].fn, APLIC_BASE + offs[i],
				    acc[k].store ? EXC_STORE_ACCESS : EXC_LOAD_ACCESS,
				    acc[k].store ? EXC_STORE_ACCESS : EXC_LOAD_ACCESS, APLIC_BASE + offs[i]);
	check_pending("after the sweeps", NULL, NULL);
}

/* ---- the MSI storm ----------------------------------------------------------- */

/* vCPU 1: identities 1..255, 0 and past 255, into vCPU 0's page, nonstop */
static void storm_stores_fn(unsigned long hartid, unsigned long opaque)
{
	unsigned long n = 0;
	uint32_t id = 1;

	(void)hartid;
	(void)opaque;
	file_clear();	/* its own file: genmsi bits pend, no interrupt */
	while (!READ_ONCE(storm_stop)) {
		for (int k = 0; k < 64; k++) {
			imsic_store(0, 0, id);
			id = id == 255 ? 1 : id + 1;
			n++;
		}
		imsic_store(0, 0, 0);
		imsic_store(0, 0, 256 + (uint32_t)(n & 0x3ff));
		imsic_store(0, 0, 0xffffffffU);
		n += 3;
	}
	WRITE_ONCE(storm_stores, n);
}

static void storm_ext(unsigned long irq)
{
	unsigned long id;

	(void)irq;
	for (int k = 0; k < 300; k++) {
		__asm__ volatile("csrrw %0, " __stringify(CSR_STOPEI) ", zero" : "=r"(id) :: "memory");
		id >>= 16;
		if (!id)
			return;
		if (id < 256)
			claims[id]++;
		else
			claims_bad++;
	}
}

static void a_msi_storm(void)
{
	unsigned long storm_ms = bootarg_ulong("storm_ms", 6000), end, genmsi = 0, distinct = 0;
	unsigned long all[WORDS] = { ~1UL, ~0UL, ~0UL, ~0UL }, total = 0, o = other_hartid();
	uint32_t eiid = 1;

	files_clear();
	aplic_clear();
	memset((void *)claims, 0, sizeof(claims));
	claims_bad = 0;
	/* vCPU 0 takes every identity as an interrupt and claims it */
	trap_set_irq(IRQ_S_EXT, storm_ext);
	for (unsigned long w = 0; w < WORDS; w++)
		ireg_write(ISEL_EIE0 + 2 * w, ~0UL);
	ireg_write(ISEL_EIDELIVERY, 1);
	csr_set(sie, MIP_SEIP);
	csr_set(sstatus, SR_SIE);
	storm_stop = 0;
	storm_stores = 0;
	if (!hart_wait_state(o, SBI_HSM_STATE_STOPPED, 5000000) ||
	    hart_start(o, storm_stores_fn, 0)) {
		report_fail(T, "storm: start vCPU 1 (got busy, want started)");
		return;
	}
	printf("STORM-BEGIN\n");
	/* vCPU 0: genmsi as fast as it can, to vCPU 1 and to no file */
	end = rdtime() + us_to_ticks(storm_ms * 1000);
	while (rdtime() < end) {
		for (int k = 0; k < 64; k++) {
			aplic_w(A_GENMSI, HART(1) | eiid);
			eiid = eiid == 255 ? 1 : eiid + 1;
		}
		aplic_w(A_GENMSI, HART(2) | 5);
		aplic_w(A_GENMSI, HART(1) | 0);
		aplic_w(A_GENMSI, 0xffffffffU);
		genmsi += 67;
	}
	WRITE_ONCE(storm_stop, 1);
	check_eq(T, "storm: vCPU 1 stops", hart_wait_state(o, SBI_HSM_STATE_STOPPED, 5000000), 1);
	udelay(10000);
	csr_clear(sstatus, SR_SIE);
	csr_clear(sie, MIP_SEIP);
	trap_set_irq(IRQ_S_EXT, NULL);
	for (unsigned long i = 1; i < 256; i++) {
		distinct += claims[i] != 0;
		total += claims[i];
	}
	printf("STORM-END: stores %lu genmsi %lu claims %lu\n", READ_ONCE(storm_stores), genmsi,
	       total);
	check_ge(T, "storm: vCPU 1 stored at least 1000 times", READ_ONCE(storm_stores), 1000);
	check_ge(T, "storm: vCPU 0 wrote genmsi at least 1000 times", genmsi, 1000);
	check_eq(T, "storm: vCPU 0 claimed every identity 1..255 at least once", distinct, 255);
	check_eq(T, "storm: no claim outside 1..255", claims_bad, 0);
	check_eqx(T, "storm: stopei reads 0 once drained", csr_read(CSR_STOPEI), 0);
	/* vCPU 0 drained; vCPU 1 (delivery off): every identity genmsi named */
	check_pending("storm: vCPU 1 holds every identity genmsi sent", NULL, all);
	files_clear();
}

/* ---- attacks the hypervisor must answer by stopping this VM ------------------ */

static void stop_expected(void)
{
	report_fail(T, "the attack returned (got the guest running on, want the VM stopped)");
}

static void f_imsic_far(void)
{
	unsigned long pc;

	st_w(IMSIC_BASE + 0x100000, &pc);	/* 1 MiB past the window */
	stop_expected();
}

static void f_imsic_past_window(void)
{
	unsigned long pc;

	ld_w(IMSIC_BASE + IMSIC_WINDOW, &pc);	/* the first word after it */
	stop_expected();
}

static void f_aplic_past_window(void)
{
	unsigned long pc;

	st_w(APLIC_BASE + APLIC_SIZE, &pc);
	stop_expected();
}

static void f_plic_in_aia_vm(void)
{
	unsigned long pc;

	ld_w(PLIC_BASE + 4, &pc);	/* an AIA VM has no PLIC */
	stop_expected();
}

static const struct attack attacks[] = {
	{ "imsic_pages_past_vcpus", a_imsic_pages_past_vcpus, false,
	  "pages past nr_vcpus and offsets other than 0: read 0, stores ignored" },
	{ "imsic_identities", a_imsic_identities, false, "identities 0, 256, 2047, ~0: no bit set" },
	{ "imsic_widths", a_imsic_widths, false, "byte/half/64-bit, misaligned: one access fault" },
	{ "fetch_imsic_aplic", a_fetch_aia, false, "fetch from the windows: instruction access fault" },
	{ "imsic_csr_select", a_csr_select, false, "odd eip/eie, reserved siselect: illegal" },
	{ "imsic_stopei", a_stopei, false, "stopei writes claim only the top identity, if any" },
	{ "csr_aia_hyp_from_vs", a_csr_aia_hyp, false, "h*/vs*/m* AIA CSRs from VS: illegal" },
	{ "csr_aia_from_vu", a_csr_aia_from_vu, false, "siselect/sireg/stopei/stopi from VU: illegal" },
	{ "aplic_targets", a_aplic_targets, false, "hart >= nr_vcpus, EIID 0/past 255: dropped" },
	{ "aplic_sourcecfg", a_aplic_sourcecfg, false, "D bit, reserved modes: inactive" },
	{ "aplic_genmsi", a_aplic_genmsi, false, "genmsi to no file dropped, Busy never 1" },
	{ "aplic_every_offset", a_aplic_every_offset, false, "~0 and 0 to every word: model state" },
	{ "msi_storm", a_msi_storm, false, "page stores and genmsi nonstop: all delivered, own VM only" },
	/* each of these ends the VM: one per VM, last */
	{ "stop_imsic_far", f_imsic_far, true, "VM stopped: store 1 MiB past the IMSIC window" },
	{ "stop_imsic_past_window", f_imsic_past_window, true, "VM stopped: load past the window" },
	{ "stop_aplic_past_window", f_aplic_past_window, true, "VM stopped: store past the APLIC" },
	{ "stop_plic_in_aia_vm", f_plic_in_aia_vm, true, "VM stopped: an AIA VM has no PLIC" },
};

void test_main(unsigned long hartid)
{
	unsigned long from = bootarg_ulong("from", 0), to = bootarg_ulong("to", ARRAY_SIZE(attacks) - 1);

	(void)hartid;
	if (bootarg_ulong("list", 0)) {
		for (unsigned long i = 0; i < ARRAY_SIZE(attacks); i++)
			printf("ATTACK-CASE: %lu %s %s: %s\n", i, attacks[i].name,
			       attacks[i].stops ? "stops" : "returns", attacks[i].expect);
		return;
	}
	if (to >= ARRAY_SIZE(attacks))
		to = ARRAY_SIZE(attacks) - 1;
	for (unsigned long i = from; i <= to; i++) {
		printf("ATTACK-BEGIN: %lu %s\n", i, attacks[i].name);
		attacks[i].fn();
		printf("ATTACK-END: %lu %s\n", i, attacks[i].name);
	}
}
