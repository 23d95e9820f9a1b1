/* SPDX-License-Identifier: MIT */
/* A guest's AIA in software (docs/design-aia.md 3.6, 3.10; stage 3: no
 * guest interrupt files, so every IMSIC CSR access of the guest exits).
 *
 * In an AIA VM (its DT has an IMSIC node; run with 2 vCPUs and debug=1 for
 * the exit counter SBI_CARAPACE_EXITS):
 * - each vCPU sets up its file through siselect/sireg (eidelivery, eie);
 * - IPIs: the two vCPUs ping-pong identity 1 by stores to each other's file
 *   page (VIMSIC_BASE + hart * 4 KiB), each taken as an external interrupt
 *   and claimed through stopei (csrrw); the exits this costs are counted
 *   (> 0 in software: the stores and the claims exit);
 * - eithreshold masks: an identity at or above it is pending without a
 *   signal, and topei is 0 until the threshold drops;
 * - a device line through the APLIC: the UART's THR-empty interrupt (source
 *   10, level) configured with sourcecfg/target/setienum/domaincfg arrives
 *   as the EIID its target names; clearing the condition drops it;
 * - illegal accesses: odd eip and eie numbers, a reserved siselect value and
 *   the odd iprio registers are illegal instructions; a byte store to a file
 *   page is a store access fault; a store to the page past the VM's vCPUs,
 *   identity 0 and 256 change nothing.
 * In a PLIC VM (no IMSIC node), on the same AIA host: siselect, sireg and
 * stopei are illegal instructions (hstateen0 keeps them from it), and its
 * PLIC answers.
 * With snap=1 (an AIA VM, snapshot version 7) instead: both vCPUs leave
 * identities pending but masked (above eithreshold, or with eie clear), the
 * APLIC holds sources programmed, one pending (not enabled), one enabled;
 * the guest prints SNAPSHOT-READY and waits wait_ms; the harness snapshots
 * or migrates it and destroys the original. The copy finds every file
 * register, vsiselect and APLIC register exactly as before, the pending
 * identities delivered once unmasked, the APLIC's MSIs and the IPIs working.
 * At the end it reports the IMSIC accesses both vCPUs made that exit in
 * software (sireg with siselect 0x70..0xFF, stopei; 32-bit stores into a
 * vCPU's page), which test_aia_guest.py compares with the VM's metrics.
 * Bootargs: rounds=N (IPI round trips, default 200); snap=1; wait_ms=N;
 * gfiles=1: the host has guest interrupt files (stage 4), so the IPIs must
 * not exit. */
#include "libguest.h"

#define T		"aia"
#define IMSIC_BASE	0x28000000UL
#define IMSIC_PAGE	0x1000UL
#define APLIC_BASE	0x0d000000UL
#define PLIC_BASE	0x0c000000UL
#define UART		0x10000000UL
#define UART_IER	1
#define UART_IIR	2
#define IER_THRI	0x02
#define UART_SRC	10
#define UART_EIID	42

#define ISEL_EIDELIVERY	0x70
#define ISEL_EITHRESHOLD 0x72
#define ISEL_EIP0	0x80
#define ISEL_EIE0	0xc0
#define IPI_ID		1

#define EXC_ILLEGAL	2
#define EXC_STORE_ACCESS 7

static volatile unsigned long got[2][256];	/* [hart][identity]: interrupts taken */
static volatile unsigned long pong_rounds;
static volatile bool ready1, stop1;
/* [hart]: the accesses the hypervisor emulates for a file in software */
static volatile unsigned long csr_accesses[2], page_stores[2];

static void count(volatile unsigned long *per_hart)
{
	unsigned long self = current_hartid();

	if (self < 2)
		per_hart[self]++;
}

static void count_ireg(unsigned long isel)
{
	if (isel >= ISEL_EIDELIVERY && isel <= 0xff)
		count(csr_accesses);
}

