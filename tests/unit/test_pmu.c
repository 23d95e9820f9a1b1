/* SPDX-License-Identifier: MIT */
/* The guest PMU: hyp/state/pmu_logic.c (counter sets, event matching, the
 * checks a restored state must pass), hyp/state/pmu.c (live cycle/instret
 * against the fake CSR file, firmware counts, save/restore, the CSR-read
 * emulation) and hyp/vsbi/vsbi_pmu.c (each function's errors). Guest RAM is
 * a host buffer behind stubs of vm_gpa_range_is_ram()/vm_gpa_to_hva(). */
#include <string.h>
#include <arch/riscv/encoding.h>
#include <abi/sbi_defs.h>
#include <errno.h>
#include <guest_mem.h>
#include <hart.h>
#include <pmu.h>
#include <vm.h>
#include <vsbi.h>
#include "test.h"

/* ---- stubs ---- */

#define RAM_BASE	0x80000000UL
#define RAM_SIZE	0x20000UL
static uint8_t ram[RAM_SIZE] __attribute__((aligned(16)));
struct hart harts[HART_MAX];
struct hart *test_this_hart = &harts[0];

bool vm_gpa_range_is_ram(const struct vm *vm, gpa_t gpa, uint64_t len)
{
	(void)vm;
	return gpa >= RAM_BASE && len <= RAM_SIZE && gpa - RAM_BASE <= RAM_SIZE - len;
}

void *vm_gpa_to_hva(struct vm *vm, gpa_t gpa, uint64_t len, bool write)
{
	(void)write;
	return vm_gpa_range_is_ram(vm, gpa, len) ? ram + (gpa - RAM_BASE) : NULL;
}

/* ---- setup ---- */

static struct vm vm;

static struct vcpu *setup(void)
{
	struct vcpu *v = &vm.vcpus[0];

	memset(&vm, 0, sizeof(vm));
	memset(ram, 0, sizeof(ram));
	fake_csr_reset();
	vm.cfg.nr_vcpus = 1;
	v->vm = &vm;
	harts[0].current = v;	/* loaded on this hart */
	return v;
}

static struct vsbi_ret call(struct vcpu *v, unsigned long fid, unsigned long a0,
			    unsigned long a1, unsigned long a2, unsigned long a3,
			    unsigned long a4)
{
	struct vsbi_ret r = { .error = 12345, .action = EXIT_RESUME };

	VSBI_ARG(v, 0) = a0;
	VSBI_ARG(v, 1) = a1;
	VSBI_ARG(v, 2) = a2;
	VSBI_ARG(v, 3) = a3;
	VSBI_ARG(v, 4) = a4;
	vsbi_pmu.call(v, fid, &r);
	return r;
}

#define EV_FW(c)	((15UL << 16) | (c))
#define CFG(v, base, mask, flags, ev) call(v, SBI_PMU_COUNTER_CONFIG_MATCHING, base, mask, flags, ev, 0)
#define START(v, i, flags, init) call(v, SBI_PMU_COUNTER_START, i, 1, flags, init, 0).error
#define STOP(v, i, flags) call(v, SBI_PMU_COUNTER_STOP, i, 1, flags, 0, 0).error

/* ---- pure logic ---- */

TEST(pmu_counter_mask_sets)
{
	uint32_t set = 0;

	EXPECT_TRUE(pmu_counter_mask(0, 1, &set));
	EXPECT_EQ(set, 1);
	EXPECT_TRUE(pmu_counter_mask(2, 0x1ff, &set));	/* 2..10 */
	EXPECT_EQ(set, 0x7fc);
	EXPECT_TRUE(pmu_counter_mask(10, 1, &set));
	EXPECT_EQ(set, 1U << 10);
}

TEST(pmu_counter_mask_invalid)
{
	uint32_t set = 0xdead;

	EXPECT_TRUE(!pmu_counter_mask(0, 0, &set));		/* empty */
	EXPECT_TRUE(!pmu_counter_mask(1, 1, &set));		/* the time hole */
	EXPECT_TRUE(!pmu_counter_mask(0, 0x7, &set));		/* includes the hole */
	EXPECT_TRUE(!pmu_counter_mask(11, 1, &set));		/* one past the end */
	EXPECT_TRUE(!pmu_counter_mask(10, 2, &set));
	EXPECT_TRUE(!pmu_counter_mask(-1UL, 1, &set));		/* huge base */
	EXPECT_TRUE(!pmu_counter_mask(2, 1UL << 63, &set));	/* base + bit wraps */
	EXPECT_TRUE(!pmu_counter_mask(-2UL, 4, &set));		/* wraps to 2 */
	EXPECT_EQ(set, 0xdead);					/* untouched */
}

