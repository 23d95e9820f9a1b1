/* SPDX-License-Identifier: MIT */
/* Boot-time proof that a host PCI INTx reaches host_irq_handle(): enabled by
 * the host DT's /chosen carapace,selftest-pci-irq (tests only). */
#ifndef HYP_PCI_IRQ_SELFTEST_H
#define HYP_PCI_IRQ_SELFTEST_H
#include <pci_host.h>

/** pci_irq_selftest_start() - on the first virtio-blk function that
 *  pci_host_init() found, whose INTx goes to the host PLIC @plic_phandle:
 *  register its INTx (host_irq_register()), set up one virtqueue and ask for
 *  sector 0. The device's used-buffer interrupt comes later, on whatever path
 *  hart 0 is on then; its handler asks again, 16 times in all, then resets
 *  the device and prints "pci irq selftest: ... 16 requests answered ...",
 *  with how many were taken at a guest exit and how many in the scheduler's
 *  loop. Boot, hart 0, after host_irq_init(). */
void pci_irq_selftest_start(uint32_t plic_phandle, const struct pci_host_desc *desc);
#endif
