/* SPDX-License-Identifier: MIT */
/* Guest-side fuzzer (issue 14, item 2): a seeded stream of random operations
 * against the hypervisor from VS and VU.
 *
 * bootargs: seed=N (default 1), ops=N (default 20000), progress=N (a
 * "GFUZZ: progress" line every N operations, default 100000).
 *
 * Operations (one random choice each):
 *  - sbi:  a random ecall (random EID/FID biased to the implemented
 *          extensions, arguments biased to boundary values);
 *  - csr:  csrrw/csrrs/csrrc/csr*i on a random CSR number from VS or VU;
 *  - mmio: a random load/store/AMO (width, offset) in a device window of
 *          this VM's DT (/soc children), from VS or VU;
 *  - insn: a random instruction word (32-bit, or one compressed) written
 *          into an executable page, fence.i, run in VS or VU;
 *  - pte:  Sv39 on, random permission bits on one of our own 4 KiB pages,
 *          then a load/store/AMO/fetch/shadow-stack access there from VS or VU.
 * Every generated instruction runs through one trampoline (gf_enter): all
 * GPRs loaded from a context, sret into VS or VU at the page; any trap comes
 * back to our vector, which counts the cause and returns into the fuzzer's
 * saved context (a longjmp). A guest timer (Sstc) is armed before each run as
 * a watchdog (wfi, loops).
 *
 * Filtered (the hypervisor would legitimately end or wreck this VM, or it
 * would wreck our own trap handling): SRST with a valid type and reason,
 * HSM hart_stop (only ever of the caller), SUSP suspend to RAM, HSM
 * non-retentive suspend to a RAM address, hart_start of a real hart at a
 * RAM address other than _hart_entry (it would run garbage), FWFT
 * LANDING_PAD=1 (our code has no lpad), DBCN/STA/PMU-snapshot addresses in
 * our RAM (moved to a scratch buffer), VS writes to sstatus, sie, stvec,
 * sscratch, satp, senvcfg and ssp (made reads), loads/stores with base x0 and
 * a compressed memory access or jump after a register change (an access
 * outside RAM stops the VM: a legitimate end, counted by the harness).
 * Each filtered operation is counted.
 *
 * Ends with "GFUZZ: done ..." (counts, distinct trap causes and SBI errors),
 * one PASS line, DONE, and SRST shutdown. Runs only under Carapace or bare
 * QEMU; no checks of results: the harness checks the host and the victim.
 */
#include "libguest.h"
#include "mmu.h"

#define T "gfuzz"

/* --- random numbers ------------------------------------------------------------------ */

static uint64_t rng;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static unsigned long below(unsigned long n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned int pct)
{
	return below(100) < pct;
}

/* Boundary values first, then anything. */
static unsigned long rnd_arg(void)
{
	static const unsigned long edges[] = {
		0, 1, 2, 3, 4, 7, 8, 0xff, 0x100, 0xfff, 0x1000, 0x7fffffff, 0x80000000,
		0xffffffff, 0x100000000UL, 0x7fffffffffffffffUL, 0x8000000000000000UL,
		-1UL, -2UL, -4096UL, 0x80000000UL, 0x80200000UL, 0x10000000UL,
		0x0c000000UL, 0x10100000UL, 0xf0000000UL, 0xe0000000UL,
	};

	switch (below(4)) {
	case 0:
		return edges[below(ARRAY_SIZE(edges))];
	case 1:
		return below(16);
	case 2:
		return env.ram_base + below(env.ram_size + 0x1000) - 0x800;
	default:
		return rnd();
	}
}

/* --- tallies ------------------------------------------------------------------------- */

enum { OP_SBI, OP_CSR, OP_MMIO, OP_INSN, OP_PTE, NR_OPS };
static const char *const op_names[NR_OPS] = { "sbi", "csr", "mmio", "insn", "pte" };
static unsigned long op_count[NR_OPS], filtered, vu_runs, vs_runs, watchdogs;
static unsigned long exc_seen, irq_seen;	/* bit per cause */
static unsigned long exc_count[64];
static unsigned long sbierr_seen;		/* bit (-error) for -1..-63, bit 0: success */
static unsigned long sbierr_other;

static void note_sbi(long err)
{
	if (err <= 0 && err > -64)
		sbierr_seen |= 1UL << -err;
	else
		sbierr_other++;
}

