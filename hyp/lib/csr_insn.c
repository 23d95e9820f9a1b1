/* SPDX-License-Identifier: MIT */
/* Zicsr decoding (RISC-V unprivileged spec, "Zicsr"): funct3 1..3 take rs1's
 * value, 5..7 the 5-bit immediate in the rs1 field. csrrw always writes;
 * csrrs/csrrc write only if rs1 is not x0 (or the immediate is not 0), so a
 * plain read never has a write's side effects. */
#include <csr_insn.h>

#define OPCODE_SYSTEM	0x73

bool csr_insn_decode(uint32_t insn, const unsigned long *gpr, struct csr_insn *out)
{
	unsigned int f3 = (insn >> 12) & 7, rs1 = (insn >> 15) & 31;
	uint64_t src;

	if ((insn & 0x7f) != OPCODE_SYSTEM || (f3 & 3) == 0)
		return false;
	src = (f3 & 4) ? rs1 : (rs1 ? gpr[rs1] : 0);
	out->csr = (insn >> 20) & 0xfff;
	out->rd = (insn >> 7) & 31;
	switch (f3 & 3) {
	case 1:		/* csrrw[i] */
		out->write = true;
		out->val = src;
		out->wmask = ~0ULL;
		break;
	case 2:		/* csrrs[i]: set the bits of src */
		out->write = rs1 != 0;
		out->val = ~0ULL;
		out->wmask = src;
		break;
	default:	/* csrrc[i]: clear them */
		out->write = rs1 != 0;
		out->val = 0;
		out->wmask = src;
		break;
	}
	return true;
}
