/* SPDX-License-Identifier: MIT */
/* Snapshot marker guest: a landing-pad check pending at the moment of the
 * snapshot (ELP = expected) still fires after restore.
 *
 * The guest turns on landing pads for itself (FWFT LANDING_PAD), prints
 * "SNAPSHOT-READY" and runs a loop of indirect jumps through a5 (not x7, so
 * ELP becomes expected) to a target that is not an lpad: every jump must
 * take a software-check exception (scause 18, stval 2) at the target, whose
 * own instruction counts "the target ran" and must never run. The harness
 * snapshots the VM until a file holds it stopped between a jump and its
 * target (ELP expected: the VCPU's saved sstatus.SPELP, or on QEMU 10.0.2
 * vsstatus.SPELP, where an exit with henvcfg.LPE=1 puts the ELP, docs/cfi.md
 * §7 Q4), then restores that file. The restored copy resumes at the target
 * with ELP expected: the check must fire as its first act. Every 16384 jumps the
 * loop reads the VM generation ID; a restore gives the VM a new one (the
 * original never sees a change), and the copy then leaves the loop and
 * checks: faults == jumps, the target never ran, no other trap.
 *
 * Why a loop and not one fault parked in a handler with sstatus.SPELP = 1:
 * on QEMU 10.0.2 any exit from VS while henvcfg.LPE=1 overwrites the guest's
 * vsstatus.SPELP with the current ELP (Q4), and with LPE=0 HS sret clears it
 * (Q5), so a handler's SPELP=1 is lost at its first SBI call or host
 * interrupt, snapshot or not.
 *
 * The loop and the trap vector are asm without indirect jumps (C may jump
 * through tables): they run with landing pads on. Run with cfi=delegate so
 * that the faults stay in the guest (the loop then never exits to the
 * hypervisor but to read the ID, and a pause often finds it at the target).
 * Bootargs: max_wait_ms=N (default 120000): how long the loop runs without
 * a new generation ID before it gives up (a FAIL). run_ms=N: for a live
 * migration, which moves the same VM and keeps its generation ID: the loop
 * runs N ms of guest time and must end by that deadline, never by an ID
 * change; the same checks follow.
 */
#include "libguest.h"
#include "cfi.h"

#define T "snap_elp"
#define VMGENID_GPA	0x10100000UL
#define PAD_INSNS	64

struct elp_rec {
	unsigned long jumps;	/* indirect jumps to the target */
	unsigned long ran;	/* times the target's instruction ran (ELP lost) */
	unsigned long faults;	/* landing-pad faults at the target */
	unsigned long other;	/* any other trap */
	unsigned long last_cause, last_tval, last_epc;
	unsigned long fwft_on;	/* SBI error of FWFT LANDING_PAD=1 */
	unsigned long timed_out;
};

#define ER_FAULTS	(2 * 8)
#define ER_OTHER	(3 * 8)
#define ER_CAUSE	(4 * 8)
#define ER_TVAL		(5 * 8)
#define ER_EPC		(6 * 8)

_Static_assert(__builtin_offsetof(struct elp_rec, last_epc) == ER_EPC, "elp_rec layout");

struct elp_rec elp_rec;

/*
 * elp_loop(genid, deadline): with landing pads on, jump to elp_target until
 * the 8 bytes at @genid change or rdtime() passes @deadline; fills elp_rec
 * (jumps, ran, fwft_on, timed_out; the vector counts the traps). Returns
 * with landing pads off again.
 */
void elp_loop(unsigned long genid, unsigned long deadline);
void elp_vector(void);
extern char elp_target[];

