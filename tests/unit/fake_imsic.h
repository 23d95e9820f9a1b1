/* SPDX-License-Identifier: MIT */
/* A hart's S-level IMSIC interrupt file behind the fake CSR file, by the AIA
 * spec: siselect/sireg reach eidelivery, eithreshold and the eip/eie arrays
 * (RV64: odd array numbers do not exist), stopei reads the top identity and a
 * write claims it, sip.SEIP is "delivery on and a top identity". */
#ifndef UNIT_FAKE_IMSIC_H
#define UNIT_FAKE_IMSIC_H
#include <types.h>

struct fake_imsic {
	uint32_t num_ids;		/* identities 1..num_ids exist */
	uint32_t eidelivery, eithreshold;
	uint64_t eip[32], eie[32];	/* bit i of word w: identity 64 w + i */
	unsigned int bad_select;	/* sireg accesses at a register that does not exist */
	unsigned int claims;		/* stopei writes */
};

extern struct fake_imsic fake_imsic;

/** fake_imsic_install() - a file of @num_ids identities, all clear, hooked
 *  into the fake CSR file (after fake_csr_reset()). */
void fake_imsic_install(uint32_t num_ids);
/** fake_imsic_send() - an MSI of identity @id to the file (a store to its
 *  page): ignored for 0 and above num_ids, as the hardware does. */
void fake_imsic_send(uint32_t id);
/** fake_imsic_top() - the identity stopei would show, 0 if none. */
uint32_t fake_imsic_top(void);
bool fake_imsic_pending(uint32_t id);
bool fake_imsic_enabled(uint32_t id);
#endif
