/* SPDX-License-Identifier: MIT */
/* Decoding a trapped guest load/store into an access a device model can serve. */
#ifndef HYP_MMIO_H
#define HYP_MMIO_H
#include <types.h>

struct mmio_access {
	gpa_t gpa;
	unsigned int width;	/* 1, 2, 4 or 8 bytes */
	bool is_write;
	bool sign_extend;	/* loads: lb/lh/lw */
	unsigned int reg;	/* rd for loads, rs2 for stores */
	unsigned int insn_len;	/* 2 or 4: how far sepc moves */
	uint64_t value;		/* store data in, load data out */
};

enum insn_kind {
	INSN_KIND_OTHER,	/* not an integer load/store we emulate */
	INSN_KIND_LOAD,
	INSN_KIND_STORE,
	INSN_KIND_SHADOW_STACK,	/* sspush/sspopchk/ssamoswap (never MMIO: docs/cfi.md §9.10) */
};

/** insn_decode_mmio() - decode @insn (16- or 32-bit encoding) into @a.
 *  Returns the kind; only LOAD and STORE fill @a. Pure logic, host-tested. */
enum insn_kind insn_decode_mmio(uint32_t insn, struct mmio_access *a);
/** insn_from_htinst() - if @htinst is a transformed plain load/store, give its
 *  32-bit form and the length of the trapping instruction. Anything else (0,
 *  pseudoinstructions, QEMU's bogus values for shadow-stack instructions,
 *  docs/cfi.md §7 Q9) returns false: fetch the instruction instead. */
bool insn_from_htinst(unsigned long htinst, uint32_t *insn, unsigned int *len);
/** insn_is_shadow_stack() - one of the Zicfiss memory instructions. */
bool insn_is_shadow_stack(uint32_t insn);
#endif
