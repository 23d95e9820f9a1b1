/* SPDX-License-Identifier: MIT */
/* SBI IPI send_ipi: to self, to the other vCPU, to all (base -1), bad masks.
 *
 * Needs 2 harts (skips the cross-hart part otherwise).
 * rounds=N: then N IPIs to the other vCPU while it sleeps in WFI, each
 * waited for before the next (under Carapace with a hart each, its WFIs
 * keep their hart: tests/guests/test_guests.py counts them).
 * Mode-dependent: a hart mask naming a hart that does not exist gives
 * INVALID_PARAM under Carapace (as the SBI spec says); bare OpenSBI 1.6
 * silently drops such harts and returns SUCCESS, which is what is checked
 * there.
 */
#include "libguest.h"

#define T "ipi"

static unsigned long ipis[MAX_HARTS];	/* software interrupts taken per hart */
static bool other_ready, other_quit;

static void soft_irq(unsigned long irq)
{
	unsigned long h = current_hartid();

	(void)irq;
	csr_clear(sip, MIP_SSIP);
	WRITE_ONCE(ipis[h], ipis[h] + 1);
}

static void enable_soft_irq(void)
{
	csr_set(sie, MIP_SSIP);
	csr_set(sstatus, SR_SIE);
}

/* The other hart: take IPIs in a WFI loop until told to quit. */
static void other_main(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	enable_soft_irq();
	WRITE_ONCE(other_ready, true);
	wfi_until(READ_ONCE(other_quit));
	csr_clear(sstatus, SR_SIE);
}

static bool got_ipi(unsigned long hart, unsigned long before)
{
	return wait_for(READ_ONCE(ipis[hart]) == before + 1, 200000);
}

static void test_self(unsigned long self)
{
	unsigned long before = READ_ONCE(ipis[self]);
	struct sbiret r = sbi_send_ipi(1, self);

	check_eq(T, "self (base = own id) error", r.error, SBI_SUCCESS);
	check_eq(T, "self (base = own id) delivered", got_ipi(self, before), 1);

	if (self < 64) {
		before = READ_ONCE(ipis[self]);
		r = sbi_send_ipi(1UL << self, 0);
		check_eq(T, "self (base 0, bit = own id) error", r.error,
			 SBI_SUCCESS);
		check_eq(T, "self (base 0, bit = own id) delivered",
			 got_ipi(self, before), 1);
	}
}

static void test_other(unsigned long self, unsigned long other)
{
	unsigned long before = READ_ONCE(ipis[other]);
	unsigned long before_self;
	struct sbiret r;

	r = sbi_send_ipi(1, other);
	check_eq(T, "other vCPU error", r.error, SBI_SUCCESS);
	check_eq(T, "other vCPU delivered", got_ipi(other, before), 1);
	check_eq(T, "other vCPU IPI not seen by sender", READ_ONCE(ipis[self]),
		 0);

	/* base -1: every hart, and the mask (0 here) is ignored. */
	before = READ_ONCE(ipis[other]);
	before_self = READ_ONCE(ipis[self]);
	r = sbi_send_ipi(0, -1UL);
	check_eq(T, "all harts (base -1) error", r.error, SBI_SUCCESS);
	check_eq(T, "all harts (base -1) reaches other", got_ipi(other, before), 1);
	check_eq(T, "all harts (base -1) reaches self",
		 got_ipi(self, before_self), 1);
}

/* @n IPIs to @other, asleep in WFI between them: each delivered once. */
static void test_rounds(unsigned long other, unsigned long n)
{
	unsigned long delivered = 0;

	for (unsigned long i = 0; i < n; i++) {
		unsigned long before = READ_ONCE(ipis[other]);

		if (sbi_send_ipi(1, other).error || !got_ipi(other, before))
			break;
		delivered++;
		udelay(100);	/* it is back in WFI before the next */
	}
	check_eq(T, "IPIs to a vCPU waiting in WFI, each delivered", delivered, n);
}

static void test_bad_masks(unsigned long self)
{
	unsigned long absent = absent_hartid();
	long want = env.carapace ? SBI_ERR_INVALID_PARAM : SBI_SUCCESS;
	struct sbiret r;

	report_info(T, "absent-hart masks: want %ld (%s)", want,
		    env.carapace ? "Carapace" : "bare OpenSBI ignores them");
	r = sbi_send_ipi(1, absent);
	check_eq(T, "mask naming an absent hart", r.error, want);
	r = sbi_send_ipi(1, 1000);
	check_eq(T, "base far beyond the harts", r.error, want);
	if (absent < 64) {
		r = sbi_send_ipi(1UL << self | 1UL << absent, 0);
		check_eq(T, "mask with a valid and an absent hart", r.error,
			 want);
	}
	/* Let anything that was delivered anyway land before the next check. */
	udelay(10000);
}

void test_main(unsigned long self)
{
	unsigned long other = other_hartid();

	trap_set_irq(IRQ_S_SOFT, soft_irq);
	enable_soft_irq();
	test_self(self);
	test_bad_masks(self);
	check_eq(T, "unknown IPI function 1",
		 SBI_CALL0(SBI_EXT_IPI, 1).error, SBI_ERR_NOT_SUPPORTED);

	if (!start_other_hart(T, other, other_main, &other_ready, "cross-hart IPIs need 2 harts"))
		return;
	/* Start counting on the sender from here: only cross-hart IPIs now. */
	WRITE_ONCE(ipis[self], 0);
	test_other(self, other);
	test_rounds(other, bootarg_ulong("rounds", 0));

	WRITE_ONCE(other_quit, true);
	sbi_send_ipi(1, other);
	check_eq(T, "other hart stops",
		 hart_wait_state(other, SBI_HSM_STATE_STOPPED, 1000000), 1);
	csr_clear(sstatus, SR_SIE);
}
