/* SPDX-License-Identifier: MIT */
/* The state records of the snapshot stream and the migration protocol, each
 * described once (docs/snapshot-format.md, "VCPU", "Legal values" is
 * normative; this header is their C form).
 *
 * Every stateful part of a vCPU has its own record, with its own id: CORE
 * (the trapped context and the VS CSRs), FP, CFI (shadow-stack pointer, FWFT
 * LANDING_PAD/SHADOW_STACK values and locks), FWFT (the memory features),
 * HSM (HSM and SBI SUSP), STA, PMU, IMSIC (version 7), DBTR (version 8). A VCPU section is the records in id
 * order, each behind a struct snap_record. A new extension adds a record (a
 * new id); a record never changes its size nor moves a field (a change is a
 * new id), so no extension grows another's record; only a reserved byte whose
 * 0 is what older streams' vCPUs had may gain a meaning in a new version
 * (FWFT misaligned_emulate, version 8).
 *
 * Each record is one table, SNAP_REC_<NAME>(X), a row per field:
 *   X(name, type, dim, bits, value, readonly, live, what)
 *   type      uint8_t, uint32_t, uint64_t or char; dim: empty or [count]
 *   bits      SNAP_BITS(any, zicfilp, zicfiss, svadu): a bit may be 1 if it
 *             is in @any, or in the column of an extension the CONFIG's
 *             features give the guest; SNAP_ANY_BITS: every bit
 *   value     SNAP_VALUE(shift, mask, legal): (field >> shift) & mask is a
 *             value v below 64 with bit v of @legal set; SNAP_ANY_VALUE: any
 *   readonly  bits a record may hold (the CPU reads them back) that are never
 *             written to a CSR nor saved
 *   live      SNAP_LIVE(member): the field is that member of struct
 *             vcpu_guest, copied both ways by the table; SNAP_HOOK: the
 *             record's own save/load hooks do it (struct snap_record_ops,
 *             in the file that owns the state: hyp/snap/snap_state.c for
 *             CORE, hyp/vsbi/vsbi_hsm.c HSM, vsbi_sta.c STA, state/pmu.c PMU,
 *             state/vimsic.c IMSIC, state/dbtr_record.c DBTR);
 *             SNAP_STATE (abi/snapshot_devices.h): the model's own state
 *   what      the legal values in words: a refusal names the field and says it
 * The rules apply to each element of an array. The structs are generated from
 * the tables, so the table is the layout: fields follow each other in row
 * order, with no padding. The hypervisor checks, masks, saves and loads with
 * the tables (hyp/snap/snap_record.c); tools/carapace-snap parses this file
 * (names from arch/riscv/encoding.h and abi/snapshot_format.h) for the layouts
 * and rules of the very same records. Keep it parseable: rows are X(...),
 * continued with backslashes; rule arguments are integer constant expressions
 * (numbers, #defined names, BIT(), _UL(), | & ~ << >> + - and parentheses).
 *
 * What the host adds (the hypervisor only; a file does not say which host it
 * goes to): a vsatp MODE this host's CPU lacks is refused. */
#ifndef HYP_SNAPSHOT_RECORDS_H
#define HYP_SNAPSHOT_RECORDS_H
#include <stddef.h>
#include <stdint.h>
#include <arch/riscv/encoding.h>

#define SNAP_BITS(any, zicfilp, zicfiss, svadu)	(any), (zicfilp), (zicfiss), (svadu)
#define SNAP_ANY_BITS		SNAP_BITS(~_UL(0), 0, 0, 0)
#define SNAP_VALUE(shift, mask, legal)		(shift), (mask), (legal)
#define SNAP_ANY_VALUE		SNAP_VALUE(0, 0, 1)

#define SNAP_FEAT_ZICFILP	(1U << 0)
#define SNAP_FEAT_ZICFISS	(1U << 1)
#define SNAP_FEAT_SSTC		(1U << 2)
#define SNAP_FEAT_SVPBMT	(1U << 3)
#define SNAP_FEAT_SVADU		(1U << 4)
#define SNAP_FEAT_AIA		(1U << 5)	/* version 7: an IMSIC per vCPU and an APLIC */
#define SNAP_FEAT_ALL		0x3fU