/* --- the trap vector and the trampoline ------------------------------------------------ */

/* Frame: x0..x31, then sepc, sstatus, scause, stval (as the library's). */
struct frame {
	unsigned long x[32];
	unsigned long sepc, sstatus, scause, stval;
};

/* The fuzzer's context saved by gf_enter: ra, sp, gp, tp, s0..s11. */
unsigned long jmpbuf[16];
unsigned long gf_active;		/* 1 while a generated instruction runs */
static unsigned long last_cause;
static char trap_stack[8192] __attribute__((aligned(16)));

extern char gf_vector[], gf_resume[];
/* Run from @pc with GPRs @regs (x1..x31; x0 ignored) in VS (@user=0) or VU;
 * returns when a trap (or the watchdog) brings it back: scause. */
unsigned long gf_enter(const unsigned long *regs, unsigned long pc, unsigned long user);

__asm__(
"	.text\n"
"	.balign 4\n"
"	.globl gf_enter\n"
"gf_enter:\n"
"	la	t0, jmpbuf\n"
"	sd	ra, 0(t0)\n"
"	sd	sp, 8(t0)\n"
"	sd	gp, 16(t0)\n"
"	sd	tp, 24(t0)\n"
"	sd	s0, 32(t0)\n"
"	sd	s1, 40(t0)\n"
"	sd	s2, 48(t0)\n"
"	sd	s3, 56(t0)\n"
"	sd	s4, 64(t0)\n"
"	sd	s5, 72(t0)\n"
"	sd	s6, 80(t0)\n"
"	sd	s7, 88(t0)\n"
"	sd	s8, 96(t0)\n"
"	sd	s9, 104(t0)\n"
"	sd	s10, 112(t0)\n"
"	sd	s11, 120(t0)\n"
"	csrw	sepc, a1\n"
	/* SPP = !user, SPIE = 1: the watchdog timer can interrupt VS too */
"	li	t0, 0x100\n"
"	csrc	sstatus, t0\n"
"	bnez	a2, 1f\n"
"	csrs	sstatus, t0\n"
"1:	li	t0, 0x20\n"
"	csrs	sstatus, t0\n"
"	la	t0, gf_active\n"
"	li	t1, 1\n"
"	sd	t1, 0(t0)\n"
"	mv	t6, a0\n"
"	.irp n, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30\n"
"	ld	x\\n, \\n*8(t6)\n"
"	.endr\n"
"	ld	t6, 31*8(t6)\n"
"	sret\n"
"	.globl gf_resume\n"
"gf_resume:\n"
"	ret\n"
	/* The vector: sscratch always holds the top of trap_stack. */
"	.balign 4\n"
"	.globl gf_vector\n"
"gf_vector:\n"
"	csrrw	sp, sscratch, sp\n"
"	addi	sp, sp, -36*8\n"
"	sd	x1, 1*8(sp)\n"
"	.irp n, 3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
"	sd	x\\n, \\n*8(sp)\n"
"	.endr\n"
"	csrr	t0, sscratch\n"
"	sd	t0, 2*8(sp)\n"
"	csrr	t0, sepc\n"
"	sd	t0, 32*8(sp)\n"
"	csrr	t0, sstatus\n"
"	sd	t0, 33*8(sp)\n"
"	csrr	t0, scause\n"
"	sd	t0, 34*8(sp)\n"
"	csrr	t0, stval\n"
"	sd	t0, 35*8(sp)\n"
"	.option push\n"
"	.option norelax\n"
"	la	gp, __global_pointer$\n"
"	.option pop\n"
"	ld	tp, jmpbuf+24\n"
"	mv	a0, sp\n"
"	call	gf_trap\n"
"	ld	t0, 32*8(sp)\n"
"	csrw	sepc, t0\n"
"	ld	t0, 33*8(sp)\n"
"	csrw	sstatus, t0\n"
"	addi	t0, sp, 36*8\n"
"	csrw	sscratch, t0\n"
"	ld	x1, 1*8(sp)\n"
"	.irp n, 3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
"	ld	x\\n, \\n*8(sp)\n"
"	.endr\n"
"	ld	sp, 2*8(sp)\n"
"	sret\n");

