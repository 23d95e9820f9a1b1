/* SPDX-License-Identifier: MIT */
/* Crafted records, one class of illegal value each (and legal neighbours):
 * the hypervisor's restore (tests/unit/test_snap_legal.c, through the real
 * loader) and carapace-snap verify (tests/unit/test_snap_tool.py, which parses
 * this file) must give each the same verdict. A case sets one field of an
 * otherwise legal CONFIG or vCPU of a VM given @features: X(record, field,
 * value, features, refused), @record CONFIG or a vCPU record's name (CORE,
 * FP, CFI, FWFT, HSM, STA, PMU, IMSIC, DBTR; an array's element 0). The field a
 * refusal names is @field. */
#ifndef UNIT_SNAP_LEGAL_CASES_H
#define UNIT_SNAP_LEGAL_CASES_H
#include <arch/riscv/encoding.h>
#include <abi/snapshot_format.h>

/* every ISA feature: a PLIC VM; and an AIA VM (the IMSIC cases) */
#define ISA_ALL	(SNAP_FEAT_ALL & ~SNAP_FEAT_AIA)
#define AIA_ALL	SNAP_FEAT_ALL
#define NO_LP	(ISA_ALL & ~SNAP_FEAT_ZICFILP)
#define NO_SS	(ISA_ALL & ~SNAP_FEAT_ZICFISS)
#define NO_AD	(ISA_ALL & ~SNAP_FEAT_SVADU)

