/* SPDX-License-Identifier: MIT */
/* Lifecycle operations the operator asks for (monitor keys, management
 * channel): one implementation for both. Pause and destroy finish once every
 * vCPU of the VM has left its hart; the caller is told then. */
#ifndef HYP_VMOPS_H
#define HYP_VMOPS_H
#include <types.h>

struct vm;
struct vm_desc;
struct mig_host_ops;

/* The operations, for vmop_refusal(). */
enum vmop { VMOP_PAUSE, VMOP_RESUME, VMOP_WAKE, VMOP_DESTROY };

/** vmop_done_fn - a pending operation finished; @result: bytes freed (destroy). */
typedef void (*vmop_done_fn)(void *ctx, struct vm *vm, uint64_t result);

/** vmop_pause()/vmop_destroy() - start it; 0 (then @done is called on hart 0,
 *  later or, for a VM still arriving by migration, before this returns),
 *  -HYP_EBUSY (wrong state, or vmop_refusal()). Destroying an arriving VM
 *  ends its migration: the source is told and keeps its copy. */
int vmop_pause(struct vm *vm, vmop_done_fn done, void *ctx);
int vmop_destroy(struct vm *vm, vmop_done_fn done, void *ctx);
/** vmop_resume() - PAUSED -> RUNNING at once; a copy left by an unconfirmed
 *  migration is the operator's to resume (docs/migration.md). */
int vmop_resume(struct vm *vm);
/** vmop_refusal() - why @op may not be done on @vm now whatever its state (a
 *  snapshot or migration holds it, another operation is pending), or NULL. */
const char *vmop_refusal(const struct vm *vm, enum vmop op);
/** vm_migration_word() - "left-unconfirmed", "arrived-unconfirmed" (a
 *  migration of @vm ended without its confirmation), or NULL. */
const char *vm_migration_word(const struct vm *vm);
/** vmop_wake() - wake a guest-suspended (SBI SUSP) VM, as QEMU's system_wakeup. */
int vmop_wake(struct vm *vm);
/* the operations a migration uses (hyp/include/migrate.h) */
extern const struct mig_host_ops vmops_migration;
/** vmop_cancel_waiter() - forget the callbacks that use @ctx (its owner goes away). */
void vmop_cancel_waiter(void *ctx);
/** vmops_pending() - is some operation waiting for its VM? */
bool vmops_pending(void);
/** vmops_poll() - finish the operations whose VM is now off every hart. */
void vmops_poll(void);
/** vm_state_name() - the state in the words the monitor and the protocol use. */
const char *vm_state_name(const struct vm *vm);

/** host_poll() - the host services' turn on hart 0: console input, VM events
 *  (outcome lines, reboots), finished operations, the management channel,
 *  powering off when every VM is down. Returns the host time by which to
 *  call again (sched_host_poll): 0 while a stream moves or management
 *  requests wait beyond one poll's bound; soon while a snapshot waits for
 *  the host; -1 otherwise. */
uint64_t host_poll(void);
/** host_set_persist() - stay up with no VM running (VMs come at run time). */
void host_set_persist(bool persist);
/** host_note_failure() - a VM could not even be created: power off as failed. */
void host_note_failure(void);
#endif
