/* SPDX-License-Identifier: MIT */
/* CFI payload helpers: encodings, FWFT, a recording trap vector, U-mode entry. */
#ifndef GUEST_CFI_H
#define GUEST_CFI_H

#include <arch/riscv/encoding.h>
#include "guest.h"

/*
 * Layout of struct cfi_rec (one per hart, pointed to by sscratch while
 * cfi_trap_vector is installed). Shared with cfi.S.
 */
#define CR_COUNT	(0 * 8)		/* exceptions taken (not IRQs, not U ecalls) */
#define CR_SCAUSE	(1 * 8)		/* of the last exception */
#define CR_STVAL	(2 * 8)
#define CR_SEPC		(3 * 8)
#define CR_SSTATUS	(4 * 8)		/* sstatus as the vector found it */
#define CR_FIXUP	(5 * 8)		/* resume pc; 0: the faulting pc + 4 */
#define CR_LP		(6 * 8)		/* cause 18, tval 2 */
#define CR_SS		(7 * 8)		/* cause 18, tval 3 */
#define CR_IRQS		(8 * 8)		/* interrupts (none are expected) */
#define CR_SPELP	(9 * 8)		/* cause 18 with sstatus.SPELP=1 */
#define CR_UA0		(10 * 8)	/* a0, a1 of the U-mode ecall that ended */
#define CR_UA1		(11 * 8)	/* a cfi_enter_user() run */
#define CR_SAVE		(12 * 8)	/* 3 scratch slots for the vector */
#define CR_KCTX		(15 * 8)	/* ra, sp, s0..s11 of cfi_enter_user() */
#define CR_DETOUR	(29 * 8)	/* U pc of the "other task"; 0: none (below) */
#define CR_PERIOD	(30 * 8)	/* timer ticks between the detour's interrupts */
#define CR_DPC		(31 * 8)	/* the pc the detour interrupted */
#define CR_SWITCHES	(32 * 8)	/* interrupts that found SPELP=1 and detoured */
#define CR_SIZE		(33 * 8)

#ifndef __ASSEMBLER__

/*
 * Instruction strings for inline and top-level asm (docs/cfi.md §9.3).
 * @rd, @rs1, @rs2 are register names such as a0 or x7.
 */
#define LPAD(lpl)		".insn u 0x17, x0, " #lpl "\n\t"
#define SSPUSH_RA		".insn r 0x73, 4, 0x67, x0, x0, x1\n\t"
#define SSPUSH_T0		".insn r 0x73, 4, 0x67, x0, x0, x5\n\t"
#define SSPOPCHK_RA		".insn i 0x73, 4, x0, x1, -0x324\n\t"
#define SSPOPCHK_T0		".insn i 0x73, 4, x0, x5, -0x324\n\t"
#define SSRDP(rd)		".insn i 0x73, 4, " #rd ", x0, -0x324\n\t"
#define SSAMOSWAP_D(rd, rs2, rs1) ".insn r 0x2f, 3, 0x24, " #rd ", " #rs1 ", " #rs2 "\n\t"
/* FWFT SET LANDING_PAD to @on (0 or 1), no flags, as an ecall in asm: for
 * code that turns landing pads on or off around an indirect jump, where a C
 * call could itself jump. Clobbers a0 (the SBI error), a1, a2, a6, a7. */
#define FWFT_SET_LP(on)							\
	"li	a7, " __stringify(SBI_EXT_FWFT) "\n\t"			\
	"li	a6, " __stringify(SBI_FWFT_SET) "\n\t"			\
	"li	a0, " __stringify(SBI_FWFT_LANDING_PAD) "\n\t"		\
	"li	a1, " #on "\n\t"						\
	"li	a2, 0\n\t"							\
	"ecall\n\t"

#include "sbi.h"

struct cfi_rec {
	unsigned long count;
	unsigned long scause;
	unsigned long stval;
	unsigned long sepc;
	unsigned long sstatus;
	unsigned long fixup;
	unsigned long lp;
	unsigned long ss;
	unsigned long irqs;
	unsigned long spelp;
	unsigned long ua0, ua1;
	unsigned long save[3];
	unsigned long kctx[14];
	unsigned long detour, period, dpc, switches;
};