#define SNAP_LEGAL_CASES(X) \
	/* the trapped context: FS Off faulted the hypervisor's FP save */ \
	X(CORE, sstatus, SR_SPP, ISA_ALL, 1) \
	X(CORE, sstatus, SR_SPP | SR_FS_INITIAL, ISA_ALL, 0) \
	X(CORE, sstatus, SR_FS_DIRTY | SR_SPIE, ISA_ALL, 0) \
	X(CORE, sstatus, SR_SPP | SR_FS_INITIAL | SR_SIE, ISA_ALL, 1) \
	X(CORE, sstatus, SR_SPP | SR_FS_INITIAL | SR_SPELP, ISA_ALL, 0) \
	X(CORE, sstatus, SR_SPP | SR_FS_INITIAL | SR_SPELP, NO_LP, 1) \
	X(CORE, sstatus, SR_FS_INITIAL | SR_UXL_64, ISA_ALL, 1) \
	/* vsstatus: mstatus.TVM, TW, TSR and SXL on QEMU, WPRI on hardware */ \
	X(CORE, vsstatus, SR_UXL_64 | BIT(20), ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(21), ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(22), ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(34), ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(3), ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(6), ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(9), ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | BIT(15), ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | SR_SDT, ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | SR_SPELP, NO_LP, 1) \
	X(CORE, vsstatus, SR_UXL_64 | SR_SPELP, ISA_ALL, 0) \
	X(CORE, vsstatus, _UL(1) << 32, ISA_ALL, 1) \
	X(CORE, vsstatus, 0, ISA_ALL, 1) \
	X(CORE, vsstatus, SR_UXL_64 | SR_SIE | SR_SPIE | SR_SPP | SR_SUM | SR_MXR | SR_FS_DIRTY | SR_SD, \
	  ISA_ALL, 0) \
	/* the VS-level interrupt enables sit at the S positions */ \
	X(CORE, vsie, MIP_SSIP | MIP_STIP | MIP_SEIP, ISA_ALL, 0) \
	X(CORE, vsie, BIT(13), ISA_ALL, 1) \
	X(CORE, vsie, MIP_VSSIP, ISA_ALL, 1) \
	X(CORE, vstvec, 0xffffffff80002001, ISA_ALL, 0) \
	X(CORE, vstvec, 0xffffffff80002002, ISA_ALL, 1) \
	X(CORE, vstvec, 0xffffffff80002003, ISA_ALL, 1) \
	X(CORE, vsepc, 0x80001001, ISA_ALL, 1) \
	X(CORE, pc, 0x80001001, ISA_ALL, 1) \
	X(CORE, pc, 0x80001002, ISA_ALL, 0) \
	X(CORE, vsatp, (ATP_MODE_SV39 << ATP_MODE_SHIFT) | 0x0ffff00000012345, ISA_ALL, 0) \
	X(CORE, vsatp, _UL(1) << ATP_MODE_SHIFT, ISA_ALL, 1) \
	X(CORE, vsatp, _UL(11) << ATP_MODE_SHIFT, ISA_ALL, 1) \
	X(CORE, vsatp, _UL(15) << ATP_MODE_SHIFT, ISA_ALL, 1) \
	X(CORE, hvip, MIP_SSIP, ISA_ALL, 1) \
	X(CORE, hvip, BIT(IRQ_SGEI), ISA_ALL, 1) \
	X(CORE, scounteren, COUNTEREN_CY | COUNTEREN_TM | COUNTEREN_IR, ISA_ALL, 0) \
	X(CORE, scounteren, BIT(3), ISA_ALL, 1) \
	X(CORE, scounteren, BIT(32), ISA_ALL, 1) \
	/* senvcfg: user CFI only where the VM has it; no Zicbom/Zicboz, Svukte, Ssnpm */ \
	X(CORE, senvcfg, ENVCFG_FIOM | ENVCFG_LPE | ENVCFG_SSE, ISA_ALL, 0) \
	X(CORE, senvcfg, ENVCFG_LPE, NO_LP, 1) \
	X(CORE, senvcfg, ENVCFG_SSE, NO_SS, 1) \
	X(CORE, senvcfg, ENVCFG_CBIE, ISA_ALL, 1) \
	X(CORE, senvcfg, ENVCFG_CBCFE, ISA_ALL, 1) \
	X(CORE, senvcfg, ENVCFG_CBZE, ISA_ALL, 1) \
	X(CORE, senvcfg, BIT(8), ISA_ALL, 1) \
	X(CORE, senvcfg, BIT(32), ISA_ALL, 1) \
	X(CFI, ssp, 0x80400ff8, ISA_ALL, 0) \
	X(CFI, ssp, 0x80400ff8, NO_SS, 1) \
	X(FP, fcsr, 0xff, ISA_ALL, 0) \
	X(FP, fcsr, 0x100, ISA_ALL, 1) \
	X(CFI, lp_value, 1, NO_LP, 1) \
	X(CFI, ss_locked, 1, NO_SS, 1) \
	X(FWFT, pte_ad_value, 1, NO_AD, 1) \
	X(HSM, hsm_state, 3, ISA_ALL, 1) \
	X(CONFIG, features, 0x40, ISA_ALL, 1) \
	X(CONFIG, nr_vcpus, 9, ISA_ALL, 1) \
	X(CONFIG, cfi_policy, 4, ISA_ALL, 1) \
	X(CONFIG, debug_ext, 2, ISA_ALL, 1) \
	X(CONFIG, vs_sv, 40, ISA_ALL, 1) \
	X(CONFIG, vs_sv, 48, ISA_ALL, 0) \
	/* the IMSIC record (version 7): an AIA VM's (features AIA_ALL, its \
	 * file of 255 identities) or a PLIC VM's (all zero but vsiselect) */ \
	X(IMSIC, imsic_nr_ids, 255, ISA_ALL, 1) \
	X(IMSIC, imsic_nr_ids, 0, AIA_ALL, 1) \
	X(IMSIC, imsic_nr_ids, 63, AIA_ALL, 0) \
	X(IMSIC, imsic_nr_ids, 2047, AIA_ALL, 0) \
	X(IMSIC, imsic_nr_ids, 64, AIA_ALL, 1) \
	X(IMSIC, imsic_nr_ids, 4095, AIA_ALL, 1) \
	X(IMSIC, imsic_eidelivery, 1, AIA_ALL, 0) \
	X(IMSIC, imsic_eidelivery, 2, AIA_ALL, 1) \
	X(IMSIC, imsic_eidelivery, 1, ISA_ALL, 1) \
	X(IMSIC, imsic_eithreshold, 255, AIA_ALL, 0) \
	X(IMSIC, imsic_eithreshold, 256, AIA_ALL, 1) \
	X(IMSIC, imsic_eithreshold, 1, ISA_ALL, 1) \
	X(IMSIC, imsic_reserved, 1, AIA_ALL, 1) \
	X(IMSIC, vsiselect, 0x1ff, AIA_ALL, 0) \
	X(IMSIC, vsiselect, 0x200, AIA_ALL, 1) \
	X(IMSIC, vsiselect, 0x70, ISA_ALL, 0) \
	X(IMSIC, imsic_eip, 2, AIA_ALL, 0) \
	X(IMSIC, imsic_eip, 1, AIA_ALL, 1) \
	X(IMSIC, imsic_eip, 2, ISA_ALL, 1) \
	X(IMSIC, imsic_eie, 0xfffffffffffffffe, AIA_ALL, 0) \
	X(IMSIC, imsic_eie, 3, AIA_ALL, 1) \
	/* the DBTR record (version 8): trigger 0 and the shared memory of a vCPU \
	 * that never used DBTR (all zero) */ \
	X(DBTR, dbtr_shmem, 0, ISA_ALL, 0) \
	X(DBTR, dbtr_shmem, 0x80001000, ISA_ALL, 1) \
	X(DBTR, dbtr_shmem_on, 2, ISA_ALL, 1) \
	X(DBTR, dbtr_reserved, 1, ISA_ALL, 1) \
	X(DBTR, dbtr_state, 2, ISA_ALL, 1) \
	X(DBTR, dbtr_state, 0x21, ISA_ALL, 1) \
	X(DBTR, dbtr_tdata1, 0x6000000000000014, ISA_ALL, 1) \
	X(DBTR, dbtr_tdata2, 5, ISA_ALL, 1) \
	X(DBTR, dbtr_tdata3, 1, ISA_ALL, 1)

