/* SPDX-License-Identifier: MIT */
/* The hypervisor's own landing pads and shadow stack (hyp_cfi.h). */
#include <arch/riscv/encoding.h>
#include <hart.h>
#include <hyp_cfi.h>
#include <log.h>
#include <printf.h>
#include <sbi_client.h>

struct hyp_cfi hyp_cfi;

/* FWFT SET @feature to 1, locked if the firmware can lock it (OpenSBI
 * 1.6 can), else unlocked; its error (0: on). */
static long fwft_on(unsigned long feature, bool *locked)
{
	long err = sbi_fwft_set(feature, 1, SBI_FWFT_SET_FLAG_LOCK);

	*locked = !err;
	if (err)
		err = sbi_fwft_set(feature, 1, 0);
	return err;
}

void hyp_cfi_hart_init(bool first)
{
	struct hart *h = this_hart();
	bool lp_locked = false;
	long lp_err;

	if (!HYP_CFI_BUILD)
		return;
	if (first) {
		hyp_cfi.lp_on = hyp_cfi.lp_locked = true;
		hyp_cfi.ss_on = hyp_cfi.ss_locked = true;
	}
	/* (harts only ever clear these: no lock needed) */
	lp_err = fwft_on(SBI_FWFT_LANDING_PAD, &lp_locked);
	if (lp_err) {
		hyp_cfi.lp_on = false;
		hyp_cfi.lp_error = lp_err;
	}
	hyp_cfi.lp_locked &= lp_locked;
	if (!h->ss_on) {
		hyp_cfi.ss_on = false;
		hyp_cfi.ss_error = h->ss_fwft_error;
	}
	hyp_cfi.ss_locked &= (bool)h->ss_locked;
}

static const char *state(bool on, bool locked, long err, char *buf, size_t len)
{
	if (on)
		snprintf(buf, len, "on%s", locked ? " (locked)" : " (not locked)");
	else
		snprintf(buf, len, "OFF (firmware FWFT error %ld)", err);
	return buf;
}

const char *hyp_cfi_summary(char *buf, size_t len)
{
	char lp[48], ss[48];

	if (!HYP_CFI_BUILD)
		snprintf(buf, len, "plain build");
	else
		snprintf(buf, len, "landing pads %s, shadow stack %s",
			 state(hyp_cfi.lp_on, hyp_cfi.lp_locked, hyp_cfi.lp_error, lp, sizeof(lp)),
			 state(hyp_cfi.ss_on, hyp_cfi.ss_locked, hyp_cfi.ss_error, ss, sizeof(ss)));
	return buf;
}

bool hyp_cfi_fault(unsigned long scause, unsigned long sepc, unsigned long stval)
{
	if (scause != EXC_SW_CHECK)
		return false;
	/* the hypervisor's control flow is no longer its own: nothing on this
	 * host can be trusted to go on, so it stops (every VM with it) */
	hyp_panic("hypervisor CFI violation: %s at pc 0x%lx on hart %lu (software check, "
		  "stval %lu): host stopped",
		  stval == SWCHECK_TVAL_SHADOW_STACK ? "shadow-stack mismatch" :
		  stval == SWCHECK_TVAL_LANDING_PAD ? "indirect jump to a non-landing-pad target" :
		  "unknown software check", sepc, this_hart()->hartid, stval);
}
