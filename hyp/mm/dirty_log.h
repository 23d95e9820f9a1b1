/* SPDX-License-Identifier: MIT */
/* 4 KiB dirty logging, the parts guest_mem.c calls (under vm->mem_lock). */
#ifndef HYP_MM_DIRTY_LOG_H
#define HYP_MM_DIRTY_LOG_H
#include <vm.h>

/** dirty_log_split() - chunk @c was just mapped: 4 KiB leaves, not writable. */
void dirty_log_split(struct vm *vm, uint64_t c);
/** dirty_log_mark_range() - the pages of [gpa, gpa+len) inside chunk @c
 *  were (or are about to be) written; @by_hyp: by the hypervisor, through
 *  its own mapping (sticky until the final take). */
void dirty_log_mark_range(struct vm *vm, gpa_t gpa, uint64_t len, uint64_t c, bool by_hyp);
#endif
