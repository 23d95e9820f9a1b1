/* SPDX-License-Identifier: MIT */
/* hyp/arch/ldst_decode.c and hyp/dispatch/misaligned.c: the decoder of the
 * loads and stores a misaligned access comes from, and their emulation for a
 * vCPU with FWFT MISALIGNED_EXC_DELEG = 0, over a fake guest memory of three
 * pages whose bytes can each fault as the guest's own page or access fault
 * or as a G-stage fault. Encodings: binutils 2.40 (riscv64-unknown-elf-as
 * -march=rv64gc_zfh, objdump -M no-aliases); Zcb's, which 2.40 lacks, from
 * the Zcb field layout (c.lbu 100000 rs1' uimm[0] uimm[1] rd' 00, c.lhu/c.lh
 * 100001 rs1' 0/1 uimm[1] rd' 00, c.sb 100010, c.sh 100011 ... 0 ...). */
#include <string.h>
#include <arch/riscv/csr.h>
#include <arch/riscv/encoding.h>
#include <abi/sbi_defs.h>
#include <ldst.h>
#include <misaligned.h>
#include <vm.h>
#include "test.h"

extern unsigned long fake_csr[4096];

/* --- decoder ------------------------------------------------------------------------ */

struct want {
	uint32_t insn;
	unsigned int width, reg, len;
	bool store, sign, fp;
};

static const struct want decoded[] = {
	{ 0x00158503, 1, 10, 4, false, true, false },	/* lb a0,1(a1) */
	{ 0x00159503, 2, 10, 4, false, true, false },	/* lh a0,1(a1) */
	{ 0x00312283, 4, 5, 4, false, true, false },	/* lw t0,3(sp) */
	{ 0xfff63483, 8, 9, 4, false, false, false },	/* ld s1,-1(a2) */
	{ 0x0015c503, 1, 10, 4, false, false, false },	/* lbu a0,1(a1) */
	{ 0x0015d783, 2, 15, 4, false, false, false },	/* lhu a5,1(a1) */
	{ 0x0055ef83, 4, 31, 4, false, false, false },	/* lwu t6,5(a1) */
	{ 0x00a580a3, 1, 10, 4, true, false, false },	/* sb a0,1(a1) */
	{ 0x00c590a3, 2, 12, 4, true, false, false },	/* sh a2,1(a1) */
	{ 0x0135a0a3, 4, 19, 4, true, false, false },	/* sw s3,1(a1) */
	{ 0x01f5b3a3, 8, 31, 4, true, false, false },	/* sd t6,7(a1) */
	{ 0x0015a087, 4, 1, 4, false, false, true },	/* flw ft1,1(a1) */
	{ 0x0035bf87, 8, 31, 4, false, false, true },	/* fld ft11,3(a1) */
	{ 0x0025a0a7, 4, 2, 4, true, false, true },	/* fsw ft2,1(a1) */
	{ 0x01e5b0a7, 8, 30, 4, true, false, true },	/* fsd ft10,1(a1) */
	{ 0x41c8, 4, 10, 2, false, true, false },	/* c.lw a0,4(a1) */
	{ 0x6784, 8, 9, 2, false, false, false },	/* c.ld s1,8(a5) */
	{ 0xc2d0, 4, 12, 2, true, false, false },	/* c.sw a2,4(a3) */
	{ 0xe418, 8, 14, 2, true, false, false },	/* c.sd a4,8(s0) */
	{ 0x2580, 8, 8, 2, false, false, true },	/* c.fld fs0,8(a1) */
	{ 0xa59c, 8, 15, 2, true, false, true },	/* c.fsd fa5,8(a1) */
	{ 0x4092, 4, 1, 2, false, true, false },	/* c.lwsp ra,4(sp) */
	{ 0x6fa2, 8, 31, 2, false, false, false },	/* c.ldsp t6,8(sp) */
	{ 0xc26e, 4, 27, 2, true, false, false },	/* c.swsp s11,4(sp) */
	{ 0xe42a, 8, 10, 2, true, false, false },	/* c.sdsp a0,8(sp) */
	{ 0x20a2, 8, 1, 2, false, false, true },	/* c.fldsp ft1,8(sp) */
	{ 0xa47e, 8, 31, 2, true, false, true },	/* c.fsdsp ft11,8(sp) */
	{ 0x81c8, 1, 10, 2, false, false, false },	/* c.lbu a0,1(a1) */
	{ 0x86b0, 2, 12, 2, false, false, false },	/* c.lhu a2,2(a3) */
	{ 0x87f8, 2, 14, 2, false, true, false },	/* c.lh a4,2(a5) */
	{ 0x89c8, 1, 10, 2, true, false, false },	/* c.sb a0,1(a1) */
	{ 0x8ca0, 2, 8, 2, true, false, false },	/* c.sh s0,2(s1) */
};

