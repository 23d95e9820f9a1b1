/* SPDX-License-Identifier: MIT */
/* hyp/arch/insn.c: the MMIO load/store decoder, the htinst filter and the
 * shadow-stack recogniser. Every encoding below was assembled with binutils
 * 2.40 (riscv64-unknown-elf-as -march=rv64gc, objdump -M no-aliases); binutils
 * 2.40 has no Zicfiss, so the shadow-stack ones were written with .insn from
 * the Zicfiss field layout and checked against the values in the spec:
 *   sspush rs2      1100111 rs2 00000 100 00000 1110011  (MOP.RR.7, rs2 x1/x5)
 *   sspopchk rs1    1100110 11100 rs1 100 00000 1110011  (MOP.R.28, rs1 x1/x5)
 *   ssrdp rd        1100110 11100 00000 100 rd 1110011   (MOP.R.28, no memory access)
 *   ssamoswap.w/.d  01001 aq rl rs2 rs1 01x rd 0101111
 *   c.sspush x1 = C.MOP.1 = 0x6081, c.sspopchk x5 = C.MOP.5 = 0x6281 */
#include <mmio.h>
#include "test.h"

#define POISON 0xdeadu

/* EXPECT_EQ with a tag (the instruction, or a loop index) in the upper 32 bits
 * of both sides, so a failure shows which vector it was: a, b fit 32 bits. */
#define EXPECT_TAG_EQ(tag, a, b)                                              \
	EXPECT_EQ(((uint64_t)(uint32_t)(tag) << 32) | (uint32_t)(a),          \
		  ((uint64_t)(uint32_t)(tag) << 32) | (uint32_t)(b))

/* Fields the decoder must write are poisoned first (bools set to the opposite
 * of what is expected), so a decoder that forgets one fails. */
struct want {
	uint32_t insn;
	enum insn_kind kind;
	unsigned int width, reg, len;
	bool sign;		/* loads only */
};

static void check_one(const struct want *w)
{
	struct mmio_access a = {
		.width = POISON, .reg = POISON, .insn_len = POISON,
		.is_write = w->kind != INSN_KIND_STORE,
		.sign_extend = !w->sign,
		.gpa = 0x1234, .value = 0x5678,
	};
	enum insn_kind k = insn_decode_mmio(w->insn, &a);

	EXPECT_TAG_EQ(w->insn, k, w->kind);
	if (k != w->kind)
		return;
	if (w->kind == INSN_KIND_LOAD || w->kind == INSN_KIND_STORE) {
		EXPECT_TAG_EQ(w->insn, a.width, w->width);
		EXPECT_TAG_EQ(w->insn, a.reg, w->reg);
		EXPECT_TAG_EQ(w->insn, a.insn_len, w->len);
		EXPECT_TAG_EQ(w->insn, a.is_write, w->kind == INSN_KIND_STORE);
		if (w->kind == INSN_KIND_LOAD)
			EXPECT_TAG_EQ(w->insn, a.sign_extend, w->sign);
	}
	/* never touched: the caller owns them */
	EXPECT_TAG_EQ(w->insn, a.gpa, 0x1234);
	EXPECT_TAG_EQ(w->insn, a.value, 0x5678);
}

#define CHECK_ALL(tab)                                                        \
	do {                                                                  \
		for (unsigned int i_ = 0; i_ < ARRAY_SIZE(tab); i_++)         \
			check_one(&(tab)[i_]);                                \
	} while (0)

#define LOAD(i, w, r, s, l)	{ (i), INSN_KIND_LOAD, (w), (r), (l), (s) }
#define STORE(i, w, r, l)	{ (i), INSN_KIND_STORE, (w), (r), (l), false }
#define OTHER(i)		{ (i), INSN_KIND_OTHER, 0, 0, 0, false }
#define SS(i)			{ (i), INSN_KIND_SHADOW_STACK, 0, 0, 0, false }

/* ---- 32-bit loads and stores ---- */

