/* SPDX-License-Identifier: MIT */
/* SBI dispatch: registry lookup, the only place a0/a1 and sepc are written. */
#include <vsbi.h>
#include <vm.h>

/* Ordered by how often guests call them. */
static const struct vsbi_ext *const registry[] = {
	&vsbi_time, &vsbi_ipi, &vsbi_rfence, &vsbi_dbcn, &vsbi_hsm,
	&vsbi_base, &vsbi_fwft, &vsbi_srst, &vsbi_debug,
};

/* Every extension here owns exactly one EID, and EID % 9 differs for all of
 * them (9 extensions, 9 slots): one division and one compare find the handler on every SBI call.
 * (-Woverride-init would flag a collision; vsbi_registry_check() re-checks.) */
#define VSBI_SLOTS 9
static const struct vsbi_ext *const by_slot[VSBI_SLOTS] = {
	[SBI_EXT_TIME % VSBI_SLOTS] = &vsbi_time,
	[SBI_EXT_IPI % VSBI_SLOTS] = &vsbi_ipi,
	[SBI_EXT_RFENCE % VSBI_SLOTS] = &vsbi_rfence,
	[SBI_EXT_DBCN % VSBI_SLOTS] = &vsbi_dbcn,
	[SBI_EXT_HSM % VSBI_SLOTS] = &vsbi_hsm,
	[SBI_EXT_BASE % VSBI_SLOTS] = &vsbi_base,
	[SBI_EXT_FWFT % VSBI_SLOTS] = &vsbi_fwft,
	[SBI_EXT_SRST % VSBI_SLOTS] = &vsbi_srst,
	[SBI_EXT_CARAPACE_DEBUG % VSBI_SLOTS] = &vsbi_debug,
};

static inline const struct vsbi_ext *lookup(unsigned long eid)
{
	const struct vsbi_ext *e = by_slot[eid % VSBI_SLOTS];

	return e && e->eid_first == eid ? e : NULL;
}

const struct vsbi_ext *vsbi_find(const struct vm *vm, unsigned long eid)
{
	const struct vsbi_ext *e = lookup(eid);

	/* the same answer the dispatcher gives: probes were run at VM creation */
	return e && !(vm->sbi_hidden & (1U << (eid % VSBI_SLOTS))) ? e : NULL;
}

/** vsbi_registry_check() - the switch above serves exactly the registry. */
bool vsbi_registry_check(void)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(registry); i++)
		if (lookup(registry[i]->eid_first) != registry[i] ||
		    registry[i]->eid_first != registry[i]->eid_last)
			return false;
	return true;
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

void vsbi_vm_init(struct vm *vm)
{
	vm->sbi_hidden = 0;
	for (unsigned int i = 0; i < VSBI_SLOTS; i++)
		if (by_slot[i] && by_slot[i]->probe && !by_slot[i]->probe(vm))
			vm->sbi_hidden |= 1U << i;
}

enum exit_action vsbi_dispatch(struct vcpu *v)
{
	unsigned long eid = VSBI_ARG(v, 7), fid = VSBI_ARG(v, 6);
	const struct vsbi_ext *e = lookup(eid);
	struct vsbi_ret ret = { .error = SBI_ERR_NOT_SUPPORTED, .action = EXIT_RESUME_NEXT };

	/* extensions this VM may not see were worked out once, at creation */
	if (e && !(v->vm->sbi_hidden & (1U << (eid % VSBI_SLOTS))))
		e->call(v, fid, &ret);
	if (ret.action == EXIT_RESUME_NEXT || ret.action == EXIT_YIELD) {
		VSBI_ARG(v, 0) = (unsigned long)ret.error;
		VSBI_ARG(v, 1) = ret.value;
		v->ctx.sepc += 4;
		return ret.action == EXIT_YIELD ? EXIT_YIELD : EXIT_RESUME_SAME;
	}
	return ret.action;
}
