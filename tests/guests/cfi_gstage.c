/* SPDX-License-Identifier: MIT */
/* Shadow-stack accesses against the G-stage: write-protected RAM (dirty chunks) and device memory.
 *
 * The payload runs in VS-mode under Carapace and in S-mode on bare QEMU.
 * Layout (offsets from the RAM base; Carapace maps guest RAM in 2 MiB
 * chunks on first touch): the image, its bss and stacks in chunk 1; the
 * shadow-stack page S (VS-stage xwr=010) at +8 MiB (chunk 4); an ordinary
 * data page D at +12 MiB (chunk 6); chunks F (+16 MiB) and G (+20 MiB)
 * stay untouched until after a write-protect. S and D are written once
 * before the first write-protect so they are mapped when it runs.
 *
 * Carapace debug SBI extension (EID 0x0A435250, VMs with debug=1 only):
 * fid 0 write-protects every mapped chunk of the VM (value = how many),
 * fid 1 returns the chunks written since. Bare QEMU and Carapace without
 * debug=1: probe gives 0 and both calls give NOT_SUPPORTED (-2); the
 * write-protect checks are then SKIPped. Bootarg debug_ext=0/1 says which
 * to expect (absent: whatever the probe says).
 *
 * Expected with the extension (docs/cfi.md §9.6, §9.9, §9.10):
 *  Each probe runs between the write-protect and the dirty-count ecall
 *  with no other memory write, so the count is exact. Nothing traps
 *  (the hypervisor resolves each store/AMO guest-page fault as a write and
 *  retries): loads, ordinary ones and from the SS page, dirty 0 chunks; a
 *  store, sspush or ssamoswap.d dirties exactly 1, and the data lands; a
 *  store to a chunk first touched after the write-protect (directly, or
 *  after a first-touch load) was written since, so it counts too.
 *  sspopchk: the spec makes every SS access need G-stage R and W, so it
 *  faults 23 and the chunk ends up dirty (1). QEMU 10.0.2 quirk Q8: the
 *  G-stage check of sspopchk is a load, it does not fault and the count
 *  stays 0. Both are accepted; an INFO line says which was seen.
 *  With C code in between (stack, bss, S and D written): exactly the
 *  distinct chunks of those addresses; write-protect reports at least the
 *  chunks the payload touched.
 *
 * Shadow-stack access to a device (a VS-stage SS gigapage over GPA 0, and
 * an RW alias of it at VA 0x40000000):
 *  Carapace: sspush, sspopchk and ssamoswap.d on the UART (GPA 0x10000000),
 *  sspush and ssamoswap.d through the RW alias, and ssamoswap.w on a PLIC
 *  priority register each raise exactly one store/AMO access fault (7)
 *  with stval = the guest virtual address; ssp does not move; no byte
 *  reaches the console (the "MMIO-SS-LINE: <>" line stays empty) and the
 *  UART and PLIC registers are unchanged. Spec: on the SS page the G-stage
 *  fault (23; for sspopchk QEMU Q8 makes it a load guest-page fault, 21)
 *  must not be emulated as MMIO, the hypervisor injects 7; via
 *  the RW alias the VS-stage itself raises 7. QEMU 10.0.2 quirk Q7: the
 *  RW-alias accesses pass the VS-stage, and the G-stage fault is turned
 *  into 7 by the hypervisor: the guest sees 7 either way. Ordinary byte
 *  loads and stores to the UART still work (MMIO emulation).
 *  Bare QEMU (S-mode, no G-stage): Q7 and no PMA check for SS accesses
 *  mean every probe is carried out on the device without a trap. Measured
 *  on 10.0.2: the 16550 model takes only the low byte of a 4/8-byte
 *  access, at the register addressed, so each UART probe that writes puts
 *  one byte on the console ('Z', 'Y', 'X', 'W': the line reads
 *  "MMIO-SS-LINE: <ZYXW>"), sspopchk reads RBR (0) and matches, SCR and
 *  LCR stay as they were, and the PLIC register is swapped. Harmless (no
 *  hang, no stream of bytes), so the probes run there too, printing INFO
 *  lines only.
 */
