/* SPDX-License-Identifier: MIT */
/* The SBI FWFT features a vCPU has (hyp/state/fwft.c): one table entry each. */
#ifndef HYP_FWFT_H
#define HYP_FWFT_H
#include <types.h>

struct vcpu;

/* One feature, the shape of OpenSBI's sbi_fwft.c and KVM's vcpu_sbi_fwft.c.
 * The SBI call around the table (function IDs, DENIED vs NOT_SUPPORTED,
 * flags, the value range, LOCK) is hyp/vsbi/vsbi_fwft.c. */
struct fwft_feature {
	uint32_t id;		/* SBI_FWFT_* */
	/** supported() - optional: may @v use the feature? (NOT_SUPPORTED if not) */
	bool (*supported)(const struct vcpu *v);
	/** set() - give the feature @value (0 or 1, checked by the caller, lock
	 *  too); the vCPU is loaded. SBI_SUCCESS or an SBI_ERR_* refusal. */
	long (*set)(struct vcpu *v, unsigned long value);
	/** get() - the feature's current value. */
	unsigned long (*get)(const struct vcpu *v);
	/** reset() - the value at vCPU reset (the lock is cleared by the caller). */
	void (*reset)(struct vcpu *v);
	/** lock() - where the feature's LOCK flag lives (guest state, 0 or 1). */
	uint8_t *(*lock)(struct vcpu *v);
};

/** fwft_feature() - the table entry of feature @id, or NULL if not implemented. */
const struct fwft_feature *fwft_feature(uint32_t id);
/** fwft_vcpu_reset() - every feature to its reset value, unlocked (vcpu_reset()). */
void fwft_vcpu_reset(struct vcpu *v);
#endif