void gf_trap(struct frame *f);
void gf_trap(struct frame *f)
{
	unsigned long cause = f->scause & ~CAUSE_IRQ_FLAG;

	if (f->scause & CAUSE_IRQ_FLAG) {
		irq_seen |= 1UL << (cause & 63);
		if (cause == IRQ_S_TIMER) {
			csr_write(CSR_STIMECMP, -1UL);
			watchdogs++;
		}
	} else {
		exc_seen |= 1UL << (cause & 63);
		exc_count[cause & 63]++;
	}
	if (!gf_active) {
		/* a trap in our own code: should not happen; say so and end */
		printf("FAIL: gfuzz: trap outside a generated run: scause 0x%lx sepc 0x%lx stval 0x%lx (got one, want none)\n",
		       f->scause, f->sepc, f->stval);
		report_done();
	}
	gf_active = 0;
	last_cause = f->scause;
	/* back into gf_enter's caller, in VS, interrupts off */
	f->x[1] = jmpbuf[0];
	f->x[2] = jmpbuf[1];
	f->x[3] = jmpbuf[2];
	f->x[4] = jmpbuf[3];
	f->x[8] = jmpbuf[4];
	f->x[9] = jmpbuf[5];
	for (int i = 0; i < 10; i++)
		f->x[18 + i] = jmpbuf[6 + i];
	f->x[10] = f->scause;
	f->sepc = (unsigned long)gf_resume;
	f->sstatus = (f->sstatus | SR_SPP) & ~(SR_SPIE | SR_SIE);
}

/* --- memory layout ------------------------------------------------------------------- */

#define SCRATCH_SIZE	8192
static unsigned long exec_page;		/* random words run here: RAM + 32 MiB */
static unsigned long scratch;		/* register targets: RAM + 48 MiB */
static char text_buf[64];		/* DBCN writes from our RAM come from here */
static char shmem_area[8192] __attribute__((aligned(4096)));	/* STA, PMU snapshot, DBCN read */

/* Pages whose permissions the pte operation changes, and a U exec page. */
#define NR_FPAGES	6
static char fpages[NR_FPAGES][PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));
static char uexec[PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));

#define EBREAK		0x00100073u
#define C_EBREAK	0x9002u
#define C_NOP		0x0001u

static unsigned long regs[32];
static unsigned long trace;	/* bootarg trace=1: each generated instruction before it runs */
static bool ss_on;		/* our FWFT SHADOW_STACK as last set */

static void regs_scratch(void)
{
	for (int i = 1; i < 32; i++)
		regs[i] = scratch + SCRATCH_SIZE / 2 + (below(64) - 32) * 8;
}

static void put_insn(unsigned long page, uint32_t insn, bool compressed)
{
	volatile uint16_t *p = (volatile uint16_t *)page;

	if (compressed) {
		p[0] = insn & 0xffff;
		p[1] = C_EBREAK;
	} else {
		p[0] = insn & 0xffff;
		p[1] = insn >> 16;
	}
	for (int i = 2; i < 8; i += 2) {
		p[i] = EBREAK & 0xffff;
		p[i + 1] = EBREAK >> 16;
	}
	__asm__ volatile("fence.i" ::: "memory");
}

/* Run the instruction at @page with regs[] in VS or VU; watchdog armed. */
static unsigned long run_at(unsigned long page, bool user)
{
	unsigned long cause;

	if (trace)
		printf("GFUZZ: run 0x%08x at 0x%lx %s t0=0x%lx sie=0x%lx sip=0x%lx sstatus=0x%lx\n",
		       *(volatile uint32_t *)page, page, user ? "VU" : "VS", regs[5], csr_read(sie),
		       csr_read(sip), csr_read(sstatus));
	if (ss_on)
		csr_write(CSR_SSP, scratch + SCRATCH_SIZE - 64);
	csr_write(CSR_STIMECMP, rdtime() + us_to_ticks(20000));
	if (user)
		vu_runs++;
	else
		vs_runs++;
	cause = gf_enter(regs, page, user);
	csr_write(CSR_STIMECMP, -1UL);
	return cause;
}

/* --- instruction filters ------------------------------------------------------------- */

static bool csr_dangerous(unsigned long csr)
{
	switch (csr) {
	case 0x100: case 0x104: case 0x105: case 0x140: case 0x180:
	case CSR_SENVCFG: case CSR_SSP:
		return true;
	}
	return false;
}

