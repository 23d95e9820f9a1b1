/* SPDX-License-Identifier: MIT */
/* The host's IMSIC (AIA spec, "Incoming MSI Controller"): what the host DT
 * says about its supervisor-level interrupt files, and Carapace's own S file
 * on each hart (hyp/drivers/imsic_host.c, docs/design-aia.md 2.1, 2.2). */
#ifndef HYP_IMSIC_H
#define HYP_IMSIC_H
#include <types.h>

#define IMSIC_FILE_SIZE		0x1000ull	/* one interrupt file: one 4 KiB page */
#define IMSIC_MIN_IDS		63		/* riscv,num-ids: 63..2047, (n & 63) == 63 */
#define IMSIC_MAX_IDS		2047
#define IMSIC_MAX_GUEST_BITS	6		/* riscv,guest-index-bits: 0..6 */
#define IMSIC_MAX_FILES		7		/* guest files per hart Carapace would use */
#define IMSIC_NO_HART		UINT32_MAX
/* Identity 1 of every hart's S file: host IPIs, where they go through the
 * IMSIC (host_ipi.h; docs/design-aia.md 2.5). The highest priority there is,
 * never a device's (those are HOST_IRQ_EIID_BASE and up). */
#define HOST_IPI_EIID		1

/* The S-level IMSIC node: one register range (one group) holding each hart's
 * S file, followed by its guest files, at a stride of 4 KiB << guest_bits. */
struct imsic_host_desc {
	bool present;
	uint64_t base, size;		/* reg */
	uint32_t num_ids;		/* riscv,num-ids */
	uint32_t guest_ids;		/* riscv,num-guest-ids, else num_ids */
	uint32_t guest_bits;		/* riscv,guest-index-bits, else 0 */
	uint32_t phandle;
};

/** imsic_s_file_pa() - the S file of the hart at position @pos of the node's
 *  interrupts-extended (its hart index in an APLIC target). */
static inline uint64_t imsic_s_file_pa(const struct imsic_host_desc *d, uint32_t pos)
{
	return d->base + ((uint64_t)pos * IMSIC_FILE_SIZE << d->guest_bits);
}

/** imsic_host_hart_init() - this hart's S file, through siselect/sireg:
 *  delivery off, every identity (1..@num_ids) disabled and not pending,
 *  threshold 0; then delivery on if @deliver. Needs Ssaia. */
void imsic_host_hart_init(uint32_t num_ids, bool deliver);

/** imsic_host_enable() - let identity @id (1..num_ids) of this hart's S file
 *  interrupt (its eie bit). */
void imsic_host_enable(uint32_t id);

/** imsic_host_disable() - the reverse: @id stays pending but cannot interrupt. */
void imsic_host_disable(uint32_t id);

/** imsic_host_pending() - true if identity @id of this hart's S file is
 *  pending (enabled or not). */
bool imsic_host_pending(uint32_t id);

/** imsic_host_set_pending() - make @id pending in this hart's S file, as an
 *  MSI to it would (through sireg: no store to its page). */
void imsic_host_set_pending(uint32_t id);

/** imsic_host_claim() - the top pending and enabled identity of this hart's S
 *  file, claimed (its pending bit cleared) in the same instruction; 0: none. */
uint32_t imsic_host_claim(void);

/** imsic_host_claim_top() - claim the top identity only if it is @id (the
 *  highest priority one there is, HOST_IPI_EIID: nothing can overtake it
 *  between the read and the claim); true if it was claimed. */
bool imsic_host_claim_top(uint32_t id);

/* Guest interrupt files (docs/design-aia.md 2.2, 3.7). A hart's guest file f
 * is the page f after its S file; the files Carapace uses are 1..the hart's
 * usable count, and only their pages may ever enter a G-stage table. */
struct imsic_file;

/** imsic_gfiles_setup() - record hart @hart's (the harts[] index) guest
 *  files: its S file is at position @pos of @d (IMSIC_NO_HART: none), the
 *  CPU implements @geilen. Usable: min(@geilen, 2^guest_bits - 1,
 *  IMSIC_MAX_FILES), each page inside the node's reg. Returns that count. */
unsigned int imsic_gfiles_setup(unsigned int hart, const struct imsic_host_desc *d,
				uint32_t pos, unsigned int geilen);
/** imsic_gfiles_nr() - hart @hart's usable guest files (0: none, or never set up). */
unsigned int imsic_gfiles_nr(unsigned int hart);
/** gfile_pa() - the page of guest file @f of hart @hart; 0 unless @f is one of
 *  its usable files. */
uint64_t gfile_pa(unsigned int hart, unsigned int f);

/** imsic_gfile_send() - an MSI of identity @id to guest file @f of hart
 *  @hart: one 32-bit store to its page (seteipnum_le), from any hart, then a
 *  fence so it has reached the file before the caller goes on. Nothing for a
 *  file that is not one of the hart's usable ones. */
void imsic_gfile_send(unsigned int hart, unsigned int f, uint32_t id);

/* The three below reach guest file @f (1..this hart's usable count) of this
 * hart through vsiselect/vsireg with hstatus.VGEIN = @f, and put both CSRs
 * back as they found them (another vCPU may be loaded here). @nr_ids: the
 * file's identities (the host's guest_ids); words above them are not
 * touched. Interrupts off. An @f of 0 or above IMSIC_MAX_FILES does nothing
 * (read_clear then gives an all-zero file). */

/** imsic_gfile_read_clear() - read the file into @out and leave it zero:
 *  eidelivery first (it stops signalling), then eithreshold, then every
 *  eip/eie word, each swapped with 0 in one instruction. Stores to the page
 *  must have stopped (its leaf cleared and flushed) or a late one stays in
 *  the file. */
void imsic_gfile_read_clear(unsigned int f, uint32_t nr_ids, struct imsic_file *out);
/** imsic_gfile_zero() - clear the file: eidelivery first, then every eip/eie
 *  word, then eithreshold (anything a previous owner left goes). */
void imsic_gfile_zero(unsigned int f, uint32_t nr_ids);
/** imsic_gfile_load() - load @in into a zeroed file: eip words OR-ed in (a
 *  bit already set stays), then eie words, eithreshold, and eidelivery last,
 *  so the file signals only once it is whole. */
void imsic_gfile_load(unsigned int f, uint32_t nr_ids, const struct imsic_file *in);
#endif
