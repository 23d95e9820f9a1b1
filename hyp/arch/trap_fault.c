/* SPDX-License-Identifier: MIT */
/* A trap taken in the hypervisor's own code is a hypervisor bug: report and stop. */
#include <arch/riscv/csr.h>
#include <log.h>
#include <hart.h>
#include <hyp_cfi.h>

void hyp_fault_handler(void);
void hyp_fault_handler(void)
{
	unsigned long scause = csr_read(CSR_SCAUSE), sepc = csr_read(CSR_SEPC);
	unsigned long stval = csr_read(CSR_STVAL);

	hyp_cfi_fault(scause, sepc, stval);	/* a CFI violation: says so, stops */
	hyp_panic("hypervisor trap on hart %lu: scause 0x%lx sepc 0x%lx stval 0x%lx",
		  this_hart()->hartid, scause, sepc, stval);
}