TEST(insn_loads32)
{
	static const struct want t[] = {
		LOAD(0x00058503, 1, 10, true, 4),	/* lb a0,0(a1) */
		LOAD(0x00441283, 2, 5, true, 4),	/* lh t0,4(s0) */
		LOAD(0xff812f83, 4, 31, true, 4),	/* lw t6,-8(sp) */
		LOAD(0x0107b083, 8, 1, false, 4),	/* ld ra,16(a5) */
		LOAD(0x000fcd83, 1, 27, false, 4),	/* lbu s11,0(t6) */
		LOAD(0x00255003, 2, 0, false, 4),	/* lhu zero,2(a0) */
		LOAD(0x00c1e883, 4, 17, false, 4),	/* lwu a7,12(gp) */
		LOAD(0x00002503, 4, 10, true, 4),	/* lw a0,0(zero): htinst form */
	};

	CHECK_ALL(t);
}

TEST(insn_stores32)
{
	static const struct want t[] = {
		STORE(0x00a58023, 1, 10, 4),	/* sb a0,0(a1) */
		STORE(0x01f59123, 2, 31, 4),	/* sh t6,2(a1) */
		STORE(0xfff12e23, 4, 31, 4),	/* sw t6,-4(sp) */
		STORE(0x00143423, 8, 1, 4),	/* sd ra,8(s0) */
		STORE(0x00052023, 4, 0, 4),	/* sw zero,0(a0) */
	};

	CHECK_ALL(t);
}

TEST(insn_reserved_funct3_is_other)
{
	static const struct want t[] = {
		OTHER(0x0005f503),	/* LOAD funct3=7 (lb a0,0(a1) with f3 7) */
		OTHER(0x00a5c023),	/* STORE funct3=4 (sq on RV128) */
		OTHER(0x00a5d023),	/* STORE funct3=5 */
		OTHER(0x00a5e023),	/* STORE funct3=6 */
		OTHER(0x00a5f023),	/* STORE funct3=7 */
	};

	CHECK_ALL(t);
}

TEST(insn_fp_amo_system_are_other)
{
	static const struct want t[] = {
		OTHER(0x00052087),	/* flw ft1,0(a0) */
		OTHER(0x00853107),	/* fld ft2,8(a0) */
		OTHER(0x08b6252f),	/* amoswap.w a0,a1,(a2) */
		OTHER(0x1005a52f),	/* lr.w a0,(a1) */
		OTHER(0x00000073),	/* ecall */
		OTHER(0x10500073),	/* wfi */
		OTHER(0x00150513),	/* addi a0,a0,1 */
	};

	CHECK_ALL(t);
}

/* ---- compressed ---- */

TEST(insn_compressed_quadrant0)
{
	static const struct want t[] = {
		LOAD(0x41c8, 4, 10, true, 2),	/* c.lw a0,4(a1) */
		LOAD(0x4380, 4, 8, true, 2),	/* c.lw s0,0(a5) */
		LOAD(0x4000, 4, 8, true, 2),	/* c.lw s0,0(s0) */
		LOAD(0x649c, 8, 15, false, 2),	/* c.ld a5,8(s1) */
		STORE(0xc2d0, 4, 12, 2),	/* c.sw a2,4(a3) */
		STORE(0xfd64, 8, 9, 2),		/* c.sd s1,248(a0) */
		OTHER(0x2500),			/* c.fld fs0,8(a0) */
		OTHER(0xa184),			/* c.fsd fs1,0(a1) */
		OTHER(0x0028),			/* c.addi4spn a0,sp,8 */
		OTHER(0x0000),			/* defined illegal */
		OTHER(0x8000),			/* quadrant 0 funct3=4: reserved */
	};

	CHECK_ALL(t);
}