#include "libguest.h"
#include "cfi.h"
#include "mmu.h"

#define T "cfi_gstage"

#define MEGA2		(1UL << 21)
#define GIGA		(1UL << 30)
#define OFF_S		(8UL << 20)
#define OFF_D		(12UL << 20)
#define OFF_F		(16UL << 20)
#define OFF_G		(20UL << 20)
#define RAM_NEEDED	(32UL << 20)

#define VAL_A	0x1111222233334444UL
#define VAL_B	0x5555666677778888UL
#define VAL_C	0x0123456789abcdefUL
#define VAL_D	0xfedcba9876543210UL
#define VAL_E	0x0badc0de0badc0deUL

/* Device window: GPA 0 .. 1 GiB as an SS gigapage at VA 0, RW at VA 1 GiB. */
#define UART_GPA	0x10000000UL
#define UART_SS		UART_GPA
#define UART_RW		(GIGA + UART_GPA)
#define UART_LCR	3
#define UART_LSR	5
#define UART_SCR	7
#define LSR_THRE_TEMT	0x60
#define PLIC_PRIO1	0x0c000004UL	/* priority of source 1 */
#define PLIC_PRIO1_SS	PLIC_PRIO1
#define PLIC_PRIO1_RW	(GIGA + PLIC_PRIO1)

/* ss_access() operations (numbers: the asm below uses them) */
#define OP_NONE		0
#define OP_LOAD		1	/* ld */
#define OP_STORE	2	/* sd */
#define OP_SSPUSH	3
#define OP_SSPOPCHK	4
#define OP_SSAMOSWAP_D	5
#define OP_LOAD_STORE	6	/* ld, then sd to the same address */
#define OP_SSAMOSWAP_W	7

/* What wp_probe() saw: both ecalls, and ss_access()'s result. */
struct wp_res {
	long wp_err;
	unsigned long wp_chunks;
	long dirty_err;
	unsigned long dirty;
	unsigned long val;
};

/*
 * ss_access(op, addr, val): one access, see the OP_ names. sspush stores
 * @val at @addr (ssp = addr + 8 first), sspopchk checks @val at @addr
 * (ssp = addr first). Returns what a load or swap read, else -1.
 * Clobbers only a0, t0, t1 (wp_probe relies on it).
 */
unsigned long ss_access(unsigned long op, unsigned long addr, unsigned long val);
/*
 * wp_probe(res, op, addr, val): write-protect, ss_access(), dirty count,
 * with no memory write in between; only then are the results stored.
 */
void wp_probe(struct wp_res *res, unsigned long op, unsigned long addr, unsigned long val);
extern char ss_access_push[], ss_access_pop[], ss_access_swapd[], ss_access_swapw[];

