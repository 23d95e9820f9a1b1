/* SPDX-License-Identifier: MIT */
/* Boot self-tests of the host virtio drivers (hostblk.h, hostnet.h). */
#ifndef HYP_HOSTIO_SELFTEST_H
#define HYP_HOSTIO_SELFTEST_H
#include <fdt_host.h>

/** hostio_selftest() - boot, hart 0, after hostblk_init() and hostnet_init(),
 *  only when /chosen has carapace,selftest-hostio (tests): on every host disk,
 *  write, flush and read back a pattern (a read-only one must refuse the
 *  write); on every host NIC, an ARP request for 10.0.2.2 and its reply. One
 *  log line each ("hostio selftest: ..."), then "hostio selftest: done". */
void hostio_selftest(void);

/** hostio_selftest_irq() - boot, hart 0, after host_io_init() has routed the
 *  disks' INTx (host interrupts up), only when /chosen has
 *  carapace,selftest-pci-irq (tests): on the first host disk, whose INTx
 *  goes to the host PLIC by @hi's interrupt-map, read sector 0; the read's
 *  done(), called from the disk's interrupt handler whatever hart 0 is doing
 *  then, reads again, for 500 ms and 16 reads at least, then prints
 *  "hostio selftest: irq: blk slot S irq N: M requests answered ..." with
 *  how many were taken at a guest exit and how many in the scheduler's
 *  loop. */
void hostio_selftest_irq(const struct host_info *hi);
#endif
