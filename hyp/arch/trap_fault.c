/* SPDX-License-Identifier: MIT */
/* A trap taken in the hypervisor's own code is a hypervisor bug: report and
 * stop. A page fault is named with what the address is in the hypervisor's
 * own map (hyp/mm/hyp_map.c): a store to text or a jump into data is W^X. */
#include <arch/riscv/csr.h>
#include <arch/riscv/encoding.h>
#include <log.h>
#include <hart.h>
#include <hyp_cfi.h>

/* __hyp_fault_entry (trap.S) runs the report on this, not on the stack
 * that may have overflowed into its guard page */
char hyp_fault_stacks[HART_MAX][HYP_FAULT_STACK_SIZE] __attribute__((aligned(16)));

extern char __text_start[], __text_end[], __rodata_end[], __image_end[];
extern char __shadow_stacks_start[], __shadow_stacks_end[];

static bool in(unsigned long a, const char *start, const char *end)
{
	return a >= (unsigned long)start && a < (unsigned long)end;
}

/* What @addr is in the hypervisor's map, as the fault's report says it. */
static const char *what_is(unsigned long addr)
{
	for (unsigned int i = 0; i < HART_MAX; i++)
		if (in(addr, hart_stacks[i], hart_stacks[i] + HART_STACK_GUARD))
			return "a stack guard page: stack overflow";
	if (in(addr, __text_start, __text_end))
		return "text is read-only: W^X";
	if (in(addr, __text_end, __rodata_end))
		return "rodata: read-only, never executable";
	if (in(addr, __shadow_stacks_start, __shadow_stacks_end))
		return "a shadow-stack page or its guard";
	if (in(addr, __rodata_end, __image_end))
		return "data is never executable: W^X";
	return "not mapped for the hypervisor, or never executable";
}

void hyp_fault_handler(void);
void hyp_fault_handler(void)
{
	unsigned long cause = csr_read(CSR_SCAUSE), tval = csr_read(CSR_STVAL);
	unsigned long sepc = csr_read(CSR_SEPC);
	const char *kind = cause == EXC_INST_PAGE_FAULT ? "instruction" :
			   cause == EXC_LOAD_PAGE_FAULT ? "load" :
			   cause == EXC_STORE_PAGE_FAULT ? "store" : NULL;

	hyp_cfi_fault(cause, sepc, tval);	/* a CFI violation: says so, stops */
	if (kind)
		hyp_panic("hypervisor %s page fault at 0x%lx (%s) on hart %lu, sepc 0x%lx", kind,
			  tval, what_is(tval), this_hart()->hartid, sepc);
	hyp_panic("hypervisor trap on hart %lu: scause 0x%lx sepc 0x%lx stval 0x%lx",
		  this_hart()->hartid, cause, sepc, tval);
}