__asm__(
"	.text\n"
"	.option push\n"
"	.option norvc\n"
"	.align 2\n"
"	.globl ss_access, ss_access_push, ss_access_pop, ss_access_swapd, ss_access_swapw\n"
"ss_access:\n"
"	mv	t0, a0\n"
"	li	a0, -1\n"
"	li	t1, " __stringify(OP_LOAD) "\n"
"	beq	t0, t1, 1f\n"
"	li	t1, " __stringify(OP_STORE) "\n"
"	beq	t0, t1, 2f\n"
"	li	t1, " __stringify(OP_SSPUSH) "\n"
"	beq	t0, t1, 3f\n"
"	li	t1, " __stringify(OP_SSPOPCHK) "\n"
"	beq	t0, t1, 4f\n"
"	li	t1, " __stringify(OP_SSAMOSWAP_D) "\n"
"	beq	t0, t1, 5f\n"
"	li	t1, " __stringify(OP_LOAD_STORE) "\n"
"	beq	t0, t1, 6f\n"
"	li	t1, " __stringify(OP_SSAMOSWAP_W) "\n"
"	beq	t0, t1, 7f\n"
"	ret\n"
"1:	ld	a0, 0(a1)\n"
"	ret\n"
"2:	sd	a2, 0(a1)\n"
"	ret\n"
"3:	addi	t1, a1, 8\n"
"	csrw	0x011, t1\n"
"	mv	t0, a2\n"
"ss_access_push:\n"
	SSPUSH_T0
"	ret\n"
"4:	csrw	0x011, a1\n"
"	mv	t0, a2\n"
"	j	ss_access_pop\n"		/* a TB starts at the probe (QEMU Q3) */
"ss_access_pop:\n"
	SSPOPCHK_T0
"	ret\n"
"5:\n"
"ss_access_swapd:\n"
	SSAMOSWAP_D(a0, a2, a1)
"	ret\n"
"6:	ld	a0, 0(a1)\n"
"	sd	a2, 0(a1)\n"
"	ret\n"
"7:\n"
"ss_access_swapw:\n"
"	.insn r 0x2f, 2, 0x24, a0, a1, a2\n"	/* ssamoswap.w a0, a2, (a1) */
"	ret\n"
"\n"
"	.globl wp_probe\n"
"wp_probe:\n"
"	mv	t3, a0\n"
"	mv	t4, a1\n"
"	mv	t5, a2\n"
"	mv	t6, a3\n"
"	mv	t2, ra\n"
"	li	a7, " __stringify(SBI_EXT_CARAPACE_DEBUG) "\n"
"	li	a6, " __stringify(SBI_CARAPACE_WRITE_PROTECT) "\n"
"	ecall\n"
"	mv	a4, a0\n"
"	mv	a5, a1\n"
"	mv	a0, t4\n"
"	mv	a1, t5\n"
"	mv	a2, t6\n"
"	call	ss_access\n"
"	mv	t4, a0\n"
"	li	a7, " __stringify(SBI_EXT_CARAPACE_DEBUG) "\n"
"	li	a6, " __stringify(SBI_CARAPACE_DIRTY_CHUNKS) "\n"
"	ecall\n"
"	sd	a4, 0(t3)\n"
"	sd	a5, 8(t3)\n"
"	sd	a0, 16(t3)\n"
"	sd	a1, 24(t3)\n"
"	sd	t4, 32(t3)\n"
"	mv	ra, t2\n"
"	ret\n"
"	.option pop\n");

_Static_assert(sizeof(struct wp_res) == 40, "wp_res layout");

extern char __image_end[];

static struct cfi_rec rec;
static unsigned long dev_root[512] __attribute__((aligned(PAGE_SIZE)));
static volatile unsigned long bss_word;
static unsigned long ram, pg_s, pg_d, pg_f, pg_g;

static unsigned long chunk(unsigned long addr)
{
	return (addr - ram) / MEGA2;
}

static volatile unsigned long *word(unsigned long addr)
{
	return (volatile unsigned long *)addr;
}

static void begin(void)
{
	cfi_rec_clear(&rec);
}

static void expect_none(const char *what)
{
	if (rec.count)
		report_fail(T, "%s: no trap (got scause %lu stval 0x%lx at 0x%lx, want none)",
			    what, rec.scause, rec.stval, rec.sepc);
	else
		report_pass(T, "%s: no trap", what);
}

/* --- debug extension presence ---------------------------------------------------------- */

