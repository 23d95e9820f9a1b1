/* SPDX-License-Identifier: MIT */
/* hart_service.h: the requests a hart serves, and its guest files' SGEIs. */
#include <hart_service.h>
#include <imsic_files.h>
#include <sched.h>
#include <tlb.h>

void hart_service_requests(void)
{
	tlb_service();
	imsic_files_service();
}

void hart_service_sgei(void)
{
	if (imsic_files_used && imsic_files_sgei())
		sched_kick_idle();
}
