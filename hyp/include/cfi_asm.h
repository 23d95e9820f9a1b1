/* SPDX-License-Identifier: MIT */
/* The hypervisor's own landing pads, for its assembly (CFI build,
 * docs/security.md). An indirect jump through any register but ra, t0 (x5)
 * or t2 (x7) expects its target to start with `lpad`: every function entry
 * C code may reach by a pointer or a far tail call, and every asm jump
 * target, is written
 *	.balign 4		(lpad must be 4-byte aligned)
 *	name:	LPAD
 * Trap vectors (stvec) need none: a trap clears ELP. lpad 0 is auipc x0, 0,
 * a hint every CPU runs as a no-op; spelled as its word because the plain
 * build's assembler may not know the mnemonic. Empty in the plain build,
 * whose code stays as it was. */
#ifndef HYP_CFI_ASM_H
#define HYP_CFI_ASM_H

#define LPAD_INSN	0x00000017	/* lpad 0: auipc x0, 0 (any label) */

#ifdef CARAPACE_CFI_BUILD
#define LPAD		.4byte LPAD_INSN
#else
#define LPAD
#endif

#endif