/* snap=1: vCPU 1 sets its state (setup1) and reads it back (read1) when asked */
static volatile bool setup1, setup1_done, read1, read1_done;

/* What a vCPU's file and siselect hold (snap=1): before and after. */
struct file_regs {
	unsigned long siselect, eidelivery, eithreshold, eip[4], eie[4];
};
static struct file_regs regs1;	/* vCPU 1's, as it read them */

static inline void ireg_write(unsigned long isel, unsigned long v)
{
	count_ireg(isel);
	csr_write(CSR_SISELECT, isel);
	csr_write(CSR_SIREG, v);
}

static inline unsigned long ireg_read(unsigned long isel)
{
	count_ireg(isel);
	csr_write(CSR_SISELECT, isel);
	return csr_read(CSR_SIREG);
}

/* csrrw stopei: the top identity, claimed */
static inline unsigned long topei_claim(void)
{
	unsigned long v;

	count(csr_accesses);
	__asm__ volatile("csrrw %0, " __stringify(CSR_STOPEI) ", zero" : "=r"(v) :: "memory");
	return v >> 16;
}

static inline void imsic_send(unsigned long hart, uint32_t id)
{
	if (hart < 2)
		count(page_stores);
	*(volatile uint32_t *)(IMSIC_BASE + hart * IMSIC_PAGE) = id;
}

static unsigned long exits(void)
{
	return SBI_CALL0(SBI_EXT_CARAPACE_DEBUG, SBI_CARAPACE_EXITS).value;
}

/* the external interrupt: claim every identity the file signals */
static void on_ext(unsigned long irq)
{
	unsigned long self = current_hartid(), id;

	(void)irq;
	while ((id = topei_claim()) != 0) {
		if (self < 2 && id < 256)
			got[self][id]++;
		if (id == IPI_ID && self == 1)
			imsic_send(0, IPI_ID);	/* the pong */
		if (id == UART_EIID)	/* reading IIR ends THR-empty: the line drops */
			(void)*(volatile uint8_t *)(UART + UART_IIR);
	}
}

static void file_init(void)
{
	ireg_write(ISEL_EIDELIVERY, 1);
	ireg_write(ISEL_EITHRESHOLD, 0);
	ireg_write(ISEL_EIE0, ~1UL);	/* identities 1..63 */
	csr_set(sie, MIP_SEIP);
}

/* The file's registers through siselect/sireg (eip/eie 0, 2, 4, 6: identities
 * 0..255 on RV64), and the siselect the guest left before them. */
static void file_read(struct file_regs *f)
{
	f->siselect = csr_read(CSR_SISELECT);
	f->eidelivery = ireg_read(ISEL_EIDELIVERY);
	f->eithreshold = ireg_read(ISEL_EITHRESHOLD);
	for (unsigned int i = 0; i < 4; i++) {
		f->eip[i] = ireg_read(ISEL_EIP0 + 2 * i);
		f->eie[i] = ireg_read(ISEL_EIE0 + 2 * i);
	}
	f->eip[0] &= ~(1UL << 2);	/* a wake-up (ask1()) may be on its way */
	csr_write(CSR_SISELECT, f->siselect);
}

/* vCPU 1's part of snap=1: identities 2 (the wake-up) and 1 (IPIs) pass its
 * threshold 3; 9 will wait above it; 70 (eie1 bit 6) is enabled. */
static void hart1_setup(void)
{
	ireg_write(ISEL_EITHRESHOLD, 3);
	ireg_write(ISEL_EIE0 + 2, 1UL << 6);
	csr_write(CSR_SISELECT, ISEL_EIE0 + 2);	/* left there: a vsiselect to keep */
}

static void hart1_main(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	file_init();
	csr_set(sstatus, SR_SIE);
	WRITE_ONCE(ready1, true);
	while (!READ_ONCE(stop1)) {
		wfi();
		if (READ_ONCE(setup1) && !setup1_done) {
			hart1_setup();
			WRITE_ONCE(setup1_done, true);
		}
		if (READ_ONCE(read1) && !read1_done) {
			csr_clear(sstatus, SR_SIE);
			file_read(&regs1);
			csr_set(sstatus, SR_SIE);
			WRITE_ONCE(read1_done, true);
		}
	}
	csr_clear(sstatus, SR_SIE);
	sbi_hart_stop();
}