/* Make a random 32-bit word safe to run; false: skip it. */
static bool filter32(uint32_t *w, bool user)
{
	uint32_t op = *w & 0x7f, f3 = (*w >> 12) & 7, rs1 = (*w >> 15) & 31;

	switch (op) {
	case 0x03: case 0x07: case 0x0f: case 0x23: case 0x27: case 0x2f: case 0x67:
		if (rs1 == 0)	/* absolute low address: outside RAM */
			*w |= 5u << 15;
		return true;
	case 0x73:
		if (f3 == 0) {
			/* sret/mret/wfi from VS: our state; ecall: fine */
			if (*w == 0x10200073u || *w == 0x30200073u)
				return false;
			return true;	/* wfi in VS: the watchdog wakes it */
		}
		if (f3 == 4)
			return true;	/* hlv/hsv, sspush/sspopchk/ssrdp */
		if (!user && csr_dangerous(*w >> 20)) {
			/* make it a plain read: csrrs rd, csr, x0 */
			*w = (*w & ~(0x1fu << 15) & ~(7u << 12)) | (2u << 12);
		}
		return true;
	}
	return true;
}

/* One compressed instruction: memory accesses and jumps use registers we set. */
static bool filter16(uint16_t c)
{
	return (c & 3) != 3;
}

/* --- operations ------------------------------------------------------------------------ */

#define SBI_EXT_STA	0x535441

static const unsigned long eids[] = {
	SBI_EXT_BASE, SBI_EXT_TIME, SBI_EXT_IPI, SBI_EXT_RFENCE, SBI_EXT_HSM,
	SBI_EXT_SRST, SBI_EXT_DBCN, SBI_EXT_FWFT, SBI_EXT_PMU, SBI_EXT_SUSP,
	SBI_EXT_STA,
};

static bool in_ram(unsigned long a)
{
	return a >= env.ram_base - 0x1000 && a < env.ram_base + env.ram_size + 0x1000;
}

static void op_sbi(void)
{
	unsigned long eid, fid, a[6];
	struct sbiret r;

	if (chance(85))
		eid = eids[below(ARRAY_SIZE(eids))];
	else if (chance(50))
		eid = below(0x20);		/* legacy range and around BASE */
	else
		eid = rnd_arg();
	fid = chance(80) ? below(10) : rnd_arg();
	for (int i = 0; i < 6; i++)
		a[i] = rnd_arg();

	/* the filters: what would end us, or write into our memory */
	if (eid == 0x08)
		goto skip;			/* legacy shutdown, if it existed */
	switch (eid) {
	case SBI_EXT_SRST:
		if (fid == SBI_SRST_SYSTEM_RESET) {
			uint32_t type = a[0], reason = a[1];
			bool bad_reason = (reason > 1 && reason < 0xE0000000u) || reason >= 0xF0000000u;

			if (type <= 2 && !bad_reason)
				goto skip;
		}
		break;
	case SBI_EXT_HSM:
		if (fid == SBI_HSM_HART_STOP)
			goto skip;
		if (fid == SBI_HSM_HART_START) {
			bool real = false;

			for (unsigned long i = 0; i < env.nr_harts; i++)
				real |= env.hartids[i] == a[0];
			if (real && in_ram(a[1]))
				a[1] = (unsigned long)_hart_entry;
		}
		if (fid == SBI_HSM_HART_SUSPEND) {
			uint32_t type = a[0];

			if (type >= 0x80000000u && in_ram(a[1]))
				a[1] = -4096UL;	/* non-retentive: never resume into junk */
			if (type == 0) {
				/* retentive: the timer wakes it (sie.STIE is always on) */
				csr_write(CSR_STIMECMP, rdtime() + us_to_ticks(500));
				r = sbi_ecall(eid, fid, a[0], a[1], a[2], a[3], a[4], a[5]);
				csr_write(CSR_STIMECMP, -1UL);
				note_sbi(r.error);
				return;
			}
		}
		break;
	case SBI_EXT_SUSP:
		if (fid == SBI_SUSP_SYSTEM_SUSPEND && (uint32_t)a[0] == 0)
			goto skip;
		break;
	case SBI_EXT_FWFT:
		if (fid == SBI_FWFT_SET && (uint32_t)a[0] == SBI_FWFT_LANDING_PAD)
			a[1] = 0;
		break;
	case SBI_EXT_DBCN:
		if (fid == SBI_DBCN_WRITE && in_ram(a[1])) {
			a[0] &= 63;
			a[1] = (unsigned long)text_buf;
		} else if (fid == SBI_DBCN_READ && in_ram(a[1])) {
			a[0] &= 4095;
			a[1] = (unsigned long)shmem_area;
		} else if (fid == SBI_DBCN_WRITE_BYTE) {
			a[0] = 'a' + below(26);
		}
		break;
	case SBI_EXT_STA:
		if (fid == 0 && in_ram(a[0]))
			a[0] = (unsigned long)shmem_area + (chance(80) ? 0 : below(128));
		break;
	case SBI_EXT_PMU:
		if (fid == SBI_PMU_SNAPSHOT_SET_SHMEM && in_ram(a[0]))
			a[0] = (unsigned long)shmem_area + (chance(80) ? 0 : below(128));
		break;
	}
	r = sbi_ecall(eid, fid, a[0], a[1], a[2], a[3], a[4], a[5]);
	note_sbi(r.error);
	if (trace)
		printf("GFUZZ: sbi 0x%lx/%lu (0x%lx, 0x%lx, 0x%lx) = %ld, 0x%lx\n", eid, fid, a[0], a[1],
		       a[2], r.error, r.value);
	if (eid == SBI_EXT_FWFT && fid == SBI_FWFT_SET && !r.error) {
		struct sbiret g = SBI_CALL1(SBI_EXT_FWFT, SBI_FWFT_GET, SBI_FWFT_SHADOW_STACK);

		ss_on = !g.error && g.value;
	}
	/* a TIME call may have armed a timer; ours is re-armed before each run */
	return;
skip:
	filtered++;
}