TEST(insn_compressed_sp_relative)
{
	static const struct want t[] = {
		LOAD(0x4082, 4, 1, true, 2),	/* c.lwsp ra,0(sp) */
		LOAD(0x5ffe, 4, 31, true, 2),	/* c.lwsp t6,252(sp) */
		LOAD(0x6522, 8, 10, false, 2),	/* c.ldsp a0,8(sp) */
		LOAD(0x7ffe, 8, 31, false, 2),	/* c.ldsp t6,504(sp) */
		OTHER(0x4002),			/* c.lwsp rd=0: reserved */
		OTHER(0x6002),			/* c.ldsp rd=0: reserved */
		OTHER(0x7002),			/* c.ldsp rd=0, offset bits set: reserved */
		STORE(0xc22a, 4, 10, 2),	/* c.swsp a0,4(sp) */
		STORE(0xc07e, 4, 31, 2),	/* c.swsp t6,0(sp) */
		STORE(0xe406, 8, 1, 2),		/* c.sdsp ra,8(sp) */
		STORE(0xe002, 8, 0, 2),		/* c.sdsp zero,0(sp) */
		OTHER(0x20a2),			/* c.fldsp ft1,8(sp) */
		OTHER(0xa80a),			/* c.fsdsp ft2,16(sp) */
		OTHER(0x050e),			/* c.slli a0,3 */
		OTHER(0x852e),			/* c.mv a0,a1 */
	};

	CHECK_ALL(t);
}

TEST(insn_compressed_quadrant1_is_other)
{
	static const struct want t[] = {
		OTHER(0x6085),	/* c.lui ra,1 (next to c.sspush x1 = 0x6081) */
		OTHER(0x6289),	/* c.lui t0,2 (next to c.sspopchk x5 = 0x6281) */
		OTHER(0x6505),	/* c.lui a0,1 */
		OTHER(0x6181),	/* c.mop.3: a Zcmop that is not c.sspush/c.sspopchk */
		OTHER(0x0505),	/* c.addi a0,1 */
		OTHER(0x450d),	/* c.li a0,3 */
		OTHER(0xa001),	/* c.j . */
	};

	CHECK_ALL(t);
}

/* A 16-bit instruction fetched as 32 bits (upper half: the next instruction) */
TEST(insn_compressed_ignores_upper_half)
{
	static const struct want t[] = {
		LOAD(0xffff41c8, 4, 10, true, 2),	/* c.lw a0,4(a1) */
		STORE(0x1234e406, 8, 1, 2),		/* c.sdsp ra,8(sp) */
		OTHER(0x00036085),			/* c.lui ra,1 */
		SS(0x41c86081),				/* c.sspush x1 */
	};

	CHECK_ALL(t);
}

/* ---- shadow stack ---- */

static const uint32_t ss_insns[] = {
	0xce104073,	/* sspush x1 */
	0xce504073,	/* sspush x5 */
	0xcdc0c073,	/* sspopchk x1 */
	0xcdc2c073,	/* sspopchk x5 */
	0x6081,		/* c.sspush x1 */
	0x6281,		/* c.sspopchk x5 */
	0x4800202f,	/* ssamoswap.w x0,x0,(x0) */
	0x4800302f,	/* ssamoswap.d x0,x0,(x0) */
	0x48b6252f,	/* ssamoswap.w a0,a1,(a2) */
	0x4863b2af,	/* ssamoswap.d t0,t1,(t2) */
	0x4feeafaf,	/* ssamoswap.w.aqrl t6,t5,(t4) */
	0x4cb6352f,	/* ssamoswap.d.aq a0,a1,(a2) */
	0x4ab6352f,	/* ssamoswap.d.rl a0,a1,(a2) */
};

