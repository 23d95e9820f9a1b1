/* SPDX-License-Identifier: MIT */
/* Hart holder (issue 22, "no guest action may hold a hart"): a guest that
 * tries to stay for ever in one path where the hypervisor resumes it without
 * going through its scheduler. Each mode is one such path; the guest never
 * returns from it. tests/guests/test_hold.py runs every mode beside a victim
 * VM on one hart while a management client pings the host, and checks that
 * the host answers within a bound, the victim makes progress and each holder
 * can be destroyed.
 *
 * Bootarg mode=N selects the path:
 *   0 lp_window_self  landing pads on, stvec at a jump-to-itself without an
 *                     lpad, then an indirect jump there: the landing-pad
 *                     fault's re-delivery window (hyp/cfi/lp_redeliver.c)
 *                     finds the vCPU at the faulting pc at every timer exit
 *   1 lp_window_sbi   the same, but the handler makes SBI calls for ever
 *                     (exits that keep the window open)
 *   2 ecall_loop      SBI calls back to back (the fast exit path)
 *   3 mmio_loop       UART register reads back to back (fast MMIO path)
 *   4 wfi_pending     WFI with an interrupt pending and sstatus.SIE off (the
 *                     run loop re-enters at once)
 *   5 trap_loop       stvec at an instruction that exits and is re-injected
 *                     as an illegal instruction to itself
 *   6 spin            a plain loop with interrupts off
 * It prints "HOLD-START: mode N name" just before it enters the path. */
#include "libguest.h"
#include "cfi.h"

#define T "hold"
#define UART_LSR	0x10000005UL

void hold_self(void);
void hold_sbi_handler(void);
void hold_illegal(void);

/* Targets of the indirect jumps: no lpad, 4-byte aligned (stvec direct). */
__asm__(".text\n"
	".align 2\n"
	".globl hold_self\n"
	"hold_self:\n"
	"	j hold_self\n"
	".align 2\n"
	".globl hold_sbi_handler\n"
	"hold_sbi_handler:\n"
	"	li a7, 0x10\n"		/* SBI base, get_spec_version */
	"	li a6, 0\n"
	"	ecall\n"
	"	j hold_sbi_handler\n"
	".align 2\n"
	".globl hold_illegal\n"
	"hold_illegal:\n"
	"	csrr a0, hgatp\n"	/* a virtual-instruction exit, re-injected here */
	"	j hold_illegal\n");

static void __attribute__((noreturn)) jump_without_lpad(void (*target)(void))
{
	/* through a5: not x1/x5/x7, so the jump expects a landing pad */
	__asm__ volatile("mv a5, %0\n\tjalr x0, 0(a5)" :: "r"(target) : "a5", "memory");
	__builtin_unreachable();
}

static void __attribute__((noreturn)) lp_window(void (*handler)(void))
{
	struct sbiret r = fwft_set(SBI_FWFT_LANDING_PAD, 1, 0);

	if (r.error)
		report_info(T, "FWFT LANDING_PAD refused (%ld): the fault path is not reached",
			    r.error);
	csr_clear(sstatus, SR_SIE);
	csr_write(stvec, (unsigned long)handler);
	jump_without_lpad(handler);
}

static const char *const names[] = {
	"lp_window_self", "lp_window_sbi", "ecall_loop", "mmio_loop",
	"wfi_pending", "trap_loop", "spin",
};

void test_main(unsigned long hartid)
{
	unsigned long mode = bootarg_ulong("mode", 0);

	(void)hartid;
	if (mode >= ARRAY_SIZE(names)) {
		report_fail(T, "mode %lu unknown", mode);
		return;
	}
	printf("HOLD-START: mode %lu %s\n", mode, names[mode]);
	switch (mode) {
	case 0:
		lp_window(hold_self);
	case 1:
		lp_window(hold_sbi_handler);
	case 2:
		for (;;)
			SBI_CALL0(SBI_EXT_BASE, SBI_BASE_GET_SPEC_VERSION);
	case 3:
		for (;;)
			(void)*(volatile uint8_t *)UART_LSR;
	case 4:
		csr_clear(sstatus, SR_SIE);
		csr_write(sie, MIP_SSIP);
		csr_set(sip, MIP_SSIP);
		for (;;)
			wfi();
	case 5:
		csr_clear(sstatus, SR_SIE);
		csr_write(stvec, (unsigned long)hold_illegal);
		hold_illegal();
		break;
	case 6:
		csr_clear(sstatus, SR_SIE);
		for (;;)
			cpu_relax();
	}
	report_fail(T, "mode %lu returned", mode);
}