/* @fn's instruction raises exception @cause (and is skipped) */
static void expect_fault(const char *what, unsigned long cause, void (*fn)(void))
{
	struct trap_record r;
	unsigned long n;

	trap_arm();
	fn();
	n = trap_disarm(&r);
	if (check_eq(T, what, n, 1))
		check_eq(T, "  ... with the right cause", r.scause, cause);
}

static void read_eip1(void) { (void)ireg_read(ISEL_EIP0 + 1); }
static void write_eie3(void) { ireg_write(ISEL_EIE0 + 3, 1); }
static void read_reserved(void) { (void)ireg_read(0x40); }
static void read_iprio_odd(void) { (void)ireg_read(0x31); }
static void byte_store(void) { *(volatile uint8_t *)IMSIC_BASE = IPI_ID; }
static void read_siselect(void) { (void)csr_read(CSR_SISELECT); }
static void read_sireg(void) { (void)csr_read(CSR_SIREG); }
static void read_stopei(void) { (void)csr_read(CSR_STOPEI); }
static void read_stopi(void) { (void)csr_read(CSR_STOPI); }

static bool has_imsic(void)
{
	int soc = fdt_path_offset("/soc");

	for (int n = soc < 0 ? -1 : fdt_first_child(soc); n >= 0; n = fdt_next_sibling(n))
		if (!strcmp(fdt_node_name(n), "interrupt-controller@28000000"))
			return true;
	return false;
}

static void plic_vm(void)
{
	report_info(T, "a PLIC VM: no IMSIC, no APLIC");
	expect_fault("PLIC VM: siselect is an illegal instruction", EXC_ILLEGAL, read_siselect);
	expect_fault("PLIC VM: sireg is an illegal instruction", EXC_ILLEGAL, read_sireg);
	expect_fault("PLIC VM: stopei is an illegal instruction", EXC_ILLEGAL, read_stopei);
	expect_fault("PLIC VM: stopi is an illegal instruction", EXC_ILLEGAL, read_stopi);
	/* its PLIC answers as ever (an access to the IMSIC's address would stop
	 * the VM: nothing is emulated there, fault_oob) */
	*(volatile uint32_t *)(PLIC_BASE + 4 * UART_SRC) = 3;
	check_eq(T, "PLIC VM: the PLIC's priority register reads back",
		 *(volatile uint32_t *)(PLIC_BASE + 4 * UART_SRC), 3);
	*(volatile uint32_t *)(PLIC_BASE + 4 * UART_SRC) = 0;
}

/* @want: EXITS_SW (one or more per round trip), EXITS_GFILES (the slice
 * timer's only), EXITS_ANY (snap=1: the host may have either) */
enum { EXITS_SW, EXITS_GFILES, EXITS_ANY };

static void ipis(unsigned long rounds, int want)
{
	unsigned long e0 = exits(), e;

	for (unsigned long i = 0; i < rounds; i++) {
		unsigned long want = got[0][IPI_ID] + 1;

		imsic_send(1, IPI_ID);
		if (!wait_for(READ_ONCE(got[0][IPI_ID]) >= want, 1000000))
			break;
	}
	e = exits() - e0;
	check_eq(T, "IPIs: vCPU 1 took every ping", got[1][IPI_ID], rounds);
	check_eq(T, "IPIs: vCPU 0 took every pong", got[0][IPI_ID], rounds);
	report_info(T, "%lu IPI round trips: %lu exits on vCPU 0 (%s)", rounds, e,
		    want == EXITS_GFILES ? "guest files" : want == EXITS_SW ? "software file" : "either");
	if (want == EXITS_GFILES)	/* the slice timer's exits only, not one per IPI */
		check_le(T, "IPIs through guest files do not exit", e, rounds / 10);
	else if (want == EXITS_SW)
		check_ge(T, "IPIs in software exit (stores, claims)", e, rounds);
}

