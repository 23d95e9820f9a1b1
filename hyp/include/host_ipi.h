/* SPDX-License-Identifier: MIT */
/* Interrupting another hart of the host (a kick, a TLB or state request):
 * one store to its ACLINT SSWI register where the machine has one, else an
 * SBI IPI through the firmware (hyp/drivers/host_ipi.c). Either way the
 * target sees sip.SSIP. */
#ifndef HYP_HOST_IPI_H
#define HYP_HOST_IPI_H
#include <types.h>

/** host_ipi_init() - the harts' firmware ids @hartids (by hart index) and,
 *  if every hart has one, their SSWI registers @setssip (NULL or any 0:
 *  the firmware for all). Before the other harts start. */
void host_ipi_init(const unsigned long *hartids, const uint64_t *setssip, unsigned int nr);

/** host_ipi_sswi() - true if host IPIs go through the SSWI. */
bool host_ipi_sswi(void);

/** host_ipi_send() - set sip.SSIP of the hart with index @hart; every
 *  store before the call is visible to it when it sees the interrupt. */
void host_ipi_send(unsigned int hart);
#endif
