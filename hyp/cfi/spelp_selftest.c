/* SPDX-License-Identifier: MIT */
/* Boot self-test: what this CPU does with a guest's sstatus.SPELP (the ELP of
 * its last trap) across an exit into HS and the sret back (docs/cfi.md §7).
 * The Priv spec banks SPELP per V like the rest of sstatus and has an HS trap
 * and sret use HS's own SPELP. QEMU 10.0.2 instead writes the exit's ELP over
 * the guest's bit (Q4) and takes ELP from the guest's bit at sret and clears it
 * (Q4, and Q5 while henvcfg.LPE=0). Which workarounds run, and whether policy
 * delegate can be exact, follows from what is measured here, not from the
 * machine's name. */
#include <arch/riscv/csr.h>
#include <cfi.h>
#include <hart.h>
#include <log.h>

unsigned long __spelp_probe(unsigned long vs_pc, unsigned long sstatus);
void __spelp_probe_exit(void);
void __spelp_probe_read(void);
void __spelp_probe_set(void);

struct probe_result {
	unsigned long a0, vsstatus;
	bool ok;	/* the VS code ran to its ecall */
};

static struct probe_result probe(void (*code)(void), unsigned long henvcfg,
				 unsigned long vsstatus)
{
	unsigned long stvec = csr_read(CSR_STVEC), sie = csr_read(CSR_SIE);
	unsigned long sstatus = csr_read(CSR_SSTATUS), hedeleg = csr_read(CSR_HEDELEG);
	struct probe_result r;

	csr_write(CSR_SIE, 0);
	csr_write(CSR_HEDELEG, 0);	/* anything unexpected comes back to us */
	csr_write(CSR_STVEC, (unsigned long)__spelp_probe_exit);
	csr_write(CSR_HGATP, 0);	/* Bare: the VS code runs where it was linked */
	csr_write(CSR_VSATP, 0);
	csr_write(CSR_HENVCFG, henvcfg);
	csr_write(CSR_VSSTATUS, vsstatus | SR_UXL_64);
	csr_write(CSR_HSTATUS, HSTATUS_SPV | HSTATUS_SPVP | HSTATUS_VSXL_64);
	/* HS's own SPELP is 0: a spec CPU takes the new ELP from it */
	r.a0 = __spelp_probe((unsigned long)code,
			     (sstatus & ~(SR_SIE | SR_SPIE | SR_SPELP)) | SR_SPP);
	r.ok = csr_read(CSR_SCAUSE) == EXC_ECALL_VS;
	r.vsstatus = csr_read(CSR_VSSTATUS);
	csr_write(CSR_HSTATUS, 0);
	csr_write(CSR_HENVCFG, 0);
	csr_write(CSR_VSSTATUS, 0);
	csr_write(CSR_SSTATUS, sstatus);
	csr_write(CSR_STVEC, stvec);
	csr_write(CSR_HEDELEG, hedeleg);
	csr_write(CSR_SIE, sie);
	return r;
}

void cfi_spelp_selftest(void)
{
	struct probe_result sret1, sret0, exit1;

	if (!hart_caps.zicfilp)
		return;	/* no guest has landing pads: nothing can depend on SPELP */
	/* the guest's banked SPELP=1 must survive our sret, with LPE on and off */
	sret1 = probe(__spelp_probe_read, ENVCFG_LPE, SR_SPELP);
	sret0 = probe(__spelp_probe_read, 0, SR_SPELP);
	/* a SPELP the guest set itself must survive its exit */
	exit1 = probe(__spelp_probe_set, ENVCFG_LPE, 0);

	hart_caps.spelp_probe_failed = !sret1.ok || !sret0.ok || !exit1.ok;
	/* a probe that did not reach its ecall proves nothing: assume the worst */
	hart_caps.spelp_lost_at_sret = hart_caps.spelp_probe_failed ||
				       !(sret1.a0 & SR_SPELP) || !(sret0.a0 & SR_SPELP);
	hart_caps.spelp_lost_at_exit = hart_caps.spelp_probe_failed ||
				       !(exit1.vsstatus & SR_SPELP);
}

bool cfi_delegate_exact(void)
{
	return !hart_caps.spelp_lost_at_sret && !hart_caps.spelp_lost_at_exit;
}

void cfi_spelp_report(void)
{
	if (!hart_caps.zicfilp)
		return;
	if (hart_caps.spelp_probe_failed)
		pr_info("CFI self-test: a SPELP probe did not complete: assuming the guest's "
			"SPELP is lost across exits");
	pr_info("CFI self-test: the guest's sstatus.SPELP %s an exit and %s the sret back%s",
		hart_caps.spelp_lost_at_exit ? "is overwritten by" : "survives",
		hart_caps.spelp_lost_at_sret ? "is cleared by" : "survives",
		cfi_delegate_exact() ? " (as the spec says)" :
		" (QEMU 10.0.2 Q4/Q5, docs/cfi.md §7)");
	if (!cfi_delegate_exact())
		pr_info("CFI self-test: policy delegate would lose landing-pad checks here: "
			"VMs asking for it run under trap; trap re-delivers landing-pad "
			"faults through the hardware");
}