static void threshold(void)
{
	csr_clear(sstatus, SR_SIE);
	ireg_write(ISEL_EITHRESHOLD, 5);	/* only identities 1..4 pass */
	imsic_send(0, 7);
	check_eqx(T, "eithreshold 5: identity 7 pending", ireg_read(ISEL_EIP0) & (1UL << 7),
		  1UL << 7);
	check_eq(T, "eithreshold 5: no signal (sip.SEIP)", !!(csr_read(sip) & MIP_SEIP), 0);
	count(csr_accesses);
	check_eqx(T, "eithreshold 5: stopei reads 0", csr_read(CSR_STOPEI), 0);
	imsic_send(0, 3);
	check_eq(T, "identity 3 below it: signal", !!(csr_read(sip) & MIP_SEIP), 1);
	count(csr_accesses);
	check_eqx(T, "stopei: identity and priority 3", csr_read(CSR_STOPEI), (3UL << 16) | 3);
	/* how Linux finds it: stopi names the external interrupt (with VGEIN 0
	 * only through hvictl) */
	check_eqx(T, "stopi: the supervisor external interrupt", csr_read(CSR_STOPI) >> 16,
		  IRQ_S_EXT);
	check_eq(T, "claim 3", topei_claim(), 3);
	ireg_write(ISEL_EITHRESHOLD, 0);
	check_eq(T, "threshold 0: 7 signals", !!(csr_read(sip) & MIP_SEIP), 1);
	check_eq(T, "claim 7", topei_claim(), 7);
	check_eqx(T, "nothing left pending", ireg_read(ISEL_EIP0), 0);
	check_eq(T, "no signal left", !!(csr_read(sip) & MIP_SEIP), 0);
	check_eqx(T, "stopi: no external interrupt left", csr_read(CSR_STOPI) >> 16 == IRQ_S_EXT,
		  0);
	csr_set(sstatus, SR_SIE);
}

static void aplic_out(unsigned long off, uint32_t v)
{
	*(volatile uint32_t *)(APLIC_BASE + off) = v;
}

static uint32_t aplic_in(unsigned long off)
{
	return *(volatile uint32_t *)(APLIC_BASE + off);
}

static void uart_via_aplic(void)
{
	bool taken;

	check_eqx(T, "APLIC domaincfg: MSI mode, IE off", aplic_in(0), 0x80000004);
	aplic_out(4 * UART_SRC, 6);			/* sourcecfg: level high */
	aplic_out(0x3000 + 4 * UART_SRC, (0U << 18) | UART_EIID);	/* hart 0 */
	aplic_out(0x1edc, UART_SRC);			/* setienum */
	aplic_out(0, 1U << 8);				/* domaincfg.IE */
	check_eqx(T, "APLIC target reads back", aplic_in(0x3000 + 4 * UART_SRC), UART_EIID);
	*(volatile uint8_t *)(UART + UART_IER) = IER_THRI;	/* THR empty: the line rises */
	taken = wait_for(READ_ONCE(got[0][UART_EIID]) > 0, 1000000);
	*(volatile uint8_t *)(UART + UART_IER) = 0;
	check_eq(T, "UART interrupt through the APLIC: EIID taken on vCPU 0", taken, 1);
	udelay(2000);
	check_eq(T, "once, its line dropped", got[0][UART_EIID], 1);
	check_eq(T, "no other identity arrived", got[0][UART_EIID - 1] + got[0][UART_SRC], 0);
	check_eqx(T, "APLIC: source 10 no longer pending", aplic_in(0x1c00) & (1U << UART_SRC),
		  0);
}

