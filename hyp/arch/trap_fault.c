/* SPDX-License-Identifier: MIT */
/* A trap taken in the hypervisor's own code is a hypervisor bug: report and stop. */
#include <arch/riscv/csr.h>
#include <log.h>
#include <hart.h>

void hyp_fault_handler(void);
void hyp_fault_handler(void)
{
	hyp_panic("hypervisor trap on hart %lu: scause 0x%lx sepc 0x%lx stval 0x%lx",
		  this_hart()->hartid, csr_read(CSR_SCAUSE), csr_read(CSR_SEPC),
		  csr_read(CSR_STVAL));
}
