/* SPDX-License-Identifier: MIT */
/* SBI RFENCE: fence.i, sfence.vma, sfence.vma_asid to self/other/all/both, bad
 * masks, the hfence.* functions, and an unknown FID.
 *
 * Needs 2 harts for the other/both masks (skipped otherwise); the other hart
 * is started first and idles in WFI, since fences to a stopped hart are not
 * what is tested here.
 * Mode-dependent:
 *  - masks naming an absent hart: Carapace INVALID_PARAM; bare OpenSBI 1.6
 *    drops such harts and returns SUCCESS.
 *  - hfence.* (FIDs 3..6): Carapace NOT_SUPPORTED (the guest has no H
 *    extension); bare OpenSBI on an H-capable CPU performs them: SUCCESS.
 */
#include "libguest.h"

#define T "rfence"

static bool other_ready, other_quit;

static void other_main(unsigned long hartid, unsigned long opaque)
{
	(void)hartid;
	(void)opaque;
	/* SSIE on (SIE off) so the quit IPI wakes the WFI without trapping. */
	csr_set(sie, MIP_SSIP);
	WRITE_ONCE(other_ready, true);
	while (!READ_ONCE(other_quit)) {
		wfi();
		csr_clear(sip, MIP_SSIP);
	}
	csr_clear(sie, MIP_SSIP);
}

static struct sbiret rfence(unsigned long fid, unsigned long mask,
			    unsigned long base, unsigned long start,
			    unsigned long size, unsigned long asid)
{
	return sbi_ecall(SBI_EXT_RFENCE, fid, mask, base, start, size, asid, 0);
}

static const char *const fence_names[] = {
	"fence.i", "sfence.vma", "sfence.vma_asid", "hfence.gvma_vmid",
	"hfence.gvma", "hfence.vvma_asid", "hfence.vvma",
};

struct target {
	const char *name;
	unsigned long mask, base;
};

static void run_fences(const struct target *t, long want)
{
	static const struct {
		unsigned long start, size, asid;
	} ranges[] = {
		{ 0, 0, 0 },			/* empty range */
		{ 0x80200000, 0x1000, 1 },	/* one page, ASID 1 */
		{ 0, -1UL, 0 },			/* everything */
	};
	char what[96];
	unsigned long fid, i;

	for (fid = SBI_RFENCE_FENCE_I; fid <= SBI_RFENCE_SFENCE_VMA_ASID; fid++) {
		for (i = 0; i < ARRAY_SIZE(ranges); i++) {
			struct sbiret r = rfence(fid, t->mask, t->base,
						 ranges[i].start, ranges[i].size,
						 ranges[i].asid);

			snprintf(what, sizeof(what), "%s to %s, range %lu",
				 fence_names[fid], t->name, i);
			check_eq(T, what, r.error, want);
			/* fence.i takes no range: one call is enough. */
			if (fid == SBI_RFENCE_FENCE_I)
				break;
		}
	}
}

static void test_hfence(unsigned long self)
{
	long want = env.carapace ? SBI_ERR_NOT_SUPPORTED : SBI_SUCCESS;
	char what[64];
	unsigned long fid;

	for (fid = SBI_RFENCE_HFENCE_GVMA_VMID; fid <= SBI_RFENCE_HFENCE_VVMA;
	     fid++) {
		snprintf(what, sizeof(what), "%s (%s)", fence_names[fid],
			 env.carapace ? "no H for guests" : "bare: H present");
		check_eq(T, what, rfence(fid, 1, self, 0, -1UL, 0).error, want);
	}
	check_eq(T, "unknown RFENCE function 7",
		 rfence(7, 1, self, 0, 0, 0).error, SBI_ERR_NOT_SUPPORTED);
}

void test_main(unsigned long self)
{
	unsigned long other = other_hartid(), absent = absent_hartid();
	long bad = env.carapace ? SBI_ERR_INVALID_PARAM : SBI_SUCCESS;
	struct target t;

	t = (struct target){ "self", 1, self };
	run_fences(&t, SBI_SUCCESS);
	t = (struct target){ "all (base -1)", 0, -1UL };
	run_fences(&t, SBI_SUCCESS);

	report_info(T, "absent-hart masks: want %ld (%s)", bad,
		    env.carapace ? "Carapace" : "bare OpenSBI ignores them");
	t = (struct target){ "an absent hart", 1, absent };
	run_fences(&t, bad);
	t = (struct target){ "base 1000", 1, 1000 };
	run_fences(&t, bad);
	test_hfence(self);

	if (!start_other_hart(T, other, other_main, &other_ready, "other-hart fences need 2 harts"))
		return;
	t = (struct target){ "other", 1, other };
	run_fences(&t, SBI_SUCCESS);
	if (self < 64 && other < 64) {
		t = (struct target){ "both (base 0)", 1UL << self | 1UL << other,
				     0 };
		run_fences(&t, SBI_SUCCESS);
	}
	if (other < 64 && absent < 64) {
		t = (struct target){ "other + absent",
				     1UL << other | 1UL << absent, 0 };
		run_fences(&t, bad);
	}
	WRITE_ONCE(other_quit, true);
	sbi_send_ipi(1, other);
	check_eq(T, "other hart stops",
		 hart_wait_state(other, SBI_HSM_STATE_STOPPED, 1000000), 1);
}
