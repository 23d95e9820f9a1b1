/* SPDX-License-Identifier: MIT */
/* SBI DBTR in snapshots and migration: the DBTR record's hooks (include/abi/
 * snapshot_records.h). A restore admits only what the guest's own calls
 * could have set on this host: set_shmem's address check, install_triggers'
 * word check (dbtr_check()), and triggers below this firmware's trig_max.
 * Which triggers need the hardware (live) is recomputed, never taken. Pure:
 * the unit tests run it (tests/unit/test_snap.c). */
#include <stddef.h>
#include <string.h>
#include <abi/sbi_dbtr.h>
#include <abi/sbi_defs.h>
#include <dbtr.h>
#include <snapshot.h>
#include <vm.h>

_Static_assert(SNAP_DBTR_TRIGGERS == DBTR_MAX_TRIGGERS, "a record slot per trigger");

const char dbtr_no_triggers[] =
	"dbtr_state: the guest uses an SBI DBTR trigger (or shared memory) this host's "
	"firmware cannot give (too few triggers, or no DBTR)";

static void dbtr_record_save(const struct vcpu *v, void *rec)
{
	struct snap_rec_dbtr *r = rec;

	r->dbtr_shmem_on = v->dbtr.shmem_on;
	r->dbtr_shmem = v->dbtr.shmem_on ? v->dbtr.shmem : 0;
	for (unsigned int i = 0; i < DBTR_MAX_TRIGGERS; i++) {
		const struct dbtr_trigger *t = &v->dbtr.trig[i];

		r->dbtr_state[i] = t->state;
		r->dbtr_tdata1[i] = t->tdata1;
		r->dbtr_tdata2[i] = t->tdata2;
		r->dbtr_tdata3[i] = t->tdata3;
	}
}

/* Checked: installed on the hart when the vCPU is next loaded there. */
static void dbtr_record_load(struct vcpu *v, const void *rec)
{
	const struct snap_rec_dbtr *r = rec;

	memset(&v->dbtr, 0, sizeof(v->dbtr));
	v->dbtr.shmem_on = r->dbtr_shmem_on;
	v->dbtr.shmem = r->dbtr_shmem;
	for (unsigned int i = 0; i < DBTR_MAX_TRIGGERS; i++) {
		struct dbtr_trigger *t = &v->dbtr.trig[i];

		t->state = r->dbtr_state[i];
		t->tdata1 = r->dbtr_tdata1[i];
		t->tdata2 = r->dbtr_tdata2[i];
		t->tdata3 = r->dbtr_tdata3[i];
	}
	v->dbtr.live = dbtr_live_count(&v->dbtr);
}

#define AT(field)	offsetof(struct snap_rec_dbtr, field)

static const char *trigger_problem(const struct snap_rec_dbtr *r, unsigned int i,
				   uint32_t *offset)
{
	*offset = AT(dbtr_state) + i;
	if (!r->dbtr_state[i]) {
		*offset = AT(dbtr_tdata1) + i * 8;
		if (r->dbtr_tdata1[i])
			return "dbtr_tdata1: not 0 for a free trigger (dbtr_state 0)";
		*offset = AT(dbtr_tdata2) + i * 8;
		if (r->dbtr_tdata2[i])
			return "dbtr_tdata2: not 0 for a free trigger (dbtr_state 0)";
		return NULL;
	}
	if (i >= dbtr_host.trig_max)
		return dbtr_no_triggers;
	*offset = AT(dbtr_tdata1) + i * 8;
	if (dbtr_check(r->dbtr_tdata1[i], r->dbtr_tdata3[i]) != SBI_SUCCESS)
		return "dbtr_tdata1: an installed trigger's words install_triggers refuses "
		       "(mcontrol6, breakpoint action, no dmode, m, chain)";
	return NULL;
}

static const char *dbtr_record_check(const void *rec, const struct snap_config *c,
				     uint32_t *offset)
{
	const struct snap_rec_dbtr *r = rec;
	uint64_t bytes = (uint64_t)dbtr_host.trig_max * sizeof(struct sbi_dbtr_entry);

	*offset = AT(dbtr_shmem);
	if (!r->dbtr_shmem_on && r->dbtr_shmem)
		return "dbtr_shmem: not 0 without dbtr_shmem_on";
	if (r->dbtr_shmem_on) {
		*offset = AT(dbtr_shmem_on);
		if (!dbtr_host.ok)
			return dbtr_no_triggers;
		*offset = AT(dbtr_shmem);
		if (r->dbtr_shmem & (SBI_DBTR_SHMEM_ALIGN - 1) || r->dbtr_shmem < c->ram_gpa ||
		    r->dbtr_shmem - c->ram_gpa > c->ram_size ||
		    c->ram_size - (r->dbtr_shmem - c->ram_gpa) < bytes)
			return "dbtr_shmem: 8-byte aligned, this host's trig_max entries (32 bytes "
			       "each) inside the VM's RAM";
	}
	for (unsigned int i = 0; i < DBTR_MAX_TRIGGERS; i++) {
		const char *why = trigger_problem(r, i, offset);

		if (why)
			return why;
	}
	return NULL;
}

const struct snap_record_ops dbtr_record = {
	.save = dbtr_record_save,
	.load = dbtr_record_load,
	.check = dbtr_record_check,
};
