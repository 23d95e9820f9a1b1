/* SPDX-License-Identifier: MIT */
/* What is specific to the machine Carapace runs on (QEMU virt): quirks of its
 * CPU model, detected at boot. */
#ifndef PLATFORM_H
#define PLATFORM_H
#include <stdbool.h>

/** platform_quirk_spelp() - does this machine's sret take ELP from the guest's
 *  vsstatus.SPELP when henvcfg.LPE=1 (QEMU 10.0.2, docs/cfi.md Q4)? @fdt is the
 *  host device tree. */
bool platform_quirk_spelp(const void *fdt);
#endif
