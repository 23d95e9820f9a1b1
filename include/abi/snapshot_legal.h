/* SPDX-License-Identifier: MIT */
/* The legal values of the fields a restore installs (a snapshot stream or an
 * incoming migration): for each, exactly what a guest given the VM's ISA can
 * leave there by its own writes, i.e. the WARL rules of the RISC-V
 * privileged spec 1.13 for a Carapace VM, whose ISA is rv64imafdc + Zicsr,
 * Zifencei, Zicntr, Sstc and the CONFIG's features (Zicfilp, Zicfiss, Svpbmt,
 * Svadu); never V, Zicbom/Zicboz, Ssnpm, Svukte, Ssdbltrp or big-endian U.
 * docs/snapshot-format.md, "Legal values", is normative.
 *
 * This is the one table. The hypervisor checks every restored record with it
 * and masks what it installs and what it saves with it (hyp/snap/snap_legal.c:
 * restore, incoming migration, snapshot and outgoing migration alike), and
 * tools/carapace-snap parses this file (and arch/riscv/encoding.h for the
 * names) to verify files with the very same rules. Keep it parseable: rows
 * are X(...) (continued with backslashes like the rest of the macro); their
 * arguments are a field name of the struct, integer constant expressions
 * (numbers, names #defined in this file, abi/snapshot_format.h or
 * arch/riscv/encoding.h, BIT(), _UL(), | & ~ << >> + - and parentheses) and
 * a string literal last.
 *
 * What the host adds (the hypervisor only; a file does not say which host it
 * goes to): a vsatp MODE this host's CPU lacks is refused. */
#ifndef HYP_SNAPSHOT_LEGAL_H
#define HYP_SNAPSHOT_LEGAL_H
#include <arch/riscv/encoding.h>
#include <abi/snapshot_format.h>

/* Bit rules. X(field, any, zicfilp, zicfiss, svadu, what): a bit of the field
 * may be 1 if it is in @any, or in the column of an extension the CONFIG's
 * features give the guest; every other bit MUST be 0. */
#define SNAP_CONFIG_BITS(X) \
	X(features,          SNAP_FEAT_ALL, 0, 0, 0, "Zicfilp, Zicfiss, Sstc, Svpbmt, Svadu (bits 0..4)") \
	X(debug_ext,         1, 0, 0, 0, "0 or 1")

/* The VCPU record. sstatus is the trapped context (the HS sstatus image the
 * vCPU is entered with): only SPP, SPIE and SPELP are the guest's; FS says
 * that the record's f registers are live (never Off), and a restore installs
 * the hypervisor's own FS, as a vCPU reset does (snap_vcpu_load()). */
#define SNAP_VCPU_BITS(X) \
	X(pc,                ~_UL(1), 0, 0, 0, "bit 0 is 0 (sepc[0] is read-only 0)") \
	X(sstatus,           SR_SPIE | SR_SPP | SR_FS, SR_SPELP, 0, 0, \
	  "only SPIE, SPP, FS; SPELP with Zicfilp") \
	X(vsstatus,          SR_SIE | SR_SPIE | SR_SPP | SR_FS | SR_SUM | SR_MXR | SR_UXL | SR_SD, \
	  SR_SPELP, 0, 0, "only SIE, SPIE, SPP, FS, SUM, MXR, UXL, SD; SPELP with Zicfilp") \
	X(vsie,              MIP_SSIP | MIP_STIP | MIP_SEIP, 0, 0, 0, "only SSIE, STIE, SEIE") \
	X(vsepc,             ~_UL(1), 0, 0, 0, "bit 0 is 0 (sepc[0] is read-only 0)") \
	X(hvip,              VS_IRQ_MASK, 0, 0, 0, "only VSSIP, VSTIP, VSEIP") \
	X(scounteren,        COUNTEREN_CY | COUNTEREN_TM | COUNTEREN_IR, 0, 0, 0, \
	  "only CY, TM, IR (the guest has no other counter)") \
	X(senvcfg,           ENVCFG_FIOM, ENVCFG_LPE, ENVCFG_SSE, 0, \
	  "only FIOM; LPE with Zicfilp, SSE with Zicfiss") \
	X(ssp,               0, 0, ~_UL(0), 0, "0 unless the guest has Zicfiss") \
	X(fcsr,              0xff, 0, 0, 0, "only fflags and frm (bits 0..7)") \
	X(lp_value,          0, 1, 0, 0, "0 or 1 with Zicfilp, else 0") \
	X(lp_locked,         0, 1, 0, 0, "0 or 1 with Zicfilp, else 0") \
	X(ss_value,          0, 0, 1, 0, "0 or 1 with Zicfiss, else 0") \
	X(ss_locked,         0, 0, 1, 0, "0 or 1 with Zicfiss, else 0") \
	X(waiting,           1, 0, 0, 0, "0 or 1") \
	X(resume_nonret,     1, 0, 0, 0, "0 or 1") \
	X(misaligned_locked, 1, 0, 0, 0, "0 or 1") \
	X(pte_ad_value,      0, 0, 0, 1, "0 or 1 with Svadu, else 0") \
	X(pte_ad_locked,     0, 0, 0, 1, "0 or 1 with Svadu, else 0") \
	X(system_suspend,    1, 0, 0, 0, "0 or 1") \
	X(reserved,          0, 0, 0, 0, "0") \
	X(reserved2,         0, 0, 0, 0, "0")

/* Read-only bits a bit rule allows: a record may hold them (what the CPU
 * reads back), but they are never written to a CSR (the CPU computes them),
 * and Carapace does not save them. X(field, bits, what) */
#define SNAP_VCPU_READONLY(X) \
	X(vsstatus,          SR_SD, "SD: FS is Dirty")

/* Value rules. X(field, shift, mask, legal, what): the subfield
 * (field >> shift) & mask MUST be a value v below 64 with bit v of @legal set. */
#define SNAP_CONFIG_VALUES(X) \
	X(nr_vcpus,          0, 0xffffffff, 0x1fe, "1..8") \
	X(cfi_policy,        0, 0xffffffff, 0xf, "0..3 (trap, delegate, strict, off)") \
	X(vs_sv,             0, 0xffffffff, BIT(0) | BIT(39) | BIT(48) | BIT(57), \
	  "39, 48 or 57 (0: not recorded)")

#define SNAP_VCPU_VALUES(X) \
	X(sstatus,           SR_FS_SHIFT, 3, BIT(1) | BIT(2) | BIT(3), \
	  "FS Initial, Clean or Dirty, never Off (the f registers are live)") \
	X(vsstatus,          SR_UXL_SHIFT, 3, BIT(2), "UXL 2 (64-bit U-mode)") \
	X(vstvec,            0, TVEC_MODE_MASK, BIT(0) | BIT(1), "MODE 0 (Direct) or 1 (Vectored)") \
	X(vsatp,             ATP_MODE_SHIFT, ATP_MODE_MASK, \
	  BIT(0) | BIT(ATP_MODE_SV39) | BIT(ATP_MODE_SV48) | BIT(ATP_MODE_SV57), \
	  "MODE Bare, Sv39, Sv48 or Sv57") \
	X(hsm_state,         0, 0xffffffff, BIT(0) | BIT(1) | BIT(2), \
	  "0..2 (stopped, started, suspended)")
#endif