__asm__(
"	.text\n"
"	.option push\n"
"	.option norvc\n"
"	.align 2\n"
"	.globl elp_loop\n"
"elp_loop:\n"
"	addi	sp, sp, -64\n"
"	sd	ra, 0(sp)\n"
"	sd	s0, 8(sp)\n"
"	sd	s1, 16(sp)\n"
"	sd	s2, 24(sp)\n"
"	sd	s3, 32(sp)\n"
"	sd	s4, 40(sp)\n"
"	mv	s0, a0\n"		/* generation ID address */
"	mv	s4, a1\n"		/* deadline */
"	ld	s3, 0(s0)\n"		/* the ID now */
"	li	s1, 0\n"		/* the target ran */
"	li	s2, 0\n"		/* jumps */
FWFT_SET_LP(1)
"	la	t0, elp_rec\n"
"	sd	a0, 7 * 8(t0)\n"	/* fwft_on */
"	bnez	a0, 4f\n"
"	la	a5, elp_target\n"
"1:	slli	t0, s2, 64 - 14\n"	/* every 16384 jumps: */
"	bnez	t0, 2f\n"
"	ld	t1, 0(s0)\n"		/* a restore changes the ID */
"	bne	t1, s3, 3f\n"
"	rdtime	t1\n"
"	bgeu	t1, s4, 5f\n"
"	.balign	2048\n"		/* the block below stays in one page */
"2:	addi	s2, s2, 1\n"
	/* one long translation block before the jump: a host interrupt
	 * (the pause) mostly arrives while it runs, and QEMU takes it at the
	 * start of the next block, the target, with ELP expected */
"	.rept	" __stringify(PAD_INSNS) "\n"
"	sfence.vma\n"		/* QEMU empties its TLB: slow, stays in the block */
"	.endr\n"
"	jalr	x0, 0(a5)\n"		/* rs1 = a5: ELP = expected */
"	.globl elp_target\n"
"elp_target:\n"
"	addi	s1, s1, 1\n"		/* not an lpad: must fault, never run */
"	.globl elp_next\n"
"elp_next:\n"
"	j	1b\n"
"5:	la	t0, elp_rec\n"
"	li	t1, 1\n"
"	sd	t1, 8 * 8(t0)\n"	/* timed_out */
"3:\n"
FWFT_SET_LP(0)
"4:	la	t0, elp_rec\n"
"	sd	s2, 0(t0)\n"
"	sd	s1, 8(t0)\n"
"	ld	ra, 0(sp)\n"
"	ld	s0, 8(sp)\n"
"	ld	s1, 16(sp)\n"
"	ld	s2, 24(sp)\n"
"	ld	s3, 32(sp)\n"
"	ld	s4, 40(sp)\n"
"	addi	sp, sp, 64\n"
"	ret\n"				/* rs1 = ra: sets no ELP */
"\n"
/* Every trap: count it, resume at elp_next with ELP clear. Uses t0-t3 only
 * (the loop keeps nothing there across the jump). */
"	.align 2\n"
"	.globl elp_vector\n"
"elp_vector:\n"
"	la	t0, elp_rec\n"
"	csrr	t1, scause\n"
"	csrr	t2, stval\n"
"	csrr	t3, sepc\n"
"	sd	t1, " __stringify(ER_CAUSE) "(t0)\n"
"	sd	t2, " __stringify(ER_TVAL) "(t0)\n"
"	sd	t3, " __stringify(ER_EPC) "(t0)\n"
"	addi	t1, t1, -" __stringify(EXC_SW_CHECK) "\n"
"	addi	t2, t2, -" __stringify(SWCHECK_TVAL_LANDING_PAD) "\n"
"	or	t1, t1, t2\n"
"	la	t2, elp_target\n"
"	sub	t3, t3, t2\n"
"	or	t1, t1, t3\n"
"	li	t2, " __stringify(ER_FAULTS) "\n"
"	beqz	t1, 6f\n"
"	li	t2, " __stringify(ER_OTHER) "\n"
"6:	add	t2, t2, t0\n"
"	ld	t1, 0(t2)\n"
"	addi	t1, t1, 1\n"
"	sd	t1, 0(t2)\n"
"	la	t1, elp_next\n"
"	csrw	sepc, t1\n"
"	li	t1, " __stringify(SR_SPELP) "\n"
"	csrc	sstatus, t1\n"		/* resume with ELP clear */
"	sret\n"
"	.option pop\n");

void test_main(unsigned long self)
{
	unsigned long old_stvec = csr_read(CSR_STVEC);
	unsigned long run_ms = bootarg_ulong("run_ms", 0);
	unsigned long wait = us_to_ticks((run_ms ? run_ms : bootarg_ulong("max_wait_ms", 120000)) *
					 1000);
	struct elp_rec *r = &elp_rec;

	(void)self;
	if (!env.carapace) {
		report_skip(T, "needs Carapace (a snapshot and a VM generation ID)");
		return;
	}
	printf("SNAPSHOT-READY target=0x%lx\n", (unsigned long)elp_target);
	csr_write(CSR_STVEC, (unsigned long)elp_vector);
	elp_loop(VMGENID_GPA, rdtime() + wait);
	csr_write(CSR_STVEC, old_stvec);
	if (r->fwft_on) {
		report_skip(T, "no landing pads for this guest (FWFT error %ld)", (long)r->fwft_on);
		return;
	}
	report_info(T, "%lu jumps, %lu landing-pad faults, %lu target runs, %lu other traps "
		    "(last: scause %lu stval %lu sepc 0x%lx)", r->jumps, r->faults, r->ran,
		    r->other, r->last_cause, r->last_tval, r->last_epc);
	if (run_ms)
		check_eq(T, "moved: the loop ran its run_ms (the generation ID stayed)",
			 r->timed_out, 1);
	else
		check_eq(T, "restored: a new VM generation ID ended the loop", r->timed_out, 0);
	check_ge(T, "jumps made", r->jumps, 16384);
	check_eq(T, "every jump to the non-lpad target took a landing-pad fault", r->faults,
		 r->jumps);
	check_eq(T, "the target never ran (no ELP lost)", r->ran, 0);
	check_eq(T, "no other traps", r->other, 0);
}
