/* SPDX-License-Identifier: MIT */
/* The evidence that the hypervisor's own map is W^X (wx_selftest.h): what a
 * memory-safety bug would try first, done on purpose, once, when the host
 * DT asks for it. The fault report (hyp/arch/trap_fault.c) names what was
 * hit and stops the host; getting past either attempt is a failure. */
#include <log.h>
#include <wx_selftest.h>

extern char __text_start[];

/* a `ret` in .data (not const: the compiler would put it in rodata) */
static volatile unsigned int data_code[2] = { 0x00008067u, 0x00008067u };

void wx_selftest(bool exec)
{
	volatile unsigned int *text = (volatile unsigned int *)(unsigned long)__text_start;
	void (*fn)(void) = (void (*)(void))(unsigned long)data_code;

	if (exec) {
		pr_info("W^X selftest: calling into data at 0x%lx", (unsigned long)data_code);
		fn();
		hyp_panic("W^X selftest: FAILED: the call into data at 0x%lx returned "
			  "(data is executable)", (unsigned long)data_code);
	}
	pr_info("W^X selftest: storing to text at 0x%lx", (unsigned long)text);
	*text = *text;
	hyp_panic("W^X selftest: FAILED: the store to text at 0x%lx went through "
		  "(text is writable)", (unsigned long)text);
}
