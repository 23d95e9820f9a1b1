/* SPDX-License-Identifier: MIT */
/* SBI DBTR: a vCPU's virtual debug triggers. The guest's shared memory is
 * checked like STA's and read and written here, through the VM's RAM; its
 * trigger words are checked (dbtr_check()) and kept per vCPU; what the
 * firmware gets is the hypervisor's own word for each (dbtr_host_tdata1():
 * VS/VU only), installed on the hart the vCPU runs on (hyp/state/dbtr.c).
 * Nothing of a guest's call goes to the firmware. */
#include <string.h>
#include <abi/sbi_dbtr.h>
#include <dbtr.h>
#include <guest_mem.h>
#include <vsbi.h>
#include <vm.h>

#define ENTRY_SIZE	sizeof(struct sbi_dbtr_entry)

static bool dbtr_probe(const struct vm *vm)
{
	(void)vm;
	return dbtr_host.ok;
}

/* The guest's first @count entries; NULL if its RAM cannot be had now (a
 * live snapshot copying the chunk). set_shmem checked that trig_max entries
 * lie in RAM. */
static struct sbi_dbtr_entry *entries(struct vcpu *v, unsigned long count)
{
	return vm_gpa_to_hva(v->vm, v->dbtr.shmem, count * ENTRY_SIZE, true);
}

/* Recount what needs a hardware trigger; the hart @v is loaded on follows. */
static void triggers_changed(struct vcpu *v)
{
	v->dbtr.live = dbtr_live_count(&v->dbtr);
	dbtr_vcpu_sync(v);
}

/* set_shmem(lo, hi, flags), errors in the order the v3.0 text lists them. */
static long set_shmem(struct vcpu *v, unsigned long lo, unsigned long hi, unsigned long flags)
{
	if (flags)
		return SBI_ERR_INVALID_PARAM;
	if (lo == SBI_DBTR_SHMEM_DISABLE && hi == SBI_DBTR_SHMEM_DISABLE) {
		v->dbtr.shmem_on = false;
		v->dbtr.shmem = 0;
		return SBI_SUCCESS;
	}
	if (lo & (SBI_DBTR_SHMEM_ALIGN - 1))
		return SBI_ERR_INVALID_PARAM;
	/* RV64: bits above 64 name no memory the guest has; trig_max entries */
	if (hi || !vm_gpa_range_is_ram(v->vm, lo, dbtr_host.trig_max * ENTRY_SIZE))
		return SBI_ERR_INVALID_ADDRESS;
	v->dbtr.shmem = lo;
	v->dbtr.shmem_on = true;
	return SBI_SUCCESS;
}

/* read_triggers(base, count): [base, base + count) within trig_max (the
 * v3.0 text's "base + count >= trig_max" would refuse reading the last one) */
static long read_triggers(struct vcpu *v, unsigned long base, unsigned long count)
{
	struct sbi_dbtr_entry *e;

	if (!v->dbtr.shmem_on)
		return SBI_ERR_NO_SHMEM;
	if (base >= dbtr_host.trig_max || count > dbtr_host.trig_max - base)
		return SBI_ERR_BAD_RANGE;
	if (!count)
		return SBI_SUCCESS;
	e = entries(v, count);
	if (!e)
		return SBI_ERR_FAILED;
	for (unsigned long i = 0; i < count; i++) {
		const struct dbtr_trigger *t = &v->dbtr.trig[base + i];
		struct sbi_dbtr_entry out = { t->state, t->tdata1, t->tdata2, t->tdata3 };

		memcpy(&e[i], &out, sizeof(out));
	}
	return SBI_SUCCESS;
}

/* The guest's @count entries, copied once (another vCPU may write them). */
static long take_entries(struct vcpu *v, unsigned long count, struct sbi_dbtr_entry *in,
			 struct sbi_dbtr_entry **shmem)
{
	struct sbi_dbtr_entry *e;

	if (!v->dbtr.shmem_on)
		return SBI_ERR_NO_SHMEM;
	if (count > dbtr_host.trig_max)
		return SBI_ERR_BAD_RANGE;
	if (!count)
		return SBI_SUCCESS;
	e = entries(v, count);
	if (!e)
		return SBI_ERR_FAILED;
	memcpy(in, e, count * ENTRY_SIZE);
	*shmem = e;
	return SBI_SUCCESS;
}

static void set_trigger(struct dbtr_trigger *t, const struct sbi_dbtr_entry *in)
{
	t->tdata1 = in->tdata1;
	t->tdata2 = in->tdata2;
	t->tdata3 = in->tdata3;
	t->state = SBI_DBTR_TS_MAPPED | dbtr_saved_state(in->tdata1);
}

/* install_triggers(count): all checked before any is installed; value is
 * the index of the failing entry. */
static long install_triggers(struct vcpu *v, unsigned long count, unsigned long *value)
{
	struct sbi_dbtr_entry in[DBTR_MAX_TRIGGERS], *e = NULL;
	unsigned long i, nfree = 0;
	unsigned int idx = 0;
	long err = take_entries(v, count, in, &e);

	if (err || !count)
		return err;
	for (i = 0; i < count; i++) {
		err = dbtr_check(in[i].tdata1, in[i].tdata3);
		if (err) {
			*value = i;
			return err;
		}
	}
	for (i = 0; i < dbtr_host.trig_max; i++)
		nfree += !(v->dbtr.trig[i].state & SBI_DBTR_TS_MAPPED);
	if (count > nfree) {
		*value = nfree;		/* the first entry no trigger is left for */
		return SBI_ERR_FAILED;
	}
	for (i = 0; i < count; i++) {
		uint64_t trig_idx;

		while (v->dbtr.trig[idx].state & SBI_DBTR_TS_MAPPED)
			idx++;
		set_trigger(&v->dbtr.trig[idx], &in[i]);
		trig_idx = idx;
		memcpy(&e[i].word0, &trig_idx, sizeof(trig_idx));
	}
	triggers_changed(v);
	return SBI_SUCCESS;
}

