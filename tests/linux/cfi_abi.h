/* SPDX-License-Identifier: MIT */
/*
 * cfi_abi.h: constants shared by cfitest.c and cfi_asm.S, plus the Linux
 * UAPI numbers cfitest needs (written out here because the cross
 * toolchain's headers predate the RISC-V CFI interfaces).
 */
#ifndef CFI_ABI_H
#define CFI_ABI_H

/* Exit codes of test children stay below 16 so that none collides with
 * the (signo << 4) | si_code status that cfi_fault_handler exits with. */
#define CFI_EXIT_HIJACKED	14	/* corrupted return was NOT caught */
#define CFI_EXIT_BAD_LANDED	15	/* call to a non-lpad target was NOT caught */

#define CFI_LP_OK_VALUE		0x123
#define CFI_LP_BAD_VALUE	0x321
#define CFI_LP_LABEL		0x5a5	/* 20-bit lpad label */

/* riscv64 (asm-generic) syscall numbers */
#define CFI_NR_write		64
#define CFI_NR_exit_group	94
#define CFI_NR_prctl		167
#define CFI_NR_riscv_hwprobe	258
#define CFI_NR_map_shadow_stack	453

#ifndef __ASSEMBLER__
/* include/uapi/linux/prctl.h (Linux >= 6.x / 7.x) */
#define CFI_PR_GET_SHADOW_STACK_STATUS	74
#define CFI_PR_SET_SHADOW_STACK_STATUS	75
#define CFI_PR_SHADOW_STACK_ENABLE	1UL
#define CFI_PR_LOCK_SHADOW_STACK_STATUS	76
#define CFI_PR_GET_CFI			80
#define CFI_PR_SET_CFI			81
#define CFI_PR_CFI_BRANCH_LANDING_PADS	0UL
#define CFI_PR_CFI_ENABLE		1UL
#define CFI_PR_CFI_DISABLE		2UL
#define CFI_PR_CFI_LOCK			4UL

/* map_shadow_stack flags */
#define CFI_SHADOW_STACK_SET_TOKEN	1U

/* include/uapi/asm-generic/siginfo.h */
#define CFI_SEGV_ACCERR		2
#define CFI_SEGV_CPERR		10

/* arch/riscv/include/uapi/asm/hwprobe.h */
#define CFI_HWPROBE_KEY_IMA_EXT_0	4
#define CFI_HWPROBE_EXT_ZICFILP		(1ULL << 63)
#define CFI_HWPROBE_KEY_IMA_EXT_1	16
#define CFI_HWPROBE_EXT_ZICFISS		(1ULL << 0)

/* cfi_asm.S */
unsigned long cfi_ssrdp(void);
long cfi_ss_balanced(long depth, unsigned long *deepest_ssp);
void cfi_ss_hijack(void);
unsigned long cfi_ssamoswap(unsigned long *addr, unsigned long val);
long cfi_lp_call(long (*fn)(void), unsigned long label);
long cfi_lp_target_ok(void);
long cfi_lp_target_labeled(void);
long cfi_lp_target_bad(void);
void cfi_fault_handler(int sig, void *si, void *uc);
#endif

#endif
