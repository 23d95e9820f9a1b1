/* SPDX-License-Identifier: MIT */
/* The debug hook that breaks the hypervisor's own control flow on purpose
 * (tests/guests/test_hyp_cfi.py): evidence that the CFI build catches it. */
#ifndef HYP_HYP_CFI_SELFTEST_H
#define HYP_HYP_CFI_SELFTEST_H

/** hyp_cfi_selftest() - boot, hart 0, only when /chosen has
 *  carapace,selftest-cfi (@what: HOST_SELFTEST_CFI_*, fdt_host.h), and only
 *  in a build with CARAPACE_DEBUG_HOOKS (make cfi; not make cfi-release, nor
 *  the plain build). "ret": a non-leaf function's return address on the
 *  stack is overwritten, as a stack overflow would, and its sspopchk must
 *  fault; "call": a call through a function pointer lands past a function's
 *  landing pad, and must fault. Either way the software-check exception stops
 *  the host (hyp_cfi_fault()). Should the bad jump go through (no CFI on
 *  this hart), its target panics saying so. Refused with a log line, and
 *  returns, in a build without the hooks or for another value. */
void hyp_cfi_selftest(unsigned int what);
#endif