TEST(pmu_events_per_counter)
{
	EXPECT_TRUE(pmu_counter_can_count(0, PMU_EVENT_HW_CYCLES, 0));
	EXPECT_TRUE(!pmu_counter_can_count(2, PMU_EVENT_HW_CYCLES, 0));
	EXPECT_TRUE(pmu_counter_can_count(2, PMU_EVENT_HW_INSNS, 0));
	EXPECT_TRUE(!pmu_counter_can_count(0, PMU_EVENT_HW_CYCLES, 1));	/* reserved data */
	EXPECT_TRUE(!pmu_counter_can_count(3, PMU_EVENT_HW_CYCLES, 0));
	EXPECT_TRUE(pmu_counter_can_count(3, EV_FW(SBI_PMU_FW_SET_TIMER), 0));
	EXPECT_TRUE(pmu_counter_can_count(10, EV_FW(SBI_PMU_FW_ILLEGAL_INSN), 0));
	EXPECT_TRUE(!pmu_counter_can_count(0, EV_FW(SBI_PMU_FW_SET_TIMER), 0));
	EXPECT_TRUE(!pmu_counter_can_count(3, EV_FW(SBI_PMU_FW_IPI_RECEIVED), 0));
	EXPECT_TRUE(!pmu_counter_can_count(3, EV_FW(SBI_PMU_FW_PLATFORM), 0));
	EXPECT_TRUE(!pmu_counter_can_count(3, EV_FW(40), 0));
	EXPECT_TRUE(!pmu_counter_can_count(3, EV_FW(SBI_PMU_FW_SET_TIMER) | (1UL << 20), 0));
	EXPECT_TRUE(!pmu_counter_can_count(11, EV_FW(SBI_PMU_FW_SET_TIMER), 0));
	EXPECT_TRUE(!pmu_event_supported(3, 0));		/* cache references */
	EXPECT_TRUE(!pmu_event_supported(1UL << 16, 0));	/* a cache event */
	EXPECT_TRUE(pmu_event_supported(EV_FW(SBI_PMU_FW_SFENCE_VMA_ASID_SENT), 0));
}

TEST(pmu_match_rules)
{
	struct vcpu_pmu p = { 0 };

	EXPECT_EQ(pmu_match(&p, 0x7fd, false, EV_FW(SBI_PMU_FW_SET_TIMER), 0), 3);
	p.configured = 1U << 3;
	EXPECT_EQ(pmu_match(&p, 0x7fd, false, EV_FW(SBI_PMU_FW_SET_TIMER), 0), 4);
	p.configured = PMU_FW_MASK;
	EXPECT_EQ(pmu_match(&p, 0x7fd, false, EV_FW(SBI_PMU_FW_SET_TIMER), 0), -1);
	/* SKIP_MATCH takes the first of the set, configured or not, unless started */
	EXPECT_EQ(pmu_match(&p, 1U << 3, true, EV_FW(SBI_PMU_FW_SET_TIMER), 0), 3);
	p.started = 1U << 3;
	EXPECT_EQ(pmu_match(&p, 1U << 3, true, EV_FW(SBI_PMU_FW_SET_TIMER), 0), -1);
	/* ... and it must still be able to count the event */
	EXPECT_EQ(pmu_match(&p, 1U << 0, true, PMU_EVENT_HW_INSNS, 0), -1);
}

