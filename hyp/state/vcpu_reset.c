/* SPDX-License-Identifier: MIT */
/* vCPU architectural reset: no CSR is touched (the state goes in at the next
 * vcpu_load()), so the host fuzz targets run this very code. */
#include <string.h>
#include <cfi.h>
#include <fwft.h>
#include <hart.h>
#include <pmu.h>
#include <steal_time.h>
#include <vm.h>

static unsigned long henvcfg_base(void)
{
	/* Sstc for the guest, and Svpbmt when the hardware has it (ADUE follows
	 * the guest's FWFT PTE_AD_HW_UPDATING, reset 0) */
	return hart_caps.henvcfg_ok & (ENVCFG_STCE | ENVCFG_PBMTE);
}

void vcpu_reset(struct vcpu *v, unsigned long entry, unsigned long arg)
{
	memset(&v->g, 0, sizeof(v->g));
	/* no DBTR shared memory, no trigger (a loaded vCPU's hart drops its
	 * firmware triggers at vcpu_put()) */
	memset(&v->dbtr, 0, sizeof(v->dbtr));
	v->g.ctx.gpr[10] = v->id;
	v->g.ctx.gpr[11] = arg;
	v->g.ctx.sepc = entry;
	/* enter VS-mode (SPP=1) with SIE=0, ELP=0 (SPELP clear) */
	v->g.ctx.sstatus = SR_SPP | VCPU_SSTATUS_HOST;
	v->g.csr.vsstatus = SR_UXL_64;
	v->g.csr.vstimecmp = -1UL;
	v->irq_pending = 0;
	v->requests = VCPU_REQ_FENCE_I | VCPU_REQ_HFENCE_VVMA;
	fwft_vcpu_reset(v);
	cfi_vcpu_reset(v);
	steal_vcpu_reset(v);
	pmu_vcpu_reset(v);
	v->henvcfg = henvcfg_base() | vcpu_henvcfg_guest(v);
}

