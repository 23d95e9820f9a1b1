/* SPDX-License-Identifier: MIT */
/* What other harts and the hardware leave for a hart to do, done wherever it
 * passes through the hypervisor: a kick's exit, the scheduler's loop, the end
 * of a wait (hyp/state/hart_service.c). */
#ifndef HYP_HART_SERVICE_H
#define HYP_HART_SERVICE_H
#include <hart.h>

/* a hart has guest interrupt files (imsic_files_init()): SGEI may be pending */
extern bool imsic_files_used;



/** hart_service() - the G-stage flushes (tlb_service()) and guest files
 *  (imsic_files_service()) other harts asked this one for, then the parked
 *  files that signalled (imsic_files_sgei()): their vCPUs are runnable, an
 *  idle hart is kicked for them. One test when there is nothing to do (a
 *  kick for a posted interrupt: the IPI path, `make bench` ipi_latency). */
void hart_service(void);
#endif
