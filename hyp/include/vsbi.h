/* SPDX-License-Identifier: MIT */
/* The SBI implementation guests see: a registry of one descriptor per extension. */
#ifndef HYP_VSBI_H
#define HYP_VSBI_H
#include <types.h>
#include <exit_action.h>
#include <abi/sbi_defs.h>

struct vcpu;
struct vm;

/* 3.0: Linux uses FWFT only from 3.0 on (docs/cfi.md §9.12) */
#define VSBI_SPEC_VERSION	SBI_SPEC_VERSION(3, 0)

/* Result of one SBI call. The dispatcher writes error/value to a0/a1 and its
 * verdict moves the pc past the ecall, unless the call does not return (the VM
 * stopped) or is to be made again. */
struct vsbi_ret {
	long error;		/* SBI_SUCCESS or SBI_ERR_* */
	unsigned long value;
	/* EXIT_RESUME: the call returns; EXIT_YIELD: it returns, then the vCPU
	 * gives the hart away; EXIT_VM_STOP: it never returns */
	enum exit_action action;
	bool again;		/* not made yet: nothing returned, the guest makes it again */
};

struct vsbi_ext {
	const char *name;
	unsigned long eid_first, eid_last;
	/** probe() - optional: is the extension available to this VM? (default yes) */
	bool (*probe)(const struct vm *vm);
	/** call() - handle function @fid; fills @ret. Arguments are in v->g.ctx.gpr[10..15]
	 *  and are validated here, at the boundary, before any use. */
	void (*call)(struct vcpu *v, unsigned long fid, struct vsbi_ret *ret);
};

/* The one table of the SBI extensions guests see: X(NAME) for the descriptor
 * `const struct vsbi_ext vsbi_NAME` its file defines (vsbi_NAME.c; BASE in
 * vsbi.c). The registry and the dispatcher's lookup are built from it alone
 * (vsbi_init()); tests/unit/test_vsbi.c checks that every extension
 * docs/sbi.md promises is in it and that none collides in the lookup. */
#define VSBI_EXTENSIONS(X)                                                   \
	X(base) X(time) X(ipi) X(rfence) X(hsm) X(srst) X(dbcn) X(fwft)     \
	X(susp) X(pmu) X(sta) X(dbtr) X(debug)
#define VSBI_DECLARE(name) extern const struct vsbi_ext vsbi_##name;
VSBI_EXTENSIONS(VSBI_DECLARE)
#undef VSBI_DECLARE

/* The snapshot record hooks of the state these extensions own (HSM and
 * SUSP: the HSM record; STA: the STA record), which the snap layer reads
 * (hyp/snap/snap_state.c; hyp/include/snap_table.h). */
struct snap_record_ops;
extern const struct snap_record_ops vsbi_hsm_record, vsbi_sta_record;

/** vsbi_hsm_suspend() - @v waits, consuming no host CPU, until an interrupt it
 *  enabled in sie is pending; if @nonret it then restarts at @addr in S-mode
 *  with a0 = hart id, a1 = @opaque, satp = 0, SIE = 0. HSM hart_suspend and
 *  SUSP system_suspend share it. */
void vsbi_hsm_suspend(struct vcpu *v, bool nonret, unsigned long addr, unsigned long opaque);
/* Slots of the dispatcher's lookup: an extension's slot is the top 5 bits
 * of the low 32 bits of its EID times VSBI_HASH_MUL, a multiplier that keeps
 * the table's EIDs apart and those of the standard extensions it may gain
 * (DBTR, SSE, MPXY, CPPC, NACL; test_vsbi.c checks both). Three
 * instructions (lui, mulw, srliw) where a modulo by a constant is one slow
 * remu or, as GCC 15+ expands it, a dozen instructions on the SBI path. */
#define VSBI_SLOTS	32
#define VSBI_HASH_MUL	0x8d000u
static inline unsigned int vsbi_slot(unsigned long eid)
{
	return ((uint32_t)eid * VSBI_HASH_MUL) >> 27;
}
/** vsbi_lookup_build() - fill @slots (VSBI_SLOTS entries) from the @n extensions
 *  @exts; false if one owns more than one EID or two share a slot. */
bool vsbi_lookup_build(const struct vsbi_ext *const *exts, unsigned int n,
		       const struct vsbi_ext **slots);
/** vsbi_init() - boot: build the dispatcher's lookup from VSBI_EXTENSIONS;
 *  false if the table does not fit it (see vsbi_lookup_build()). */
bool vsbi_init(void);
/** vsbi_vm_init() - evaluate each extension's probe for @vm once. */
void vsbi_vm_init(struct vm *vm);
/** vsbi_dispatch() - the VS ecall exit: a0/a1 written, the pc stepped past the
 *  ecall (4) when the call returns. */
struct exit_verdict vsbi_dispatch(struct vcpu *v);
/** vsbi_find() - the extension serving @eid for @vm, or NULL. */
const struct vsbi_ext *vsbi_find(const struct vm *vm, unsigned long eid);

#define VSBI_ARG(v, n) ((v)->g.ctx.gpr[10 + (n)])
#endif
