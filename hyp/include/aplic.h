/* SPDX-License-Identifier: MIT */
/* The host's APLIC, supervisor-level domain in MSI delivery mode (AIA spec,
 * "Advanced Platform-Level Interrupt Controller"): what the host DT says about
 * it and its registers (hyp/drivers/aplic_host.c, docs/design-aia.md 2.3). */
#ifndef HYP_APLIC_H
#define HYP_APLIC_H
#include <types.h>

#define APLIC_MAX_SOURCES	1024	/* sources 1..1023 */
#define APLIC_MIN_SIZE		0x4000	/* reg covers every register of an MSI-mode domain */

/* Register offsets from the domain's base (AdvPLIC.adoc, "Memory-mapped
 * control region for an interrupt domain"); k: word 0..31 of a bit array */
#define APLIC_DOMAINCFG		0x0000
#define APLIC_SOURCECFG(i)	(4ull * (i))		/* i: 1..1023 */
#define APLIC_MMSIADDRCFG	0x1bc0	/* ..0x1bcc: the four MSI address registers (M domains) */
#define APLIC_SMSIADDRCFGH	0x1bcc
#define APLIC_SETIP(k)		(0x1c00ull + 4ull * (k))
#define APLIC_SETIPNUM		0x1cdc
#define APLIC_IN_CLRIP(k)	(0x1d00ull + 4ull * (k))
#define APLIC_CLRIPNUM		0x1ddc
#define APLIC_SETIE(k)		(0x1e00ull + 4ull * (k))
#define APLIC_SETIENUM		0x1edc
#define APLIC_CLRIE(k)		(0x1f00ull + 4ull * (k))
#define APLIC_CLRIENUM		0x1fdc
#define APLIC_SETIPNUM_LE	0x2000
#define APLIC_SETIPNUM_BE	0x2004
#define APLIC_GENMSI		0x3000
#define APLIC_TARGET(i)		(0x3000ull + 4ull * (i))	/* i: 1..1023 */
#define APLIC_IDC_BASE		0x4000	/* direct mode only */

#define APLIC_DOMAINCFG_RO	(0x80u << 24)	/* bits 31:24 read 0x80 */
#define APLIC_DOMAINCFG_IE	(1u << 8)	/* interrupts enabled in the domain */
#define APLIC_DOMAINCFG_DM	(1u << 2)	/* delivery mode: MSIs */

/* sourcecfg: D (bit 10) delegates to a child domain; else SM (bits 2:0) */
#define APLIC_SOURCECFG_D	(1u << 10)
#define APLIC_SOURCECFG_SM_MASK	0x7u
#define APLIC_SM_INACTIVE	0
#define APLIC_SM_DETACHED	1
#define APLIC_SM_EDGE_RISE	4
#define APLIC_SM_EDGE_FALL	5
#define APLIC_SM_LEVEL_HIGH	6
#define APLIC_SM_LEVEL_LOW	7

/* target (and genmsi) in MSI mode: hart index 31:18, guest index 17:12, EIID
 * 10:0; genmsi's bit 12 is Busy instead of a guest index bit */
#define APLIC_TARGET_HART_SHIFT	18
#define APLIC_TARGET_HART_MAX	0x3fff
#define APLIC_TARGET_GUEST_SHIFT 12
#define APLIC_TARGET_GUEST_MAX	0x3f
#define APLIC_TARGET_EIID_MASK	0x7ff
#define APLIC_GENMSI_BUSY	(1u << 12)

struct aplic_host_desc {
	bool present;
	uint64_t base, size;		/* reg */
	uint32_t num_sources;		/* riscv,num-sources: sources 1..num_sources */
	uint32_t phandle;
};
#endif