_Static_assert(sizeof(struct cfi_rec) == CR_SIZE, "cfi_rec layout");
_Static_assert(__builtin_offsetof(struct cfi_rec, kctx) == CR_KCTX, "cfi_rec kctx");
_Static_assert(__builtin_offsetof(struct cfi_rec, irqs) == CR_IRQS, "cfi_rec irqs");
_Static_assert(__builtin_offsetof(struct cfi_rec, ua0) == CR_UA0, "cfi_rec ua0");
_Static_assert(__builtin_offsetof(struct cfi_rec, detour) == CR_DETOUR, "cfi_rec detour");

/*
 * cfi_trap_vector (cfi.S) is all asm with no indirect jumps, so it can run
 * while landing pads are enforced in S/VS. On an exception it counts and
 * records it in the hart's struct cfi_rec, clears sstatus.SPELP and resumes
 * at rec->fixup if set, else at sepc + 4 (so CFI test code is built with
 * .option norvc). It does not start with an lpad: per the spec a trap
 * enters the handler with ELP clear. An ecall from U-mode is not recorded:
 * it ends the current cfi_enter_user() call instead.
 *
 * With rec->detour set, interrupts play a scheduler instead of being
 * masked: each one (the Sstc timer) re-arms stimecmp rec->period ticks
 * ahead, and one that came between an indirect jump and its target
 * (sstatus.SPELP=1) "switches tasks": it returns to rec->detour with ELP
 * clear, saving the pc and the pending ELP; the detour's ebreak switches
 * back, to that pc with ELP=1 again, as a kernel resuming the task does.
 */
void cfi_trap_vector(void);

/*
 * Run @fn(@a0, @a1, @a2) in U-mode (sret with SPP=0, SPELP=0) on stack
 * @usp. Returns the a0 of the U-mode ecall that ends the run (its a1 is in
 * rec->ua1). Needs cfi_trap_vector installed.
 */
unsigned long cfi_enter_user(unsigned long fn, unsigned long usp,
			     unsigned long a0, unsigned long a1, unsigned long a2);

/* Make this hart's traps go to cfi_trap_vector, recording into @rec. */
static inline void cfi_trap_install(struct cfi_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	csr_write(CSR_SSCRATCH, (unsigned long)rec);
	csr_write(CSR_STVEC, (unsigned long)cfi_trap_vector);
}

/* Back to the library vector (crt0's trap_entry, saved in @old_stvec). */
static inline void cfi_trap_remove(unsigned long old_stvec)
{
	csr_write(CSR_STVEC, old_stvec);
	csr_write(CSR_SSCRATCH, 0);
}

/* Forget the last exception before the next case. */
static inline void cfi_rec_clear(struct cfi_rec *rec)
{
	rec->count = 0;
	rec->scause = rec->stval = rec->sepc = rec->sstatus = 0;
	rec->fixup = 0;
	__asm__ volatile("" ::: "memory");
}

/* Checks of what @rec recorded (cfi_expect.c), PASS/FAIL lines of @test
 * named "@what: ...". cfi_expect_traps(): @n exceptions (0 or 1), the last
 * one shown if not. cfi_expect_fault(): one, with @cause at @pc (0: any) and
 * stval @tval, from S-mode if @from_s else from U. cfi_expect_illegal(): one
 * illegal-instruction exception at @pc, stval 0 or its bits @insn. */
bool cfi_expect_traps(const char *test, const struct cfi_rec *rec, const char *what,
		      unsigned long n);
void cfi_expect_fault(const char *test, const struct cfi_rec *rec, const char *what,
		      unsigned long cause, unsigned long pc, unsigned long tval, bool from_s);
void cfi_expect_illegal(const char *test, const struct cfi_rec *rec, const char *what,
			unsigned long pc, uint32_t insn, bool from_s);

static inline struct sbiret fwft_set(unsigned long feature, unsigned long value,
				     unsigned long flags)
{
	return SBI_CALL3(SBI_EXT_FWFT, SBI_FWFT_SET, feature, value, flags);
}

static inline struct sbiret fwft_get(unsigned long feature)
{
	return SBI_CALL1(SBI_EXT_FWFT, SBI_FWFT_GET, feature);
}

#endif /* __ASSEMBLER__ */
#endif
