/* SPDX-License-Identifier: MIT */
/* Hardware guest interrupt files for the vCPUs of AIA VMs (docs/design-aia.md
 * 3.3-3.8): while a vCPU holds one of its hart's guest files, the G-stage maps
 * its vIMSIC page to that file and hstatus.VGEIN selects it when it runs, so
 * its IPIs and MSIs reach it with no exit. A vCPU keeps its file, parked,
 * while it is off its hart; a waiting one has it armed in hgeie and is woken
 * by the SGEI it raises. Only the hart holding a file changes who holds it,
 * and never while the holder is loaded there: another hart asks it to
 * (release_req, a host IPI) and waits. */
#ifndef HYP_IMSIC_FILES_H
#define HYP_IMSIC_FILES_H
#include <types.h>

struct vcpu;
struct vm;

/* a parked file older than this (host ticks) may go to another vCPU */
extern uint64_t imsic_evict_age;

/** imsic_files_init() - guest files hold @guest_ids identities (the host
 *  IMSIC's riscv,num-guest-ids); a VM with another count runs in software. */
void imsic_files_init(uint32_t guest_ids);
/** imsic_files_vm_init() - make the G-stage leaf of each vCPU's vIMSIC page
 *  of a new AIA VM (left invalid). 0, or -HYP_ENOMEM. */
int imsic_files_vm_init(struct vm *vm);
/** imsic_files_enter() - this hart picked @v (of an AIA VM) and is about to
 *  load it: make it hold one of this hart's guest files if it can (its file
 *  moved here from another hart first: that hart is asked and waited for),
 *  so that vcpu_load() sets VGEIN for it. Without a free file it runs in
 *  software this time. Before the load, not after: a call in the entry
 *  path cost the vCPU switch 20 instructions of register saves. */
void imsic_files_enter(struct vcpu *v);
/** imsic_files_service() - give back the files other harts asked this one
 *  for (release_req). */
void imsic_files_service(void);
/** imsic_files_sgei() - the parked files that signalled (hgeip & hgeie):
 *  disarmed, their vCPUs marked woken (ext_irq, until their entry). How many. */
unsigned int imsic_files_sgei(void);
/** imsic_files_vm_released() - true if no vCPU of @vm holds a guest file;
 *  else asks the harts holding them to give them back (no wait) and returns
 *  false: a VM is off CPU for pause, reset and destroy only once it holds
 *  none. */
bool imsic_files_vm_released(struct vm *vm);
/** imsic_files_wait_arm() - the vCPU loaded here is about to wait in place
 *  (the hart's wfi with it loaded): its guest file's hgeie bit set so that
 *  its signal ends the wfi (SGEI); the caller clears the returned bit when
 *  the wfi ends. 0 if it holds no file here. */
unsigned long imsic_files_wait_arm(void);
/** imsic_files_vm_release() - the same, waiting until @vm holds none (its
 *  vCPUs are off every hart). */
void imsic_files_vm_release(struct vm *vm);
#endif
