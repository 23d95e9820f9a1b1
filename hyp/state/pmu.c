/* SPDX-License-Identifier: MIT */
/* Guest PMU, the live part: virtual cycle/instret per vCPU and firmware event
 * counts.
 *
 * A guest never reads the host's cycle or instret: hcounteren has only TM
 * set (hart.c, as KVM), so every read of cycle or instret from VS or VU is a
 * virtual-instruction exit answered here with the vCPU's own counter: the
 * initial value it asked for through SBI PMU plus the host counter's advance
 * while the counter was started and the vCPU was on a hart; a counter it has
 * not configured (or has released) reads its last value, 0 from boot, and
 * does not advance. So the values never jump when the vCPU moves to another
 * hart, across a snapshot and restore or a migration (the value is part of
 * the vCPU's saved state, the PMU record whose hooks are here:
 * docs/snapshot-format.md), and they tell a guest
 * nothing about the host or other VMs. vcpu_put() calls in only while a
 * hardware counter is configured (one test for other guests) and posts
 * VCPU_REQ_PMU_LOAD, so the next entry's vcpu_apply_pending() calls
 * pmu_vcpu_load(): vcpu_load() has no test of its own. */
#include <stddef.h>
#include <string.h>
#include <arch/riscv/csr.h>
#include <atomic.h>
#include <errno.h>
#include <hart.h>
#include <pmu.h>
#include <snap_table.h>
#include <vcpu.h>

static uint64_t host_count(unsigned int i)
{
	return i == PMU_CTR_CYCLE ? csr_read(CSR_CYCLE) : csr_read(CSR_INSTRET);
}

void pmu_vcpu_reset(struct vcpu *v)
{
	/* v->g.pmu was cleared with the rest of v->g */
	v->pmu_live.fw_events = 0;
	v->pmu_live.loaded = false;
}

void pmu_hw_sync(struct vcpu *v)
{
	v->pmu_live.fw_events = pmu_fw_events(&v->g.pmu);
	v->pmu_live.loaded = true;	/* runs on the vCPU's hart, between its entries */
}

/* cold, out of line: posted work (VCPU_REQ_PMU_LOAD) before the vCPU's next entry */
__attribute__((noinline, cold)) void pmu_vcpu_load(struct vcpu *v)
{
	uint32_t live = v->g.pmu.started & PMU_HW_MASK;

	if (!(v->g.pmu.configured & PMU_HW_MASK))
		return;		/* released since the request was posted */
	for (unsigned int i = 0; i <= PMU_CTR_INSTRET; i++)
		if (live & (1U << i))
			v->pmu_live.base[i] = host_count(i);
	v->pmu_live.loaded = true;
}

/* returns @v so that vcpu_put() keeps no register across the call */
__attribute__((noinline, cold)) struct vcpu *pmu_vcpu_put(struct vcpu *v)
{
	uint32_t live = v->g.pmu.started & PMU_HW_MASK;

	/* fold the live counts in: off its hart, value[] is the whole truth
	 * (not after a load that never entered: the bases are the last run's) */
	for (unsigned int i = 0; i <= PMU_CTR_INSTRET && v->pmu_live.loaded; i++)
		if (live & (1U << i))
			v->g.pmu.value[i] += host_count(i) - v->pmu_live.base[i];
	v->pmu_live.loaded = false;
	atomic_or(&v->requests, VCPU_REQ_PMU_LOAD);	/* for its next entry */
	return v;
}

uint64_t pmu_read(const struct vcpu *v, unsigned int i)
{
	uint64_t val = v->g.pmu.value[i];

	if ((PMU_HW_MASK & (1U << i)) && (v->g.pmu.started & (1U << i)))
		val += host_count(i) - v->pmu_live.base[i];
	return val;
}

void pmu_start(struct vcpu *v, unsigned int i, bool set, uint64_t value)
{
	if (set)
		v->g.pmu.value[i] = value;
	if (PMU_HW_MASK & (1U << i))
		v->pmu_live.base[i] = host_count(i);
	v->g.pmu.started |= 1U << i;
}

