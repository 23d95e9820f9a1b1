/* SPDX-License-Identifier: MIT */
/* Boot self-test of the hypervisor's own W^X (hyp_map.h). */
#ifndef HYP_WX_SELFTEST_H
#define HYP_WX_SELFTEST_H
#include <stdbool.h>

/** wx_selftest() - boot, hart 0, after every hart is online, only when
 *  /chosen has carapace,selftest-wx (tests/guests/test_hyp_wx.py): a store
 *  to the hypervisor's own text, or with @exec a call into its data. Each
 *  must take an HS page fault, whose report stops the host; returning is a
 *  W^X failure, and panics saying so. */
void wx_selftest(bool exec);
#endif
