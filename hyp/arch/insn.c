/* SPDX-License-Identifier: MIT */
/* Load/store decoder for MMIO emulation: 32-bit loads/stores and the compressed
 * C.LW/C.LD/C.SW/C.SD (+SP forms). Everything else is left to the caller. */
#include <mmio.h>

#define OPC_LOAD	0x03
#define OPC_STORE	0x23
#define OPC_AMO		0x2f
#define OPC_SYSTEM	0x73

static unsigned int bits(uint32_t v, unsigned int hi, unsigned int lo)
{
	return (v >> lo) & ((1U << (hi - lo + 1)) - 1);
}

bool insn_is_shadow_stack(uint32_t insn)
{
	if ((insn & 3) != 3)	/* c.sspush x1 / c.sspopchk x5 */
		return (insn & 0xffff) == 0x6081 || (insn & 0xffff) == 0x6281;
	if ((insn & 0xfe0fffffU) == 0xce004073U)	/* sspush x1/x5 */
		return bits(insn, 24, 20) == 1 || bits(insn, 24, 20) == 5;
	if ((insn & 0xfff07fffU) == 0xcdc04073U)	/* sspopchk x1/x5 */
		return bits(insn, 19, 15) == 1 || bits(insn, 19, 15) == 5;
	/* ssamoswap.w/.d */
	return (insn & 0xf800707fU) == 0x4800202fU || (insn & 0xf800707fU) == 0x4800302fU;
}

bool insn_from_htinst(unsigned long htinst, uint32_t *insn, unsigned int *len)
{
	/* Transformed instructions have bit 0 set; bit 1 clear means the trapping
	 * instruction was compressed (Priv spec, H ext, "Transformed Instruction"). */
	uint32_t t = (uint32_t)htinst | 2;
	unsigned int opc = t & 0x7f;

	if (!(htinst & 1) || htinst >> 32 || (opc != OPC_LOAD && opc != OPC_STORE))
		return false;
	*insn = t;
	*len = (htinst & 2) ? 4 : 2;
	return true;
}

static enum insn_kind decode32(uint32_t insn, struct mmio_access *a)
{
	unsigned int f3 = bits(insn, 14, 12);

	a->insn_len = 4;
	switch (insn & 0x7f) {
	case OPC_LOAD:
		if (f3 == 7)
			return INSN_KIND_OTHER;
		a->width = 1U << (f3 & 3);
		a->sign_extend = f3 < 4 && f3 != 3;
		a->reg = bits(insn, 11, 7);
		a->is_write = false;
		return INSN_KIND_LOAD;
	case OPC_STORE:
		if (f3 > 3)
			return INSN_KIND_OTHER;
		a->width = 1U << f3;
		a->reg = bits(insn, 24, 20);
		a->is_write = true;
		return INSN_KIND_STORE;
	default:
		return INSN_KIND_OTHER;
	}
}

static enum insn_kind decode16(uint32_t insn, struct mmio_access *a)
{
	unsigned int op = insn & 3, f3 = bits(insn, 15, 13);

	a->insn_len = 2;
	a->sign_extend = false;
	if (op == 0) {		/* C.LW/C.LD/C.SW/C.SD: rd'/rs2' in bits 4:2 */
		a->reg = 8 + bits(insn, 4, 2);
		switch (f3) {
		case 2: a->width = 4; a->sign_extend = true; a->is_write = false; return INSN_KIND_LOAD;
		case 3: a->width = 8; a->is_write = false; return INSN_KIND_LOAD;
		case 6: a->width = 4; a->is_write = true; return INSN_KIND_STORE;
		case 7: a->width = 8; a->is_write = true; return INSN_KIND_STORE;
		default: return INSN_KIND_OTHER;
		}
	}
	if (op == 2) {		/* SP-relative forms */
		switch (f3) {
		case 2:
		case 3:
			a->reg = bits(insn, 11, 7);
			if (!a->reg)
				return INSN_KIND_OTHER;	/* reserved */
			a->width = f3 == 2 ? 4 : 8;
			a->sign_extend = f3 == 2;
			a->is_write = false;
			return INSN_KIND_LOAD;
		case 6:
		case 7:
			a->reg = bits(insn, 6, 2);
			a->width = f3 == 6 ? 4 : 8;
			a->is_write = true;
			return INSN_KIND_STORE;
		default:
			return INSN_KIND_OTHER;
		}
	}
	return INSN_KIND_OTHER;
}

enum insn_kind insn_decode_mmio(uint32_t insn, struct mmio_access *a)
{
	/* plain loads/stores first: they are what devices see */
	if ((insn & 0x7f) == OPC_LOAD || (insn & 0x7f) == OPC_STORE)
		return decode32(insn, a);
	if (insn_is_shadow_stack(insn))
		return INSN_KIND_SHADOW_STACK;
	if ((insn & 3) == 3)
		return decode32(insn, a);
	return decode16(insn & 0xffff, a);
}