/* Device states (include/abi/snapshot_devices.h), the same way: X(model,
 * field, index, value, refused) sets element @index of @field (0: a field
 * that is no array) in the otherwise all-zero state of @model (its power-on
 * state: legal) of a 1-vCPU VM. The field a refusal names is @field: the
 * table's rules, and each model's hook (the UART's queue, the PLIC's source
 * 0 and the contexts of vCPUs the VM does not have, the APLIC's inactive
 * sources). An aplic case's VM is an AIA VM (AIA_ALL), the others' a PLIC VM. */
#define SNAP_DEVICE_CASES(X) \
	X(uart16550, ier, 0, 0x0f, 0) \
	X(uart16550, ier, 0, 0x10, 1) \
	X(uart16550, mcr, 0, 0x1f, 0) \
	X(uart16550, mcr, 0, 0x20, 1) \
	X(uart16550, fcr, 0, 0xff, 0) \
	X(uart16550, thre_pending, 0, 2, 1) \
	X(uart16550, irq_level, 0, 1, 0) \
	X(uart16550, irq_level, 0, 2, 1) \
	X(uart16550, pad, 0, 1, 1) \
	X(uart16550, pad, 6, 0x80, 1) \
	X(uart16550, rx_head, 0, 256, 0) \
	X(uart16550, rx_head, 0, 257, 1) \
	X(uart16550, rx, 255, 0xff, 0) \
	X(plic, priority, 3, 7, 0) \
	X(plic, priority, 3, 8, 1) \
	X(plic, priority, 31, 0x80000001, 1) \
	X(plic, priority, 0, 1, 1) \
	X(plic, level, 0, 1, 1) \
	X(plic, pending, 0, 0x400, 0) \
	X(plic, pending, 0, 0x401, 1) \
	X(plic, claimed, 0, 1, 1) \
	X(plic, enable, 0, 0xfffffffe, 0) \
	X(plic, enable, 0, 1, 1) \
	X(plic, enable, 1, 0x400, 1) \
	X(plic, threshold, 0, 7, 0) \
	X(plic, threshold, 0, 8, 1) \
	X(plic, threshold, 7, 1, 1) \
	X(vmgenid, id, 15, 0xff, 0) \
	X(vmgenid, level, 0, 1, 0) \
	X(vmgenid, level, 0, 2, 1) \
	X(vmgenid, pad, 0, 1, 1) \
	X(vmgenid, pad, 6, 0x80, 1) \
	X(aplic, domaincfg, 0, 0x100, 0) \
	X(aplic, domaincfg, 0, 0x104, 1) \
	X(aplic, sourcecfg, 1, 6, 0) \
	X(aplic, sourcecfg, 31, 1, 0) \
	X(aplic, sourcecfg, 1, 2, 1) \
	X(aplic, sourcecfg, 1, 0x401, 1) \
	X(aplic, sourcecfg, 0, 1, 1) \
	X(aplic, target, 1, 0x40001, 1) \
	X(aplic, target, 1, 0x1000, 1) \
	X(aplic, pending, 0, 1, 1) \
	X(aplic, pending, 0, 2, 1) \
	X(aplic, enabled, 0, 2, 1) \
	X(aplic, level, 0, 0x400, 0) \
	X(aplic, level, 0, 1, 1) \
	X(aplic, genmsi, 0, 0xfffc07ff, 0) \
	X(aplic, genmsi, 0, 0x1000, 1) \
	X(aplic, pad, 0, 1, 1)
#endif
