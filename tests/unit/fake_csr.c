/* SPDX-License-Identifier: MIT */
/* The CSR file seen by hyp code compiled with HOST_TEST (include/arch/riscv/csr.h):
 * 4096 plain registers, no side effects, no WARL masking. Tests read and preset
 * fake_csr[] directly; fake_csr_nr_writes[] counts csr_write/set/clear/swap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arch/riscv/csr.h>
#include "test.h"

unsigned long fake_csr[4096];
unsigned long fake_csr_nr_writes[4096];

static void check(unsigned int csr)
{
	if (csr >= 4096) {
		fprintf(stderr, "fake_csr: CSR number 0x%x out of range\n", csr);
		abort();
	}
}

unsigned long fake_csr_read(unsigned int csr)
{
	check(csr);
	return fake_csr[csr];
}

void fake_csr_write(unsigned int csr, unsigned long val)
{
	check(csr);
	fake_csr[csr] = val;
	fake_csr_nr_writes[csr]++;
}

void fake_csr_reset(void)
{
	memset(fake_csr, 0, sizeof(fake_csr));
	memset(fake_csr_nr_writes, 0, sizeof(fake_csr_nr_writes));
}
