/* SPDX-License-Identifier: MIT */
/* 4 KiB dirty logging, the parts guest_mem.c calls (under vm->mem_lock). */
#ifndef HYP_MM_DIRTY_LOG_H
#define HYP_MM_DIRTY_LOG_H
#include <vm.h>

#include <gstage.h>

/** dirty_log_map_chunk() - map chunk @c (at @hpa) for the first time while
 *  logging: 4 KiB leaves without W, built before they are visible. */
int dirty_log_map_chunk(struct vm *vm, uint64_t c, hpa_t hpa, gstage_alloc_fn alloc);
/** dirty_log_mark_range() - the pages of [gpa, gpa+len) inside chunk @c
 *  were (or are about to be) written; @by_hyp: by the hypervisor, through
 *  its own mapping (sticky until the final take). */
void dirty_log_mark_range(struct vm *vm, gpa_t gpa, uint64_t len, uint64_t c, bool by_hyp);
#endif
