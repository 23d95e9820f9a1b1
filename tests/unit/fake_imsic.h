/* SPDX-License-Identifier: MIT */
/* A hart's IMSIC behind the fake CSR file, by the AIA spec: its S-level
 * interrupt file, and optionally GEILEN guest interrupt files.
 * - S file: siselect/sireg reach eidelivery, eithreshold and the eip/eie
 *   arrays (RV64: odd array numbers do not exist), stopei reads the top
 *   identity and a write claims it, sip.SEIP is "delivery on and a top
 *   identity".
 * - Guest files (fake_imsic_install_guests()): vsiselect/vsireg/vstopei reach
 *   the file hstatus.VGEIN names, as HS-mode code sees them; an access with
 *   VGEIN 0 or above GEILEN is counted (the hardware raises an illegal
 *   instruction). hgeip bit f is file f's signal (read-only), hgeie keeps
 *   bits 1..GEILEN, hip.VSEIP is hvip.VSEIP or hgeip[VGEIN], hip.SGEIP is
 *   hgeip & hgeie. */
#ifndef UNIT_FAKE_IMSIC_H
#define UNIT_FAKE_IMSIC_H
#include <types.h>

#define FAKE_IMSIC_MAX_GEILEN	7

struct fake_imsic_file {
	uint32_t eidelivery, eithreshold;
	uint64_t eip[32], eie[32];	/* bit i of word w: identity 64 w + i */
};

struct fake_imsic {
	uint32_t num_ids;		/* S file: identities 1..num_ids exist */
	union {				/* the S file, as .s or field by field */
		struct fake_imsic_file s;
		struct {
			uint32_t eidelivery, eithreshold;
			uint64_t eip[32], eie[32];
		};
	};
	uint32_t geilen;		/* guest files 1..geilen */
	uint32_t guest_ids;		/* identities of each guest file */
	struct fake_imsic_file g[FAKE_IMSIC_MAX_GEILEN + 1];	/* g[f]: guest file f; g[0] unused */
	unsigned int bad_select;	/* *ireg accesses at a register that does not exist */
	unsigned int bad_vgein;		/* vsireg/vstopei with VGEIN no guest file, or such a VGEIN written */
	unsigned int claims;		/* stopei writes */
	unsigned int vclaims;		/* vstopei writes */
	/* vsireg writes (csrw/csrrw/csrs/csrc), in order: VGEIN << 16 | vsiselect */
	uint32_t vs_trace[256];
	unsigned int vs_writes;
};

extern struct fake_imsic fake_imsic;

/** fake_imsic_install() - a file of @num_ids identities, all clear, hooked
 *  into the fake CSR file (after fake_csr_reset()); no guest files. */
void fake_imsic_install(uint32_t num_ids);
/** fake_imsic_install_guests() - then @geilen guest files (up to
 *  FAKE_IMSIC_MAX_GEILEN) of @guest_ids identities each, all clear, and the
 *  H-extension CSRs that show them. */
void fake_imsic_install_guests(uint32_t geilen, uint32_t guest_ids);
/** fake_imsic_send() - an MSI of identity @id to the file (a store to its
 *  page): ignored for 0 and above num_ids, as the hardware does. */
void fake_imsic_send(uint32_t id);
/** fake_imsic_gsend() - the same to guest file @f (ignored if no such file). */
void fake_imsic_gsend(uint32_t f, uint32_t id);
/** fake_imsic_top() - the identity stopei would show, 0 if none. */
uint32_t fake_imsic_top(void);
/** fake_imsic_gtop() - the identity vstopei would show with VGEIN = @f. */
uint32_t fake_imsic_gtop(uint32_t f);
bool fake_imsic_pending(uint32_t id);
bool fake_imsic_enabled(uint32_t id);
#endif
