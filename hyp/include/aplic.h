/* SPDX-License-Identifier: MIT */
/* The host's APLIC, supervisor-level domain in MSI delivery mode (AIA spec,
 * "Advanced Platform-Level Interrupt Controller"): what the host DT says about
 * it and its registers (hyp/drivers/aplic_host.c, docs/design-aia.md 2.3). */
#ifndef HYP_APLIC_H
#define HYP_APLIC_H
#include <types.h>

#define APLIC_MAX_SOURCES	1024	/* sources 1..1023 */
#define APLIC_MIN_SIZE		0x4000	/* reg covers every register of an MSI-mode domain */

/* Register offsets from the domain's base */
#define APLIC_DOMAINCFG		0x0000
#define APLIC_SOURCECFG(i)	(4ull * (i))		/* i: 1..1023 */
#define APLIC_SETIENUM		0x1edc
#define APLIC_CLRIENUM		0x1fdc
#define APLIC_SETIPNUM_LE	0x2000
#define APLIC_TARGET(i)		(0x3000ull + 4ull * (i))	/* i: 1..1023 */

#define APLIC_DOMAINCFG_IE	(1u << 8)	/* interrupts enabled in the domain */
#define APLIC_DOMAINCFG_DM	(1u << 2)	/* delivery mode: MSIs */

/* sourcecfg source modes (SM, bits 2:0) */
#define APLIC_SM_INACTIVE	0
#define APLIC_SM_EDGE_RISE	4
#define APLIC_SM_EDGE_FALL	5
#define APLIC_SM_LEVEL_HIGH	6
#define APLIC_SM_LEVEL_LOW	7

/* target in MSI mode: hart index 31:18, guest index 17:12, EIID 10:0 */
#define APLIC_TARGET_HART_SHIFT	18
#define APLIC_TARGET_HART_MAX	0x3fff
#define APLIC_TARGET_EIID_MASK	0x7ff

struct aplic_host_desc {
	bool present;
	uint64_t base, size;		/* reg */
	uint32_t num_sources;		/* riscv,num-sources: sources 1..num_sources */
	uint32_t phandle;
};
#endif
