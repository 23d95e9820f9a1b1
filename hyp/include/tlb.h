/* SPDX-License-Identifier: MIT */
/* The one owner of translation-cache upkeep: which hart flushes what, and when.
 * Hardware tags G-stage and VS-stage entries with the VMID (and ASID), per
 * hart; these rules keep every hart's cached entries true to the tables:
 *  - a vCPU landing on a hart where another vCPU ran last, or coming back to a
 *    hart after running elsewhere, flushes the VMID's VS-stage entries and
 *    fetched code there (the guest fenced them on the other hart only);
 *  - a VMID that another VM held is flushed on each hart before its new
 *    owner runs there; VMID 0 is shared by every VM that found none free, and
 *    a hart flushes it whenever it switches between two of them;
 *  - a G-stage permission downgrade reaches every hart that ever ran the VM
 *    since its creation before the operation returns. */
#ifndef HYP_TLB_H
#define HYP_TLB_H
#include <types.h>

struct hart;
struct vcpu;
struct vm;

#define TLB_VVMA	(1U << 0)	/* hfence.vvma: VS-stage entries of hgatp's VMID */
#define TLB_GVMA	(1U << 1)	/* hfence.gvma for the VM's VMID */
#define TLB_FENCE_I	(1U << 2)

#define VMID_SHARED	0		/* the fallback VMID: flushed on every switch */
#define VMID_MAX_TRACKED 63		/* VMIDs 1..63 are handed out one per VM */

/* Per-hart record (in struct hart). */
struct tlb_hart {
	const struct vcpu *last_vcpu;	/* vCPU that ran here last */
	uint64_t last_vm_serial;	/* its VM's creation serial */
	volatile unsigned long stale;	/* VMIDs recycled since this hart last flushed them */
	volatile unsigned long gvma_req; /* VMIDs other harts asked this hart to flush */
};

/** vmid_init() - VMIDs 1..min(2^bits - 1, VMID_MAX_TRACKED) become available. */
void vmid_init(unsigned int bits);
/** vmid_alloc() - a free VMID, or VMID_SHARED when none is left. */
uint16_t vmid_alloc(void);
/** vmid_free() - give @vmid back; each hart flushes it before it is used again. */
void vmid_free(uint16_t vmid);
/** vmid_usable() - how many distinct VMIDs VMs can get. */
unsigned int vmid_usable(void);

/** tlb_load_flushes() - @v is about to run on @h: the TLB_* flushes it needs
 *  there first. Records that @v (and its VM) ran on @h. Pure logic. */
unsigned int tlb_load_flushes(struct hart *h, struct vcpu *v);
/** tlb_vcpu_load() - tlb_load_flushes() and carry them out (hgatp is set). */
void tlb_vcpu_load(struct hart *h, struct vcpu *v);
/** tlb_gstage_targets() - harts other than @self that must flush @vm's
 *  G-stage entries after a downgrade. Pure logic. */
unsigned long tlb_gstage_targets(const struct vm *vm, unsigned int self);
/** tlb_flush_vm_gstage() - drop @vm's G-stage translations on this hart and on
 *  every hart that may cache them; returns when all have done it. */
void tlb_flush_vm_gstage(struct vm *vm);
/** tlb_local_gstage() - drop @vm's G-stage entries on this hart only (after an
 *  upgrade, or to forget a cached invalid entry). */
void tlb_local_gstage(const struct vm *vm);
/** tlb_service() - carry out the flushes other harts asked this hart for. */
void tlb_service(void);
/** tlb_vm_created() - a new VM: no hart has run it yet. */
void tlb_vm_created(struct vm *vm);
#endif
