/* SPDX-License-Identifier: MIT */
/* The victim AIA VM beside the malicious AIA guest (attack_aia.c,
 * tests/guests/test_attacks_aia.py): 2 vCPUs that keep checking their own
 * IMSIC files until destroyed (or run_ms passes).
 *
 * Set up once, each vCPU on its own file: delivery on, threshold 0, a few
 * identities enabled (the ones it sends itself, and "trap" identities no one
 * of this VM ever sends), and a pattern of identities set pending but not
 * enabled (they stay pending, never signal). Then:
 *  - vCPU 0 takes a timer tick every period_ms; at each it stores identity
 *    SELF_ID to its own page and PING_ID to vCPU 1's page;
 *  - vCPU 1 answers each PING_ID with PONG_ID to vCPU 0's page, and checks
 *    its own pending pattern after each;
 *  - every interrupt is claimed through stopei; an identity it did not
 *    expect (a trap identity, anything else) or an external interrupt with
 *    nothing to claim is spurious;
 * and every round (about round_ms, WFI between ticks) vCPU 0 checks: its
 * pending pattern exactly as set (eip words, eie words, eithreshold,
 * eidelivery), no spurious interrupt on either vCPU, ticks, self-IPIs and
 * pongs all progressed, no tick later than late_ms after its deadline and no
 * pong later than late_ms after its ping. One cumulative line per round:
 *   VICTIM-AIA: round N ticks T selfs S pongs P late_max_us L pong_max_us M
 *     eip_bad E spurious X progress_bad B
 * (on one line). Any failed check also prints a FAIL line at once.
 * corrupt_round=N sets one pattern identity's pending bit clear in round N
 * itself (the harness's negative control).
 */
#include "libguest.h"

#define T "victim_aia"
#define IMSIC_BASE	0x28000000UL
#define IMSIC_PAGE	0x1000UL
#define WORDS		4	/* identities 0..255 */
#define ISEL_EIDELIVERY	0x70
#define ISEL_EITHRESHOLD 0x72
#define ISEL_EIP0	0x80
#define ISEL_EIE0	0xc0

#define SELF_ID		1	/* vCPU 0 to itself */
#define PING_ID		2	/* vCPU 0 to vCPU 1 */
#define PONG_ID		3	/* vCPU 1 to vCPU 0 */
/* enabled, never sent by this VM: an arrival is an interrupt from outside */
#define TRAP_IDS	((1UL << 5) | (1UL << 9) | (1UL << 42) | (1UL << 63))

struct file_state {
	unsigned long eidelivery, eithreshold, eip[WORDS], eie[WORDS];
};

static struct file_state want[2];
static volatile unsigned long ticks, selfs, pongs, pings, spurious[2], eip_bad1;
static volatile unsigned long late_max_ticks, pong_max_ticks, next_deadline, period_ticks;
static volatile unsigned long ping_time, last_spurious_id[2];
static volatile bool ready1;

static unsigned long ireg_read(unsigned long isel)
{
	csr_write(CSR_SISELECT, isel);
	return csr_read(CSR_SIREG);
}

static void ireg_write(unsigned long isel, unsigned long v)
{
	csr_write(CSR_SISELECT, isel);
	csr_write(CSR_SIREG, v);
}

static void file_read(struct file_state *f)
{
	f->eidelivery = ireg_read(ISEL_EIDELIVERY);
	f->eithreshold = ireg_read(ISEL_EITHRESHOLD);
	for (unsigned long w = 0; w < WORDS; w++) {
		f->eip[w] = ireg_read(ISEL_EIP0 + 2 * w);
		f->eie[w] = ireg_read(ISEL_EIE0 + 2 * w);
	}
}

/* The file's pending pattern, without the identities in flight (the ones
 * this VM sends: pending for a moment before their claim). */
static bool file_as_set(unsigned long self)
{
	struct file_state f;

	file_read(&f);
	f.eip[0] &= ~((1UL << SELF_ID) | (1UL << PING_ID) | (1UL << PONG_ID));
	return !memcmp(&f, &want[self], sizeof(f));
}

static void send(unsigned long hart, uint32_t id)
{
	*(volatile uint32_t *)(IMSIC_BASE + hart * IMSIC_PAGE) = id;
}

/* Pending (not enabled) identities 64..255: a pattern per vCPU. */
static void file_setup(unsigned long self)
{
	struct file_state *f = &want[self];

	f->eidelivery = 1;
	f->eithreshold = 0;
	f->eie[0] = TRAP_IDS | (self ? 1UL << PING_ID : (1UL << SELF_ID) | (1UL << PONG_ID));
	f->eie[1] = 1UL << 7;	/* identity 71 enabled, never pending: a trap too */
	f->eie[2] = f->eie[3] = 0;
	f->eip[0] = 0;
	for (unsigned long w = 1; w < WORDS; w++)
		f->eip[w] = mix64(0xa1a0 + 4 * self + w) & ~f->eie[w];
	ireg_write(ISEL_EIDELIVERY, 0);
	ireg_write(ISEL_EITHRESHOLD, 0);
	for (unsigned long w = 0; w < WORDS; w++) {
		ireg_write(ISEL_EIP0 + 2 * w, f->eip[w]);
		ireg_write(ISEL_EIE0 + 2 * w, f->eie[w]);
	}
	ireg_write(ISEL_EIDELIVERY, 1);
	csr_set(sie, MIP_SEIP);
}