static const uint32_t refused[] = {
	0x00b6252f,	/* amoadd.w a0,a1,(a2) */
	0x1005b52f,	/* lr.d a0,(a1) */
	0x18b6252f,	/* sc.w a0,a1,(a2) */
	0x0505,		/* c.addi a0,1 */
	0x6505,		/* c.lui a0,0x1 */
	0x00150513,	/* addi a0,a0,1 */
	0x00259087,	/* flh ft1,2(a1): Zfh, not emulated */
	0x0015f503,	/* LOAD funct3 7: reserved */
	0x00a5c0a3,	/* STORE funct3 4: reserved */
	0x4002,		/* c.lwsp x0: reserved */
	0x6002,		/* c.ldsp x0: reserved */
	0x8ce0,		/* c.sh with bit 6 set: reserved */
	0x9000,		/* quadrant 0 funct3 100, funct6 1001xx: reserved */
	0x0000,		/* the all-zero illegal instruction */
	0x02058007,	/* vle8.v v0,(a1): vector */
};

TEST(ldst_decode_every_form)
{
	for (unsigned int i = 0; i < sizeof(decoded) / sizeof(decoded[0]); i++) {
		const struct want *w = &decoded[i];
		struct ldst a = { .width = 99, .reg = 99, .len = 99, .store = !w->store,
				  .sign_extend = !w->sign, .fp = !w->fp };

		EXPECT_TRUE(ldst_decode(w->insn, &a));
		EXPECT_EQ(((uint64_t)w->insn << 32) | a.width, ((uint64_t)w->insn << 32) | w->width);
		EXPECT_EQ(((uint64_t)w->insn << 32) | a.reg, ((uint64_t)w->insn << 32) | w->reg);
		EXPECT_EQ(((uint64_t)w->insn << 32) | a.len, ((uint64_t)w->insn << 32) | w->len);
		EXPECT_EQ(((uint64_t)w->insn << 32) | a.store, ((uint64_t)w->insn << 32) | w->store);
		EXPECT_EQ(((uint64_t)w->insn << 32) | a.sign_extend,
			  ((uint64_t)w->insn << 32) | w->sign);
		EXPECT_EQ(((uint64_t)w->insn << 32) | a.fp, ((uint64_t)w->insn << 32) | w->fp);
	}
}

TEST(ldst_decode_refuses_the_rest)
{
	for (unsigned int i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct ldst a;

		EXPECT_EQ(((uint64_t)refused[i] << 32) | ldst_decode(refused[i], &a),
			  (uint64_t)refused[i] << 32);
	}
}

/* Transformed instructions: rs1 zeroed (the address offset, 0 for a
 * misaligned access), bit 1 clear when the trapping one was compressed. */
TEST(ldst_from_htinst_takes_loads_and_stores_only)
{
	uint32_t insn = 0;
	unsigned int len = 0;

	EXPECT_TRUE(ldst_from_htinst(0x00002283, &insn, &len));	/* lw t0 */
	EXPECT_EQ(insn, 0x00002283);
	EXPECT_EQ(len, 4);
	EXPECT_TRUE(ldst_from_htinst(0x00002281, &insn, &len));	/* from c.lw */
	EXPECT_EQ(insn, 0x00002283);
	EXPECT_EQ(len, 2);
	EXPECT_TRUE(ldst_from_htinst(0x00003f87, &insn, &len));	/* fld ft11 */
	EXPECT_TRUE(ldst_from_htinst(0x01e030a7, &insn, &len));	/* fsd ft10 */
	EXPECT_TRUE(ldst_from_htinst(0x00a000a3, &insn, &len));	/* sb */
	EXPECT_TRUE(!ldst_from_htinst(0, &insn, &len));
	EXPECT_TRUE(!ldst_from_htinst(0x2000, &insn, &len));	/* pseudo: VS-stage load */
	EXPECT_TRUE(!ldst_from_htinst(0x3020, &insn, &len));	/* pseudo: VS-stage store */
	EXPECT_TRUE(!ldst_from_htinst(0x00b0252f, &insn, &len));	/* amoadd.w */
	EXPECT_TRUE(!ldst_from_htinst(0x100002283UL, &insn, &len));	/* bits above 31 */
}

