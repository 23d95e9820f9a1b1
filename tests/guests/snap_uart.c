/* SPDX-License-Identifier: MIT */
/* Snapshot marker guest: UART input and PLIC pending state across a snapshot.
 *
 * The guest enables the 16550's receive interrupt (IER bit 0) and PLIC
 * source 10 (the UART) for its context with priority 1 and threshold 0, but
 * keeps sie.SEIE = 0: the interrupt is pending and not taken. It prints
 * "UART-READY"; the harness types bytes on the host console (input goes to
 * the focused VM, this one). Once LSR shows data ready and the PLIC pending
 * register (0x0c001000) has bit 10, the guest waits settle_ms more for the
 * rest, prints "SNAPSHOT-READY" and waits until the VM generation ID
 * changes (a restore gives the VM a new one; the original never sees a
 * change). The harness snapshots it, destroys the original and restores the
 * file. The restored copy checks that source 10 is still pending and LSR
 * still says data ready, then unmasks: it must take the external interrupt,
 * claim source 10, read the bytes (printed in hex for the harness, which
 * typed them) and complete; after that nothing is pending. Bootargs:
 * settle_ms=N (default 500), max_wait_ms=N (default 120000).
 */
#include "libguest.h"

#define T "snap_uart"
#define UART		0x10000000UL
#define UART_RBR	0
#define UART_IER	1
#define UART_IIR	2
#define UART_LSR	5
#define LSR_DR		0x01
#define IER_RDI		0x01
#define PLIC		0x0c000000UL
#define PLIC_PRIO(s)	(PLIC + 4 * (s))
#define PLIC_PENDING	(PLIC + 0x1000)
#define PLIC_ENABLE(c)	(PLIC + 0x2000 + 0x80 * (c))
#define PLIC_THRESH(c)	(PLIC + 0x200000 + 0x1000 * (c))
#define PLIC_CLAIM(c)	(PLIC + 0x200004 + 0x1000 * (c))
#define UART_SRC	10
#define VMGENID_GPA	0x10100000UL
#define MAX_BYTES	64

static inline uint8_t uart_in(unsigned int reg)
{
	return *(volatile uint8_t *)(UART + reg);
}

static inline void uart_out(unsigned int reg, uint8_t v)
{
	*(volatile uint8_t *)(UART + reg) = v;
}

static inline uint32_t plic_in(unsigned long a)
{
	return *(volatile uint32_t *)a;
}

static inline void plic_out(unsigned long a, uint32_t v)
{
	*(volatile uint32_t *)a = v;
}

static uint64_t genid_read(void)
{
	const volatile uint64_t *id = (const volatile uint64_t *)VMGENID_GPA;

	return id[0] ^ id[1];
}

static volatile unsigned long irqs, claimed, nbytes, pending_after;
static char bytes[MAX_BYTES];

static void on_ext(unsigned long irq)
{
	uint32_t s = plic_in(PLIC_CLAIM(0));

	(void)irq;
	irqs++;
	claimed = s;
	while (uart_in(UART_LSR) & LSR_DR) {
		char c = (char)uart_in(UART_RBR);

		if (nbytes < MAX_BYTES)
			bytes[nbytes] = c;
		nbytes++;
	}
	plic_out(PLIC_CLAIM(0), s);	/* complete */
	pending_after = plic_in(PLIC_PENDING);
}

static bool src_pending(void)
{
	return plic_in(PLIC_PENDING) & (1U << UART_SRC);
}

void test_main(unsigned long self)
{
	unsigned long settle = us_to_ticks(bootarg_ulong("settle_ms", 500) * 1000);
	unsigned long limit = us_to_ticks(bootarg_ulong("max_wait_ms", 120000) * 1000);
	unsigned long t0, ctx = 0;	/* context c is vCPU c: we run on vCPU 0 */
	uint64_t genid;
	char hex[2 * MAX_BYTES + 1];
	bool changed = false;

	(void)self;
	if (!env.carapace) {
		report_skip(T, "needs Carapace (its PLIC contexts, a snapshot, a generation ID)");
		return;
	}
	genid = genid_read();
	csr_clear(sstatus, SR_SIE);
	csr_clear(sie, MIP_SEIP);
	while (uart_in(UART_LSR) & LSR_DR)	/* nothing typed yet: drain anyway */
		(void)uart_in(UART_RBR);
	plic_out(PLIC_PRIO(UART_SRC), 1);
	plic_out(PLIC_ENABLE(ctx), 1U << UART_SRC);
	plic_out(PLIC_THRESH(ctx), 0);
	uart_out(UART_IER, IER_RDI);
	trap_set_irq(IRQ_S_EXT, on_ext);

	printf("UART-READY\n");
	t0 = rdtime();
	while (!((uart_in(UART_LSR) & LSR_DR) && src_pending()) && rdtime() - t0 < limit)
		udelay(1000);
	if (!check_eq(T, "typed input: LSR data ready and PLIC source 10 pending",
		      (uart_in(UART_LSR) & LSR_DR) && src_pending(), 1))
		return;
	udelay(ticks_to_us(settle));	/* the rest of the bytes */
	check_eq(T, "masked (sie.SEIE = 0): sip.SEIP pending, not taken",
		 !!(csr_read(sip) & MIP_SEIP), 1);
	printf("SNAPSHOT-READY pending=0x%x\n", plic_in(PLIC_PENDING));

	t0 = rdtime();
	while (rdtime() - t0 < limit) {
		if (genid_read() != genid) {
			changed = true;
			break;
		}
		udelay(1000);
	}
	if (!check_eq(T, "restored: a new VM generation ID", changed, 1))
		return;
	check_eq(T, "restored: PLIC source 10 still pending", src_pending(), 1);
	check_eq(T, "restored: LSR still says data ready", uart_in(UART_LSR) & LSR_DR, LSR_DR);
	check_eq(T, "restored: sip.SEIP pending", !!(csr_read(sip) & MIP_SEIP), 1);
	check_eq(T, "restored: no interrupt taken yet", irqs, 0);
	csr_set(sie, MIP_SEIP);
	csr_set(sstatus, SR_SIE);
	wait_for(irqs, 1000000);
	csr_clear(sstatus, SR_SIE);
	csr_clear(sie, MIP_SEIP);
	check_eq(T, "unmasked: one external interrupt", irqs, 1);
	check_eq(T, "claim: source 10 (the UART)", claimed, UART_SRC);
	check_le(T, "bytes read fit the buffer", nbytes, MAX_BYTES);
	for (unsigned long i = 0; i < nbytes && i < MAX_BYTES; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)bytes[i]);
	hex[2 * (nbytes < MAX_BYTES ? nbytes : MAX_BYTES)] = 0;
	printf("INFO: " T ": read %lu bytes: %s\n", nbytes, hex);
	check_eq(T, "after complete: source 10 no longer pending",
		 pending_after & (1U << UART_SRC), 0);
	check_eq(T, "after the reads: LSR data ready clear", uart_in(UART_LSR) & LSR_DR, 0);
	uart_out(UART_IER, 0);
}
