/* SPDX-License-Identifier: MIT */
/* The software IMSIC file of each vCPU of an AIA VM (docs/design-aia.md 3.6).
 * The file's rules are hyp/lib/imsic_file.c's; here: the lock, and ext_irq
 * kept equal to the file's signal after every change, so the existing
 * external-interrupt path (hvip.VSEIP at entry, the wake checks, the idle
 * kick) serves the IMSIC as it serves the PLIC. */
#include <arch/riscv/csr.h>
#include <imsic.h>
#include <imsic_file.h>
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
