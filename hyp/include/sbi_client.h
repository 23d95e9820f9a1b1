/* SPDX-License-Identifier: MIT */
/* Calls from the hypervisor into the M-mode firmware (OpenSBI). The guest-facing
 * SBI server is hyp/vsbi/, kept apart on purpose. */
#ifndef HYP_SBI_CLIENT_H
#define HYP_SBI_CLIENT_H
#include <stdbool.h>
#include <abi/sbi_defs.h>

struct sbiret {
	long error;
	long value;
};

struct sbiret sbi_ecall(unsigned long ext, unsigned long fid, unsigned long a0,
			unsigned long a1, unsigned long a2, unsigned long a3);
long sbi_probe_extension(unsigned long ext);
long sbi_hart_start(unsigned long hartid, unsigned long addr, unsigned long opaque);
long sbi_send_ipi(unsigned long hart_mask, unsigned long hart_mask_base);
long sbi_set_timer(unsigned long stime);
void sbi_system_shutdown(bool failure) __attribute__((noreturn));
long sbi_fwft_set(unsigned long feature, unsigned long value, unsigned long flags);
#endif
