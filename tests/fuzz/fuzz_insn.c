/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the MMIO load/store decoder, hyp/arch/insn.c
 * (docs/fuzzing.md). Both ways hyp/dispatch/exit.c decode_access() gets an
 * instruction are driven from one input:
 *
 *  - the fetched form: the bytes at the guest pc, read the way
 *    vcpu_fetch_insn() reads them (a halfword; a second one only when the
 *    first says the instruction is 32 bits long; a missing halfword is a
 *    fetch fault, 0);
 *  - the transformed form (htinst): the first 8 bytes of the input as the
 *    CSR's value, through insn_from_htinst().
 *
 * Checked on every input: the decoder agrees with a reference decoder written
 * here from the ISA manual's tables (kind, width, register, direction, sign
 * extension, length); an access has a width of 1, 2, 4 or 8 and a register
 * below 32; a compressed instruction decodes to length 2 and a 32-bit one to
 * 4; the decoding of a 16-bit instruction does not depend on the 16 bits
 * after it (bytes beyond the instruction); a shadow-stack instruction is
 * never a plain access; and a load or store decoded from its fetched form
 * decodes the same from the transformed form the H extension defines for it
 * (Priv spec, "Transformed Instruction"), with the trapping length.
 * The access is zeroed before each decode, as hyp/dispatch/exit.c's callers do
 * (the decoder leaves sign_extend alone for a 32-bit store; it is read for
 * loads only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mmio.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static uint32_t field(uint32_t v, unsigned int hi, unsigned int lo)
{
	return (v >> lo) & ((1U << (hi - lo + 1)) - 1);
}

/* ---- the reference: the ISA manual's encodings, written out ---- */

struct ref {
	enum insn_kind kind;
	unsigned int width, reg, len;
	bool is_write, sign_extend;
};

/* RV64I loads (LB LH LW LD LBU LHU LWU) and stores (SB SH SW SD). */
static struct ref ref32(uint32_t i)
{
	static const unsigned int load_width[8] = { 1, 2, 4, 8, 1, 2, 4, 0 };
	struct ref r = { .kind = INSN_KIND_OTHER, .len = 4 };
	uint32_t f3 = field(i, 14, 12);

	if ((i & 0x7f) == 0x03 && load_width[f3]) {
		r.kind = INSN_KIND_LOAD;
		r.width = load_width[f3];
		r.sign_extend = f3 <= 2;	/* lb lh lw; ld is 64 bits already */
		r.reg = field(i, 11, 7);
	} else if ((i & 0x7f) == 0x23 && f3 <= 3) {
		r.kind = INSN_KIND_STORE;
		r.width = 1U << f3;
		r.is_write = true;
		r.reg = field(i, 24, 20);
	}
	return r;
}

/* RV64C: C.LW C.LD C.SW C.SD (quadrant 0), C.LWSP C.LDSP (rd != 0: reserved
 * otherwise) C.SWSP C.SDSP (quadrant 2). The FP forms are not ours. */
static struct ref ref16(uint16_t i)
{
	struct ref r = { .kind = INSN_KIND_OTHER, .len = 2 };
	uint32_t q = i & 3, f3 = field(i, 15, 13);

	if (q == 0 && (f3 == 2 || f3 == 3 || f3 == 6 || f3 == 7)) {
		r.kind = f3 >= 6 ? INSN_KIND_STORE : INSN_KIND_LOAD;
		r.is_write = f3 >= 6;
		r.width = (f3 & 1) ? 8 : 4;
		r.sign_extend = f3 == 2;
		r.reg = 8 + field(i, 4, 2);
	} else if (q == 2 && (f3 == 2 || f3 == 3) && field(i, 11, 7)) {
		r.kind = INSN_KIND_LOAD;
		r.width = f3 == 3 ? 8 : 4;
		r.sign_extend = f3 == 2;
		r.reg = field(i, 11, 7);
	} else if (q == 2 && (f3 == 6 || f3 == 7)) {
		r.kind = INSN_KIND_STORE;
		r.is_write = true;
		r.width = f3 == 7 ? 8 : 4;
		r.reg = field(i, 6, 2);
	}
	return r;
}

/* The transformed instruction the H extension writes to htinst for a
 * trapping load/store @r (address offset 0): the 32-bit form with the
 * immediate and rs1 zeroed, bit 1 clear when the trapping one was compressed. */
static uint64_t transformed(const struct ref *r)
{
	static const uint32_t load_f3[9] = { [1] = 0, [2] = 1, [4] = 2, [8] = 3 };
	uint32_t t;

	if (r->kind == INSN_KIND_LOAD) {
		uint32_t f3 = load_f3[r->width] | (r->sign_extend || r->width == 8 ? 0 : 4);

		t = 0x03 | (r->reg << 7) | (f3 << 12);
	} else {
		t = 0x23 | (r->reg << 20) | ((uint32_t)load_f3[r->width] << 12);
	}
	return r->len == 2 ? t & ~2U : t;
}

/* ---- the checks ---- */

static void check_access(enum insn_kind kind, const struct mmio_access *a)
{
	if (kind != INSN_KIND_LOAD && kind != INSN_KIND_STORE)
		return;
	CHECK(a->width == 1 || a->width == 2 || a->width == 4 || a->width == 8);
	CHECK(a->reg < 32);
	CHECK(a->insn_len == 2 || a->insn_len == 4);
	CHECK(a->is_write == (kind == INSN_KIND_STORE));
	CHECK(!a->sign_extend || (!a->is_write && a->width < 8));
}

static void check_same(enum insn_kind kind, const struct mmio_access *a, const struct ref *r)
{
	CHECK(kind == r->kind);
	if (kind != INSN_KIND_LOAD && kind != INSN_KIND_STORE)
		return;
	CHECK(a->width == r->width && a->reg == r->reg && a->is_write == r->is_write);
	CHECK(a->sign_extend == r->sign_extend && a->insn_len == r->len);
}

/* The fetched form: @pc holds @avail bytes (fewer than an instruction: the
 * fetch of the missing halfword faults). */
static void fetched(const uint8_t *pc, size_t avail, uint16_t after)
{
	struct mmio_access a, b;
	enum insn_kind kind, kind2;
	uint32_t lo, hi = 0, insn;
	struct ref r;

	if (avail < 2)
		return;		/* the first fetch faults: decode_access() gives up */
	lo = pc[0] | (uint32_t)pc[1] << 8;
	if ((lo & 3) == 3) {
		if (avail < 4)
			return;	/* the second fetch faults */
		hi = pc[2] | (uint32_t)pc[3] << 8;
	}
	insn = lo | hi << 16;
	if (!insn)
		return;		/* what vcpu_fetch_insn() returns on a fault */
	memset(&a, 0, sizeof(a));
	kind = insn_decode_mmio(insn, &a);
	check_access(kind, &a);
	if (kind == INSN_KIND_LOAD || kind == INSN_KIND_STORE)
		CHECK(a.insn_len == ((lo & 3) == 3 ? 4U : 2U));
	CHECK((kind == INSN_KIND_SHADOW_STACK) == insn_is_shadow_stack(insn));
	if (kind == INSN_KIND_SHADOW_STACK)
		return;
	r = (lo & 3) == 3 ? ref32(insn) : ref16((uint16_t)lo);
	check_same(kind, &a, &r);

	/* a 16-bit instruction: whatever follows it changes nothing */
	if ((lo & 3) != 3) {
		memset(&b, 0, sizeof(b));
		kind2 = insn_decode_mmio(lo | (uint32_t)after << 16, &b);
		CHECK(kind2 == kind);
		if (kind == INSN_KIND_LOAD || kind == INSN_KIND_STORE)
			CHECK(b.width == a.width && b.reg == a.reg && b.is_write == a.is_write &&
			      b.sign_extend == a.sign_extend && b.insn_len == a.insn_len);
	}

	/* the same access, reported through htinst */
	if (kind == INSN_KIND_LOAD || kind == INSN_KIND_STORE) {
		uint32_t t;
		unsigned int len = 0;

		CHECK(insn_from_htinst(transformed(&r), &t, &len));
		CHECK(len == r.len);
		memset(&b, 0, sizeof(b));
		kind2 = insn_decode_mmio(t, &b);
		b.insn_len = len;		/* as decode_access() does */
		check_access(kind2, &b);
		check_same(kind2, &b, &r);
	}
}

/* The transformed form: htinst as the CSR holds it. */
static void from_htinst(uint64_t htinst)
{
	struct mmio_access a;
	enum insn_kind kind;
	uint32_t t = 0xdeadbeef;
	unsigned int len = 77;
	bool ok = insn_from_htinst(htinst, &t, &len);
	uint32_t opc = ((uint32_t)htinst | 2) & 0x7f;

	/* only a transformed (bit 0) plain load/store of 32 bits or fewer */
	CHECK(ok == ((htinst & 1) && !(htinst >> 32) && (opc == 0x03 || opc == 0x23)));
	if (!ok)
		return;
	CHECK(len == ((htinst & 2) ? 4U : 2U));
	CHECK((t & 3) == 3 && (t | 2) == ((uint32_t)htinst | 2));
	memset(&a, 0, sizeof(a));
	kind = insn_decode_mmio(t, &a);
	CHECK(kind != INSN_KIND_SHADOW_STACK);
	CHECK(a.insn_len == 4);
	a.insn_len = len;
	check_access(kind, &a);
	{
		struct ref r = ref32(t);

		r.len = len;
		check_same(kind, &a, &r);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *pc;
	uint64_t htinst = 0;
	uint16_t after;

	/* exactly the bytes the input has: a read past them is an ASan report */
	pc = malloc(size ? size : 1);
	CHECK(pc);
	memcpy(pc, data, size);
	after = size >= 4 ? (uint16_t)(pc[size - 2] | pc[size - 1] << 8) : 0xffff;
	fetched(pc, size, after);
	/* and every halfword boundary of a short stream of instructions */
	for (size_t off = 2; off + 2 <= size && off < 64; off += 2)
		fetched(pc + off, size - off, after);
	memcpy(&htinst, pc, MIN(size, sizeof(htinst)));
	from_htinst(htinst);
	from_htinst((uint32_t)htinst);
	free(pc);
	return 0;
}
