/* SPDX-License-Identifier: MIT */
/* The CSR file seen by hyp code compiled with HOST_TEST (include/arch/riscv/csr.h):
 * 4096 plain registers, no side effects, no WARL masking. Tests read and preset
 * fake_csr[] directly; fake_csr_nr_writes[] counts csr_write/set/clear/swap.
 * A test may hook a CSR (fake_csr_hook()): its reads and writes then go to
 * the hook instead, for registers with side effects (an IMSIC's sireg and
 * stopei: tests/unit/fake_imsic.c). Hooks are cleared with the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arch/riscv/csr.h>
#include "test.h"

unsigned long fake_csr[4096];
unsigned long fake_csr_nr_writes[4096];
static struct fake_csr_hook hooks[4096];
void (*fake_mmio_store32)(unsigned long long pa, unsigned int val);

static void check(unsigned int csr)
{
	if (csr >= 4096) {
		fprintf(stderr, "fake_csr: CSR number 0x%x out of range\n", csr);
		abort();
	}
}

void fake_csr_hook(unsigned int csr, const struct fake_csr_hook *h)
{
	check(csr);
	hooks[csr] = *h;
}

unsigned long fake_csr_read(unsigned int csr)
{
	check(csr);
	return hooks[csr].read ? hooks[csr].read(csr) : fake_csr[csr];
}

void fake_csr_write(unsigned int csr, unsigned long val)
{
	check(csr);
	fake_csr_nr_writes[csr]++;
	if (hooks[csr].write)
		hooks[csr].write(csr, val);
	else
		fake_csr[csr] = val;
}

void fake_csr_reset(void)
{
	memset(fake_csr, 0, sizeof(fake_csr));
	memset(fake_csr_nr_writes, 0, sizeof(fake_csr_nr_writes));
	memset(hooks, 0, sizeof(hooks));
	fake_mmio_store32 = NULL;
}
