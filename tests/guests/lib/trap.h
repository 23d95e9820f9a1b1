/* SPDX-License-Identifier: MIT */
/* Trap dispatch for the test guests: interrupt callbacks and expected faults. */
#ifndef GUEST_TRAP_H
#define GUEST_TRAP_H

#include "guest.h"

struct trap_record {
	unsigned long scause;
	unsigned long stval;
	unsigned long sepc;
	unsigned long sstatus;
	unsigned long insn;	/* instruction bits at sepc */
	unsigned long count;	/* exceptions taken while armed */
};

typedef void (*irq_fn)(unsigned long irq);

/* Called for interrupt @irq (scause without the interrupt bit), any hart. */
void trap_set_irq(unsigned int irq, irq_fn fn);

/*
 * Arm this hart for an exception: the next one is recorded and the faulting
 * instruction skipped instead of failing the test. trap_disarm() returns how
 * many were taken and fills @r with the last one.
 */
void trap_arm(void);
unsigned long trap_disarm(struct trap_record *r);

/* Length in bytes (2 or 4) of the instruction at @pc. */
unsigned long insn_len(unsigned long pc);

#endif
