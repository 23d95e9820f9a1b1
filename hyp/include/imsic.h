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

/** imsic_host_claim() - the top pending and enabled identity of this hart's S
 *  file, claimed (its pending bit cleared) in the same instruction; 0: none. */
uint32_t imsic_host_claim(void);
#endif
