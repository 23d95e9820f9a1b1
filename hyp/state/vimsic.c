/* SPDX-License-Identifier: MIT */
/* The software IMSIC file of each vCPU of an AIA VM (docs/design-aia.md 3.6).
 * The file's rules are hyp/lib/imsic_file.c's; here: the lock, and ext_irq
 * kept equal to the file's signal after every change, so the existing
 * external-interrupt path (hvip.VSEIP at entry, the wake checks, the idle
 * kick) serves the IMSIC as it serves the PLIC. Also the file's snapshot
 * record (IMSIC, version 7). */
#include <stddef.h>
#include <arch/riscv/csr.h>
#include <imsic.h>

#include <hart.h>
#include <imsic_file.h>
#include <snap_table.h>
#include <steal_time.h>
#include <vimsic.h>
#include <vm.h>

/* Lock held. Anyone but @v itself changing the level from 0 to 1 kicks it. */
static bool update_signal(struct vcpu *v)
{
	bool level = imsic_signal(&v->imsic.file, v->vm->cfg.imsic_ids);
	bool rise = level && !v->ext_irq;

	if (rise && v->g.sta.enabled)	/* steal time counts from a wake-up */
		steal_note_wake(v, MIP_VSEIP);
	v->ext_irq = level;
	return rise;
}

bool vimsic_inject(struct vcpu *v, uint32_t id)
{
	bool kick = false, hw;

	spin_lock(&v->imsic.lock);
	hw = v->imsic.mode == VIMSIC_HW;
	if (hw) {
		/* its guest file: the hardware signals (VSEIP through VGEIN while
		 * it runs, SGEI while it waits parked); 0 and ids above its count
		 * are ignored there as here. Under the lock: a release marks the
		 * file MOVING before it reads it, so no store comes after that */
		if (id && id <= v->vm->cfg.imsic_ids)
			imsic_gfile_send((unsigned int)v->imsic.ghart, v->imsic.gfile, id);
	} else {
		/* further stores while the signal stays 1 kick nobody */
		kick = imsic_set_pending(&v->imsic.file, v->vm->cfg.imsic_ids, id) &&
		       update_signal(v);
	}
	spin_unlock(&v->imsic.lock);
	if (kick)
		vcpu_kick(v);
	return hw;
}

/* The guest's own accesses run on its hart, in its exit: the entry that
 * follows applies ext_irq (vcpu_apply_pending()), no kick needed. */
int vimsic_rmw(struct vcpu *v, uint64_t isel, uint64_t *old, uint64_t val, uint64_t wmask)
{
	int rc;

	spin_lock(&v->imsic.lock);
	rc = imsic_rmw(&v->imsic.file, v->vm->cfg.imsic_ids, isel, old, val, wmask);
	update_signal(v);
	v->imsic.csr_exits++;
	spin_unlock(&v->imsic.lock);
	return rc;
}

uint64_t vimsic_topei(struct vcpu *v, bool claim)
{
	uint64_t val;

	spin_lock(&v->imsic.lock);
	val = imsic_topei_csr(&v->imsic.file, v->vm->cfg.imsic_ids);
	if (claim)
		imsic_claim(&v->imsic.file, v->vm->cfg.imsic_ids);
	update_signal(v);
	v->imsic.csr_exits++;
	spin_unlock(&v->imsic.lock);
	return val;
}

/* The lock is not part of the state: another hart may hold it. The counters
 * are not either: like every counter of metrics they count from the VM's
 * creation (vm_alloc() zeroes them), a reboot included. */
void vimsic_reset(struct vcpu *v)
{
	spin_lock(&v->imsic.lock);
	imsic_file_reset(&v->imsic.file);
	v->ext_irq = false;
	spin_unlock(&v->imsic.lock);
}

/* Moving the state between the software file and a guest file (3.7): the
 * guest-file side (which file, the G-stage leaf, the flushes) is
 * imsic_files.c's; these keep the lock's rules. */

void vimsic_hand_over(struct vcpu *v, unsigned int hart, unsigned int f)
{
	spin_lock(&v->imsic.lock);
	imsic_gfile_load(f, v->vm->cfg.imsic_ids, &v->imsic.file);
	imsic_file_reset(&v->imsic.file);	/* the guest file holds it all now */
	v->imsic.ghart = (int8_t)hart;
	v->imsic.gfile = (uint8_t)f;
	v->imsic.mode = VIMSIC_HW;
	v->ext_irq = false;		/* the file drives VSEIP through VGEIN */
	spin_unlock(&v->imsic.lock);
}

void vimsic_set_moving(struct vcpu *v)
{
	spin_lock(&v->imsic.lock);
	v->imsic.mode = VIMSIC_MOVING;
	spin_unlock(&v->imsic.lock);
}

void vimsic_take_back(struct vcpu *v, const struct imsic_file *hw)
{
	bool kick;

	spin_lock(&v->imsic.lock);
	/* identities raised while MOVING are in .file already: kept */
	for (unsigned int k = 0; k < IMSIC_FILE_WORDS; k++) {
		v->imsic.file.eip[k] |= hw->eip[k];
		v->imsic.file.eie[k] = hw->eie[k];
	}
	v->imsic.file.eithreshold = hw->eithreshold;
	v->imsic.file.eidelivery = hw->eidelivery;
	v->imsic.mode = VIMSIC_SW;
	v->imsic.gfile = 0;
	v->imsic.ghart = -1;
	kick = update_signal(v);
	spin_unlock(&v->imsic.lock);
	if (kick)	/* a waiting vCPU whose file signalled */
		vcpu_kick(v);
}

