/* SPDX-License-Identifier: MIT */
/* A vCPU's virtual IMSIC in software (docs/design-aia.md 3.2, 3.6): its
 * interrupt file is imsic.file, guarded by imsic.lock; ext_irq follows the
 * file's signal and reaches the guest as hvip.VSEIP, as the PLIC's output
 * does, or, while it holds a hardware guest file (imsic_files.c), in that file. */
#ifndef HYP_VIMSIC_H
#define HYP_VIMSIC_H
#include <types.h>
#include <snap_table.h>

struct vcpu;
struct vm;

/* identities per file an AIA VM gets (QEMU virt's riscv,num-ids) */
#define VIMSIC_IDS	255

/** vimsic_inject() - the one way anything but the guest's CSR accesses raises
 *  identity @id in @v's file (a store to its page, an APLIC MSI): 0 and ids
 *  above the VM's imsic_ids are ignored; the file's signal going 0 -> 1 sets
 *  ext_irq and kicks @v (a waiting vCPU wakes as for a PLIC interrupt).
 *  While @v holds a guest file the identity is stored into that file, and
 *  the hardware signals: true then. */
bool vimsic_inject(struct vcpu *v, uint32_t id);
/** vimsic_rmw() - the guest's vsireg access with vsiselect @isel (0x70..0xFF):
 *  imsic_rmw() on @v's file, then ext_irq recomputed; 0 or -HYP_EINVAL
 *  (illegal: an odd eip/eie, nothing changed). */
int vimsic_rmw(struct vcpu *v, uint64_t isel, uint64_t *old, uint64_t val, uint64_t wmask);
/** vimsic_topei() - the guest's stopei access: the value read, and with
 *  @claim the top identity's pending bit cleared; then ext_irq recomputed. */
uint64_t vimsic_topei(struct vcpu *v, bool claim);
/* The state's moves between the software file and a guest file
 * (docs/design-aia.md 3.7), driven by hyp/state/imsic_files.c on the hart
 * holding the file, never while @v is loaded elsewhere. */
struct imsic_file;
/** vimsic_hand_over() - load the software file into guest file @f of this
 *  hart (@hart, zeroed by the caller) and make @v HW there; the software
 *  file is left empty, ext_irq false. */
void vimsic_hand_over(struct vcpu *v, unsigned int hart, unsigned int f);
/** vimsic_set_moving() - first step of a release: injections go to the
 *  software file from now on, never to the guest file. */
void vimsic_set_moving(struct vcpu *v);
/** vimsic_take_back() - last step: @hw (read out of the guest file) merged
 *  into the software file (pending bits raised meanwhile kept), SW again,
 *  ext_irq recomputed, @v kicked if it rose. */
void vimsic_take_back(struct vcpu *v, const struct imsic_file *hw);
/* The IMSIC record of a VCPU section (include/abi/snapshot_records.h,
 * SNAP_REC_IMSIC): save, check, and load into the software file (ext_irq
 * from its signal); a PLIC VM's record is all zero. */
extern const struct snap_record_ops vimsic_record;
/** vimsic_record_fits() - what a record alone cannot say: NULL if the IMSIC
 *  record @rec (struct snap_rec_imsic, checked) of vCPU @id fits @vm, whose
 *  vCPUs below @id are loaded (every file has as many identities as vCPU
 *  0's); else why not, *@offset the field's in struct snap_vcpu. */
const char *vimsic_record_fits(const struct vm *vm, unsigned int id, const void *rec,
			       uint32_t *offset);
/** vimsic_reset() - power-on file (VM boot and reboot): nothing pending, delivery
 *  off; the counters of struct vimsic_live kept (they count from creation). */
void vimsic_reset(struct vcpu *v);
#endif