TEST(pmu_state_check_rules)
{
	struct vcpu_pmu p = { 0 };

	EXPECT_TRUE(pmu_state_check(&p));
	p.configured = 1 | (1U << 5);
	p.event_idx[0] = PMU_EVENT_HW_CYCLES;
	p.event_idx[5] = EV_FW(SBI_PMU_FW_IPI_SENT);
	p.started = 1U << 5;
	p.value[0] = ~0UL;
	EXPECT_TRUE(pmu_state_check(&p));
	p.started = 1U << 6;			/* started, not configured */
	EXPECT_TRUE(!pmu_state_check(&p));
	p.started = 0;
	p.configured |= 1U << 1;		/* the hole */
	EXPECT_TRUE(!pmu_state_check(&p));
	p.configured &= ~(1U << 1);
	p.event_idx[2] = PMU_EVENT_HW_INSNS;	/* event without configured bit */
	EXPECT_TRUE(!pmu_state_check(&p));
	p.event_idx[2] = 0;
	p.event_idx[0] = PMU_EVENT_HW_INSNS;	/* counter 0 cannot count it */
	EXPECT_TRUE(!pmu_state_check(&p));
	p.event_idx[0] = PMU_EVENT_HW_CYCLES;
	p.pad = 1;
	EXPECT_TRUE(!pmu_state_check(&p));
	p.pad = 0;
	p.configured |= 1U << 11;		/* beyond the counters */
	EXPECT_TRUE(!pmu_state_check(&p));
}

TEST(pmu_counter_info_values)
{
	EXPECT_EQ(pmu_counter_info(0), 0xc00 | (63UL << 12));
	EXPECT_EQ(pmu_counter_info(2), 0xc02 | (63UL << 12));
	EXPECT_EQ(pmu_counter_info(3), 1UL << 63);
	EXPECT_EQ(pmu_counter_info(10), 1UL << 63);
}

/* ---- live counters ---- */

TEST(pmu_cycle_counts_only_while_started_and_loaded)
{
	struct vcpu *v = setup();

	fake_csr[CSR_CYCLE] = 1000;
	EXPECT_EQ(CFG(v, 0, 1, 0, PMU_EVENT_HW_CYCLES).value, 0);
	EXPECT_EQ(START(v, 0, SBI_PMU_START_SET_INIT_VALUE, 50), SBI_SUCCESS);
	fake_csr[CSR_CYCLE] = 1100;
	EXPECT_EQ(pmu_read(v, 0), 150);
	pmu_vcpu_put(v);			/* off its hart: folded in */
	EXPECT_EQ(v->g.pmu.value[0], 150);
	EXPECT_EQ(v->requests & VCPU_REQ_PMU_LOAD, VCPU_REQ_PMU_LOAD);	/* for the next entry */
	fake_csr[CSR_CYCLE] = 4000;
	pmu_vcpu_put(v);			/* loaded, never entered, put again */
	EXPECT_EQ(v->g.pmu.value[0], 150);	/* nothing folded twice */
	fake_csr[CSR_CYCLE] = 5000;		/* time off CPU does not count */
	pmu_vcpu_load(v);
	fake_csr[CSR_CYCLE] = 5010;
	EXPECT_EQ(pmu_read(v, 0), 160);
	EXPECT_EQ(STOP(v, 0, 0), SBI_SUCCESS);
	fake_csr[CSR_CYCLE] = 9000;
	EXPECT_EQ(pmu_read(v, 0), 160);		/* frozen while stopped */
	EXPECT_EQ(START(v, 0, 0, 0), SBI_SUCCESS);	/* goes on from 160 */
	fake_csr[CSR_CYCLE] = 9005;
	EXPECT_EQ(pmu_read(v, 0), 165);
	EXPECT_EQ(STOP(v, 0, SBI_PMU_STOP_RESET), SBI_SUCCESS);
	/* hcounteren stays as hart.c set it (time only): every read traps */
	EXPECT_EQ(fake_csr_nr_writes[CSR_HCOUNTEREN], 0);
}

