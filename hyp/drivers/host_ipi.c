/* SPDX-License-Identifier: MIT */
/* Host IPIs. Through the firmware an IPI is an ecall, OpenSBI's IPI code and
 * its M-mode software interrupt on the target: about 1 200 instructions
 * (docs/performance.md, "IPI latency"). The ACLINT SSWI (the ACLINT spec's
 * S-level software interrupt device; QEMU virt with aclint=on) lets S-mode
 * set another hart's SSIP with one store. */
#include <host_ipi.h>
#include <sbi_client.h>

#define MAX_HARTS	8

#ifndef HOST_TEST
#define mem_before_io()	asm volatile("fence rw, ow" ::: "memory")
#else
#define mem_before_io()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

static unsigned long fw_hartid[MAX_HARTS];
static volatile uint32_t *setssip[MAX_HARTS];
static bool use_sswi;

void host_ipi_init(const unsigned long *hartids, const uint64_t *sswi, unsigned int nr)
{
	bool all = sswi != NULL && nr > 0 && nr <= MAX_HARTS;

	for (unsigned int i = 0; i < nr && i < MAX_HARTS; i++) {
		fw_hartid[i] = hartids[i];
		all = all && sswi[i];
	}
	for (unsigned int i = 0; i < nr && i < MAX_HARTS; i++)
		setssip[i] = all ? (volatile uint32_t *)(uintptr_t)sswi[i] : NULL;
	use_sswi = all;
}

bool host_ipi_sswi(void)
{
	return use_sswi;
}

__attribute__((noinline)) void host_ipi_send(unsigned int hart)
{
	if (use_sswi) {
		/* what the target reads after SSIP (posted work, requests) first:
		 * the ecall was a barrier of its own, a device store is not */
		mem_before_io();
		*setssip[hart] = 1;
		return;
	}
	sbi_send_ipi(1, fw_hartid[hart]);
}
