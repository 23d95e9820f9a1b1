/* SPDX-License-Identifier: MIT */
/* SBI dispatch: the registry (VSBI_EXTENSIONS) and the lookup built from it,
 * the only place a0/a1 are written; and BASE, the extension that describes
 * the registry (probe_extension asks it), so it lives with it. */
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

#define VSBI_ENTRY(name) &vsbi_##name,
static const struct vsbi_ext *const registry[] = { VSBI_EXTENSIONS(VSBI_ENTRY) };
#undef VSBI_ENTRY

/* The dispatcher's lookup, derived from the registry at boot (vsbi_init()):
 * every extension owns exactly one EID and vsbi_slot() differs for all of
 * them, so one hash and one compare find the handler on every call. */
static const struct vsbi_ext *by_slot[VSBI_SLOTS];

bool vsbi_lookup_build(const struct vsbi_ext *const *exts, unsigned int n,
		       const struct vsbi_ext **slots)
{
	for (unsigned int i = 0; i < VSBI_SLOTS; i++)
		slots[i] = NULL;
	for (unsigned int i = 0; i < n; i++) {
		const struct vsbi_ext *e = exts[i];
		unsigned long slot = vsbi_slot(e->eid_first);

		if (e->eid_first != e->eid_last || slots[slot])
			return false;
		slots[slot] = e;
	}
	return true;
}

bool vsbi_init(void)
{
	return vsbi_lookup_build(registry, ARRAY_SIZE(registry), by_slot);
}

static inline const struct vsbi_ext *lookup(unsigned long eid)
{
	const struct vsbi_ext *e = by_slot[vsbi_slot(eid)];

	return e && e->eid_first == eid ? e : NULL;
}

const struct vsbi_ext *vsbi_find(const struct vm *vm, unsigned long eid)
{
	const struct vsbi_ext *e = lookup(eid);

	/* the same answer the dispatcher gives: probes were run at VM creation */
	return e && !(vm->sbi_hidden & (1U << (vsbi_slot(eid)))) ? e : NULL;
}

void vsbi_vm_init(struct vm *vm)
{
	vm->sbi_hidden = 0;
	for (unsigned int i = 0; i < VSBI_SLOTS; i++)
		if (by_slot[i] && by_slot[i]->probe && !by_slot[i]->probe(vm))
			vm->sbi_hidden |= 1U << i;
}

struct exit_verdict vsbi_dispatch(struct vcpu *v)
{
	unsigned long eid = VSBI_ARG(v, 7), fid = VSBI_ARG(v, 6);
	const struct vsbi_ext *e = lookup(eid);
	struct vsbi_ret ret = { .error = SBI_ERR_NOT_SUPPORTED, .action = EXIT_RESUME };

	/* extensions this VM may not see were worked out once, at creation */
	if (e && !(v->vm->sbi_hidden & (1U << (vsbi_slot(eid)))))
		e->call(v, fid, &ret);
	if (__builtin_expect(ret.again, 0) || ret.action == EXIT_VM_STOP)
		return exit_stay((int)ret.action);
	VSBI_ARG(v, 0) = (unsigned long)ret.error;
	VSBI_ARG(v, 1) = ret.value;
	return (struct exit_verdict){ (int)ret.action, 4 };	/* past the ecall */
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