/* --- emulation, over a fake guest ------------------------------------------------------ */

#define GVA		0x10000UL
#define PAGES		3
#define GPA_OF(gva)	((gva) - GVA + 0x80000000UL)

enum page_kind { PAGE_OK, PAGE_VS_FAULT, PAGE_VS_ACCESS, PAGE_GSTAGE };

static uint8_t mem[PAGES * 4096];
static enum page_kind kind[PAGES];
static uint64_t fregs[32];
static uint32_t fetched;		/* what vcpu_fetch_insn() returns */
static unsigned long redirected_cause, redirected_tval, redirects;
static unsigned long gstage_cause, gstage_gva, gstage_calls;
static gpa_t gstage_gpa;
static unsigned long pmu_fw[16];
static struct vcpu v;

static bool fault(unsigned long gva, bool store, struct guest_fault *f)
{
	unsigned long page = (gva - GVA) / 4096;

	*f = (struct guest_fault){ 0 };
	if (gva < GVA || page >= PAGES || kind[page] == PAGE_VS_FAULT)
		f->scause = store ? EXC_STORE_PAGE_FAULT : EXC_LOAD_PAGE_FAULT;
	else if (kind[page] == PAGE_VS_ACCESS)
		f->scause = store ? EXC_STORE_ACCESS : EXC_LOAD_ACCESS;
	else if (kind[page] == PAGE_GSTAGE) {
		f->scause = store ? EXC_STORE_GUEST_PAGE_FAULT : EXC_LOAD_GUEST_PAGE_FAULT;
		f->htval = GPA_OF(gva) >> 2;
	}
	f->stval = f->scause ? gva : 0;
	return f->scause;
}

unsigned long __guest_load_bu(unsigned long gva, struct guest_fault *f)
{
	return fault(gva, false, f) ? 0 : mem[gva - GVA];
}

void __guest_store_b(unsigned long gva, unsigned long val, struct guest_fault *f)
{
	EXPECT_TRUE(val <= 0xff);
	if (!fault(gva, true, f))
		mem[gva - GVA] = (uint8_t)val;
}

uint64_t __fp_reg_read(unsigned int n)
{
	return fregs[n];
}

void __fp_reg_write(unsigned int n, uint64_t val)
{
	fregs[n] = val;
}

unsigned long vcpu_fetch_insn(unsigned long pc)
{
	EXPECT_EQ(pc, v.g.ctx.sepc);
	return fetched;
}

void vcpu_redirect_trap(struct vcpu *vc, unsigned long cause, unsigned long tval)
{
	EXPECT_TRUE(vc == &v);
	redirected_cause = cause;
	redirected_tval = tval;
	redirects++;
}

/* what dispatch/exit.c does with a G-stage fault misaligned_exit() hands
 * back: serve it (the page mapped, the retry will not fault there) */
static struct exit_verdict emulate(unsigned long cause)
{
	struct guest_fault g = { 0 };
	struct exit_verdict r = misaligned_exit(&v, cause, &g);

	if (g.scause) {
		EXPECT_EQ(r.action, EXIT_RESUME);
		EXPECT_EQ(r.pc_step, 0);
		gstage_cause = g.scause;
		gstage_gpa = (g.htval << 2) | (g.stval & 3);
		gstage_gva = g.stval;
		gstage_calls++;
		kind[(g.stval - GVA) / 4096] = PAGE_OK;
	}
	return r;
}

void pmu_count_fw_slow(struct vcpu *vc, unsigned int code, unsigned long n)
{
	(void)vc;
	pmu_fw[code] += n;
}

/* A vCPU that asked for emulation, a misaligned exit of @cause at guest
 * virtual @addr by @insn: fetched (@htinst 0) or given transformed. */