static void illegal(void)
{
	unsigned long e0;

	expect_fault("odd eip (eip1) is an illegal instruction", EXC_ILLEGAL, read_eip1);
	expect_fault("odd eie (eie3) is an illegal instruction", EXC_ILLEGAL, write_eie3);
	expect_fault("reserved siselect 0x40 is an illegal instruction", EXC_ILLEGAL,
		     read_reserved);
	expect_fault("odd iprio (0x31) is an illegal instruction", EXC_ILLEGAL, read_iprio_odd);
	check_eqx(T, "iprio0 reads 0", ireg_read(0x30), 0);
	expect_fault("byte store to a file page: store access fault", EXC_STORE_ACCESS,
		     byte_store);
	csr_clear(sstatus, SR_SIE);
	e0 = ireg_read(ISEL_EIP0);
	imsic_send(2, IPI_ID);	/* no vCPU 2: ignored */
	imsic_send(0, 0);
	imsic_send(0, 256);
	count(page_stores);
	*(volatile uint32_t *)(IMSIC_BASE + 4) = IPI_ID;	/* seteipnum_be: ignored */
	check_eqx(T, "page past the vCPUs, identities 0 and 256, seteipnum_be: nothing",
		  ireg_read(ISEL_EIP0), e0);
	check_eqx(T, "a file page reads 0", *(volatile uint32_t *)IMSIC_BASE, 0);
	csr_set(sstatus, SR_SIE);
	check_eq(T, "vCPU 1 took no stray interrupt", got[1][IPI_ID], pong_rounds);
}

/* Ask vCPU 1 for @flag's work (it wakes on identity 2) and wait for @done. */
static bool ask1(volatile bool *flag, volatile bool *done)
{
	WRITE_ONCE(*done, false);
	WRITE_ONCE(*flag, true);
	for (int i = 0; i < 100 && !READ_ONCE(*done); i++) {
		imsic_send(1, 2);
		udelay(1000);
	}
	WRITE_ONCE(*flag, false);
	return READ_ONCE(*done);
}

#define APLIC_SETIPNUM	0x1cdc
#define APLIC_SETIENUM	0x1edc
#define APLIC_SETIP0	0x1c00
#define APLIC_SETIE0	0x1e00
#define APLIC_INCLRIP0	0x1d00
#define SRC_EDGE	5	/* edge rising, to vCPU 1 identity 50: pending, not enabled */
#define SRC_DETACHED	6	/* detached, to vCPU 0 identity 51: enabled, not pending */
#define EIID_EDGE	50
#define EIID_DETACHED	51

struct aplic_regs {
	uint32_t domaincfg, cfg_edge, cfg_det, target_edge, target_det, setip, setie, inclrip;
};

static void aplic_read(struct aplic_regs *a)
{
	a->domaincfg = aplic_in(0);
	a->cfg_edge = aplic_in(4 * SRC_EDGE);
	a->cfg_det = aplic_in(4 * SRC_DETACHED);
	a->target_edge = aplic_in(0x3000 + 4 * SRC_EDGE);
	a->target_det = aplic_in(0x3000 + 4 * SRC_DETACHED);
	a->setip = aplic_in(APLIC_SETIP0);
	a->setie = aplic_in(APLIC_SETIE0);
	a->inclrip = aplic_in(APLIC_INCLRIP0);
}

static bool same_file(const char *who, const struct file_regs *a, const struct file_regs *b)
{
	bool ok = check_eqx(T, "  siselect", b->siselect, a->siselect);

	ok &= check_eqx(T, "  eidelivery", b->eidelivery, a->eidelivery);
	ok &= check_eqx(T, "  eithreshold", b->eithreshold, a->eithreshold);
	for (unsigned int i = 0; i < 4; i++) {
		ok &= check_eqx(T, "  eip", b->eip[i], a->eip[i]);
		ok &= check_eqx(T, "  eie", b->eie[i], a->eie[i]);
	}
	check_eq(T, who, ok, 1);
	return ok;
}

