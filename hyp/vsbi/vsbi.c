/* SPDX-License-Identifier: MIT */
/* SBI dispatch: registry lookup, the only place a0/a1 and sepc are written;
 * and BASE, the extension that describes the registry (probe_extension asks
 * it), so it lives with it. */
#include <abi/sbi_sta.h>
#include <vsbi.h>
#include <vm.h>

static void base_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret);

const struct vsbi_ext vsbi_base = {
	.name = "base",
	.eid_first = SBI_EXT_BASE,
	.eid_last = SBI_EXT_BASE,
	.call = base_call,
};

/* Ordered by how often guests call them. */
static const struct vsbi_ext *const registry[] = {
	&vsbi_time, &vsbi_ipi, &vsbi_rfence, &vsbi_dbcn, &vsbi_hsm,
	&vsbi_base, &vsbi_fwft, &vsbi_srst, &vsbi_susp, &vsbi_pmu, &vsbi_debug,
	&vsbi_sta,
};

/* Every extension here owns exactly one EID, and EID % 27 differs for all of
 * them (27 is the smallest modulus that also keeps STA and PMU apart): one
 * division and one compare find the handler on every SBI call.
 * (-Woverride-init would flag a collision; vsbi_registry_check() re-checks.) */
#define VSBI_SLOTS 27
static const struct vsbi_ext *const by_slot[VSBI_SLOTS] = {
	[SBI_EXT_TIME % VSBI_SLOTS] = &vsbi_time,
	[SBI_EXT_IPI % VSBI_SLOTS] = &vsbi_ipi,
	[SBI_EXT_RFENCE % VSBI_SLOTS] = &vsbi_rfence,
	[SBI_EXT_DBCN % VSBI_SLOTS] = &vsbi_dbcn,
	[SBI_EXT_HSM % VSBI_SLOTS] = &vsbi_hsm,
	[SBI_EXT_BASE % VSBI_SLOTS] = &vsbi_base,
	[SBI_EXT_FWFT % VSBI_SLOTS] = &vsbi_fwft,
	[SBI_EXT_SRST % VSBI_SLOTS] = &vsbi_srst,
	[SBI_EXT_SUSP % VSBI_SLOTS] = &vsbi_susp,
	[SBI_EXT_PMU % VSBI_SLOTS] = &vsbi_pmu,
	[SBI_EXT_STA % VSBI_SLOTS] = &vsbi_sta,
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
		v->g.ctx.sepc += 4;
		return ret.action == EXIT_YIELD ? EXIT_YIELD : EXIT_RESUME_SAME;
	}
	return ret.action;
}

static void base_call(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret)
{
	ret->error = SBI_SUCCESS;
	switch (fid) {
	case SBI_BASE_GET_SPEC_VERSION:
		ret->value = VSBI_SPEC_VERSION;
		break;
	case SBI_BASE_GET_IMPL_ID:
		ret->value = CARAPACE_SBI_IMPL_ID;
		break;
	case SBI_BASE_GET_IMPL_VERSION:
		ret->value = CARAPACE_SBI_IMPL_VERSION;
		break;
	case SBI_BASE_PROBE_EXT:
		ret->value = vsbi_find(v->vm, VSBI_ARG(v, 0)) ? 1 : 0;
		break;
	case SBI_BASE_GET_MVENDORID:
	case SBI_BASE_GET_MARCHID:
	case SBI_BASE_GET_MIMPID:
		ret->value = 0;	/* a virtual CPU: no vendor, architecture or implementation id */
		break;
	default:
		ret->error = SBI_ERR_NOT_SUPPORTED;
	}
}
