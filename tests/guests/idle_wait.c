/* SPDX-License-Identifier: MIT */
/* Idle waiter: its timer interrupt enabled (sie.STIE) but not set (-1), it
 * waits in WFI for ever after printing IDLE-READY. A waiting vCPU must cost
 * the host nothing: its harts sleep (tests/guests/test_snapshot.py restores
 * it behind the host's clock, a negative htimedelta). Same in both modes. */
#include "libguest.h"

void test_main(unsigned long hartid)
{
	(void)hartid;
	csr_set(sie, MIP_STIP);
	sbi_set_timer(-1UL);
	printf("IDLE-READY\n");
	for (;;)
		wfi();	/* sstatus.SIE is off: nothing to handle, nothing pends */
}
