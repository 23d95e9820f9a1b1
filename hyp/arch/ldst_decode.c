/* SPDX-License-Identifier: MIT */
/* The loads and stores a misaligned access can come from (RV64GC and Zcb's
 * byte/halfword compressed forms), decoded for their emulation. Field layouts:
 * unprivileged spec, "RV32/64G Instruction Set Listings" and "C" chapter. */
#include <ldst.h>

#define OPC_LOAD	0x03
#define OPC_LOAD_FP	0x07
#define OPC_STORE	0x23
#define OPC_STORE_FP	0x27

static unsigned int bits(uint32_t v, unsigned int hi, unsigned int lo)
{
	return (v >> lo) & ((1U << (hi - lo + 1)) - 1);
}

static bool set(struct ldst *a, unsigned int width, bool store, bool sign, bool fp,
		unsigned int reg, unsigned int len)
{
	*a = (struct ldst){ .width = width, .store = store, .sign_extend = sign, .fp = fp,
			    .reg = reg, .len = len };
	return true;
}

static bool decode32(uint32_t insn, struct ldst *a)
{
	unsigned int f3 = bits(insn, 14, 12), rd = bits(insn, 11, 7), rs2 = bits(insn, 24, 20);

	switch (insn & 0x7f) {
	case OPC_LOAD:		/* lb lh lw ld lbu lhu lwu; f3 7 is reserved */
		if (f3 == 7)
			return false;
		return set(a, 1U << (f3 & 3), false, f3 < 3, false, rd, 4);
	case OPC_STORE:		/* sb sh sw sd */
		if (f3 > 3)
			return false;
		return set(a, 1U << f3, true, false, false, rs2, 4);
	case OPC_LOAD_FP:	/* flw fld (the rest: Zfh, Q, vector) */
		if (f3 != 2 && f3 != 3)
			return false;
		return set(a, 1U << f3, false, false, true, rd, 4);
	case OPC_STORE_FP:	/* fsw fsd */
		if (f3 != 2 && f3 != 3)
			return false;
		return set(a, 1U << f3, true, false, true, rs2, 4);
	default:
		return false;
	}
}

/* Quadrant 0: rd'/rs2' in bits 4:2 name x8..x15 (f8..f15). */
static bool decode_q0(uint32_t insn, struct ldst *a)
{
	unsigned int r = 8 + bits(insn, 4, 2);

	switch (bits(insn, 15, 13)) {
	case 1: return set(a, 8, false, false, true, r, 2);	/* c.fld */
	case 2: return set(a, 4, false, true, false, r, 2);	/* c.lw */
	case 3: return set(a, 8, false, false, false, r, 2);	/* c.ld */
	case 5: return set(a, 8, true, false, true, r, 2);	/* c.fsd */
	case 6: return set(a, 4, true, false, false, r, 2);	/* c.sw */
	case 7: return set(a, 8, true, false, false, r, 2);	/* c.sd */
	case 4:	/* Zcb: funct6 100000 c.lbu, 100001 c.lhu/c.lh, 100010 c.sb, 100011 c.sh */
		switch (bits(insn, 12, 10)) {
		case 0: return set(a, 1, false, false, false, r, 2);
		case 1: return set(a, 2, false, bits(insn, 6, 6), false, r, 2);
		case 2: return set(a, 1, true, false, false, r, 2);
		case 3: return !bits(insn, 6, 6) && set(a, 2, true, false, false, r, 2);
		default: return false;
		}
	default:
		return false;
	}
}

/* Quadrant 2, the SP-relative forms: rd in bits 11:7, rs2 in bits 6:2. */
static bool decode_q2(uint32_t insn, struct ldst *a)
{
	unsigned int rd = bits(insn, 11, 7), rs2 = bits(insn, 6, 2);

	switch (bits(insn, 15, 13)) {
	case 1: return set(a, 8, false, false, true, rd, 2);		/* c.fldsp */
	case 2: return rd && set(a, 4, false, true, false, rd, 2);	/* c.lwsp (rd 0 reserved) */
	case 3: return rd && set(a, 8, false, false, false, rd, 2);	/* c.ldsp (rd 0 reserved) */
	case 5: return set(a, 8, true, false, true, rs2, 2);		/* c.fsdsp */
	case 6: return set(a, 4, true, false, false, rs2, 2);		/* c.swsp */
	case 7: return set(a, 8, true, false, false, rs2, 2);		/* c.sdsp */
	default: return false;
	}
}

bool ldst_decode(uint32_t insn, struct ldst *a)
{
	switch (insn & 3) {
	case 0: return decode_q0(insn & 0xffff, a);
	case 2: return decode_q2(insn & 0xffff, a);
	case 3: return decode32(insn, a);
	default: return false;	/* quadrant 1: no memory access */
	}
}

bool ldst_from_htinst(unsigned long htinst, uint32_t *insn, unsigned int *len)
{
	/* transformed: bit 0 set; bit 1 clear when the trapping instruction was
	 * compressed (Priv spec, H extension, "Transformed Instruction") */
	uint32_t t = (uint32_t)htinst | 2;
	unsigned int opc = t & 0x7f;

	if (!(htinst & 1) || htinst >> 32 ||
	    (opc != OPC_LOAD && opc != OPC_LOAD_FP && opc != OPC_STORE && opc != OPC_STORE_FP))
		return false;
	*insn = t;
	*len = (htinst & 2) ? 4 : 2;
	return true;
}
