/* SPDX-License-Identifier: MIT */
/* A virtual APLIC: one supervisor-level interrupt domain in MSI delivery mode
 * with sources 1..31, no child domain (AIA spec, AdvPLIC.adoc; hyp/lib/
 * aplic_model.c, docs/design-aia.md 3.10). The register rules and the
 * pending-bit rules of "Precise effects on interrupt-pending bits" for MSI
 * mode; an MSI goes out through the caller's send function whenever the
 * domain's IE, a source's enable and its pending bit are all set.
 *
 * Pure logic: no lock, no VM. The caller serializes calls (the vAPLIC's
 * lock), turns each MSI into an injection (dropping those whose hart index,
 * guest index or EIID name no interrupt file), and keeps the state in a
 * device record (its layout is the snapshot's). */
#ifndef HYP_APLIC_MODEL_H
#define HYP_APLIC_MODEL_H
#include <types.h>

#define APLIC_MODEL_SOURCES	32	/* sources 1..31 */
#define APLIC_MODEL_SRC_MASK	0xfffffffeu	/* source 0 does not exist */
/* target[i] and genmsi as stored: hart index and EIID; guest index (target)
 * and Busy (genmsi) read 0 */
#define APLIC_MODEL_TARGET_MASK	0xfffc07ffu

/* Bit i of pending/enabled/level: source i. */
struct aplic_state {
	uint32_t domaincfg;			/* IE (bit 8) only: DM and 0x80 are read-only */
	uint32_t sourcecfg[APLIC_MODEL_SOURCES];	/* SM 0, 1, 4..7; [0] 0 */
	uint32_t target[APLIC_MODEL_SOURCES];	/* 0 for inactive sources and [0] */
	uint32_t pending, enabled;		/* 0 for inactive sources */
	uint32_t level;				/* each source's wire, as the device drives it */
	uint32_t genmsi;			/* the last extempore MSI's hart index and EIID */
	uint32_t pad;
};
_Static_assert(sizeof(struct aplic_state) == 280, "aplic_state: the snapshot's device record");

/* An MSI: to interrupt file @guest (0: the S file; always 0 here) of the hart
 * with index @hart, identity @eiid; unchecked. */
typedef void (*aplic_send_fn)(void *ctx, uint32_t hart, uint32_t guest, uint32_t eiid);

/** aplic_model_reset() - everything zero: IE off, every source inactive, every
 *  wire low (the devices reset with it). */
void aplic_model_reset(struct aplic_state *s);

/** aplic_model_read() - an aligned 32-bit read at @off in the domain's region:
 *  domaincfg 0x80000000 | DM | IE; sourcecfg and target as stored; setip[0]
 *  the pending bits, setie[0] the enable bits, in_clrip[0] the rectified
 *  inputs; genmsi with Busy 0. Everything else (the *num registers, clrie,
 *  other array words, the MSI address registers, the IDC area, unaligned
 *  offsets) reads 0. */
uint32_t aplic_model_read(const struct aplic_state *s, uint32_t off);

/** aplic_model_write() - an aligned 32-bit write of @val at @off, then every
 *  MSI it makes due goes out through @send (NULL: dropped), lowest source
 *  first, its pending bit cleared. A write to genmsi sends its MSI at once,
 *  whatever IE says. setipnum_be, read-only and unknown offsets: ignored. */
void aplic_model_write(struct aplic_state *s, uint32_t off, uint32_t val,
		       aplic_send_fn send, void *ctx);

/** aplic_model_set_level() - a device drives source @src's wire to @level
 *  (1..31; others ignored): a rising rectified input sets an edge or level
 *  source pending, a low one clears a level source's; then forwarding as
 *  aplic_model_write(). */
void aplic_model_set_level(struct aplic_state *s, uint32_t src, bool level,
			   aplic_send_fn send, void *ctx);

/** aplic_model_check() - NULL if @s is a state a guest could bring the model
 *  to (so a restore may install it), else why not, with the offending field's
 *  byte offset in struct aplic_state in *@offset. Hart indexes and EIIDs are
 *  not judged: a guest may write any. */
const char *aplic_model_check(const struct aplic_state *s, uint32_t *offset);
#endif
