/* SPDX-License-Identifier: MIT */
/* hart_service.h: one call for the requests a hart serves. */
#include <hart.h>
#include <hart_service.h>
#include <imsic_files.h>
#include <sched.h>
#include <tlb.h>

void hart_service(void)
{
	struct hart *h = this_hart();

	if (!(h->tlb.gvma_req | h->imsic.release_req | imsic_files_used))
		return;
	tlb_service();
	imsic_files_service();
	if (imsic_files_sgei())
		sched_kick_idle();
}