static bool probe_debug_ext(void)
{
	unsigned long want = bootarg_ulong("debug_ext", 2);
	struct sbiret r = sbi_probe(SBI_EXT_CARAPACE_DEBUG);
	bool present = r.error == SBI_SUCCESS && r.value;

	check_eq(T, "probe of the debug extension succeeds", r.error, SBI_SUCCESS);
	if (want == 1)
		check_ne(T, "debug extension present (debug=1): probe != 0", r.value, 0);
	else if (want == 0)
		check_eq(T, "debug extension absent: probe 0", r.value, 0);
	else
		report_info(T, "debug extension probe: %ld", r.value);

	if (present)
		return true;
	r = SBI_CALL0(SBI_EXT_CARAPACE_DEBUG, SBI_CARAPACE_WRITE_PROTECT);
	check_eq(T, "debug extension absent: write-protect is NOT_SUPPORTED (-2)",
		 r.error, SBI_ERR_NOT_SUPPORTED);
	r = SBI_CALL0(SBI_EXT_CARAPACE_DEBUG, SBI_CARAPACE_DIRTY_CHUNKS);
	check_eq(T, "debug extension absent: dirty-chunks is NOT_SUPPORTED (-2)",
		 r.error, SBI_ERR_NOT_SUPPORTED);
	return false;
}

/* --- write-protected RAM ---------------------------------------------------------------- */

static unsigned long distinct_chunks(const unsigned long *addrs, unsigned int n)
{
	unsigned long seen[8], count = 0;

	for (unsigned int i = 0; i < n && count < ARRAY_SIZE(seen); i++) {
		unsigned long c = chunk(addrs[i]), j;

		for (j = 0; j < count && seen[j] != c; j++)
			;
		if (j == count)
			seen[count++] = c;
	}
	return count;
}

/* One wp_probe(): both calls succeed, nothing traps, @dirty chunks written. */
static bool probe(const char *what, struct wp_res *r, unsigned long op, unsigned long addr,
		  unsigned long val, unsigned long dirty)
{
	char buf[128];

	begin();
	wp_probe(r, op, addr, val);
	if (r->wp_err || r->dirty_err) {
		report_fail(T, "%s: debug calls (got errors %ld/%ld, want 0/0)", what,
			    r->wp_err, r->dirty_err);
		return false;
	}
	expect_none(what);
	if (dirty == -1UL)
		return true;
	snprintf(buf, sizeof(buf), "%s: %lu chunk%s dirty", what, dirty, dirty == 1 ? "" : "s");
	return check_eq(T, buf, r->dirty, dirty);
}

