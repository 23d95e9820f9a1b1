/* SPDX-License-Identifier: MIT */
/* Crafted records, one class of illegal value each (and legal neighbours):
 * the hypervisor's restore (tests/unit/test_snap_legal.c, through the real
 * loader) and carapace-snap verify (tests/unit/test_snap_tool.py, which parses
 * this file) must give each the same verdict. A case sets one field of an
 * otherwise legal CONFIG or vCPU of a VM given @features: X(record, field,
 * value, features, refused), @record CONFIG or a vCPU record's name (CORE,
 * FP, CFI, FWFT, HSM, STA, PMU). The field a refusal names is @field. */
#ifndef UNIT_SNAP_LEGAL_CASES_H
#define UNIT_SNAP_LEGAL_CASES_H
#include <arch/riscv/encoding.h>
#include <abi/snapshot_format.h>

#define NO_LP	(SNAP_FEAT_ALL & ~SNAP_FEAT_ZICFILP)
#define NO_SS	(SNAP_FEAT_ALL & ~SNAP_FEAT_ZICFISS)
#define NO_AD	(SNAP_FEAT_ALL & ~SNAP_FEAT_SVADU)

#define SNAP_LEGAL_CASES(X) \
	/* the trapped context: FS Off faulted the hypervisor's FP save */ \
	X(CORE, sstatus, SR_SPP, SNAP_FEAT_ALL, 1) \
	X(CORE, sstatus, SR_SPP | SR_FS_INITIAL, SNAP_FEAT_ALL, 0) \
	X(CORE, sstatus, SR_FS_DIRTY | SR_SPIE, SNAP_FEAT_ALL, 0) \
	X(CORE, sstatus, SR_SPP | SR_FS_INITIAL | SR_SIE, SNAP_FEAT_ALL, 1) \
	X(CORE, sstatus, SR_SPP | SR_FS_INITIAL | SR_SPELP, SNAP_FEAT_ALL, 0) \
	X(CORE, sstatus, SR_SPP | SR_FS_INITIAL | SR_SPELP, NO_LP, 1) \
	X(CORE, sstatus, SR_FS_INITIAL | SR_UXL_64, SNAP_FEAT_ALL, 1) \
	/* vsstatus: mstatus.TVM, TW, TSR and SXL on QEMU, WPRI on hardware */ \
	X(CORE, vsstatus, SR_UXL_64 | BIT(20), SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(21), SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(22), SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(34), SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(3), SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(6), SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(9), SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(15), SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | SR_SDT, SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | SR_SPELP, NO_LP, 1) \
	X(CORE, vsstatus, SR_UXL_64 | SR_SPELP, SNAP_FEAT_ALL, 0) \
	X(CORE, vsstatus, _UL(1) << 32, SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, 0, SNAP_FEAT_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | SR_SIE | SR_SPIE | SR_SPP | SR_SUM | SR_MXR | SR_FS_DIRTY | SR_SD, \
	  SNAP_FEAT_ALL, 0) \
	/* the VS-level interrupt enables sit at the S positions */ \
	X(CORE, vsie, MIP_SSIP | MIP_STIP | MIP_SEIP, SNAP_FEAT_ALL, 0) \
	X(CORE, vsie, BIT(13), SNAP_FEAT_ALL, 1) \
	X(CORE, vsie, MIP_VSSIP, SNAP_FEAT_ALL, 1) \
	X(CORE, vstvec, 0xffffffff80002001, SNAP_FEAT_ALL, 0) \
	X(CORE, vstvec, 0xffffffff80002002, SNAP_FEAT_ALL, 1) \
	X(CORE, vstvec, 0xffffffff80002003, SNAP_FEAT_ALL, 1) \
	X(CORE, vsepc, 0x80001001, SNAP_FEAT_ALL, 1) \
	X(CORE, pc, 0x80001001, SNAP_FEAT_ALL, 1) \
	X(CORE, pc, 0x80001002, SNAP_FEAT_ALL, 0) \
	X(CORE, vsatp, (ATP_MODE_SV39 << ATP_MODE_SHIFT) | 0x0ffff00000012345, SNAP_FEAT_ALL, 0) \
	X(CORE, vsatp, _UL(1) << ATP_MODE_SHIFT, SNAP_FEAT_ALL, 1) \
	X(CORE, vsatp, _UL(11) << ATP_MODE_SHIFT, SNAP_FEAT_ALL, 1) \
	X(CORE, vsatp, _UL(15) << ATP_MODE_SHIFT, SNAP_FEAT_ALL, 1) \
	X(CORE, hvip, MIP_SSIP, SNAP_FEAT_ALL, 1) \
	X(CORE, hvip, BIT(IRQ_SGEI), SNAP_FEAT_ALL, 1) \
	X(CORE, scounteren, COUNTEREN_CY | COUNTEREN_TM | COUNTEREN_IR, SNAP_FEAT_ALL, 0) \
	X(CORE, scounteren, BIT(3), SNAP_FEAT_ALL, 1) \
	X(CORE, scounteren, BIT(32), SNAP_FEAT_ALL, 1) \
	/* senvcfg: user CFI only where the VM has it; no Zicbom/Zicboz, Svukte, Ssnpm */ \
	X(CORE, senvcfg, ENVCFG_FIOM | ENVCFG_LPE | ENVCFG_SSE, SNAP_FEAT_ALL, 0) \
	X(CORE, senvcfg, ENVCFG_LPE, NO_LP, 1) \
	X(CORE, senvcfg, ENVCFG_SSE, NO_SS, 1) \
	X(CORE, senvcfg, ENVCFG_CBIE, SNAP_FEAT_ALL, 1) \
	X(CORE, senvcfg, ENVCFG_CBCFE, SNAP_FEAT_ALL, 1) \
	X(CORE, senvcfg, ENVCFG_CBZE, SNAP_FEAT_ALL, 1) \
	X(CORE, senvcfg, BIT(8), SNAP_FEAT_ALL, 1) \
	X(CORE, senvcfg, BIT(32), SNAP_FEAT_ALL, 1) \
	X(CFI, ssp, 0x80400ff8, SNAP_FEAT_ALL, 0) \
	X(CFI, ssp, 0x80400ff8, NO_SS, 1) \
	X(FP, fcsr, 0xff, SNAP_FEAT_ALL, 0) \
	X(FP, fcsr, 0x100, SNAP_FEAT_ALL, 1) \
	X(CFI, lp_value, 1, NO_LP, 1) \
	X(CFI, ss_locked, 1, NO_SS, 1) \
	X(FWFT, pte_ad_value, 1, NO_AD, 1) \
	X(HSM, hsm_state, 3, SNAP_FEAT_ALL, 1) \
	X(CONFIG, features, 0x20, SNAP_FEAT_ALL, 1) \
	X(CONFIG, nr_vcpus, 9, SNAP_FEAT_ALL, 1) \
	X(CONFIG, cfi_policy, 4, SNAP_FEAT_ALL, 1) \
	X(CONFIG, debug_ext, 2, SNAP_FEAT_ALL, 1) \
	X(CONFIG, vs_sv, 40, SNAP_FEAT_ALL, 1) \
	X(CONFIG, vs_sv, 48, SNAP_FEAT_ALL, 0)
#endif