void pmu_stop(struct vcpu *v, unsigned int i)
{
	v->g.pmu.value[i] = pmu_read(v, i);
	v->g.pmu.started &= ~(1U << i);
}

void pmu_count_fw_slow(struct vcpu *v, unsigned int code, unsigned long n)
{
	for (unsigned int i = PMU_CTR_FW_FIRST; i < PMU_NR_COUNTERS; i++)
		if ((v->g.pmu.started & (1U << i)) && PMU_EVENT_CODE(v->g.pmu.event_idx[i]) == code)
			v->g.pmu.value[i] += n;
}

/* csrr rd, cycle/instret (csrrs/csrrc rd, csr, x0; csrrsi/csrrci rd, csr, 0):
 * every such read traps (hcounteren.CY/IR = 0) */
#define INSN_OPCODE_SYSTEM	0x73
int pmu_csr_exit(struct vcpu *v, unsigned long insn)
{
	unsigned int csr = (insn >> 20) & 0xfff, f3 = (insn >> 12) & 7;
	unsigned int rs1 = (insn >> 15) & 31, rd = (insn >> 7) & 31, i = csr - CSR_CYCLE;
	bool vu = !(v->g.ctx.sstatus & SR_SPP);

	if ((insn & 0x7f) != INSN_OPCODE_SYSTEM || (f3 & 3) == 0 ||
	    (csr != CSR_CYCLE && csr != CSR_INSTRET))
		return 0;
	/* a write to a read-only CSR, or VU without the guest's scounteren bit
	 * (live in the CSR while the vCPU is loaded): what hardware would raise */
	if ((f3 & 3) == 1 || rs1 || (vu && !(csr_read(CSR_SCOUNTEREN) & (1UL << i))))
		return -1;
	if (rd)
		v->g.ctx.gpr[rd] = pmu_read(v, i);	/* never the host's counter */
	return 1;
}

void pmu_vcpu_save(const struct vcpu *v, struct vcpu_pmu *out)
{
	*out = v->g.pmu;
	if (this_hart()->current == v)
		for (unsigned int i = 0; i <= PMU_CTR_INSTRET; i++)
			out->value[i] = pmu_read(v, i);
}

int pmu_vcpu_restore(struct vcpu *v, const struct vcpu_pmu *in)
{
	if (!pmu_state_check(in))
		return -HYP_EINVAL;
	v->g.pmu = *in;
	v->pmu_live.fw_events = pmu_fw_events(in);
	v->pmu_live.loaded = false;
	atomic_or(&v->requests, VCPU_REQ_PMU_LOAD);	/* it may have hw counters */
	return 0;
}

/* The PMU record: the table copies the counters into the vCPU's PMU struct
 * (off its hart it holds every counter's value); the live counters follow
 * it, and only a state pmu_state_check() accepts is installed. */
static void pmu_from_record(const struct snap_rec_pmu *r, struct vcpu_pmu *p)
{
	memset(p, 0, sizeof(*p));
	p->configured = r->pmu_configured;
	p->started = r->pmu_started;
	memcpy(p->event_idx, r->pmu_event_idx, sizeof(p->event_idx));
	memcpy(p->value, r->pmu_value, sizeof(p->value));
}

static void pmu_record_load(struct vcpu *v, const void *rec)
{
	struct vcpu_pmu pmu;

	pmu_from_record(rec, &pmu);
	memset(&v->g.pmu, 0, sizeof(v->g.pmu));
	pmu_vcpu_restore(v, &pmu);	/* checked by pmu_record_check(); posts its load */
}

static const char *pmu_record_check(const void *rec, const struct snap_config *c,
				    uint32_t *offset)
{
	struct vcpu_pmu pmu;

	(void)c;
	*offset = offsetof(struct snap_rec_pmu, pmu_configured);
	pmu_from_record(rec, &pmu);
	if (!pmu_state_check(&pmu))
		return "PMU counters: an unknown counter, an event it cannot count, or started "
		       "without an event";
	return NULL;
}

const struct snap_record_ops pmu_record = {
	.load = pmu_record_load,
	.check = pmu_record_check,
};