#define SNAP_STA_OFF		UINT64_MAX	/* sta_shmem: none */
#define SNAP_PMU_COUNTERS	11
#define SNAP_IMSIC_WORDS	32	/* eip/eie words of an IMSIC file: 2048 identities */
#define SNAP_IMSIC_MAX_IDS	2047	/* the most identities a file has */
#define SNAP_ISELECT_BITS	0x1ff	/* vsiselect: 0..0x1FF */
#define SNAP_DBTR_TRIGGERS	8	/* DBTR trigger slots of a vCPU (DBTR_MAX_TRIGGERS) */
/* dbtr_state: 0 (free), or MAPPED (bit 0) with any of the saved U, S, VU, VS
 * (bits 1..4): the values 0 and 1, 3, 5 .. 31 */
#define SNAP_DBTR_STATE_LEGAL	0xaaaaaaabU

/* CONFIG (a section of its own, instance 0): what the VM is. Saved and
 * loaded by snap_config_save()/snap_config_desc(). */
#define SNAP_CONFIG_FIELDS(X) \
	X(name,          char,     [16], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "NUL-terminated, [a-z0-9_-]{1,15}") \
	X(ram_gpa,       uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, "guest RAM base") \
	X(ram_size,      uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "a multiple of 2 MiB, at least 8 MiB") \
	X(nr_vcpus,      uint32_t, , SNAP_ANY_BITS, SNAP_VALUE(0, 0xffffffff, 0x1fe), 0, SNAP_HOOK, \
	  "1..8") \
	X(cfi_policy,    uint32_t, , SNAP_ANY_BITS, SNAP_VALUE(0, 0xffffffff, 0xf), 0, SNAP_HOOK, \
	  "0..3 (trap, delegate, strict, off)") \
	X(features,      uint32_t, , SNAP_BITS(SNAP_FEAT_ALL, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "Zicfilp, Zicfiss, Sstc, Svpbmt, Svadu, AIA (bits 0..5; AIA from version 7)") \
	X(boot_count,    uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, "any") \
	X(debug_ext,     uint32_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_HOOK, "0 or 1") \
	X(vs_sv,         uint32_t, , SNAP_ANY_BITS, \
	  SNAP_VALUE(0, 0xffffffff, BIT(0) | BIT(39) | BIT(48) | BIT(57)), 0, SNAP_HOOK, \
	  "39, 48 or 57 (0: not recorded)") \
	X(guest_time,    uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, "any") \
	X(timebase_hz,   uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, "not 0") \
	X(kernel_image,  char,     [32], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, "NUL-terminated") \
	X(initrd_image,  char,     [32], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, "NUL-terminated") \
	X(bootargs,      char,     [512], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, "NUL-terminated")

/* CORE: the trapped context and the VS-level CSRs. sstatus is the trapped
 * context (the HS sstatus image the vCPU is entered with): only SPP, SPIE and
 * SPELP are the guest's; FS says that the FP record's registers are live
 * (never Off), and a restore installs the hypervisor's own FS, as a vCPU
 * reset does. The CFI bits of sstatus, vsstatus and senvcfg (SPELP: ELP; LPE,
 * SSE) stay in these CSR images, ruled by the Zicfilp/Zicfiss columns. */
#define SNAP_REC_CORE(X) \
	X(gpr,        uint64_t, [32], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "x0..x31; x0 is 0") \
	X(pc,         uint64_t, , SNAP_BITS(~_UL(1), 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(ctx.sepc), \
	  "bit 0 is 0 (sepc[0] is read-only 0)") \
	X(sstatus,    uint64_t, , SNAP_BITS(SR_SPIE | SR_SPP | SR_FS, SR_SPELP, 0, 0), \
	  SNAP_VALUE(SR_FS_SHIFT, 3, BIT(1) | BIT(2) | BIT(3)), 0, SNAP_HOOK, \
	  "only SPIE, SPP, FS; SPELP with Zicfilp; " \
	  "FS Initial, Clean or Dirty, never Off (the f registers are live)") \
	X(vsstatus,   uint64_t, , \
	  SNAP_BITS(SR_SIE | SR_SPIE | SR_SPP | SR_FS | SR_SUM | SR_MXR | SR_UXL | SR_SD, SR_SPELP, 0, 0), \
	  SNAP_VALUE(SR_UXL_SHIFT, 3, BIT(2)), SR_SD, SNAP_LIVE(csr.vsstatus), \
	  "only SIE, SPIE, SPP, FS, SUM, MXR, UXL, SD; SPELP with Zicfilp; " \
	  "UXL 2 (64-bit U-mode); SD is read-only (FS is Dirty)") \
	X(vsie,       uint64_t, , SNAP_BITS(MIP_SSIP | MIP_STIP | MIP_SEIP, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(csr.vsie), "only SSIE, STIE, SEIE") \
	X(vstvec,     uint64_t, , SNAP_ANY_BITS, SNAP_VALUE(0, TVEC_MODE_MASK, BIT(0) | BIT(1)), 0, \
	  SNAP_LIVE(csr.vstvec), "MODE 0 (Direct) or 1 (Vectored)") \
	X(vsscratch,  uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_LIVE(csr.vsscratch), "any") \
	X(vsepc,      uint64_t, , SNAP_BITS(~_UL(1), 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(csr.vsepc), \
	  "bit 0 is 0 (sepc[0] is read-only 0)") \
	X(vscause,    uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_LIVE(csr.vscause), "any") \
	X(vstval,     uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_LIVE(csr.vstval), "any") \
	X(vsatp,      uint64_t, , SNAP_ANY_BITS, SNAP_VALUE(ATP_MODE_SHIFT, ATP_MODE_MASK, \
	  BIT(0) | BIT(ATP_MODE_SV39) | BIT(ATP_MODE_SV48) | BIT(ATP_MODE_SV57)), 0, \
	  SNAP_LIVE(csr.vsatp), "MODE Bare, Sv39, Sv48 or Sv57") \
	X(vstimecmp,  uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_LIVE(csr.vstimecmp), \
	  "any (guest time)") \
	X(hvip,       uint64_t, , SNAP_BITS(VS_IRQ_MASK, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(csr.hvip), \
	  "only VSSIP, VSTIP, VSEIP") \
	X(scounteren, uint64_t, , SNAP_BITS(COUNTEREN_CY | COUNTEREN_TM | COUNTEREN_IR, 0, 0, 0), \
	  SNAP_ANY_VALUE, 0, SNAP_LIVE(csr.scounteren), \
	  "only CY, TM, IR (the guest has no other counter)") \
	X(senvcfg,    uint64_t, , SNAP_BITS(ENVCFG_FIOM, ENVCFG_LPE, ENVCFG_SSE, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(csr.senvcfg), "only FIOM; LPE with Zicfilp, SSE with Zicfiss")

/* FP: the floating-point registers. */
#define SNAP_REC_FP(X) \
	X(f,          uint64_t, [32], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_LIVE(fp.f), "any") \
	X(fcsr,       uint64_t, , SNAP_BITS(0xff, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(fp.fcsr), \
	  "only fflags and frm (bits 0..7)")

/* CFI: the shadow-stack pointer and the FWFT LANDING_PAD/SHADOW_STACK values
 * and locks (landing pads on: lp_value; ELP itself is sstatus.SPELP, CORE). */
#define SNAP_REC_CFI(X) \
	X(ssp,          uint64_t, , SNAP_BITS(0, 0, ~_UL(0), 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(csr.ssp), \
	  "0 unless the guest has Zicfiss") \
	X(lp_value,     uint8_t, , SNAP_BITS(0, 1, 0, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(fwft.lp_value), \
	  "0 or 1 with Zicfilp, else 0") \
	X(lp_locked,    uint8_t, , SNAP_BITS(0, 1, 0, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(fwft.lp_locked), \
	  "0 or 1 with Zicfilp, else 0") \
	X(ss_value,     uint8_t, , SNAP_BITS(0, 0, 1, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(fwft.ss_value), \
	  "0 or 1 with Zicfiss, else 0") \
	X(ss_locked,    uint8_t, , SNAP_BITS(0, 0, 1, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(fwft.ss_locked), \
	  "0 or 1 with Zicfiss, else 0") \
	X(cfi_reserved, uint32_t, , SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_HOOK, "0")

/* FWFT: the memory features. misaligned_emulate (version 8; the first
 * reserved byte before) is MISALIGNED_EXC_DELEG inverted, as the vCPU holds
 * it: 0 is the value 1 (delegated, the reset value), 1 the value 0 (the
 * hypervisor emulates). Versions 1 to 7 hold 0 there (a reserved byte): their
 * vCPUs are restored delegated (snap_vcpu_from_stream() refuses anything
 * else in them). */
#define SNAP_REC_FWFT(X) \
	X(misaligned_locked, uint8_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(fwft_mem.misaligned_locked), "0 or 1") \
	X(pte_ad_value,      uint8_t, , SNAP_BITS(0, 0, 0, 1), SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(fwft_mem.pte_ad_value), "0 or 1 with Svadu, else 0") \
	X(pte_ad_locked,     uint8_t, , SNAP_BITS(0, 0, 0, 1), SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(fwft_mem.pte_ad_locked), "0 or 1 with Svadu, else 0") \
	X(misaligned_emulate, uint8_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(fwft_mem.misaligned_emulate), \
	  "0 (MISALIGNED_EXC_DELEG 1, delegated) or 1 (0, emulated); 0 before version 8") \
	X(fwft_reserved,     uint8_t, [4], SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_HOOK, "0")

/* HSM: SBI HSM and SBI SUSP (a system suspend is a non-retentive suspend of
 * the vCPU that made it, flagged system_suspend). */
#define SNAP_REC_HSM(X) \
	X(hsm_state,      uint32_t, , SNAP_ANY_BITS, SNAP_VALUE(0, 0xffffffff, BIT(0) | BIT(1) | BIT(2)), \
	  0, SNAP_LIVE(hsm.state), "0..2 (stopped, started, suspended)") \
	X(waiting,        uint32_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(hsm.waiting), \
	  "0 or 1") \
	X(resume_nonret,  uint32_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(hsm.resume_nonret), "0 or 1") \
	X(system_suspend, uint32_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_LIVE(hsm.system), \
	  "0 or 1") \
	X(resume_addr,    uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_LIVE(hsm.resume_addr), "any") \
	X(resume_opaque,  uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_LIVE(hsm.resume_opaque), \
	  "any")

/* STA: the steal-time shared memory (SNAP_STA_OFF: none). */
#define SNAP_REC_STA(X) \
	X(sta_shmem, uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "all ones (none), or 64-byte aligned inside the VM's RAM")

/* PMU: the SBI PMU counters 0..SNAP_PMU_COUNTERS-1. */
#define SNAP_REC_PMU(X) \
	X(pmu_configured, uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_LIVE(pmu.configured), \
	  "counters 0, 2..10") \
	X(pmu_started,    uint32_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_LIVE(pmu.started), \
	  "within pmu_configured") \
	X(pmu_event_idx,  uint32_t, [SNAP_PMU_COUNTERS], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(pmu.event_idx), "the event a configured counter counts, else 0") \
	X(pmu_reserved,   uint32_t, , SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_HOOK, "0") \
	X(pmu_value,      uint64_t, [SNAP_PMU_COUNTERS], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(pmu.value), "any")

/* IMSIC (version 7): the vCPU's IMSIC interrupt file (AIA spec, IMSIC.adoc)
 * and vsiselect. A PLIC VM's is all zero but vsiselect. Bit i of
 * imsic_eip[w]/imsic_eie[w] is identity 64 w + i. The hook (hyp/state/
 * vimsic.c) checks what the table cannot: imsic_nr_ids 0 exactly when the
 * CONFIG's features lack AIA (a PLIC VM: then eidelivery 0 too), the same in
 * every VCPU; eithreshold at most imsic_nr_ids; no eip/eie bit of identity 0
 * or above imsic_nr_ids. What the host adds: a PLIC VM's vsiselect is 0 on a
 * host with Smstateen (the guest cannot write it there). */
#define SNAP_REC_IMSIC(X) \
	X(imsic_nr_ids,      uint32_t, , SNAP_BITS(SNAP_IMSIC_MAX_IDS, 0, 0, 0), \
	  SNAP_VALUE(0, 63, BIT(0) | BIT(63)), 0, SNAP_HOOK, \
	  "0 (a PLIC VM) or 63..2047 with (n & 63) == 63 (an AIA VM), the same in every VCPU") \
	X(imsic_eidelivery,  uint32_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "0 or 1 (0 in a PLIC VM)") \
	X(imsic_eithreshold, uint32_t, , SNAP_BITS(SNAP_IMSIC_MAX_IDS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_HOOK, "0..imsic_nr_ids") \
	X(imsic_reserved,    uint32_t, , SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_HOOK, "0") \
	X(vsiselect,         uint64_t, , SNAP_BITS(SNAP_ISELECT_BITS, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_LIVE(csr.vsiselect), "0..0x1FF; 0 for a PLIC VM on a host with Smstateen") \
	X(imsic_eip,         uint64_t, [SNAP_IMSIC_WORDS], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "no bit of identity 0 or above imsic_nr_ids") \
	X(imsic_eie,         uint64_t, [SNAP_IMSIC_WORDS], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "no bit of identity 0 or above imsic_nr_ids")

/* DBTR (version 8): SBI DBTR, the vCPU's debug triggers as the guest reads
 * them back (read_triggers), and its shared memory. Trigger i is element i of
 * the arrays. A free trigger is all zero. The hook (hyp/state/dbtr_record.c)
 * checks what the guest's own calls would on the host that reads it, whose
 * firmware gives trig_max triggers (at most SNAP_DBTR_TRIGGERS): the shared
 * memory as set_shmem does (trig_max entries of 32 bytes), an installed
 * trigger's words as install_triggers does (dbtr_check()), and no trigger at
 * an index at or above trig_max (`no-feature`: DBTR_NO_TRIGGERS). Which
 * triggers the hardware needs is derived on load, never saved. */
#define SNAP_REC_DBTR(X) \
	X(dbtr_shmem,    uint64_t, , SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "0 unless dbtr_shmem_on; then 8-byte aligned, trig_max entries of 32 bytes inside " \
	  "the VM's RAM") \
	X(dbtr_shmem_on, uint8_t, , SNAP_BITS(1, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_HOOK, "0 or 1") \
	X(dbtr_reserved, uint8_t, [7], SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, SNAP_HOOK, "0") \
	X(dbtr_state,    uint8_t, [SNAP_DBTR_TRIGGERS], SNAP_BITS(0x1f, 0, 0, 0), \
	  SNAP_VALUE(0, 0x1f, SNAP_DBTR_STATE_LEGAL), 0, SNAP_HOOK, \
	  "0 (free) or MAPPED (bit 0) with the saved U, S, VU, VS (bits 1..4); " \
	  "0 at and above trig_max") \
	X(dbtr_tdata1,   uint64_t, [SNAP_DBTR_TRIGGERS], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "0 for a free trigger; an installed one's as install_triggers takes it (mcontrol6, " \
	  "breakpoint action, no dmode, m, chain)") \
	X(dbtr_tdata2,   uint64_t, [SNAP_DBTR_TRIGGERS], SNAP_ANY_BITS, SNAP_ANY_VALUE, 0, SNAP_HOOK, \
	  "0 for a free trigger, else any") \
	X(dbtr_tdata3,   uint64_t, [SNAP_DBTR_TRIGGERS], SNAP_BITS(0, 0, 0, 0), SNAP_ANY_VALUE, 0, \
	  SNAP_HOOK, "0 (no textra)")

/* The vCPU records, in stream order: X(id, NAME, name). */
#define SNAP_VCPU_RECORDS(X) \
	X(1, CORE, core) \
	X(2, FP, fp) \
	X(3, CFI, cfi) \
	X(4, FWFT, fwft) \
	X(5, HSM, hsm) \
	X(6, STA, sta) \
	X(7, PMU, pmu) \
	X(8, IMSIC, imsic) \
	X(9, DBTR, dbtr)

/* A record in a VCPU section: this, then @size bytes of its fields. */
struct snap_record {
	uint32_t id;		/* SNAP_REC_ID_* */
	uint32_t size;		/* sizeof its struct snap_rec_* */
};

#define SNAP_MEMBER(name, type, dim, ...)	type name dim;
#define SNAP_REC_ID(id, NAME, name)		SNAP_REC_ID_##NAME = id,
#define SNAP_REC_STRUCT(id, NAME, name)		struct snap_rec_##name { SNAP_REC_##NAME(SNAP_MEMBER) };
#define SNAP_REC_SLOT(id, NAME, name)		struct snap_record name##_rec; struct snap_rec_##name name;

enum snap_record_id { SNAP_VCPU_RECORDS(SNAP_REC_ID) };
struct snap_config { SNAP_CONFIG_FIELDS(SNAP_MEMBER) };
SNAP_VCPU_RECORDS(SNAP_REC_STRUCT)

/* VCPU (version 3): every record, in id order. Versions 3 to 6 end after
 * PMU (SNAP_VCPU_V6_SIZE bytes): a reader takes their IMSIC record as all
 * zero (a PLIC VM's). Version 7 ends after IMSIC (SNAP_VCPU_V7_SIZE): its
 * DBTR record is all zero (no shared memory, no trigger). */
struct snap_vcpu { SNAP_VCPU_RECORDS(SNAP_REC_SLOT) };
#define SNAP_VCPU_V6_SIZE	896
#define SNAP_VCPU_V7_SIZE	1440

/* The VCPU record of versions 1 and 2 (frozen: read, converted, never
 * written). X(name, type, dim). A version 3 field takes the value of the
 * field of the same name; a field with no such namesake MUST be 0. */
#define SNAP_VCPU_V2_FIELDS(X) \
	X(gpr, uint64_t, [32]) X(pc, uint64_t, ) X(sstatus, uint64_t, ) X(vsstatus, uint64_t, ) \
	X(vsie, uint64_t, ) X(vstvec, uint64_t, ) X(vsscratch, uint64_t, ) X(vsepc, uint64_t, ) \
	X(vscause, uint64_t, ) X(vstval, uint64_t, ) X(vsatp, uint64_t, ) X(vstimecmp, uint64_t, ) \
	X(hvip, uint64_t, ) X(scounteren, uint64_t, ) X(senvcfg, uint64_t, ) X(ssp, uint64_t, ) \
	X(f, uint64_t, [32]) X(fcsr, uint64_t, ) \
	X(lp_value, uint8_t, ) X(lp_locked, uint8_t, ) X(ss_value, uint8_t, ) X(ss_locked, uint8_t, ) \
	X(hsm_state, uint32_t, ) X(waiting, uint32_t, ) X(resume_nonret, uint32_t, ) \
	X(resume_addr, uint64_t, ) X(resume_opaque, uint64_t, ) \
	X(misaligned_locked, uint8_t, ) X(pte_ad_value, uint8_t, ) X(pte_ad_locked, uint8_t, ) \
	X(system_suspend, uint8_t, ) X(reserved, uint32_t, ) X(sta_shmem, uint64_t, ) \
	X(pmu_configured, uint32_t, ) X(pmu_started, uint32_t, ) \
	X(pmu_event_idx, uint32_t, [SNAP_PMU_COUNTERS]) X(reserved2, uint32_t, ) \
	X(pmu_value, uint64_t, [SNAP_PMU_COUNTERS]) X(reserved3, uint64_t, [2])

#define SNAP_V2_MEMBER(name, type, dim)	type name dim;
struct snap_vcpu_v2 { SNAP_VCPU_V2_FIELDS(SNAP_V2_MEMBER) };

#define SNAP_VCPU_V1_SIZE	672	/* a version 1 record ends before misaligned_locked */

_Static_assert(sizeof(struct snap_config) == 648, "snap_config");
_Static_assert(sizeof(struct snap_rec_core) == 368, "snap_rec_core");
_Static_assert(sizeof(struct snap_rec_fp) == 264, "snap_rec_fp");
_Static_assert(sizeof(struct snap_rec_cfi) == 16, "snap_rec_cfi");
_Static_assert(sizeof(struct snap_rec_fwft) == 8, "snap_rec_fwft");
_Static_assert(sizeof(struct snap_rec_hsm) == 32, "snap_rec_hsm");
_Static_assert(sizeof(struct snap_rec_sta) == 8, "snap_rec_sta");
_Static_assert(sizeof(struct snap_rec_pmu) == 144, "snap_rec_pmu");
_Static_assert(sizeof(struct snap_rec_imsic) == 536, "snap_rec_imsic");
_Static_assert(sizeof(struct snap_rec_dbtr) == 216, "snap_rec_dbtr");
_Static_assert(sizeof(struct snap_vcpu) == 1664, "snap_vcpu");
_Static_assert(offsetof(struct snap_vcpu, imsic_rec) == SNAP_VCPU_V6_SIZE, "snap_vcpu_v6");
_Static_assert(offsetof(struct snap_vcpu, dbtr_rec) == SNAP_VCPU_V7_SIZE, "snap_vcpu_v7");
_Static_assert(sizeof(struct snap_vcpu_v2) == 848, "snap_vcpu_v2");
#endif