static void setup(uint32_t insn, unsigned long htinst, unsigned long addr)
{
	memset(&v, 0, sizeof(v));
	v.g.fwft_mem.misaligned_emulate = 1;
	v.g.ctx.sepc = 0x80001000;
	v.g.ctx.sstatus = SR_SPP | SR_FS_INITIAL;
	v.pmu_live.fw_events = ~0U;
	for (unsigned int i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(0x80 + i * 7);
	memset(kind, 0, sizeof(kind));
	memset(pmu_fw, 0, sizeof(pmu_fw));
	fetched = insn;
	fake_csr[CSR_HTINST] = htinst;
	fake_csr[CSR_STVAL] = addr;
	fake_csr[CSR_VSSTATUS] = SR_FS_INITIAL;
	redirects = gstage_calls = 0;
}

static uint64_t mem_le(unsigned long gva, unsigned int n)
{
	uint64_t val = 0;

	for (unsigned int i = 0; i < n; i++)
		val |= (uint64_t)mem[gva - GVA + i] << (8 * i);
	return val;
}

static uint64_t sext(uint64_t val, unsigned int width)
{
	unsigned int sh = 64 - 8 * width;

	return width == 8 ? val : (uint64_t)((int64_t)(val << sh) >> sh);
}

/* Every integer load form, at every misalignment across the page boundary:
 * rd gets the bytes, sign- or zero-extended; the pc moves by the length. */
TEST(misaligned_integer_loads)
{
	for (unsigned int i = 0; i < sizeof(decoded) / sizeof(decoded[0]); i++) {
		const struct want *w = &decoded[i];

		if (w->store || w->fp)
			continue;
		for (unsigned long off = 1; off < w->width; off++) {
			unsigned long addr = GVA + 4096 - off;
			struct exit_verdict r;

			setup(w->insn, 0, addr);
			r = emulate(EXC_LOAD_MISALIGNED);
			EXPECT_EQ(r.action, EXIT_RESUME);
			EXPECT_EQ(r.pc_step, w->len);
			EXPECT_EQ(v.g.ctx.gpr[w->reg],
				  w->sign ? sext(mem_le(addr, w->width), w->width) :
					    mem_le(addr, w->width));
			EXPECT_EQ(redirects, 0);
			EXPECT_EQ(v.stats.misaligned_emulated, 1);
		}
	}
}

/* The same load transformed in htinst: decoded from there, never fetched;
 * a compressed one (bit 1 clear) moves the pc by 2. */
TEST(misaligned_load_from_htinst)
{
	struct exit_verdict r;

	setup(0 /* a fetch would fail */, 0x00002281 | (5 << 7), GVA + 4094);	/* c.lw -> lw t0 */
	r = emulate(EXC_LOAD_MISALIGNED);
	EXPECT_EQ(r.action, EXIT_RESUME);
	EXPECT_EQ(r.pc_step, 2);
	EXPECT_EQ(v.g.ctx.gpr[5], sext(mem_le(GVA + 4094, 4), 4));
}

TEST(misaligned_load_into_x0_is_dropped)
{
	struct exit_verdict r;

	setup(0x00103003 /* ld x0,1(x0) */, 0, GVA + 1);
	r = emulate(EXC_LOAD_MISALIGNED);
	EXPECT_EQ(r.pc_step, 4);
	EXPECT_EQ(v.g.ctx.gpr[0], 0);
}

/* flw NaN-boxes; both FP loads mark FS Dirty at both levels (vcpu_put()
 * then saves the f registers, the guest sees what hardware would show). */
TEST(misaligned_fp_loads)
{
	struct exit_verdict r;

	setup(0x0015a087 /* flw ft1 */, 0, GVA + 4095);
	r = emulate(EXC_LOAD_MISALIGNED);
	EXPECT_EQ(r.pc_step, 4);
	EXPECT_EQ(fregs[1], 0xffffffff00000000ULL | mem_le(GVA + 4095, 4));
	EXPECT_EQ(v.g.ctx.sstatus & SR_FS, SR_FS_DIRTY);
	EXPECT_EQ(fake_csr[CSR_VSSTATUS] & SR_FS, SR_FS_DIRTY);
	setup(0x20a2 /* c.fldsp ft1 */, 0, GVA + 4093);
	r = emulate(EXC_LOAD_MISALIGNED);
	EXPECT_EQ(r.pc_step, 2);
	EXPECT_EQ(fregs[1], mem_le(GVA + 4093, 8));
	EXPECT_EQ(v.g.ctx.gpr[1], 0);	/* not x1 */
}

/* Every store form writes exactly its bytes from the register (FP: the low
 * 32 bits for fsw), x0 stores zeros. */
TEST(misaligned_stores)
{
	for (unsigned int i = 0; i < sizeof(decoded) / sizeof(decoded[0]); i++) {
		const struct want *w = &decoded[i];
		const uint64_t val = 0x1122334455667788ULL;
		unsigned long addr = GVA + 4096 - 1;
		struct exit_verdict r;
		uint64_t before;

		if (!w->store)
			continue;
		setup(w->insn, 0, addr);
		before = mem_le(addr - 1, 1) | mem_le(addr + w->width, 1) << 8;
		if (w->fp)
			fregs[w->reg] = val;
		else
			v.g.ctx.gpr[w->reg] = val;
		r = emulate(EXC_STORE_MISALIGNED);
		EXPECT_EQ(r.action, EXIT_RESUME);
		EXPECT_EQ(r.pc_step, w->len);
		EXPECT_EQ(mem_le(addr, w->width),
			  w->width == 8 ? val : val & ((1ULL << (8 * w->width)) - 1));
		EXPECT_EQ(mem_le(addr - 1, 1) | mem_le(addr + w->width, 1) << 8, before);
		EXPECT_EQ(v.stats.misaligned_emulated, 1);
	}
	setup(0x00003023 | (1 << 7) /* sd x0,1(x0) */, 0, GVA + 5);
	EXPECT_EQ(emulate(EXC_STORE_MISALIGNED).pc_step, 4);
	EXPECT_EQ(mem_le(GVA + 5, 8), 0);
}

/* A load crossing into a page the guest has not mapped: its page fault,
 * stval the first byte of that page; rd untouched, the pc kept. */
TEST(misaligned_load_page_fault_names_the_byte)
{
	struct exit_verdict r;

	setup(0x00312283 /* lw t0 */, 0, GVA + 4094);
	kind[1] = PAGE_VS_FAULT;
	v.g.ctx.gpr[5] = 0x5a5a;
	r = emulate(EXC_LOAD_MISALIGNED);
	EXPECT_EQ(r.action, EXIT_INJECTED);
	EXPECT_EQ(r.pc_step, 0);
	EXPECT_EQ(redirected_cause, EXC_LOAD_PAGE_FAULT);
	EXPECT_EQ(redirected_tval, GVA + 4096);
	EXPECT_EQ(v.g.ctx.gpr[5], 0x5a5a);
	EXPECT_EQ(v.stats.misaligned_emulated, 0);
	/* starting in the unmapped page: its first byte is the one */
	setup(0x00312283, 0, GVA + 4097);
	kind[1] = PAGE_VS_FAULT;
	emulate(EXC_LOAD_MISALIGNED);
	EXPECT_EQ(redirected_tval, GVA + 4097);
}

/* A store's later byte faulting: its store page fault at that byte; the
 * bytes before it are written (documented: a faulting misaligned store may
 * be partly done), none after. */
TEST(misaligned_store_page_fault_after_part)
{
	struct exit_verdict r;

	setup(0x01f5b3a3 /* sd t6 */, 0, GVA + 4093);
	kind[1] = PAGE_VS_FAULT;
	v.g.ctx.gpr[31] = 0x0102030405060708ULL;
	r = emulate(EXC_STORE_MISALIGNED);
	EXPECT_EQ(r.action, EXIT_INJECTED);
	EXPECT_EQ(redirected_cause, EXC_STORE_PAGE_FAULT);
	EXPECT_EQ(redirected_tval, GVA + 4096);
	EXPECT_EQ(mem_le(GVA + 4093, 3), 0x060708);
}

TEST(misaligned_access_fault_counted)
{
	setup(0x0135a0a3 /* sw s3 */, 0, GVA + 2 * 4096 - 2);
	kind[2] = PAGE_VS_ACCESS;
	emulate(EXC_STORE_MISALIGNED);
	EXPECT_EQ(redirected_cause, EXC_STORE_ACCESS);
	EXPECT_EQ(redirected_tval, GVA + 2 * 4096);
	EXPECT_EQ(pmu_fw[SBI_PMU_FW_ACCESS_STORE], 1);
	setup(0x00159503 /* lh a0 */, 0, GVA + 2 * 4096 - 1);
	kind[2] = PAGE_VS_ACCESS;
	emulate(EXC_LOAD_MISALIGNED);
	EXPECT_EQ(redirected_cause, EXC_LOAD_ACCESS);
	EXPECT_EQ(pmu_fw[SBI_PMU_FW_ACCESS_LOAD], 1);
}

/* A G-stage fault on a part is the hypervisor's: served with that byte's
 * address (never given to the guest), then the instruction runs again. */
TEST(misaligned_gstage_fault_is_served_then_retried)
{
	struct exit_verdict r;

	setup(0x0035bf87 /* fld ft11 */, 0, GVA + 4092);
	kind[1] = PAGE_GSTAGE;
	r = emulate(EXC_LOAD_MISALIGNED);
	EXPECT_EQ(r.action, EXIT_RESUME);
	EXPECT_EQ(r.pc_step, 0);
	EXPECT_EQ(gstage_calls, 1);
	EXPECT_EQ(gstage_cause, EXC_LOAD_GUEST_PAGE_FAULT);
	EXPECT_EQ(gstage_gpa, GPA_OF(GVA + 4096));
	EXPECT_EQ(gstage_gva, GVA + 4096);
	EXPECT_EQ(redirects, 0);
	r = emulate(EXC_LOAD_MISALIGNED);	/* the retry */
	EXPECT_EQ(r.pc_step, 4);
	EXPECT_EQ(fregs[31], mem_le(GVA + 4092, 8));
	/* a store (dirty logging's write protection) */
	setup(0xe42a /* c.sdsp a0 */, 0, GVA + 4095);
	kind[1] = PAGE_GSTAGE;
	r = emulate(EXC_STORE_MISALIGNED);
	EXPECT_EQ(gstage_cause, EXC_STORE_GUEST_PAGE_FAULT);
	EXPECT_EQ(r.pc_step, 0);
	EXPECT_EQ(emulate(EXC_STORE_MISALIGNED).pc_step, 2);
}

/* Not emulated: delegated (value 1), an AMO or LR/SC, a load decoded for a
 * store exit, a pseudoinstruction in htinst: the exception itself goes to
 * the guest with the address the hardware gave. */
TEST(misaligned_others_go_to_the_guest)
{
	static const struct { uint32_t insn; unsigned long htinst, cause; bool emulate; } cases[] = {
		{ 0x00312283, 0, EXC_LOAD_MISALIGNED, false },	/* delegated again */
		{ 0x00b6252f, 0, EXC_STORE_MISALIGNED, true },	/* amoadd.w */
		{ 0x1005b52f, 0, EXC_LOAD_MISALIGNED, true },	/* lr.d */
		{ 0x00312283, 0, EXC_STORE_MISALIGNED, true },	/* lw on a store exit */
		{ 0x00312283, 0x3020, EXC_STORE_MISALIGNED, true },	/* pseudo */
	};

	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct exit_verdict r;

		setup(cases[i].insn, cases[i].htinst, GVA + 1);
		v.g.fwft_mem.misaligned_emulate = cases[i].emulate;
		r = emulate(cases[i].cause);
		EXPECT_EQ(r.action, EXIT_INJECTED);
		EXPECT_EQ(redirects, 1);
		EXPECT_EQ(redirected_cause, cases[i].cause);
		EXPECT_EQ(redirected_tval, GVA + 1);
		EXPECT_EQ(v.g.ctx.gpr[5], 0);
		EXPECT_EQ(v.stats.misaligned_emulated, 0);
	}
}

/* An instruction that cannot be fetched now: run again, nothing changed. */
TEST(misaligned_unfetchable_is_retried)
{
	struct exit_verdict r;

	setup(0, 0, GVA + 1);
	r = emulate(EXC_LOAD_MISALIGNED);
	EXPECT_EQ(r.action, EXIT_RESUME);
	EXPECT_EQ(r.pc_step, 0);
	EXPECT_EQ(redirects, 0);
}