static void on_ext(unsigned long irq)
{
	unsigned long self = current_hartid(), id, n = 0;

	(void)irq;
	while (true) {
		__asm__ volatile("csrrw %0, " __stringify(CSR_STOPEI) ", zero" : "=r"(id) :: "memory");
		id >>= 16;
		if (!id)
			break;
		n++;
		if (self == 0 && id == SELF_ID) {
			selfs++;
		} else if (self == 0 && id == PONG_ID) {
			unsigned long lat = rdtime() - ping_time;

			if (lat > pong_max_ticks)
				pong_max_ticks = lat;
			pongs++;
		} else if (self == 1 && id == PING_ID) {
			send(0, PONG_ID);
			if (!file_as_set(1))
				eip_bad1++;
		} else {
			spurious[self & 1]++;
			last_spurious_id[self & 1] = id;
		}
	}
	if (!n) {	/* an external interrupt with nothing to claim */
		spurious[self & 1]++;
		last_spurious_id[self & 1] = 0;
	}
}

static void on_timer(unsigned long irq)
{
	unsigned long now = rdtime();

	(void)irq;
	if (now >= next_deadline && now - next_deadline > late_max_ticks)
		late_max_ticks = now - next_deadline;
	ticks++;
	next_deadline += period_ticks;
	if (next_deadline < now)	/* missed whole periods: counted by the tick total */
		next_deadline = now + period_ticks;
	sbi_set_timer(next_deadline);
	send(0, SELF_ID);
	if (pongs == pings) {	/* one ping in flight at a time */
		ping_time = rdtime();
		pings++;
		send(1, PING_ID);
	}
}

static void hart1_main(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	file_setup(1);
	csr_set(sstatus, SR_SIE);
	WRITE_ONCE(ready1, true);
	while (true)
		wfi();
}

void test_main(unsigned long hartid)
{
	unsigned long run_ms = bootarg_ulong("run_ms", 600000);
	unsigned long period_ms = bootarg_ulong("period_ms", 10);
	unsigned long round_ms = bootarg_ulong("round_ms", 200);
	unsigned long late_ms = bootarg_ulong("late_ms", 500);
	unsigned long corrupt_round = bootarg_ulong("corrupt_round", 0);
	unsigned long eip_bad = 0, progress_bad = 0, round = 0, start;
	unsigned long last[3] = { 0 }, other = other_hartid();

	(void)hartid;
	trap_set_irq(IRQ_S_EXT, on_ext);
	trap_set_irq(IRQ_S_TIMER, on_timer);
	file_setup(0);
	if (!start_other_hart(T, other, hart1_main, (bool *)&ready1, "needs vcpus=2"))
		return;
	printf("VICTIM-AIA-READY\n");
	period_ticks = us_to_ticks(period_ms * 1000);
	next_deadline = rdtime() + period_ticks;
	sbi_set_timer(next_deadline);
	csr_set(sie, MIP_STIP);
	csr_set(sstatus, SR_SIE);
	start = rdtime();

	while (rdtime() - start < us_to_ticks(run_ms * 1000)) {
		unsigned long round_end = rdtime() + us_to_ticks(round_ms * 1000);
		unsigned long now[3], bad;

		while (rdtime() < round_end)
			wfi();
		round++;
		csr_clear(sstatus, SR_SIE);
		if (round == corrupt_round)	/* negative control: the check must see it */
			ireg_write(ISEL_EIP0 + 2, want[0].eip[1] & ~(want[0].eip[1] & -want[0].eip[1]));
		bad = !file_as_set(0);
		csr_set(sstatus, SR_SIE);
		if (bad) {
			eip_bad++;
			report_fail(T, "round %lu: vCPU 0's file (got changed, want as set)", round);
		}
		if (READ_ONCE(eip_bad1)) {
			eip_bad += eip_bad1;
			report_fail(T, "round %lu: vCPU 1's file changed %lu times", round, eip_bad1);
			eip_bad1 = 0;
		}
		if (spurious[0] || spurious[1])
			report_fail(T, "round %lu: spurious interrupts (got %lu/%lu, last identity %lu/%lu, want 0)",
				    round, spurious[0], spurious[1], last_spurious_id[0],
				    last_spurious_id[1]);
		now[0] = READ_ONCE(ticks);
		now[1] = READ_ONCE(selfs);
		now[2] = READ_ONCE(pongs);
		if (now[0] == last[0] || now[1] == last[1] || now[2] == last[2] ||
		    ticks_to_us(late_max_ticks) > late_ms * 1000 ||
		    ticks_to_us(pong_max_ticks) > late_ms * 1000) {
			progress_bad++;
			report_fail(T, "round %lu: progress (got %lu ticks %lu selfs %lu pongs this round, worst lateness %lu us, pong %lu us, want > 0 and <= %lu ms)",
				    round, now[0] - last[0], now[1] - last[1], now[2] - last[2],
				    ticks_to_us(late_max_ticks), ticks_to_us(pong_max_ticks), late_ms);
		}
		memcpy(last, now, sizeof(last));
		printf("VICTIM-AIA: round %lu ticks %lu selfs %lu pongs %lu late_max_us %lu pong_max_us %lu eip_bad %lu spurious %lu progress_bad %lu\n",
		       round, now[0], now[1], now[2], ticks_to_us(late_max_ticks),
		       ticks_to_us(pong_max_ticks), eip_bad, spurious[0] + spurious[1], progress_bad);
	}
	csr_clear(sstatus, SR_SIE);
	sbi_set_timer(-1UL);
	check_eq(T, "files as set in every round", eip_bad, 0);
	check_eq(T, "no spurious interrupt", spurious[0] + spurious[1], 0);
	check_eq(T, "ticks, self-IPIs and pongs in every round, in time", progress_bad, 0);
}