static unsigned long rnd_csr(void)
{
	static const unsigned long interesting[] = {
		0x100, 0x104, 0x105, 0x106, 0x10a, 0x10c, 0x140, 0x141, 0x142, 0x143,
		0x144, 0x14d, 0x15d, 0x180, 0x5a8, 0x011, 0x015, 0x001, 0x002, 0x003,
		0xc00, 0xc01, 0xc02, 0xc03, 0xc1f, 0xc80, 0xda0, 0xdb0, 0xfb0,
		0x200, 0x204, 0x205, 0x240, 0x241, 0x242, 0x243, 0x244, 0x280, 0x24d,
		0x600, 0x602, 0x603, 0x604, 0x606, 0x60a, 0x643, 0x644, 0x645, 0x680,
		0x605, 0x615, 0x60c, 0x6a8, 0xe12, 0x300, 0x301, 0x305, 0x30a, 0x340,
		0x341, 0x342, 0x3a0, 0x3b0, 0x7a0, 0x7a1, 0x7b0, 0xf11, 0xf14,
	};

	return chance(60) ? interesting[below(ARRAY_SIZE(interesting))] : below(4096);
}

static void op_csr(void)
{
	bool user = chance(40);
	unsigned long csr = rnd_csr(), f3 = 1 + below(3) + (chance(30) ? 4 : 0);
	uint32_t w;

	if (!user && csr_dangerous(csr) && f3 != 2 && f3 != 6) {
		f3 = 2;		/* a read */
		filtered++;
	}
	regs_scratch();
	regs[5] = rnd_arg();
	/* rs1 = t0 (or a zimm), rd = t2; csrrs/csrrc with rs1 != x0 write */
	w = (uint32_t)(csr << 20) | (uint32_t)((f3 >= 4 ? below(32) : 5) << 15) |
	    (uint32_t)(f3 << 12) | (7u << 7) | 0x73;
	if (!user && csr_dangerous(csr))
		w = (uint32_t)(csr << 20) | (2u << 12) | (7u << 7) | 0x73;
	put_insn(exec_page, w, false);
	run_at(exec_page, user);
}

struct window {
	unsigned long base, size;
	bool uart;
};
static struct window windows[8];
static unsigned int nr_windows;

