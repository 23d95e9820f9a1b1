/* SPDX-License-Identifier: MIT */
/* An IMSIC interrupt file in software (AIA spec, IMSIC.adoc "Interrupt files
 * and interrupt identities", "Indirectly accessed interrupt-file registers",
 * "Top external interrupt CSRs"): the state of a vCPU's guest file while no
 * hardware file holds it, and the register rules a guest sees through
 * vsiselect/vsireg/vstopei (hyp/lib/imsic_file.c, docs/design-aia.md 3.6).
 *
 * Pure logic: no lock, no VM. @nr_ids is the file's identity count N (the
 * guest DT's riscv,num-ids): 63..2047 with (N & 63) == 63; identities 1..N
 * exist, identity 0 never does. A larger N is taken as 2047, so no call can
 * reach past the arrays. */
#ifndef HYP_IMSIC_FILE_H
#define HYP_IMSIC_FILE_H
#include <types.h>

#define IMSIC_FILE_WORDS	32			/* 2048 identities */
#define IMSIC_FILE_MAX_IDS	(IMSIC_FILE_WORDS * 64 - 1)

/* *iselect values of an interrupt file's registers */
#define IMSIC_ISEL_EIDELIVERY	0x70
#define IMSIC_ISEL_EITHRESHOLD	0x72
#define IMSIC_ISEL_EIP0		0x80			/* eip0..eip63: 0x80..0xBF */
#define IMSIC_ISEL_EIE0		0xC0			/* eie0..eie63: 0xC0..0xFF */
#define IMSIC_ISEL_FIRST	0x70
#define IMSIC_ISEL_LAST		0xFF

#define IMSIC_TOPEI_ID_SHIFT	16			/* *topei: identity in 26:16, priority in 10:0 */

/* bit i of eip[w] / eie[w]: identity 64 w + i (RV64's eip2w / eie2w) */
struct imsic_file {
	uint32_t eidelivery, eithreshold;
	uint64_t eip[IMSIC_FILE_WORDS], eie[IMSIC_FILE_WORDS];
};

/** imsic_file_reset() - all zero: delivery off, no threshold, nothing pending
 *  or enabled. */
void imsic_file_reset(struct imsic_file *f);

/** imsic_word_mask() - the bits of array word @w (identities 64 w..64 w + 63)
 *  that exist in a file of @nr_ids identities: never identity 0, none above
 *  @nr_ids. The others are read-only zeros. */
uint64_t imsic_word_mask(uint32_t nr_ids, uint32_t w);

/** imsic_topei() - the file's top interrupt: the lowest identity (the highest
 *  priority) that is pending and enabled, exists, and is below eithreshold
 *  when eithreshold is not 0; 0 if none. eidelivery plays no part. */
uint32_t imsic_topei(const struct imsic_file *f, uint32_t nr_ids);

/** imsic_signal() - the file's interrupt signal (hgeip bit / VSEIP):
 *  eidelivery is 1 and there is a top interrupt. */
bool imsic_signal(const struct imsic_file *f, uint32_t nr_ids);

/** imsic_topei_csr() - what a read of *topei returns: (id << 16) | id for the
 *  top identity (its priority is its number), 0 if none. */
uint64_t imsic_topei_csr(const struct imsic_file *f, uint32_t nr_ids);

/** imsic_claim() - a write to *topei: clears the top identity's pending bit
 *  (whatever value was written) and returns that identity; 0 and no change if
 *  there is none. A csrrw's read half is the value before this call. */
uint32_t imsic_claim(struct imsic_file *f, uint32_t nr_ids);

/** imsic_set_pending() - an MSI of identity @id reaches the file (a store to
 *  its page): sets the pending bit; ignores 0 and identities above @nr_ids,
 *  as a hardware file does. Returns true iff imsic_signal() went from false
 *  to true, the only case in which the vCPU needs a kick. */
bool imsic_set_pending(struct imsic_file *f, uint32_t nr_ids, uint32_t id);

/** imsic_rmw() - a CSR instruction's access to *ireg with *iselect = @isel:
 *  stores the register's value before the access in *@old (if @old is not
 *  NULL), then writes (old & ~@wmask) | (@val & @wmask), legalized: eidelivery
 *  keeps bit 0; eithreshold keeps a value up to @nr_ids, a larger one becomes
 *  0 (WLRL: either is allowed, and both let every identity through); bits of
 *  no identity stay 0. A pure read is @wmask 0 and writes nothing. Registers 0x71 and 0x73..0x7F
 *  read 0 and ignore writes. Returns 0, or -HYP_EINVAL (nothing read or
 *  written) for an odd eip/eie number (RV64 has none) or @isel outside
 *  0x70..0xFF: the caller raises an illegal or virtual instruction. */
int imsic_rmw(struct imsic_file *f, uint32_t nr_ids, uint64_t isel, uint64_t *old,
	      uint64_t val, uint64_t wmask);
#endif