/* snap=1: the state, the marker, the wait, then the checks (only a copy
 * restored or moved in gets there: the original is destroyed meanwhile). */
static void snapshot_state(unsigned long wait_ms)
{
	struct file_regs f0, f1, g0, g1;
	struct aplic_regs a, b;
	unsigned long before, took;

	pong_rounds = got[1][IPI_ID];
	/* vCPU 0: threshold 5, eie without identity 3 */
	csr_clear(sstatus, SR_SIE);
	ireg_write(ISEL_EITHRESHOLD, 5);
	ireg_write(ISEL_EIE0, ~1UL & ~(1UL << 3));
	ireg_write(ISEL_EIE0 + 2, 0);
	csr_set(sstatus, SR_SIE);
	if (!check_eq(T, "vCPU 1 set its file up", ask1(&setup1, &setup1_done), 1))
		return;
	imsic_send(0, 3);	/* below the threshold, not enabled */
	imsic_send(0, 7);	/* enabled, above the threshold */
	imsic_send(0, 40);
	imsic_send(0, 66);	/* eie1 0 */
	imsic_send(1, 9);	/* above vCPU 1's threshold 3 */
	imsic_send(1, 70);	/* enabled, above it */
	/* the APLIC: an edge source pending but not enabled, a detached one
	 * enabled and not pending, IE on */
	aplic_out(4 * SRC_EDGE, 4);
	aplic_out(0x3000 + 4 * SRC_EDGE, (1U << 18) | EIID_EDGE);
	aplic_out(4 * SRC_DETACHED, 1);
	aplic_out(0x3000 + 4 * SRC_DETACHED, EIID_DETACHED);
	aplic_out(APLIC_SETIENUM, SRC_DETACHED);
	aplic_out(0, 1U << 8);
	aplic_out(APLIC_SETIPNUM, SRC_EDGE);
	udelay(1000);
	csr_clear(sstatus, SR_SIE);
	csr_write(CSR_SISELECT, ISEL_EITHRESHOLD);	/* left there: a vsiselect to keep */
	file_read(&f0);
	csr_set(sstatus, SR_SIE);
	if (!check_eq(T, "vCPU 1 read its file", ask1(&read1, &read1_done), 1))
		return;
	f1 = regs1;
	aplic_read(&a);
	check_eqx(T, "vCPU 0: 3, 7, 40 pending (masked)", f0.eip[0],
		  (1UL << 3) | (1UL << 7) | (1UL << 40));
	check_eqx(T, "vCPU 0: 66 pending (not enabled)", f0.eip[1], 1UL << 2);
	check_eqx(T, "vCPU 1: 9 pending (masked)", f1.eip[0] & (1UL << 9), 1UL << 9);
	check_eqx(T, "vCPU 1: 70 pending (masked)", f1.eip[1], 1UL << 6);
	check_eqx(T, "APLIC: edge source pending, not enabled", a.setip, 1U << SRC_EDGE);
	check_eqx(T, "APLIC: detached source enabled", a.setie, 1U << SRC_DETACHED);
	check_eq(T, "no signal while masked", !!(csr_read(sip) & MIP_SEIP), 0);
	printf("SNAPSHOT-READY eip0=0x%lx\n", f0.eip[0]);
	udelay(wait_ms * 1000);
	/* a copy: the same files, siselect and APLIC */
	csr_clear(sstatus, SR_SIE);
	file_read(&g0);
	csr_set(sstatus, SR_SIE);
	same_file("vCPU 0's file and siselect as before", &f0, &g0);
	if (!check_eq(T, "vCPU 1 read its file again", ask1(&read1, &read1_done), 1))
		return;
	g1 = regs1;
	same_file("vCPU 1's file and siselect as before", &f1, &g1);
	aplic_read(&b);
	check_eqx(T, "APLIC domaincfg as before", b.domaincfg, a.domaincfg);
	check_eqx(T, "APLIC sourcecfg as before", b.cfg_edge | b.cfg_det << 8,
		  a.cfg_edge | a.cfg_det << 8);
	check_eqx(T, "APLIC targets as before", b.target_edge ^ b.target_det,
		  a.target_edge ^ a.target_det);
	check_eqx(T, "APLIC pending and enabled as before", b.setip | (uint64_t)b.setie << 32,
		  a.setip | (uint64_t)a.setie << 32);
	check_eqx(T, "APLIC inputs as before", b.inclrip, a.inclrip);
	check_eq(T, "no signal while masked, after", !!(csr_read(sip) & MIP_SEIP), 0);
	/* and they work: IPIs, the masked identities once unmasked, MSIs */
	before = got[1][IPI_ID];
	for (unsigned long i = 0; i < 20; i++) {
		unsigned long want = got[0][IPI_ID] + 1;

		imsic_send(1, IPI_ID);
		if (!wait_for(READ_ONCE(got[0][IPI_ID]) >= want, 1000000))
			break;
	}
	check_eq(T, "IPIs after: vCPU 1 took 20 pings", got[1][IPI_ID] - before, 20);
	took = got[0][7] + got[0][40];
	ireg_write(ISEL_EITHRESHOLD, 0);
	udelay(1000);
	check_eq(T, "threshold 0: 7 and 40 taken once each", got[0][7] + got[0][40] - took, 2);
	check_eq(T, "3 and 66 still not enabled: not taken", got[0][3] + got[0][66], 0);
	aplic_out(APLIC_SETIENUM, SRC_EDGE);	/* its pending MSI goes to vCPU 1 */
	aplic_out(APLIC_SETIPNUM, SRC_DETACHED);	/* to vCPU 0 */
	udelay(1000);
	check_eq(T, "APLIC: the detached source's MSI taken on vCPU 0", got[0][EIID_DETACHED], 1);
	check_eqx(T, "APLIC: the edge source's MSI sent once enabled (nothing pending)",
		  aplic_in(APLIC_SETIP0), 0);
}

