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

/* Result of one SBI call. The dispatcher writes error/value to a0/a1 and
 * advances sepc, unless the handler chose another action. */
struct vsbi_ret {
	long error;		/* SBI_SUCCESS or SBI_ERR_* */
	unsigned long value;
	enum exit_action action;	/* EXIT_RESUME_NEXT unless the call does not return */
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

extern const struct vsbi_ext vsbi_base, vsbi_time, vsbi_ipi, vsbi_rfence, vsbi_hsm,
	vsbi_srst, vsbi_dbcn, vsbi_fwft, vsbi_debug, vsbi_susp;

/** vsbi_hsm_suspend() - @v waits, consuming no host CPU, until an interrupt it
 *  enabled in sie is pending; if @nonret it then restarts at @addr in S-mode
 *  with a0 = hart id, a1 = @opaque, satp = 0, SIE = 0. HSM hart_suspend and
 *  SUSP system_suspend share it. */
void vsbi_hsm_suspend(struct vcpu *v, bool nonret, unsigned long addr, unsigned long opaque);
extern const struct vsbi_ext vsbi_pmu;
extern const struct vsbi_ext vsbi_sta;
/** vsbi_vm_init() - evaluate each extension's probe for @vm once. */
void vsbi_vm_init(struct vm *vm);
/** vsbi_dispatch() - the VS ecall exit. */
enum exit_action vsbi_dispatch(struct vcpu *v);
/** vsbi_find() - the extension serving @eid for @vm, or NULL. */
const struct vsbi_ext *vsbi_find(const struct vm *vm, unsigned long eid);
bool vsbi_registry_check(void);

#define VSBI_ARG(v, n) ((v)->g.ctx.gpr[10 + (n)])
#endif
