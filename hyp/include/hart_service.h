/* SPDX-License-Identifier: MIT */
/* What other harts and the hardware leave for a hart to do, done wherever it
 * passes through the hypervisor: a kick's exit, the scheduler's loop, the end
 * of a wait (hyp/state/hart_service.c). */
#ifndef HYP_HART_SERVICE_H
#define HYP_HART_SERVICE_H
#include <hart.h>

/* a hart has guest interrupt files (imsic_files_init()): SGEI may be pending */
extern bool imsic_files_used;

void hart_service_requests(void);

/** hart_service() - the G-stage flushes (tlb_service()) and guest files
 *  (imsic_files_service()) other harts asked this one for. Two loads when
 *  there is nothing (every vCPU switch and kick: `make bench`). */
static inline void hart_service(void)
{
	struct hart *h = this_hart();

	if (h->tlb.gvma_req | h->imsic.release_req)
		hart_service_requests();
}

/** hart_service_sgei() - after a wfi (an SGEI is taken as an exit only while
 *  a guest runs): the parked guest files that signalled (imsic_files_sgei()),
 *  their vCPUs runnable, an idle hart kicked for them. */
void hart_service_sgei(void);
#endif