static void find_windows(void)
{
	int soc = fdt_path_offset("/soc");

	for (int n = fdt_first_child(soc); n >= 0 && nr_windows < ARRAY_SIZE(windows);
	     n = fdt_next_sibling(n)) {
		int len;
		const void *reg = fdt_getprop(n, "reg", &len);
		const char *name = fdt_node_name(n);
		bool uart = !strncmp(name, "serial", 6) || !strncmp(name, "uart", 4);

		if (!reg || len < 16)
			continue;
		/* bare QEMU has more devices (test finisher, flash, PCI):
		 * only the ones a Carapace VM has */
		if (!env.carapace && !uart && strncmp(name, "plic", 4) &&
		    strncmp(name, "interrupt-controller", 20))
			continue;
		windows[nr_windows].base = fdt_read_cells(reg, 2);
		windows[nr_windows].size = fdt_read_cells((const char *)reg + 8, 2);
		windows[nr_windows].uart = uart;
		printf("INFO: gfuzz: mmio window %s 0x%lx+0x%lx\n", name,
		       windows[nr_windows].base, windows[nr_windows].size);
		nr_windows++;
	}
}

static void op_mmio(void)
{
	struct window *win;
	unsigned long off, width;
	bool user = chance(30), store = chance(50);
	uint32_t w;

	if (!nr_windows) {
		filtered++;
		return;
	}
	win = &windows[below(nr_windows)];
	width = below(4);			/* 1 << width bytes */
	switch (below(4)) {
	case 0:
		off = below(win->size < 0x400 ? win->size : 0x400);
		break;
	case 1:
		off = win->size - 1 - below(16);
		break;
	default:
		off = below(win->size) & ~((1UL << width) - 1);
		break;
	}
	regs_scratch();
	regs[5] = win->base + off;
	regs[6] = rnd_arg();
	if (win->uart && (off & 7) == 0)
		regs[6] = 'A' + below(26);	/* THR: letters only on the console */
	switch (below(8)) {
	case 0:		/* AMO (always faults on a device) */
		w = (uint32_t)(below(2) ? 0 : 1) << 27 | 6u << 20 | 5u << 15 |
		    (uint32_t)(2 + below(2)) << 12 | 7u << 7 | 0x2f;
		break;
	case 1:		/* FP */
		w = store ? (6u << 20 | 5u << 15 | (uint32_t)(2 + below(2)) << 12 | 0x27)
			  : (5u << 15 | (uint32_t)(2 + below(2)) << 12 | 7u << 7 | 0x07);
		break;
	default:
		if (store)
			w = 6u << 20 | 5u << 15 | (uint32_t)width << 12 | 0x23;
		else
			w = 5u << 15 | (uint32_t)(width + (chance(30) && width < 3 ? 4 : 0)) << 12 |
			    7u << 7 | 0x03;
	}
	put_insn(exec_page, w, false);
	run_at(exec_page, user);
}

static bool store_like(uint32_t w, bool compressed)
{
	if (compressed) {
		uint32_t q = w & 3, f3 = (w >> 13) & 7;

		return f3 >= 5 && (q == 0 || q == 2);
	}
	w &= 0x7f;
	return w == 0x23 || w == 0x27 || w == 0x2f || w == 0x73;
}

/* Instructions a random word rarely is: system, hypervisor, CFI, fences. */
static const uint32_t curated[] = {
	0x00000073,	/* ecall */
	0x00100073,	/* ebreak */
	0x10500073,	/* wfi */
	0x00d00073,	/* wrs.nto */
	0x12000073,	/* sfence.vma */
	0x16000073,	/* sinval.vma */
	0x22000073,	/* hfence.vvma */
	0x62000073,	/* hfence.gvma */
	0x0000100f,	/* fence.i */
	0x6c02c3f3,	/* hlv.d t2, (t0) */
	0x6e62c073,	/* hsv.d t1, (t0) */
	0xce504073,	/* sspush t0 */
	0xcdc2c073,	/* sspopchk t0 */
	0xcdc043f3,	/* ssrdp t2 */
	0x00000017,	/* lpad 0 */
	0x011023f3,	/* csrr t2, ssp */
	0xc00023f3,	/* rdcycle t2 */
	0xc01023f3,	/* rdtime t2 */
	0xc02023f3,	/* rdinstret t2 */
	0x0012b383,	/* ld t2, 1(t0): misaligned */
	0x0062b0a3,	/* sd t1, 1(t0): misaligned */
	0x0062b2af,	/* amoadd.d t0 misaligned? (aligned here) */
	0x0042a00f,	/* cbo.zero (t0) */
	0x0002a00f,	/* cbo.inval (t0) */
	0x10200073,	/* sret (VU: illegal; VS: filtered) */
	0x30200073,	/* mret */
	0x7b200073,	/* dret */
};

