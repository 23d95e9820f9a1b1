/* SPDX-License-Identifier: MIT */
/* Boot self-test of the host virtio drivers (hostblk.h, hostnet.h). */
#ifndef HYP_HOSTIO_SELFTEST_H
#define HYP_HOSTIO_SELFTEST_H

/** hostio_selftest() - boot, hart 0, after hostblk_init() and hostnet_init(),
 *  only when /chosen has carapace,selftest-hostio (tests): on every host disk,
 *  write, flush and read back a pattern (a read-only one must refuse the
 *  write); on every host NIC, an ARP request for 10.0.2.2 and its reply. One
 *  log line each ("hostio selftest: ..."), then "hostio selftest: done". */
void hostio_selftest(void);
#endif
