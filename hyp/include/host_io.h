/* SPDX-License-Identifier: MIT */
/* The host's side of guest I/O at boot (hyp/host/host_io.c): the virtual
 * switches the host DT names, each uplink joined to its host NIC, and every
 * host disk's and NIC's INTx routed to its driver. */
#ifndef HYP_HOST_IO_H
#define HYP_HOST_IO_H
#include <fdt_host.h>

/** host_io_init() - after hostblk_init(), hostnet_init() and host_irq:
 *  create @hi's switches (before any VM joins one) and route interrupts.
 *  A switch whose uplink is missing runs without it (logged). */
void host_io_init(const struct host_info *hi);
/** host_io_intx_routed() - every route of the host bridge's interrupt-map
 *  names the controller host_irq uses (the host PLIC, or the APLIC on an AIA
 *  machine), so its numbers are that controller's sources. */
bool host_io_intx_routed(const struct host_info *hi);
/** host_io_poll() - serve the host devices whose interrupt could not be
 *  routed (no usable host interrupt controller, or a full table): host
 *  services, hart 0, every millisecond. */
void host_io_poll(void);
#endif