static void op_insn(void)
{
	bool user = chance(40), compressed = chance(25);
	uint32_t w;

	if (chance(8)) {
		compressed = false;
		w = curated[below(ARRAY_SIZE(curated))];
		if (!filter32(&w, user)) {
			filtered++;
			return;
		}
		regs_scratch();
		if (chance(50))
			regs[5] += 1 + below(7);	/* a misaligned base */
		put_insn(exec_page, w, false);
		run_at(exec_page, user);
		memset((void *)scratch, 0, SCRATCH_SIZE);
		return;
	}
	if (compressed) {
		w = rnd() & 0xffff;
		if ((w & 3) == 3)
			w &= ~1u;
		if (!filter16(w)) {
			filtered++;
			return;
		}
	} else {
		w = (uint32_t)rnd() | 3;
		if (!filter32(&w, user)) {
			filtered++;
			return;
		}
	}
	regs_scratch();
	put_insn(exec_page, w, compressed);
	run_at(exec_page, user);
	if (store_like(w, compressed))
		memset((void *)scratch, 0, SCRATCH_SIZE);
}

static void op_pte(void)
{
	static const unsigned long perms[] = {
		0, PTE_R, PTE_W, PTE_R | PTE_W, PTE_X, PTE_R | PTE_X, PTE_W | PTE_X,
		PTE_R | PTE_W | PTE_X,
	};
	unsigned long i = below(NR_FPAGES), va = (unsigned long)fpages[i];
	unsigned long *ptep = mmu_leaf_ptep(va), pte;
	bool user = chance(40);
	unsigned long page = user ? (unsigned long)uexec : exec_page;
	uint32_t w;

	pte = (va >> PAGE_SHIFT) << PTE_PPN_SHIFT | perms[below(8)] | PTE_V;
	if (chance(50))
		pte |= PTE_U;
	if (chance(80))
		pte |= PTE_A;
	if (chance(70))
		pte |= PTE_D;
	if (chance(10))
		pte &= ~PTE_V;
	if (chance(10))
		pte |= 1UL << (54 + below(10));	/* reserved, PBMT, N */
	if (chance(5))
		pte |= PTE_G;
	*ptep = pte;
	regs_scratch();
	regs[5] = va + (below(PAGE_SIZE) & ~7UL);
	regs[6] = rnd();
	switch (below(7)) {
	case 0:
		w = 5u << 15 | 3u << 12 | 7u << 7 | 0x03;		/* ld t2, 0(t0) */
		break;
	case 1:
		w = 6u << 20 | 5u << 15 | 3u << 12 | 0x23;		/* sd t1, 0(t0) */
		break;
	case 2:
		w = 6u << 20 | 5u << 15 | 3u << 12 | 7u << 7 | 0x2f;	/* amoadd.d */
		break;
	case 3:
		w = 5u << 15 | 7u << 7 | 0x67;				/* jalr t2, 0(t0) */
		break;
	case 4:
		w = 2u << 27 | 5u << 15 | 3u << 12 | 7u << 7 | 0x2f;	/* lr.d */
		break;
	case 5:		/* sspush t0 with ssp on the page (SS on) */
		regs[5] = va + PAGE_SIZE - 8 * below(4);
		w = 0xCE504073u;
		break;
	default:	/* ssamoswap.d t2, t1, (t0) */
		w = 0x24u << 25 | 6u << 20 | 5u << 15 | 3u << 12 | 7u << 7 | 0x2f;
		break;
	}
	put_insn(page, w, false);
	mmu_enable();
	if (ss_on && (w == 0xCE504073u))
		csr_write(CSR_SSP, regs[5]);
	{
		/* run_at() would move ssp; do its part here */
		csr_write(CSR_STIMECMP, rdtime() + us_to_ticks(20000));
		if (user)
			vu_runs++;
		else
			vs_runs++;
		gf_enter(regs, page, user);
		csr_write(CSR_STIMECMP, -1UL);
	}
	mmu_disable();
	*ptep = (va >> PAGE_SHIFT) << PTE_PPN_SHIFT | MMU_RW | PTE_V | PTE_A | PTE_D;
	/* the page is ebreaks again for the next fetch */
	for (unsigned long j = 0; j < PAGE_SIZE / 4; j++)
		((volatile uint32_t *)va)[j] = EBREAK;
	__asm__ volatile("sfence.vma\n\tfence.i" ::: "memory");
}