TEST(pmu_csr_read_emulation)
{
	struct vcpu *v = setup();
	unsigned long csrr_a0_instret = 0xc0202573UL;	/* csrrs a0, instret, x0 */
	unsigned long csrw_instret = 0xc0251073UL;	/* csrrw x0, instret, a0 */
	unsigned long csrr_hpm3 = 0xc0302573UL;

	fake_csr[CSR_INSTRET] = 7;
	EXPECT_EQ(CFG(v, 2, 1, SBI_PMU_CFG_FLAG_CLEAR_VALUE | SBI_PMU_CFG_FLAG_AUTO_START,
		      PMU_EVENT_HW_INSNS).value, 2);
	fake_csr[CSR_INSTRET] = 10;
	v->g.ctx.sstatus = SR_SPP;		/* from VS */
	EXPECT_EQ(pmu_csr_exit(v, csrr_a0_instret), 1);
	EXPECT_EQ(v->g.ctx.gpr[10], 3);
	EXPECT_EQ(pmu_csr_exit(v, csrw_instret), -1);	/* read-only */
	EXPECT_EQ(pmu_csr_exit(v, csrr_hpm3), 0);	/* not ours */
	v->g.ctx.sstatus = 0;			/* from VU, scounteren.IR clear */
	fake_csr[CSR_SCOUNTEREN] = 0;
	EXPECT_EQ(pmu_csr_exit(v, csrr_a0_instret), -1);
	fake_csr[CSR_SCOUNTEREN] = 1UL << 2;
	EXPECT_EQ(pmu_csr_exit(v, csrr_a0_instret), 1);
	/* an unconfigured counter reads its own value (0 from reset), never the
	 * host's (issue 22: it leaked the host's count and jumped when the vCPU
	 * moved or was restored elsewhere) */
	fake_csr[CSR_CYCLE] = 4242;
	fake_csr[CSR_SCOUNTEREN] = 1;
	EXPECT_EQ(pmu_csr_exit(v, 0xc0002573UL), 1);	/* csrr a0, cycle */
	EXPECT_EQ(v->g.ctx.gpr[10], 0);
}

/* What a guest sees of a counter it released: its last value, on any hart,
 * before and after a snapshot and a restore on a host whose counters are
 * elsewhere entirely. */
TEST(pmu_released_counter_never_jumps)
{
	struct vcpu *v = setup();
	unsigned long csrr_a0_cycle = 0xc0002573UL;
	struct vcpu_pmu img;

	v->g.ctx.sstatus = SR_SPP;		/* from VS */
	fake_csr[CSR_CYCLE] = 1000;
	EXPECT_EQ(CFG(v, 0, 1, SBI_PMU_CFG_FLAG_AUTO_START, PMU_EVENT_HW_CYCLES).value, 0);
	fake_csr[CSR_CYCLE] = 1700;
	EXPECT_EQ(STOP(v, 0, SBI_PMU_STOP_RESET), SBI_SUCCESS);
	fake_csr[CSR_CYCLE] = 90000;		/* later, or another hart */
	EXPECT_EQ(pmu_csr_exit(v, csrr_a0_cycle), 1);
	EXPECT_EQ(v->g.ctx.gpr[10], 700);
	pmu_vcpu_save(v, &img);
	harts[0].current = NULL;
	memset(&vm.vcpus[1], 0, sizeof(vm.vcpus[1]));
	vm.vcpus[1].vm = &vm;
	EXPECT_EQ(pmu_vcpu_restore(&vm.vcpus[1], &img), 0);
	harts[0].current = &vm.vcpus[1];
	fake_csr[CSR_CYCLE] = 5;		/* a freshly booted destination */
	vm.vcpus[1].g.ctx.sstatus = SR_SPP;
	EXPECT_EQ(pmu_csr_exit(&vm.vcpus[1], csrr_a0_cycle), 1);
	EXPECT_EQ(vm.vcpus[1].g.ctx.gpr[10], 700);
	/* instret was never configured: 0, whatever the host counted */
	fake_csr[CSR_INSTRET] = 123456;
	EXPECT_EQ(pmu_csr_exit(&vm.vcpus[1], 0xc0202573UL), 1);
	EXPECT_EQ(vm.vcpus[1].g.ctx.gpr[10], 0);
}

