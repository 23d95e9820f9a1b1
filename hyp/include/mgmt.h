/* SPDX-License-Identifier: MIT */
/* The host management channel: a versioned JSON-lines protocol on the
 * hypervisor-owned virtio-serial port "org.carapace.control" (docs/management.md). */
#ifndef HYP_MGMT_H
#define HYP_MGMT_H
#include <types.h>

/** mgmt_init() - find the management device in the host DT; false if absent. */
bool mgmt_init(const void *fdt);
/** mgmt_arm_incoming() - wait on the stream port for one migrated VM (a host
 *  started for it: carapace,incoming), its disks to the host disks @disks
 *  names (0: as sent), copied into them if @copy. */
void mgmt_arm_incoming(const uint8_t disks[2], bool copy);
/** mgmt_poll() - read requests, answer them (hart 0 only), for about 1 ms
 *  at most (MGMT_POLL_BUDGET_US) plus one request. */
void mgmt_poll(void);
/** mgmt_busy() - the last mgmt_poll() stopped at its bound with input
 *  perhaps left: poll again at the next pass, do not sleep. */
bool mgmt_busy(void);
#endif