static void test_write_protect(void)
{
	unsigned long slot = pg_s + PAGE_SIZE - 16, written[4], first, want;
	volatile unsigned long local = 0;
	struct wp_res r;
	struct sbiret s;

	/* what the payload has written so far: its image (bss, stack), S, D */
	written[0] = (unsigned long)&bss_word;
	written[1] = (unsigned long)&local;
	written[2] = pg_s;
	written[3] = pg_d;
	want = distinct_chunks(written, 4);
	*word(pg_d) = VAL_A;

	/* nothing in between: not even the image chunk gets dirty */
	if (!probe("write-protect then dirty-chunks, no access between", &r, OP_NONE, 0, 0, 0))
		return;
	first = r.wp_chunks;
	report_info(T, "write-protect: %lu chunks of %lu", first, env.ram_size / MEGA2);
	check_ge(T, "write-protect covers every chunk the payload touched", first, want);
	check_le(T, "write-protect covers no more chunks than the VM has", first,
		 env.ram_size / MEGA2);

	probe("ordinary load from a write-protected chunk", &r, OP_LOAD, pg_d, 0, 0);
	check_eqx(T, "ordinary load from a write-protected chunk: value", r.val, VAL_A);
	check_eq(T, "write-protect count is stable", r.wp_chunks, first);

	probe("ordinary store to a write-protected chunk", &r, OP_STORE, pg_d + 8, VAL_B, 1);
	check_eqx(T, "ordinary store to a write-protected chunk: value landed",
		  *word(pg_d + 8), VAL_B);

	probe("sspush to a write-protected chunk", &r, OP_SSPUSH, slot, VAL_C, 1);
	check_eqx(T, "sspush to a write-protected chunk: ssp -= 8", csr_read(CSR_SSP), slot);
	check_eqx(T, "sspush to a write-protected chunk: value landed", *word(slot), VAL_C);

	probe("ordinary load from the SS page in a write-protected chunk", &r, OP_LOAD, slot, 0, 0);
	check_eqx(T, "ordinary load from the SS page: value", r.val, VAL_C);

	if (probe("sspopchk from a write-protected chunk", &r, OP_SSPOPCHK, slot, VAL_C, -1UL)) {
		check_eqx(T, "sspopchk from a write-protected chunk: ssp += 8",
			  csr_read(CSR_SSP), slot + 8);
		if (r.dirty == 1)
			report_info(T, "sspopchk on a write-protected chunk: faulted at G-stage and was resolved as a write (spec)");
		else if (r.dirty == 0)
			report_info(T, "sspopchk on a write-protected chunk: no G-stage fault, chunk not dirty (QEMU 10.0.2 Q8: sspopchk needs only R)");
		if (r.dirty <= 1)
			report_pass(T, "sspopchk from a write-protected chunk: %lu dirty (spec 1, QEMU Q8 0)",
				    r.dirty);
		else
			report_fail(T, "sspopchk from a write-protected chunk: dirty (got %lu, want 1 (spec) or 0 (QEMU Q8))",
				    r.dirty);
	}

	probe("ssamoswap.d on a write-protected chunk", &r, OP_SSAMOSWAP_D, slot, VAL_D, 1);
	check_eqx(T, "ssamoswap.d on a write-protected chunk: old value", r.val, VAL_C);
	check_eqx(T, "ssamoswap.d on a write-protected chunk: new value landed",
		  *word(slot), VAL_D);

	/* chunks that were not mapped when write-protect ran */
	probe("store to a chunk first touched after write-protect", &r, OP_STORE, pg_f, VAL_E, 1);
	check_eqx(T, "store to a chunk first touched after write-protect: value landed",
		  *word(pg_f), VAL_E);
	probe("load then store to a chunk first touched (by the load) after write-protect", &r,
	      OP_LOAD_STORE, pg_g, VAL_E, 1);
	check_eqx(T, "first-touch load reads zero", r.val, 0);
	check_eqx(T, "load then store to a fresh chunk: value landed", *word(pg_g), VAL_E);

	/* C code in between: the stack, bss, S and D get written */
	s = SBI_CALL0(SBI_EXT_CARAPACE_DEBUG, SBI_CARAPACE_WRITE_PROTECT);
	bss_word = VAL_A;
	local = VAL_B;
	*word(pg_d + 16) = local;
	begin();
	ss_access(OP_SSPUSH, slot, VAL_A);
	ss_access(OP_SSAMOSWAP_D, slot, VAL_B);
	r.val = ss_access(OP_SSPOPCHK, slot, VAL_B);
	r.dirty = SBI_CALL0(SBI_EXT_CARAPACE_DEBUG, SBI_CARAPACE_DIRTY_CHUNKS).value;
	check_eq(T, "write-protect again", s.error, SBI_SUCCESS);
	check_ge(T, "write-protect also covers the chunks mapped since (F, G)", s.value, first + 2);
	expect_none("stack, bss, data and SS writes after write-protect");
	check_eq(T, "dirty chunks = distinct chunks of the stack, bss, S and D",
		 r.dirty, distinct_chunks(written, 4));
	check_eqx(T, "data page holds the stored value", *word(pg_d + 16), VAL_B);
}

/* --- shadow-stack accesses to devices ------------------------------------------------------ */

static unsigned long leaf(unsigned long pa, unsigned long bits)
{
	return (pa >> PAGE_SHIFT) << PTE_PPN_SHIFT | bits | PTE_V | PTE_A | PTE_D;
}

/* Own tables for this part: SS and RW gigapages over GPA 0, RAM as RWX. */
static void dev_map_enable(void)
{
	unsigned long ram_giga = ram & ~(GIGA - 1);

	memset(dev_root, 0, sizeof(dev_root));
	dev_root[0] = leaf(0, PTE_W);				/* xwr=010: SS */
	dev_root[1] = leaf(0, PTE_R | PTE_W);
	dev_root[(ram_giga >> 30) & 511] = leaf(ram_giga, PTE_R | PTE_W | PTE_X);
	__asm__ volatile("sfence.vma" ::: "memory");
	csr_write(CSR_SATP, SATP_MODE_SV39 | (unsigned long)dev_root >> PAGE_SHIFT);
	__asm__ volatile("sfence.vma" ::: "memory");
}

