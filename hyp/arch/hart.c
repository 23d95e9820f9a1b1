/* SPDX-License-Identifier: MIT */
/* Per-hart hypervisor CSR setup and boot-time capability probing (write, read back). */
#include <arch/riscv/csr.h>
#include <bitops.h>
#include <hart.h>

struct hart harts[HART_MAX];
/* One stack per hart; head.S points sp at the top of entry (index + 1). */
char hart_stacks[HART_MAX][HART_STACK_SIZE] __attribute__((aligned(16)));
/* Shadow-stack pages (HART_SS_PAGES, .shadow_stacks): head.S points ssp at
 * the top of page 2 * index + 1 in the CFI build; the even ones are guards. */
char hart_shadow_stacks[HART_SS_PAGES][HART_SS_SIZE]
	__attribute__((section(".shadow_stacks"), aligned(HART_SS_SIZE)));
unsigned int nr_harts;
struct hart_caps hart_caps;
uint64_t timebase_hz;

void hart_init_csrs(unsigned long trap_vector)
{
	csr_write(CSR_STVEC, trap_vector);
	csr_write(CSR_HEDELEG, HEDELEG_GUEST);
	csr_write(CSR_HIDELEG, VS_IRQ_MASK);
	csr_write(CSR_HVIP, 0);
	/* time only (as KVM): a guest's cycle and instret reads trap and read
	 * its own virtual counters (hyp/state/pmu.c), never the host's */
	csr_write(CSR_HCOUNTEREN, HCOUNTEREN_TM);
	csr_write(CSR_HGEIE, 0);
	if (hart_caps.smstateen)
		csr_write(CSR_HSTATEEN0, HSTATEEN0_ENVCFG | HSTATEEN0_SE0);
	if (hart_caps.sstc)
		csr_write(CSR_STIMECMP, -1UL);
	/* FS stays non-Off: guest FP registers are live on the hart while it runs */
	csr_set(CSR_SSTATUS, SR_FS_INITIAL);
	csr_write(CSR_SIE, MIP_SSIP | MIP_STIP);
}

void hart_probe_caps(void)
{
	unsigned long want = ENVCFG_STCE | ENVCFG_PBMTE | ENVCFG_ADUE | ENVCFG_LPE |
			     ENVCFG_SSE | ENVCFG_CBIE | ENVCFG_CBCFE | ENVCFG_CBZE;
	unsigned long v;

	csr_write(CSR_HENVCFG, want);
	v = csr_read(CSR_HENVCFG);
	csr_write(CSR_HENVCFG, 0);
	hart_caps.henvcfg_ok = v;
	hart_caps.sstc = v & ENVCFG_STCE;
	hart_caps.zicfilp = v & ENVCFG_LPE;
	/* SSE sticks only after the firmware set menvcfg.SSE (FWFT SHADOW_STACK) */
	hart_caps.zicfiss = v & ENVCFG_SSE;

	/* with MODE=Bare the other fields may read as zero: probe in Sv39x4 */
	csr_write(CSR_HGATP, (HGATP_MODE_SV39X4 << HGATP_MODE_SHIFT) |
			     (HGATP_VMID_MASK << HGATP_VMID_SHIFT));
	v = (csr_read(CSR_HGATP) >> HGATP_VMID_SHIFT) & HGATP_VMID_MASK;
	csr_write(CSR_HGATP, 0);
	hart_caps.vmid_bits = (unsigned int)bit_count(v);

	/* GEILEN: hgeie has a writable bit per guest interrupt file (1..GEILEN), 0 without */
	csr_write(CSR_HGEIE, -1UL);
	hart_caps.geilen = (unsigned int)bit_count(csr_read(CSR_HGEIE));
	csr_write(CSR_HGEIE, 0);

	/* vsatp.MODE is WARL: a mode the CPU lacks is not written */
	hart_caps.vs_sv = 39;
	for (unsigned long mode = ATP_MODE_SV57; mode > ATP_MODE_SV39; mode--) {
		csr_write(CSR_VSATP, mode << ATP_MODE_SHIFT);
		if (csr_read(CSR_VSATP) >> ATP_MODE_SHIFT == mode) {
			hart_caps.vs_sv = mode == ATP_MODE_SV57 ? 57 : 48;
			break;
		}
	}
	csr_write(CSR_VSATP, 0);
}

unsigned long hart_stack_top(const struct hart *h)
{
	return (unsigned long)hart_stacks[h->index] + HART_STACK_SIZE;
}