/* The IMSIC record of snapshot version 7 (docs/design-aia.md 5): the file as
 * the guest left it, vsiselect (the table copies it with the CSRs). Only the
 * software file: a paused VM holds no hardware file (its pause released
 * them), so v->imsic.file is the whole state. */

/* A threshold a guest write would have made 0 (imsic_rmw()) is saved as 0;
 * bits of identities the file lacks are never saved. */
static void vimsic_save(const struct vcpu *v, void *rec)
{
	struct vcpu *mut = (struct vcpu *)v;	/* the lock is not state */
	struct snap_rec_imsic *r = rec;
	uint32_t nr_ids = vm_is_aia(v->vm) ? v->vm->cfg.imsic_ids : 0;

	if (!nr_ids)
		return;		/* a PLIC VM's: all zero (but vsiselect) */
	spin_lock(&mut->imsic.lock);
	r->imsic_nr_ids = nr_ids;
	r->imsic_eidelivery = v->imsic.file.eidelivery & 1;
	r->imsic_eithreshold = v->imsic.file.eithreshold <= nr_ids ? v->imsic.file.eithreshold : 0;
	for (uint32_t w = 0; w < IMSIC_FILE_WORDS; w++) {
		r->imsic_eip[w] = v->imsic.file.eip[w] & imsic_word_mask(nr_ids, w);
		r->imsic_eie[w] = v->imsic.file.eie[w] & imsic_word_mask(nr_ids, w);
	}
	spin_unlock(&mut->imsic.lock);
}

/* Checked (vimsic_record_check(), vimsic_record_fits()): the file as saved,
 * and ext_irq from its signal, as after the guest's last write. The VM takes
 * the file's identity count (its DT says it). A PLIC VM's file stays zero
 * and its ext_irq the PLIC's. */
static void vimsic_load(struct vcpu *v, const void *rec)
{
	const struct snap_rec_imsic *r = rec;

	spin_lock(&v->imsic.lock);
	imsic_file_reset(&v->imsic.file);
	if (vm_is_aia(v->vm)) {
		v->vm->cfg.imsic_ids = r->imsic_nr_ids;
		v->imsic.file.eidelivery = r->imsic_eidelivery;
		v->imsic.file.eithreshold = r->imsic_eithreshold;
		for (uint32_t w = 0; w < IMSIC_FILE_WORDS; w++) {
			v->imsic.file.eip[w] = r->imsic_eip[w] & imsic_word_mask(r->imsic_nr_ids, w);
			v->imsic.file.eie[w] = r->imsic_eie[w] & imsic_word_mask(r->imsic_nr_ids, w);
		}
		v->ext_irq = imsic_signal(&v->imsic.file, r->imsic_nr_ids);
	}
	spin_unlock(&v->imsic.lock);
}

#define AT(f)	((uint32_t)offsetof(struct snap_rec_imsic, f))

/* What the table cannot say: the record fits the VM's kind, the threshold
 * and the bits its identity count allows, as a guest's writes would leave
 * them (imsic_rmw()). */
static const char *vimsic_record_check(const void *rec, const struct snap_config *c,
				       uint32_t *offset)
{
	const struct snap_rec_imsic *r = rec;
	uint32_t n = r->imsic_nr_ids;

	*offset = AT(imsic_nr_ids);
	if (!(c->features & SNAP_FEAT_AIA)) {
		if (n)
			return "imsic_nr_ids is not 0 in a PLIC VM (CONFIG's features lack AIA)";
		*offset = AT(imsic_eidelivery);
		if (r->imsic_eidelivery)
			return "imsic_eidelivery is not 0 in a PLIC VM";
		*offset = AT(vsiselect);
		if (r->vsiselect && hart_caps.smstateen)
			return "vsiselect is not 0 in a PLIC VM: a guest cannot write it on this "
			       "host (Smstateen)";
	} else if ((n & 63) != 63 || n > IMSIC_FILE_MAX_IDS) {
		return "imsic_nr_ids is not 63..2047 with (n & 63) == 63 in an AIA VM";
	}
	*offset = AT(imsic_eithreshold);
	if (r->imsic_eithreshold > n)
		return "imsic_eithreshold is above imsic_nr_ids";
	for (uint32_t w = 0; w < IMSIC_FILE_WORDS; w++) {
		uint64_t m = imsic_word_mask(n, w);

		*offset = AT(imsic_eip) + 8 * w;
		if (r->imsic_eip[w] & ~m)
			return "imsic_eip has a bit of identity 0 or above imsic_nr_ids";
		*offset = AT(imsic_eie) + 8 * w;
		if (r->imsic_eie[w] & ~m)
			return "imsic_eie has a bit of identity 0 or above imsic_nr_ids";
	}
	return NULL;
}

const struct snap_record_ops vimsic_record = {
	.save = vimsic_save,
	.load = vimsic_load,
	.check = vimsic_record_check,
};

const char *vimsic_record_fits(const struct vm *vm, unsigned int id, const void *rec,
			       uint32_t *offset)
{
	const struct snap_rec_imsic *r = rec;

	*offset = (uint32_t)offsetof(struct snap_vcpu, imsic) + AT(imsic_nr_ids);
	if (id && vm_is_aia(vm) && r->imsic_nr_ids != vm->cfg.imsic_ids)
		return "imsic_nr_ids differs from VCPU 0's (every file of a VM has as many "
		       "identities)";
	return NULL;
}