/* --- main -------------------------------------------------------------------------------- */

static void print_set(const char *what, unsigned long bits)
{
	char buf[200];
	int n = 0;

	for (int i = 0; i < 64 && n < (int)sizeof(buf) - 8; i++)
		if (bits & (1UL << i))
			n += snprintf(buf + n, sizeof(buf) - n, "%s%d", n ? "," : "", i);
	buf[n] = 0;
	printf("GFUZZ: %s: %s\n", what, n ? buf : "-");
}

void test_main(unsigned long hartid)
{
	unsigned long seed = bootarg_ulong("seed", 1), ops = bootarg_ulong("ops", 20000);
	unsigned long progress = bootarg_ulong("progress", 100000), done;

	trace = bootarg_ulong("trace", 0);
	unsigned long t0 = rdtime();

	(void)hartid;
	rng = seed * 0x9E3779B97F4A7C15ULL + 0x1234567;
	if (!rng)
		rng = 1;
	exec_page = env.ram_base + 32 * 0x100000UL;
	scratch = env.ram_base + 48 * 0x100000UL;
	if (env.ram_size < 64 * 0x100000UL) {
		report_fail(T, "needs 64 MiB of RAM (got 0x%lx, want >= 0x4000000)",
			    (unsigned long)env.ram_size);
		report_done();
	}
	memset(text_buf, 'z', sizeof(text_buf));
	memset((void *)scratch, 0, SCRATCH_SIZE);
	for (unsigned long j = 0; j < PAGE_SIZE / 4; j++)
		((uint32_t *)uexec)[j] = EBREAK;
	for (int i = 0; i < NR_FPAGES; i++)
		for (unsigned long j = 0; j < PAGE_SIZE / 4; j++)
			((uint32_t *)fpages[i])[j] = EBREAK;
	find_windows();
	mmu_init();
	if (mmu_map((unsigned long)uexec, PAGE_SIZE, MMU_RWX | MMU_U) ||
	    mmu_map((unsigned long)fpages, sizeof(fpages), MMU_RW)) {
		report_fail(T, "page tables (got an error, want 0)");
		report_done();
	}
	csr_write(CSR_SSCRATCH, (unsigned long)trap_stack + sizeof(trap_stack));
	csr_write(CSR_STVEC, (unsigned long)gf_vector);
	csr_write(CSR_STIMECMP, -1UL);
	csr_write(sie, MIP_STIP);
	printf("GFUZZ: start seed=%lu ops=%lu\n", seed, ops);

	for (done = 0; done < ops; done++) {
		unsigned long k = below(100), op;

		op = k < 25 ? OP_SBI : k < 45 ? OP_CSR : k < 60 ? OP_MMIO : k < 90 ? OP_INSN : OP_PTE;
		op_count[op]++;
		switch (op) {
		case OP_SBI: op_sbi(); break;
		case OP_CSR: op_csr(); break;
		case OP_MMIO: op_mmio(); break;
		case OP_INSN: op_insn(); break;
		default: op_pte(); break;
		}
		if (progress && (done + 1) % progress == 0)
			printf("GFUZZ: progress ops=%lu\n", done + 1);
	}
	csr_write(sie, 0);
	csr_write(CSR_STVEC, 0);
	printf("GFUZZ: done seed=%lu ops=%lu sbi=%lu csr=%lu mmio=%lu insn=%lu pte=%lu "
	       "filtered=%lu vs_runs=%lu vu_runs=%lu watchdogs=%lu ms=%lu\n",
	       seed, done, op_count[OP_SBI], op_count[OP_CSR], op_count[OP_MMIO],
	       op_count[OP_INSN], op_count[OP_PTE], filtered, vs_runs, vu_runs, watchdogs,
	       ticks_to_us(rdtime() - t0) / 1000);
	print_set("exceptions", exc_seen);
	print_set("interrupts", irq_seen);
	print_set("sbi errors (negated)", sbierr_seen);
	printf("GFUZZ: sbi other results %lu\n", sbierr_other);
	(void)op_names;
	report_pass(T, "ran %lu operations", done);
}
