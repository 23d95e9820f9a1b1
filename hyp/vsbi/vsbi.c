/* SPDX-License-Identifier: MIT */
/* SBI dispatch: registry lookup, the only place a0/a1 and sepc are written. */
#include <vsbi.h>
#include <vm.h>

/* Ordered by how often guests call them. */
static const struct vsbi_ext *const registry[] = {
	&vsbi_time, &vsbi_ipi, &vsbi_rfence, &vsbi_dbcn, &vsbi_hsm,
	&vsbi_base, &vsbi_fwft, &vsbi_srst,
};

const struct vsbi_ext *vsbi_find(const struct vm *vm, unsigned long eid)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(registry); i++) {
		const struct vsbi_ext *e = registry[i];

		if (eid >= e->eid_first && eid <= e->eid_last)
			return !e->probe || e->probe(vm) ? e : NULL;
	}
	return NULL;
}

long vsbi_hart_mask(unsigned int nr_vcpus, unsigned long mask, unsigned long base,
		    unsigned long *out)
{
	unsigned long bits = 0;

	if (base == -1UL) {	/* all harts; the mask is ignored */
		*out = nr_vcpus >= 64 ? ~0UL : (1UL << nr_vcpus) - 1;
		return SBI_SUCCESS;
	}
	for (unsigned int i = 0; mask; i++, mask >>= 1) {
		if (!(mask & 1))
			continue;
		if (base + i < base || base + i >= nr_vcpus)
			return SBI_ERR_INVALID_PARAM;
		bits |= 1UL << (base + i);
	}
	*out = bits;
	return SBI_SUCCESS;
}

enum exit_action vsbi_dispatch(struct vcpu *v)
{
	unsigned long eid = VSBI_ARG(v, 7), fid = VSBI_ARG(v, 6);
	const struct vsbi_ext *e = vsbi_find(v->vm, eid);
	struct vsbi_ret ret = { SBI_ERR_NOT_SUPPORTED, 0, EXIT_RESUME_NEXT };

	v->stats.sbi_calls++;
	v->vm->stats.sbi_calls++;
	if (e)
		e->call(v, fid, &ret);
	if (ret.action == EXIT_RESUME_NEXT || ret.action == EXIT_YIELD) {
		VSBI_ARG(v, 0) = (unsigned long)ret.error;
		VSBI_ARG(v, 1) = ret.value;
		v->ctx.sepc += 4;
		return ret.action == EXIT_YIELD ? EXIT_YIELD : EXIT_RESUME_SAME;
	}
	return ret.action;
}