static volatile uint8_t *uart_reg(unsigned int reg)
{
	return (volatile uint8_t *)(UART_RW + reg);
}

static void test_uart_plain(void)
{
	*uart_reg(UART_SCR) = 0xa5;
	check_eqx(T, "ordinary store + load of the UART scratch register (MMIO)",
		  *uart_reg(UART_SCR), 0xa5);
	check_eqx(T, "ordinary load of the UART LSR: THR empty",
		  *uart_reg(UART_LSR) & LSR_THRE_TEMT, LSR_THRE_TEMT);
}

struct mmio_probe {
	const char *what;
	unsigned long op, va, val;
	char *pc;
	/* filled in by the run */
	unsigned long count, scause, stval, sepc, ssp;
};

#define PROBE(w, o, a, v, p) { .what = (w), .op = (o), .va = (a), .val = (v), .pc = (p) }

/* Each must raise one 7 at its instruction, stval = @va, ssp unmoved. */
static void check_mmio_probe(const struct mmio_probe *p)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "%s: traps once", p->what);
	if (!check_eq(T, buf, p->count, 1)) {
		report_info(T, "%s: last trap scause %lu stval 0x%lx sepc 0x%lx", p->what,
			    p->scause, p->stval, p->sepc);
		return;
	}
	snprintf(buf, sizeof(buf), "%s: store/AMO access fault (7)", p->what);
	check_eq(T, buf, p->scause, EXC_STORE_ACCESS);
	snprintf(buf, sizeof(buf), "%s: sepc is the instruction", p->what);
	check_eqx(T, buf, p->sepc, (unsigned long)p->pc);
	snprintf(buf, sizeof(buf), "%s: stval is the virtual address 0x%lx", p->what, p->va);
	check_eqx(T, buf, p->stval, p->va);
	if (p->op == OP_SSPUSH || p->op == OP_SSPOPCHK) {
		snprintf(buf, sizeof(buf), "%s: ssp unchanged", p->what);
		check_eqx(T, buf, p->ssp, p->op == OP_SSPUSH ? p->va + 8 : p->va);
	}
}

/* Bare QEMU: what happened, as INFO lines (no G-stage, nothing to check). */
static void info_mmio_ss_bare(const struct mmio_probe *probes, unsigned int n,
			      unsigned long lcr)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct mmio_probe *p = &probes[i];

		if (p->count)
			report_info(T, "bare QEMU: %s: cause %lu, stval 0x%lx", p->what, p->scause,
				    p->stval);
		else
			report_info(T, "bare QEMU: %s: no trap, done on the device (QEMU Q7; spec: 7)",
				    p->what);
	}
	report_info(T, "bare QEMU: after the SS accesses UART SCR 0x%x (was 0xa5), LCR 0x%x (was 0x%lx), PLIC priority 0x%x (was 3)",
		    *uart_reg(UART_SCR), *uart_reg(UART_LCR), lcr,
		    *(volatile uint32_t *)PLIC_PRIO1_RW);
}

