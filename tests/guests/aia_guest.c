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
 * At the end it reports the IMSIC accesses both vCPUs made that exit in
 * software (sireg with siselect 0x70..0xFF, stopei; 32-bit stores into a
 * vCPU's page), which test_aia_guest.py compares with the VM's metrics.
 * Bootargs: rounds=N (IPI round trips, default 200); gfiles=1: the host
 * has guest interrupt files (stage 4), so the IPIs must not exit. */
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

static void hart1_main(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	file_init();
	csr_set(sstatus, SR_SIE);
	WRITE_ONCE(ready1, true);
	while (!READ_ONCE(stop1))
		wfi();
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

static void ipis(unsigned long rounds, bool gfiles)
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
		    gfiles ? "guest files" : "software file");
	if (gfiles)	/* the slice timer's exits only, not one per IPI */
		check_le(T, "IPIs through guest files do not exit", e, rounds / 10);
	else
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
	ipis(rounds, gfiles);
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