TEST(pmu_fw_counts_and_save_restore)
{
	struct vcpu *v = setup();
	struct vcpu_pmu img;

	EXPECT_EQ(CFG(v, 3, 0xff, 0, EV_FW(SBI_PMU_FW_SET_TIMER)).value, 3);
	pmu_count_fw(v, SBI_PMU_FW_SET_TIMER, 1);	/* not started: not counted */
	EXPECT_EQ(START(v, 3, SBI_PMU_START_SET_INIT_VALUE, 10), SBI_SUCCESS);
	pmu_count_fw(v, SBI_PMU_FW_SET_TIMER, 1);
	pmu_count_fw(v, SBI_PMU_FW_IPI_SENT, 1);	/* another event */
	EXPECT_EQ(call(v, SBI_PMU_COUNTER_FW_READ, 3, 0, 0, 0, 0).value, 11);
	fake_csr[CSR_CYCLE] = 100;
	EXPECT_EQ(CFG(v, 0, 1, SBI_PMU_CFG_FLAG_AUTO_START, PMU_EVENT_HW_CYCLES).value, 0);
	fake_csr[CSR_CYCLE] = 130;
	pmu_vcpu_save(v, &img);			/* loaded: the live count is in */
	EXPECT_EQ(img.value[0], 30);
	EXPECT_EQ(img.value[3], 11);
	EXPECT_EQ(img.started, 1 | (1U << 3));
	/* into a fresh vCPU (off CPU) */
	harts[0].current = NULL;
	memset(&vm.vcpus[1], 0, sizeof(vm.vcpus[1]));
	EXPECT_EQ(pmu_vcpu_restore(&vm.vcpus[1], &img), 0);
	pmu_count_fw(&vm.vcpus[1], SBI_PMU_FW_SET_TIMER, 2);
	EXPECT_EQ(vm.vcpus[1].g.pmu.value[3], 13);	/* derived state rebuilt */
	img.started |= 1U << 4;			/* inconsistent: refused */
	EXPECT_EQ(pmu_vcpu_restore(&vm.vcpus[1], &img), -HYP_EINVAL);
	EXPECT_EQ(vm.vcpus[1].g.pmu.value[3], 13);
}

/* ---- SBI functions ---- */

