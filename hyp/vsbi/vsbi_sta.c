/* SPDX-License-Identifier: MIT */
/* SBI STA: a vCPU registers (or drops) the 64-byte record in which the
 * hypervisor reports its steal time (hyp/state/steal_time.c keeps it up to
 * date); and that registration as a snapshot's STA record. */
#include <stddef.h>
#include <string.h>
#include <abi/sbi_sta.h>
#include <guest_mem.h>
#include <snap_table.h>
#include <vsbi.h>
#include <vm.h>

/* set_shmem(lo, hi, flags), checked in the order the v3.0 text lists its
 * errors: flags (unsigned long: every bit counts) and alignment are
 * INVALID_PARAM; memory that is not this VM's RAM is INVALID_ADDRESS. */
static long sta_set_shmem(struct vcpu *v, unsigned long lo, unsigned long hi,
			  unsigned long flags)
{
	void *rec;

	if (flags)
		return SBI_ERR_INVALID_PARAM;
	if (lo == SBI_STA_SHMEM_DISABLE && hi == SBI_STA_SHMEM_DISABLE) {
		v->g.sta = (struct vcpu_sta){ 0 };
		return SBI_SUCCESS;
	}
	if (lo & (SBI_STA_RECORD_SIZE - 1))
		return SBI_ERR_INVALID_PARAM;
	/* RV64: bits above 64 name no memory the guest has */
	if (hi || !vm_gpa_range_is_ram(v->vm, lo, SBI_STA_RECORD_SIZE))
		return SBI_ERR_INVALID_ADDRESS;
	rec = vm_gpa_to_hva(v->vm, lo, SBI_STA_RECORD_SIZE, true);
	if (!rec)
		return SBI_ERR_FAILED;	/* a live snapshot cannot copy the chunk now */
	memset(rec, 0, SBI_STA_RECORD_SIZE);	/* the spec: zeroed before we return */
	v->g.sta = (struct vcpu_sta){ .shmem = lo, .enabled = true };
	v->steal.unreported_ns = 0;	/* belonged to the old record */
	return SBI_SUCCESS;
}

static void sta_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	if (fid != SBI_STA_STEAL_TIME_SET_SHMEM) {
		ret->error = SBI_ERR_NOT_SUPPORTED;
		return;
	}
	ret->value = 0;
	ret->error = sta_set_shmem(v, VSBI_ARG(v, 0), VSBI_ARG(v, 1), VSBI_ARG(v, 2));
}

const struct vsbi_ext vsbi_sta = {
	.name = "sta",
	.eid_first = SBI_EXT_STA,
	.eid_last = SBI_EXT_STA,
	.call = sta_call,
};

/* The STA record: the registration, SNAP_STA_OFF for none. */
static void sta_record_save(const struct vcpu *v, void *rec)
{
	struct snap_rec_sta *r = rec;

	r->sta_shmem = v->g.sta.enabled ? v->g.sta.shmem : SNAP_STA_OFF;
}

static void sta_record_load(struct vcpu *v, const void *rec)
{
	const struct snap_rec_sta *r = rec;

	v->g.sta.enabled = r->sta_shmem != SNAP_STA_OFF;
	v->g.sta.shmem = v->g.sta.enabled ? r->sta_shmem : 0;
}

/* What set_shmem accepts: 64-byte aligned, inside the VM's RAM. */
static const char *sta_record_check(const void *rec, const struct snap_config *c,
				    uint32_t *offset)
{
	const struct snap_rec_sta *r = rec;

	*offset = offsetof(struct snap_rec_sta, sta_shmem);
	if (r->sta_shmem != SNAP_STA_OFF &&
	    (r->sta_shmem % SBI_STA_RECORD_SIZE || r->sta_shmem < c->ram_gpa ||
	     r->sta_shmem - c->ram_gpa > c->ram_size - SBI_STA_RECORD_SIZE))
		return "STA shared memory: 64-byte aligned, inside the VM's RAM";
	return NULL;
}

const struct snap_record_ops vsbi_sta_record = {
	.save = sta_record_save,
	.load = sta_record_load,
	.check = sta_record_check,
};
