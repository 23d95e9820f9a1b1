/* SPDX-License-Identifier: MIT */
/* The SBI FWFT features a vCPU has (hyp/state/fwft.c): one table entry each. */
#ifndef HYP_FWFT_H
#define HYP_FWFT_H
#include <types.h>

struct vcpu;

/* One feature, the shape of OpenSBI's sbi_fwft.c and KVM's vcpu_sbi_fwft.c:
 * a 0/1 switch, 0 at reset (1 if inverted), whose value and LOCK flag are bytes of the vCPU's
 * guest state (struct vcpu_guest). The SBI call around the table (function
 * IDs, DENIED vs NOT_SUPPORTED, flags, the value range, LOCK) is
 * hyp/vsbi/vsbi_fwft.c. */
struct fwft_feature {
	uint32_t id;		/* SBI_FWFT_* */
	bool inverted;		/* the byte holds 1 - value: its reset value is 1 */
	uint16_t value_at;	/* offset of its value byte in struct vcpu_guest */
	uint16_t lock_at;	/* offset of its LOCK flag in struct vcpu_guest */
	/** supported() - optional: may @v use the feature? (NOT_SUPPORTED if not) */
	bool (*supported)(const struct vcpu *v);
	/** apply() - optional: make the loaded vCPU follow the value just stored. */
	void (*apply)(struct vcpu *v);
};

/** fwft_feature() - the table entry of feature @id, or NULL if not implemented. */
const struct fwft_feature *fwft_feature(uint32_t id);
/** fwft_feature_set() - give @f @value (0 or 1, checked by the caller, lock
 *  too); the vCPU is loaded. SBI_SUCCESS or an SBI_ERR_* refusal. */
long fwft_feature_set(struct vcpu *v, const struct fwft_feature *f, unsigned long value);
/** fwft_feature_get() - @f's current value. */
unsigned long fwft_feature_get(const struct vcpu *v, const struct fwft_feature *f);
/** fwft_feature_lock() - @f's LOCK flag (guest state, 0 or 1). */
uint8_t *fwft_feature_lock(struct vcpu *v, const struct fwft_feature *f);
/** fwft_vcpu_reset() - every feature to its reset value, unlocked (vcpu_reset()). */
void fwft_vcpu_reset(struct vcpu *v);
#endif
