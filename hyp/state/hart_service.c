/* SPDX-License-Identifier: MIT */
/* hart_service.h: one call for the requests a hart serves. */
#include <hart_service.h>
#include <imsic_files.h>
#include <sched.h>
#include <tlb.h>

void hart_service_slow(void)
{
	tlb_service();
	imsic_files_service();
	if (imsic_files_sgei())
		sched_kick_idle();
}