/* update_triggers(count): entries name installed triggers (word 0); the
 * type may not change. All checked before any is changed. */
static long update_triggers(struct vcpu *v, unsigned long count, unsigned long *value)
{
	struct sbi_dbtr_entry in[DBTR_MAX_TRIGGERS], *e;
	unsigned long i;
	long err = take_entries(v, count, in, &e);

	if (err || !count)
		return err;
	for (i = 0; i < count; i++) {
		const struct dbtr_trigger *t;

		*value = i;
		if (in[i].word0 >= dbtr_host.trig_max)
			return SBI_ERR_INVALID_PARAM;
		t = &v->dbtr.trig[in[i].word0];
		if (!(t->state & SBI_DBTR_TS_MAPPED))
			return SBI_ERR_FAILED;
		err = dbtr_check(in[i].tdata1, in[i].tdata3);
		if (err)
			return err;
		if (TDATA1_TYPE(in[i].tdata1) != TDATA1_TYPE(t->tdata1) ||
		    (in[i].tdata1 ^ t->tdata1) & MC6_CHAIN)
			return SBI_ERR_INVALID_PARAM;
	}
	*value = 0;
	for (i = 0; i < count; i++)
		set_trigger(&v->dbtr.trig[in[i].word0], &in[i]);
	triggers_changed(v);
	return SBI_SUCCESS;
}

enum mask_op { OP_UNINSTALL, OP_ENABLE, OP_DISABLE };

#define MODE_BITS	(MC6_U | MC6_S | MC6_VU | MC6_VS)

/* uninstall/enable/disable(base, mask): every trigger named must be
 * installed (INVALID_PARAM otherwise, and nothing is done). */
static long mask_triggers(struct vcpu *v, unsigned long base, unsigned long mask, enum mask_op op)
{
	for (unsigned long bit = 0; bit < 64; bit++)
		if (mask >> bit & 1 &&
		    (base >= dbtr_host.trig_max || bit >= dbtr_host.trig_max - base ||
		     !(v->dbtr.trig[base + bit].state & SBI_DBTR_TS_MAPPED)))
			return SBI_ERR_INVALID_PARAM;
	/* every bit set is now below trig_max - base */
	for (unsigned long bit = 0; bit < dbtr_host.trig_max; bit++) {
		struct dbtr_trigger *t;
		uint8_t s;

		if (!(mask >> bit & 1))
			continue;
		t = &v->dbtr.trig[base + bit];
		s = t->state;
		if (op == OP_UNINSTALL) {
			*t = (struct dbtr_trigger){ 0 };
		} else if (op == OP_DISABLE) {
			t->tdata1 &= ~MODE_BITS;
		} else {
			t->tdata1 &= ~MODE_BITS;
			t->tdata1 |= (s & SBI_DBTR_TS_U ? MC6_U : 0) | (s & SBI_DBTR_TS_S ? MC6_S : 0) |
				     (s & SBI_DBTR_TS_VU ? MC6_VU : 0) |
				     (s & SBI_DBTR_TS_VS ? MC6_VS : 0);
		}
	}
	if (mask)
		triggers_changed(v);
	return SBI_SUCCESS;
}

static void dbtr_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	unsigned long a0 = VSBI_ARG(v, 0), a1 = VSBI_ARG(v, 1);

	ret->value = 0;
	switch (fid) {
	case SBI_DBTR_NUM_TRIGGERS:
		ret->error = SBI_SUCCESS;
		ret->value = dbtr_num_triggers(a0);
		break;
	case SBI_DBTR_SET_SHMEM:
		ret->error = set_shmem(v, a0, a1, VSBI_ARG(v, 2));
		break;
	case SBI_DBTR_READ_TRIGGERS:
		ret->error = read_triggers(v, a0, a1);
		break;
	case SBI_DBTR_INSTALL_TRIGGERS:
		ret->error = install_triggers(v, a0, &ret->value);
		break;
	case SBI_DBTR_UPDATE_TRIGGERS:
		ret->error = update_triggers(v, a0, &ret->value);
		break;
	case SBI_DBTR_UNINSTALL_TRIGGERS:
		ret->error = mask_triggers(v, a0, a1, OP_UNINSTALL);
		break;
	case SBI_DBTR_ENABLE_TRIGGERS:
		ret->error = mask_triggers(v, a0, a1, OP_ENABLE);
		break;
	case SBI_DBTR_DISABLE_TRIGGERS:
		ret->error = mask_triggers(v, a0, a1, OP_DISABLE);
		break;
	default:
		ret->error = SBI_ERR_NOT_SUPPORTED;
	}
}

const struct vsbi_ext vsbi_dbtr = {
	.name = "dbtr",
	.eid_first = SBI_EXT_DBTR,
	.eid_last = SBI_EXT_DBTR,
	.probe = dbtr_probe,
	.call = dbtr_call,
};
