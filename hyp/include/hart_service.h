/* SPDX-License-Identifier: MIT */
/* What other harts and the hardware leave for a hart to do, done wherever it
 * passes through the hypervisor: a kick's exit, the scheduler's loop, the end
 * of a wait (hyp/state/hart_service.c). */
#ifndef HYP_HART_SERVICE_H
#define HYP_HART_SERVICE_H

/** hart_service() - the G-stage flushes (tlb_service()) and guest files
 *  (imsic_files_service()) other harts asked this one for, then the parked
 *  files that signalled (imsic_files_sgei()): their vCPUs are runnable, an
 *  idle hart is kicked for them. */
void hart_service(void);
#endif
