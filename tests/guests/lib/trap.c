/* SPDX-License-Identifier: MIT */
/* C side of the trap vector: run interrupt callbacks, record armed faults. */
#include <arch/riscv/encoding.h>
#include "printf.h"
#include "report.h"
#include "trap.h"

#define NR_IRQS	16

static irq_fn irq_fns[NR_IRQS];
static bool armed[MAX_HARTS];
static struct trap_record records[MAX_HARTS];

void trap_set_irq(unsigned int irq, irq_fn fn)
{
	if (irq < NR_IRQS)
		WRITE_ONCE(irq_fns[irq], fn);
}

void trap_arm(void)
{
	unsigned long h = current_hartid();

	memset(&records[h], 0, sizeof(records[h]));
	WRITE_ONCE(armed[h], true);
}

unsigned long trap_disarm(struct trap_record *r)
{
	unsigned long h = current_hartid();

	WRITE_ONCE(armed[h], false);
	if (r)
		*r = records[h];
	return records[h].count;
}

unsigned long insn_len(unsigned long pc)
{
	/* satp is Bare, so the pc is also the address to read the insn from. */
	return (*(const volatile uint16_t *)pc & 3) == 3 ? 4 : 2;
}

static unsigned long insn_bits(unsigned long pc)
{
	const volatile uint16_t *p = (const volatile uint16_t *)pc;

	if (insn_len(pc) == 2)
		return p[0];
	return p[0] | (unsigned long)p[1] << 16;
}

void trap_handler(struct trap_frame *tf)
{
	unsigned long h = current_hartid();
	unsigned long cause = tf->scause & ~CAUSE_IRQ_FLAG;

	if (tf->scause & CAUSE_IRQ_FLAG) {
		irq_fn fn = cause < NR_IRQS ? READ_ONCE(irq_fns[cause]) : NULL;

		if (fn) {
			fn(cause);
			return;
		}
		report_fail("trap", "unexpected interrupt on hart %lu (got scause 0x%lx, want none)",
			    h, tf->scause);
		report_done();
	}
	/* Fetch faults have no instruction to skip: those are always fatal. */
	if (h < MAX_HARTS && READ_ONCE(armed[h]) && cause != EXC_INST_ACCESS &&
	    cause != EXC_INST_PAGE_FAULT && cause != EXC_INST_MISALIGNED) {
		struct trap_record *r = &records[h];

		r->scause = tf->scause;
		r->stval = tf->stval;
		r->sepc = tf->sepc;
		r->sstatus = tf->sstatus;
		r->insn = insn_bits(tf->sepc);
		r->count++;
		tf->sepc += insn_len(tf->sepc);
		return;
	}
	report_fail("trap", "unexpected exception on hart %lu at sepc 0x%lx stval 0x%lx (got scause %lu, want none)",
		    h, tf->sepc, tf->stval, cause);
	report_done();
}
