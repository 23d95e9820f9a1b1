/* SPDX-License-Identifier: MIT */
/* Misaligned loads and stores emulated for a vCPU that asked for it with SBI
 * FWFT MISALIGNED_EXC_DELEG = 0 (hyp/dispatch/misaligned.c). */
#ifndef HYP_MISALIGNED_H
#define HYP_MISALIGNED_H
#include <types.h>
#include <exit_action.h>

struct vcpu;

/* A fault taken by one of the caught guest accesses below (scause 0: none). */
struct guest_fault {
	unsigned long scause, stval, htval;
};

/* arch/trap.S: one byte through the guest's two stages with its privilege
 * (HLV.BU / HSV.B), the fault caught into *f. */
unsigned long __guest_load_bu(unsigned long gva, struct guest_fault *f);
void __guest_store_b(unsigned long gva, unsigned long val, struct guest_fault *f);
/* arch/fp_reg.S: f register @n of the loaded vCPU (live on the hart). */
uint64_t __fp_reg_read(unsigned int n);
void __fp_reg_write(unsigned int n, uint64_t val);

/** misaligned_exit() - a load (@cause 4) or store (6) address-misaligned exit
 *  of @v, which emulates them: the access done byte by byte and the pc moved
 *  past it, or the guest's fault a byte took delivered to it, or (an access
 *  that is no plain load/store: AMO, LR/SC, vector) the exception itself.
 *  A G-stage fault on a byte fills *@gstage (the exit's CSRs are back): the
 *  caller serves it as its own (dispatch/exit.c) and the instruction runs
 *  again; the verdict returned is then EXIT_RESUME with the pc kept. */
struct exit_verdict misaligned_exit(struct vcpu *v, unsigned long cause,
				    struct guest_fault *gstage);
#endif
