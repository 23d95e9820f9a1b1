/* SPDX-License-Identifier: MIT */
/* The software IMSIC file of each vCPU of an AIA VM (docs/design-aia.md 3.6).
 * The file's rules are hyp/lib/imsic_file.c's; here: the lock, and ext_irq
 * kept equal to the file's signal after every change, so the existing
 * external-interrupt path (hvip.VSEIP at entry, the wake checks, the idle
 * kick) serves the IMSIC as it serves the PLIC. */
#include <arch/riscv/csr.h>
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

void vimsic_inject(struct vcpu *v, uint32_t id)
{
	bool kick;

	spin_lock(&v->imsic.lock);
	/* further stores while the signal stays 1 kick nobody */
	kick = imsic_set_pending(&v->imsic.file, v->vm->cfg.imsic_ids, id) && update_signal(v);
	spin_unlock(&v->imsic.lock);
	if (kick)
		vcpu_kick(v);
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
