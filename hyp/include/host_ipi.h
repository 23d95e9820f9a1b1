/* SPDX-License-Identifier: MIT */
/* Interrupting another hart of the host (a kick, a TLB or state request), the
 * cheapest way the machine has (hyp/drivers/host_ipi.c):
 * - one store to its ACLINT SSWI register: the target sees sip.SSIP;
 * - else, on the AIA machine, one store of identity HOST_IPI_EIID to its
 *   S-level IMSIC file page: the target sees sip.SEIP, that identity on top
 *   (docs/design-aia.md 2.5);
 * - else an SBI IPI through the firmware: sip.SSIP.
 * Whatever the way, the receiving side asks here whether one came
 * (host_ipi_claim_ext(), host_ipi_pending()) and consumes it
 * (host_ipi_clear()), and the work it stands for is the same. */
#ifndef HYP_HOST_IPI_H
#define HYP_HOST_IPI_H
#include <types.h>

/** host_ipi_init() - the harts' firmware ids @hartids (by hart index) and,
 *  if every hart has one, their SSWI registers @setssip (NULL or any 0:
 *  the firmware for all). Before the other harts start. */
void host_ipi_init(const unsigned long *hartids, const uint64_t *setssip, unsigned int nr);

/** host_ipi_use_imsic() - without an SSWI, send through the IMSIC: @s_file
 *  is each hart's S-level file page (by hart index; any 0: not used). True if
 *  taken; then every hart calls host_ipi_hart_init() once its S file is set
 *  up and delivering (imsic_host_hart_init()). Boot, before the other harts
 *  start. */
bool host_ipi_use_imsic(const uint64_t *s_file, unsigned int nr);

/** host_ipi_hart_init() - this hart receives host IPIs: on the IMSIC path
 *  identity HOST_IPI_EIID enabled in its S file and sie.SEIE set (sie.SSIP
 *  is hart_init_csrs()'s, for the other paths). */
void host_ipi_hart_init(void);

/** host_ipi_sswi() / host_ipi_imsic() - true if host IPIs go through the
 *  SSWI / through the IMSIC. */
bool host_ipi_sswi(void);
bool host_ipi_imsic(void);

/** host_ipi_send() - interrupt the hart with index @hart; every store before
 *  the call is visible to it when it sees the interrupt. */
void host_ipi_send(unsigned int hart);

/** host_ipi_claim_ext() - a supervisor external interrupt was taken: if it
 *  is a host IPI (the IMSIC path, HOST_IPI_EIID on top of this hart's S
 *  file), claim it and return true; false otherwise, and always on the other
 *  paths (theirs is IRQ_S_SOFT). */
bool host_ipi_claim_ext(void);

/** host_ipi_clear() - consume this hart's pending host IPI, if any (after
 *  an idle wfi: what woke it is looked at anyway). */
void host_ipi_clear(void);

/** host_ipi_pending() - true if a host IPI waits on this hart (held or not). */
bool host_ipi_pending(void);

/** host_ipi_hold() / host_ipi_release() - host IPIs stay pending without
 *  interrupting this hart (a guest's landing-pad window, cfi/lp_redeliver.c),
 *  then interrupt again. */
void host_ipi_hold(void);
void host_ipi_release(void);
#endif
