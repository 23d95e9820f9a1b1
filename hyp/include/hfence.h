/* SPDX-License-Identifier: MIT */
/* Hypervisor fences and HLVX, spelled with .insn (our -march has no H extension,
 * so the assembler knows no mnemonic for them). */
#ifndef HYP_HFENCE_H
#define HYP_HFENCE_H

/* hfence.vvma x0, x0: every VS-stage entry of the current VMID (hgatp.VMID) */
static inline void hfence_vvma_all(void)
{
	asm volatile(".insn r 0x73, 0, 0x11, x0, x0, x0" ::: "memory");
}

/* hfence.gvma x0, x0: every G-stage entry, all VMIDs */
static inline void hfence_gvma_all(void)
{
	asm volatile(".insn r 0x73, 0, 0x31, x0, x0, x0" ::: "memory");
}

/* hfence.gvma x0, vmid */
static inline void hfence_gvma_vmid(unsigned long vmid)
{
	asm volatile(".insn r 0x73, 0, 0x31, x0, x0, %0" ::"r"(vmid) : "memory");
}

static inline void local_fence_i(void)
{
	asm volatile("fence.i" ::: "memory");
}
#endif