void test_main(unsigned long self)
{
	unsigned long rounds = bootarg_ulong("rounds", 200), other = other_hartid();
	bool gfiles = bootarg_ulong("gfiles", 0);

	(void)self;
	if (!env.carapace) {
		report_skip(T, "needs Carapace (an AIA VM in software)");
		return;
	}
	if (!has_imsic()) {
		plic_vm();
		return;
	}
	report_info(T, "an AIA VM: an IMSIC file per vCPU, an APLIC");
	trap_set_irq(IRQ_S_EXT, on_ext);
	file_init();
	check_eq(T, "eidelivery reads back 1", ireg_read(ISEL_EIDELIVERY), 1);
	check_eqx(T, "eie0: bit 0 (no identity) stays 0", ireg_read(ISEL_EIE0), ~1UL);
	csr_set(sstatus, SR_SIE);
	if (!start_other_hart(T, other, hart1_main, (bool *)&ready1, "one vCPU: no IPIs"))
		return;
	if (other != 1) {
		report_fail(T, "vCPU ids (got %lu, want 1)", other);
		return;
	}
	if (bootarg_ulong("snap", 0)) {
		ipis(20, EXITS_ANY);
		snapshot_state(bootarg_ulong("wait_ms", 4000));
		WRITE_ONCE(stop1, true);
		imsic_send(1, 2);
		return;
	}
	ipis(rounds, gfiles ? EXITS_GFILES : EXITS_SW);
	pong_rounds = got[1][IPI_ID];
	threshold();
	uart_via_aplic();
	illegal();
	WRITE_ONCE(stop1, true);
	imsic_send(1, 2);	/* wake it from its wfi */
	if (check_eq(T, "vCPU 1 stopped", hart_wait_state(other, SBI_HSM_STATE_STOPPED, 5000000), 1))
		report_info(T, "imsic accesses: csr %lu stores %lu",
			    csr_accesses[0] + csr_accesses[1], page_stores[0] + page_stores[1]);
}
