/* SPDX-License-Identifier: MIT */
/* A store outside guest RAM: under Carapace the VM must be stopped.
 *
 * Prints "INFO: fault_oob: store pc 0x... addr 0x..." and the marker line
 * BEFORE-OOB, then stores.
 * Mode-dependent:
 *  - Carapace: the store goes to GPA 0x40000000 (no RAM, no emulated
 *    device) and the hypervisor stops the VM there; nothing after the marker
 *    may appear (the driver checks the stop message). If the store returns
 *    or traps into the guest, that is a FAIL.
 *  - bare QEMU: 0x40000000 is the PCIe MMIO window there and silently takes
 *    the store, so the payload stores to the first byte after RAM instead,
 *    which is unmapped: OpenSBI hands the access fault to our handler and
 *    the payload checks scause 7, stval and sepc.
 */
#include "libguest.h"

#define T "fault_oob"
#define OOB_ADDR	0x40000000UL

/* A global label on the store itself, so its pc can be printed up front. */
void oob_store(unsigned long addr, unsigned long val);
__asm__(".pushsection .text\n"
	".option push\n"
	".option norvc\n"
	".globl oob_store\n"
	"oob_store:\n\t"
	"sd a1, 0(a0)\n\t"
	"ret\n"
	".option pop\n"
	".popsection");

void test_main(unsigned long hartid)
{
	unsigned long pc = (unsigned long)oob_store, n;
	unsigned long addr = env.carapace ? OOB_ADDR : env.ram_base + env.ram_size;
	struct trap_record tr;

	(void)hartid;
	/* The driver looks for this pc in the hypervisor's stop message. */
	report_info(T, "store pc 0x%lx addr 0x%lx", pc, addr);
	printf("BEFORE-OOB\n");
	trap_arm();
	oob_store(addr, 0x0bad0bad);
	n = trap_disarm(&tr);
	report_info(T, "store returned: %lu traps, scause %lu stval 0x%lx", n,
		    tr.scause, tr.stval);
	if (env.carapace) {
		report_fail(T, "guest ran on after the store (got %s, want VM stopped)",
			    n ? "a guest trap" : "no trap");
		return;
	}
	check_eq(T, "store faults once", n, 1);
	check_eq(T, "scause is store access fault", tr.scause,
		 EXC_STORE_ACCESS);
	check_eqx(T, "stval is the address", tr.stval, addr);
	check_eqx(T, "sepc is the store", tr.sepc, pc);
}