/* MOP/Zcmop encodings next to the SS ones, and instructions that are no memory access */
static const uint32_t not_ss_insns[] = {
	0xce204073,	/* MOP.RR.7 rs2=x2 (sspush x2 is plain Zimop) */
	0xce004073,	/* MOP.RR.7 rs2=x0 */
	0xcff04073,	/* MOP.RR.7 rs2=x31 */
	0xce10c073,	/* MOP.RR.7 rs1=x1, rs2=x1 */
	0xce1040f3,	/* MOP.RR.7 rd=x1, rs2=x1 */
	0xcdc14073,	/* MOP.R.28 rs1=x2 (sspopchk x2 is plain Zimop) */
	0xcdc04073,	/* MOP.R.28 rs1=x0, rd=x0 */
	0xcdc0c0f3,	/* MOP.R.28 rs1=x1, rd=x1 */
	0xcdd0c073,	/* MOP.R.29 rs1=x1 */
	0xcdc04573,	/* ssrdp a0: reads ssp, no memory access */
	0xcdc040f3,	/* ssrdp ra */
	0xcdc042f3,	/* ssrdp t0 */
	0xcdc04ff3,	/* ssrdp t6 */
	0x48b6452f,	/* AMO funct5=01001 with funct3=4 */
	0x08b6252f,	/* amoswap.w a0,a1,(a2) */
	0x08b6352f,	/* amoswap.d a0,a1,(a2) */
	0x6085,		/* c.lui ra,1 */
	0x6289,		/* c.lui t0,2 */
	0x6181,		/* c.mop.3 */
	0x6001,		/* c.lui x0 / c.mop encoding with rd=x0 */
	0xe081,		/* quadrant 1 funct3=7 (c.bnez) with the c.sspush low bits */
	0x6083,		/* 0x6081 with bit 1 set: lwu ra,0(zero) */
	0xce1c4073,	/* QEMU's bogus htinst for sspush (Q9) */
	0x00058503,	/* lb a0,0(a1) */
};

TEST(insn_shadow_stack_recognised)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(ss_insns); i++) {
		EXPECT_TAG_EQ(ss_insns[i], insn_is_shadow_stack(ss_insns[i]), true);
	}
}

TEST(insn_shadow_stack_decodes_as_shadow_stack)
{
	static const struct want t[] = {
		SS(0xce104073), SS(0xce504073), SS(0xcdc0c073), SS(0xcdc2c073),
		SS(0x6081), SS(0x6281), SS(0x4800202f), SS(0x4800302f),
		SS(0x48b6252f), SS(0x4863b2af), SS(0x4feeafaf), SS(0x4cb6352f),
		SS(0x4ab6352f),
	};

	CHECK_ALL(t);
}

TEST(insn_not_shadow_stack)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(not_ss_insns); i++) {
		struct mmio_access a = { 0 };

		EXPECT_TAG_EQ(not_ss_insns[i], insn_is_shadow_stack(not_ss_insns[i]), false);
		EXPECT_TAG_EQ(not_ss_insns[i],
			      insn_decode_mmio(not_ss_insns[i], &a) == INSN_KIND_SHADOW_STACK, false);
	}
}

/* ssrdp rd for every rd: it only reads ssp into a register */
TEST(insn_ssrdp_is_not_a_memory_access)
{
	for (unsigned int rd = 0; rd < 32; rd++) {
		uint32_t insn = 0xcdc04073U | rd << 7;
		struct mmio_access a = { 0 };

		EXPECT_TAG_EQ(insn, insn_is_shadow_stack(insn), false);
		EXPECT_TAG_EQ(insn, insn_decode_mmio(insn, &a), INSN_KIND_OTHER);
	}
}

/* Exactly x1 and x5 make sspush/sspopchk; every other register is a plain MOP */
TEST(insn_sspush_sspopchk_only_x1_x5)
{
	for (unsigned int r = 0; r < 32; r++) {
		bool want = r == 1 || r == 5;

		uint32_t push = 0xce004073U | r << 20, popchk = 0xcdc04073U | r << 15;

		EXPECT_TAG_EQ(push, insn_is_shadow_stack(push), want);
		EXPECT_TAG_EQ(popchk, insn_is_shadow_stack(popchk), want);
	}
}

/* ssamoswap: any rd/rs1/rs2 and aq/rl, width .w and .d only */
TEST(insn_ssamoswap_all_operands)
{
	for (unsigned int f3 = 0; f3 < 8; f3++) {
		for (unsigned int aqrl = 0; aqrl < 4; aqrl++) {
			uint32_t insn = 0x4800002fU | aqrl << 25 | 31U << 20 | 17U << 15 |
					f3 << 12 | 9U << 7;

			EXPECT_TAG_EQ(insn, insn_is_shadow_stack(insn), f3 == 2 || f3 == 3);
		}
	}
}

