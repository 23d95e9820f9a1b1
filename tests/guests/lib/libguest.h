/* SPDX-License-Identifier: MIT */
/* One include for payloads: the whole test-guest library. */
#ifndef LIBGUEST_H
#define LIBGUEST_H

#include <arch/riscv/encoding.h>
#include "guest.h"
#include "env.h"
#include "fdt.h"
#include "printf.h"
#include "report.h"
#include "sbi.h"
#include "timer.h"
#include "trap.h"

#endif
