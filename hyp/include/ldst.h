/* SPDX-License-Identifier: MIT */
/* Decoding a guest's plain load or store, integer or floating-point, for the
 * emulation of misaligned accesses (hyp/dispatch/misaligned.c). The MMIO
 * decoder (mmio.h) stays narrower: devices never see FP accesses. */
#ifndef HYP_LDST_H
#define HYP_LDST_H
#include <types.h>

struct ldst {
	unsigned int width;	/* 1, 2, 4 or 8 bytes */
	bool store;
	bool sign_extend;	/* integer loads: lb, lh, lw (and c.lw, c.lwsp, c.lh) */
	bool fp;		/* reg is an f register (flw/fld/fsw/fsd and compressed) */
	unsigned int reg;	/* rd for loads, rs2 for stores */
	unsigned int len;	/* 2 or 4: how far the pc moves */
};

/** ldst_decode() - decode @insn (16- or 32-bit encoding, RV64GC with Zcb's
 *  c.lbu/c.lhu/c.lh/c.sb/c.sh) into @a. False for anything else: AMOs, LR/SC,
 *  vector and reserved encodings. Pure logic, host-tested. */
bool ldst_decode(uint32_t insn, struct ldst *a);
/** ldst_from_htinst() - if @htinst is a transformed load or store (integer or
 *  FP), its 32-bit form and the trapping instruction's length; else false
 *  (0 or a pseudoinstruction: fetch the instruction instead). */
bool ldst_from_htinst(unsigned long htinst, uint32_t *insn, unsigned int *len);
#endif