/* ---- htinst ---- */

static bool htinst(unsigned long v, uint32_t *insn, unsigned int *len)
{
	*insn = 0xfeedf00d;
	*len = POISON;
	return insn_from_htinst(v, insn, len);
}

TEST(insn_htinst_zero)
{
	uint32_t insn;
	unsigned int len;

	EXPECT_FALSE(htinst(0, &insn, &len));
}

TEST(insn_htinst_transformed_32bit)
{
	static const uint32_t t[] = {
		0x00002503,	/* lw a0 (transformed: offset 0, rs1 field 0) */
		0x00003083,	/* ld ra */
		0x00004d83,	/* lbu s11 */
		0x00a02023,	/* sw a0 */
		0x00103023,	/* sd ra */
		0x00058503,	/* lb a0,0(a1), as found, not transformed */
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(t); i++) {
		uint32_t insn;
		unsigned int len;

		EXPECT_TAG_EQ(t[i], htinst(t[i], &insn, &len), true);
		EXPECT_TAG_EQ(t[i], insn, t[i]);
		EXPECT_TAG_EQ(t[i], len, 4);
	}
}

/* bit 1 clear: the trapping instruction was 16-bit; the 32-bit form comes back */
TEST(insn_htinst_transformed_compressed)
{
	struct {
		uint32_t htinst, want;
		enum insn_kind kind;
		unsigned int width, reg;
	} t[] = {
		{ 0x00002501, 0x00002503, INSN_KIND_LOAD, 4, 10 },	/* c.lw a0 */
		{ 0x00003781, 0x00003783, INSN_KIND_LOAD, 8, 15 },	/* c.ld a5 */
		{ 0x00c02021, 0x00c02023, INSN_KIND_STORE, 4, 12 },	/* c.sw a2 */
		{ 0x00903021, 0x00903023, INSN_KIND_STORE, 8, 9 },	/* c.sd s1 */
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(t); i++) {
		struct mmio_access a = { 0 };
		uint32_t insn;
		unsigned int len;

		uint32_t h = t[i].htinst;

		EXPECT_TAG_EQ(h, htinst(h, &insn, &len), true);
		EXPECT_TAG_EQ(h, insn, t[i].want);
		EXPECT_TAG_EQ(h, insn & 3, 3);
		EXPECT_TAG_EQ(h, len, 2);
		EXPECT_TAG_EQ(h, insn_decode_mmio(insn, &a), t[i].kind);
		EXPECT_TAG_EQ(h, a.width, t[i].width);
		EXPECT_TAG_EQ(h, a.reg, t[i].reg);
	}
}

/* Not transformed loads/stores: the caller must fetch the instruction */
TEST(insn_htinst_refused)
{
	static const unsigned long t[] = {
		0x3000,		/* pseudoinstruction: 64-bit VS-stage PTE read */
		0x2000,		/* pseudoinstruction: 32-bit VS-stage PTE read */
		0x3020,		/* pseudoinstruction: 64-bit VS-stage PTE write */
		0x2020,		/* pseudoinstruction: 32-bit VS-stage PTE write */
		0xce1c4073,	/* QEMU's bogus value for sspush (SYSTEM opcode, Q9) */
		0xce104073,	/* sspush x1 itself */
		0x4800202f,	/* ssamoswap.w */
		0x08b6252f,	/* amoswap.w */
		0x00052087,	/* flw */
		0x00052027,	/* fsw */
		0x00150513,	/* addi */
		0x00002502,	/* a load with bit 0 clear: not a transformed instruction */
		0x00002500,
		0x100000000UL | 0x00002503,		/* bits above 31 */
		0x8000000000000000UL | 0x00002503,
		0xffffffff00002503UL,
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(t); i++) {
		uint32_t insn;
		unsigned int len;

		EXPECT_TAG_EQ(i, htinst(t[i], &insn, &len), false);	/* tag: index */
	}
}
