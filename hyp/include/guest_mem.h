/* SPDX-License-Identifier: MIT */
/* Guest RAM as the hypervisor sees it (memory layer): the only way it touches
 * guest RAM (hyp/mm/guest_mem.c), and the tracking of what the guest wrote,
 * per 2 MiB chunk (guest_mem.c) and per 4 KiB page (hyp/mm/dirty_log.c). */
#ifndef HYP_GUEST_MEM_H
#define HYP_GUEST_MEM_H
#include <types.h>

struct vm;

/* guest RAM is zeroed, mapped and write-tracked in chunks of this size */
#define VM_RAM_CHUNK	SZ_2M

/** vm_gpa_range_is_ram() - [gpa, gpa+len) lies wholly in @vm's RAM. */
bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len);
/** vm_gpa_to_hva() - host address of guest RAM, mapping it if needed; @write
 *  says the hypervisor will write it (dirty tracking counts that too). */
void *vm_gpa_to_hva(struct vm *vm, gpa_t gpa, uint64_t len, bool write);
int vm_copy_from_guest(struct vm *vm, void *dst, gpa_t src, uint64_t len);
int vm_copy_to_guest(struct vm *vm, gpa_t dst, const void *src, uint64_t len);
/** vm_ram_counts_writes() - is anything counting @vm's RAM writes (dirty
 *  tracking for a live snapshot, page logging for a migration)? Both are
 *  switched on only while the VM is paused with its devices drained, so a
 *  device request finished with this false began with it false too. */
bool vm_ram_counts_writes(const struct vm *vm);
/** vm_ram_populate() - zero and map every not-yet-mapped chunk of [gpa, gpa+len);
 *  @write: the access is a write (marks chunks dirty while tracking). */
int vm_ram_populate(struct vm *vm, gpa_t gpa, uint64_t len, bool write);
/** vm_ram_discard() - unmap all guest RAM (reboot): chunks are zeroed again on
 *  touch. Every hart that may cache the VM's translations drops them first. */
void vm_ram_discard(struct vm *vm);
/** vm_meta_size() - bytes of the per-VM block vm_ram_init() carves up. */
uint64_t vm_meta_size(uint64_t ram_size);
/** vm_ram_init() - lay out G-stage root, table pages and chunk maps in the
 *  zeroed block at vm->meta_hpa; nothing is mapped yet. */
int vm_ram_init(struct vm *vm);

/** vm_device_leaf_slot() - the G-stage leaf entry of the 4 KiB page at
 *  @gpa (outside RAM), its tables made from the VM's block and the entry
 *  left invalid, for a page whose target changes while the VM runs (a
 *  vIMSIC page: hyp/state/imsic_files.c). NULL if that cannot be. */
uint64_t *vm_device_leaf_slot(struct vm *vm, gpa_t gpa);
/** vm_map_device_page() - map the next of the VM's VM_DEVICE_PAGES device
 *  pages read-only at @gpa (page aligned, outside RAM, not mapped yet; the
 *  caller's emulated window): registers the guest reads often, kept in step
 *  by the window's model, so that a load needs no exit; a store still faults
 *  into the window's handler. Returns the page, zeroed, or NULL (none left,
 *  or a bad @gpa): the model then serves every access by its handler. */
void *vm_map_device_page(struct vm *vm, gpa_t gpa);

/* Write tracking per chunk (guest_mem.c). */
/** vm_ram_write_protect() - clear W on every mapped chunk (dirty tracking);
 *  returns how many. Every hart that may cache a writable translation has
 *  dropped it when this returns. */
uint64_t vm_ram_write_protect(struct vm *vm);
/** vm_ram_unprotect() - end dirty tracking: every mapped chunk writable again. */
void vm_ram_unprotect(struct vm *vm);
/** vm_ram_resolve_write() - a write (or shadow-stack access) hit a write-
 *  protected chunk: mark it dirty and give W back (after vm->cow), or leave
 *  it protected for a retry. False if it was not that. */
bool vm_ram_resolve_write(struct vm *vm, gpa_t gpa);
/** vm_ram_dirty_chunks() - chunks written since the last write-protect. */
uint64_t vm_ram_dirty_chunks(struct vm *vm);

/* Write logging per 4 KiB page (dirty_log.c). */
/** vm_dirty_log_start() - log writes to @vm's RAM per 4 KiB page (its 2 MiB
 *  leaves split); from the return on, every write is logged. */
int vm_dirty_log_start(struct vm *vm);
/** vm_dirty_log_take() - the pages written since the last take into @out (a
 *  bit per page), and write-protect them again; @final: the VM is paused,
 *  the last take. Returns how many were made read-only. */
uint64_t vm_dirty_log_take(struct vm *vm, uint64_t *out, bool final);
/** vm_dirty_log_stop() - end logging, 2 MiB writable leaves again. */
void vm_dirty_log_stop(struct vm *vm);
#endif
