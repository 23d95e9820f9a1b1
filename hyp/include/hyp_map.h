/* SPDX-License-Identifier: MIT */
/* The hypervisor's own address space: one identity map (VA == PA, so every
 * pointer stays what it was with satp Bare) shared by all harts, with W^X:
 * text r-x, rodata r--, data/bss rw-, the RAM it hands out rw-, device
 * registers rw-, never a page both writable and executable. The firmware
 * below the image, the page below each hart's stack and the pages around
 * each shadow stack are not mapped (docs/security.md, "The hypervisor's own
 * memory"). Built on the boot hart before any other hart runs. */
#ifndef HYP_HYP_MAP_H
#define HYP_HYP_MAP_H
#include <types.h>
#include <hart.h>
#include <mm_ranges.h>

#define HYP_MAP_MAX_RAM		MM_MAX_RANGES
#define HYP_MAP_MAX_DEV		16
#define HYP_MAP_TABLE_PAGES	48	/* the boot map's tables (a few dozen used on QEMU virt) */

/* A leaf's permissions: what boot asks for, the PTE bits the walk checks. */
enum hyp_map_perm {
	HYP_MAP_RX,		/* image text */
	HYP_MAP_RO,		/* image rodata */
	HYP_MAP_RW,		/* data, bss, stacks, page tables, RAM, devices */
	HYP_MAP_SS,		/* a Zicfiss shadow-stack page: R=0 W=1 X=0 */
};

/* Where everything is: the image's boundaries (page-aligned, hyp.ld), its
 * holes, RAM from the host DT and the device space. Plain data so the host
 * unit test can lay out an image of its own. */
struct hyp_map_layout {
	uint64_t text_start, text_end;		/* text_end == rodata start */
	uint64_t rodata_end;			/* == data start */
	uint64_t image_end;			/* end of bss and the shadow stacks */
	uint64_t ss_start, ss_end;		/* .shadow_stacks: guard, stack, guard, ... */
	uint64_t stack_guard[HART_MAX];		/* the page below each hart stack */
	unsigned int nr_stack_guards;
	struct mm_range ram[HYP_MAP_MAX_RAM];	/* host DT memory (the image's range too) */
	unsigned int nr_ram;
	struct mm_range dev[HYP_MAP_MAX_DEV];	/* device registers (may overlap each other) */
	unsigned int nr_dev;
};

/* The tables under construction: pages taken in order from @pages. */
struct hyp_map_tables {
	uint64_t (*pages)[512];
	unsigned int nr_pages, used;
	unsigned int levels;		/* 3: Sv39, 4: Sv48 */
	unsigned int leaves[3];		/* 4 KiB, 2 MiB, 1 GiB leaves written */
};

/** hyp_map_build() - build the identity map of @l in @t (levels set, pages
 *  zeroed, used 0). 0, -HYP_ENOMEM (out of table pages), -HYP_ERANGE (an
 *  address this mode cannot identity-map: Sv39 stops at bit 38), or
 *  -HYP_EINVAL (a layout not page-aligned, or two regions asking one page
 *  for different permissions). */
int hyp_map_build(struct hyp_map_tables *t, const struct hyp_map_layout *l);
/** hyp_map_root() - the root table's physical address (identity: its address). */
uint64_t hyp_map_root(const struct hyp_map_tables *t);
/** hyp_map_pte_bits() - the leaf bits (V, R/W/X, G, A, D) of @perm. */
uint64_t hyp_map_pte_bits(enum hyp_map_perm perm);

/* The hypervisor's shadow stacks: page 2i+1 is hart i's, every even page an
 * unmapped guard (hyp.ld's .shadow_stacks). */
#define HYP_SS_PAGES	(HART_MAX * 2 + 1)
extern char hart_shadow_stacks[HYP_SS_PAGES][4096];

/** hyp_map_enable() - on the boot hart, before the other harts start: build
 *  the map of @l (Sv48 if the hart takes satp.MODE 9, else Sv39), switch to
 *  it, set every hart's ss_top, and report. Panics where it cannot. */
void hyp_map_enable(const struct hyp_map_layout *l);
/** hyp_map_satp - the satp value every hart loads (head.S, before C). */
extern unsigned long hyp_map_satp;
/** hyp_map_image_layout() - fill @l's image part from the linker's symbols. */
void hyp_map_image_layout(struct hyp_map_layout *l);
#endif