TEST(pmu_sbi_info)
{
	struct vcpu *v = setup();

	EXPECT_EQ(call(v, SBI_PMU_NUM_COUNTERS, 0, 0, 0, 0, 0).value, 11);
	EXPECT_EQ(call(v, SBI_PMU_COUNTER_GET_INFO, 1, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(call(v, SBI_PMU_COUNTER_GET_INFO, 11, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(call(v, SBI_PMU_COUNTER_GET_INFO, -1UL, 0, 0, 0, 0).error,
		  SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(call(v, SBI_PMU_COUNTER_GET_INFO, 4, 0, 0, 0, 0).value, 1UL << 63);
	EXPECT_EQ(call(v, SBI_PMU_SNAPSHOT_SET_SHMEM, RAM_BASE, 0, 0, 0, 0).error,
		  SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(call(v, 9, 0, 0, 0, 0, 0).error, SBI_ERR_NOT_SUPPORTED);
}

TEST(pmu_sbi_config_errors)
{
	struct vcpu *v = setup();

	EXPECT_EQ(CFG(v, 0, 1, 1UL << 8, PMU_EVENT_HW_CYCLES).error, SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(CFG(v, 0, 0, 0, PMU_EVENT_HW_CYCLES).error, SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(CFG(v, 0, 3, 0, PMU_EVENT_HW_CYCLES).error, SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(CFG(v, 0, 1, SBI_PMU_CFG_FLAG_SET_SINH, PMU_EVENT_HW_CYCLES).error,
		  SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(CFG(v, 0, 1, SBI_PMU_CFG_FLAG_SET_UINH, PMU_EVENT_HW_CYCLES).error,
		  SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(CFG(v, 0, 1, SBI_PMU_CFG_FLAG_SET_MINH, PMU_EVENT_HW_CYCLES).error,
		  SBI_ERR_NOT_SUPPORTED);
	EXPECT_EQ(v->g.pmu.configured, 0);	/* nothing was taken by the refusals */
	EXPECT_EQ(CFG(v, 0, 1, SBI_PMU_CFG_FLAG_SET_VSINH | SBI_PMU_CFG_FLAG_SET_VUINH,
		      PMU_EVENT_HW_CYCLES).error, SBI_SUCCESS);
	EXPECT_EQ(CFG(v, 0, 1, 0, PMU_EVENT_HW_CYCLES).error, SBI_ERR_NOT_SUPPORTED);	/* taken */
	EXPECT_EQ(CFG(v, 0, 0x5, 0, 3).error, SBI_ERR_NOT_SUPPORTED);
}

TEST(pmu_sbi_start_stop_errors)
{
	struct vcpu *v = setup();

	EXPECT_EQ(START(v, 3, 0, 0), SBI_ERR_INVALID_PARAM);	/* unconfigured */
	EXPECT_EQ(STOP(v, 3, 0), SBI_ERR_ALREADY_STOPPED);
	EXPECT_EQ(CFG(v, 3, 1, 0, EV_FW(SBI_PMU_FW_SET_TIMER)).value, 3);
	EXPECT_EQ(START(v, 3, 1UL << 2, 0), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(START(v, 3, 3, 0), SBI_ERR_INVALID_PARAM);	/* both init flags */
	EXPECT_EQ(START(v, 3, SBI_PMU_START_INIT_SNAPSHOT, 0), SBI_ERR_NO_SHMEM);
	EXPECT_EQ(call(v, SBI_PMU_COUNTER_START, 0, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(START(v, 3, 0, 0), SBI_SUCCESS);
	EXPECT_EQ(START(v, 3, 0, 0), SBI_ERR_ALREADY_STARTED);
	EXPECT_EQ(STOP(v, 3, 1UL << 2), SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(STOP(v, 3, SBI_PMU_STOP_TAKE_SNAPSHOT), SBI_ERR_NO_SHMEM);
	EXPECT_EQ(v->g.pmu.started, 1U << 3);		/* the refusals changed nothing */
	EXPECT_EQ(STOP(v, 3, 0), SBI_SUCCESS);
	/* RESET of a stopped counter: ALREADY_STOPPED, and released all the same */
	EXPECT_EQ(STOP(v, 3, SBI_PMU_STOP_RESET), SBI_ERR_ALREADY_STOPPED);
	EXPECT_EQ(v->g.pmu.configured, 0);
	EXPECT_EQ(call(v, SBI_PMU_COUNTER_FW_READ, 3, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(call(v, SBI_PMU_COUNTER_FW_READ, 0, 0, 0, 0, 0).error, SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(call(v, SBI_PMU_COUNTER_FW_READ_HI, 11, 0, 0, 0, 0).error,
		  SBI_ERR_INVALID_PARAM);
}

TEST(pmu_sbi_event_get_info)
{
	struct vcpu *v = setup();
	uint32_t *e = (uint32_t *)ram;

	e[0] = PMU_EVENT_HW_CYCLES;
	e[1] = 0xdead;
	e[4] = 3;				/* cache references: no */
	e[5] = 0xdead;
	e[8] = EV_FW(SBI_PMU_FW_PLATFORM);	/* data 0, still none */
	e[9] = 0xdead;
	EXPECT_EQ(call(v, SBI_PMU_EVENT_GET_INFO, RAM_BASE, 0, 3, 0, 0).error, SBI_SUCCESS);
	EXPECT_EQ(e[1], 1);
	EXPECT_EQ(e[5], 0);
	EXPECT_EQ(e[9], 0);
	EXPECT_EQ(call(v, SBI_PMU_EVENT_GET_INFO, RAM_BASE, 0, 1, 1, 0).error,
		  SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(call(v, SBI_PMU_EVENT_GET_INFO, RAM_BASE + 8, 0, 1, 0, 0).error,
		  SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(call(v, SBI_PMU_EVENT_GET_INFO, RAM_BASE, 0, 0, 0, 0).error,
		  SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(call(v, SBI_PMU_EVENT_GET_INFO, RAM_BASE, 1, 1, 0, 0).error,
		  SBI_ERR_INVALID_ADDRESS);
	EXPECT_EQ(call(v, SBI_PMU_EVENT_GET_INFO, RAM_BASE + RAM_SIZE - 16, 0, 2, 0, 0).error,
		  SBI_ERR_INVALID_ADDRESS);
	EXPECT_EQ(call(v, SBI_PMU_EVENT_GET_INFO, RAM_BASE, 0, 1UL << 60, 0, 0).error,
		  SBI_ERR_INVALID_ADDRESS);	/* 16 * num wraps */
	EXPECT_EQ(call(v, SBI_PMU_EVENT_GET_INFO, RAM_BASE, 0, 4097, 0, 0).error,
		  SBI_ERR_FAILED);		/* more work than one call does */
	e[1] = 0xdead;
	e[4] = (1U << 20) | 3;			/* reserved bit in the second entry */
	EXPECT_EQ(call(v, SBI_PMU_EVENT_GET_INFO, RAM_BASE, 0, 2, 0, 0).error,
		  SBI_ERR_INVALID_PARAM);
	EXPECT_EQ(e[1], 0xdead);		/* nothing written */
}
