/* SPDX-License-Identifier: MIT */
/* Forced into every file of the fuzz build (-include): what a host build of
 * the hypervisor needs declared that its headers leave to the target.
 * hyp/include/hart.h defines time_now() (rdtime) only when !HOST_TEST; the
 * harness defines it (tests/fuzz/fuzz_snap_load.c). */
#ifndef FUZZ_HOST_H
#define FUZZ_HOST_H
#include <stdint.h>

uint64_t time_now(void);
#endif
