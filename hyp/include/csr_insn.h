/* SPDX-License-Identifier: MIT */
/* A trapped Zicsr instruction (csrrw/csrrs/csrrc and their immediate forms)
 * as a read-modify-write a CSR model can apply: new = (old & ~wmask) |
 * (val & wmask). Pure logic, host-tested (tests/unit/test_csr_insn.c). */
#ifndef HYP_CSR_INSN_H
#define HYP_CSR_INSN_H
#include <types.h>

struct csr_insn {
	unsigned int csr;	/* the CSR number the guest named */
	unsigned int rd;	/* where the old value goes (0: nowhere) */
	bool write;		/* the instruction writes (csrrs/csrrc with x0 or 0 do not) */
	uint64_t val, wmask;	/* the write, as a masked value */
};

/** csr_insn_decode() - decode @insn; @gpr: the guest's x0..x31 (gpr[0] is
 *  read as 0). false if @insn is no Zicsr CSR instruction. */
bool csr_insn_decode(uint32_t insn, const unsigned long *gpr, struct csr_insn *out);
#endif