static void test_mmio_ss(void)
{
	struct mmio_probe probes[] = {
		PROBE("sspush to the UART (SS page)", OP_SSPUSH, UART_SS, 'Z', ss_access_push),
		PROBE("sspopchk from the UART (SS page)", OP_SSPOPCHK, UART_SS, 0, ss_access_pop),
		PROBE("ssamoswap.d on the UART (SS page)", OP_SSAMOSWAP_D, UART_SS, 'Y',
		      ss_access_swapd),
		PROBE("ssamoswap.d on the UART (RW page)", OP_SSAMOSWAP_D,
		      UART_RW, 'X', ss_access_swapd),
		PROBE("sspush to the UART (RW page)", OP_SSPUSH, UART_RW, 'W',
		      ss_access_push),
		PROBE("ssamoswap.w on a PLIC priority register (SS page)", OP_SSAMOSWAP_W,
		      PLIC_PRIO1_SS, 5, ss_access_swapw),
	};
	volatile uint32_t *prio = (volatile uint32_t *)PLIC_PRIO1_RW;
	unsigned long lcr;
	unsigned int i;

	test_uart_plain();
	lcr = *uart_reg(UART_LCR);
	*prio = 3;

	/* nothing between '<' and '>' may reach the console */
	printf("MMIO-SS-LINE: <");
	for (i = 0; i < ARRAY_SIZE(probes); i++) {
		struct mmio_probe *p = &probes[i];

		begin();
		ss_access(p->op, p->va, p->val);
		p->ssp = csr_read(CSR_SSP);
		p->count = rec.count;
		p->scause = rec.scause;
		p->stval = rec.stval;
		p->sepc = rec.sepc;
	}
	printf(">\n");

	if (!env.carapace) {
		info_mmio_ss_bare(probes, ARRAY_SIZE(probes), lcr);
		*prio = 0;
		return;
	}
	for (i = 0; i < ARRAY_SIZE(probes); i++)
		check_mmio_probe(&probes[i]);
	check_eqx(T, "UART scratch register unchanged by the SS accesses",
		  *uart_reg(UART_SCR), 0xa5);
	check_eqx(T, "UART LCR unchanged by the SS accesses", *uart_reg(UART_LCR), lcr);
	check_eqx(T, "PLIC priority unchanged by ssamoswap.w", *prio, 3);
	*prio = 0;
}

/* ------------------------------------------------------------------------------------------- */

void test_main(unsigned long hartid)
{
	unsigned long old_stvec = csr_read(CSR_STVEC);
	bool debug;

	(void)hartid;
	ram = env.ram_base;
	pg_s = ram + OFF_S;
	pg_d = ram + OFF_D;
	pg_f = ram + OFF_F;
	pg_g = ram + OFF_G;
	if (env.ram_size < RAM_NEEDED || (unsigned long)__image_end > pg_s ||
	    chunk((unsigned long)_start) == chunk(pg_s)) {
		report_fail(T, "layout (got ram 0x%lx+0x%lx, image end %p, want >= 32 MiB, image below +8 MiB)",
			    ram, (unsigned long)env.ram_size, __image_end);
		return;
	}
	/* map S and D (write them once) before anything is write-protected */
	memset((void *)pg_s, 0, PAGE_SIZE);
	memset((void *)pg_d, 0, PAGE_SIZE);
	report_info(T, "chunks: image %lu, S %lu, D %lu, F %lu, G %lu", chunk((unsigned long)_start),
		    chunk(pg_s), chunk(pg_d), chunk(pg_f), chunk(pg_g));

	cfi_trap_install(&rec);
	mmu_init();
	if (mmu_map(pg_s, PAGE_SIZE, MMU_SS)) {
		report_fail(T, "page tables (got no room, want mapped)");
		return;
	}
	mmu_enable();
	if (!check_eq(T, "FWFT set shadow_stack=1",
		      fwft_set(SBI_FWFT_SHADOW_STACK, 1, 0).error, SBI_SUCCESS))
		goto out;

	debug = probe_debug_ext();
	if (debug)
		test_write_protect();
	else
		report_skip(T, "write-protect and dirty-chunk checks: no Carapace debug extension");

	dev_map_enable();
	test_mmio_ss();
	mmu_enable();

	check_eq(T, "FWFT set shadow_stack=0",
		 fwft_set(SBI_FWFT_SHADOW_STACK, 0, 0).error, SBI_SUCCESS);
out:
	mmu_disable();
	begin();
	cfi_trap_remove(old_stvec);
	check_eq(T, "no interrupts while the CFI vector was in place", rec.irqs, 0);
	printf("INFO: observed lp=%lu ss=%lu\n", rec.lp, rec.ss);
}
